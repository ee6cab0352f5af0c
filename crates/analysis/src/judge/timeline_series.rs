//! What the timeline shows, as data: the fired events (markers), the steps' spans, the lab's
//! span, the replicas per revision per sampler tick, each revision's state changes as the
//! samplers read them and the virtual clients that moved, computed from the judged [`Analysis`].
//! [`crate::render::timeline_svg`] only draws them; the tests read them here without parsing SVG.

use std::collections::{BTreeMap, BTreeSet};

use crate::Analysis;
use crate::judge::rule::BucketRow;
use crate::read::model::SystemEvent;
use crate::ts::parse_ms;

/// One fired perturbation event (the earliest action record of a step's event).
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    pub step: String,
    pub event: u32,
    pub kind: String,
    pub ts_ms: i64,
    pub perturbation_id: Option<String>,
    /// `ok` unless an action record of the event failed.
    pub outcome: String,
}

/// Every fired event of `runs.json` (none without one), in time order.
pub fn markers(a: &Analysis) -> Vec<Marker> {
    let Ok(rf) = &a.runs_file else {
        return Vec::new();
    };
    let mut by: BTreeMap<(String, u32), Marker> = BTreeMap::new();
    for s in &rf.steps {
        for act in &s.actions {
            let Some(ts) = parse_ms(&act.ts) else {
                continue;
            };
            let m = by.entry((s.name.clone(), act.event)).or_insert(Marker {
                step: s.name.clone(),
                event: act.event,
                kind: act.kind.clone(),
                ts_ms: ts,
                perturbation_id: act.perturbation_id.clone(),
                outcome: "ok".into(),
            });
            m.ts_ms = m.ts_ms.min(ts);
            if m.perturbation_id.is_none() {
                m.perturbation_id = act.perturbation_id.clone();
            }
            if act.outcome != "ok" {
                m.outcome = act.outcome.clone();
            }
        }
    }
    let mut v: Vec<Marker> = by.into_values().collect();
    v.sort_by(|a, b| (a.ts_ms, &a.step, a.event).cmp(&(b.ts_ms, &b.step, b.event)));
    v
}

/// A step of `runs.json` with its time span (end: the next step's start, or the data's end).
#[derive(Clone, Debug)]
pub struct StepSpan {
    pub name: String,
    pub phase: String,
    pub start_ms: i64,
    pub end_ms: i64,
    pub has_actions: bool,
}

fn data_span(a: &Analysis) -> Option<(i64, i64)> {
    let w = a.acc.window_ms;
    let lo = a.q2.iter().map(|r| r.start_ms).min()?;
    let hi = a.q2.iter().map(|r| r.start_ms + w).max()?;
    Some((lo, hi))
}

/// The steps of `runs.json` (none without one).
pub fn steps(a: &Analysis) -> Vec<StepSpan> {
    let Ok(rf) = &a.runs_file else {
        return Vec::new();
    };
    let data_end = data_span(a).map(|s| s.1);
    let mut out: Vec<StepSpan> = Vec::new();
    let starts: Vec<Option<i64>> = rf.steps.iter().map(|s| s.start_ms()).collect();
    for (i, s) in rf.steps.iter().enumerate() {
        let Some(start) = starts[i] else { continue };
        let end = s
            .end_ms()
            .or_else(|| starts.get(i + 1).copied().flatten())
            .or(data_end)
            .unwrap_or(start)
            .max(start);
        out.push(StepSpan {
            name: s.name.clone(),
            phase: s.phase.clone(),
            start_ms: start,
            end_ms: end,
            has_actions: !s.actions.is_empty(),
        });
    }
    out
}

/// The whole lab's span: the first step's start (else the first window) to the last step's end
/// (else the last window's end). `None` when there is nothing to draw.
pub fn lab_span(a: &Analysis) -> Option<(i64, i64)> {
    let st = steps(a);
    let d = data_span(a);
    let lo = st.iter().map(|s| s.start_ms).min().or(d.map(|d| d.0))?;
    let hi = st
        .iter()
        .map(|s| s.end_ms)
        .max()
        .into_iter()
        .chain(d.map(|d| d.1))
        .max()?;
    Some((lo, hi.max(lo + 1000)))
}

/// Rows of the main scenario, per run, in time order.
pub(crate) fn main_rows(a: &Analysis) -> BTreeMap<&str, Vec<&BucketRow>> {
    let mut by: BTreeMap<&str, Vec<&BucketRow>> = BTreeMap::new();
    for r in a.q2.iter().filter(|r| r.scenario == "main") {
        by.entry(r.run_id.as_str()).or_default().push(r);
    }
    for v in by.values_mut() {
        v.sort_by_key(|r| r.start_ms);
    }
    by
}

