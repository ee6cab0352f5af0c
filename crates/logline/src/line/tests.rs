//! Round-trip and field-name tests for every line kind.

use std::collections::BTreeMap;

use super::*;
use crate::Timestamp;

fn ts() -> Timestamp {
    "2026-06-12T14:18:20.123Z".parse().unwrap()
}

/// One example of every kind, with every optional field filled.
fn examples() -> Vec<Line> {
    let map = |pairs: &[(&str, u64)]| -> BTreeMap<String, u64> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    };
    let pct = loadgen::Percentiles {
        p50_ms: 1.0,
        p90_ms: 2.0,
        p95_ms: 3.0,
        p99_ms: 4.0,
        p999_ms: 5.0,
        max_ms: 6.0,
    };
    vec![
        Meta {
            ts: ts(),
            run_id: Some("baseline-1".into()),
            perturbation_id: Some("none".into()),
            phase: MetaPhase::Start,
            tool: "loadgen".into(),
            version: "0.1.0".into(),
            config: serde_json::json!({"rate": 200}),
        }
        .into(),
        Bucket {
            ts: ts(),
            run_id: Some("perturbation-1".into()),
            perturbation_id: Some("p-1".into()),
            window_s: 10,
            bucket_start_epoch_s: 1_781_273_900,
            bucket_start_iso: "2026-06-12T14:18:20Z".into(),
            count: 2000,
            ok: 1999,
            err: 1,
            err_pct: err_pct(1, 2000),
            target_rps: 200.0,
            scenario: "main".into(),
            dropped: 3,
            p50_ms: Some(6.1),
            p95_ms: Some(17.9),
            p99_ms: Some(25.7),
            max_ms: Some(80.0),
            send_p50_ms: Some(6.0),
            send_p99_ms: Some(25.0),
            status: map(&[("200", 1999), ("503", 1)]),
            errors: map(&[("http_5xx", 1)]),
            served_by: map(&[("app--a", 1000), ("app--b", 999)]),
        }
        .into(),
        Req {
            ts: ts(),
            run_id: Some("r".into()),
            perturbation_id: None,
            scenario: "slow".into(),
            scheduled_ts: ts(),
            code: Some(503),
            dur_ms: 20_001.5,
            send_dur_ms: Some(20_000.0),
            ok: false,
            err_class: Some("http_5xx".into()),
            err_msg: Some("upstream connect error".into()),
            revision: Some("app--a".into()),
            replica: Some("app--a-xyz".into()),
        }
        .into(),
        ClientChange {
            ts: ts(),
            run_id: Some("rollout-x".into()),
            perturbation_id: None,
            scenario: "main".into(),
            client: 7,
            code: Some(200),
            replica: Some("app--b-xyz".into()),
            revision: Some("app--b".into()),
            previous_replica: Some("app--a-xyz".into()),
            set_cookie: vec!["localplane-affinity=app--b-xyz".into()],
        }
        .into(),
        Step {
            ts: ts(),
            run_id: Some("preflight".into()),
            perturbation_id: None,
            step: 2,
            target_rps: 200.0,
            duration_s: 60.0,
            count: 12_000,
            ok: 12_000,
            err: 0,
            dropped: 0,
            achieved_rps: 200.0,
            p50_ms: Some(5.0),
            p95_ms: Some(9.0),
            p99_ms: Some(12.0),
        }
        .into(),
        Summary {
            ts: ts(),
            run_id: Some("r".into()),
            perturbation_id: Some("p".into()),
            scenario: "main".into(),
            duration_s: 600.0,
            count: 120_000,
            ok: 120_000,
            err: 0,
            err_pct: 0.0,
            dropped: 0,
            target_rps: 200.0,
            achieved_rps: 199.99,
            latency: Some(pct.clone()),
            send_latency: Some(pct.clone()),
            lateness: Some(pct),
            status: map(&[("200", 120_000)]),
            errors: BTreeMap::new(),
            served_by: map(&[("app--a", 120_000)]),
            staircase_p50_ratio: Some(1.2),
            interrupted: false,
        }
        .into(),
        RevisionStateSample {
            ts: ts(),
            run_id: None,
            perturbation_id: Some("p".into()),
            sampler: Some("perturbation-sampler".into()),
            tick: Some(4),
            app: "subject".into(),
            revision: "subject--0000002".into(),
            active: true,
            replicas: 3,
            traffic_weight: 100,
            provisioning_state: "Provisioned".into(),
            health_state: Some("Healthy".into()),
            running_state: Some("Running".into()),
            created_time: Some("2026-06-12T14:00:00Z".into()),
            last_active_time: Some("2026-06-12T14:18:00Z".into()),
        }
        .into(),
        ReplicaInventorySample {
            ts: ts(),
            run_id: None,
            perturbation_id: Some("p".into()),
            sampler: Some("audit".into()),
            tick: Some(0),
            app: "subject".into(),
            revision: "subject--0000002".into(),
            replica: "subject--0000002-5d8f7-abcde".into(),
            running_state: "Running".into(),
            created_time: Some("2026-06-12T14:00:05Z".into()),
            containers: vec![ContainerSample {
                name: "subject".into(),
                ready: true,
                started: true,
                restart_count: 2,
                running_state: Some("Running".into()),
            }],
        }
        .into(),
        JobExecutionSample {
            ts: ts(),
            run_id: None,
            perturbation_id: Some("p".into()),
            sampler: Some("perturbation-sampler".into()),
            tick: Some(3),
            job: "flaky".into(),
            execution: "flaky-abc1234".into(),
            status: "Failed".into(),
            start_time: Some("2026-06-12T14:00:05Z".into()),
            end_time: Some("2026-06-12T14:00:09Z".into()),
        }
        .into(),
        PerturbationWindowMarker {
            ts: ts(),
            run_id: None,
            perturbation_id: Some("p".into()),
            sampler: Some("perturbation-sampler".into()),
            phase: MarkerPhase::End,
            apps: vec!["subject".into()],
            interval_s: Some(5.0),
            duration_s: Some(600.0),
            ticks_scheduled: Some(120),
            ticks_completed: Some(119),
        }
        .into(),
        SamplerError {
            ts: ts(),
            run_id: None,
            perturbation_id: Some("p".into()),
            sampler: Some("perturbation-sampler".into()),
            tick: Some(7),
            app: Some("subject".into()),
            operation: "list_revisions".into(),
            status: Some(429),
            code: Some("TooManyRequests".into()),
            message: "retry after 2 s".into(),
            late_ms: Some(12),
        }
        .into(),
        SubjectLine {
            method: Some("GET".into()),
            path: Some("/".into()),
            status: Some(200),
            dur_ms: Some(0.4),
            inflight: Some(1),
            probe: Some("readiness".into()),
            target: Some("http://dep:8080/health".into()),
            simulation: Some("zombie".into()),
            shutdown_mode: Some("graceful".into()),
            detail: Some("x".into()),
            config: Some(serde_json::json!({"PORT": 8080})),
            item: Some("item-1".into()),
            ts: ts(),
            ..SubjectLine::new(SubjectEvent::RequestEnd, "subject", "subject--a", "r1", "3")
        }
        .into(),
        LogLine {
            ts: ts(),
            level: "INFO".into(),
            component: Some("subject".into()),
            target: Some("subject::app".into()),
            msg: "listening".into(),
            fields: serde_json::json!({"port": 8080})
                .as_object()
                .cloned()
                .unwrap(),
        }
        .into(),
    ]
}

