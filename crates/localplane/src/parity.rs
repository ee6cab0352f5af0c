//! Normalised system-event timelines, so a localplane run can be compared with a recording of
//! the real service (the parity suite, `tests/parity.rs`).
//!
//! Input is `ContainerAppSystemLogs_CL` rows, either an `az monitor log-analytics query` export
//! (a JSON list of row objects whose values are strings, `TimeGenerated` with up to 7 fractional
//! digits) or localplane's own NDJSON table. Names and absolute times are normalised away:
//! revisions become `R0, R1, …` in the order of their first row, replicas `R<k>/p<i>` in the
//! order of their `AssigningReplica`, times seconds since the first row. What is kept is the
//! order of reasons per replica and revision, and the intervals between them.

use std::collections::BTreeMap;

use serde_json::Value;

/// The reasons the recorded export kept (its KQL filtered on these three); the parity suite
/// compares only these, as the recording holds nothing else to compare with.
pub const COMPARED_REASONS: [&str; 3] = [
    "AssigningReplica",
    "ContainerStarted",
    "ContainerTerminated",
];

#[derive(Debug, thiserror::Error)]
pub enum ParityError {
    #[error("not a JSON list of rows: {0}")]
    NotAList(String),
    #[error("row {index}: {what}")]
    BadRow { index: usize, what: String },
}

/// One system row, names kept as written.
#[derive(Debug, Clone, PartialEq)]
pub struct SysRow {
    /// Seconds since the Unix epoch (µs precision).
    pub t: f64,
    pub reason: String,
    pub revision: String,
    pub replica: String,
    pub log: String,
}

impl SysRow {
    /// The reason, refined for terminations by what `Log_s` says ended the container:
    /// `ContainerTerminated:ManuallyStopped`, `ContainerTerminated:ProbeFailure`,
    /// `ContainerTerminated:exit` (an exit code, no reason).
    pub fn kind(&self) -> String {
        if self.reason != "ContainerTerminated" {
            return self.reason.clone();
        }
        if self.log.contains("reason 'ManuallyStopped'") {
            "ContainerTerminated:ManuallyStopped".into()
        } else if self.log.contains("reason 'ProbeFailure'") {
            "ContainerTerminated:ProbeFailure".into()
        } else {
            "ContainerTerminated:exit".into()
        }
    }
}

fn parse_time(s: &str) -> Option<f64> {
    let t = chrono::DateTime::parse_from_rfc3339(s).ok()?;
    Some(t.timestamp_micros() as f64 / 1e6)
}

fn row_of(index: usize, v: &Value) -> Result<SysRow, ParityError> {
    let field = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let ts = field("TimeGenerated");
    let t = parse_time(&ts).ok_or_else(|| ParityError::BadRow {
        index,
        what: format!("TimeGenerated {ts:?} is not RFC 3339"),
    })?;
    Ok(SysRow {
        t,
        reason: field("Reason_s"),
        revision: field("RevisionName_s"),
        replica: field("ReplicaName_s"),
        log: field("Log_s"),
    })
}

/// Rows of a Log Analytics export (a JSON list), sorted by time (stable).
pub fn rows_from_export(text: &str) -> Result<Vec<SysRow>, ParityError> {
    let v: Value = serde_json::from_str(text).map_err(|e| ParityError::NotAList(e.to_string()))?;
    let list = v
        .as_array()
        .ok_or_else(|| ParityError::NotAList("the top level is not a list".into()))?;
    let mut rows = list
        .iter()
        .enumerate()
        .map(|(i, r)| row_of(i, r))
        .collect::<Result<Vec<_>, _>>()?;
    rows.sort_by(|a, b| a.t.total_cmp(&b.t));
    Ok(rows)
}

/// Rows of localplane's `ContainerAppSystemLogs_CL.ndjson` for app `app`, sorted by time.
pub fn rows_from_ndjson(text: &str, app: &str) -> Result<Vec<SysRow>, ParityError> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| ParityError::BadRow {
            index: i,
            what: e.to_string(),
        })?;
        if v.get("ContainerAppName_s").and_then(Value::as_str) == Some(app) {
            rows.push(row_of(i, &v)?);
        }
    }
    rows.sort_by(|a, b| a.t.total_cmp(&b.t));
    Ok(rows)
}

/// One replica: its label, and its compared events as (seconds since the timeline start, kind,
/// position of the row in the time-sorted input). The position breaks ties between rows
/// written in the same millisecond: they keep the order they were written in.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaLine {
    pub label: String,
    pub events: Vec<(f64, String, usize)>,
}

impl ReplicaLine {
    pub fn kinds(&self) -> Vec<&str> {
        self.events.iter().map(|(_, k, _)| k.as_str()).collect()
    }

    pub fn first(&self, kind: &str) -> Option<f64> {
        self.events
            .iter()
            .find(|(_, k, _)| k == kind)
            .map(|(t, _, _)| *t)
    }
}

