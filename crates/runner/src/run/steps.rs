//! The steps of a deployed run, in order: each starts its loads, fires its events and their
//! samplers while it counts down, then collects what happened, waits for its jobs and reports;
//! `runs.json` is written after each.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use chrono::Utc;
use lab::{Action, Lab, Load, Step};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::RunError;
use crate::actions::Actor;
use crate::jobs::{self, EnvChange};
use crate::loadgen::{loadgen_env, run_id};
use crate::pack::{ActionRecord, RunRecord, RunsRecord, StepRecord, iso, stamp};
use crate::progress::{LiveErrors, Progress};
use crate::schedule::{
    self, SAMPLER_LEAD, Window, event_perturbation_id, event_times, sampler_windows, step_duration,
    whole_seconds,
};
use crate::target::Target;

use super::{RunOptions, cancellable};

/// Runs the lab's steps in order against a deployed target, recording each in `runs.json`
/// (also used by `labctl trigger`, which deploys nothing).
pub async fn run_steps(
    lab: &Lab,
    t: &Arc<Target>,
    actor: &Arc<Actor>,
    opts: &RunOptions,
    progress: &mut Progress,
    pack: &Path,
    record: &mut RunsRecord,
) -> Result<(), RunError> {
    let run = DeployedRun {
        lab,
        target: t,
        actor,
        opts,
        pack,
    };
    let total = lab.steps.len();
    for (i, step) in lab.steps.iter().enumerate() {
        let mut rec = StepRecord {
            name: step.name.clone(),
            phase: step.phase.clone(),
            start: iso(Utc::now()),
            ..Default::default()
        };
        let r = run_step(&run, step, (i + 1, total), progress, &mut rec).await;
        rec.end = Some(iso(Utc::now()));
        record.steps.push(rec);
        record.write(pack)?;
        r?;
    }
    Ok(())
}

/// A deployed run as every step sees it: the lab, the target it is deployed on, the actor that
/// perturbs it, the run's options, and the evidence pack.
struct DeployedRun<'a> {
    lab: &'a Lab,
    target: &'a Arc<Target>,
    actor: &'a Arc<Actor>,
    opts: &'a RunOptions,
    pack: &'a Path,
}

/// What a step is, fixed when it begins: its stamp, scaled duration, perturbation id (`none`
/// without an action) and the loads it runs.
struct StepPlan<'a> {
    step: &'a Step,
    stamp: String,
    duration: Duration,
    perturbation_id: String,
    loads: Vec<&'a Load>,
}

impl<'a> StepPlan<'a> {
    /// Plans `step` of `lab` now: the loads it names, or all of the lab's when it names none.
    fn new(lab: &'a Lab, step: &'a Step, scale: f64) -> StepPlan<'a> {
        let ts = stamp(Utc::now());
        let duration = step_duration(step, scale);
        let perturbation_id = if step.action.is_some() {
            format!("{}-{ts}", step.name)
        } else {
            "none".to_owned()
        };
        let loads = match &step.loads {
            Some(names) => lab
                .load
                .iter()
                .filter(|l| names.contains(&l.name))
                .collect(),
            None => lab.load.iter().collect(),
        };
        StepPlan {
            step,
            stamp: ts,
            duration,
            perturbation_id,
            loads,
        }
    }
}

/// A job execution the step started, and the index of its run in the step's record.
struct StartedJob {
    job: String,
    execution: String,
    run: usize,
}

/// One event's sampler start: the event, its perturbation id, and the execution (or why not).
type SamplerStart = (u32, String, Result<String, RunError>);

