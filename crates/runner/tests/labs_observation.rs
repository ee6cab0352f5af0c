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
//! running (0 errors in 53,746 requests). So nextest runs the four at once (`.config/nextest.toml`:
//! group `observation-labs`, one test thread each), each with its own localplane, Docker network
//! and containers; the group never overlaps the whole-platform tests of `labs_docker` and
//! `docker_e2e` (200 RPS, latency-sensitive), which reserve every test thread. Together they take
//! about as long as the longest of them: run at once on the 2-core build machine (itself busy
//! with compiles), worker-saturation took 192 s, dependency-coupled-probes 315 s, rolling-drain
//! 441 s and liveness-failure-patterns 480 s, so 8 minutes of wall time for the four.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::path::{Path, PathBuf};

use runner::progress::ProgressMode;
use runner::run::{LocalRuntime, RunOptions, TargetChoice};

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

/// The evidence root of one test: removed when the test passes, kept (and named in the failure
/// message) when it fails, so a CI failure can be read from its pack; `PROBELAB_KEEP_EVIDENCE=1`
/// keeps it either way.
struct Evidence(PathBuf);

impl Drop for Evidence {
    fn drop(&mut self) {
        if std::thread::panicking() || std::env::var("PROBELAB_KEEP_EVIDENCE").as_deref() == Ok("1")
        {
            eprintln!("evidence kept in {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Runs `lab` with its quick profile and asserts everything an observation lab promises: a
/// complete pack, every load run Succeeded, every check evaluated and passed, verdict `held`.
/// Returns the outcome for lab-specific assertions.
async fn run_and_check(lab: &str) -> Option<(runner::RunOutcome, Evidence)> {
    let path = labs().join(format!("{lab}.toml"));
    if !docker_ready(&path) {
        return None;
    }
    let out = Evidence(tempfile::tempdir().unwrap().keep());
    let mut opts = RunOptions::new(
        path.clone(),
        "quick",
        TargetChoice::Local(LocalRuntime::Docker),
        out.0.clone(),
    );
    opts.progress = ProgressMode::Plain;
    opts.lock_dir = out.0.join("locks");
    let o = runner::run_lab(opts).await.unwrap();
    if let Some(e) = &o.error {
        panic!("{lab}: the run stopped: {e} (pack {})", o.pack.display());
    }
    eprintln!("{lab}: wall time {:.0} s", o.wall.as_secs_f64());
    check_pack(lab, &o);
    check_checks(lab, &path, &o);
    Some((o, out))
}

fn check_pack(lab: &str, o: &runner::RunOutcome) {
    assert!(!o.record.incomplete, "{lab}: the run is marked incomplete");
    let runs = runner::pack::RunsRecord::read(&o.pack).unwrap();
    assert_eq!(runs, o.record);
    for step in &runs.steps {
        for r in &step.runs {
            assert_eq!(
                r.status.as_deref(),
                Some("Succeeded"),
                "{lab}: step {} load {}: {r:?}",
                step.name,
                r.load
            );
        }
    }
    let v = runner::verify::verify(&o.pack).unwrap();
    assert!(v.ok(), "{lab}: {v:?}");
    assert!(o.pack.join("report.md").is_file());
    assert!(o.pack.join("verdict.json").is_file());
}

/// Every `[[checks]]` entry of the lab is a passing gate; the verdict is `held`.
fn check_checks(lab: &str, path: &Path, o: &runner::RunOutcome) {
    let a = o.analysis.as_ref().unwrap();
    let declared = lab::load(path, "quick").unwrap().checks.len();
    let checks: Vec<&analysis::verdict::Gate> =
        a.gates.iter().filter(|g| g.kind == "check").collect();
    assert_eq!(
        checks.len(),
        declared,
        "{lab}: every [[checks]] entry is evaluated"
    );
    let failed: Vec<String> = checks
        .iter()
        .filter(|g| g.status != analysis::verdict::Status::Pass)
        .map(|g| format!("{} ({:?}): {}", g.name, g.status, g.detail))
        .collect();
    assert!(
        failed.is_empty(),
        "{lab}: {} of {} check(s) did not pass (pack {}):\n  {}",
        failed.len(),
        checks.len(),
        o.pack.display(),
        failed.join("\n  ")
    );
    assert_eq!(
        a.verdict.verdict,
        analysis::Outcome::Held,
        "{lab}: {:?}",
        a.verdict.reasons
    );
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
