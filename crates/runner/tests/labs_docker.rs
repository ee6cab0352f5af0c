//! The main job, as CI runs it: the quick `startup-degraded` lab ends `held`, its positive
//! control `startup-degraded-misconfigured` ends `falsified`, on localplane's docker runtime
//! with the real images. Docker must be reachable (these tests fail loudly otherwise, unless
//! `PROBELAB_SKIP_DOCKER=1`), and the images `probelab/<name>:dev` must exist (the failure names
//! scripts/build-images.sh).
//!
//! Both run their quick profiles unscaled, as a user does: startup-degraded's staircase measures
//! the headroom precondition (p50 at 200 RPS against p50 at 100 RPS), which needs its 30 s steps
//! for a queue to form and for the median to be stable from run to run, and the positive
//! control's 25 s warm-up must outlast three 10 s windows.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod common;

use common::{Evidence, check_pack, docker_ready, labs, run_quick};

/// One lab at a time: two 200 RPS labs on 2 cores would measure the machine, not the platform.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn run(lab: &str, scale: f64) -> (runner::RunOutcome, Evidence) {
    let _one = ONE_AT_A_TIME.lock().await;
    let (o, out) = run_quick(lab, scale).await;
    check_pack(lab, &o);
    // The rollout labs' actions (rollouts, restarts) must all have been carried out.
    for step in &o.record.steps {
        for a in &step.actions {
            assert_eq!(a.outcome, "ok", "{lab} {}: {a:?}", step.name);
        }
    }
    (o, out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_degraded_quick_holds() {
    let lab = labs().join("startup-degraded.toml");
    if !docker_ready(&lab).await {
        return;
    }
    let (o, _dir) = run("startup-degraded", 1.0).await;
    let rollouts = o
        .record
        .steps
        .iter()
        .flat_map(|s| &s.actions)
        .filter(|a| a.kind == "rollout")
        .count();
    assert_eq!(rollouts, 3);
    // One perturbation id, sampler execution and window per event (3 rollouts, 2 restarts).
    let mut ids = Vec::new();
    for step in o.record.steps.iter().filter(|s| !s.actions.is_empty()) {
        let samplers: Vec<_> = step.runs.iter().filter(|r| r.load == "sampler").collect();
        assert_eq!(
            samplers.len(),
            step.actions.len(),
            "{}: {step:?}",
            step.name
        );
        for (i, (a, r)) in step.actions.iter().zip(&samplers).enumerate() {
            let n = u32::try_from(i + 1).unwrap();
            assert_eq!((a.event, r.event), (n, Some(n)), "{}", step.name);
            let id = a.perturbation_id.clone().unwrap();
            assert!(id.starts_with(&format!("{}-event-{n}-", step.name)), "{id}");
            assert_eq!(r.run_id, id);
            ids.push(id);
        }
    }
    assert_eq!(ids.len(), 5, "{ids:?}");
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 5, "ids are unique within the pack");
    let a = o.analysis.as_ref().unwrap();
    assert_eq!(
        a.verdict.verdict,
        analysis::Outcome::Held,
        "{:?}",
        a.verdict.reasons
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_degraded_misconfigured_quick_is_falsified() {
    let lab = labs().join("startup-degraded-misconfigured.toml");
    if !docker_ready(&lab).await {
        return;
    }
    let (o, _dir) = run("startup-degraded-misconfigured", 1.0).await;
    let a = o.analysis.as_ref().unwrap();
    assert_eq!(
        a.verdict.verdict,
        analysis::Outcome::Falsified,
        "{:?}",
        a.verdict.reasons
    );
}