/// Replicas per `app/revision` at each sampler tick: `(series, [(ms, count)])`; series keep
/// one sampler execution apart from another so lines never join two samplers' ticks.
/// Per `app/revision`: one `(execution, points)` per sampler execution.
pub type ReplicaSeries = BTreeMap<String, Vec<(String, Vec<(i64, f64)>)>>;
/// A sampler execution `(sampler, run)` and one of its ticks.
type TickKey = ((String, String), (i64, u64));

/// The sampler execution of a line: its sampler and run_id, else its perturbation_id (one per
/// step, or per event with per-event ids).
fn sampler_exec(
    sampler: &Option<String>,
    run_id: &Option<String>,
    perturbation_id: &Option<String>,
) -> (String, String) {
    (
        sampler.clone().unwrap_or_default(),
        run_id
            .clone()
            .or_else(|| perturbation_id.clone())
            .unwrap_or_default(),
    )
}

/// One tick of an execution: its number when the sampler printed one, else its second.
fn tick_key(tick: Option<u64>, ms: i64) -> (i64, u64) {
    match tick {
        Some(t) => (0, t),
        None => (ms.div_euclid(1000), 0),
    }
}

/// Replicas per `app/revision` over time, as the replica panel draws them (public for tests).
pub fn replica_series(a: &Analysis) -> ReplicaSeries {
    // (sampler, execution) -> tick key -> revision -> count.
    type Ticks = BTreeMap<(i64, u64), BTreeMap<String, u32>>;
    let mut execs: BTreeMap<(String, String), Ticks> = BTreeMap::new();
    // Tick times: the earliest sample of each tick.
    let mut tick_ms: BTreeMap<TickKey, i64> = BTreeMap::new();
    let mut note_tick = |exec: &(String, String), key: (i64, u64), ms: i64| {
        let e = tick_ms.entry((exec.clone(), key)).or_insert(ms);
        *e = (*e).min(ms);
    };
    // An active revision sampled with no replica (scaled to zero) counts 0 at that tick: its
    // revision line says so, where the replica inventory has no row to count.
    for s in &a.acc.rev_samples {
        let exec = sampler_exec(&s.sampler, &s.run_id, &s.perturbation_id);
        let ms = s.ts.epoch_ms();
        let key = tick_key(s.tick, ms);
        note_tick(&exec, key, ms);
        let e = execs.entry(exec).or_default().entry(key).or_default();
        if s.active {
            e.entry(format!("{}/{}", s.app, s.revision)).or_insert(0);
        }
    }
    for s in &a.acc.replica_samples {
        let exec = sampler_exec(&s.sampler, &s.run_id, &s.perturbation_id);
        let ms = s.ts.epoch_ms();
        let key = tick_key(s.tick, ms);
        note_tick(&exec, key, ms);
        let e = execs.entry(exec).or_default().entry(key).or_default();
        *e.entry(format!("{}/{}", s.app, s.revision)).or_insert(0) += 1;
    }
    let mut out: ReplicaSeries = BTreeMap::new();
    for (exec, ticks) in &execs {
        let revs: BTreeSet<&String> = ticks.values().flat_map(|m| m.keys()).collect();
        for rev in revs {
            let mut pts: Vec<(i64, f64)> = ticks
                .iter()
                .filter_map(|(k, m)| {
                    let ms = *tick_ms.get(&(exec.clone(), *k))?;
                    Some((ms, m.get(rev).copied().unwrap_or(0) as f64))
                })
                .collect();
            pts.sort_by_key(|p| p.0);
            out.entry(rev.clone())
                .or_default()
                .push((format!("{}:{}", exec.0, exec.1), pts));
        }
    }
    out
}

/// The replicas alive of each job under test over time, keyed beside the revisions of
/// [`replica_series`]: as its queue workers' lines span them (`<job>/job replicas (workers'
/// lines)`), and, for each job the samplers read from ARM, as its system rows span them, each
/// replica from its `ContainerStarted` row to its `ContainerTerminated` row (`<job>/job replicas
/// (system rows)`): a killed replica that never printed is drawn all the same.
pub fn job_replica_series(a: &Analysis) -> ReplicaSeries {
    let lines = &a.acc.subject;
    let mut out: ReplicaSeries = crate::judge::job_replicas::job_names(lines)
        .into_iter()
        .map(|job| {
            let pts =
                crate::judge::job_replicas::alive(&crate::judge::job_replicas::spans(lines, job));
            (
                format!("{job}/{JOB_SERIES}"),
                vec![("workers".to_owned(), pts)],
            )
        })
        .collect();
    for job in sampled_jobs(a) {
        let executions = crate::judge::job_executions::executions(&a.acc, job);
        let spans: crate::judge::job_replicas::Spans = executions
            .iter()
            .flat_map(|e| e.replicas.iter())
            .filter_map(|r| {
                let start = r.started_ms?;
                Some((
                    r.name.as_str(),
                    (start, r.ended_ms.unwrap_or(start).max(start)),
                ))
            })
            .collect();
        if !spans.is_empty() {
            out.insert(
                format!("{job}/{JOB_ROWS_SERIES}"),
                vec![("rows".to_owned(), crate::judge::job_replicas::alive(&spans))],
            );
        }
    }
    out
}

