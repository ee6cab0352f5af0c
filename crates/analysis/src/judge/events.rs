//! Every fired event of `runs.json`, checked against what the sampler and the system events show.
//!
//! An event is one firing of a step's action (`runs.json` `steps[].actions[]`, grouped by
//! `event`). Since per-event ids, each event has its own perturbation id (the action record's
//! `perturbation_id`, also the `run_id` of the step's sampler execution with that `event`), and
//! that sampler execution's `RevisionStateSample` / `ReplicaInventorySample` lines carry it.
//!
//! An event is **observed** when:
//! - every action record of the event has `outcome = "ok"`;
//! - `rollout` / `set-env` (a new revision): the event's `RevisionStateSample` lines of the
//!   action's app show a revision absent from their first sample that later is the only active
//!   revision with traffic; `ContainerAppSystemLogs_CL` has a `ContainerStarted` row of that
//!   revision; and the old revision (active with traffic in the first sample) stopped: a system
//!   row shows it (`ContainerTerminated ... reason 'ManuallyStopped'` of one of its replicas, as
//!   Azure writes, or `RevisionDeactivating` of it, as localplane writes), and each of its
//!   replicas in the event's first `ReplicaInventorySample` tick has either such a
//!   `ManuallyStopped` row or is gone from the event's last inventory tick;
//! - `restart`: the revision active with traffic in the first sample got replacement replicas:
//!   a `ContainerStarted` row of that revision, before the next event fired, for a replica
//!   neither in the event's first inventory tick nor named by any system row before it, and
//!   each replica of the first tick
//!   has a `ManuallyStopped` row or is gone from the last tick;
//! - any other kind (dependency, simulate, saturate, and the multiple-mode `revision`,
//!   `traffic`, `deactivate`, whose effect the labs' own checks judge: who served what): its
//!   action records are ok (no platform signature is checked for them).
//!
//! An event without a per-event perturbation id (a pack written before per-event ids) is not
//! observed: its sampler lines cannot be told apart from the other events' of its step.
//!
//! The transition of a rollout is Q3's: the first sample with the new revision to the first
//! sample where it alone is active with traffic. The transition of a restart is the replica
//! turnover: the first inventory tick with a replacement replica to the first tick with no
//! replica of the first tick left. `errors_in_window` counts the client-visible errors of the
//! step's load runs from the event's fire time to the next event's (or the step's end): failed
//! `req` lines when the run has any (and none were past the kept limit), else the errors of the
//! bucket windows from the one holding the fire time up to the window's end.

use std::collections::{BTreeMap, BTreeSet};

use logline::clock::window_start_ms;
use logline::line::{ReplicaInventorySample, RevisionStateSample};
use serde_json::{Value, json};

use crate::judge::strength::ErrorRate;
use crate::read::model::{Acc, RunData, SystemEvent};
use crate::read::runs::{ActionRecord, RunsRecord, StepRecord};
use crate::read::wording::termination_reason;
use crate::ts::{iso_ms, parse_ms};

/// One fired event, as report.md and report.html list it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct EventSummary {
    /// Step name.
    pub step: String,
    /// 1-based event number within the step.
    pub event: u32,
    /// `rollout`, `restart`, ...
    pub kind: String,
    pub perturbation_id: Option<String>,
    /// When the action fired (epoch ms).
    pub fired_ms: i64,
    pub new_revision: Option<String>,
    /// First sample with the new revision → first sample where it alone is active with traffic
    /// (restart: the replica turnover).
    pub transition_s: Option<f64>,
    /// Client-visible errors in the event's window.
    pub errors_in_window: u64,
    /// The error rate of the step's load over the bucket windows from the one holding the fire
    /// time to the event window's end, with its exact 95 % interval (`None`: no request).
    pub window_error_rate: Option<ErrorRate>,
    /// The worst of those windows' err_pct (`None`: no request).
    pub worst_window_err_pct: Option<f64>,
    /// A judged streak of the rule (a Q5 window) overlaps the event's windows: the event had a
    /// burst the rule sees.
    pub burst: bool,
    /// `perturbations_observed` passed for this event.
    pub observed: bool,
    /// Why not observed.
    pub problem: Option<String>,
}

