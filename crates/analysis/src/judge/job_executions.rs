//! A job's executions as two sources tell them, side by side:
//! - ARM: the samplers' `JobExecutionSample` lines, the executions list read each tick (status,
//!   `startTime`, `endTime`); an execution's statuses in the order first seen;
//! - the platform's system rows of the job (`JobName_s`, `ExecutionName_s`): each replica's
//!   `ContainerStarted`, `DeadlineExceeded` and `ContainerTerminated ... exit code 'N'` rows, and
//!   an execution's own `DeadlineExceeded` row (no replica).
//!
//! [`Execution::disagreement`] names where the two disagree: ARM says `Succeeded` but no replica
//! exited 0, or the reverse. Read by the job checks ([`crate::judge::checks`]) and the report's
//! executions table. A bottom module: it imports only the accumulator's types and the wordings.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::read::model::Acc;
use crate::read::wording::exit_code;
use crate::table::Table;
use crate::ts::{iso_ms, parse_ms};

/// One replica of an execution, from its system rows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Replica {
    pub name: String,
    /// Its first row (localplane's `PullingImage`): the replica exists, its `replicaTimeout`
    /// counts from here, as a pod's `activeDeadlineSeconds` counts from the pod's start.
    pub created_ms: Option<i64>,
    /// Its `ContainerStarted` row.
    pub started_ms: Option<i64>,
    /// Its `DeadlineExceeded` row (its own `replicaTimeout`).
    pub deadline_ms: Option<i64>,
    /// Its `ContainerTerminated` row, and the exit code that row gives.
    pub ended_ms: Option<i64>,
    pub exit_code: Option<i64>,
}

/// One execution of a job, from both sources.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Execution {
    pub job: String,
    pub name: String,
    /// ARM's `startTime` (whole seconds: the API writes no fraction).
    pub arm_start_ms: Option<i64>,
    /// The first system row of the execution (milliseconds).
    pub first_row_ms: Option<i64>,
    /// ARM's statuses in the order first seen, each with the tick that first saw it.
    pub statuses: Vec<(i64, String)>,
    /// ARM's `endTime`.
    pub arm_end_ms: Option<i64>,
    /// Its replicas by start, from the rows.
    pub replicas: Vec<Replica>,
    /// The execution's own `DeadlineExceeded` row (the deadline of the whole execution).
    pub deadline_ms: Option<i64>,
}

/// What the system rows say of an execution's end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowsOutcome {
    /// No rows of it at all.
    Unseen,
    /// A replica started has no `ContainerTerminated` row.
    Running,
    /// A replica exited 0.
    Succeeded,
    /// Every replica ended, none with 0 (ARM then says `Failed` or `Stopped`).
    NotSucceeded,
}

impl RowsOutcome {
    /// In words, for the executions table.
    pub fn label(self) -> &'static str {
        match self {
            RowsOutcome::Unseen => "no rows",
            RowsOutcome::Running => "a replica never ended",
            RowsOutcome::Succeeded => "a replica exited 0",
            RowsOutcome::NotSucceeded => "no replica exited 0",
        }
    }
}

impl Execution {
    /// When it started: its first row, else ARM's `startTime`.
    pub fn start_ms(&self) -> Option<i64> {
        self.first_row_ms.or(self.arm_start_ms)
    }

    /// Whether it started in `[from, to]` (`to` open when `None`); ARM's whole-second
    /// `startTime` counts as any instant of its second.
    pub fn started_within(&self, from: i64, to: Option<i64>) -> bool {
        let (early, late) = match (self.first_row_ms, self.arm_start_ms) {
            (Some(t), _) => (t, t),
            (None, Some(t)) => (t, t + 999),
            (None, None) => return false,
        };
        late >= from && to.is_none_or(|end| early <= end)
    }

    /// The last status ARM gave.
    pub fn arm_status(&self) -> Option<&str> {
        self.statuses.last().map(|(_, s)| s.as_str())
    }

    /// The rows' reading of how the execution ended.
    pub fn rows_outcome(&self) -> RowsOutcome {
        if self.replicas.is_empty() {
            return RowsOutcome::Unseen;
        }
        if self.replicas.iter().any(|r| r.ended_ms.is_none()) {
            return RowsOutcome::Running;
        }
        if self.replicas.iter().any(|r| r.exit_code == Some(0)) {
            RowsOutcome::Succeeded
        } else {
            RowsOutcome::NotSucceeded
        }
    }

