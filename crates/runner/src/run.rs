//! `lab run`: the whole experiment, from the pre-registration copy to the verdict.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use chrono::Utc;
use lab::{Action, Lab, Load, Step};
use localplane::{LocalplaneConfig, RuntimeKind};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::RunError;
use crate::actions::Actor;
use crate::deploy;
use crate::jobs::{self, EnvChange, StartMode};
use crate::loadgen::{loadgen_env, run_id};
use crate::pack::{self, ActionRecord, RunRecord, RunsRecord, StepRecord, iso, stamp};
use crate::progress::{LiveErrors, Progress, ProgressMode};
use crate::schedule::{
    self, SAMPLER_LEAD, Window, event_perturbation_id, event_times, sampler_windows, step_duration,
    whole_seconds,
};
use crate::target::{Addressing, Target, TargetKind};

/// Where the lab runs.
#[derive(Clone, Debug)]
pub enum TargetChoice {
    /// localplane, started in-process for the run.
    Local(LocalRuntime),
    /// Azure (or any ARM endpoint, see [`Target::azure`]).
    Azure,
}

#[derive(Clone, Debug)]
pub enum LocalRuntime {
    Docker,
    /// Child processes; `bin_dir` holds the workspace binaries.
    Process {
        bin_dir: PathBuf,
    },
}

/// Everything `lab run` takes.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub lab: PathBuf,
    pub profile: String,
    pub target: TargetChoice,
    /// The evidence root; the pack is `<out>/<lab>-<stamp>/`.
    pub out: PathBuf,
    /// Multiplies every duration of the schedule (tests only; 1 = the profile's numbers). The
    /// rule is never scaled.
    pub time_scale: f64,
    pub progress: ProgressMode,
    /// How long every app may take to get its first revision ready.
    pub ready_timeout: Duration,
    pub start_mode: StartMode,
    pub lock_dir: PathBuf,
    /// Ctrl-C / SIGTERM / SIGHUP: stop jobs, shut localplane down, keep the partial pack.
    pub cancel: CancellationToken,
    /// A second signal: cut the containers' grace periods short (they are still removed).
    pub hurry: CancellationToken,
    /// What interrupted the run (e.g. `SIGTERM`), for `runs.json`'s `stopped_by`.
    pub interrupted_by: Arc<std::sync::Mutex<Option<String>>>,
    /// Azure: how long the Log Analytics row counts must stay unchanged before the logs are
    /// pulled, and the longest wait for that.
    pub logs_settle: crate::azure::Settle,
}

impl RunOptions {
    pub fn new(lab: PathBuf, profile: &str, target: TargetChoice, out: PathBuf) -> RunOptions {
        RunOptions {
            lab,
            profile: profile.to_owned(),
            target,
            out,
            time_scale: 1.0,
            progress: ProgressMode::Auto,
            ready_timeout: Duration::from_secs(300),
            start_mode: StartMode::UpdateThenStart,
            lock_dir: jobs::default_lock_dir(),
            cancel: CancellationToken::new(),
            hurry: CancellationToken::new(),
            interrupted_by: Arc::default(),
            logs_settle: crate::azure::Settle::default(),
        }
    }

    /// Records what interrupted the run and cancels it (`second`: also cuts the grace short).
    pub fn interrupt(&self, by: &str, second: bool) {
        if let Ok(mut g) = self.interrupted_by.lock()
            && g.is_none()
        {
            *g = Some(by.to_owned());
        }
        self.cancel.cancel();
        if second {
            self.hurry.cancel();
        }
    }

    fn stopped_by_interrupt(&self) -> String {
        let by = self
            .interrupted_by
            .lock()
            .ok()
            .and_then(|g| g.clone())
            .unwrap_or_else(|| "Ctrl-C".to_owned());
        format!("interrupted ({by})")
    }
}

/// What a run left.
pub struct RunOutcome {
    pub pack: PathBuf,
    pub record: RunsRecord,
    /// The analysis, when the run completed.
    pub analysis: Option<analysis::Analysis>,
    /// What stopped the run early (the pack is kept, `incomplete` in runs.json).
    pub error: Option<RunError>,
    pub wall: Duration,
}

