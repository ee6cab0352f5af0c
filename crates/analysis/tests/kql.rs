//! The KQL pack (evidence/kql/*.kql): one query per table, and every field a query reads from
//! `parse_json(Log_s)` is one our images really print (checked against logline's serde types by
//! a round trip: fields the types do not know are dropped on the way).
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use analysis::{Options, analyze};
use serde_json::Value;

fn kql_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../evidence/kql")
}

/// One complete example per kind, every optional field set.
fn examples() -> Vec<Value> {
    let ts = "2026-06-12T14:18:20.123Z";
    serde_json::from_str::<Vec<Value>>(&format!(
        r#"[
        {{"kind":"bucket","ts":"{ts}","run_id":"r","perturbation_id":"p","window_s":10,
          "bucket_start_epoch_s":1,"bucket_start_iso":"x","count":1,"ok":1,"err":0,"err_pct":0.0,
          "target_rps":1.0,"scenario":"main","dropped":0,"p50_ms":1.0,"p95_ms":1.0,"p99_ms":1.0,
          "max_ms":1.0,"send_p50_ms":1.0,"send_p99_ms":1.0,"status":{{"200":1}},
          "errors":{{"reset":1}},"served_by":{{"a":1}}}},
        {{"kind":"req","ts":"{ts}","run_id":"r","perturbation_id":"p","scenario":"main",
          "scheduled_ts":"{ts}","code":200,"dur_ms":1.0,"send_dur_ms":1.0,"ok":true,
          "err_class":"reset","err_msg":"m","revision":"a","replica":"b"}},
        {{"kind":"step","ts":"{ts}","run_id":"r","perturbation_id":"p","step":1,"target_rps":1.0,
          "duration_s":1.0,"count":1,"ok":1,"err":0,"dropped":0,"achieved_rps":1.0,
          "p50_ms":1.0,"p95_ms":1.0,"p99_ms":1.0}},
        {{"kind":"RevisionStateSample","ts":"{ts}","run_id":"r","perturbation_id":"p",
          "sampler":"s","tick":1,"app":"a","revision":"r","active":true,"replicas":1,
          "traffic_weight":100,"provisioning_state":"Provisioned","health_state":"Healthy",
          "running_state":"Running","created_time":"t","last_active_time":"t"}},
        {{"kind":"ReplicaInventorySample","ts":"{ts}","run_id":"r","perturbation_id":"p",
          "sampler":"s","tick":1,"app":"a","revision":"r","replica":"x","running_state":"Running",
          "created_time":"t","containers":[{{"name":"c","ready":true,"started":true,
          "restart_count":0,"running_state":"Running"}}]}},
        {{"kind":"JobExecutionSample","ts":"{ts}","run_id":"r","perturbation_id":"p",
          "sampler":"s","tick":1,"job":"j","execution":"j-abc1234","status":"Failed",
          "start_time":"t","end_time":"t"}},
        {{"kind":"PerturbationWindowMarker","ts":"{ts}","run_id":"r","perturbation_id":"p",
          "sampler":"s","phase":"start","apps":["a"],"interval_s":1.0,"duration_s":1.0,
          "ticks_scheduled":1,"ticks_completed":1}},
        {{"kind":"subject","ts":"{ts}","event":"SIGTERM_RECEIVED","app":"a","revision":"r",
          "replica":"x","generation":"g","method":"GET","path":"/","status":200,"dur_ms":1.0,
          "inflight":1,"probe":"liveness","target":"t","simulation":"zombie",
          "shutdown_mode":"graceful","detail":"d","config":{{}}}}
    ]"#
    ))
    .unwrap()
}

/// kind -> the top-level fields our types print for it.
fn printed_fields() -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    for ex in examples() {
        let kind = ex["kind"].as_str().unwrap().to_owned();
        let line = logline::Line::from_json(&ex.to_string()).unwrap();
        let back: Value = serde_json::from_str(&line.to_json()).unwrap();
        let keys: BTreeSet<String> = back.as_object().unwrap().keys().cloned().collect();
        let sent: BTreeSet<String> = ex.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            keys, sent,
            "example for {kind} must list exactly the printed fields"
        );
        out.insert(kind, keys);
    }
    out
}

const TABLE_COLUMNS: &[&str] = &[
    "TimeGenerated",
    "ContainerAppName_s",
    "JobName_s",
    "ExecutionName_s",
    "RevisionName_s",
    "ContainerGroupName_s",
    "ContainerName_s",
    "Stream_s",
    "Log_s",
    "ReplicaName_s",
    "Reason_s",
    "Type_s",
    "EventSource_s",
];

