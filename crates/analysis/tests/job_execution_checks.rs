//! The job execution checks on planted packs: a job's system rows (`JobName_s`,
//! `ExecutionName_s`), the samplers' `JobExecutionSample` lines and the replicas' own `subject`
//! lines; each check on both sides of its bounds, and the cases that cannot be judged (no ARM
//! status, the two sources disagreeing).
#![allow(clippy::unwrap_used)]

#[path = "support/planted.rs"]
mod planted;

use analysis::Analysis;
use analysis::judge::verdict::Status;
use planted::{analyze_pack, iso_ms, status};

const T0: i64 = 1_782_900_000; // 2026-07-01T10:00:00Z

/// An instant `s` seconds after T0, as RFC 3339 with milliseconds.
fn at(s: f64) -> String {
    iso_ms(T0 * 1000 + (s * 1000.0).round() as i64)
}

/// One replica of execution `exec` of job `batch`: created at `created_s` (its `PullingImage`
/// row, if any), started at `start_s`, SIGTERM line at `sigterm_s` (if any), terminated at
/// `end_s` with `code` (no end row when `end_s` is NaN).
#[derive(Clone, Copy)]
struct Rep {
    exec: &'static str,
    name: &'static str,
    created_s: Option<f64>,
    start_s: f64,
    sigterm_s: Option<f64>,
    end_s: f64,
    code: i64,
}

fn system_row(s: f64, exec: &str, replica: &str, reason: &str, msg: &str) -> String {
    serde_json::json!({
        "TimeGenerated": at(s), "JobName_s": "batch", "ContainerAppName_s": "batch",
        "ExecutionName_s": exec, "RevisionName_s": "", "ReplicaName_s": replica,
        "Reason_s": reason, "Log_s": msg, "Type_s": "Normal",
        "Type": "ContainerAppSystemLogs_CL"
    })
    .to_string()
}

/// `JobExecutionSample` lines: `(tick second, execution, status)`.
fn samples(ticks: &[(f64, &str, &str)]) -> Vec<String> {
    ticks
        .iter()
        .map(|(s, exec, status)| {
            serde_json::json!({
                "kind": "JobExecutionSample", "ts": at(*s), "sampler": "perturbation-sampler",
                "job": "batch", "execution": exec, "status": status,
                "start_time": iso_ms(T0 * 1000 + 1000).replace(".000", "")
            })
            .to_string()
        })
        .collect()
}

const LAB: &str = r#"
title = "jobs"
kind = "observation"
[hypothesis]
text = "h"
[[jobs]]
name = "batch"
image = "probelab/subject:dev"
replica_timeout_seconds = 60
replica_retry_limit = 2
manual = {}

[[checks]]
name = "Failed after 3"
kind = "job_executions_end"
job = "batch"
step = "run"
execution_status = "Failed"
replicas = 3

[[checks]]
name = "Failed"
kind = "job_executions_end"
job = "batch"
step = "run"
execution_status = "Failed"

[[checks]]
name = "killed 29 to 32 s after SIGTERM"
kind = "job_replica_exit"
job = "batch"
step = "run"
since = "sigterm"
exit_code = 137
min = 29
max = 32

[[checks]]
name = "two at once"
kind = "job_executions_at_once"
job = "batch"
step = "run"
min = 2
max = 2

[[checks]]
name = "stopped 4 to 8 s after its creation"
kind = "job_replica_exit"
job = "batch"
step = "run"
since = "created"
exit_code = 143
min = 4
max = 8

[[checks]]
name = "stopped 4 to 8 s after its execution's start"
kind = "job_replica_exit"
job = "batch"
step = "run"
since = "execution"
exit_code = 143
min = 4
max = 8

[[checks]]
name = "stopped 4 to 8 s after its start"
kind = "job_replica_exit"
job = "batch"
step = "run"
exit_code = 143
min = 4
max = 8

[[checks]]
name = "exits 1 within 5 s"
kind = "job_replica_exit"
job = "batch"
step = "run"
exit_code = 1
max = 5
"#;