/// One event with the evidence its summary rests on.
#[derive(Clone, Debug)]
pub struct Event {
    pub summary: EventSummary,
    pub app: String,
    /// The revision(s) active with traffic in the event's first sample.
    pub old: Vec<String>,
    /// Start of the transition (first sample with the new revision / a replacement replica).
    pub first_seen_ms: Option<i64>,
    /// End of the transition (new revision alone with traffic / no old replica left).
    pub done_ms: Option<i64>,
    /// End of the event's window (next event or step end; `None`: open).
    pub window_end_ms: Option<i64>,
    /// What was checked, for gates.json.
    pub evidence: Value,
}

impl Event {
    /// The event as one gates.json entry.
    pub fn to_json(&self) -> Value {
        let s = &self.summary;
        json!({
            "step": s.step, "event": s.event, "kind": s.kind, "app": self.app,
            "perturbation_id": s.perturbation_id, "fired": iso_ms(s.fired_ms),
            "old_revisions": self.old, "new_revision": s.new_revision,
            "transition_s": s.transition_s, "errors_in_window": s.errors_in_window,
            "window_error_rate": s.window_error_rate,
            "worst_window_err_pct": s.worst_window_err_pct, "burst": s.burst,
            "observed": s.observed, "problem": s.problem, "evidence": self.evidence,
        })
    }
}

/// Whether a judged streak of the rule (a Q5 window: its windows from `first_ms` to the end of
/// the one starting at `last_ms`) overlaps the event's windows (from the one holding its fire
/// time to its window's end).
pub fn burst_in(e: &Event, streaks: &[crate::judge::rule::Streak], window_ms: i64) -> bool {
    let from = window_start_ms(e.summary.fired_ms, window_ms);
    streaks.iter().any(|s| {
        s.judged && s.last_ms + window_ms > from && e.window_end_ms.is_none_or(|t| s.first_ms < t)
    })
}

/// Whether an action kind makes a new revision.
pub fn makes_revision(kind: &str) -> bool {
    matches!(kind, "rollout" | "set-env")
}

/// The events of every step of `runs.json` that fired an action, in step and event order.
pub fn evaluate(acc: &Acc, runs: &RunsRecord) -> Vec<Event> {
    let mut out = Vec::new();
    for step in &runs.steps {
        let numbers: BTreeSet<u32> = step.actions.iter().map(|a| a.event).collect();
        let fired: Vec<(u32, Option<i64>)> = numbers
            .iter()
            .map(|&n| (n, primary(step, n).and_then(|a| parse_ms(&a.ts))))
            .collect();
        for (i, &(n, fired_ms)) in fired.iter().enumerate() {
            let next = fired[i + 1..].iter().find_map(|x| x.1);
            out.push(one(acc, step, n, fired_ms, next, next.or(step.end_ms())));
        }
    }
    out
}

/// The action record an event is about (not its `-restore` / `-reset` follow-up).
fn primary(step: &StepRecord, n: u32) -> Option<&ActionRecord> {
    let recs: Vec<&ActionRecord> = step.actions.iter().filter(|a| a.event == n).collect();
    recs.iter()
        .find(|a| !a.kind.ends_with("-restore") && !a.kind.ends_with("-reset"))
        .or(recs.first())
        .copied()
}

