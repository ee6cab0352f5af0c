//! The main job, as CI runs it: the quick `startup-degraded` lab ends `held`, its positive
//! control `startup-degraded-misconfigured` ends `falsified`, on localplane's docker runtime
//! with the real images. Docker must be reachable (these tests fail loudly otherwise, unless
//! `PROBELAB_SKIP_DOCKER=1`), and the images `probelab/<name>:dev` must exist (the failure names
//! scripts/build-images.sh).
//!
//! The startup-degraded schedule runs at half its quick length (`time_scale` 0.5: 15 s events,
//! the same rule); the positive control keeps its quick schedule, because its 25 s warm-up must
//! outlast three 10 s windows.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::path::{Path, PathBuf};

use runner::progress::ProgressMode;
use runner::run::{LocalRuntime, RunOptions, TargetChoice};

/// One lab at a time: two 200 RPS labs on 2 cores would measure the machine, not the platform.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn labs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../labs")
}

/// False (test skipped) only when PROBELAB_SKIP_DOCKER=1; panics when Docker or an image is
/// missing.
fn docker_ready(lab: &Path) -> bool {
    if std::env::var("PROBELAB_SKIP_DOCKER").as_deref() == Ok("1") {
        eprintln!("PROBELAB_SKIP_DOCKER=1: skipping a Docker lab test");
        return false;
    }
    let l = lab::load(lab, "quick").unwrap();
    if let Err(e) = runner::deploy::check_docker_images(&runner::deploy::images(&l)) {
        panic!("{e} (set PROBELAB_SKIP_DOCKER=1 only on a machine without Docker)");
    }
    true
}

async fn run(lab: &str, scale: f64) -> (runner::RunOutcome, tempfile::TempDir) {
    let _one = ONE_AT_A_TIME.lock().await;
    let out = tempfile::tempdir().unwrap();
    let mut opts = RunOptions::new(
        labs().join(format!("{lab}.toml")),
        "quick",
        TargetChoice::Local(LocalRuntime::Docker),
        out.path().to_path_buf(),
    );
    opts.time_scale = scale;
    opts.progress = ProgressMode::Plain;
    opts.lock_dir = out.path().join("locks");
    let o = runner::run_lab(opts).await.unwrap();
    if let Some(e) = &o.error {
        panic!("{lab}: the run stopped: {e} (pack {})", o.pack.display());
    }
    eprintln!("{lab}: wall time {:.0} s", o.wall.as_secs_f64());
    (o, out)
}

fn check_pack(o: &runner::RunOutcome) {
    assert!(!o.record.incomplete);
    let runs = runner::pack::RunsRecord::read(&o.pack).unwrap();
    assert_eq!(runs, o.record);
    for step in &runs.steps {
        for r in &step.runs {
            assert_eq!(
                r.status.as_deref(),
                Some("Succeeded"),
                "{} {}: {r:?}",
                step.name,
                r.load
            );
        }
        for a in &step.actions {
            assert_eq!(a.outcome, "ok", "{}: {a:?}", step.name);
        }
    }
    let v = runner::verify::verify(&o.pack).unwrap();
    assert!(v.ok(), "{v:?}");
    assert!(o.pack.join("report.md").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_degraded_quick_holds() {
    let lab = labs().join("startup-degraded.toml");
    if !docker_ready(&lab) {
        return;
    }
    let (o, _dir) = run("startup-degraded", 0.5).await;
    check_pack(&o);
    let rollouts = o
        .record
        .steps
        .iter()
        .flat_map(|s| &s.actions)
        .filter(|a| a.kind == "rollout")
        .count();
    assert_eq!(rollouts, 3);
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
    if !docker_ready(&lab) {
        return;
    }
    let (o, _dir) = run("startup-degraded-misconfigured", 1.0).await;
    check_pack(&o);
    let a = o.analysis.as_ref().unwrap();
    assert_eq!(
        a.verdict.verdict,
        analysis::Outcome::Falsified,
        "{:?}",
        a.verdict.reasons
    );
}
