//! Event checks: `system_event_at_least`, `restart_count_at_least` / `_at_most`,
//! `probe_failed`, `probe_failed_first` over the system rows of `app` in scope, and
//! `action_failed` over the step's recorded actions. [Observed]

use lab::Check;
use serde_json::{Value, json};

use super::{Eval, invalid, judged, scope, step, with};
use crate::judge::verdict::Status;
use crate::read::model::{Acc, SystemEvent};
use crate::read::runs::{RunsRecord, StepRecord};
use crate::read::wording::{Termination, probe_type, terminations};
use crate::ts::iso_ms;

/// Where an event check looks: the system events of `app` from `from` to `to` (open when
/// `None`); `what` names the scope in the detail.
struct EventScope<'a> {
    app: &'a String,
    from: i64,
    to: Option<i64>,
    what: String,
}

impl EventScope<'_> {
    /// Whether `e` is one of the events the check looks at.
    fn contains(&self, e: &SystemEvent) -> bool {
        &e.app == self.app && e.ts_ms >= self.from && self.to.is_none_or(|t| e.ts_ms <= t)
    }

    /// The scope's numbers (`app`, `from`, `to`) with the keys of `extra` added.
    fn numbers(&self, extra: Value) -> Value {
        let span = json!({"app": self.app, "from": iso_ms(self.from), "to": self.to.map(iso_ms)});
        with(span, extra)
    }
}

/// The Q7 references of system events.
fn refs(evs: &[&SystemEvent]) -> Vec<String> {
    evs.iter()
        .map(|e| {
            format!(
                "q7-system-events:{} {} {}",
                iso_ms(e.ts_ms),
                e.reason,
                e.replica
            )
        })
        .collect()
}

/// An event check (`restart_count_at_least`/`_at_most`, `probe_failed`, `probe_failed_first`)
/// over the system events of `app` in its scope.
pub(super) fn event_check(c: &Check, runs: &RunsRecord, acc: &Acc) -> Eval {
    let Some(app) = &c.app else {
        return invalid(format!("check kind {} needs `app`", c.kind));
    };
    let (from, to, what) = match scope(c, runs) {
        Ok(x) => x,
        Err(e) => return e,
    };
    if acc.system.is_empty() {
        return invalid("no system events (ContainerAppSystemLogs_CL) in the inputs");
    }
    let sc = EventScope {
        app,
        from,
        to,
        what,
    };
    match c.kind.as_str() {
        "restart_count_at_least" | "restart_count_at_most" => restart_count(c, acc, &sc),
        "system_event_at_least" => system_event_at_least(c, acc, &sc),
        _ => {
            let Some(probe) = &c.probe else {
                return invalid(format!("check kind {} needs `probe`", c.kind));
            };
            let evs: Vec<&SystemEvent> = acc
                .system
                .iter()
                .filter(|e| sc.contains(e))
                .filter(|e| e.reason == "ProbeFailed")
                .collect();
            if c.kind == "probe_failed" {
                probe_failed(c, probe, &evs, &sc)
            } else {
                probe_failed_first(c, probe, &evs, &sc)
            }
        }
    }
}

/// `system_event_at_least`: rows of `app` in scope with `reason` (and `contains` in the
/// message) number at least `min` (1).
fn system_event_at_least(c: &Check, acc: &Acc, sc: &EventScope) -> Eval {
    let Some(reason) = &c.reason else {
        return invalid("system_event_at_least needs `reason`");
    };
    let evs: Vec<&SystemEvent> = acc
        .system
        .iter()
        .filter(|e| sc.contains(e) && &e.reason == reason)
        .filter(|e| {
            c.contains
                .as_ref()
                .is_none_or(|t| e.msg.contains(t.as_str()))
        })
        .collect();
    let min = c.min.unwrap_or(1.0);
    let n = evs.len();
    let with_text = c
        .contains
        .as_ref()
        .map_or(String::new(), |t| format!(" containing {t:?}"));
    judged(
        n as f64 >= min,
        format!(
            "{n} {reason} event(s){with_text} of {} (need >= {min}) in {}{}",
            sc.app,
            sc.what,
            evs.first()
                .map_or(String::new(), |e| format!("; first: {}", e.msg))
        ),
        sc.numbers(json!({"reason": reason, "contains": c.contains, "count": n, "min": min})),
        refs(&evs),
    )
}

