//! `labctl analyze` / `labctl report` as a user runs them: exit codes and the files they leave.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../analysis/tests/fixtures")
        .join(name)
}

fn labctl(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_labctl"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn analyze_exit_codes_carry_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let held = fixture("k-minus-one.ndjson").display().to_string();
    let (code, text) = labctl(&["analyze", "--out", &out, &held]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("verdict: held"), "{text}");
    assert!(dir.path().join("report.md").is_file());

    let fals = fixture("k-consecutive.ndjson").display().to_string();
    let (code, text) = labctl(&["analyze", "--out", &out, &fals]);
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("verdict: falsified"));

    let (code, _) = labctl(&["analyze", "--out", &out, "--consecutive", "4", &fals]);
    assert_eq!(code, 0, "K=4 from the command line");

    let base = fixture("query-api.json").display().to_string();
    let (code, text) = labctl(&["analyze", "--out", &out, &base]);
    assert_eq!(code, 4, "{text}");
}

#[test]
fn errors_exit_1_with_the_cause() {
    let (code, text) = labctl(&["analyze", "/nonexistent/logs.ndjson"]);
    assert_eq!(code, 1);
    assert!(text.contains("/nonexistent/logs.ndjson"), "{text}");
}

#[test]
fn help_teaches_the_inputs_and_the_exit_codes() {
    let (code, text) = labctl(&["--help"]);
    assert_eq!(code, 0);
    assert!(text.contains("Exit codes"));
    let (_, text) = labctl(&["analyze", "--help"]);
    for w in [
        "--consecutive",
        "--threshold",
        "--window",
        "--lab",
        "--out",
        "k6",
    ] {
        assert!(text.contains(w), "{w} in analyze --help");
    }
}

#[test]
fn report_rewrites_report_and_charts_of_a_pack() {
    let src = fixture("rollout-pack");
    let dir = tempfile::tempdir().unwrap();
    let pack = dir.path().join("pack");
    std::fs::create_dir_all(pack.join("logs")).unwrap();
    std::fs::copy(src.join("lab.toml"), pack.join("lab.toml")).unwrap();
    for e in std::fs::read_dir(src.join("logs")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), pack.join("logs").join(e.file_name())).unwrap();
    }
    let (code, text) = labctl(&["report", &pack.display().to_string()]);
    assert_eq!(code, 0, "{text}");
    assert!(pack.join("report.md").is_file());
    assert!(pack.join("report.html").is_file());
    assert!(pack.join("charts/timeline.svg").is_file());
    assert!(pack.join("manifest.sha256").is_file());
    assert!(
        !pack.join("verdict.json").exists(),
        "report leaves the tables to analyze"
    );
}

#[test]
fn the_dashboard_listens_on_127_0_0_1_only() {
    let (code, text) = labctl(&[
        "lab",
        "run",
        "labs/startup-degraded.toml",
        "--dashboard",
        "0.0.0.0:8088",
    ]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("127.0.0.1 only"), "{text}");
    let (code, text) = labctl(&["lab", "run", "--help"]);
    assert_eq!(code, 0);
    assert!(text.contains("--dashboard"), "{text}");
}