impl RevisionLine {
    /// The kinds of all the revision's rows in the order they were written.
    pub fn kinds(&self) -> Vec<String> {
        let mut ev: Vec<&(f64, String, usize)> =
            self.replicas.iter().flat_map(|r| &r.events).collect();
        ev.sort_by_key(|e| e.2);
        ev.into_iter().map(|e| e.1.clone()).collect()
    }
}

/// One revision and its replicas in the order they were assigned. `sets` groups replicas
/// assigned together (within [`SAME_SET_S`]): the initial set, then each restart replacement.
#[derive(Debug, Clone, PartialEq)]
pub struct RevisionLine {
    pub label: String,
    pub replicas: Vec<ReplicaLine>,
    pub sets: Vec<Vec<usize>>,
}

/// Replicas whose `AssigningReplica` rows are this close belong to one set.
pub const SAME_SET_S: f64 = 2.0;

#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub revisions: Vec<RevisionLine>,
}

/// Normalises `rows` (compared reasons only; replicas without an `AssigningReplica` row, e.g.
/// revision-level rows, are left out).
pub fn timeline(rows: &[SysRow]) -> Timeline {
    let rows: Vec<(usize, &SysRow)> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| COMPARED_REASONS.contains(&r.reason.as_str()) && !r.replica.is_empty())
        .collect();
    let t0 = rows.first().map_or(0.0, |(_, r)| r.t);
    let mut rev_order: Vec<String> = Vec::new();
    let mut rep_order: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (_, r) in &rows {
        if !rev_order.contains(&r.revision) {
            rev_order.push(r.revision.clone());
        }
        if r.reason == "AssigningReplica" {
            let reps = rep_order.entry(r.revision.clone()).or_default();
            if !reps.contains(&r.replica) {
                reps.push(r.replica.clone());
            }
        }
    }
    let revisions = rev_order
        .iter()
        .enumerate()
        .map(|(k, rev)| {
            let reps = rep_order.get(rev).cloned().unwrap_or_default();
            let replicas: Vec<ReplicaLine> = reps
                .iter()
                .enumerate()
                .map(|(i, name)| ReplicaLine {
                    label: format!("R{k}/p{i}"),
                    events: rows
                        .iter()
                        .filter(|(_, r)| &r.replica == name)
                        .map(|(i, r)| (r.t - t0, r.kind(), *i))
                        .collect(),
                })
                .collect();
            let mut sets: Vec<Vec<usize>> = Vec::new();
            let mut last: Option<f64> = None;
            for (i, rep) in replicas.iter().enumerate() {
                let a = rep.first("AssigningReplica").unwrap_or(f64::NAN);
                match (last, sets.last_mut()) {
                    (Some(l), Some(set)) if (a - l).abs() <= SAME_SET_S => set.push(i),
                    _ => sets.push(vec![i]),
                }
                last = Some(a);
            }
            RevisionLine {
                label: format!("R{k}"),
                replicas,
                sets,
            }
        })
        .collect();
    Timeline { revisions }
}

/// A rollout: revision `new` (its initial set) replacing revision `old`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rollout {
    pub old: usize,
    pub new: usize,
    /// Per new replica: its `AssigningReplica` → its `ContainerStarted`.
    pub assigned_to_started: Vec<f64>,
    /// Per old replica of the initial set: the new set's first assignment → its
    /// `ManuallyStopped` termination.
    pub assigned_to_old_stopped: Vec<f64>,
}

/// A revision restart of revision `rev`: its replacement replicas, one step each.
#[derive(Debug, Clone, PartialEq)]
pub struct Restart {
    pub rev: usize,
    /// Per replacement: its `AssigningReplica` → its `ContainerStarted`.
    pub assigned_to_started: Vec<f64>,
    /// Between consecutive replacements' `AssigningReplica`.
    pub step_interval: Vec<f64>,
    /// Per replacement: its `ContainerStarted` → the `ManuallyStopped` of the old replica it
    /// replaces (the i-th old stop in time order): the new replica's time to ready.
    pub started_to_old_stopped: Vec<f64>,
    /// How many replicas the revision had before the restart, and how many replacements.
    pub old_count: usize,
    pub replacements: usize,
}

fn stop_of(rep: &ReplicaLine) -> Option<f64> {
    rep.first("ContainerTerminated:ManuallyStopped")
}

