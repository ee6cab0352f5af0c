//! An observation lab's `[[checks]]`, each evaluated into a gate (kind `check`).
//!
//! Each check is `pass` (the expected observation happened), `fail` (it did not: the lab's
//! hypothesis about the platform is contradicted) or `not_evaluated` (missing data: no or an
//! unreadable `runs.json`, an unknown step, no run of the load in the step, no loadgen lines for
//! that run, no system events at all). The verdict ([`crate::verdict::decide_observation`]) is
//! `invalid` when any check could not be evaluated, else `falsified` when any failed, else `held`.
//!
//! Scope: a check with `step` looks at that step of `runs.json`; without one, at the whole run.
//! - Load checks (`load`, `scenario` default `main`) read the windows of the step's run_ids of
//!   that load (every step's, without `step`): `bucket` lines, or `req` lines when the run has
//!   none. [Measured].
//! - Event checks (`app`) read `ContainerAppSystemLogs_CL` rows of `app` between the step's
//!   `start` and `end` (the run's `started`/`ended` without `step`; an open end is unbounded).
//!   With `within`, the span is `[t, t + within]` where `t` is the step's first recorded action,
//!   else its start. [Observed].
//!
//! Kinds:
//! - `status_seen`: responses with HTTP `status` (from the windows' status maps) ≥ `min` (1).
//! - `no_errors`: err = 0 over the selected windows, which must hold at least one request.
//! - `errors_at_least`: err ≥ `min` (1).
//! - `restart_count_at_least` / `restart_count_at_most`: restarts of `app` in scope ≥ `min` (1)
//!   / ≤ `max` (0). A restart is a `ContainerTerminated` row with reason `ProbeFailure` or a
//!   non-zero exit code ([`crate::wording::terminations`]); `ManuallyStopped` (a retired or
//!   scaled-in replica: Azure writes one for every old replica of a rollout), exit code 0, and the
//!   `exit code '137'` row Azure writes right after a probe kill of the same replica (no
//!   `ContainerStarted` between) are not counted; a row whose wording tells neither a reason nor
//!   an exit code makes the check not evaluated. Replica inventory `restart_count` samples are
//!   not used.
//! - `probe_failed`: `ProbeFailed` events of `app` whose message names `probe`
//!   (`Probe of Liveness failed ...`, case-insensitive) ≥ `min` (1).
//! - `probe_failed_first`: of the probe types of `app`, the first to reach `min` (1)
//!   `ProbeFailed` events in scope is `probe` (fails when none reaches it). With `min` set to the
//!   probes' failure threshold this reads "`probe` reached its threshold first" (the replica was
//!   taken out of routing before liveness killed it), which does not depend on which probe's
//!   period happened to tick first after the trouble began.
//! - `recovers`: the selected windows have errors, and the last window with requests has none
//!   (the app served again without intervention).
//! - `action_failed`: a recorded action of the step for `app` has `outcome = "failed"`.
//! - `slowest_between`: the slowest response of the windows (a bucket's `max_ms`, or the
//!   slowest `req` line) is within `[min, max]` ms (a cold start's held request: at least the
//!   startup delay, at most a bound).
//! - `system_event_at_least`: rows of `app` with `reason` (and `contains` in the message) ≥
//!   `min` (1), e.g. the scale decisions `KEDAScaleTargetActivated`, `SuccessfulRescale`.
//! - `revision_state_seen`: the perturbation sampler's samples of `app`'s revisions in scope
//!   ([`revision_states`]).
//! - `error_rate_between`: every window holding at least `min_requests` (100) requests has an
//!   error rate within `[min_pct, max_pct]`; windows with fewer are listed, not judged; not
//!   evaluated when no window is judged.
//! - `served_share_between`: the share of the responses (the windows' `served_by`, every
//!   response, `unknown` included) served by `<app>--<revision>` is within `[min_pct,
//!   max_pct]`; not evaluated without a response.
//! - `errors_served_by`: every failed request was answered by revision `<app>--<revision>`
//!   (the `req` lines' `X-Revision`). The `req` lines must hold every error the windows count:
//!   when they hold fewer (no `req` lines, lost lines) the errors cannot all be attributed and
//!   the check is not evaluated. No error at all passes (nothing was served by another
//!   revision), and says so.
//! - `clients_moved`: the load's virtual clients that moved to another replica, within `[min,
//!   max]` ([`clients_moved`]).