fn one(
    acc: &Acc,
    step: &StepRecord,
    n: u32,
    fired_ms: Option<i64>,
    next_fire: Option<i64>,
    end: Option<i64>,
) -> Event {
    let recs: Vec<&ActionRecord> = step.actions.iter().filter(|a| a.event == n).collect();
    let (kind, app) = primary(step, n).map_or((String::new(), String::new()), |a| {
        (a.kind.clone(), a.app.clone())
    });
    let mut problems: Vec<String> = Vec::new();
    let fired = fired_ms.unwrap_or(0);
    if fired_ms.is_none() {
        problems.push("its action time is not a readable timestamp".into());
    }
    for a in recs.iter().filter(|a| a.outcome != "ok") {
        problems.push(format!(
            "action {} was not performed (outcome {:?}: {})",
            a.kind, a.outcome, a.detail
        ));
    }
    let from_action = recs.iter().find_map(|a| a.perturbation_id.clone());
    let from_sampler = step.sampler_of(n).map(|r| r.run_id.clone());
    let pid = match (&from_action, &from_sampler) {
        (Some(a), Some(s)) if a != s => {
            problems.push(format!(
                "runs.json disagrees on its perturbation id: action {a}, sampler execution {s}"
            ));
            None
        }
        (Some(a), _) => Some(a.clone()),
        (None, s) => s.clone(),
    };
    let mut ev = Event {
        summary: EventSummary {
            step: step.name.clone(),
            event: n,
            kind: kind.clone(),
            perturbation_id: pid.clone(),
            fired_ms: fired,
            new_revision: None,
            transition_s: None,
            errors_in_window: 0,
            window_error_rate: None,
            worst_window_err_pct: None,
            burst: false,
            observed: false,
            problem: None,
        },
        app: app.clone(),
        old: Vec::new(),
        first_seen_ms: None,
        done_ms: None,
        window_end_ms: end,
        evidence: Value::Null,
    };
    let platform = makes_revision(&kind) || kind == "restart";
    if platform {
        match &pid {
            None if from_action.is_none() && from_sampler.is_none() => problems.push(
                "no per-event perturbation id in runs.json (a pack written before per-event ids): its sampler lines cannot be told apart from the other events'".into(),
            ),
            None => {}
            Some(p) => {
                if makes_revision(&kind) {
                    rollout(acc, p, &mut ev, &mut problems);
                } else {
                    restart(acc, p, next_fire, &mut ev, &mut problems);
                }
            }
        }
    } else if ev.evidence.is_null() {
        ev.evidence =
            json!({"checked": "action outcome only (no platform signature for this kind)"});
    }
    let (errors, basis) = errors_in(acc, step, fired, end);
    ev.summary.errors_in_window = errors;
    let (w_requests, w_errors, worst) = window_totals(acc, step, fired, end);
    ev.summary.window_error_rate = ErrorRate::new(w_errors, w_requests);
    ev.summary.worst_window_err_pct = worst;
    if let Value::Object(m) = &mut ev.evidence {
        m.insert("errors_basis".into(), json!(basis));
    }
    ev.summary.observed = problems.is_empty();
    ev.summary.problem = (!problems.is_empty()).then(|| problems.join("; "));
    ev
}

/// A sampler tick: (tick key, ts ms, lines).
type Snap<'a, T> = (i64, i64, Vec<&'a T>);

fn snaps<'a, T>(
    items: impl Iterator<Item = &'a T>,
    key: impl Fn(&T) -> (i64, i64),
) -> Vec<Snap<'a, T>>
where
    T: 'a,
{
    let mut by: BTreeMap<i64, (i64, Vec<&'a T>)> = BTreeMap::new();
    for it in items {
        let (k, ts) = key(it);
        let e = by.entry(k).or_insert((ts, Vec::new()));
        e.0 = e.0.min(ts);
        e.1.push(it);
    }
    let mut v: Vec<Snap<'a, T>> = by.into_iter().map(|(k, (ts, l))| (k, ts, l)).collect();
    v.sort_by_key(|x| x.1);
    v
}

fn rev_key(s: &RevisionStateSample) -> (i64, i64) {
    let ts = s.ts.epoch_ms();
    (s.tick.map_or(ts, |t| t as i64), ts)
}

fn rep_key(s: &ReplicaInventorySample) -> (i64, i64) {
    let ts = s.ts.epoch_ms();
    (s.tick.map_or(ts, |t| t as i64), ts)
}

fn with_traffic(ss: &[&RevisionStateSample]) -> BTreeSet<String> {
    ss.iter()
        .filter(|s| s.active && s.traffic_weight > 0)
        .map(|s| s.revision.clone())
        .collect()
}

fn manually_stopped<'a>(acc: &'a Acc, revision: &str, from: i64) -> Vec<&'a SystemEvent> {
    acc.system
        .iter()
        .filter(|e| {
            e.revision == revision
                && e.reason == "ContainerTerminated"
                && e.ts_ms >= from
                && termination_reason(&e.msg) == "ManuallyStopped"
        })
        .collect()
}