/// Runs one step: starts its loads, fires its events and their samplers while counting down,
/// then collects what happened, waits for its jobs and reports.
async fn run_step(
    run: &DeployedRun<'_>,
    step: &Step,
    (idx, total): (usize, usize),
    progress: &mut Progress,
    rec: &mut StepRecord,
) -> Result<(), RunError> {
    let cancel = &run.opts.cancel;
    let plan = StepPlan::new(run.lab, step, run.opts.time_scale);
    if step.action.is_some() {
        rec.perturbation_id = Some(plan.perturbation_id.clone());
    }
    progress.step_begin(idx, total, &step.name, &step.phase, plan.duration);
    let mut started: Vec<StartedJob> = Vec::new();
    let result = start_loads(run, &plan, progress, rec, &mut started).await;
    let start = Instant::now();
    let times = if result.is_ok() {
        event_times(step, run.opts.time_scale)
    } else {
        Vec::new()
    };
    let fired = Arc::new(AtomicU32::new(0));
    // A live error count only for a step that runs load (a job lab's steps have none).
    let mut live = (!plan.loads.is_empty()).then(|| {
        LiveErrors::new(
            run.pack
                .join("logs")
                .join("ContainerAppConsoleLogs_CL.ndjson"),
        )
    });
    let base_errors = live.as_mut().and_then(LiveErrors::poll).unwrap_or(0);
    let countdown = Countdown {
        start,
        end: start + plan.duration,
        fired: &fired,
        n_events: u32::try_from(times.len()).unwrap_or(u32::MAX),
        live,
        base_errors,
    };
    let show_countdown = async {
        if result.is_ok() {
            countdown.run(&step.name, progress, cancel).await;
        }
    };
    let (tasks, sampler_tasks, ()) = tokio::join!(
        fire_events(run, step.action.clone(), start, &times, fired.clone()),
        start_samplers(run, &plan, start, &times),
        show_countdown
    );
    let interrupted = cancel.is_cancelled();
    let action_deadline = Instant::now()
        + if interrupted {
            Duration::from_secs(10)
        } else {
            Duration::from_secs(300)
        };
    let (samplers, samplers_aborted) = schedule::collect(sampler_tasks, action_deadline).await;
    record_sampler_starts(
        &run.target.sampler_job,
        samplers,
        progress,
        rec,
        &mut started,
    );
    warn_unfinished(progress, samplers_aborted, "sampler start(s)", &step.name);
    let (done, aborted) = schedule::collect(tasks, action_deadline).await;
    record_actions(&plan, done, rec);
    warn_unfinished(progress, aborted, "action(s)", &step.name);
    wait_for_jobs(run, &plan.loads, &started, progress, rec).await;
    progress.step_end();
    report_step_done(progress, (idx, total), step, rec);
    result?;
    if cancel.is_cancelled() {
        return Err(RunError::Interrupted);
    }
    Ok(())
}

/// Starts the loadgen job of each of the step's loads. A load whose job does not start is
/// recorded (`not started: ...`) with a warning and the step goes on; an interrupt, or a load
/// target whose URL cannot be found, stops the starting and is returned.
async fn start_loads(
    run: &DeployedRun<'_>,
    plan: &StepPlan<'_>,
    progress: &Progress,
    rec: &mut StepRecord,
    started: &mut Vec<StartedJob>,
) -> Result<(), RunError> {
    let (t, opts) = (run.target, run.opts);
    let single = run.lab.load.len() == 1;
    for load in &plan.loads {
        let base = cancellable(&opts.cancel, t.app_env_url(&load.target)).await?;
        let id = run_id(plan.step, load, single, &plan.stamp);
        let env = loadgen_env(
            plan.step,
            load,
            &base,
            &id,
            &plan.perturbation_id,
            opts.time_scale,
        );
        let job = &t.loadgen_job;
        let r = cancellable(
            &opts.cancel,
            jobs::start_replicas(
                t,
                job,
                &env,
                Some(load.replica_count()),
                opts.start_mode,
                &opts.lock_dir,
            ),
        )
        .await;
        let mut record = RunRecord {
            load: load.name.clone(),
            run_id: id,
            job: Some(job.clone()),
            ..Default::default()
        };
        match r {
            Ok(exec) => {
                started.push(StartedJob {
                    job: job.clone(),
                    execution: exec.clone(),
                    run: rec.runs.len(),
                });
                record.execution = Some(exec);
            }
            Err(RunError::Interrupted) => return Err(RunError::Interrupted),
            Err(e) => {
                progress.line(&format!(
                    "warning: {}: job {job} did not start: {e}",
                    load.name
                ));
                record.status = Some(format!("not started: {e}"));
            }
        }
        rec.runs.push(record);
    }
    Ok(())
}

/// Fires the step's action at each of `times`, each event on its own task, counting the
/// events fired in `fired`; returns the tasks once every event has fired (or on Ctrl-C).
async fn fire_events(
    run: &DeployedRun<'_>,
    action: Option<Action>,
    start: Instant,
    times: &[Duration],
    fired: Arc<AtomicU32>,
) -> Vec<JoinHandle<Vec<ActionRecord>>> {
    let actor = run.actor.clone();
    let c = run.opts.cancel.clone();
    schedule::fire(start, times, &run.opts.cancel, move |n| {
        fired.store(n, Ordering::SeqCst);
        let actor = actor.clone();
        let action = action.clone();
        let cancel = c.clone();
        async move {
            match action {
                Some(a) => actor.perform(a, n, cancel).await,
                None => Vec::new(),
            }
        }
    })
    .await
}