/// `d.field` and `d["field"]` references in a query.
fn d_fields(q: &str) -> BTreeSet<String> {
    let b = q.as_bytes();
    let mut out = BTreeSet::new();
    for i in 0..b.len().saturating_sub(2) {
        let before_ok = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if b[i] != b'd' || !before_ok {
            continue;
        }
        let rest = &q[i + 1..];
        let name: String = if let Some(r) = rest.strip_prefix('.') {
            r.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        } else if let Some(r) = rest.strip_prefix("[\"") {
            r.chars().take_while(|c| *c != '"').collect()
        } else {
            continue;
        };
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

fn quoted(q: &str) -> Vec<String> {
    q.split('"').skip(1).step_by(2).map(str::to_owned).collect()
}

#[test]
fn every_table_has_a_query_file() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let a = analyze(
        &[fixtures.join("k-consecutive.ndjson")],
        &Options::default(),
    )
    .unwrap();
    assert!(a.tables.len() >= 12);
    for t in &a.tables {
        let p = kql_dir().join(format!("{}.kql", t.name));
        assert!(
            p.is_file(),
            "missing KQL for table {}: {}",
            t.name,
            p.display()
        );
    }
}

#[test]
fn queries_read_only_fields_our_images_print() {
    let printed = printed_fields();
    let all_fields: BTreeSet<&String> = printed.values().flatten().collect();
    let mut n = 0;
    for entry in std::fs::read_dir(kql_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("kql") {
            continue;
        }
        n += 1;
        let q = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            q.starts_with("//"),
            "{name}: starts with a comment saying what it answers"
        );
        let kinds: Vec<String> = quoted(&q)
            .into_iter()
            .filter(|s| printed.contains_key(s))
            .collect();
        let fields = d_fields(&q);
        if !fields.is_empty() {
            assert!(
                q.contains("parse_json(Log_s)"),
                "{name}: reads our lines with parse_json(Log_s)"
            );
            assert!(
                !q.contains("msg="),
                "{name}: no logfmt unwrap for our schema"
            );
            assert!(!kinds.is_empty(), "{name}: names the kind(s) it reads");
        }
        let allowed: BTreeSet<&String> = kinds.iter().flat_map(|k| &printed[k]).collect();
        for f in &fields {
            assert!(
                allowed.contains(f) || (kinds.is_empty() && all_fields.contains(f)),
                "{name}: d.{f} is not printed by kind(s) {kinds:?}"
            );
        }
        // Subject event names are real.
        for s in quoted(&q) {
            if !s.is_empty() && s.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
                let e: Result<logline::line::SubjectEvent, _> =
                    serde_json::from_value(Value::String(s.clone()));
                assert!(e.is_ok(), "{name}: {s} is not a subject event");
            }
        }
        // Table columns are Log Analytics' names.
        for word in q.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if word.ends_with("_s") && word.chars().next().is_some_and(char::is_uppercase) {
                assert!(
                    TABLE_COLUMNS.contains(&word),
                    "{name}: unknown column {word}"
                );
            }
        }
    }
    assert!(n >= 12, "{n} query files");
}

#[test]
fn the_field_check_can_fail() {
    assert!(d_fields(r#"d.nope, d["count"], tod.x"#).contains("nope"));
    assert!(!printed_fields()["req"].contains("nope"));
}

/// The weight-change rows of q3-revision-timeline.kql follow the analysis's rule
/// (`platform::weight_changes`): consecutive samples of one (perturbation_id, app, revision) in
/// time order whose traffic_weight differs, the later one kept; and their `detail` is the text
/// `platform::weight_detail` writes (the query's `strcat` evaluated here on one change). No KQL
/// engine runs in the tests, so this pins the query's text to the Rust rule.
#[test]
fn q3_query_finds_weight_changes_as_the_analysis_does() {
    let q = std::fs::read_to_string(kql_dir().join("q3-revision-timeline.kql")).unwrap();
    let flat: String = q.split_whitespace().collect::<Vec<_>>().join(" ");
    for part in [
        r#"where kind == "RevisionStateSample" | sort by perturbation_id asc, app asc, revision asc, ts asc"#,
        "extend from_weight = prev(traffic_weight),",
        "same_revision = perturbation_id == prev(perturbation_id) and app == prev(app) and revision == prev(revision)",
        "where same_revision and traffic_weight != from_weight",
        r#"project ts, perturbation_id, kind = "transition", app, revision, traffic_weight,"#,
        "union rows, weight_changes",
    ] {
        assert!(flat.contains(part), "q3 query lacks {part:?}");
    }
    // Evaluate the detail's strcat: string literals and the three columns it names.
    let at = flat.find("detail = strcat(").unwrap() + "detail = strcat(".len();
    let args = &flat[at..at + flat[at..].find(");").unwrap()];
    let mut detail = String::new();
    let mut rest = args;
    while !rest.is_empty() {
        rest = rest.trim_start_matches([',', ' ']);
        if let Some(r) = rest.strip_prefix('"') {
            let end = r.find('"').unwrap();
            detail.push_str(&r[..end]);
            rest = &r[end + 1..];
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            detail.push_str(match rest[..end].trim() {
                "revision" => "subject--canary",
                "from_weight" => "0",
                "traffic_weight" => "10",
                other => panic!("strcat names {other:?}"),
            });
            rest = &rest[end..];
        }
    }
    assert_eq!(
        detail,
        analysis::judge::platform::weight_detail("subject--canary", 0, 10)
    );
}