mod clients_moved;
mod revision_states;

use labkit::config::parse_duration;
use serde_json::{Value, json};

use crate::evidence::Level;
use crate::lab::{CheckSpec, LabFile};
use crate::model::{Acc, SystemEvent};
use crate::rule::BucketRow;
use crate::runs::{RunsRecord, StepRecord};
use crate::ts::iso_ms;
use crate::verdict::{Gate, Status};
use crate::wording::{Termination, probe_type, terminations};

/// Every kind this module evaluates (defined, with its parameters, in `lab::checks`).
pub use lab::checks::KINDS;

/// One evaluated check: its gate and the evidence level of what it rests on.
#[derive(Clone, Debug)]
pub struct CheckResult {
    pub gate: Gate,
    pub level: Level,
}

/// What the checks read besides the accumulator.
pub struct Inputs<'a> {
    pub acc: &'a Acc,
    /// `runs.json`, or why it could not be read.
    pub runs: Result<&'a RunsRecord, &'a crate::NoRuns>,
    pub q2: &'a [BucketRow],
    pub q2_name: &'a str,
}

/// Evaluates every `[[checks]]` entry of the lab, in order.
pub fn evaluate(lab: &LabFile, inp: &Inputs) -> Vec<CheckResult> {
    lab.checks.iter().map(|c| one(c, inp)).collect()
}

struct Eval {
    status: Status,
    detail: String,
    numbers: Value,
    rows: Vec<String>,
}

fn invalid(why: impl Into<String>) -> Eval {
    Eval {
        status: Status::NotEvaluated,
        detail: why.into(),
        numbers: Value::Null,
        rows: Vec::new(),
    }
}

fn judged(ok: bool, detail: String, numbers: Value, rows: Vec<String>) -> Eval {
    Eval {
        status: if ok { Status::Pass } else { Status::Fail },
        detail,
        numbers,
        rows,
    }
}

fn one(c: &CheckSpec, inp: &Inputs) -> CheckResult {
    use lab::CheckKind as K;
    let level = match c.kind {
        K::StatusSeen
        | K::NoErrors
        | K::ErrorsAtLeast
        | K::Recovers
        | K::SlowestBetween
        | K::ErrorRateBetween
        | K::ErrorsServedBy
        | K::ServedShareBetween
        | K::ClientsMoved => Level::Measured,
        _ => Level::Observed,
    };
    let e = match inp.runs {
        Err(why) => invalid(format!("runs.json: {why}")),
        Ok(runs) => match &c.kind {
            K::StatusSeen
            | K::NoErrors
            | K::ErrorsAtLeast
            | K::Recovers
            | K::SlowestBetween
            | K::ErrorRateBetween
            | K::ErrorsServedBy
            | K::ServedShareBetween => load_check(c, runs, inp),
            K::SystemEventAtLeast => event_check(c, runs, inp.acc),
            K::RevisionStateSeen => revision_states::revision_state_seen(c, runs, inp.acc),
            K::ClientsMoved => clients_moved::clients_moved(c, runs, inp.acc),
            K::RestartCountAtLeast
            | K::RestartCountAtMost
            | K::ProbeFailed
            | K::ProbeFailedFirst => event_check(c, runs, inp.acc),
            K::ActionFailed => action_check(c, runs),
            K::Unknown(k) => invalid(format!(
                "unknown check kind {k:?} (known: {})",
                KINDS.join(", ")
            )),
        },
    };
    CheckResult {
        gate: Gate {
            name: format!("check:{}", c.name),
            kind: "check",
            required: true,
            status: e.status,
            detail: e.detail,
            numbers: e.numbers,
            rows: e.rows,
        },
        level,
    }
}