/// Starts one sampler execution per event of a perturbation step, each at its window's
/// opening on its own task; returns the tasks once every window has opened (or on Ctrl-C).
async fn start_samplers(
    run: &DeployedRun<'_>,
    plan: &StepPlan<'_>,
    start: Instant,
    times: &[Duration],
) -> Vec<JoinHandle<SamplerStart>> {
    let dur = plan.duration;
    let windows = if plan.step.action.is_some() {
        sampler_windows(times, dur, SAMPLER_LEAD)
    } else if plan.step.sample {
        // `sample = true`: one window over the whole step, as event 1 of its sampler.
        vec![Window {
            event: 1,
            fire: Duration::ZERO,
            open: Duration::ZERO,
            close: dur,
        }]
    } else {
        Vec::new()
    };
    let opens: Vec<Duration> = windows.iter().map(|w| w.open).collect();
    let names: Vec<&str> = run.lab.apps.iter().map(|a| a.name.as_str()).collect();
    let names = names.join(",");
    let jobs: Vec<&str> = run.lab.jobs.iter().map(|j| j.name.as_str()).collect();
    let jobs = jobs.join(",");
    let interval = (5.0 * run.opts.time_scale).round().clamp(1.0, 5.0) as u64;
    let t = run.target.clone();
    let lock_dir = run.opts.lock_dir.clone();
    let mode = run.opts.start_mode;
    let step_name = plan.step.name.clone();
    let ts = plan.stamp.clone();
    let c = run.opts.cancel.clone();
    schedule::fire(start, &opens, &run.opts.cancel, move |n| {
        let w = windows
            .iter()
            .find(|w| w.event == n)
            .copied()
            .unwrap_or(Window {
                event: n,
                fire: Duration::ZERO,
                open: Duration::ZERO,
                close: dur,
            });
        let id = event_perturbation_id(&step_name, n, &ts);
        let env: Vec<EnvChange> = vec![
            ("CONTAINER_APP_NAMES".into(), Some(names.clone())),
            ("CONTAINER_APP_JOB_NAMES".into(), Some(jobs.clone())),
            ("PERTURBATION_ID".into(), Some(id.clone())),
            ("SAMPLE_INTERVAL_SECONDS".into(), Some(interval.to_string())),
            (
                "SAMPLE_DURATION_SECONDS".into(),
                Some(whole_seconds(w.duration()).to_string()),
            ),
        ];
        let t = t.clone();
        let lock_dir = lock_dir.clone();
        let c = c.clone();
        async move {
            let r = tokio::select! {
                r = jobs::start(&t, &t.sampler_job, &env, mode, &lock_dir) => r,
                _ = c.cancelled() => Err(RunError::Interrupted),
            };
            (n, id, r)
        }
    })
    .await
}

/// The live countdown of a running step: when it started and ends, the events fired so far
/// (of `n_events`), and the live error count (a step with load) and what it was at the start.
struct Countdown<'a> {
    start: Instant,
    end: Instant,
    fired: &'a AtomicU32,
    n_events: u32,
    live: Option<LiveErrors>,
    base_errors: u64,
}

impl Countdown<'_> {
    /// Says when an event fires and ticks the progress (every second on a bar, every 30 s as
    /// plain lines) until the step ends or the run is cancelled.
    async fn run(mut self, step_name: &str, progress: &mut Progress, cancel: &CancellationToken) {
        let (start, end, n_events) = (self.start, self.end, self.n_events);
        let mut last_plain = Instant::now();
        let mut last_fired = 0;
        loop {
            let now = Instant::now();
            if now >= end || cancel.is_cancelled() {
                break;
            }
            let f = self.fired.load(Ordering::SeqCst);
            let errors = self
                .live
                .as_mut()
                .and_then(LiveErrors::poll)
                .map(|n| n.saturating_sub(self.base_errors));
            if f != last_fired {
                progress.line(&format!("  {step_name}: event {f}/{n_events} fired"));
                last_fired = f;
            }
            if progress.is_bar() || now - last_plain >= Duration::from_secs(30) {
                progress.tick(now - start, end - now, (f, n_events), errors);
                last_plain = now;
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1).min(end - now)) => {}
                _ = cancel.cancelled() => break,
            }
        }
    }
}