    /// Where ARM's final status and the rows disagree, in words; `None` when they agree or
    /// either has not seen the end.
    pub fn disagreement(&self) -> Option<String> {
        let arm = self.arm_status()?;
        let rows = self.rows_outcome();
        match (arm, rows) {
            ("Succeeded", RowsOutcome::NotSucceeded) => Some(format!(
                "ARM says {} Succeeded, but none of its {} replica(s) exited 0 in the system rows",
                self.name,
                self.replicas.len()
            )),
            ("Failed" | "Stopped", RowsOutcome::Succeeded) => Some(format!(
                "ARM says {} {arm}, but a replica of it exited 0 in the system rows",
                self.name
            )),
            _ => None,
        }
    }
}

/// Every execution of `job` either source names, by start (unknown starts last).
pub fn executions(acc: &Acc, job: &str) -> Vec<Execution> {
    let mut by_name: BTreeMap<&str, Execution> = BTreeMap::new();
    let mut samples: Vec<_> = acc.executions.iter().filter(|s| s.job == job).collect();
    samples.sort_by_key(|s| s.ts.epoch_ms());
    for s in samples {
        let e = entry(&mut by_name, job, &s.execution);
        if let Some(t) = s.start_time.as_deref().and_then(parse_ms) {
            e.arm_start_ms = Some(t);
        }
        if let Some(t) = s.end_time.as_deref().and_then(parse_ms) {
            e.arm_end_ms = Some(t);
        }
        if !s.status.is_empty() && e.arm_status() != Some(s.status.as_str()) {
            e.statuses.push((s.ts.epoch_ms(), s.status.clone()));
        }
    }
    let mut rows: Vec<_> = acc
        .system
        .iter()
        .filter(|r| r.app == job && !r.execution.is_empty())
        .collect();
    rows.sort_by_key(|r| r.ts_ms);
    for r in rows {
        let e = entry(&mut by_name, job, &r.execution);
        e.first_row_ms.get_or_insert(r.ts_ms);
        if r.replica.is_empty() {
            if r.reason == "DeadlineExceeded" {
                e.deadline_ms.get_or_insert(r.ts_ms);
            }
            continue;
        }
        let rep = match e.replicas.iter().position(|x| x.name == r.replica) {
            Some(i) => &mut e.replicas[i],
            None => {
                e.replicas.push(Replica {
                    name: r.replica.clone(),
                    ..Replica::default()
                });
                let last = e.replicas.len() - 1;
                &mut e.replicas[last]
            }
        };
        rep.created_ms.get_or_insert(r.ts_ms);
        match r.reason.as_str() {
            "ContainerStarted" => {
                rep.started_ms.get_or_insert(r.ts_ms);
            }
            "DeadlineExceeded" => {
                rep.deadline_ms.get_or_insert(r.ts_ms);
            }
            "ContainerTerminated" => {
                rep.ended_ms = Some(r.ts_ms);
                rep.exit_code = exit_code(&r.msg).or(rep.exit_code);
            }
            _ => {}
        }
    }
    let mut out: Vec<Execution> = by_name.into_values().collect();
    for e in &mut out {
        e.replicas
            .sort_by_key(|r| (r.started_ms.is_none(), r.started_ms));
    }
    out.sort_by_key(|e| (e.start_ms().is_none(), e.start_ms()));
    out
}

