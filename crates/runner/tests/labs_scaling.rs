//! The scaling labs, as CI runs them: `scale-to-zero-cold-start` and `scale-in-termination`,
//! each with its quick profile on localplane's docker runtime with the real images, must end
//! `held` with every check passing; their positive controls (`...-lying-readiness`,
//! `...-short-grace`) must end `falsified`, and for the reason the control was built for: the
//! client-visible checks fail while the checks that show the scaling happened (activation from
//! zero, scale-out, scale-in) pass. Docker must be reachable (these tests fail loudly
//! otherwise, unless `PROBELAB_SKIP_DOCKER=1`), and the images `probelab/<name>:dev` must exist.
//!
//! Why they may share the machine (nextest group `platform`): what they judge is seconds-scale
//! (an activation row, a rescale row, a 503, a request cut after 5 s of grace, a cold start of
//! at least the 5 s startup delay and at most 30 s), not milliseconds; each runs its own
//! localplane, Docker network and containers.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod common;

use analysis::verdict::{Gate, Status};
use common::{Evidence, check_pack, docker_ready, labs, run_quick};

/// Runs `lab`'s quick profile when Docker is there, with a complete, verifiable pack.
async fn run(lab: &str) -> Option<(runner::RunOutcome, Evidence)> {
    if !docker_ready(&labs().join(format!("{lab}.toml"))).await {
        return None;
    }
    let (o, out) = run_quick(lab, 1.0).await;
    check_pack(lab, &o);
    Some((o, out))
}

fn checks(o: &runner::RunOutcome) -> Vec<&Gate> {
    let a = o.analysis.as_ref().unwrap();
    a.gates.iter().filter(|g| g.kind == "check").collect()
}

fn listing(gates: &[&Gate]) -> String {
    gates
        .iter()
        .map(|g| format!("{} ({:?}): {}", g.name, g.status, g.detail))
        .collect::<Vec<_>>()
        .join("\n  ")
}

/// Every check of the lab passes and the verdict is `held`.
fn assert_held(lab: &str, o: &runner::RunOutcome) {
    let gates = checks(o);
    let declared = lab::load(&labs().join(format!("{lab}.toml")), "quick")
        .unwrap()
        .checks
        .len();
    assert_eq!(gates.len(), declared, "{lab}: every check evaluated");
    assert!(
        gates.iter().all(|g| g.status == Status::Pass),
        "{lab} (pack {}):\n  {}",
        o.pack.display(),
        listing(&gates)
    );
    let a = o.analysis.as_ref().unwrap();
    assert_eq!(
        a.verdict.verdict,
        analysis::Outcome::Held,
        "{:?}",
        a.verdict
    );
}

/// The control ends `falsified`; the checks whose names contain one of `must_fail` fail, and
/// every other check passes (the scaling the control relies on did happen).
fn assert_falsified_by(lab: &str, o: &runner::RunOutcome, must_fail: &[&str]) {
    let gates = checks(o);
    for g in &gates {
        let expected = if must_fail.iter().any(|m| g.name.contains(m)) {
            Status::Fail
        } else {
            Status::Pass
        };
        assert_eq!(
            g.status,
            expected,
            "{lab}: {} (pack {}):\n  {}",
            g.name,
            o.pack.display(),
            listing(&gates)
        );
    }
    let a = o.analysis.as_ref().unwrap();
    assert_eq!(
        a.verdict.verdict,
        analysis::Outcome::Falsified,
        "{:?}",
        a.verdict
    );
}

/// The slowest response of each wake-up (ms), from its check's numbers.
fn wake_latencies(o: &runner::RunOutcome) -> Vec<f64> {
    checks(o)
        .iter()
        .filter(|g| g.name.contains("costs latency"))
        .map(|g| g.numbers["slowest_ms"].as_f64().unwrap_or(f64::NAN))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_to_zero_cold_start_quick_holds() {
    let lab = "scale-to-zero-cold-start";
    let Some((o, _dir)) = run(lab).await else {
        return;
    };
    assert_held(lab, &o);
    let waits = wake_latencies(&o);
    assert_eq!(waits.len(), 3, "three wake-ups judged: {waits:?}");
    eprintln!("{lab}: slowest response per wake-up (ms): {waits:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_to_zero_lying_readiness_is_falsified() {
    let lab = "scale-to-zero-cold-start-lying-readiness";
    let Some((o, _dir)) = run(lab).await else {
        return;
    };
    // Each wake-up still comes from zero; what fails is what the client sees: 503s from the
    // warming replica, served faster than the startup delay.
    assert_falsified_by(lab, &o, &["client-visible error", "costs latency"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_in_termination_quick_holds() {
    let lab = "scale-in-termination";
    let Some((o, _dir)) = run(lab).await else {
        return;
    };
    assert_held(lab, &o);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_in_short_grace_is_falsified() {
    let lab = "scale-in-termination-short-grace";
    let Some((o, _dir)) = run(lab).await else {
        return;
    };
    assert_falsified_by(lab, &o, &["no long request is cut"]);
}
