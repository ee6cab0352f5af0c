//! The analyses the write-ups did by hand: preflight headroom, cutover, in-flight cut-offs and
//! restart cadence, each a table.

use std::collections::BTreeMap;

use lab::Lab;
use logline::line::SubjectEvent;
use serde_json::{Value, json};

use super::opt;
use crate::judge::verdict::{DEFAULT_HEADROOM_FACTOR, staircases};
use crate::read::evidence::{Level, Statement};
use crate::read::model::Acc;
use crate::read::runs::RunsRecord;
use crate::read::wording::terminations;
use crate::table::{Table, num};
use crate::ts::iso_ms;

/// Preflight headroom: every staircase step, the step at the lab's load rate and the step just
/// below it (matched by rate), and their p50 ratio against the factor.
pub fn headroom(acc: &Acc, lab: &Lab, runs: Option<&RunsRecord>) -> Table {
    let factor = lab
        .preconditions
        .headroom_factor
        .unwrap_or(DEFAULT_HEADROOM_FACTOR);
    let mut t = Table::new(
        "preflight-headroom",
        &format!(
            "Preflight headroom: p50 at the lab's load rate / p50 at the step below it, must be >= {factor}"
        ),
        &[
            "run_id",
            "step",
            "target_rps",
            "achieved_rps",
            "count",
            "err",
            "dropped",
            "p50_ms",
            "p99_ms",
            "role",
            "p50_ratio_to_step_below",
            "meets_factor",
        ],
    );
    let stairs = staircases(acc, lab, runs);
    for s in &acc.steps {
        let run = s.run_id.clone().unwrap_or_default();
        let st = stairs.iter().find(|x| x.run_id == run);
        let is = |p: Option<(f64, f64)>| p.is_some_and(|(r, _)| r == s.target_rps);
        let role = match st {
            Some(x) if is(x.at) => "lab rate",
            Some(x) if is(x.below) => "step below",
            _ => "",
        };
        let ratio = st.filter(|_| role == "lab rate").and_then(|x| x.ratio);
        t.push(vec![
            opt(&s.run_id),
            json!(s.step),
            num(Some(s.target_rps)),
            num(Some(s.achieved_rps)),
            json!(s.count),
            json!(s.err),
            json!(s.dropped),
            num(s.p50_ms),
            num(s.p99_ms),
            json!(role),
            num(ratio),
            ratio.map_or(Value::Null, |r| json!(r >= factor)),
        ]);
    }
    t
}

/// Cutover per run: each revision's first and last response, share, and the overlap with the
/// next revision (from `req` lines; from bucket `served_by` maps when there are none).
pub fn cutover(acc: &Acc) -> Table {
    let mut t = Table::new(
        "cutover",
        "Cutover: first/last response per revision, share, overlap with the next revision",
        &[
            "run_id",
            "scenario",
            "revision",
            "first_response",
            "last_response",
            "responses",
            "share_pct",
            "overlap_with_next_s",
            "basis",
        ],
    );
    for run in &acc.runs {
        let mut spans: Vec<(String, i64, i64, u64)> = run
            .revisions
            .iter()
            .map(|(k, s)| (k.clone(), s.first_ms, s.last_ms, s.count))
            .collect();
        let mut basis = "req";
        if spans.is_empty() {
            basis = "bucket served_by (window starts)";
            let mut m: BTreeMap<String, (i64, i64, u64)> = BTreeMap::new();
            for (&start, w) in &run.buckets {
                for (rev, &n) in &w.served_by {
                    if n == 0 || rev == "unknown" {
                        continue;
                    }
                    let e = m.entry(rev.clone()).or_insert((start, start, 0));
                    e.0 = e.0.min(start);
                    e.1 = e.1.max(start);
                    e.2 += n;
                }
            }
            spans = m.into_iter().map(|(k, (a, b, n))| (k, a, b, n)).collect();
        }
        if spans.is_empty() {
            continue;
        }
        spans.sort_by_key(|s| s.1);
        let total: u64 = spans.iter().map(|s| s.3).sum();
        for (i, s) in spans.iter().enumerate() {
            let overlap = spans.get(i + 1).map(|n| (s.2 - n.1) as f64 / 1000.0);
            t.push(vec![
                json!(run.run_id),
                json!(run.scenario),
                json!(s.0),
                json!(iso_ms(s.1)),
                json!(iso_ms(s.2)),
                json!(s.3),
                num(Some(s.3 as f64 * 100.0 / total.max(1) as f64)),
                num(overlap),
                json!(basis),
            ]);
        }
    }
    t
}

