//! Error forensics: for every window with errors, the failed requests, system events and
//! sampler states around it, and an attribution capped by the lab's evidence level.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::snapshot_key;
use crate::judge::rule::BucketRow;
use crate::read::evidence::{Level, Statement};
use crate::read::model::{Acc, FailedReq, SystemEvent};
use crate::table::{Table, num};
use crate::ts::iso_s;

/// Seconds around an errored window searched for events (the write-up's ±30 s).
pub const FORENSICS_MARGIN_MS: i64 = 30_000;

/// Forensics rows kept (windows with errors beyond it are counted in the report).
pub const MAX_FORENSICS_ROWS: usize = 500;

/// Revisions with traffic at the last revision sample at or before `ms`, per app.
fn traffic_at(acc: &Acc, ms: i64) -> Vec<String> {
    let Some(last) = acc.rev_samples.iter().rev().find(|s| s.ts.epoch_ms() <= ms) else {
        return Vec::new();
    };
    let k = snapshot_key(last);
    acc.rev_samples
        .iter()
        .filter(|s| snapshot_key(s) == k && s.active && s.traffic_weight > 0)
        .map(|s| format!("{}/{}={}%", s.app, s.revision, s.traffic_weight))
        .collect()
}

fn is_platform_cut(e: &SystemEvent) -> bool {
    matches!(
        e.reason.as_str(),
        "ContainerTerminated" | "RevisionDeactivating" | "ProbeFailed" | "ReplicaUnhealthy"
    )
}

/// Error forensics: for every window with errors, the failed requests, system events and
/// sampler states within ±30 s, and an attribution capped by the lab. `targets` names the app
/// each load run (by run_id) targets, where the lab and runs.json say: a window is then
/// attributed only to that app's events (in a lab of several apps another app's restart is no
/// cause), while every event nearby is still listed.
pub fn forensics(
    acc: &Acc,
    q2: &[BucketRow],
    q2_name: &str,
    cap: Option<Level>,
    targets: &BTreeMap<String, String>,
) -> (Table, Vec<Statement>) {
    let mut t = Table::new(
        "forensics-error-buckets",
        "Error forensics: every window with errors and what happened within ±30 s",
        &[
            "q2_row",
            "run_id",
            "scenario",
            "bucket_start",
            "count",
            "err",
            "err_pct",
            "failed_requests",
            "system_events",
            "traffic",
            "attribution",
            "level",
        ],
    );
    let mut statements = Vec::new();
    let wms = acc.window_ms;
    for (i, r) in q2.iter().enumerate().filter(|(_, r)| r.err > 0) {
        if t.rows.len() >= MAX_FORENSICS_ROWS {
            break;
        }
        let (a, b) = (r.start_ms, r.start_ms + wms);
        let failed: Vec<&FailedReq> = acc
            .failed
            .iter()
            .filter(|f| {
                f.run_id == r.run_id && f.scenario == r.scenario && f.ts_ms >= a && f.ts_ms < b
            })
            .collect();
        let events: Vec<&SystemEvent> = acc
            .system
            .iter()
            .filter(|e| e.ts_ms >= a - FORENSICS_MARGIN_MS && e.ts_ms < b + FORENSICS_MARGIN_MS)
            .collect();
        let fs = failed_summary(&failed);
        let evs = event_lines(&events);
        let target = targets.get(&r.run_id).map(String::as_str);
        let (attribution, level) = attribute(&failed, &events, (a, b), target, cap);
        statements.push(Statement::new(
            level,
            format!(
                "{} error(s) in {} {} ({}#{i}): {attribution}.",
                r.err,
                r.run_id,
                iso_s(r.start_ms),
                q2_name
            ),
        ));
        t.push(vec![
            json!(format!("{q2_name}#{i}")),
            json!(r.run_id),
            json!(r.scenario),
            json!(iso_s(r.start_ms)),
            json!(r.count),
            json!(r.err),
            num(Some(r.err_pct)),
            json!(fs.join("; ")),
            json!(evs.join(" | ")),
            json!(traffic_at(acc, b).join(",")),
            json!(attribution),
            json!(level.tag()),
        ]);
    }
    (t, statements)
}

