//! An observation lab's `[[checks]]`, each evaluated into a gate (kind `check`).
//!
//! Each check is `pass` (the expected observation happened), `fail` (it did not: the lab's
//! hypothesis about the platform is contradicted) or `not_evaluated` (missing data: no or an
//! unreadable `runs.json`, an unknown step, no run of the load in the step, no loadgen lines for
//! that run, no system events at all). The verdict ([`crate::judge::verdict::decide_observation`]) is
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
//! This module holds the dispatch, the scopes and the verdict of each check; the kinds are
//! evaluated in `load` (load checks), `events` (event and action checks),
//! `revision_states`, `clients_moved`, `queue` and `job_executions`.
//!
//! Kinds:
//! - `status_seen`: responses with HTTP `status` (from the windows' status maps) ≥ `min` (1).
//! - `no_errors`: err = 0 over the selected windows, which must hold at least one request.
//! - `errors_at_least`: err ≥ `min` (1).
//! - `restart_count_at_least` / `restart_count_at_most`: restarts of `app` in scope ≥ `min` (1)
//!   / ≤ `max` (0). A restart is a `ContainerTerminated` row with reason `ProbeFailure` or a
//!   non-zero exit code ([`crate::read::wording::terminations`]); `ManuallyStopped` (a retired or
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
//!   (`revision_states`).
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
//!   max]` (`clients_moved`).
//! - `queue_items_once`, `queue_drained_within`, `job_replicas_at_most`: an event-driven job's
//!   items and replicas, from its workers' lines and the `enqueue` actions (`queue`).
//! - `job_executions_end`, `job_replica_exit`, `job_executions_at_once`: how a job's executions
//!   and replicas ended and how many ran at once, from ARM's executions list and the job's
//!   system rows, cross-checked (`job_executions`).

mod clients_moved;
mod events;
mod job_executions;
mod load;
mod queue;
mod revision_states;

use lab::{Check, Lab};
use logline::config::parse_duration;
use serde_json::Value;

use crate::judge::rule::BucketRow;
use crate::judge::verdict::{Gate, Status};
use crate::read::evidence::Level;
use crate::read::model::Acc;
use crate::read::runs::{RunsRecord, StepRecord};

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
pub fn evaluate(lab: &Lab, inp: &Inputs) -> Vec<CheckResult> {
    lab.checks.iter().map(|c| one(lab, c, inp)).collect()
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

fn one(lab: &Lab, c: &Check, inp: &Inputs) -> CheckResult {
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
            | K::ServedShareBetween => load::load_check(c, runs, inp),
            K::SystemEventAtLeast => events::event_check(c, runs, inp.acc),
            K::RevisionStateSeen => revision_states::revision_state_seen(c, runs, inp.acc),
            K::ClientsMoved => clients_moved::clients_moved(c, runs, inp.acc),
            K::RestartCountAtLeast
            | K::RestartCountAtMost
            | K::ProbeFailed
            | K::ProbeFailedFirst => events::event_check(c, runs, inp.acc),
            K::ActionFailed => events::action_check(c, runs),
            K::QueueItemsOnce => queue::items_once(c, lab, runs, inp.acc),
            K::QueueDrainedWithin => queue::drained_within(c, lab, runs, inp.acc),
            K::JobReplicasAtMost => queue::replicas_at_most(c, runs, inp.acc),
            K::JobExecutionsEnd => job_executions::executions_end(c, runs, inp.acc),
            K::JobReplicaExit => job_executions::replica_exit(c, runs, inp.acc),
            K::JobExecutionsAtOnce => job_executions::executions_at_once(c, runs, inp.acc),
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

fn step<'a>(c: &Check, runs: &'a RunsRecord) -> Result<Option<&'a StepRecord>, Eval> {
    match &c.step {
        None => Ok(None),
        Some(name) => runs
            .step(name)
            .map(Some)
            .ok_or_else(|| invalid(format!("step {name:?} is not in runs.json"))),
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

/// The run ids of `load` in the check's scope (its step's runs, or every step's), in order, and
/// the scope in words; or why there is none.
fn load_runs<'a>(
    c: &Check,
    load: &str,
    runs: &'a RunsRecord,
) -> Result<(Vec<&'a str>, String), Eval> {
    let steps: Vec<&StepRecord> = match step(c, runs)? {
        Some(s) => vec![s],
        None => runs.steps.iter().collect(),
    };
    let run_ids: Vec<&str> = steps
        .iter()
        .flat_map(|s| s.runs.iter())
        .filter(|r| r.load == load)
        .map(|r| r.run_id.as_str())
        .collect();
    let where_ = scope_words(c);
    if run_ids.is_empty() {
        return Err(invalid(format!(
            "no run of load {load:?} in {where_} of runs.json"
        )));
    }
    Ok((run_ids, where_))
}

/// Whether count `n` is within the check's `min` and `max` (either may be absent).
fn within_bounds(c: &Check, n: f64) -> bool {
    c.min.is_none_or(|lo| n >= lo) && c.max.is_none_or(|hi| n <= hi)
}

/// The check's `min` and `max` in words: `need 2 to 5`, `need >= 2`, `need <= 0`.
fn bounds_text(c: &Check) -> String {
    match (c.min, c.max) {
        (Some(lo), Some(hi)) => format!("need {lo} to {hi}"),
        (Some(lo), None) => format!("need >= {lo}"),
        (None, Some(hi)) => format!("need <= {hi}"),
        (None, None) => "no bound".to_owned(),
    }
}

/// A check's step scope in words: `step "x"`, or `the run` without one.
fn scope_words(c: &Check) -> String {
    c.step
        .as_ref()
        .map_or("the run".to_owned(), |s| format!("step {s:?}"))
}

/// The event scope of a check: `[from, to]` in epoch ms (`to` open when `None`).
fn scope(c: &Check, runs: &RunsRecord) -> Result<(i64, Option<i64>, String), Eval> {
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
