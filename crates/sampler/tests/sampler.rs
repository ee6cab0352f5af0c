//! The perturbation sampler in-process against the fake ARM (`testkit::fake_arm`: exact control of
//! revisions and hangs), and as a process against a fake managed identity endpoint. The tests
//! against localplane are in `localplane.rs`.

#![allow(clippy::unwrap_used)] // test helpers: a failure is the test failing

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::*;
use logline::line::Line;
use sampler::sink::Memory;
use testkit::fake_arm::{FakeArm, FakeIdentity};
use testkit::lines::{sampler_errors, sampler_faults};

#[tokio::test]
async fn samples_appear_for_each_revision_and_replica_between_markers() {
    let fake = FakeArm::start().await.unwrap();
    fake.add_simple_app("subject", 2, 3); // r0 inactive (listed, no replicas), r1 active
    fake.add_simple_app("dependency", 1, 2);
    let cfg = config(&fake.base_url(), "subject,dependency", "200ms", "1s");
    let sink = Memory::default();
    let out = sampler::run_with(&cfg, &client(&cfg), &sink, std::future::pending())
        .await
        .unwrap();
    let lines = sink.lines();
    assert_eq!(out.ticks_scheduled, 5);
    assert_eq!(out.ticks_completed, 5, "{lines:#?}");
    assert!(!out.interrupted);
    assert!(
        matches!(lines.first(), Some(Line::PerturbationWindowMarker(m)) if m.phase == logline::line::MarkerPhase::Start)
    );
    let Some(Line::PerturbationWindowMarker(end)) = lines.last() else {
        panic!("last line is the end marker");
    };
    assert_eq!(end.phase, logline::line::MarkerPhase::End);
    assert_eq!(
        (end.ticks_scheduled, end.ticks_completed),
        (Some(5), Some(5))
    );
    for tick in 0..5 {
        let mut revs = Vec::new();
        let mut reps = Vec::new();
        for l in &lines {
            match l {
                Line::RevisionStateSample(s) if s.tick == Some(tick) => {
                    assert_eq!(s.perturbation_id.as_deref(), Some("p-test"));
                    assert_eq!(s.sampler.as_deref(), Some("perturbation-sampler"));
                    revs.push(format!("{}/{}", s.app, s.revision));
                }
                Line::ReplicaInventorySample(s) if s.tick == Some(tick) => {
                    assert_eq!(s.running_state, "Running");
                    assert!(s.containers[0].ready);
                    reps.push(s.replica.clone());
                }
                _ => {}
            }
        }
        revs.sort();
        reps.sort();
        assert_eq!(
            revs,
            [
                "dependency/dependency--r0",
                "subject/subject--r0",
                "subject/subject--r1"
            ],
            "tick {tick}"
        );
        assert_eq!(
            reps,
            [
                "dependency--r0-rep0",
                "dependency--r0-rep1",
                "subject--r1-rep0",
                "subject--r1-rep1",
                "subject--r1-rep2"
            ],
            "tick {tick}"
        );
    }
    // The original KQL's field names are on the wire.
    let json = lines[1].to_json();
    for f in [
        "\"app\"",
        "\"revision\"",
        "\"active\"",
        "\"replicas\"",
        "\"traffic_weight\"",
        "\"provisioning_state\"",
    ] {
        assert!(
            json.contains(f) || !json.contains("RevisionStateSample"),
            "{f} in {json}"
        );
    }
    let faults = sampler_faults(&lines);
    assert!(faults.is_empty(), "{faults:#?}");
}

#[tokio::test]
async fn a_hanging_call_is_cut_at_its_slot_and_the_next_tick_starts_on_time() {
    let fake = FakeArm::start().await.unwrap();
    fake.add_simple_app("subject", 1, 1);
    fake.set_hang(Duration::from_secs(5));
    let cfg = config(&fake.base_url(), "subject", "500ms", "3s");
    let sink = Memory::default();
    let arm = client(&cfg);
    let run = sampler::run_with(&cfg, &arm, &sink, std::future::pending());
    let inject = async {
        tokio::time::sleep(Duration::from_millis(700)).await;
        fake.inject(testkit::fake_arm::Fault {
            kind: "hang".into(),
            count: 1,
            retry_after_s: None,
        });
    };
    let (out, ()) = tokio::join!(run, inject);
    let out = out.unwrap();
    let lines = sink.lines();
    assert_eq!(out.ticks_scheduled, 6);
    assert_eq!(out.ticks_run, 6, "no tick lost: {lines:#?}");
    assert_eq!(out.ticks_completed, 5);
    let errs = sampler_errors(&lines);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!(errs[0].code.as_deref(), Some("Timeout"));
    assert_eq!(errs[0].operation, "list_revisions");
    let starts = tick_starts(&lines);
    assert_eq!(starts.len(), 5, "the hung tick has no samples");
    assert_on_schedule(&lines, &starts, 500, 50);
}

