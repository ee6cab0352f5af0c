//! The job execution checks, read from both sources of [`crate::judge::job_executions`]: ARM's
//! executions list (the samplers' `JobExecutionSample` lines) and the job's system rows.
//! - `job_executions_end`: every execution started in scope ended with `execution_status`
//!   (ARM's last status), with `replicas` replicas when given (the rows' `ContainerStarted`
//!   replicas). When ARM and the rows disagree on how one ended, the check is not evaluated and
//!   says so: the verdict does not rest on one source against the other.
//! - `job_replica_exit`: every replica started in scope ended (`ContainerTerminated`) with
//!   `exit_code` when given, within `[min, max]` s of `since` (its `ContainerStarted` row, its
//!   first row, its execution's first row, or its own `SIGTERM_RECEIVED` line).
//! - `job_executions_at_once`: the executions started in scope that ran at once, by their rows,
//!   within `[min, max]`; ARM's most `Running` at one tick is reported beside it.
//!
//! [Observed]: the platform's own records.

use lab::Check;
use lab::checks::ReplicaExitSince as Since;
use logline::line::SubjectEvent;
use serde_json::json;

use super::{Eval, bounds_text, invalid, judged, scope, within_bounds};
use crate::judge::job_executions::{self, Execution, RowsOutcome};
use crate::judge::job_replicas;
use crate::read::model::Acc;
use crate::read::runs::RunsRecord;
use crate::ts::iso_ms;

/// What a job check reads: the executions of its job that started in its scope, the scope in
/// words, and the scope's end (`None`: open).
struct InScope {
    executions: Vec<Execution>,
    what: String,
    to: Option<i64>,
}

/// The executions of the check's job that started in its scope.
fn in_scope(c: &Check, runs: &RunsRecord, acc: &Acc) -> Result<InScope, Eval> {
    let Some(job) = &c.job else {
        return Err(invalid(format!("{} needs `job`", c.kind)));
    };
    let (from, to, what) = scope(c, runs)?;
    let ex: Vec<Execution> = job_executions::executions(acc, job)
        .into_iter()
        .filter(|e| e.started_within(from, to))
        .collect();
    if ex.is_empty() {
        return Err(invalid(format!(
            "no execution of job {job} started in {what} (no sampler line of ARM's executions \
             list and no system row names one)"
        )));
    }
    Ok(InScope {
        executions: ex,
        what,
        to,
    })
}

/// Evaluates `job_executions_end`.
pub(super) fn executions_end(c: &Check, runs: &RunsRecord, acc: &Acc) -> Eval {
    let Some(want) = c.execution_status.as_deref() else {
        return invalid("job_executions_end needs `execution_status`");
    };
    let InScope {
        executions: ex,
        what,
        ..
    } = match in_scope(c, runs, acc) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let disagreements: Vec<String> = ex.iter().filter_map(Execution::disagreement).collect();
    if !disagreements.is_empty() {
        return invalid(format!(
            "the two sources disagree: {}",
            disagreements.join("; ")
        ));
    }
    let mut wrong = Vec::new();
    let mut rows = Vec::new();
    for e in &ex {
        let status = e.arm_status();
        let replicas = e.replicas.iter().filter(|r| r.started_ms.is_some()).count();
        if status.is_none() {
            return invalid(format!(
                "no sampler line gives execution {}'s status (was the job sampled?)",
                e.name
            ));
        }
        if c.replicas.is_some() && e.rows_outcome() == RowsOutcome::Unseen {
            return invalid(format!(
                "no system row of execution {}: its replicas cannot be counted",
                e.name
            ));
        }
        let status_ok = status == Some(want);
        let replicas_ok = c.replicas.is_none_or(|n| replicas == n as usize);
        let exits: Vec<String> = e
            .replicas
            .iter()
            .map(|r| r.exit_code.map_or("?".to_owned(), |x| x.to_string()))
            .collect();
        let line = format!(
            "{}: ARM {} (seen: {}); {replicas} replica(s), exit codes {}{}",
            e.name,
            status.unwrap_or("?"),
            e.statuses
                .iter()
                .map(|(_, s)| s.as_str())
                .collect::<Vec<_>>()
                .join(" → "),
            exits.join(", "),
            e.deadline_ms
                .map(|t| format!("; DeadlineExceeded at {}", iso_ms(t)))
                .unwrap_or_default()
        );
        if !(status_ok && replicas_ok) {
            wrong.push(line.clone());
        }
        rows.push(line);
    }
    let job = c.job.as_deref().unwrap_or("?");
    let expect = match c.replicas {
        Some(n) => format!("{want} after {n} replica(s)"),
        None => want.to_owned(),
    };
    judged(
        wrong.is_empty(),
        if wrong.is_empty() {
            format!(
                "{} execution(s) of job {job} in {what}, each {expect}",
                ex.len()
            )
        } else {
            format!(
                "{} of {} execution(s) of job {job} in {what} did not end {expect}: {}",
                wrong.len(),
                ex.len(),
                wrong.join("; ")
            )
        },
        json!({
            "job": job,
            "executions": ex.len(),
            "not_as_expected": wrong.len(),
            "execution_status": want,
            "replicas": c.replicas,
        }),
        rows,
    )
}