#[test]
fn every_kind_round_trips_through_json() {
    let examples = examples();
    let kinds: std::collections::BTreeSet<_> = examples.iter().map(Line::kind).collect();
    assert_eq!(kinds.len(), 13, "one example per kind");
    for line in examples {
        let json = line.to_json();
        assert!(!json.contains('\n'), "one line: {json}");
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["kind"], line.kind(), "{json}");
        assert_eq!(value["ts"], "2026-06-12T14:18:20.123Z", "{json}");
        let back = Line::from_json(&json).unwrap();
        assert_eq!(back, line, "{json}");
    }
}

#[test]
fn bucket_keeps_the_original_lab_field_names() {
    let bucket = examples()
        .into_iter()
        .find(|l| l.kind() == "bucket")
        .unwrap();
    let value: serde_json::Value = serde_json::from_str(&bucket.to_json()).unwrap();
    for field in [
        "kind",
        "window_s",
        "bucket_start_epoch_s",
        "bucket_start_iso",
        "count",
        "ok",
        "err",
        "err_pct",
        "target_rps",
        "run_id",
        "perturbation_id",
        "ts",
    ] {
        assert!(value.get(field).is_some(), "bucket lacks {field}");
    }
    assert_eq!(value["err_pct"], 0.05);
}

#[test]
fn subject_events_use_the_original_names() {
    let names: Vec<String> = [
        SubjectEvent::BootStart,
        SubjectEvent::StartupComplete,
        SubjectEvent::RequestEnd,
        SubjectEvent::DependencyCheckOk,
        SubjectEvent::DependencyCheckFail,
        SubjectEvent::SimulationChanged,
        SubjectEvent::SigtermReceived,
        SubjectEvent::ShutdownComplete,
        SubjectEvent::QueueItemTaken,
        SubjectEvent::QueueItemDone,
        SubjectEvent::QueueEmpty,
    ]
    .iter()
    .map(|e| {
        serde_json::to_value(e)
            .unwrap()
            .as_str()
            .unwrap()
            .to_owned()
    })
    .collect();
    assert_eq!(
        names,
        [
            "BOOT_START",
            "STARTUP_COMPLETE",
            "REQUEST_END",
            "DEPENDENCY_CHECK_OK",
            "DEPENDENCY_CHECK_FAIL",
            "SIMULATION_CHANGED",
            "SIGTERM_RECEIVED",
            "SHUTDOWN_COMPLETE",
            "QUEUE_ITEM_TAKEN",
            "QUEUE_ITEM_DONE",
            "QUEUE_EMPTY"
        ]
    );
}