/// A pack of step `run` (T0 + 1 s to T0 + 60 s) with `reps`' rows and lines and `ticks`.
fn pack(reps: &[Rep], ticks: &[(f64, &str, &str)]) -> Analysis {
    let tmp = tempfile::tempdir().unwrap();
    let mut rows = Vec::new();
    let mut lines = samples(ticks);
    for r in reps {
        if let Some(c) = r.created_s {
            rows.push(system_row(
                c,
                r.exec,
                r.name,
                "PullingImage",
                "Pulling image 'probelab/subject:dev'",
            ));
        }
        rows.push(system_row(
            r.start_s,
            r.exec,
            r.name,
            "ContainerStarted",
            "Started container 'batch'",
        ));
        if !r.end_s.is_nan() {
            rows.push(system_row(
                r.end_s,
                r.exec,
                r.name,
                "ContainerTerminated",
                &format!(
                    "Container 'batch' was terminated with exit code '{}'",
                    r.code
                ),
            ));
        }
        if let Some(s) = r.sigterm_s {
            lines.push(format!(
                r#"{{"kind":"subject","ts":"{}","event":"SIGTERM_RECEIVED","app":"batch","revision":"{}","replica":"{}"}}"#,
                at(s),
                r.exec,
                r.name
            ));
        }
    }
    let t = |s: i64| iso_ms((T0 + s) * 1000);
    let runs = serde_json::json!({
        "lab": "jobs", "profile": "quick", "target": "local",
        "started": t(0), "ended": t(60), "incomplete": false,
        "steps": [{"name": "run", "phase": "run", "start": t(1), "end": t(60), "runs": [],
                   "actions": [{"event": 1, "kind": "job-start", "job": "batch", "ts": t(1),
                                "outcome": "ok", "dur_ms": 3, "detail": "d",
                                "executions": ["batch-a"]}]}]
    });
    let logs = [("system.ndjson", rows), ("console.ndjson", lines)];
    analyze_pack(tmp.path(), &logs, &runs, LAB)
}

/// `n` failed replicas of `batch-a`, each exiting `code` `run_s` after its start, 0.2 s apart.
fn failing(n: usize, run_s: f64, code: i64) -> Vec<Rep> {
    const NAMES: [&str; 4] = ["batch-a-1", "batch-a-2", "batch-a-3", "batch-a-4"];
    (0..n)
        .map(|i| {
            let start = 1.5 + i as f64 * (run_s + 0.2);
            Rep {
                exec: "batch-a",
                name: NAMES[i],
                created_s: None,
                start_s: start,
                sigterm_s: None,
                end_s: start + run_s,
                code,
            }
        })
        .collect()
}

const FAILED: &[(f64, &str, &str)] = &[(2.0, "batch-a", "Running"), (12.0, "batch-a", "Failed")];

#[test]
fn the_status_and_the_replica_count_are_judged_on_both_sides() {
    let a = pack(&failing(3, 1.0, 1), FAILED);
    assert_eq!(status(&a, "Failed after 3"), Status::Pass);
    assert_eq!(status(&a, "Failed"), Status::Pass);
    // One retry fewer, or one more: the count fails, the status alone still passes.
    for n in [2, 4] {
        let a = pack(&failing(n, 1.0, 1), FAILED);
        assert_eq!(status(&a, "Failed after 3"), Status::Fail, "{n} replicas");
        assert_eq!(status(&a, "Failed"), Status::Pass);
    }
    // Still Running at the last tick: it did not end Failed.
    let running = &[(2.0, "batch-a", "Running"), (12.0, "batch-a", "Running")];
    let a = pack(&failing(3, 1.0, 1), running);
    assert_eq!(status(&a, "Failed"), Status::Fail);
}

