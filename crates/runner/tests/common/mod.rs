//! What the Docker lab tests share: where the labs are, the Docker gate, an evidence root that
//! survives a failure, one quick run of a lab, and the checks every complete pack must pass.

#![allow(clippy::unwrap_used, dead_code)] // test helpers; each test binary uses a subset

use std::path::{Path, PathBuf};

use analysis::judge::verdict::{Gate, Status};
use runner::progress::ProgressMode;
use runner::run::{LocalRuntime, RunOptions, TargetChoice};

pub fn labs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../labs")
}

/// False (test skipped) only when PROBELAB_SKIP_DOCKER=1; panics when Docker or an image is
/// missing. Through testkit's gate, which also removes what a killed test run left behind.
pub async fn docker_ready(lab: &Path) -> bool {
    if testkit::docker::require_docker().await.is_none() {
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
pub struct Evidence(pub PathBuf);

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

/// Runs `lab` (labs/<lab>.toml) with its quick profile on localplane's Docker runtime, every
/// duration of the schedule multiplied by `time_scale`; panics when the run stops early.
pub async fn run_quick(lab: &str, time_scale: f64) -> (runner::RunOutcome, Evidence) {
    let out = Evidence(tempfile::tempdir().unwrap().keep());
    let mut opts = RunOptions::new(
        labs().join(format!("{lab}.toml")),
        "quick",
        TargetChoice::Local(LocalRuntime::Docker),
        out.0.clone(),
    );
    opts.time_scale = time_scale;
    opts.progress = ProgressMode::Plain;
    opts.lock_dir = out.0.join("locks");
    let o = runner::run_lab(opts).await.unwrap();
    if let Some(e) = &o.error {
        panic!("{lab}: the run stopped: {e} (pack {})", o.pack.display());
    }
    eprintln!("{lab}: wall time {:.0} s", o.wall.as_secs_f64());
    (o, out)
}

/// A complete pack: not incomplete, `runs.json` as recorded, every load run Succeeded, the
/// manifest verifies, report and verdict written.
pub fn check_pack(lab: &str, o: &runner::RunOutcome) {
    assert!(!o.record.incomplete, "{lab}: the run is marked incomplete");
    let runs = runner::pack::RunsRecord::read(&o.pack.join(runner::pack::RUNS_FILE)).unwrap();
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
    // Which platform timings the run used is in runs.json and on the report's platform line
    // (quick profiles: `fast`, uncalibrated, and the report says so).
    if runs.target == "local" {
        let t = runs
            .localplane_timings
            .as_deref()
            .expect("runs.json records localplane's timings");
        if runs.profile == "quick" {
            assert_eq!(t, "fast", "{lab}: quick profiles run fast timings");
        }
        let report = std::fs::read_to_string(o.pack.join("report.md")).unwrap();
        let line = format!(
            "- **platform:** localplane (profile {}), timings {t}: ",
            runs.profile
        );
        assert!(report.contains(&line), "{lab}: report.md lacks {line:?}");
    }
}

/// Runs `lab`'s quick profile when Docker is there (None when it is skipped on purpose), and
/// checks its pack is complete and verifiable.
pub async fn run_checked(lab: &str) -> Option<(runner::RunOutcome, Evidence)> {
    if !docker_ready(&labs().join(format!("{lab}.toml"))).await {
        return None;
    }
    let (o, out) = run_quick(lab, 1.0).await;
    check_pack(lab, &o);
    Some((o, out))
}

pub fn lab_checks(o: &runner::RunOutcome) -> Vec<&Gate> {
    let a = o.analysis.as_ref().unwrap();
    a.gates.iter().filter(|g| g.kind == "check").collect()
}

fn listing(gates: &[&Gate]) -> String {
    gates
        .iter()
        .map(|g| format!("{} ({:?}): {}", g.name, g.status, g.detail))
        .collect::<Vec<_>>()
        .join("\n  ")
}

/// Prints every check of the run with its status and detail (what the numbers were, for the
/// CI log of a lab that passed).
pub fn print_checks(lab: &str, o: &runner::RunOutcome) {
    eprintln!("{lab}:\n  {}", listing(&lab_checks(o)));
}

/// Every check of the lab passes and the verdict is `held`.
pub fn assert_held(lab: &str, o: &runner::RunOutcome) {
    let gates = lab_checks(o);
    let declared = lab::load(&labs().join(format!("{lab}.toml")), "quick")
        .unwrap()
        .checks
        .len();
    assert_eq!(gates.len(), declared, "{lab}: every check evaluated");
    assert!(
        gates.iter().all(|g| g.status == Status::Pass),
        "{lab} (pack {}):\n  {}",
        o.pack.display(),
        listing(&gates)
    );
    let a = o.analysis.as_ref().unwrap();
    assert_eq!(
        a.verdict.verdict,
        analysis::Outcome::Held,
        "{:?}",
        a.verdict
    );
}

/// The control ends `falsified`; the checks whose names contain one of `must_fail` fail, and
/// every other check passes (the scaling the control relies on did happen).
pub fn assert_falsified_by(lab: &str, o: &runner::RunOutcome, must_fail: &[&str]) {
    let gates = lab_checks(o);
    for g in &gates {
        let expected = if must_fail.iter().any(|m| g.name.contains(m)) {
            Status::Fail
        } else {
            Status::Pass
        };
        assert_eq!(
            g.status,
            expected,
            "{lab}: {} (pack {}):\n  {}",
            g.name,
            o.pack.display(),
            listing(&gates)
        );
    }
    let a = o.analysis.as_ref().unwrap();
    assert_eq!(
        a.verdict.verdict,
        analysis::Outcome::Falsified,
        "{:?}",
        a.verdict
    );
}