/// Q8: every execution of `jobs` (the lab's `[[jobs]]`), one row each: when it started, the
/// statuses ARM gave in order (with the tick that first saw each), its replicas from the rows
/// (each `name:exit code`), the `DeadlineExceeded` rows, the rows' reading of the end, and
/// where the two sources disagree.
pub fn q8(acc: &Acc, jobs: &[&str]) -> Table {
    let mut t = Table::new(
        "q8-job-executions",
        "Q8: job executions, from ARM (sampler lines) and the system rows, cross-checked",
        &[
            "job",
            "execution",
            "started",
            "arm_statuses",
            "arm_end",
            "replicas",
            "replica_exits",
            "deadline_exceeded",
            "rows_outcome",
            "disagreement",
        ],
    );
    for job in jobs {
        for e in executions(acc, job) {
            let statuses: Vec<String> = e
                .statuses
                .iter()
                .map(|(ms, s)| format!("{s}@{}", iso_ms(*ms)))
                .collect();
            let exits: Vec<String> = e
                .replicas
                .iter()
                .map(|r| {
                    let code = r.exit_code.map_or("?".to_owned(), |x| x.to_string());
                    let deadline = if r.deadline_ms.is_some() {
                        " (deadline)"
                    } else {
                        ""
                    };
                    format!("{}:{code}{deadline}", r.name)
                })
                .collect();
            let deadlines = e
                .replicas
                .iter()
                .filter(|r| r.deadline_ms.is_some())
                .count()
                + usize::from(e.deadline_ms.is_some());
            t.push(vec![
                json!(e.job),
                json!(e.name),
                e.start_ms().map_or(Value::Null, |ms| json!(iso_ms(ms))),
                json!(statuses.join(" → ")),
                e.arm_end_ms.map_or(Value::Null, |ms| json!(iso_ms(ms))),
                json!(e.replicas.len()),
                json!(exits.join(", ")),
                json!(deadlines),
                json!(e.rows_outcome().label()),
                e.disagreement().map_or(Value::Null, |d| json!(d)),
            ]);
        }
    }
    t
}

fn entry<'m, 'a>(
    m: &'m mut BTreeMap<&'a str, Execution>,
    job: &str,
    name: &'a str,
) -> &'m mut Execution {
    m.entry(name).or_insert_with(|| Execution {
        job: job.to_owned(),
        name: name.to_owned(),
        ..Execution::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::model::SystemEvent;
    use logline::line::JobExecutionSample;

    fn row(ms: i64, exec: &str, replica: &str, reason: &str, msg: &str) -> SystemEvent {
        SystemEvent {
            ts_ms: ms,
            app: "flaky".into(),
            revision: String::new(),
            execution: exec.into(),
            replica: replica.into(),
            reason: reason.into(),
            msg: msg.into(),
            kind: String::new(),
        }
    }

    fn sample(ms: i64, exec: &str, status: &str) -> JobExecutionSample {
        JobExecutionSample {
            ts: logline::Timestamp::from_epoch_ms(ms),
            run_id: None,
            perturbation_id: None,
            sampler: None,
            tick: None,
            job: "flaky".into(),
            execution: exec.into(),
            status: status.into(),
            start_time: None,
            end_time: None,
        }
    }

    fn exit(ms: i64, exec: &str, replica: &str, code: i64) -> SystemEvent {
        let msg = format!("Container 'flaky' was terminated with exit code '{code}'");
        row(ms, exec, replica, "ContainerTerminated", &msg)
    }

    #[test]
    fn replicas_statuses_and_a_disagreement_are_read_from_both_sources() {
        let mut acc = Acc::new(10_000);
        acc.system = vec![
            row(1_000, "flaky-a", "flaky-a-1", "ContainerStarted", ""),
            exit(2_000, "flaky-a", "flaky-a-1", 1),
            row(2_100, "flaky-a", "flaky-a-2", "ContainerStarted", ""),
            exit(3_100, "flaky-a", "flaky-a-2", 1),
            row(5_000, "flaky-b", "flaky-b-1", "ContainerStarted", ""),
            exit(6_000, "flaky-b", "flaky-b-1", 0),
            SystemEvent {
                app: "another-job".into(),
                ..row(6_500, "another-job-x", "x", "ContainerStarted", "")
            },
        ];
        acc.executions = vec![
            sample(1_500, "flaky-a", "Running"),
            sample(3_500, "flaky-a", "Failed"),
            sample(4_500, "flaky-a", "Failed"),
            sample(6_500, "flaky-b", "Failed"),
        ];
        let ex = executions(&acc, "flaky");
        assert_eq!(ex.len(), 2);
        let a = &ex[0];
        assert_eq!(a.name, "flaky-a");
        assert_eq!(a.replicas.len(), 2);
        assert_eq!(a.replicas[1].exit_code, Some(1));
        let statuses: Vec<&str> = a.statuses.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(statuses, ["Running", "Failed"]);
        assert_eq!(a.rows_outcome(), RowsOutcome::NotSucceeded);
        assert_eq!(a.disagreement(), None);
        let b = &ex[1];
        assert_eq!(b.rows_outcome(), RowsOutcome::Succeeded);
        let d = b.disagreement().unwrap_or_default();
        assert!(d.contains("ARM says flaky-b Failed"), "{d}");
    }
}