/// Runs a lab. Errors before the pack exists are returned as `Err`; later ones end up in
/// [`RunOutcome::error`] with the partial pack kept.
pub async fn run_lab(opts: RunOptions) -> Result<RunOutcome, RunError> {
    let t0 = Instant::now();
    let lab = lab::load(&opts.lab, &opts.profile)?;
    if matches!(opts.target, TargetChoice::Azure) {
        let steps = lab.localplane_only_steps();
        if !steps.is_empty() {
            return Err(RunError::Config(format!(
                "this lab cannot run on Azure: step(s) {} start a platform maintenance, which \
                 Container Apps starts itself and offers no API for; run it on localplane \
                 (--target local)",
                steps.join(", ")
            )));
        }
    }
    // Azure: what is missing is said before a pack exists or anything is deployed.
    let azure = match opts.target {
        TargetChoice::Azure => Some(
            crate::azure::prepare(&|k| std::env::var(k).ok(), opts.logs_settle, PathBuf::new())
                .await?,
        ),
        TargetChoice::Local(_) => None,
    };
    let started = Utc::now();
    let pack = pack::create(&opts.out, &opts.lab, &opts.profile, started)?;
    let mut record = RunsRecord {
        lab: pack::lab_name(&opts.lab),
        profile: opts.profile.clone(),
        target: match opts.target {
            TargetChoice::Local(_) => "local".into(),
            TargetChoice::Azure => "azure".into(),
        },
        started: iso(started),
        ended: None,
        incomplete: true,
        stopped_by: None,
        time_scale: opts.time_scale,
        localplane_timings: match opts.target {
            TargetChoice::Local(_) => Some(lab.localplane_timings.as_str().to_owned()),
            TargetChoice::Azure => None,
        },
        localplane_knobs: match opts.target {
            TargetChoice::Local(_) => Some(
                lab.apps
                    .iter()
                    .map(|a| (a.name.clone(), a.localplane_tags()))
                    .collect(),
            ),
            TargetChoice::Azure => None,
        },
        steps: Vec::new(),
        log_write_failures: Vec::new(),
    };
    record.write(&pack)?;
    let mut progress = Progress::new(opts.progress);
    progress.line(&format!("evidence pack: {}", pack.display()));
    let result = run_target(&lab, &pack, &mut record, &opts, &mut progress, azure).await;
    record.ended = Some(iso(Utc::now()));
    let error = match result {
        Ok(()) => {
            // Lost log rows keep the run incomplete (the analysis still runs and judges it).
            record.incomplete = !record.log_write_failures.is_empty();
            None
        }
        Err(e) => {
            record.stopped_by = Some(match &e {
                RunError::Interrupted => opts.stopped_by_interrupt(),
                e => e.to_string(),
            });
            Some(e)
        }
    };
    record.write(&pack)?;
    let analysis = if error.is_none() {
        progress.line("analysing the evidence");
        Some(analyze(&pack).await?)
    } else {
        None
    };
    Ok(RunOutcome {
        pack,
        record,
        analysis,
        error,
        wall: t0.elapsed(),
    })
}

/// Runs the analysis on a pack and writes its outputs (tables, verdict, report, manifest).
pub async fn analyze(pack: &Path) -> Result<analysis::Analysis, RunError> {
    let pack = pack.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let opts = analysis::Options {
            rule: analysis::Rule::default(),
            lab: analysis::find_lab(None, Some(&pack)),
        };
        let a = analysis::analyze(std::slice::from_ref(&pack), &opts)?;
        analysis::pack::write(&a, &pack, analysis::pack::Parts::All)?;
        Ok::<_, RunError>(a)
    })
    .await
    .map_err(|e| RunError::Config(format!("analysis task failed: {e}")))?
}

async fn cancellable<T>(
    cancel: &CancellationToken,
    f: impl std::future::Future<Output = Result<T, RunError>>,
) -> Result<T, RunError> {
    tokio::select! {
        r = f => r,
        _ = cancel.cancelled() => Err(RunError::Interrupted),
    }
}