/// In-flight cut-offs: failed side-stream requests, the revision they started on, and how long
/// after the nearest preceding SIGTERM / deactivation they failed.
pub fn inflight(acc: &Acc, cap: Option<Level>, statements: &mut Vec<Statement>) -> Table {
    let mut t = Table::new(
        "inflight-cutoffs",
        "In-flight cut-offs: failed side-stream requests vs SIGTERM / deactivation",
        &[
            "run_id",
            "scenario",
            "scheduled",
            "failed_at",
            "revision",
            "replica",
            "code",
            "err_class",
            "dur_ms",
            "preceding_event",
            "seconds_after_event",
        ],
    );
    let mut n = 0u64;
    for f in acc.failed.iter().filter(|f| f.scenario != "main") {
        // Candidate events: SIGTERM_RECEIVED of the same replica/revision, RevisionDeactivating
        // or ContainerTerminated of the same revision/replica, at or before the failure.
        let mut best: Option<(i64, String)> = None;
        for s in &acc.subject {
            if s.event != SubjectEvent::SigtermReceived {
                continue;
            }
            let same = f.replica.as_deref() == Some(s.replica.as_str())
                || f.revision.as_deref() == Some(s.revision.as_str());
            let ms = s.ts.epoch_ms();
            if same && ms <= f.ts_ms && best.as_ref().is_none_or(|b| ms > b.0) {
                best = Some((ms, format!("SIGTERM_RECEIVED {}", s.replica)));
            }
        }
        for e in &acc.system {
            let same = f.replica.as_deref() == Some(e.replica.as_str())
                || f.revision.as_deref() == Some(e.revision.as_str());
            let cut = matches!(
                e.reason.as_str(),
                "RevisionDeactivating" | "ContainerTerminated"
            );
            if same && cut && e.ts_ms <= f.ts_ms && best.as_ref().is_none_or(|b| e.ts_ms > b.0) {
                best = Some((e.ts_ms, format!("{} {}", e.reason, e.replica)));
            }
        }
        let after = best.as_ref().map(|b| (f.ts_ms - b.0) as f64 / 1000.0);
        n += 1;
        t.push(vec![
            json!(f.run_id),
            json!(f.scenario),
            json!(iso_ms(f.scheduled_ms)),
            json!(iso_ms(f.ts_ms)),
            json!(f.revision),
            json!(f.replica),
            json!(f.code),
            json!(f.err_class),
            num(Some(f.dur_ms)),
            json!(best.as_ref().map(|b| b.1.clone())),
            num(after),
        ]);
    }
    if n > 0 {
        statements.push(Statement::new(
            Level::Correlated.capped(cap),
            format!("{n} side-stream request(s) failed in flight; see inflight-cutoffs for the preceding SIGTERM / deactivation of their revision."),
        ));
    }
    t
}

/// Restart cadence per app: intervals between consecutive restarts (`ContainerTerminated` rows
/// that [`terminations`] counts as restarts).
pub fn restart_cadence(acc: &Acc) -> Table {
    let mut t = Table::new(
        "restart-cadence",
        "Restart cadence: seconds between consecutive restarts (ContainerTerminated ProbeFailure or non-zero exit) per app",
        &[
            "app",
            "restarts",
            "min_interval_s",
            "median_interval_s",
            "max_interval_s",
            "first",
            "last",
        ],
    );
    let mut by_app: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    let kinds = terminations(&acc.system);
    for (i, t) in &kinds {
        if t.is_restart() {
            let e = &acc.system[*i];
            by_app.entry(e.app.as_str()).or_default().push(e.ts_ms);
        }
    }
    for (app, ts) in by_app {
        let mut iv: Vec<f64> = ts
            .windows(2)
            .map(|w| (w[1] - w[0]) as f64 / 1000.0)
            .collect();
        iv.sort_by(f64::total_cmp);
        t.push(vec![
            json!(app),
            json!(ts.len()),
            num(iv.first().copied()),
            num(iv.get(iv.len() / 2).copied()),
            num(iv.last().copied()),
            json!(ts.first().map(|m| iso_ms(*m))),
            json!(ts.last().map(|m| iso_ms(*m))),
        ]);
    }
    t
}