/// One replica judged by `job_replica_exit`: its line for the report, and the seconds from
/// `since` to its end when both are known.
struct ReplicaEnd {
    line: String,
    took_s: Option<f64>,
    ok: bool,
}

/// Judges replica `r` of execution `e`: timed from `since`, ended within `[min, max]` s with
/// the code.
fn replica_end(
    c: &Check,
    acc: &Acc,
    (e, r): (&Execution, &job_executions::Replica),
    (since, min, max): (Since, f64, f64),
) -> ReplicaEnd {
    let job = c.job.as_deref().unwrap_or("?");
    let t0 = match since {
        Since::Sigterm => acc
            .subject
            .iter()
            .filter(|s| s.app == job && s.replica == r.name)
            .find(|s| s.event == SubjectEvent::SigtermReceived)
            .map(|s| s.ts.epoch_ms()),
        Since::Start => r.started_ms,
        Since::Created => r.created_ms,
        Since::Execution => e.first_row_ms,
    };
    let fail = |line: String| ReplicaEnd {
        line,
        took_s: None,
        ok: false,
    };
    match (t0, r.ended_ms) {
        (None, _) => fail(format!("{} {}", r.name, since_missing(since))),
        (Some(_), None) => fail(format!("{} has no ContainerTerminated row", r.name)),
        (Some(a), Some(b)) => {
            let s = (b - a) as f64 / 1000.0;
            let code_ok = c.exit_code.is_none_or(|x| r.exit_code == Some(x));
            ReplicaEnd {
                line: format!(
                    "{} ended {s:.3} s after {} with exit code {}",
                    r.name,
                    since.words(),
                    r.exit_code.map_or("?".to_owned(), |x| x.to_string())
                ),
                took_s: Some(s),
                ok: code_ok && s >= min && s <= max,
            }
        }
    }
}

/// The instant `since` names, in the rows' terms, for the check's detail.
fn since_words(since: Since) -> &'static str {
    match since {
        Since::Start => "its ContainerStarted row",
        Since::Created => "its first row (the replica created)",
        Since::Execution => "its execution's first row",
        Since::Sigterm => "its SIGTERM_RECEIVED line",
    }
}

/// Why a replica cannot be timed from `since`.
fn since_missing(since: Since) -> &'static str {
    match since {
        Since::Start => "has no ContainerStarted row",
        Since::Created => "has no row before its end",
        Since::Execution => "belongs to an execution without rows",
        Since::Sigterm => "logged no SIGTERM_RECEIVED",
    }
}

/// Evaluates `job_replica_exit`.
pub(super) fn replica_exit(c: &Check, runs: &RunsRecord, acc: &Acc) -> Eval {
    let Some(max) = c.max else {
        return invalid("job_replica_exit needs `max` (seconds)");
    };
    let min = c.min.unwrap_or(0.0);
    let since = match Since::parse(c.since.as_deref()) {
        Ok(s) => s,
        Err(other) => {
            return invalid(format!(
                "job_replica_exit's `since` {other:?} is not one of {}",
                lab::checks::REPLICA_EXIT_SINCE.join(", ")
            ));
        }
    };
    let InScope {
        executions: ex,
        what,
        ..
    } = match in_scope(c, runs, acc) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let job = c.job.as_deref().unwrap_or("?");
    let ends: Vec<ReplicaEnd> = ex
        .iter()
        .flat_map(|e| e.replicas.iter().map(move |r| (e, r)))
        .map(|er| replica_end(c, acc, er, (since, min, max)))
        .collect();
    let wrong: Vec<&str> = ends
        .iter()
        .filter(|e| !e.ok)
        .map(|e| e.line.as_str())
        .collect();
    let took: Vec<f64> = ends.iter().filter_map(|e| e.took_s).collect();
    let code = c
        .exit_code
        .map(|x| format!(" with exit code {x}"))
        .unwrap_or_default();
    let from = since_words(since);
    let expect = if c.min.is_some() {
        format!("{code} {min} to {max} s after {from}")
    } else {
        format!("{code} within {max} s of {from}")
    };
    let measured = match (
        took.iter().copied().reduce(f64::min),
        took.iter().copied().reduce(f64::max),
    ) {
        (Some(lo), Some(hi)) if (hi - lo).abs() < 0.0005 => format!(" ({lo:.3} s)"),
        (Some(lo), Some(hi)) => format!(" ({lo:.3} to {hi:.3} s)"),
        _ => String::new(),
    };
    let n = ends.len();
    judged(
        wrong.is_empty(),
        if wrong.is_empty() {
            format!("{n} replica(s) of job {job} in {what}, each ended{expect}{measured}")
        } else {
            format!(
                "{} of {n} replica(s) of job {job} in {what} did not end{expect}: {}",
                wrong.len(),
                wrong.join("; ")
            )
        },
        json!({
            "job": job,
            "replicas": n,
            "not_as_expected": wrong.len(),
            "exit_code": c.exit_code,
            "since": since.key(),
            "min_s": min,
            "max_s": max,
        }),
        ends.into_iter().map(|e| e.line).collect(),
    )
}