#[test]
fn without_an_arm_status_or_when_the_sources_disagree_nothing_is_judged() {
    let a = pack(&failing(3, 1.0, 1), &[]);
    assert_eq!(status(&a, "Failed after 3"), Status::NotEvaluated);
    // ARM says Succeeded, but no replica exited 0: the analysis says so and does not judge.
    let ok = &[(2.0, "batch-a", "Running"), (12.0, "batch-a", "Succeeded")];
    let a = pack(&failing(3, 1.0, 1), ok);
    assert_eq!(status(&a, "Failed"), Status::NotEvaluated);
    let g = a.gates.iter().find(|g| g.name == "check:Failed").unwrap();
    assert!(g.detail.contains("disagree"), "{}", g.detail);
    // And the executions table names the disagreement.
    let q8 = a
        .tables
        .iter()
        .find(|t| t.name == "q8-job-executions")
        .unwrap();
    let d = q8
        .get(0, "disagreement")
        .and_then(|v| v.as_str())
        .unwrap_or("");
    assert!(d.contains("ARM says batch-a Succeeded"), "{d}");
}

#[test]
fn a_replica_exit_is_judged_on_both_sides_of_its_time_bounds_and_by_its_code() {
    // Exit 1 exactly 5 s after its start passes `within 5 s`; 5.1 s does not.
    let a = pack(&failing(3, 5.0, 1), FAILED);
    assert_eq!(status(&a, "exits 1 within 5 s"), Status::Pass);
    let a = pack(&failing(3, 5.1, 1), FAILED);
    assert_eq!(status(&a, "exits 1 within 5 s"), Status::Fail);
    // The right time with another code fails.
    let a = pack(&failing(3, 1.0, 2), FAILED);
    assert_eq!(status(&a, "exits 1 within 5 s"), Status::Fail);
}

#[test]
fn a_kill_is_timed_from_the_replicas_own_sigterm_line() {
    let stopped = |sigterm: Option<f64>, end: f64, code: i64| {
        vec![Rep {
            exec: "batch-a",
            name: "batch-a-1",
            created_s: None,
            start_s: 1.5,
            sigterm_s: sigterm,
            end_s: end,
            code,
        }]
    };
    let st = &[(2.0, "batch-a", "Running"), (50.0, "batch-a", "Stopped")];
    for (end, want) in [
        (38.0, Status::Pass), // 30 s after the SIGTERM at 8 s
        (37.0, Status::Pass), // 29 s: the lower bound
        (40.0, Status::Pass), // 32 s: the upper bound
        (36.9, Status::Fail), // 28.9 s
        (40.1, Status::Fail), // 32.1 s
    ] {
        let a = pack(&stopped(Some(8.0), end, 137), st);
        assert_eq!(
            status(&a, "killed 29 to 32 s after SIGTERM"),
            want,
            "end {end}"
        );
    }
    // Exited by itself inside the grace (143 after 10 s), or never told SIGTERM: fails.
    let a = pack(&stopped(Some(8.0), 18.0, 143), st);
    assert_eq!(status(&a, "killed 29 to 32 s after SIGTERM"), Status::Fail);
    let a = pack(&stopped(None, 38.0, 137), st);
    assert_eq!(status(&a, "killed 29 to 32 s after SIGTERM"), Status::Fail);
}