/// Every rollout in `tl`: each revision after the first, against the one before it.
pub fn rollouts(tl: &Timeline) -> Vec<Rollout> {
    let mut out = Vec::new();
    for new in 1..tl.revisions.len() {
        let (old_rev, new_rev) = (&tl.revisions[new - 1], &tl.revisions[new]);
        let Some(set) = new_rev.sets.first() else {
            continue;
        };
        let first_assigned = set
            .iter()
            .filter_map(|&i| new_rev.replicas[i].first("AssigningReplica"))
            .fold(f64::INFINITY, f64::min);
        let assigned_to_started = set
            .iter()
            .filter_map(|&i| {
                let r = &new_rev.replicas[i];
                Some(r.first("ContainerStarted")? - r.first("AssigningReplica")?)
            })
            .collect();
        let assigned_to_old_stopped = old_rev
            .sets
            .first()
            .into_iter()
            .flatten()
            .filter_map(|&i| stop_of(&old_rev.replicas[i]))
            .filter(|t| *t >= first_assigned)
            .map(|t| t - first_assigned)
            .collect();
        out.push(Rollout {
            old: new - 1,
            new,
            assigned_to_started,
            assigned_to_old_stopped,
        });
    }
    out
}

/// Every revision restart in `tl`: a revision whose replicas were assigned in more than one set.
pub fn restarts(tl: &Timeline) -> Vec<Restart> {
    let mut out = Vec::new();
    for (k, rev) in tl.revisions.iter().enumerate() {
        if rev.sets.len() < 2 {
            continue;
        }
        let old: Vec<usize> = rev.sets[0].clone();
        let new: Vec<usize> = rev.sets[1..].iter().flatten().copied().collect();
        let mut old_stops: Vec<f64> = old
            .iter()
            .filter_map(|&i| stop_of(&rev.replicas[i]))
            .collect();
        old_stops.sort_by(f64::total_cmp);
        let assigned: Vec<f64> = new
            .iter()
            .filter_map(|&i| rev.replicas[i].first("AssigningReplica"))
            .collect();
        let started: Vec<Option<f64>> = new
            .iter()
            .map(|&i| rev.replicas[i].first("ContainerStarted"))
            .collect();
        out.push(Restart {
            rev: k,
            assigned_to_started: assigned
                .iter()
                .zip(&started)
                .filter_map(|(a, s)| Some(s.as_ref()? - a))
                .collect(),
            step_interval: assigned.windows(2).map(|w| w[1] - w[0]).collect(),
            started_to_old_stopped: started
                .iter()
                .zip(&old_stops)
                .filter_map(|(s, o)| Some(o - s.as_ref()?))
                .collect(),
            old_count: old.len(),
            replacements: new.len(),
        });
    }
    out
}

/// The median of `xs` (NaN when empty).
pub fn median(xs: &[f64]) -> f64 {
    let mut v: Vec<f64> = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

pub fn min_max(xs: &[f64]) -> (f64, f64) {
    xs.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(*x), hi.max(*x))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: &str, reason: &str, rev: &str, rep: &str, log: &str) -> Value {
        serde_json::json!({"TimeGenerated": t, "Reason_s": reason, "RevisionName_s": rev,
            "ReplicaName_s": rep, "Log_s": log, "TableName": "PrimaryResult"})
    }

    #[test]
    fn names_and_times_are_normalised_and_terminations_refined() {
        let stop =
            "Container 'subject' was terminated with exit code '' and reason 'ManuallyStopped'";
        let rows = serde_json::json!([
            row(
                "2026-06-12T14:20:52.6048993Z",
                "ContainerTerminated",
                "a--x",
                "a--x-1",
                stop
            ),
            row(
                "2026-06-12T14:19:30.7727247Z",
                "AssigningReplica",
                "a--y",
                "a--y-1",
                ""
            ),
            row(
                "2026-06-12T14:19:00Z",
                "AssigningReplica",
                "a--x",
                "a--x-1",
                ""
            ),
            row(
                "2026-06-12T14:19:46.5992499Z",
                "ContainerStarted",
                "a--y",
                "a--y-1",
                ""
            ),
            row("2026-06-12T14:19:47Z", "ProbeFailed", "a--y", "a--y-1", ""),
        ]);
        let rows = rows_from_export(&rows.to_string()).unwrap();
        let tl = timeline(&rows);
        assert_eq!(tl.revisions.len(), 2);
        assert_eq!(tl.revisions[0].replicas[0].label, "R0/p0");
        assert_eq!(
            tl.revisions[0].replicas[0].kinds(),
            vec!["AssigningReplica", "ContainerTerminated:ManuallyStopped"]
        );
        assert_eq!(
            tl.revisions[1].replicas[0].kinds(),
            vec!["AssigningReplica", "ContainerStarted"],
            "ProbeFailed is not a compared reason"
        );
        let r = rollouts(&tl);
        assert_eq!(r.len(), 1);
        assert!((r[0].assigned_to_started[0] - 15.8265252).abs() < 1e-5);
        assert!((r[0].assigned_to_old_stopped[0] - 81.8321746).abs() < 1e-5);
        assert!(rows_from_export("{}").is_err());
        assert!(rows_from_export(r#"[{"TimeGenerated":"yesterday"}]"#).is_err());
    }
}