/// The replicas of `revisions` in the first inventory tick that are neither `ManuallyStopped`
/// nor gone from the last tick, and the first tick's replicas.
fn still_running(
    inv: &[Snap<'_, ReplicaInventorySample>],
    revisions: &BTreeSet<String>,
    stopped: &BTreeSet<String>,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let first: BTreeSet<String> = inv.first().map_or_else(BTreeSet::new, |t| {
        t.2.iter()
            .filter(|r| revisions.contains(&r.revision))
            .map(|r| r.replica.clone())
            .collect()
    });
    let last: BTreeSet<String> = inv.last().map_or_else(BTreeSet::new, |t| {
        t.2.iter().map(|r| r.replica.clone()).collect()
    });
    let left = first
        .iter()
        .filter(|r| !stopped.contains(*r) && (inv.len() < 2 || last.contains(*r)))
        .cloned()
        .collect();
    (first, left)
}

/// The event's `RevisionStateSample` ticks of `app` (its sampler's, by perturbation id), in
/// order; none is a problem named in `problems`.
fn event_revision_samples<'a>(
    acc: &'a Acc,
    pid: &str,
    app: &str,
    problems: &mut Vec<String>,
) -> Option<Vec<Snap<'a, RevisionStateSample>>> {
    let samples = snaps(
        acc.rev_samples
            .iter()
            .filter(|s| s.perturbation_id.as_deref() == Some(pid) && s.app == app),
        rev_key,
    );
    if samples.is_empty() {
        problems.push(format!("no RevisionStateSample of {app} carries {pid}"));
        return None;
    }
    Some(samples)
}

fn rollout(acc: &Acc, pid: &str, ev: &mut Event, problems: &mut Vec<String>) {
    let app = ev.app.clone();
    let Some(samples) = event_revision_samples(acc, pid, &app, problems) else {
        return;
    };
    let first = &samples[0];
    let start = first.1;
    let initial: BTreeSet<String> = first.2.iter().map(|s| s.revision.clone()).collect();
    let old = with_traffic(&first.2);
    ev.old = old.iter().cloned().collect();
    let new = samples.iter().find_map(|(_, ts, ss)| {
        ss.iter()
            .find(|s| !initial.contains(&s.revision))
            .map(|s| (s.revision.clone(), *ts))
    });
    let Some((new_rev, seen)) = new else {
        problems.push(format!(
            "no new revision of {app} in its {} sample tick(s) from {}",
            samples.len(),
            iso_ms(start)
        ));
        ev.evidence = json!({"sample_ticks": samples.len(), "first_sample": iso_ms(start)});
        return;
    };
    ev.summary.new_revision = Some(new_rev.clone());
    ev.first_seen_ms = Some(seen);
    let alone = samples.iter().find_map(|(_, ts, ss)| {
        let t = with_traffic(ss);
        (*ts >= seen && t.len() == 1 && t.contains(&new_rev)).then_some(*ts)
    });
    match alone {
        Some(a) => {
            ev.done_ms = Some(a);
            ev.summary.transition_s = Some((a - seen) as f64 / 1000.0);
        }
        None => problems.push(format!(
            "new revision {new_rev} never was the only active revision with traffic in the samples"
        )),
    }
    let started: Vec<&SystemEvent> = acc
        .system
        .iter()
        .filter(|e| e.revision == new_rev && e.reason == "ContainerStarted")
        .collect();
    if started.is_empty() {
        problems.push(format!(
            "no ContainerStarted row of the new revision {new_rev} in the system events"
        ));
    }
    let inv = event_inventory(acc, pid, &app);
    let mut old_ev = Vec::new();
    if old.is_empty() {
        problems.push(format!(
            "no revision of {app} was active with traffic in the first sample ({})",
            iso_ms(start)
        ));
    }
    for o in &old {
        old_ev.push(old_revision_stopped(acc, o, &inv, problems));
    }
    ev.evidence = json!({
        "sample_ticks": samples.len(), "first_sample": iso_ms(start),
        "new_revision_first_seen": iso_ms(seen), "alone_with_traffic": alone.map(iso_ms),
        "new_revision_container_started_rows": started.len(),
        "inventory_ticks": inv.len(), "old": old_ev,
    });
}

