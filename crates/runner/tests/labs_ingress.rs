//! The ingress-timeout lab, as CI runs it: `ingress-timeout` with its quick profile on
//! localplane's docker runtime must end `held` (ten 200 s requests served, the one 250 s request
//! answered `504 stream timeout` by the ingress's idle timeout), and its positive control
//! (`ingress-timeout-swapped`: 250 s requests on the main stream, a 230 s one beside them) must
//! end `falsified` with both checks failing; `ingress-stream-idle` must end `held` (ten 300 s
//! streams sending a byte every 60 s served whole, the one quiet for 241 s cut mid-body by the
//! idle timeout), and its positive control (`ingress-stream-idle-short-quiet`: the quiet stream
//! sends its byte at 239 s) must end `falsified` with exactly the check on the quiet stream
//! failing. Docker must be reachable (these tests fail loudly
//! otherwise, unless `PROBELAB_SKIP_DOCKER=1`), and the images `probelab/<name>:dev` must exist.
//!
//! The 240 s timeout is the platform's and is not scaled, so each run takes 4.5 to 5.5 minutes,
//! almost all of it waiting: nextest runs them in the `platform` group, beside the other labs.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod common;

use common::{assert_falsified_by, assert_held, lab_checks, run_checked};

/// Every check with its detail, one per line (printed for the CI log).
fn details(o: &runner::RunOutcome) -> String {
    lab_checks(o)
        .iter()
        .map(|g| format!("{} ({:?}): {}", g.name, g.status, g.detail))
        .collect::<Vec<_>>()
        .join("\n  ")
}

/// What the 504 check says of the request over 240 s (printed for the CI log).
fn the_504(o: &runner::RunOutcome) -> String {
    lab_checks(o)
        .iter()
        .find(|g| g.name.contains("504"))
        .map(|g| g.detail.clone())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingress_timeout_quick_holds() {
    let lab = "ingress-timeout";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    assert_held(lab, &o);
    eprintln!("{lab}: {}", the_504(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingress_timeout_swapped_is_falsified() {
    let lab = "ingress-timeout-swapped";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    assert_falsified_by(lab, &o, &["served", "504"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingress_stream_idle_quick_holds() {
    let lab = "ingress-stream-idle";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    eprintln!("{lab}:\n  {}", details(&o));
    assert_held(lab, &o);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingress_stream_idle_short_quiet_is_falsified() {
    let lab = "ingress-stream-idle-short-quiet";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    eprintln!("{lab}:\n  {}", details(&o));
    // The stream quiet for 239 s is served like the ten: only the check that it is cut fails.
    assert_falsified_by(lab, &o, &["quiet for 241 s"]);
}