/// Evaluates `job_executions_at_once`: each execution alive from its first replica's start row
/// to its last replica's end row (to the end of the scope, or the last row read, while one of
/// its replicas has no end row).
pub(super) fn executions_at_once(c: &Check, runs: &RunsRecord, acc: &Acc) -> Eval {
    if c.min.is_none() && c.max.is_none() {
        return invalid("job_executions_at_once needs `min`, `max` or both");
    }
    let InScope {
        executions: ex,
        what,
        to,
    } = match in_scope(c, runs, acc) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let last_row = acc.system.iter().map(|r| r.ts_ms).max().unwrap_or(0);
    let open_end = to.unwrap_or(last_row).max(last_row);
    let mut spans: job_replicas::Spans = std::collections::BTreeMap::new();
    let mut unseen = Vec::new();
    for e in &ex {
        let starts = e.replicas.iter().filter_map(|r| r.started_ms).min();
        let Some(start) = starts else {
            unseen.push(e.name.as_str());
            continue;
        };
        let end = if e.replicas.iter().any(|r| r.ended_ms.is_none()) {
            open_end
        } else {
            e.replicas
                .iter()
                .filter_map(|r| r.ended_ms)
                .max()
                .unwrap_or(start)
        };
        spans.insert(e.name.as_str(), (start, end.max(start)));
    }
    if spans.is_empty() {
        return invalid(format!(
            "no execution of job {} in {what} has a ContainerStarted row",
            c.job.as_deref().unwrap_or("?")
        ));
    }
    let (most, at) = job_replicas::most_at_once(&spans);
    let arm_most = arm_running_at_once(acc, &ex);
    let ok = within_bounds(c, most as f64);
    let job = c.job.as_deref().unwrap_or("?");
    let bounds = bounds_text(c);
    let rows: Vec<String> = spans
        .iter()
        .map(|(name, (a, b))| format!("{name}: {} to {}", iso_ms(*a), iso_ms(*b)))
        .collect();
    judged(
        ok,
        format!(
            "{} execution(s) of job {job} in {what}; at most {most} ran at once{} by their \
             rows ({bounds}); ARM listed at most {arm_most} Running at one tick{}",
            spans.len(),
            at.map(|t| format!(", first at {}", iso_ms(t)))
                .unwrap_or_default(),
            if unseen.is_empty() {
                String::new()
            } else {
                format!("; without rows: {}", unseen.join(", "))
            }
        ),
        json!({
            "job": job,
            "executions": spans.len(),
            "most_at_once": most,
            "at": at.map(iso_ms),
            "arm_most_running": arm_most,
            "min": c.min,
            "max": c.max,
        }),
        rows,
    )
}

/// The most of `ex` that one sampler tick listed as `Running` or `Processing`.
fn arm_running_at_once(acc: &Acc, ex: &[Execution]) -> usize {
    let names: std::collections::BTreeSet<&str> = ex.iter().map(|e| e.name.as_str()).collect();
    let mut per_tick: std::collections::BTreeMap<(Option<&str>, i64), usize> =
        std::collections::BTreeMap::new();
    for s in &acc.executions {
        if names.contains(s.execution.as_str())
            && matches!(s.status.as_str(), "Running" | "Processing")
        {
            *per_tick
                .entry((s.perturbation_id.as_deref(), s.ts.epoch_ms()))
                .or_default() += 1;
        }
    }
    per_tick.values().copied().max().unwrap_or(0)
}
