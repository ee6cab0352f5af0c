//! `labctl analyze` / `labctl report` / `labctl lab list|show` as a user runs them: exit codes,
//! what they print and the files they leave.
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

/// A cause is printed once: `{e:#}` prints the message and then every source, so an error whose
/// message already names its cause must not also return it as the source (regression: `lab
/// file: No such file or directory (os error 2): No such file or directory (os error 2)`).
#[test]
fn an_error_prints_each_cause_once() {
    let missing = "No such file or directory";
    for args in [
        &["analyze", "/nonexistent/logs.ndjson"][..],
        &[
            "analyze",
            "--lab",
            "/nonexistent/lab.toml",
            &fixture("k-minus-one.ndjson").display().to_string(),
        ][..],
    ] {
        let (code, text) = labctl(args);
        assert_eq!(code, 1, "{args:?}: {text}");
        assert_eq!(
            text.matches(missing).count(),
            1,
            "{args:?} prints the cause once: {text}"
        );
    }
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
    let (_dir, pack) = testkit::pack::copy_fixture(&fixture("rollout-pack"), &["lab.toml"]);
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

/// `labctl` with PROBELAB_LABS_DIR set: (exit code, stdout, stderr).
fn labctl_in(labs: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_labctl"))
        .args(args)
        .env("PROBELAB_LABS_DIR", labs)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn shipped_labs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../labs")
}

/// A small lab whose schedule lengths are known (full 2m 40s, quick 55s).
const TINY: &str = r#"
title = "Tiny"
question = "Does the tiny lab list itself?"
kind = "falsification"
[hypothesis]
text = "Nothing breaks."
expect = "held"
[rule]
window = "10s"
consecutive = 3
threshold_pct = 0.5
phases = ["perturbation"]
[preconditions]
baseline_clean = true
[[apps]]
name = "subject"
image = "probelab/subject:dev"
[[load]]
name = "main"
target = "subject"
rate = 20
[[steps]]
name = "baseline"
phase = "baseline"
duration = "30s"
[[steps]]
name = "perturbation"
phase = "perturbation"
action = { kind = "rollout", app = "subject" }
events = 3
interval = "40s"
offset = "10s"
[[profiles.quick.steps]]
name = "perturbation"
events = 1
interval = "20s"
offset = "5s"
"#;

#[test]
fn lab_list_prints_the_catalogue_with_schedule_lengths() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tiny.toml"), TINY).unwrap();
    std::fs::write(dir.path().join("notes.md"), "not a lab").unwrap();
    let (code, out, err) = labctl_in(dir.path(), &["lab", "list"]);
    assert_eq!(code, 0, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "a header and one lab: {out}");
    for w in ["NAME", "KIND", "QUICK", "FULL", "QUESTION"] {
        assert!(lines[0].contains(w), "{w}: {out}");
    }
    // full: 30 s + 10 s + 3 × 40 s = 2m 40s; quick: 30 s + 5 s + 20 s = 55 s.
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(
        &row[..6],
        ["tiny", "falsification", "55s", "2m", "40s", "Does"],
        "{out}"
    );
    assert!(
        lines[1].ends_with("Does the tiny lab list itself?"),
        "{out}"
    );

    let (code, out, _) = labctl_in(dir.path(), &["lab", "list", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["name"], "tiny");
    assert_eq!(v["kind"], "falsification");
    assert_eq!(v["quick_s"], 55);
    assert_eq!(v["full_s"], 160);
    assert_eq!(v["error"], serde_json::Value::Null);
}

#[test]
fn lab_list_shows_the_shipped_catalogue_and_names_a_broken_lab() {
    let (code, out, err) = labctl_in(&shipped_labs(), &["lab", "list"]);
    assert_eq!(code, 0, "{out}{err}");
    for name in [
        "startup-degraded ",
        "startup-degraded-misconfigured",
        "dependency-coupled-probes",
        "liveness-failure-patterns",
        "worker-saturation",
        "rolling-drain",
        "scale-to-zero-cold-start-lying-readiness",
        "scale-in-termination",
    ] {
        assert!(out.contains(name), "{name}: {out}");
    }
    assert!(out.contains("observation") && out.contains("falsification"));
    // The columns stay aligned with the longest name: every kind starts under KIND.
    let col = out.lines().next().unwrap().find("KIND").unwrap();
    for l in out.lines().skip(1).take_while(|l| !l.is_empty()) {
        assert!(
            l.get(col..)
                .is_some_and(|k| k.starts_with("observation") || k.starts_with("falsification")),
            "{l:?} has its kind elsewhere than column {col}:\n{out}"
        );
    }

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tiny.toml"), TINY).unwrap();
    let broken = TINY.replace(
        "[[profiles.quick.steps]]",
        "[profiles.quick.rule]\nconsecutive = 2\n\n[[profiles.quick.steps]]",
    );
    std::fs::write(dir.path().join("bent.toml"), broken).unwrap();
    let (code, out, _) = labctl_in(dir.path(), &["lab", "list"]);
    assert_eq!(code, 1, "a broken lab makes the exit code 1: {out}");
    assert!(out.contains("tiny "), "the good lab is still listed: {out}");
    let bent = out.lines().find(|l| l.starts_with("bent ")).unwrap();
    assert!(bent.contains("invalid"), "{out}");
    assert!(
        out.contains(
            "profiles.quick.rule.consecutive: a profile may not change the pre-registered `rule`"
        ),
        "{out}"
    );
}

#[test]
fn lab_show_states_the_pre_registration_in_words() {
    let (code, out, err) = labctl_in(
        &shipped_labs(),
        &["lab", "show", "startup-degraded", "--profile", "quick"],
    );
    assert_eq!(code, 0, "{out}{err}");
    for w in [
        "profile quick",
        "hypothesis: With readiness-gated traffic switching",
        "expected verdict: held",
        "falsified when 3 consecutive 10s windows each have err_pct strictly above 0.5 % in \
         phase(s) perturbation, supplemental-restart",
        "baseline_clean:",
        "headroom: ",
        ">= 5 × p50 at the staircase step just below it (step preflight: 200 RPS against 100 RPS)",
        "perturbations_observed:",
        "1. preflight [phase preflight]",
        "rollout of subject",
        "revision restart of subject",
        "apps (on localplane, timings fast: not calibrated",
    ] {
        assert!(out.contains(w), "{w:?} in:\n{out}");
    }

    let (code, out, _) = labctl_in(&shipped_labs(), &["lab", "show", "worker-saturation"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("apps (on localplane, timings recorded: calibrated"),
        "{out}"
    );
    assert!(
        out.contains(
            "Readiness is the first probe of single-worker to fail 3 time(s), in step saturate"
        ),
        "{out}"
    );

    let (code, _, err) = labctl_in(&shipped_labs(), &["lab", "show", "startup-degradd"]);
    assert_eq!(code, 1);
    assert!(err.contains("no lab named 'startup-degradd'"), "{err}");
    assert!(
        err.contains("startup-degraded, startup-degraded-misconfigured"),
        "{err}"
    );

    let (code, _, err) = labctl_in(
        &shipped_labs(),
        &["lab", "show", "startup-degraded", "--profile", "nightly"],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("no [profiles.nightly] (defined: full, quick)"),
        "{err}"
    );
}

#[test]
fn lab_help_teaches_list_show_and_run() {
    let (code, text) = labctl(&["lab", "--help"]);
    assert_eq!(code, 0);
    for w in ["list", "show", "run"] {
        assert!(text.contains(w), "{w} in lab --help: {text}");
    }
    let (_, text) = labctl(&["lab", "list", "--help"]);
    for w in [
        "PROBELAB_LABS_DIR",
        "QUICK",
        "FULL",
        "--json",
        "falsification",
        "observation",
    ] {
        assert!(text.contains(w), "{w} in lab list --help: {text}");
    }
    let (_, text) = labctl(&["lab", "show", "--help"]);
    for w in [
        "--profile",
        "hypothesis",
        "preconditions",
        "schedule",
        "labctl lab show",
    ] {
        assert!(text.contains(w), "{w} in lab show --help: {text}");
    }
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

/// A copy of the real quick rollout pack named `name` under `root`.
fn pack_copy(root: &std::path::Path, name: &str) -> PathBuf {
    let (tmp, dir) = testkit::pack::copy_fixture(
        &fixture("quick-rollout-pack"),
        &["lab.toml", "profile", "runs.json"],
    );
    let to = root.join(name);
    std::fs::rename(&dir, &to).unwrap();
    drop(tmp);
    to
}

#[test]
fn campaign_report_judges_packs_together_and_its_exit_code_is_the_verdict() {
    let root = tempfile::tempdir().unwrap();
    let packs: Vec<String> = (0..2)
        .map(|i| {
            pack_copy(root.path(), &format!("startup-degraded-20261201T12000{i}Z"))
                .display()
                .to_string()
        })
        .collect();
    let out = root.path().join("campaign").display().to_string();
    let (code, text) = labctl(&["campaign", "report", &packs[0], &packs[1], "--out", &out]);
    assert_eq!(code, 0, "{text}");
    for w in [
        "campaign verdict: held",
        "events with a burst: 0 of 10; the per-event burst probability is below 30.850 % at 95 %",
        "campaign report: ",
    ] {
        assert!(text.contains(w), "{w:?} in:\n{text}");
    }
    assert!(root.path().join("campaign/campaign.md").is_file());
    assert!(root.path().join("campaign/campaign.json").is_file());
    // Packs of another lab: refused, exit 1, saying why.
    let other = pack_copy(root.path(), "other-lab-20261201T120000Z");
    let (code, text) = labctl(&[
        "campaign",
        "report",
        &packs[0],
        &other.display().to_string(),
        "--out",
        &out,
    ]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("different labs or rules"), "{text}");
    // Not a pack.
    let (code, text) = labctl(&["campaign", "report", "/nonexistent/pack"]);
    assert_eq!(code, 1);
    assert!(
        text.contains("/nonexistent/pack is not an evidence pack directory"),
        "{text}"
    );
}

#[test]
fn campaign_run_refuses_a_lab_it_cannot_find_and_zero_runs() {
    let (code, _, err) = labctl_in(
        &shipped_labs(),
        &["campaign", "run", "startup-degradd", "--runs", "2"],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no lab named 'startup-degradd'"), "{err}");
    let (code, _, err) = labctl_in(
        &shipped_labs(),
        &["campaign", "run", "startup-degraded", "--runs", "0"],
    );
    assert_eq!(code, 2, "a usage error: {err}");
    let (code, out, _) = labctl_in(&shipped_labs(), &["campaign", "run", "--help"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("--runs <N>") && out.contains("[campaign]"),
        "{out}"
    );
}

/// Writes a `labctl local up` state file recording this test process as the localplane.
fn recorded_localplane(https: bool, token: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut state = serde_json::json!({
        "pid": std::process::id(),
        "base_url": "http://127.0.0.1:8790",
        "evidence": "evidence/localplane",
        "started": "2026-12-03T00:00:00.000Z",
        "token": token,
    });
    if https {
        state["https_url"] = "https://127.0.0.1:8790".into();
        state["ca"] = "/state/tls/ca.pem".into();
    }
    std::fs::write(dir.path().join("labctl-local.json"), state.to_string()).unwrap();
    dir
}

#[test]
fn local_az_prints_what_points_az_and_the_sdks_at_localplane() {
    let dir = recorded_localplane(true, false);
    let state = dir.path().to_str().unwrap();
    let (code, out) = labctl(&["local", "az", "--state-dir", state]);
    assert_eq!(code, 0, "{out}");
    for line in [
        "export REQUESTS_CA_BUNDLE='/state/tls/ca.pem'",
        "export SSL_CERT_FILE='/state/tls/ca.pem'",
        "export IDENTITY_ENDPOINT='https://127.0.0.1:8790/msi/token'",
        "export AZURE_SUBSCRIPTION_ID='00000000-0000-0000-0000-000000000000'",
        "az login --identity",
        "--endpoint-resource-manager 'https://127.0.0.1:8790/'",
    ] {
        assert!(out.contains(line), "missing {line:?} in:\n{out}");
    }
    assert!(
        out.contains(&format!("export AZURE_CONFIG_DIR='{state}/az'")),
        "an az config of localplane's own: {out}"
    );
    let (code, out) = labctl(&["local", "az", "--exports-only", "--state-dir", state]);
    assert_eq!(code, 0, "{out}");
    assert!(
        !out.contains("az login") && out.contains("export ARM_ENDPOINT="),
        "{out}"
    );
}

#[test]
fn local_az_asks_for_the_token_and_refuses_plain_http_or_nothing_running() {
    let with_token = recorded_localplane(true, true);
    let (code, out) = labctl(&[
        "local",
        "az",
        "--state-dir",
        with_token.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("IDENTITY_HEADER=\"${LOCALPLANE_TOKEN:?"),
        "{out}"
    );
    let plain = recorded_localplane(false, false);
    let (code, out) = labctl(&["local", "az", "--state-dir", plain.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("--no-tls"), "{out}");
    let none = tempfile::tempdir().unwrap();
    let (code, out) = labctl(&["local", "az", "--state-dir", none.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("labctl local up"), "{out}");
}

/// A lab with a `maintenance` action (localplane's admin API; Container Apps starts its
/// maintenance itself) is refused on Azure before anything is checked or written: exit 1, the
/// step named, no evidence pack.
#[test]
fn a_maintenance_lab_is_refused_on_azure_before_anything_runs() {
    let out = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = labctl_in(
        &shipped_labs(),
        &[
            "lab",
            "run",
            "platform-maintenance-one-replica",
            "--target",
            "azure",
            "--profile",
            "quick",
            "--out",
            &out.path().display().to_string(),
        ],
    );
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stderr.contains("cannot run on Azure"), "{stderr}");
    assert!(
        stderr.contains("one-reported"),
        "the step is named: {stderr}"
    );
    assert!(stderr.contains("--target local"), "{stderr}");
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0, "no pack");
}
