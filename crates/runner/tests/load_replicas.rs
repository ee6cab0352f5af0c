//! A load beyond one loadgen replica (issue 21): `[[load]] replicas = 3` at 600 RPS runs one
//! loadgen execution of three replicas (parallelism 3) at 200 RPS each under one run_id, and
//! the analysis reads them as one run of ~600 RPS whose summed buckets count exactly the
//! requests the subject logged and the replicas' `req` lines (latency from their merged
//! histogram). Process runtime (the workspace's binaries, no Docker), 10 s of
//! load.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use runner::progress::ProgressMode;
use runner::run::{LocalRuntime, RunOptions, TargetChoice};
use serde_json::Value;

const LAB: &str = r#"
title = "Three loadgen replicas"
question = "Do three loadgen replicas read as one run?"
kind = "observation"
[hypothesis]
text = "Three replicas at 200 RPS each are one run of 600 RPS."
[[apps]]
name = "web"
image = "probelab/subject:dev"
ingress = { external = true, target_port = 8080 }
env = { LOG_REQUESTS = "all" }
[[load]]
name = "main"
target = "web"
rate = 600
replicas = 3
connection = "keep-alive"
log_requests = "all"
[[steps]]
name = "baseline"
phase = "baseline"
duration = "10s"
[[checks]]
name = "clean"
kind = "no_errors"
step = "baseline"
load = "main"
"#;

/// The console rows of the pack whose `Log_s` is a JSON line, with the row.
fn console(pack: &std::path::Path) -> Vec<(Value, Value)> {
    let text =
        std::fs::read_to_string(pack.join("logs/ContainerAppConsoleLogs_CL.ndjson")).unwrap();
    text.lines()
        .filter_map(|l| {
            let row: Value = serde_json::from_str(l).unwrap();
            let line = serde_json::from_str(row["Log_s"].as_str()?).ok()?;
            Some((row, line))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_loadgen_replicas_are_one_run_that_adds_up_to_what_the_subject_served() {
    let dir = tempfile::tempdir().unwrap();
    let lab = dir.path().join("replicas.toml");
    std::fs::write(&lab, LAB).unwrap();
    let mut opts = RunOptions::new(
        lab,
        "full",
        TargetChoice::Local(LocalRuntime::Process {
            bin_dir: testkit::bins::dir(&["subject", "loadgen", "perturbation-sampler"]),
        }),
        dir.path().join("evidence"),
    );
    opts.progress = ProgressMode::Plain;
    opts.lock_dir = dir.path().join("locks");
    let o = runner::run_lab(opts).await.unwrap();
    assert!(o.error.is_none(), "the run stopped: {:?}", o.error);
    let run = &o.record.steps[0].runs[0];
    assert_eq!(run.status.as_deref(), Some("Succeeded"), "{run:?}");

    // Three replicas of the one execution logged buckets under the run's id.
    let rows = console(&o.pack);
    let loadgen = |kind: &str| -> Vec<&(Value, Value)> {
        rows.iter()
            .filter(|(r, l)| r["JobName_s"].as_str().is_some() && l["kind"] == kind)
            .filter(|(_, l)| l["run_id"] == run.run_id.as_str())
            .collect()
    };
    let replicas: BTreeSet<&str> = loadgen("bucket")
        .iter()
        .map(|(r, _)| r["ContainerGroupName_s"].as_str().unwrap())
        .collect();
    assert_eq!(
        replicas.len(),
        3,
        "buckets from three replicas: {replicas:?}"
    );
    let executions: BTreeSet<&str> = loadgen("bucket")
        .iter()
        .map(|(r, _)| r["ExecutionName_s"].as_str().unwrap())
        .collect();
    assert_eq!(executions.len(), 1, "of one execution: {executions:?}");
    let summaries = loadgen("summary");
    assert_eq!(summaries.len(), 3, "one summary per replica");

    // The analysis: one run of ~600 RPS, its summed buckets equal to what the subject served.
    let a = o.analysis.as_ref().unwrap();
    let runs: Vec<_> = a
        .runs
        .iter()
        .filter(|r| r.run_id == run.run_id && r.scenario == "main")
        .collect();
    assert_eq!(runs.len(), 1, "one run: {:?}", a.runs);
    let r = runs[0];
    assert_eq!(r.err, 0, "{r:?}");
    assert!(
        (5_700..=6_000).contains(&r.requests),
        "600 RPS for 10 s: {r:?}"
    );
    // The subject's requests to `/` since the step began (before it, the runner checked that
    // the target serves); both times are RFC 3339 with milliseconds in UTC, so they sort as text.
    let since = o.record.steps[0].start.as_str();
    let served = rows
        .iter()
        .filter(|(row, l)| {
            row["ContainerAppName_s"] == "web"
                && l["event"] == "REQUEST_END"
                && l["path"] == "/"
                && l["ts"].as_str().is_some_and(|ts| ts >= since)
        })
        .count() as u64;
    assert_eq!(r.bucket_requests, Some(served), "buckets vs subject: {r:?}");
    assert_eq!(r.requests, served);
    // Every replica's req lines cross-check the summed buckets, and the run's latency comes
    // from their merged histogram.
    let c = r.cross_check.as_ref().unwrap();
    assert_eq!(
        (c.compared, c.bucket, c.req, c.gap),
        ("requests", served, served, 0)
    );
    assert_eq!(r.latency_basis, "req", "{r:?}");
    assert_eq!(
        a.verdict.verdict,
        analysis::Outcome::Held,
        "{:?}",
        a.verdict.reasons
    );
}
