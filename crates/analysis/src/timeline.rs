//! Tables built from the event streams: Q3 revision timeline, Q4 replica inventory, Q7 system
//! events, error forensics, and the extra analyses the write-ups did by hand (preflight headroom,
//! cutover, in-flight cut-offs, restart cadence).

use std::collections::{BTreeMap, BTreeSet};

use labkit::event::{RevisionStateSample, SubjectEvent};
use serde_json::{Value, json};

use crate::events::Event;
use crate::evidence::{Level, Statement};
use crate::lab::LabFile;
use crate::model::{Acc, FailedReq, SystemEvent};
use crate::rule::BucketRow;
use crate::runs::RunsRecord;
use crate::table::{Table, num};
use crate::ts::{iso_ms, iso_s};
use crate::verdict::{DEFAULT_HEADROOM_FACTOR, staircases};
use crate::wording::{probe_type, termination_reason, terminations};

/// Seconds around an errored window searched for events (the write-up's ±30 s).
pub const FORENSICS_MARGIN_MS: i64 = 30_000;
/// Forensics rows kept (windows with errors beyond it are counted in the report).
pub const MAX_FORENSICS_ROWS: usize = 500;

fn opt(s: &Option<String>) -> Value {
    s.as_ref().map_or(Value::Null, |v| json!(v))
}

/// A transition: the new revision's first sample → first sample where it is the only revision
/// active with traffic.
#[derive(Clone, Debug)]
pub struct Transition {
    pub perturbation_id: String,
    pub app: String,
    pub old: Vec<String>,
    pub new: String,
    pub first_seen_ms: i64,
    pub alone_ms: Option<i64>,
}

fn snapshot_key(s: &RevisionStateSample) -> i64 {
    s.tick.map_or(s.ts.epoch_ms(), |t| t as i64)
}

/// Transitions per (perturbation_id, app) from the revision samples.
pub fn transitions(acc: &Acc) -> Vec<Transition> {
    let mut groups: BTreeMap<(String, String), Vec<&RevisionStateSample>> = BTreeMap::new();
    for s in &acc.rev_samples {
        let p = s.perturbation_id.clone().unwrap_or_else(|| "none".into());
        groups.entry((p, s.app.clone())).or_default().push(s);
    }
    let mut out = Vec::new();
    for ((p, app), samples) in groups {
        // Snapshots in time order.
        let mut snaps: Vec<(i64, i64, Vec<&RevisionStateSample>)> = Vec::new();
        for s in samples {
            let k = snapshot_key(s);
            match snaps.iter_mut().find(|x| x.0 == k) {
                Some(x) => x.2.push(s),
                None => snaps.push((k, s.ts.epoch_ms(), vec![s])),
            }
        }
        snaps.sort_by_key(|x| x.1);
        let Some(first) = snaps.first() else { continue };
        let initial: BTreeSet<String> = first.2.iter().map(|s| s.revision.clone()).collect();
        let mut new: Option<(String, i64)> = None;
        for (_, ts, ss) in &snaps {
            if let Some(s) = ss.iter().find(|s| !initial.contains(&s.revision)) {
                new = Some((s.revision.clone(), *ts));
                break;
            }
        }
        let Some((new_rev, first_seen)) = new else {
            continue;
        };
        let alone = snaps.iter().find_map(|(_, ts, ss)| {
            let mine = ss
                .iter()
                .any(|s| s.revision == new_rev && s.active && s.traffic_weight > 0);
            let others = ss
                .iter()
                .any(|s| s.revision != new_rev && s.active && s.traffic_weight > 0);
            (*ts >= first_seen && mine && !others).then_some(*ts)
        });
        out.push(Transition {
            perturbation_id: p,
            app,
            old: initial.into_iter().collect(),
            new: new_rev,
            first_seen_ms: first_seen,
            alone_ms: alone,
        });
    }
    out
}

/// A traffic-weight change of one revision: consecutive samples of it (same perturbation id,
/// app and revision, in time order) whose `traffic_weight` differs.
#[derive(Clone, Debug, PartialEq)]
pub struct WeightChange {
    pub perturbation_id: String,
    pub app: String,
    pub revision: String,
    /// The weight of the sample before.
    pub from: u32,
    /// The new weight.
    pub to: u32,
    /// The first sample showing the new weight.
    pub ts_ms: i64,
}