async fn run_target(
    lab: &Lab,
    pack: &Path,
    record: &mut RunsRecord,
    opts: &RunOptions,
    progress: &mut Progress,
    azure: Option<crate::azure::AzureRun>,
) -> Result<(), RunError> {
    match &opts.target {
        TargetChoice::Local(rt) => {
            let (runtime, addressing) = match rt {
                LocalRuntime::Docker => {
                    deploy::check_docker_images(&deploy::images(lab))?;
                    (RuntimeKind::Docker, Addressing::ByName)
                }
                LocalRuntime::Process { bin_dir } => (
                    RuntimeKind::Process {
                        bin_dir: bin_dir.clone(),
                    },
                    Addressing::ByFqdn,
                ),
            };
            let state_dir = std::env::temp_dir().join(format!(
                "probelab-localplane-{}-{}",
                std::process::id(),
                pack.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            ));
            if matches!(runtime, RuntimeKind::Docker) {
                sweep_orphans(progress).await;
            }
            let lp = localplane::start(LocalplaneConfig {
                max_replicas: localplane::quota::DEFAULT_MAX_REPLICAS,
                tls: false,
                listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
                state_dir: state_dir.clone(),
                evidence_dir: pack.to_path_buf(),
                runtime,
            })
            .await?;
            let failures = lp.log_write_failures();
            let _hurry = forward_hurry(&opts.hurry, lp.hurry_handle());
            progress.line(&format!("localplane: ARM API at {}", lp.base_url()));
            progress.line(&format!(
                "localplane timings: {}",
                lab.localplane_timings.meaning()
            ));
            let result = match Target::local(&lp.base_url(), addressing) {
                Ok(t) => orchestrate(lab, pack, record, opts, progress, Arc::new(t)).await,
                Err(e) => Err(e),
            };
            progress.line("stopping localplane (containers get their grace periods)");
            let down = lp.shutdown().await;
            let _ = std::fs::remove_dir_all(&state_dir);
            record_log_failures(record, &failures, pack, progress);
            result?;
            down?;
            Ok(())
        }
        TargetChoice::Azure => {
            let Some(mut azure) = azure else {
                return Err(RunError::Config(
                    "target azure was not prepared (the checks did not run)".into(),
                ));
            };
            let t = Arc::new(azure.target);
            // Rows are selected by when they were printed: from a little before the first call.
            azure.pull.since = Utc::now() - chrono::Duration::minutes(5);
            azure.pull.out = pack.join("logs");
            orchestrate(lab, pack, record, opts, progress, t).await?;
            progress.line(&format!(
                "pulling logs from Log Analytics workspace {} (ingestion lags the containers; \
                 waiting until the row counts settle)",
                azure.pull.workspace
            ));
            let n = cancellable(&opts.cancel, crate::logs::pull(&azure.pull)).await?;
            progress.line(&format!("{n} log rows written"));
            Ok(())
        }
    }
}