/// `until`: the next event's fire time (a later restart's replacements are not this one's).
fn restart(acc: &Acc, pid: &str, until: Option<i64>, ev: &mut Event, problems: &mut Vec<String>) {
    let app = ev.app.clone();
    let Some(samples) = event_revision_samples(acc, pid, &app, problems) else {
        return;
    };
    let first = &samples[0];
    let start = first.1;
    let revs = with_traffic(&first.2);
    ev.old = revs.iter().cloned().collect();
    if revs.is_empty() {
        problems.push(format!(
            "no revision of {app} was active with traffic in the first sample ({})",
            iso_ms(start)
        ));
        return;
    }
    let inv = event_inventory(acc, pid, &app);
    if inv.is_empty() {
        problems.push(format!(
            "no ReplicaInventorySample of {app} carries {pid}: replacement replicas cannot be told from the old ones"
        ));
        return;
    }
    let inv_start = inv[0].1;
    let since = start.min(inv_start);
    let started = replacement_starts(acc, &revs, &inv[0].2, since, until);
    if started.is_empty() {
        problems.push(format!(
            "no ContainerStarted row of a replacement replica of {} after {}",
            ev.old.join(", "),
            iso_ms(since)
        ));
    }
    let mut stopped = BTreeSet::new();
    let mut stopped_rows = 0;
    for r in &revs {
        let rows = manually_stopped(acc, r, since);
        stopped_rows += rows.len();
        stopped.extend(rows.iter().map(|e| e.replica.clone()));
    }
    let (first_reps, left) = still_running(&inv, &revs, &stopped);
    if first_reps.is_empty() {
        problems.push(format!(
            "no replica of {} in the event's first inventory tick ({})",
            ev.old.join(", "),
            iso_ms(inv_start)
        ));
    }
    if !left.is_empty() {
        problems.push(format!(
            "old replica(s) {} still listed at the event's last inventory tick ({}) and no ManuallyStopped row for them",
            left.iter().cloned().collect::<Vec<_>>().join(", "),
            inv.last().map_or(String::new(), |t| iso_ms(t.1))
        ));
    }
    let (seen, done) = replica_turnover(&inv, &revs, &first_reps);
    ev.first_seen_ms = seen;
    ev.done_ms = done;
    ev.summary.transition_s = match (seen, done) {
        (Some(a), Some(b)) => Some((b - a) as f64 / 1000.0),
        _ => None,
    };
    ev.evidence = json!({
        "sample_ticks": samples.len(), "inventory_ticks": inv.len(),
        "first_sample": iso_ms(start), "revision": ev.old,
        "replicas_first_tick": first_reps, "replacement_container_started_rows": started.len(),
        "replacements": started.iter().map(|e| e.replica.clone()).collect::<BTreeSet<_>>(),
        "manually_stopped_rows": stopped_rows, "replicas_left": left,
        "first_replacement_listed": seen.map(iso_ms), "no_old_replica_listed": done.map(iso_ms),
    });
}