fn step<'a>(c: &CheckSpec, runs: &'a RunsRecord) -> Result<Option<&'a StepRecord>, Eval> {
    match &c.step {
        None => Ok(None),
        Some(name) => runs
            .step(name)
            .map(Some)
            .ok_or_else(|| invalid(format!("step {name:?} is not in runs.json"))),
    }
}

/// One aligned window of the selected lines.
struct Win {
    run_id: String,
    start_ms: i64,
    count: u64,
    err: u64,
    status: u64,
    /// The slowest response of the window (ms), when its source tells it.
    max_ms: Option<f64>,
    /// Responses by the revision that served them.
    served_by: std::collections::BTreeMap<String, u64>,
}

/// The windows a load check judges (the step's runs of its load, one scenario), with the totals
/// and the names its detail uses.
struct LoadSel<'a> {
    load: &'a String,
    scenario: &'a str,
    /// `the run` or `step "name"`.
    where_: String,
    /// The run ids that have lines of the scenario.
    present: Vec<&'a str>,
    /// In time order (then run id).
    wins: Vec<Win>,
    requests: u64,
    errors: u64,
}

impl LoadSel<'_> {
    /// The Q2 row of window `w` (`<q2_name>#<index>`), when Q2 has it.
    fn row_of(&self, inp: &Inputs, w: &Win) -> Option<String> {
        inp.q2
            .iter()
            .position(|r| {
                r.run_id == w.run_id && r.scenario == self.scenario && r.start_ms == w.start_ms
            })
            .map(|i| format!("{}#{i}", inp.q2_name))
    }

    /// The Q2 rows of the windows for which `f` holds.
    fn rows_where(&self, inp: &Inputs, f: &dyn Fn(&Win) -> bool) -> Vec<String> {
        self.wins
            .iter()
            .filter(|w| f(w))
            .filter_map(|w| self.row_of(inp, w))
            .collect()
    }

    /// The numbers every load check reports.
    fn base(&self) -> Value {
        json!({"load": self.load, "scenario": self.scenario, "run_ids": self.present,
               "windows": self.wins.len(), "requests": self.requests, "errors": self.errors})
    }
}

/// `v` with the keys of `extra` added (both JSON objects).
fn with(mut v: Value, extra: Value) -> Value {
    if let (Some(m), Some(x)) = (v.as_object_mut(), extra.as_object()) {
        for (k, val) in x {
            m.insert(k.clone(), val.clone());
        }
    }
    v
}