async fn orchestrate(
    lab: &Lab,
    pack: &Path,
    record: &mut RunsRecord,
    opts: &RunOptions,
    progress: &mut Progress,
    t: Arc<Target>,
) -> Result<(), RunError> {
    let cancel = &opts.cancel;
    let scale = opts.time_scale;
    let longest = lab
        .steps
        .iter()
        .map(|s| step_duration(s, scale))
        .max()
        .unwrap_or_default();
    let location = if t.kind == TargetKind::Local {
        progress.line("deploying the environment and jobs");
        cancellable(
            cancel,
            deploy::local_infrastructure(&t, longest + Duration::from_secs(600)),
        )
        .await?;
        "local".to_owned()
    } else {
        let env = cancellable(
            cancel,
            t.get(
                "get_environment",
                &t.resource_path("managedEnvironments", &t.env_name),
            ),
        )
        .await?;
        env.get("location")
            .and_then(|l| l.as_str())
            .unwrap_or("swedencentral")
            .to_owned()
    };
    let token = random_token();
    let names: Vec<String> = lab.apps.iter().map(|a| a.name.clone()).collect();
    if !names.is_empty() {
        progress.line(&format!("deploying apps: {}", names.join(", ")));
    }
    cancellable(
        cancel,
        deploy::apps(&t, lab, &record.lab, Some(&token), &location),
    )
    .await?;
    let awaited = deploy::awaited_apps(lab);
    cancellable(cancel, deploy::wait_ready(&t, &awaited, opts.ready_timeout)).await?;
    cancellable(cancel, deploy::wait_serving(&t, lab, opts.ready_timeout)).await?;
    if names.is_empty() {
        progress.line("no app to deploy: the lab's jobs are under test");
    } else if awaited.len() == names.len() {
        progress.line("every app is ready and every load target serves");
    } else {
        let not: Vec<&str> = names
            .iter()
            .filter(|n| !awaited.contains(n))
            .map(String::as_str)
            .collect();
        progress.line(&format!(
            "not waited for (wait_ready = false; the steps start while they start): {}; every \
             other app is ready and every load target of those serves",
            not.join(", ")
        ));
    }
    if !lab.jobs.is_empty() {
        let jobs: Vec<&str> = lab.jobs.iter().map(|j| j.name.as_str()).collect();
        progress.line(&format!("deploying jobs under test: {}", jobs.join(", ")));
        cancellable(cancel, deploy::jobs(&t, lab, &record.lab, &location)).await?;
    }
    let actor = Arc::new(Actor::new(t.clone(), Some(token), scale)?);
    run_steps(lab, &t, &actor, opts, progress, pack, record).await
}

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
    let mut live = LiveErrors::new(
        run.pack
            .join("logs")
            .join("ContainerAppConsoleLogs_CL.ndjson"),
    );
    let base_errors = live.poll();
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
/// (of `n_events`), and the error count the local log sink had when it started.
struct Countdown<'a> {
    start: Instant,
    end: Instant,
    fired: &'a AtomicU32,
    n_events: u32,
    live: LiveErrors,
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
            let errors = self.live.poll() - self.base_errors;
            if f != last_fired {
                progress.line(&format!("  {step_name}: event {f}/{n_events} fired"));
                last_fired = f;
            }
            if progress_is_bar(progress) || now - last_plain >= Duration::from_secs(30) {
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
            .filter_map(|v| labkit::config::parse_duration(v).ok())
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

/// Removes what a SIGKILLed earlier run left (containers and networks whose owning process is
/// gone, from any state dir).
async fn sweep_orphans(progress: &mut Progress) {
    let (c, n) = localplane::runtime::docker::sweep_dead_owners().await;
    if c + n > 0 {
        progress.line(&format!(
            "removed {c} container(s) and {n} network(s) left by a probelab process that is gone"
        ));
    }
}

/// Cuts localplane's grace periods short when `hurry` fires (a second signal). The returned
/// guard ends the forwarding task when dropped.
fn forward_hurry(
    hurry: &CancellationToken,
    lp_hurry: CancellationToken,
) -> tokio_util::sync::DropGuard {
    let done = CancellationToken::new();
    let (h, d) = (hurry.clone(), done.clone());
    tokio::spawn(async move {
        tokio::select! {
            _ = h.cancelled() => lp_hurry.cancel(),
            _ = d.cancelled() => {}
        }
    });
    done.drop_guard()
}

/// Copies the log sink's write failures into `runs.json`'s `log_write_failures` and says so.
fn record_log_failures(
    record: &mut RunsRecord,
    failures: &localplane::logsink::Failures,
    pack: &Path,
    progress: &mut Progress,
) {
    for f in failures.snapshot() {
        let f = pack::log_write_failure(&f, pack);
        progress.line(&format!(
            "error: log rows lost: {}: {} (from {}; {} rows)",
            f.file, f.error, f.first_failed_ts, f.rows_lost
        ));
        record.log_write_failures.push(f);
    }
}

fn progress_is_bar(p: &Progress) -> bool {
    p.is_bar()
}

fn random_token() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..32)
        .map(|_| char::from(b"0123456789abcdef"[rng.random_range(0..16)]))
        .collect()
}
