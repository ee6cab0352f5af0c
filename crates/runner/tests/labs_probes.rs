//! The default-probes lab, as CI runs it: `default-probes-slow-starter` with its quick profile on
//! localplane's docker runtime must end `held` (the app with no probes of its own is killed by
//! the default startup probe after its 240 failures and started again; the same 250 s starter
//! with its own startup probe is never killed, becomes ready and serves), and its positive
//! control (`...-short-own-probe`: the own startup probe gives up at 150 s) must end `falsified`
//! with exactly the checks about `slow-own-probe` failing. Docker must be reachable (these tests
//! fail loudly otherwise, unless `PROBELAB_SKIP_DOCKER=1`), and the images `probelab/<name>:dev`
//! must exist.
//!
//! The 240 s is the platform's default and is what the lab observes, so it is not scaled: each
//! run takes about 5.5 minutes, almost all of it waiting (nextest group `platform`, beside the
//! other labs; what it judges is seconds-scale: a kill at about 240 s, a readiness at 260 s).

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod common;

use common::{assert_falsified_by, assert_held, lab_checks, run_checked};

/// The check details that tell the story (printed for the CI log).
fn story(o: &runner::RunOutcome) -> String {
    lab_checks(o)
        .iter()
        .map(|g| format!("{}: {}", g.name, g.detail))
        .collect::<Vec<_>>()
        .join("\n  ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_probes_slow_starter_quick_holds() {
    let lab = "default-probes-slow-starter";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    assert_held(lab, &o);
    eprintln!("{lab}:\n  {}", story(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_probes_short_own_probe_is_falsified() {
    let lab = "default-probes-slow-starter-short-own-probe";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    // slow-default's story still happens (the run is sound); what fails is every check about
    // the app whose own startup probe is too short: killed, never ready, serving nothing.
    assert_falsified_by(lab, &o, &["slow-own-probe"]);
    eprintln!("{lab}:\n  {}", story(&o));
}