/// The failed requests of a window, counted by `code class revision/replica`.
fn failed_summary(failed: &[&FailedReq]) -> Vec<String> {
    let mut fsum: BTreeMap<String, u64> = BTreeMap::new();
    for f in failed {
        let k = format!(
            "{} {} {}/{}",
            f.code.map_or("-".to_owned(), |c| c.to_string()),
            f.err_class.as_deref().unwrap_or("error"),
            f.revision.as_deref().unwrap_or("?"),
            f.replica.as_deref().unwrap_or("?")
        );
        *fsum.entry(k).or_insert(0) += 1;
    }
    fsum.iter().map(|(k, n)| format!("{k} ×{n}")).collect()
}

/// The first 20 system events near a window, one line each (messages cut at 80 characters).
fn event_lines(events: &[&SystemEvent]) -> Vec<String> {
    events
        .iter()
        .take(20)
        .map(|e| {
            let msg: String = e.msg.chars().take(80).collect();
            format!(
                "{} {} {} {}: {}",
                iso_s(e.ts_ms),
                e.reason,
                e.app,
                e.replica,
                msg
            )
        })
        .collect()
}

/// Why the window `[a, b)` failed, as far as the system events near it tell, and the level of
/// that attribution (capped by the lab): a cut of a replica that served failed requests, else
/// the cut nearest the window (of the `target` app, when the window's app is known), else none.
fn attribute(
    failed: &[&FailedReq],
    events: &[&SystemEvent],
    (a, b): (i64, i64),
    target: Option<&str>,
    cap: Option<Level>,
) -> (String, Level) {
    let mut cuts: Vec<&&SystemEvent> = events
        .iter()
        .filter(|e| is_platform_cut(e) && target.is_none_or(|t| e.app == t))
        .collect();
    // Nearest first: inside the window is 0, else the distance to its nearer edge.
    cuts.sort_by_key(|e| (a - e.ts_ms).max(e.ts_ms - (b - 1)).max(0));
    let failed_replicas: BTreeSet<&str> =
        failed.iter().filter_map(|f| f.replica.as_deref()).collect();
    let failed_revisions: BTreeSet<&str> = failed
        .iter()
        .filter_map(|f| f.revision.as_deref())
        .collect();
    let matched = cuts
        .iter()
        .find(|e| !e.replica.is_empty() && failed_replicas.contains(e.replica.as_str()));
    // A revision-wide cut (a deactivation) names no replica.
    let revision_matched = cuts.iter().find(|e| {
        e.replica.is_empty()
            && !e.revision.is_empty()
            && failed_revisions.contains(e.revision.as_str())
    });
    if let Some(e) = matched {
        (
            format!(
                "failed requests were served by replica {} which the platform reported {} at {}",
                e.replica,
                e.reason,
                iso_s(e.ts_ms)
            ),
            Level::Inferred.capped(cap),
        )
    } else if let Some(e) = revision_matched {
        (
            format!(
                "failed requests were served by revision {} which the platform reported {} at {}",
                e.revision,
                e.reason,
                iso_s(e.ts_ms)
            ),
            Level::Inferred.capped(cap),
        )
    } else if let Some(e) = cuts.first() {
        (
            format!(
                "coincides with {} of {} at {} (±30 s)",
                e.reason,
                [e.app.as_str(), e.revision.as_str(), e.replica.as_str()]
                    .iter()
                    .filter(|s| !s.is_empty())
                    .copied()
                    .collect::<Vec<_>>()
                    .join("/"),
                iso_s(e.ts_ms)
            ),
            Level::Correlated.capped(cap),
        )
    } else if !events.is_empty() {
        let whose = target.map(|t| format!(" of {t}")).unwrap_or_default();
        (
            format!("system events nearby, none{whose} that cuts traffic"),
            Level::Observed,
        )
    } else {
        ("no system event within ±30 s".into(), Level::Observed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(app: &str, reason: &str) -> SystemEvent {
        SystemEvent {
            ts_ms: 0,
            app: app.into(),
            revision: format!("{app}--r1"),
            execution: String::new(),
            replica: format!("{app}--r1-x"),
            reason: reason.into(),
            msg: String::new(),
            kind: "Normal".into(),
        }
    }

    /// In a lab of several apps a window is attributed to its own app's cuts only; where the
    /// window's app is not known, to any cut, as before.
    #[test]
    fn a_window_is_attributed_only_to_its_own_apps_cuts() {
        let (other, own) = (cut("two", "ProbeFailed"), cut("one", "ContainerTerminated"));
        let w = (0, 10_000);
        let (text, level) = attribute(&[], &[&other], w, Some("one"), None);
        assert_eq!(level, Level::Observed, "{text}");
        assert_eq!(text, "system events nearby, none of one that cuts traffic");
        let (text, level) = attribute(&[], &[&other, &own], w, Some("one"), None);
        assert_eq!(level, Level::Correlated, "{text}");
        assert!(
            text.starts_with("coincides with ContainerTerminated of one/"),
            "{text}"
        );
        let (text, level) = attribute(&[], &[&other], w, None, None);
        assert_eq!(level, Level::Correlated, "{text}");
        assert!(
            text.starts_with("coincides with ProbeFailed of two/"),
            "{text}"
        );
    }

    /// Failed requests of a revision the platform deactivated nearby are attributed to the
    /// deactivation, before any nearer cut of another revision.
    #[test]
    fn a_deactivation_of_the_failed_requests_revision_is_named() {
        let mut deactivating = cut("one", "RevisionDeactivating");
        deactivating.replica = String::new();
        deactivating.ts_ms = -1_000;
        let mut other = cut("one", "ProbeFailed");
        other.revision = "one--r2".into();
        other.replica = "one--r2-y".into();
        other.ts_ms = 4_000;
        let failed = FailedReq {
            run_id: "r".into(),
            scenario: "main".into(),
            ts_ms: 3_000,
            scheduled_ms: 3_000,
            code: None,
            err_class: Some("reset".into()),
            err_msg: None,
            revision: Some("one--r1".into()),
            replica: Some("one--r1-x".into()),
            dur_ms: 3_000.0,
        };
        let (text, level) = attribute(
            &[&failed],
            &[&other, &deactivating],
            (0, 10_000),
            None,
            None,
        );
        assert_eq!(level, Level::Inferred, "{text}");
        assert!(
            text.starts_with("failed requests were served by revision one--r1 which the platform reported RevisionDeactivating"),
            "{text}"
        );
    }

    /// Of several cuts near a window, the one inside it (else the nearest) is named, not the
    /// earliest: a startup probe failure 30 s before is no cause of a stop inside the window.
    #[test]
    fn the_cut_nearest_the_window_is_named() {
        let mut early = cut("one", "ProbeFailed");
        early.ts_ms = -29_000;
        let mut inside = cut("one", "ContainerTerminated");
        inside.ts_ms = 9_000;
        let mut after = cut("one", "RevisionDeactivating");
        after.ts_ms = 12_000;
        let w = (0, 10_000);
        let (text, _) = attribute(&[], &[&early, &after, &inside], w, None, None);
        assert!(
            text.starts_with("coincides with ContainerTerminated"),
            "{text}"
        );
        let (text, _) = attribute(&[], &[&early, &after], w, None, None);
        assert!(
            text.starts_with("coincides with RevisionDeactivating"),
            "{text}"
        );
        let (text, _) = attribute(&[], &[&early], w, None, None);
        assert!(text.starts_with("coincides with ProbeFailed"), "{text}");
    }
}