/// Selects the windows of a load check: its step's (or every step's) runs of `load`, read from
/// the `req` lines when the run's windows come from them, else from its buckets.
fn load_windows<'a>(
    c: &'a CheckSpec,
    runs: &'a RunsRecord,
    inp: &Inputs,
) -> Result<LoadSel<'a>, Eval> {
    let Some(load) = &c.load else {
        return Err(invalid(format!("check kind {} needs `load`", c.kind)));
    };
    let scenario = c.scenario.as_deref().unwrap_or("main");
    let steps: Vec<&StepRecord> = match step(c, runs)? {
        Some(s) => vec![s],
        None => runs.steps.iter().collect(),
    };
    let run_ids: Vec<&str> = steps
        .iter()
        .copied()
        .flat_map(|s| s.runs.iter())
        .filter(|r| &r.load == load)
        .map(|r| r.run_id.as_str())
        .collect();
    let where_ = c
        .step
        .as_ref()
        .map_or("the run".to_owned(), |s| format!("step {s:?}"));
    if run_ids.is_empty() {
        return Err(invalid(format!(
            "no run of load {load:?} in {where_} of runs.json"
        )));
    }
    let code = c.status.map(|s| s.to_string());
    let mut wins: Vec<Win> = Vec::new();
    let mut present = Vec::new();
    for id in &run_ids {
        let Some(r) = inp
            .acc
            .runs
            .iter()
            .find(|r| r.run_id == *id && r.scenario == scenario)
        else {
            continue;
        };
        present.push(*id);
        let st = |m: &std::collections::BTreeMap<String, u64>| {
            code.as_ref().and_then(|k| m.get(k)).copied().unwrap_or(0)
        };
        if r.windows_from_reqs() {
            for (k, w) in &r.reqs {
                wins.push(Win {
                    run_id: id.to_string(),
                    start_ms: *k,
                    count: w.count,
                    err: w.err,
                    status: st(&w.status),
                    max_ms: (w.count > 0).then(|| w.hist.max() as f64 / 1000.0),
                    served_by: w.served_by.clone(),
                });
            }
        } else {
            for (k, w) in &r.buckets {
                wins.push(Win {
                    run_id: id.to_string(),
                    start_ms: *k,
                    count: w.count,
                    err: w.err,
                    status: st(&w.status),
                    max_ms: w.max_ms,
                    served_by: w.served_by.clone(),
                });
            }
        }
    }
    if present.is_empty() {
        return Err(invalid(format!(
            "no loadgen lines of scenario {scenario:?} for run(s) {} (load {load:?}, {where_})",
            run_ids.join(", ")
        )));
    }
    wins.sort_by(|a, b| (a.start_ms, &a.run_id).cmp(&(b.start_ms, &b.run_id)));
    let requests: u64 = wins.iter().map(|w| w.count).sum();
    let errors: u64 = wins.iter().map(|w| w.err).sum();
    Ok(LoadSel {
        load,
        scenario,
        where_,
        present,
        wins,
        requests,
        errors,
    })
}

/// A load check (`status_seen`, `no_errors`, `errors_at_least`, `recovers`) over its windows.
fn load_check(c: &CheckSpec, runs: &RunsRecord, inp: &Inputs) -> Eval {
    let sel = match load_windows(c, runs, inp) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let (load, scenario, where_) = (sel.load, sel.scenario, &sel.where_);
    let (requests, errors) = (sel.requests, sel.errors);
    match c.kind.as_str() {
        "status_seen" => {
            let Some(status) = c.status else {
                return invalid("status_seen needs `status`");
            };
            let min = c.min.unwrap_or(1.0);
            let seen: u64 = sel.wins.iter().map(|w| w.status).sum();
            judged(
                seen as f64 >= min,
                format!(
                    "{seen} response(s) with status {status} (need >= {min}) in {requests} requests of {load}/{scenario}, {where_}"
                ),
                with(
                    sel.base(),
                    json!({"status": status, "seen": seen, "min": min}),
                ),
                sel.rows_where(inp, &|w| w.status > 0),
            )
        }
        "no_errors" => {
            if requests == 0 {
                return invalid(format!(
                    "no requests of {load}/{scenario} in {where_}: nothing to judge"
                ));
            }
            judged(
                errors == 0,
                format!("{errors} error(s) in {requests} requests of {load}/{scenario}, {where_}"),
                sel.base(),
                sel.rows_where(inp, &|w| w.err > 0),
            )
        }
        "errors_at_least" => {
            let min = c.min.unwrap_or(1.0);
            judged(
                errors as f64 >= min,
                format!(
                    "{errors} error(s) (need >= {min}) in {requests} requests of {load}/{scenario}, {where_}"
                ),
                with(sel.base(), json!({"min": min})),
                sel.rows_where(inp, &|w| w.err > 0),
            )
        }
        "slowest_between" => slowest_between(c, &sel, inp),
        "error_rate_between" => error_rate_between(c, &sel, inp),
        "errors_served_by" => errors_served_by(c, &sel, inp),
        "served_share_between" => served_share_between(c, &sel, inp),
        _ => recovers(&sel, inp),
    }
}