#[tokio::test]
async fn a_shutdown_signal_ends_the_window_with_an_end_marker() {
    let fake = FakeArm::start().await.unwrap();
    fake.add_simple_app("subject", 1, 1);
    let cfg = config(&fake.base_url(), "subject", "200ms", "30s");
    let sink = Memory::default();
    let out = sampler::run_with(
        &cfg,
        &client(&cfg),
        &sink,
        tokio::time::sleep(Duration::from_millis(700)),
    )
    .await
    .unwrap();
    assert!(out.interrupted);
    assert_eq!(sampler::exit_code(&out), 143);
    assert_eq!(out.ticks_run, 4);
    let lines = sink.lines();
    assert!(
        matches!(lines.last(), Some(Line::PerturbationWindowMarker(m)) if m.phase == logline::line::MarkerPhase::End)
    );
    assert!(
        sampler_errors(&lines)
            .iter()
            .any(|e| e.operation == "interrupted")
    );
}

/// The binary with managed identity against a fake `IDENTITY_ENDPOINT`: the protocol is
/// checked, an expiring token is refreshed, and no token appears in any output.
#[tokio::test]
async fn the_binary_uses_the_identity_endpoint_refreshes_and_never_prints_the_token() {
    const SECRET_HEADER: &str = "identity-header-secret-value";
    const TOKEN_PREFIX: &str = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9-probelab-fake-token";
    let fake = FakeArm::start().await.unwrap();
    fake.add_simple_app("subject", 1, 2);
    let identity = FakeIdentity::start(SECRET_HEADER, Some("client-id-123"), TOKEN_PREFIX, 4)
        .await
        .unwrap();
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_perturbation-sampler"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("SUBSCRIPTION_ID", testkit::SUBSCRIPTION)
        .env("RESOURCE_GROUP", "rg")
        .env("CONTAINER_APP_NAMES", "subject")
        .env("MANAGED_IDENTITY_CLIENT_ID", "client-id-123")
        .env("PERTURBATION_ID", "p-mi")
        .env("SAMPLE_INTERVAL_SECONDS", "1")
        .env("SAMPLE_DURATION_SECONDS", "7")
        .env("ARM_ENDPOINT", fake.base_url())
        .env("ARM_TOKEN_SOURCE", "managed-identity")
        .env("IDENTITY_ENDPOINT", identity.endpoint())
        .env("IDENTITY_HEADER", SECRET_HEADER)
        .env("RUST_LOG", "debug")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");

    // The identity protocol as Container Apps speaks it.
    let reqs = identity.requests();
    assert!(!reqs.is_empty());
    for r in &reqs {
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.identity_header.as_deref(), Some(SECRET_HEADER));
        assert_eq!(r.api_version.as_deref(), Some("2019-08-01"));
        assert_eq!(r.client_id.as_deref(), Some("client-id-123"));
        assert_eq!(r.resource.as_deref(), Some("https://management.azure.com"));
    }
    // Tokens live 4 s; the window is 7 s: at least one refresh, and ARM saw the new token.
    assert!(identity.issued() >= 2, "issued {}", identity.issued());
    let auth: std::collections::BTreeSet<String> = fake
        .seen()
        .iter()
        .filter_map(|s| s.authorization.clone())
        .collect();
    assert!(
        auth.contains(&format!("Bearer {TOKEN_PREFIX}-1")),
        "{auth:?}"
    );
    assert!(
        auth.contains(&format!("Bearer {TOKEN_PREFIX}-2")),
        "{auth:?}"
    );

    // Nothing secret in any output, even at debug level.
    for (name, text) in [("stdout", &stdout), ("stderr", &stderr)] {
        assert!(
            !text.contains("probelab-fake-token"),
            "token in {name}:\n{text}"
        );
        assert!(
            !text.contains(SECRET_HEADER),
            "identity header in {name}:\n{text}"
        );
    }
    // stdout is JSON lines only; samples and both markers are there.
    let lines: Vec<Line> = stdout
        .lines()
        .map(|l| Line::from_json(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let samples = lines
        .iter()
        .filter(|l| matches!(l, Line::ReplicaInventorySample(_)))
        .count();
    assert_eq!(samples, 7 * 2, "{stdout}");
    let presence = lines
        .iter()
        .find_map(|l| match l {
            Line::Log(log) if log.msg.contains("identity variables") => Some(log.clone()),
            _ => None,
        })
        .expect("identity variables logged");
    let present = presence.fields["present"].as_str().unwrap();
    assert!(present.contains("IDENTITY_ENDPOINT") && present.contains("IDENTITY_HEADER"));
    assert!(
        !presence
            .fields
            .values()
            .any(|v| v.to_string().contains("127.0.0.1"))
    );
}