/// Every traffic-weight change of a revision in the samples (the twin of the weight rows of
/// `evidence/kql/q3-revision-timeline.kql`). A revision's first sample is no change: its
/// appearance is the rollout transition's.
pub fn weight_changes(acc: &Acc) -> Vec<WeightChange> {
    let mut groups: BTreeMap<(String, String, String), Vec<&RevisionStateSample>> = BTreeMap::new();
    for s in &acc.rev_samples {
        let p = s.perturbation_id.clone().unwrap_or_else(|| "none".into());
        groups
            .entry((p, s.app.clone(), s.revision.clone()))
            .or_default()
            .push(s);
    }
    let mut out = Vec::new();
    for ((p, app, revision), mut samples) in groups {
        samples.sort_by_key(|s| s.ts.epoch_ms());
        for w in samples.windows(2) {
            if w[0].traffic_weight != w[1].traffic_weight {
                out.push(WeightChange {
                    perturbation_id: p.clone(),
                    app: app.clone(),
                    revision: revision.clone(),
                    from: w[0].traffic_weight,
                    to: w[1].traffic_weight,
                    ts_ms: w[1].ts.epoch_ms(),
                });
            }
        }
    }
    out
}

/// Q3: the revision timeline per perturbation, with transition rows: one per fired event of
/// `runs.json` when there are any (its rollout transition or restart replica turnover, or why
/// there is none), else one per (perturbation id, app) with a new revision in the samples; and
/// one per traffic-weight change of a revision ([`weight_changes`]), with or without events.
pub fn q3(acc: &Acc, events: &[Event]) -> Table {
    let mut t = Table::new(
        "q3-revision-timeline",
        "Q3: revision samples and window markers per perturbation, with transitions",
        &[
            "perturbation_id",
            "ts",
            "row_type",
            "app",
            "revision",
            "active",
            "replicas",
            "traffic_weight",
            "provisioning_state",
            "running_state",
            "detail",
        ],
    );
    let mut rows: Vec<Q3Row> = Vec::new();
    q3_sample_rows(acc, &mut rows);
    q3_marker_rows(acc, &mut rows);
    rows.extend(events.iter().map(q3_event_row));
    if events.is_empty() {
        rows.extend(transitions(acc).iter().map(q3_transition_row));
    }
    rows.extend(weight_changes(acc).iter().map(q3_weight_row));
    rows.sort_by(|a, b| (&a.0, a.1, a.2).cmp(&(&b.0, b.1, b.2)));
    for r in rows {
        t.push(r.3);
    }
    t
}

/// A Q3 row with its sort key: perturbation id, time, then markers (0) before samples (1) before
/// transitions (2).
type Q3Row = (String, i64, u8, Vec<Value>);

/// Q3's sample rows: one per revision state sample.
fn q3_sample_rows(acc: &Acc, rows: &mut Vec<Q3Row>) {
    for s in &acc.rev_samples {
        let p = s.perturbation_id.clone().unwrap_or_else(|| "none".into());
        rows.push((
            p.clone(),
            s.ts.epoch_ms(),
            1,
            vec![
                json!(p),
                json!(s.ts.to_rfc3339_ms()),
                json!("sample"),
                json!(s.app),
                json!(s.revision),
                json!(s.active),
                json!(s.replicas),
                json!(s.traffic_weight),
                json!(s.provisioning_state),
                opt(&s.running_state),
                opt(&s.health_state),
            ],
        ));
    }
}

/// Q3's marker rows: one per sampler window marker.
fn q3_marker_rows(acc: &Acc, rows: &mut Vec<Q3Row>) {
    for m in &acc.markers {
        let p = m.perturbation_id.clone().unwrap_or_else(|| "none".into());
        rows.push((
            p.clone(),
            m.ts.epoch_ms(),
            0,
            vec![
                json!(p),
                json!(m.ts.to_rfc3339_ms()),
                json!(format!("marker:{:?}", m.phase).to_lowercase()),
                json!(m.apps.join(",")),
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                opt(&m.sampler),
            ],
        ));
    }
}