/// The event's `ReplicaInventorySample` ticks of `app` (its sampler's, by perturbation id).
fn event_inventory<'a>(
    acc: &'a Acc,
    pid: &str,
    app: &str,
) -> Vec<Snap<'a, ReplicaInventorySample>> {
    snaps(
        acc.replica_samples
            .iter()
            .filter(|s| s.perturbation_id.as_deref() == Some(pid) && s.app == app),
        rep_key,
    )
}

/// Whether the old revision `o` of a rollout stopped: a system row shows it, and each of its
/// replicas in the first inventory tick has a `ManuallyStopped` row or is gone from the last
/// tick. What is missing goes to `problems`; returns the evidence.
fn old_revision_stopped(
    acc: &Acc,
    o: &str,
    inv: &[Snap<'_, ReplicaInventorySample>],
    problems: &mut Vec<String>,
) -> Value {
    let stopped_rows = manually_stopped(acc, o, i64::MIN);
    let deactivating = acc
        .system
        .iter()
        .filter(|e| e.revision == o && e.reason == "RevisionDeactivating")
        .count();
    if stopped_rows.is_empty() && deactivating == 0 {
        problems.push(format!(
            "no system row shows the old revision {o} stopping (ContainerTerminated reason 'ManuallyStopped' or RevisionDeactivating)"
        ));
    }
    let stopped: BTreeSet<String> = stopped_rows.iter().map(|e| e.replica.clone()).collect();
    let one: BTreeSet<String> = std::iter::once(o.to_owned()).collect();
    let (first_reps, left) = still_running(inv, &one, &stopped);
    if first_reps.is_empty() && stopped.is_empty() {
        problems.push(format!(
            "no replica of the old revision {o} in the event's first inventory tick and no ManuallyStopped row: its replicas cannot be shown to have stopped"
        ));
    }
    if !left.is_empty() {
        problems.push(format!(
            "old replica(s) {} of {o} still listed at the event's last inventory tick{} and no ManuallyStopped row for them",
            left.iter().cloned().collect::<Vec<_>>().join(", "),
            inv.last().map(|t| format!(" ({})", iso_ms(t.1))).unwrap_or_default()
        ));
    }
    json!({"revision": o, "manually_stopped_rows": stopped_rows.len(),
           "revision_deactivating_rows": deactivating,
           "replicas_first_tick": first_reps, "replicas_left": left})
}

/// The `ContainerStarted` rows of `revs` in `[since, until)` for a replica that is new: neither
/// in the event's first inventory tick nor named by any system row before `since`.
fn replacement_starts<'a>(
    acc: &'a Acc,
    revs: &BTreeSet<String>,
    first_tick: &[&ReplicaInventorySample],
    since: i64,
    until: Option<i64>,
) -> Vec<&'a SystemEvent> {
    let mut known: BTreeSet<String> = first_tick.iter().map(|r| r.replica.clone()).collect();
    known.extend(
        acc.system
            .iter()
            .filter(|e| e.ts_ms < since && !e.replica.is_empty())
            .map(|e| e.replica.clone()),
    );
    acc.system
        .iter()
        .filter(|e| {
            revs.contains(&e.revision)
                && e.reason == "ContainerStarted"
                && e.ts_ms >= since
                && until.is_none_or(|u| e.ts_ms < u)
                && !known.contains(&e.replica)
        })
        .collect()
}