/// Records each event's sampler start as a `sampler` run of the step (a failed start gets a
/// `not started: ...` status, and a warning unless the run was interrupted).
fn record_sampler_starts(
    sampler_job: &str,
    samplers: Vec<SamplerStart>,
    progress: &Progress,
    rec: &mut StepRecord,
    started: &mut Vec<StartedJob>,
) {
    for (n, id, r) in samplers {
        let mut run = RunRecord {
            load: "sampler".to_owned(),
            run_id: id,
            job: Some(sampler_job.to_owned()),
            event: Some(n),
            ..Default::default()
        };
        match r {
            Ok(exec) => {
                started.push(StartedJob {
                    job: sampler_job.to_owned(),
                    execution: exec.clone(),
                    run: rec.runs.len(),
                });
                run.execution = Some(exec);
            }
            Err(e) => {
                if !matches!(e, RunError::Interrupted) {
                    progress.line(&format!(
                        "warning: sampler of event {n}: job {sampler_job} did not start: {e}"
                    ));
                }
                run.status = Some(format!("not started: {e}"));
            }
        }
        rec.runs.push(run);
    }
}

/// Adds the fired events' action records to the step's, in time order, each with its event's
/// perturbation id.
fn record_actions(plan: &StepPlan<'_>, done: Vec<Vec<ActionRecord>>, rec: &mut StepRecord) {
    for mut records in done {
        rec.actions.append(&mut records);
    }
    rec.actions.sort_by(|a, b| a.ts.cmp(&b.ts));
    for a in &mut rec.actions {
        a.perturbation_id = Some(event_perturbation_id(&plan.step.name, a.event, &plan.stamp));
    }
}

/// Warns that `n` tasks (`what`) of the step were aborted at their deadline.
fn warn_unfinished(progress: &Progress, n: usize, what: &str, step: &str) {
    if n > 0 {
        progress.line(&format!(
            "warning: {n} {what} of step {step} did not finish in time"
        ));
    }
}

/// Waits for every job execution the step started to end by itself (within the longest
/// request timeout of its loads plus 180 s), recording its status; on Ctrl-C stops them.
async fn wait_for_jobs(
    run: &DeployedRun<'_>,
    loads: &[&Load],
    started: &[StartedJob],
    progress: &Progress,
    rec: &mut StepRecord,
) {
    let (t, cancel) = (run.target, &run.opts.cancel);
    let grace = Duration::from_secs(180)
        + loads
            .iter()
            .filter_map(|l| l.timeout.as_deref())
            .filter_map(|v| logline::config::parse_duration(v).ok())
            .max()
            .unwrap_or_default();
    for exec in started {
        if cancel.is_cancelled() {
            stop_interrupted(t, &exec.job, &exec.execution).await;
            rec.runs[exec.run].status = Some("Stopped (interrupted)".into());
            continue;
        }
        let status = tokio::select! {
            r = jobs::wait(t, &exec.job, &exec.execution, grace) => r,
            _ = cancel.cancelled() => Err(RunError::Interrupted),
        };
        rec.runs[exec.run].status = Some(match status {
            Ok(s) => s,
            Err(RunError::Interrupted) => {
                stop_interrupted(t, &exec.job, &exec.execution).await;
                "Stopped (interrupted)".into()
            }
            Err(e) => {
                progress.line(&format!("warning: {e}"));
                format!("unknown: {e}")
            }
        });
    }
}

/// Stops an execution of an interrupted run (giving ARM 10 s; a failure is left alone, the
/// job ends by itself).
async fn stop_interrupted(t: &Target, job: &str, execution: &str) {
    let stopper = t
        .arm
        .with_deadline(Instant::now() + Duration::from_secs(10));
    let _ = stopper.stop_execution(&t.scope, job, execution).await;
}

/// The step's closing line: its runs with their statuses, its actions, and those that failed.
fn report_step_done(
    progress: &Progress,
    (idx, total): (usize, usize),
    step: &Step,
    rec: &StepRecord,
) {
    let failed: Vec<String> = rec
        .actions
        .iter()
        .filter(|a| a.outcome != "ok")
        .map(|a| {
            let target = a.job.as_deref().unwrap_or(&a.app);
            format!("{} #{} {target}: {}", a.kind, a.event, a.detail)
        })
        .collect();
    progress.line(&format!(
        "[step {idx}/{total}] {} done: {} run(s) ({}), {} action(s), {} failed{}",
        step.name,
        rec.runs.len(),
        rec.runs
            .iter()
            .map(|r| format!("{} {}", r.load, r.status.as_deref().unwrap_or("?")))
            .collect::<Vec<_>>()
            .join(", "),
        rec.actions.len(),
        failed.len(),
        if failed.is_empty() {
            String::new()
        } else {
            format!(": {}", failed.join("; "))
        }
    ));
}