/// Q3's transition row of one fired event: its rollout transition or restart turnover, or why
/// there is none.
fn q3_event_row(ev: &Event) -> Q3Row {
    let e = &ev.summary;
    let p = e.perturbation_id.clone().unwrap_or_else(|| "none".into());
    let ts = ev.first_seen_ms.unwrap_or(e.fired_ms);
    let what = if crate::events::makes_revision(&e.kind) {
        format!(
            "from {} to {}: new revision first seen {}, alone with traffic {}",
            ev.old.join(","),
            e.new_revision.as_deref().unwrap_or("?"),
            ev.first_seen_ms
                .map(iso_ms)
                .unwrap_or_else(|| "never".into()),
            ev.done_ms.map(iso_ms).unwrap_or_else(|| "never".into())
        )
    } else if e.kind == "restart" {
        format!(
            "{} restarted: first replacement replica listed {}, no old replica listed {}",
            ev.old.join(","),
            ev.first_seen_ms
                .map(iso_ms)
                .unwrap_or_else(|| "never".into()),
            ev.done_ms.map(iso_ms).unwrap_or_else(|| "never".into())
        )
    } else {
        format!("{} of {}", e.kind, ev.app)
    };
    let detail = format!(
        "{} event {} ({}) fired {}: {what}{}{}",
        e.step,
        e.event,
        e.kind,
        iso_ms(e.fired_ms),
        e.transition_s
            .map(|s| format!(" ({s:.1} s)"))
            .unwrap_or_default(),
        e.problem
            .as_ref()
            .map(|p| format!("; NOT observed: {p}"))
            .unwrap_or_default()
    );
    transition_row(p, ts, &ev.app, json!(e.new_revision), Value::Null, detail)
}

/// A Q3 row of type `transition`: the revision (or null), the new traffic weight when the
/// transition is a weight change (else null), and what happened in `detail`.
fn transition_row(
    pid: String,
    ts_ms: i64,
    app: &str,
    revision: Value,
    weight: Value,
    detail: String,
) -> Q3Row {
    let cells = vec![
        json!(pid),
        json!(iso_ms(ts_ms)),
        json!("transition"),
        json!(app),
        revision,
        Value::Null,
        Value::Null,
        weight,
        Value::Null,
        Value::Null,
        json!(detail),
    ];
    (pid, ts_ms, 2, cells)
}

/// Q3's transition row of one new revision seen in the samples (without `runs.json` events).
fn q3_transition_row(tr: &Transition) -> Q3Row {
    let secs = tr.alone_ms.map(|a| (a - tr.first_seen_ms) as f64 / 1000.0);
    let detail = match secs {
        Some(s) => format!(
            "from {} to {}: new revision first seen {}, alone with traffic {} ({s:.1} s)",
            tr.old.join(","),
            tr.new,
            iso_ms(tr.first_seen_ms),
            tr.alone_ms.map(iso_ms).unwrap_or_default()
        ),
        None => format!(
            "from {} to {}: new revision first seen {}, never alone with traffic in the samples",
            tr.old.join(","),
            tr.new,
            iso_ms(tr.first_seen_ms)
        ),
    };
    transition_row(
        tr.perturbation_id.clone(),
        tr.first_seen_ms,
        &tr.app,
        json!(tr.new),
        Value::Null,
        detail,
    )
}

/// Q3's transition row of one traffic-weight change: the revision, its new weight in
/// `traffic_weight`, both weights in `detail`, at the first sample showing the new weight.
fn q3_weight_row(w: &WeightChange) -> Q3Row {
    transition_row(
        w.perturbation_id.clone(),
        w.ts_ms,
        &w.app,
        json!(w.revision),
        json!(w.to),
        weight_detail(&w.revision, w.from, w.to),
    )
}

/// The `detail` of a weight-change row; the KQL twin builds the same text with `strcat`.
pub fn weight_detail(revision: &str, from: u32, to: u32) -> String {
    format!(
        "traffic weight of {revision} from {from} % to {to} %: first sample with the new weight"
    )
}