/// `restart_count_at_least` / `_at_most`: the `ContainerTerminated` rows in scope that are
/// restarts ([`terminations`]); not evaluated when a row's wording is unknown.
fn restart_count(c: &Check, acc: &Acc, sc: &EventScope) -> Eval {
    let (app, what) = (sc.app, &sc.what);
    let kinds = terminations(&acc.system);
    let mut evs: Vec<&SystemEvent> = Vec::new();
    let mut not_counted: std::collections::BTreeMap<String, u64> = Default::default();
    let mut unknown: Vec<&SystemEvent> = Vec::new();
    let mut by_reason: std::collections::BTreeMap<String, u64> = Default::default();
    for (i, t) in &kinds {
        let e = &acc.system[*i];
        if !sc.contains(e) {
            continue;
        }
        match t {
            Termination::Restart(r) => {
                evs.push(e);
                *by_reason.entry(r.clone()).or_insert(0) += 1;
            }
            Termination::Unknown => unknown.push(e),
            other => *not_counted.entry(other.label()).or_insert(0) += 1,
        }
    }
    if !unknown.is_empty() {
        return Eval {
            status: Status::NotEvaluated,
            detail: format!(
                "{} ContainerTerminated row(s) of {app} in {what} have a wording that tells neither a reason nor an exit code (first: {:?}): restarts cannot be counted",
                unknown.len(),
                unknown[0].msg
            ),
            numbers: sc.numbers(json!({"unknown": unknown.len()})),
            rows: refs(&unknown),
        };
    }
    let n = evs.len() as f64;
    let (ok, need) = if c.kind == "restart_count_at_least" {
        let min = c.min.unwrap_or(1.0);
        (n >= min, format!(">= {min}"))
    } else {
        let max = c.max.unwrap_or(0.0);
        (n <= max, format!("<= {max}"))
    };
    let skipped: Vec<String> = not_counted
        .iter()
        .map(|(k, v)| format!("{k} ×{v}"))
        .collect();
    judged(
        ok,
        format!(
            "{} restart(s) of {app} (need {need}) in {what}: ContainerTerminated rows with reason 'ProbeFailure' or a non-zero exit code{}{}",
            evs.len(),
            if by_reason.is_empty() {
                String::new()
            } else {
                format!(
                    " ({})",
                    by_reason
                        .iter()
                        .map(|(k, v)| format!("{k} ×{v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
            if skipped.is_empty() {
                String::new()
            } else {
                format!(
                    "; not counted: {} (ManuallyStopped = a retired or scaled-in replica, exit 0 = a clean stop, 'after probe kill' = the exit-code row that follows a ProbeFailure of the same replica)",
                    skipped.join(", ")
                )
            }
        ),
        sc.numbers(json!({"restarts": evs.len(), "min": c.min, "max": c.max,
                          "basis": "ContainerTerminated reason ProbeFailure or non-zero exit code",
                          "by_reason": by_reason, "not_counted": not_counted})),
        refs(&evs),
    )
}

/// `probe_failed`: the `ProbeFailed` events in scope (`evs`) of type `probe`, at least `min`.
fn probe_failed(c: &Check, probe: &str, evs: &[&SystemEvent], sc: &EventScope) -> Eval {
    let (app, what) = (sc.app, &sc.what);
    let want = probe.to_lowercase();
    let hits: Vec<&SystemEvent> = evs
        .iter()
        .copied()
        .filter(|e| probe_type(&e.msg) == want)
        .collect();
    let min = c.min.unwrap_or(1.0);
    judged(
        hits.len() as f64 >= min,
        format!(
            "{} ProbeFailed event(s) of type {probe} for {app} (need >= {min}; {} of any type) in {what}",
            hits.len(),
            evs.len()
        ),
        sc.numbers(
            json!({"probe": probe, "matching": hits.len(), "any_type": evs.len(),
                   "min": min}),
        ),
        refs(&hits),
    )
}

/// `probe_failed_first`: of the probe types in `evs`, the first to reach `min` failures is
/// `probe`.
fn probe_failed_first(c: &Check, probe: &str, evs: &[&SystemEvent], sc: &EventScope) -> Eval {
    let (app, what) = (sc.app, &sc.what);
    let want = probe.to_lowercase();
    // The first type to reach `min` failures (1: the first failure of any type).
    let n = c.min.unwrap_or(1.0).max(1.0).ceil() as usize;
    let mut by_type: std::collections::BTreeMap<String, Vec<&SystemEvent>> = Default::default();
    for e in evs {
        by_type.entry(probe_type(&e.msg)).or_default().push(e);
    }
    for v in by_type.values_mut() {
        v.sort_by_key(|e| e.ts_ms);
    }
    let first = by_type
        .iter()
        .filter_map(|(t, v)| v.get(n - 1).map(|e| (t.clone(), *e)))
        .min_by_key(|(_, e)| e.ts_ms);
    let counts: serde_json::Map<String, Value> = by_type
        .iter()
        .map(|(t, v)| (t.clone(), json!(v.len())))
        .collect();
    let ty = first.as_ref().map(|(t, _)| t.clone());
    let nth = if n == 1 {
        "first ProbeFailed".to_owned()
    } else {
        format!("first probe type to fail {n} times")
    };
    judged(
        ty.as_deref() == Some(want.as_str()),
        match &first {
            Some((t, e)) => format!(
                "the {nth} for {app} in {what} is {t}, at {} (expected {probe}; failures by type: {})",
                iso_ms(e.ts_ms),
                Value::Object(counts.clone())
            ),
            None => format!(
                "no probe of {app} failed {n} time(s) in {what} ({} ProbeFailed event(s))",
                evs.len()
            ),
        },
        sc.numbers(
            json!({"probe": probe, "first_type": ty, "any_type": evs.len(),
                   "min": n, "by_type": counts}),
        ),
        first.map(|(_, e)| refs(&[e])).unwrap_or_default(),
    )
}

pub(super) fn action_check(c: &Check, runs: &RunsRecord) -> Eval {
    let Some(app) = &c.app else {
        return invalid("action_failed needs `app`");
    };
    let st = match step(c, runs) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let steps: Vec<&StepRecord> = match st {
        Some(s) => vec![s],
        None => runs.steps.iter().collect(),
    };
    let acts: Vec<(&StepRecord, usize)> = steps
        .iter()
        .flat_map(|s| {
            s.actions
                .iter()
                .enumerate()
                .filter(|(_, a)| &a.app == app)
                .map(move |(i, _)| (*s, i))
        })
        .collect();
    if acts.is_empty() {
        return invalid(format!("no recorded action for {app} in runs.json"));
    }
    let failed: Vec<&(&StepRecord, usize)> = acts
        .iter()
        .filter(|(s, i)| s.actions[*i].outcome == "failed")
        .collect();
    let list: Vec<String> = acts
        .iter()
        .map(|(s, i)| {
            let a = &s.actions[*i];
            format!(
                "{} #{} {} {}: {}",
                s.name, a.event, a.kind, a.outcome, a.detail
            )
        })
        .collect();
    judged(
        !failed.is_empty(),
        format!(
            "{} of {} recorded action(s) for {app} failed ({})",
            failed.len(),
            acts.len(),
            list.join("; ")
        ),
        json!({"app": app, "actions": acts.len(), "failed": failed.len()}),
        failed
            .iter()
            .map(|(s, i)| format!("runs.json:{}#{}", s.name, s.actions[*i].event))
            .collect(),
    )
}
