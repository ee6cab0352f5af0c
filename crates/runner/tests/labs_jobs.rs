//! The job labs (issue #36), as CI runs them, each with its quick profile on localplane's Docker
//! runtime with the real images.
//!
//! `job-event-drain` must end `held` with every check passing: an event-driven job (KEDA's
//! `metrics-api` scaler on a `subject` app's queue, at most 4 executions, 5 s polling) drains 12
//! items enqueued at once, and three bursts of 4, each within 30 s of the first enqueue; every
//! item is taken by exactly one replica and finished; never more than 4 replicas at once. Its
//! control `job-event-drain-backlog` (40 items at once, same cap) must end `falsified` by exactly
//! its drain-time check, every item still processed once and the cap still respected. Docker must
//! be reachable (these tests fail loudly otherwise, unless `PROBELAB_SKIP_DOCKER=1`), and the
//! images `probelab/<name>:dev` must exist.
//!
//! Why they may share the machine (nextest group `platform`): what they judge is counts (items,
//! replicas alive) and a drain time with a whole polling round of slack (the lab drains in about
//! 17 s against 30; the control needs about 50), not latency; each runs its own localplane,
//! Docker network and containers.

mod common;

use common::{assert_falsified_by, assert_held, print_checks, run_checked};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_event_drain_quick_holds() {
    let lab = "job-event-drain";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    assert_held(lab, &o);
    print_checks(lab, &o);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_event_drain_backlog_is_falsified() {
    let lab = "job-event-drain-backlog";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    assert_falsified_by(lab, &o, &["40 items at once drain within 30 s"]);
}
