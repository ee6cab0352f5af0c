//! `labctl campaign run` end to end: a small falsification lab run twice on localplane's process
//! runtime (the workspace's `subject`, `loadgen` and `perturbation-sampler` binaries on
//! 127.0.0.1, no Docker), each run through `lab run`'s own path, then judged together. What a
//! user sees: two packs, a campaign report that lists both runs and pools their four rollouts,
//! and the campaign verdict as the exit code.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::process::Command;

/// Two replicas behind the ingress, 40 RPS on new connections, two rollouts per run, the
/// rollout lab's rule; the campaign table pre-registers two runs.
const LAB: &str = r#"
title = "Two rollouts under load (campaign test)"
question = "Does a rollout of a two-replica app stay invisible to clients?"
kind = "falsification"
source = "labctl's campaign run test"

[hypothesis]
text = "A rollout hides every error: no 3 consecutive 10 s windows above 0.5 %."
evidence_cap = "Correlated"
expect = "held"

[rule]
window = "10s"
consecutive = 3
threshold_pct = 0.5
phases = ["perturbation"]

[preconditions]
baseline_clean = true
perturbations_observed = true

[campaign]
runs = 2

[[apps]]
name = "subject"
image = "probelab/subject:dev"
replicas = 2
termination_grace_seconds = 5
ingress = { external = true, target_port = 8080 }
env = { SHUTDOWN_MODE = "graceful" }
probes = [
  { type = "Readiness", path = "/ready", port = 8080, period_seconds = 1, timeout_seconds = 1, failure_threshold = 1 },
]

[[load]]
name = "main"
target = "subject"
rate = 40
connection = "close"
timeout = "5s"

[[steps]]
name = "baseline"
phase = "baseline"
duration = "10s"

[[steps]]
name = "perturbation"
phase = "perturbation"
action = { kind = "rollout", app = "subject" }
events = 2
interval = "15s"
offset = "3s"
"#;

#[test]
fn campaign_run_runs_the_lab_n_times_and_judges_the_runs_together() {
    let bins = testkit::bins::dir(&["subject", "loadgen", "perturbation-sampler"]);
    let dir = tempfile::tempdir().unwrap();
    let lab = dir.path().join("campaign-test.toml");
    std::fs::write(&lab, LAB).unwrap();
    let evidence = dir.path().join("evidence");
    let out = Command::new(env!("CARGO_BIN_EXE_labctl"))
        .args(["campaign", "run"])
        .arg(&lab)
        .args(["--runs", "2", "--runtime", "process", "--progress", "plain"])
        .arg("--bin-dir")
        .arg(&bins)
        .arg("--out")
        .arg(&evidence)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "campaign verdict held:\n{text}");
    assert!(text.contains("campaign verdict: held"), "{text}");

    // Two packs of the lab, each judged on its own, and the campaign's report beside them.
    let entries: Vec<_> = std::fs::read_dir(&evidence)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let packs: Vec<_> = entries
        .iter()
        .filter(|p| p.join("verdict.json").is_file())
        .collect();
    assert_eq!(packs.len(), 2, "{entries:?}\n{text}");
    let campaign = entries
        .iter()
        .find(|p| p.join("campaign.json").is_file())
        .unwrap_or_else(|| panic!("no campaign report in {entries:?}\n{text}"));

    // One report over both: every run listed, the four rollouts pooled.
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(campaign.join("campaign.json")).unwrap()).unwrap();
    assert_eq!(json["runs"].as_array().unwrap().len(), 2, "{json}");
    assert_eq!(json["events"].as_array().unwrap().len(), 4, "{json}");
    let md = std::fs::read_to_string(campaign.join("campaign.md")).unwrap();
    for p in &packs {
        let name = p.file_name().unwrap().to_string_lossy();
        assert!(md.contains(name.as_ref()), "{name} in campaign.md:\n{md}");
    }
}