/// `slowest_between`: the slowest response of the windows (their largest `max_ms`: a bucket's
/// max, or the slowest `req` line) is within `[min, max]` ms. Not evaluated without requests or
/// when no window tells its slowest response.
fn slowest_between(c: &CheckSpec, sel: &LoadSel, inp: &Inputs) -> Eval {
    let (load, scenario, where_) = (sel.load, sel.scenario, &sel.where_);
    let (Some(lo), Some(hi)) = (c.min, c.max) else {
        return invalid("slowest_between needs `min` and `max` (ms)");
    };
    if sel.requests == 0 {
        return invalid(format!(
            "no requests of {load}/{scenario} in {where_}: nothing to judge"
        ));
    }
    let slowest = sel
        .wins
        .iter()
        .filter_map(|w| w.max_ms.map(|m| (m, w)))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let Some((ms, win)) = slowest else {
        return invalid(format!(
            "no window of {load}/{scenario} in {where_} tells its slowest response"
        ));
    };
    let ok = ms >= lo && ms <= hi;
    judged(
        ok,
        format!(
            "slowest response {ms:.0} ms (must be {lo}-{hi} ms) of {} requests of {load}/{scenario}, {where_}, in the window at {}",
            sel.requests,
            iso_ms(win.start_ms)
        ),
        with(
            sel.base(),
            json!({"slowest_ms": ms, "min_ms": lo, "max_ms": hi,
                   "window": iso_ms(win.start_ms)}),
        ),
        sel.row_of(inp, win).into_iter().collect(),
    )
}

/// `error_rate_between`: each window with at least `min_requests` requests has an error rate in
/// `[min_pct, max_pct]`. Not evaluated when no window has that many requests.
fn error_rate_between(c: &CheckSpec, sel: &LoadSel, inp: &Inputs) -> Eval {
    let (load, scenario, where_) = (sel.load, sel.scenario, &sel.where_);
    let (Some(lo), Some(hi)) = (c.min_pct, c.max_pct) else {
        return invalid("error_rate_between needs `min_pct` and `max_pct`");
    };
    let floor = c.min_requests.unwrap_or(lab::checks::DEFAULT_MIN_REQUESTS);
    let pct_of = |w: &Win| labkit::event::err_pct(w.err, w.count);
    let judged_wins: Vec<&Win> = sel.wins.iter().filter(|w| w.count >= floor).collect();
    let skipped = sel.wins.len() - judged_wins.len();
    if judged_wins.is_empty() {
        return invalid(format!(
            "no window of {load}/{scenario} in {where_} holds {floor} requests ({} window(s), {} requests): no error rate to judge",
            sel.wins.len(),
            sel.requests
        ));
    }
    let outside = |w: &Win| {
        let p = pct_of(w);
        p < lo || p > hi
    };
    let bad: Vec<&&Win> = judged_wins.iter().filter(|w| outside(w)).collect();
    let rates: Vec<Value> = judged_wins
        .iter()
        .map(|w| {
            json!({"window": iso_ms(w.start_ms), "requests": w.count, "errors": w.err,
                        "err_pct": (pct_of(w) * 1000.0).round() / 1000.0})
        })
        .collect();
    let (min_seen, max_seen) = judged_wins
        .iter()
        .map(|w| pct_of(w))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p), b.max(p))
        });
    judged(
        bad.is_empty(),
        format!(
            "{} of {} window(s) with >= {floor} requests outside {lo}-{hi} % errors (seen {min_seen:.2}-{max_seen:.2} %), {} smaller window(s) not judged, {load}/{scenario}, {where_}",
            bad.len(),
            judged_wins.len(),
            skipped
        ),
        with(
            sel.base(),
            json!({"min_pct": lo, "max_pct": hi, "min_requests": floor,
                   "judged": judged_wins.len(), "outside": bad.len(), "not_judged": skipped,
                   "min_err_pct": min_seen, "max_err_pct": max_seen, "per_window": rates}),
        ),
        sel.rows_where(inp, &|w| w.count >= floor && outside(w)),
    )
}