/// Q4: replica inventory per app.
pub fn q4(acc: &Acc) -> Table {
    let mut t = Table::new(
        "q4-replica-inventory",
        "Q4: replica inventory per app",
        &[
            "app",
            "samples",
            "running_pct",
            "unique_replicas",
            "unique_revisions",
            "max_restart_count",
            "first",
            "last",
        ],
    );
    let mut apps: BTreeMap<&str, Vec<&labkit::event::ReplicaInventorySample>> = BTreeMap::new();
    for s in &acc.replica_samples {
        apps.entry(s.app.as_str()).or_default().push(s);
    }
    for (app, ss) in apps {
        let running = ss
            .iter()
            .filter(|s| s.running_state.eq_ignore_ascii_case("running"))
            .count();
        let replicas: BTreeSet<&str> = ss.iter().map(|s| s.replica.as_str()).collect();
        let revisions: BTreeSet<&str> = ss.iter().map(|s| s.revision.as_str()).collect();
        let restarts = ss
            .iter()
            .flat_map(|s| s.containers.iter().map(|c| c.restart_count))
            .max()
            .unwrap_or(0);
        t.push(vec![
            json!(app),
            json!(ss.len()),
            num(Some(running as f64 * 100.0 / ss.len().max(1) as f64)),
            json!(replicas.len()),
            json!(revisions.len()),
            json!(restarts),
            json!(ss.first().map(|s| s.ts.to_rfc3339_ms())),
            json!(ss.last().map(|s| s.ts.to_rfc3339_ms())),
        ]);
    }
    t
}

/// Q7: the system events timeline and per-app counts (two tables).
pub fn q7(acc: &Acc) -> Table {
    let mut t = Table::new(
        "q7-system-events",
        "Q7: system events timeline, then per-app counts (row_type=count)",
        &[
            "row_type", "ts", "app", "revision", "replica", "reason", "type", "detail", "count",
        ],
    );
    for e in &acc.system {
        t.push(vec![
            json!("event"),
            json!(iso_ms(e.ts_ms)),
            json!(e.app),
            json!(e.revision),
            json!(e.replica),
            json!(e.reason),
            json!(e.kind),
            json!(e.msg),
            Value::Null,
        ]);
    }
    let mut counts: BTreeMap<(String, String, String), u64> = BTreeMap::new();
    let mut started: BTreeMap<(String, String), u64> = BTreeMap::new();
    for e in &acc.system {
        match e.reason.as_str() {
            "ProbeFailed" => {
                *counts
                    .entry((e.app.clone(), "ProbeFailed".into(), probe_type(&e.msg)))
                    .or_insert(0) += 1
            }
            "ContainerTerminated" => {
                *counts
                    .entry((
                        e.app.clone(),
                        "ContainerTerminated".into(),
                        termination_reason(&e.msg),
                    ))
                    .or_insert(0) += 1
            }
            "ContainerStarted" => {
                *started
                    .entry((e.app.clone(), e.replica.clone()))
                    .or_insert(0) += 1
            }
            other => {
                *counts
                    .entry((e.app.clone(), other.to_owned(), String::new()))
                    .or_insert(0) += 1
            }
        }
    }
    let mut restarts: BTreeMap<String, u64> = BTreeMap::new();
    for ((app, _), n) in started {
        *restarts.entry(app).or_insert(0) += n.saturating_sub(1);
    }
    for ((app, reason, detail), n) in counts {
        t.push(vec![
            json!("count"),
            Value::Null,
            json!(app),
            Value::Null,
            Value::Null,
            json!(reason),
            Value::Null,
            json!(detail),
            json!(n),
        ]);
    }
    for (app, n) in restarts {
        t.push(vec![
            json!("count"),
            Value::Null,
            json!(app),
            Value::Null,
            Value::Null,
            json!("restarts"),
            Value::Null,
            json!("ContainerStarted on a replica after its first"),
            json!(n),
        ]);
    }
    t
}

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

/// Preflight headroom: every staircase step, the step at the lab's load rate and the step just
/// below it (matched by rate), and their p50 ratio against the factor.
pub fn headroom(acc: &Acc, lab: &LabFile, runs: Option<&RunsRecord>) -> Table {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(app: &str, reason: &str) -> SystemEvent {
        SystemEvent {
            ts_ms: 0,
            app: app.into(),
            revision: format!("{app}--r1"),
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
