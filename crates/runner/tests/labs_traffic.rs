//! The multiple-revision-mode labs, as CI runs them: `canary-split` (a failing canary at 10 %
//! of the traffic) and `blue-green-switch` (all traffic flipped from blue to green, blue then
//! deactivated), each with its quick profile on localplane's docker runtime with the real
//! images, must end `held` with every check passing; their positive controls
//! (`canary-split-half`, `blue-green-switch-unready`) must end `falsified`, and for the reason
//! the control was built for: the rate and share checks of a 50/50 split fail while every error
//! is still the canary's; the flip checks of a switch to a revision that cannot serve yet (its
//! readiness lies while it warms up) fail while the deactivation, once green serves, stays clean. Docker must be reachable (these tests fail
//! loudly otherwise, unless `PROBELAB_SKIP_DOCKER=1`), and the images `probelab/<name>:dev`
//! must exist.
//!
//! Why they may share the machine (nextest group `platform`): what they judge is counts (errors
//! per 10 s window against a ±0.5 pp tolerance, which the subject's evenly spread `FAIL_RATE`
//! and localplane's exact smooth weighted round-robin make independent of timing; whether any
//! request failed; which revision answered), not latency; each runs its own localplane, Docker
//! network and containers.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod common;

use common::{assert_falsified_by, assert_held, lab_checks, run_checked};

/// The error rates (%) of the judged windows of the rate check.
fn judged_rates(o: &runner::RunOutcome) -> Vec<f64> {
    lab_checks(o)
        .iter()
        .find(|g| g.name.contains("error rate"))
        .map(|g| {
            g.numbers["per_window"]
                .as_array()
                .unwrap()
                .iter()
                .map(|w| w["err_pct"].as_f64().unwrap())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canary_split_quick_holds() {
    let lab = "canary-split";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    assert_held(lab, &o);
    let rates = judged_rates(&o);
    assert!(
        rates.len() >= 3,
        "40 s at 100 RPS judge 3 windows or more: {rates:?}"
    );
    eprintln!("{lab}: error rate per judged window (%): {rates:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canary_split_half_is_falsified() {
    let lab = "canary-split-half";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    // Half of the traffic on the canary: about 10 % errors and a 50 % share; every error is
    // still the canary's.
    assert_falsified_by(lab, &o, &["error rate", "share"]);
    let rates = judged_rates(&o);
    assert!(
        rates.iter().all(|r| (9.0..=11.0).contains(r)),
        "50 % × 20 % = 10 % per window: {rates:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blue_green_switch_quick_holds() {
    let lab = "blue-green-switch";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    assert_held(lab, &o);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blue_green_switch_to_an_unready_revision_is_falsified() {
    let lab = "blue-green-switch-unready";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    assert_falsified_by(lab, &o, &["sees the flip"]);
    // The flip's errors are green's own 503s (`warming`): its readiness lied.
    let flip = lab_checks(&o)
        .into_iter()
        .find(|g| g.name == "check:no keep-alive client sees the flip")
        .unwrap();
    assert!(
        flip.numbers["errors"].as_u64().unwrap() > 0,
        "{}",
        flip.detail
    );
}