#[test]
fn a_timeout_is_timed_from_the_replicas_creation_or_its_executions_start() {
    // Created at 2 s, its container started 1.5 s later (a loaded machine), stopped at `end`.
    let one = |end: f64| Rep {
        exec: "batch-a",
        name: "batch-a-1",
        created_s: Some(2.0),
        start_s: 3.5,
        sigterm_s: None,
        end_s: end,
        code: 143,
    };
    let st = &[(2.5, "batch-a", "Running"), (30.0, "batch-a", "Failed")];
    let (created, execution, start) = (
        "stopped 4 to 8 s after its creation",
        "stopped 4 to 8 s after its execution's start",
        "stopped 4 to 8 s after its start",
    );
    for (end, want) in [
        (7.0, Status::Pass),  // 5 s after its creation
        (6.0, Status::Pass),  // 4 s: the lower bound
        (10.0, Status::Pass), // 8 s: the upper bound
        (5.9, Status::Fail),  // 3.9 s
        (10.1, Status::Fail), // 8.1 s
    ] {
        let a = pack(&[one(end)], st);
        assert_eq!(status(&a, created), want, "end {end}");
        // The execution's first row is this replica's: the same instant.
        assert_eq!(status(&a, execution), want, "end {end}");
    }
    // Timed from its ContainerStarted row, the stop at 5 s reads 3.5 s: the bound fails.
    let a = pack(&[one(7.0)], st);
    assert_eq!(status(&a, start), Status::Fail);
    // A retry created at 8 s and stopped at 13 s: 5 s after its own creation, but 11 s after
    // its execution's start, so an execution-wide deadline did not stop it.
    let retry = Rep {
        name: "batch-a-2",
        created_s: Some(8.0),
        start_s: 8.5,
        end_s: 13.0,
        ..one(7.0)
    };
    let a = pack(&[one(7.0), retry], st);
    assert_eq!(status(&a, created), Status::Pass);
    assert_eq!(status(&a, execution), Status::Fail);
    let g = a
        .gates
        .iter()
        .find(|g| g.name == format!("check:{execution}"))
        .unwrap();
    assert!(
        g.detail
            .contains("batch-a-2 ended 11.000 s after its execution's start"),
        "{}",
        g.detail
    );
}

#[test]
fn executions_at_once_are_counted_from_their_rows_on_both_sides() {
    let exec = |exec: &'static str, name: &'static str, start_s: f64, end_s: f64| Rep {
        exec,
        name,
        created_s: None,
        start_s,
        sigterm_s: None,
        end_s,
        code: 0,
    };
    let ok = &[(2.0, "batch-a", "Running"), (50.0, "batch-a", "Succeeded")];
    // The second starts 10 s before the first ends: 2 at once.
    let a = pack(
        &[
            exec("batch-a", "batch-a-1", 2.0, 22.0),
            exec("batch-b", "batch-b-1", 12.0, 32.0),
        ],
        ok,
    );
    assert_eq!(status(&a, "two at once"), Status::Pass);
    // The second starts as the first ends: never 2 at once.
    let a = pack(
        &[
            exec("batch-a", "batch-a-1", 2.0, 22.0),
            exec("batch-b", "batch-b-1", 22.0, 42.0),
        ],
        ok,
    );
    assert_eq!(status(&a, "two at once"), Status::Fail);
    // Three overlapping: above the max.
    let a = pack(
        &[
            exec("batch-a", "batch-a-1", 2.0, 22.0),
            exec("batch-b", "batch-b-1", 12.0, 32.0),
            exec("batch-c", "batch-c-1", 15.0, 40.0),
        ],
        ok,
    );
    assert_eq!(status(&a, "two at once"), Status::Fail);
    // A replica without an end row runs to the end of what was read: it overlaps the next.
    let a = pack(
        &[
            exec("batch-a", "batch-a-1", 2.0, f64::NAN),
            exec("batch-b", "batch-b-1", 30.0, 40.0),
        ],
        ok,
    );
    assert_eq!(status(&a, "two at once"), Status::Pass);
}

/// A lab of jobs alone (no `[[load]]`, no window): the timeline leaves out the errors, latency
/// and responses panels, which could only be empty, and draws the replicas the rows show, each
/// execution's ARM statuses as a strip row, and the system rows.
#[test]
fn a_jobs_only_timeline_draws_replicas_and_statuses_without_empty_load_panels() {
    let a = pack(&failing(3, 1.0, 1), FAILED);
    let svg = analysis::render::timeline_svg::lab(&a).unwrap();
    let panels: Vec<&str> = svg
        .match_indices(r#"data-panel=""#)
        .map(|(i, m)| {
            let rest = &svg[i + m.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect();
    assert_eq!(panels, ["replicas", "system-events"], "{panels:?}");
    assert!(svg.contains("batch/job replicas (system rows)"));
    assert!(svg.contains(">execution status (ARM)<"));
    assert!(svg.contains(r#"class="execution-status""#) && svg.contains(">Failed<"));
}
