//! The `audit` binary against the fake ARM: a bounded window ends with exit 0; SIGTERM ends it
//! early with the end marker written and exit 143.

#![allow(clippy::unwrap_used)] // test helpers: a failure is the test failing

use std::process::Stdio;
use std::time::Duration;

use logline::line::{Line, MarkerPhase};
use testkit::fake_arm::FakeArm;
use tokio::io::AsyncReadExt;

fn audit(base: &str, window: &str) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_audit"));
    c.env_clear()
        .env("SUBSCRIPTION_ID", testkit::SUBSCRIPTION)
        .env("RESOURCE_GROUP", "rg")
        .env("CONTAINER_APP_NAMES", "subject")
        .env("RUN_LABEL", "nightly-audit")
        .env("SAMPLE_INTERVAL_SECONDS", "500ms")
        .env("AUDIT_WINDOW_SECONDS", window)
        .env("ARM_ENDPOINT", base)
        .env("ARM_TOKEN_SOURCE", "none")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn parse(stdout: &str) -> Vec<Line> {
    stdout
        .lines()
        .map(|l| Line::from_json(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn end_marker(lines: &[Line]) -> &logline::line::PerturbationWindowMarker {
    match lines.last() {
        Some(Line::PerturbationWindowMarker(m)) if m.phase == MarkerPhase::End => m,
        other => panic!("last line is not the end marker: {other:?}"),
    }
}

#[tokio::test]
async fn a_bounded_window_ends_with_exit_0() {
    let fake = FakeArm::start().await.unwrap();
    fake.add_simple_app("subject", 1, 2);
    let t0 = std::time::Instant::now();
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        audit(&fake.base_url(), "2")
            .spawn()
            .unwrap()
            .wait_with_output(),
    )
    .await
    .unwrap()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(t0.elapsed() < Duration::from_secs(10));
    let lines = parse(&stdout);
    let end = end_marker(&lines);
    assert_eq!(
        (end.ticks_scheduled, end.ticks_completed),
        (Some(4), Some(4))
    );
    let samples: Vec<_> = lines
        .iter()
        .filter_map(|l| match l {
            Line::ReplicaInventorySample(s) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(samples.len(), 8);
    assert!(
        samples.iter().all(|s| s.sampler.as_deref() == Some("audit")
            && s.run_id.as_deref() == Some("nightly-audit"))
    );
}

#[tokio::test]
async fn sigterm_writes_the_end_marker_and_exits_143() {
    let fake = FakeArm::start().await.unwrap();
    fake.add_simple_app("subject", 1, 1);
    let mut child = audit(&fake.base_url(), "60").spawn().unwrap();
    let pid = child.id().unwrap();
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .expect("audit exits promptly on SIGTERM")
        .unwrap();
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .await
        .unwrap();
    assert_eq!(status.code(), Some(143), "{stdout}");
    let lines = parse(&stdout);
    let end = end_marker(&lines);
    assert_eq!(end.ticks_scheduled, Some(120));
    assert!(end.ticks_completed.unwrap() >= 2);
    assert!(
        lines
            .iter()
            .any(|l| matches!(l, Line::SamplerError(e) if e.operation == "interrupted"))
    );
}
