//! The job labs (issue #36), as CI runs them, each with its quick profile on localplane's Docker
//! runtime with the real images.
//!
//! `job-event-drain` must end `held` with every check passing: an event-driven job (KEDA's
//! `metrics-api` scaler on a `subject` app's queue, at most 4 executions, 5 s polling) drains 12
//! items enqueued at once, and three bursts of 4, each within 30 s of the first enqueue; every
//! item is taken by exactly one replica and finished; never more than 4 replicas at once. Its
//! control `job-event-drain-backlog` (40 items at once, same cap) must end `falsified` by exactly
//! its drain-time check, every item still processed once and the cap still respected.
//!
//! `job-retries-timeout` must end `held`: a replica exiting 1 runs 1 + 2 times and its execution
//! ends Failed; a replica outliving its 5 s `replicaTimeout` is stopped at 5 s (exit 143) and
//! retried once. Its control `job-retries-timeout-execution-deadline` (the deadline bounding the
//! execution, as the rows users report read) must be `falsified` by exactly the retry count of
//! the timed-out job.
//!
//! `job-stop-grace` must end `held`: a stopped replica that needs 45 s to clean up is killed
//! 30 s after its SIGTERM (exit 137) and the execution ends Stopped. Its control
//! `job-stop-grace-short-cleanup` (10 s of cleanup) must be `falsified` by exactly the kill
//! check.
//!
//! `job-schedule-overlap` must end `held`: a job every minute whose executions work 80 s runs 2
//! at once, never 3. Its control `job-schedule-overlap-short-work` (40 s, under the period) must
//! be `falsified` by exactly that check.
//!
//! Docker must be reachable (these tests fail loudly otherwise, unless
//! `PROBELAB_SKIP_DOCKER=1`), and the images `probelab/<name>:dev` must exist.
//!
//! Why they may share the machine (nextest group `platform`): what they judge is counts (items,
//! replicas, exit codes, statuses), a drain time with a whole polling round of slack (the lab
//! drains in about 17 s against 30, 29.5 s at worst with 10 labs at once; the control needs
//! about 50 s, up to 118 s when executions outlive a polling interval, and watches 180 s),
//! and kill times with at least a second of slack (a 5 s timeout judged from 4 to 8 s, a 30 s
//! grace from 29 to 32 s) and overlaps of 20 s, not latency; each runs its own localplane,
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_retries_timeout_quick_holds() {
    let lab = "job-retries-timeout";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    assert_held(lab, &o);
    print_checks(lab, &o);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_retries_timeout_execution_deadline_is_falsified() {
    let lab = "job-retries-timeout-execution-deadline";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    assert_falsified_by(lab, &o, &["overtime ends Failed after 2 replicas"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_stop_grace_quick_holds() {
    let lab = "job-stop-grace";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    assert_held(lab, &o);
    print_checks(lab, &o);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_stop_grace_short_cleanup_is_falsified() {
    let lab = "job-stop-grace-short-cleanup";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    assert_falsified_by(lab, &o, &["the replica is killed 30 s after its SIGTERM"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_schedule_overlap_quick_holds() {
    let lab = "job-schedule-overlap";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    assert_held(lab, &o);
    print_checks(lab, &o);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_schedule_overlap_short_work_is_falsified() {
    let lab = "job-schedule-overlap-short-work";
    let Some((o, _dir)) = run_checked(lab).await else {
        return;
    };
    assert_falsified_by(lab, &o, &["2 executions run at once, never 3"]);
}
