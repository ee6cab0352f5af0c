//! What the platform did, as tables built from the event streams: Q3 revision timeline, Q4
//! replica inventory and Q7 system events here; error forensics (errors set beside the platform's
//! events) in `forensics`; the extra analyses the write-ups did by hand (preflight headroom,
//! cutover, in-flight cut-offs, restart cadence) in `extra`. "Timeline" alone means the chart
//! ([`crate::render::timeline_svg`]).

use std::collections::{BTreeMap, BTreeSet};

use logline::line::RevisionStateSample;
use serde_json::{Value, json};

use crate::judge::events::Event;
use crate::read::model::Acc;
use crate::read::wording::{probe_type, termination_reason};
use crate::table::{Table, num};
use crate::ts::iso_ms;

mod extra;
mod forensics;

pub use extra::{cutover, headroom, inflight, restart_cadence};
pub use forensics::{FORENSICS_MARGIN_MS, MAX_FORENSICS_ROWS, forensics};

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
    let what = if crate::judge::events::makes_revision(&e.kind) {
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
    let mut apps: BTreeMap<&str, Vec<&logline::line::ReplicaInventorySample>> = BTreeMap::new();
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