#[test]
fn absent_optionals_are_omitted_not_null() {
    let line: Line = SubjectLine::new(SubjectEvent::BootStart, "a", "r", "p", "").into();
    let json = line.to_json();
    assert!(!json.contains("null"), "{json}");
    assert!(!json.contains("generation"), "{json}");
}

#[test]
fn unknown_fields_are_ignored_and_missing_defaults_filled() {
    let json = r#"{"kind":"bucket","ts":"2026-06-12T14:18:20Z","window_s":10,
        "bucket_start_epoch_s":1781273900,"bucket_start_iso":"2026-06-12T14:18:20Z",
        "count":5,"ok":5,"err":0,"err_pct":0,"target_rps":200,"vu":17,"future":"x"}"#;
    let Line::Bucket(b) = Line::from_json(json).unwrap() else {
        panic!("not a bucket")
    };
    assert_eq!(b.scenario, "main");
    assert_eq!(b.dropped, 0);
    assert!(b.status.is_empty());
}

#[test]
fn unknown_kinds_and_broken_json_are_errors() {
    assert!(Line::from_json(r#"{"kind":"nope","ts":"2026-06-12T14:18:20Z"}"#).is_err());
    assert!(Line::from_json(r#"{"kind":"bucket""#).is_err());
    assert!(
        Line::from_json(
            r#"{"kind":"meta","ts":"not a time","phase":"start","tool":"x","version":"1"}"#
        )
        .is_err()
    );
}

#[test]
fn err_pct_of_an_empty_window_is_zero() {
    assert_eq!(err_pct(0, 0), 0.0);
    assert!((err_pct(1, 289_932) - 0.000_344_9).abs() < 1e-6);
    assert_eq!(err_pct(5, 1000), 0.5);
}