/// A restart's replica turnover: the first tick with a replacement replica of `revs` (one not
/// in `first_reps`), and the first tick from then on with no replica of `first_reps` left.
fn replica_turnover(
    inv: &[Snap<'_, ReplicaInventorySample>],
    revs: &BTreeSet<String>,
    first_reps: &BTreeSet<String>,
) -> (Option<i64>, Option<i64>) {
    let is_rev = |r: &&&ReplicaInventorySample| revs.contains(&r.revision);
    let seen = inv.iter().find_map(|(_, ts, rs)| {
        rs.iter()
            .filter(is_rev)
            .any(|r| !first_reps.contains(&r.replica))
            .then_some(*ts)
    });
    let done = seen.and_then(|s| {
        inv.iter().find_map(|(_, ts, rs)| {
            let mine: Vec<&&ReplicaInventorySample> = rs.iter().filter(is_rev).collect();
            (*ts >= s && !mine.is_empty() && mine.iter().all(|r| !first_reps.contains(&r.replica)))
                .then_some(*ts)
        })
    });
    (seen, done)
}

/// Client-visible errors of the step's load runs in `[from, to)`, and how they were counted.
fn errors_in(acc: &Acc, step: &StepRecord, from: i64, to: Option<i64>) -> (u64, &'static str) {
    let ids = load_runs(step);
    let inside = |ms: i64| ms >= from && to.is_none_or(|t| ms < t);
    let mut n = 0;
    let mut basis = "failed req lines";
    for run in acc.runs.iter().filter(|r| ids.contains(r.run_id.as_str())) {
        if !run.reqs.is_empty() && acc.stats.failed_overflow == 0 {
            n += acc
                .failed
                .iter()
                .filter(|f| f.run_id == run.run_id && f.scenario == run.scenario && inside(f.ts_ms))
                .count() as u64;
        } else {
            basis = "bucket windows starting in the window";
            let a = window_start_ms(from, acc.window_ms);
            n += run
                .buckets
                .iter()
                .filter(|(k, _)| **k >= a && to.is_none_or(|t| **k < t))
                .map(|(_, w)| w.err)
                .sum::<u64>();
        }
    }
    (n, basis)
}

/// The run ids of a step's loads (not its sampler's).
fn load_runs(step: &StepRecord) -> BTreeSet<&str> {
    step.runs
        .iter()
        .filter(|r| r.load != "sampler")
        .map(|r| r.run_id.as_str())
        .collect()
}

/// A run's windows (start, requests, errors) from the one holding `from` to those starting
/// before `to`, from its complete source as Q2 takes it ([`RunData::windows_from_reqs`]).
fn windows_of(acc: &Acc, run: &RunData, from: i64, to: Option<i64>) -> Vec<(i64, u64, u64)> {
    let a = window_start_ms(from, acc.window_ms);
    let inside = |k: i64| k >= a && to.is_none_or(|t| k < t);
    if run.windows_from_reqs() {
        run.reqs
            .iter()
            .filter(|(k, _)| inside(**k))
            .map(|(k, w)| (*k, w.count, w.err))
            .collect()
    } else {
        run.buckets
            .iter()
            .filter(|(k, _)| inside(**k))
            .map(|(k, w)| (*k, w.count, w.err))
            .collect()
    }
}

/// The step's load runs over [`windows_of`] the event's window, summed per window: (requests,
/// errors, the worst window's err_pct).
fn window_totals(
    acc: &Acc,
    step: &StepRecord,
    from: i64,
    to: Option<i64>,
) -> (u64, u64, Option<f64>) {
    let ids = load_runs(step);
    let mut by: BTreeMap<i64, (u64, u64)> = BTreeMap::new();
    for run in acc.runs.iter().filter(|r| ids.contains(r.run_id.as_str())) {
        for (k, count, err) in windows_of(acc, run, from, to) {
            let e = by.entry(k).or_default();
            e.0 += count;
            e.1 += err;
        }
    }
    let (n, e) = by.values().fold((0, 0), |(n, e), w| (n + w.0, e + w.1));
    let worst = by
        .values()
        .filter(|w| w.0 > 0)
        .map(|w| logline::line::err_pct(w.1, w.0))
        .reduce(f64::max);
    (n, e, worst)
}