/// `served_share_between`: the share of the responses served by `<app>--<revision>`.
fn served_share_between(c: &CheckSpec, sel: &LoadSel, inp: &Inputs) -> Eval {
    let (load, scenario, where_) = (sel.load, sel.scenario, &sel.where_);
    let (Some(app), Some(sfx), Some(lo), Some(hi)) = (&c.app, &c.revision, c.min_pct, c.max_pct)
    else {
        return invalid("served_share_between needs `app`, `revision`, `min_pct` and `max_pct`");
    };
    let want = lab::arm_body::revision_name(app, sfx);
    let mut by_rev: std::collections::BTreeMap<&str, u64> = Default::default();
    for w in &sel.wins {
        for (k, v) in &w.served_by {
            *by_rev.entry(k.as_str()).or_insert(0) += v;
        }
    }
    let responses: u64 = by_rev.values().sum();
    if responses == 0 {
        return invalid(format!(
            "no response of {load}/{scenario} in {where_}: no share to judge"
        ));
    }
    let mine = by_rev.get(want.as_str()).copied().unwrap_or(0);
    let share = mine as f64 * 100.0 / responses as f64;
    let list: Vec<String> = by_rev.iter().map(|(k, v)| format!("{k} {v}")).collect();
    judged(
        share >= lo && share <= hi,
        format!(
            "{want} served {mine} of {responses} responses ({share:.2} %, must be {lo}-{hi} %) of {load}/{scenario}, {where_}: {}",
            list.join(", ")
        ),
        with(
            sel.base(),
            json!({"revision": want, "served": mine, "responses": responses,
                   "share_pct": share, "min_pct": lo, "max_pct": hi, "served_by": by_rev}),
        ),
        sel.rows_where(inp, &|w| w.count > 0),
    )
}

/// `errors_served_by`: every failed request of the runs was answered by `<app>--<revision>`,
/// read from their `req` lines, which must hold every error the windows count.
fn errors_served_by(c: &CheckSpec, sel: &LoadSel, inp: &Inputs) -> Eval {
    let (load, scenario, where_) = (sel.load, sel.scenario, &sel.where_);
    let (Some(app), Some(sfx)) = (&c.app, &c.revision) else {
        return invalid("errors_served_by needs `app` and `revision`");
    };
    let want = lab::arm_body::revision_name(app, sfx);
    let mut by_rev: std::collections::BTreeMap<String, u64> = Default::default();
    for r in inp
        .acc
        .runs
        .iter()
        .filter(|r| r.scenario == scenario && sel.present.contains(&r.run_id.as_str()))
    {
        for (k, v) in r.req_errors_by_revision() {
            *by_rev.entry(k).or_insert(0) += v;
        }
    }
    let attributed: u64 = by_rev.values().sum();
    let numbers = with(
        sel.base(),
        json!({"revision": want, "errors_by_revision": by_rev, "attributed": attributed}),
    );
    if attributed < sel.errors {
        return Eval {
            status: Status::NotEvaluated,
            detail: format!(
                "the windows of {load}/{scenario} in {where_} count {} error(s), its req lines hold {attributed}: {} cannot be attributed to a revision (req lines lost, or log_requests = none)",
                sel.errors,
                sel.errors - attributed
            ),
            numbers,
            rows: Vec::new(),
        };
    }
    if attributed > sel.errors {
        return Eval {
            status: Status::NotEvaluated,
            detail: format!(
                "the req lines of {load}/{scenario} in {where_} hold {attributed} error(s), its windows count {}: the two sources disagree, so the attribution is not judged",
                sel.errors
            ),
            numbers,
            rows: Vec::new(),
        };
    }
    let elsewhere: u64 = by_rev
        .iter()
        .filter(|(k, _)| **k != want)
        .map(|(_, v)| v)
        .sum();
    let list: Vec<String> = by_rev.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let detail = if attributed == 0 {
        format!(
            "no error in {} requests of {load}/{scenario}, {where_}: none served by another revision than {want}",
            sel.requests
        )
    } else {
        format!(
            "{} of {attributed} error(s) served by another revision than {want} ({}), {load}/{scenario}, {where_}",
            elsewhere,
            list.join(", ")
        )
    };
    judged(
        elsewhere == 0,
        detail,
        numbers,
        sel.rows_where(inp, &|w| w.err > 0),
    )
}

