//! The labs of what users fight with (issue #35), as CI runs them, each with its quick profile on
//! localplane's Docker runtime with the real images.
//!
//! `failed-rollout` must end `held` with every check passing: a revision that never passes
//! readiness and one that crash-loops never receive traffic (no client error), each reports
//! `Provisioning` then `Failed` / `Unhealthy` past the progress deadline (30 s in the quick
//! profile) and its update's operation fails; the next good rollout takes over without an error
//! and deactivates them. Its control `failed-rollout-lying-readiness` (readiness passes, every
//! request fails) must end `falsified` by exactly its "no client error" check.
//!
//! The platform-maintenance lab: `platform-maintenance` with its quick profile on
//! localplane's Docker runtime with the real images must end `held` with every check passing:
//! each app's replicas are stopped by the maintenance (`ManuallyStopped` rows), the one-replica
//! app under the reported stop-first form (microsoft/azure-container-apps#1436) shows its
//! clients errors, the two-replica one under that form and the one-replica one under Learn's
//! rolling form show them none. Its positive control `platform-maintenance-one-replica` must end
//! `falsified` by exactly its "no client ... sees" check, its replica still seen to stop. Docker
//! must be reachable (these tests fail loudly otherwise, unless `PROBELAB_SKIP_DOCKER=1`), and
//! the images `probelab/<name>:dev` must exist.
//!
//! `sticky-rollout` must end `held`: 12 virtual clients pinned by session affinity stay on their
//! replica through the baseline, every one of them moves (with a new cookie) in the rollout and
//! in the revision restart, only some in the scale-in, and none sees an error. Its control
//! `sticky-rollout-immediate-exit` (replicas that exit at once on SIGTERM) must end `falsified`
//! by exactly its three "no pinned client sees ..." checks.
//!
//! Why they may share the machine (nextest group `platform`): what they judge is counts (stop
//! rows, errors against none, revision states, failed operations, clients that moved) over
//! seconds-long gaps and a 30 s deadline, not latency (a sticky client's cookie is back 0.3 s
//! before its next request); each runs its own localplane, Docker network and containers.

mod common;

use common::{assert_falsified_by, assert_held, print_checks, run_checked};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn platform_maintenance_quick_holds() {
    let lab = "platform-maintenance";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    assert_held(lab, &o);
    print_checks(lab, &o);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn platform_maintenance_one_replica_is_falsified() {
    let lab = "platform-maintenance-one-replica";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    assert_falsified_by(lab, &o, &["no client of one replica"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_rollout_quick_holds() {
    let lab = "failed-rollout";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    assert_held(lab, &o);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_rollout_lying_readiness_is_falsified() {
    let lab = "failed-rollout-lying-readiness";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    assert_falsified_by(lab, &o, &["no client error"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sticky_rollout_quick_holds() {
    let lab = "sticky-rollout";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    assert_held(lab, &o);
    print_checks(lab, &o);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sticky_rollout_immediate_exit_is_falsified() {
    let lab = "sticky-rollout-immediate-exit";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    assert_falsified_by(lab, &o, &["no pinned client sees"]);
}