/// The jobs the samplers read from ARM (the lab's `[[jobs]]`), by name.
fn sampled_jobs(a: &Analysis) -> BTreeSet<&str> {
    a.acc.executions.iter().map(|s| s.job.as_str()).collect()
}

/// The replica panel's name for a job's series (after `<job>/`).
pub const JOB_SERIES: &str = "job replicas (workers' lines)";
/// The replica panel's name for a job's series from its system rows (after `<job>/`).
pub const JOB_ROWS_SERIES: &str = "job replicas (system rows)";

/// The strip row of the job executions' statuses the samplers read from ARM.
pub const EXECUTION_ROW: &str = "execution status (ARM)";

/// Each execution's statuses as the samplers read them, as events of the strip row
/// [`EXECUTION_ROW`]: its first status, then every change (`Failed (was Running)`), at the tick
/// that first saw it; the message starts with the new status, then the execution.
pub fn execution_changes(a: &Analysis) -> Vec<SystemEvent> {
    let mut out = Vec::new();
    for job in sampled_jobs(a) {
        for e in crate::judge::job_executions::executions(&a.acc, job) {
            let mut prev: Option<&str> = None;
            for (ms, status) in &e.statuses {
                out.push(SystemEvent {
                    ts_ms: *ms,
                    app: job.to_owned(),
                    revision: String::new(),
                    execution: e.name.clone(),
                    replica: String::new(),
                    reason: EXECUTION_ROW.to_owned(),
                    msg: match prev {
                        Some(p) => format!("{status} (was {p}): {}", e.name),
                        None => format!("{status}: {}", e.name),
                    },
                    kind: "Normal".to_owned(),
                });
                prev = Some(status);
            }
        }
    }
    out.sort_by_key(|e| e.ts_ms);
    out
}

/// The strip row of the revision states the samplers read from ARM (not a system log row).
pub const STATE_ROW: &str = "revision state (ARM)";

/// Each revision's states (provisioning / running / health) as the samplers read them, as
/// events of the strip row [`STATE_ROW`]: a revision's first sample, then every sample whose
/// states differ from its previous one (`Failed/Failed/Unhealthy (was
/// Provisioning/Processing/None)`), in time order.
pub fn state_changes(a: &Analysis) -> Vec<SystemEvent> {
    let mut samples: Vec<_> = a.acc.rev_samples.iter().collect();
    samples.sort_by_key(|s| s.ts.epoch_ms());
    let mut last: BTreeMap<(&str, &str), String> = BTreeMap::new();
    let mut out = Vec::new();
    for s in samples {
        let states = format!(
            "{}/{}/{}",
            s.provisioning_state,
            s.running_state.as_deref().unwrap_or("-"),
            s.health_state.as_deref().unwrap_or("-")
        );
        let prev = last.insert((s.app.as_str(), s.revision.as_str()), states.clone());
        if prev.as_deref() == Some(states.as_str()) {
            continue;
        }
        out.push(SystemEvent {
            ts_ms: s.ts.epoch_ms(),
            app: s.app.clone(),
            revision: s.revision.clone(),
            execution: String::new(),
            replica: String::new(),
            reason: STATE_ROW.to_owned(),
            msg: match prev {
                Some(p) => format!("{states} (was {p})"),
                None => states,
            },
            kind: "Normal".to_owned(),
        });
    }
    out
}

/// The strip row of loadgen's virtual clients that moved to another replica.
pub const CLIENTS_ROW: &str = "clients moved (loadgen)";

/// The virtual clients that moved to another replica (loadgen's `client` lines), as events of
/// the strip row [`CLIENTS_ROW`]: one per run and rule window with a move, at its first move,
/// its message starting with the number of clients (`3 client(s) moved ...`).
pub fn client_moves(a: &Analysis) -> Vec<SystemEvent> {
    let mut out: Vec<SystemEvent> = a
        .acc
        .clients
        .windows
        .iter()
        .map(|(((run, _), _), w)| {
            let paths: Vec<String> = w
                .paths
                .iter()
                .map(|((f, t), n)| format!("{f} -> {t} ×{n}"))
                .collect();
            SystemEvent {
                ts_ms: w.first_ms,
                app: String::new(),
                revision: run.clone(),
                execution: String::new(),
                replica: String::new(),
                reason: CLIENTS_ROW.to_owned(),
                msg: format!(
                    "{} client(s) moved ({} with a new cookie): {}",
                    w.clients.len(),
                    w.with_cookie,
                    paths.join(", ")
                ),
                kind: "Normal".to_owned(),
            }
        })
        .collect();
    out.sort_by_key(|e| e.ts_ms);
    out
}
