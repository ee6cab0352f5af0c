//! The four observation labs, as CI runs them: `dependency-coupled-probes`,
//! `liveness-failure-patterns`, `worker-saturation` and `rolling-drain`, each with its quick
//! profile on localplane's docker runtime with the real images, must end `held` with every one
//! of its `[[checks]]` passing (a failing check is named with its detail), and leave a complete,
//! verifiable evidence pack. Docker must be reachable (these tests fail loudly otherwise, unless
//! `PROBELAB_SKIP_DOCKER=1`), and the images `probelab/<name>:dev` must exist (the failure names
//! scripts/build-images.sh).
//!
//! Why the quick profile unscaled (`time_scale` 1): what these labs observe is set by probe
//! settings and by the subject's own timings, which are not scaled: liveness period 10 s ×
//! threshold 3 plus the restart back-off, a 60 s blocking request against a 3 s probe timeout,
//! 20 s requests against a 10 s or 40 s grace period. Shrinking the schedule below the quick
//! profile cuts the very restart loops and cut-offs the checks look for; the quick profiles are
//! already "as short as the probe settings allow".
//!
//! Why they fit the CI budget anyway: what they judge is seconds-scale (a restart, a 503, a cut-off
//! 20 s request), never latency. Three of them drive 1 to 40 requests per second; rolling-drain's
//! two keep-alive closed loops (20 workers, about 800 requests per second during their steps) are
//! judged only on error counts, and its zero-error check (drain) held with the other three labs
//! running (0 errors in 53,746 requests). So nextest runs them at once (`.config/nextest.toml`:
//! group `platform`, at most four of its tests at a time, one test thread each, with localplane's
//! e2e 2-5, the full-disk lab and the parity replay), each with its own localplane, Docker network
//! and containers; the group never overlaps the latency tests of `labs_docker`, `lab_image` and
//! localplane's e2e 1 (200 RPS), which reserve every test thread. Together they take
//! about as long as the longest of them: run at once on the 2-core build machine (itself busy
//! with compiles), worker-saturation took 192 s, dependency-coupled-probes 315 s, rolling-drain
//! 441 s and liveness-failure-patterns 480 s, so 8 minutes of wall time for the four.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod common;

use common::{Evidence, assert_held, run_checked};

/// Runs `lab` with its quick profile and asserts everything an observation lab promises: a
/// complete pack, every load run Succeeded, every check evaluated and passed, verdict `held`.
/// Returns the outcome for lab-specific assertions.
async fn run_and_check(lab: &str) -> Option<(runner::RunOutcome, Evidence)> {
    let (o, out) = run_checked(lab).await?;
    assert_held(lab, &o);
    Some((o, out))
}

fn actions<'a>(o: &'a runner::RunOutcome, step: &str) -> Vec<&'a runner::pack::ActionRecord> {
    o.record
        .steps
        .iter()
        .filter(|s| s.name == step)
        .flat_map(|s| &s.actions)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dependency_coupled_probes_quick_holds() {
    let Some((o, _dir)) = run_and_check("dependency-coupled-probes").await else {
        return;
    };
    // Each outage is set and restored through the dependency's admin endpoint.
    for step in ["outage", "slow", "intermittent"] {
        let kinds: Vec<(&str, &str)> = actions(&o, step)
            .iter()
            .map(|a| (a.kind.as_str(), a.outcome.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [("dependency", "ok"), ("dependency-restore", "ok")],
            "{step}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn liveness_failure_patterns_quick_holds() {
    let Some((o, _dir)) = run_and_check("liveness-failure-patterns").await else {
        return;
    };
    for step in ["zombie", "zombie-without-liveness"] {
        let a = actions(&o, step);
        assert_eq!(a.len(), 1, "{step}: {a:?}");
        assert_eq!(
            (a[0].kind.as_str(), a[0].outcome.as_str()),
            ("simulate", "ok")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_saturation_quick_holds() {
    // The lost blocking request is itself a check (`action_failed`); run_and_check asserts it.
    let Some((o, _dir)) = run_and_check("worker-saturation").await else {
        return;
    };
    let a = actions(&o, "saturate");
    assert_eq!(a.len(), 1, "{a:?}");
    assert_eq!(a[0].kind, "saturate");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_drain_quick_holds() {
    let Some((o, _dir)) = run_and_check("rolling-drain").await else {
        return;
    };
    // Every rollout was accepted (a new revision each time).
    for step in [
        "rollout-immediate",
        "rollout-drain",
        "rollout-grace-short",
        "rollout-grace-long",
    ] {
        let a = actions(&o, step);
        assert!(!a.is_empty(), "{step}: no rollout recorded");
        for r in a {
            assert_eq!(
                (r.kind.as_str(), r.outcome.as_str()),
                ("rollout", "ok"),
                "{step}: {r:?}"
            );
        }
    }
}