/// `recovers`: the windows have errors, and the last window with requests has none.
fn recovers(sel: &LoadSel, inp: &Inputs) -> Eval {
    let (load, scenario, where_) = (sel.load, sel.scenario, &sel.where_);
    let (requests, wins) = (sel.requests, &sel.wins);
    let last_bad = wins.iter().rposition(|w| w.err > 0);
    let last_served = wins.iter().rposition(|w| w.count > 0);
    let Some(last_served) = last_served else {
        return invalid(format!(
            "no requests of {load}/{scenario} in {where_}: nothing to judge"
        ));
    };
    let ok = last_bad.is_some_and(|b| last_served > b);
    let detail = match last_bad {
        None => format!(
            "no errors at all in {requests} requests of {load}/{scenario}, {where_}: nothing to recover from"
        ),
        Some(b) if ok => format!(
            "errors until the window at {}, then {} window(s) with requests and none",
            iso_ms(wins[b].start_ms),
            wins[b + 1..].iter().filter(|w| w.count > 0).count()
        ),
        Some(b) => format!(
            "still failing in the last window with requests ({})",
            iso_ms(wins[b].start_ms)
        ),
    };
    let mut rows: Vec<String> = Vec::new();
    if let Some(r) = last_bad.and_then(|b| sel.row_of(inp, &wins[b])) {
        rows.push(r);
    }
    if let Some(r) = sel.row_of(inp, &wins[last_served]) {
        rows.push(r);
    }
    judged(
        ok,
        detail,
        with(
            sel.base(),
            json!({"last_error_window": last_bad.map(|b| iso_ms(wins[b].start_ms)),
                   "last_window_with_requests": iso_ms(wins[last_served].start_ms)}),
        ),
        rows,
    )
}

/// The event scope of a check: `[from, to]` in epoch ms (`to` open when `None`).
fn scope(c: &CheckSpec, runs: &RunsRecord) -> Result<(i64, Option<i64>, String), Eval> {
    let (from, to, what) = match step(c, runs)? {
        Some(s) => {
            let Some(start) = s.start_ms() else {
                return Err(invalid(format!(
                    "step {:?} has no readable start in runs.json",
                    s.name
                )));
            };
            match &c.within {
                Some(w) => {
                    let d = parse_duration(w).map_err(|e| invalid(format!("within {w:?}: {e}")))?;
                    let t = s.first_action_ms().unwrap_or(start);
                    let basis = if s.first_action_ms().is_some() {
                        "its first action"
                    } else {
                        "its start"
                    };
                    (
                        t,
                        Some(t + d.as_millis() as i64),
                        format!("step {:?}, {w} from {basis}", s.name),
                    )
                }
                None => (start, s.end_ms(), format!("step {:?}", s.name)),
            }
        }
        None => {
            let (a, b) = runs.span_ms();
            let Some(a) = a else {
                return Err(invalid("runs.json has no readable `started`"));
            };
            let (t, to) = match &c.within {
                Some(w) => {
                    let d = parse_duration(w).map_err(|e| invalid(format!("within {w:?}: {e}")))?;
                    (a, Some(a + d.as_millis() as i64))
                }
                None => (a, b),
            };
            (t, to, "the whole run".to_owned())
        }
    };
    Ok((from, to, what))
}

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
fn event_check(c: &CheckSpec, runs: &RunsRecord, acc: &Acc) -> Eval {
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
fn system_event_at_least(c: &CheckSpec, acc: &Acc, sc: &EventScope) -> Eval {
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
fn restart_count(c: &CheckSpec, acc: &Acc, sc: &EventScope) -> Eval {
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
fn probe_failed(c: &CheckSpec, probe: &str, evs: &[&SystemEvent], sc: &EventScope) -> Eval {
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
fn probe_failed_first(c: &CheckSpec, probe: &str, evs: &[&SystemEvent], sc: &EventScope) -> Eval {
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

fn action_check(c: &CheckSpec, runs: &RunsRecord) -> Eval {
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
