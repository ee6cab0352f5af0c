//! The `probelab/audit:dev` image against localplane's ARM API (in-process, Docker runtime, the
//! subject image as app `subject`). The audit contract, as a user reads it: every line says
//! `sampler: "audit"` and carries `RUN_LABEL` as `run_id`; the window defaults to
//! `REPLICA_TIMEOUT_SECONDS` minus a margin and the container exits 0 when it ends, so a cron
//! execution ends Succeeded instead of being killed at `replicaTimeout`; on SIGTERM it writes an
//! `interrupted` line and the end marker and exits 143.

mod common;

use std::time::{Duration, Instant};

use arm::models::{Job, JobExecutionStatus};
use common::plane::*;
use logline::line::Line;
use serde_json::json;
use testkit::docker::{require_docker, wait_exit};
use testkit::lines::sampler_errors;
use testkit::testcontainers::ImageExt;
use testkit::testcontainers::runners::AsyncRunner;

const IMAGE: &str = "audit";
const RUN_LABEL: &str = "nightly-audit";

/// Asserts every sample and marker line is labelled as audit's, with `RUN_LABEL` as `run_id`.
fn assert_labelled(lines: &[Line]) {
    for l in lines {
        let (sampler, run_id) = match l {
            Line::RevisionStateSample(s) => (&s.sampler, &s.run_id),
            Line::ReplicaInventorySample(s) => (&s.sampler, &s.run_id),
            Line::PerturbationWindowMarker(m) => (&m.sampler, &m.run_id),
            Line::SamplerError(e) => (&e.sampler, &e.run_id),
            _ => continue,
        };
        assert_eq!(
            (sampler.as_deref(), run_id.as_deref()),
            (Some(IMAGE), Some(RUN_LABEL)),
            "{l:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_image_samples_a_window_derived_from_replica_timeout_and_exits_0() {
    let Some(docker) = require_docker().await else {
        return;
    };
    docker.require_image("subject").await;
    docker.require_image(IMAGE).await;
    let plane = start_plane().await;
    plane.put_subject(2).await;
    let (rev, reps) = plane.settle(1, 2, Duration::from_secs(5)).await;

    // No AUDIT_WINDOW_SECONDS: the window is the replica timeout minus max(20 s, a sixth).
    let (replica_timeout_s, window_s) = (24_u64, 4_u64);
    let started = Instant::now();
    let audit = sampler_container(&plane, IMAGE)
        .with_env_var("SAMPLE_INTERVAL_SECONDS", "1")
        .with_env_var("REPLICA_TIMEOUT_SECONDS", replica_timeout_s.to_string())
        .with_env_var("RUN_LABEL", RUN_LABEL)
        .start()
        .await
        .unwrap_or_else(|e| panic!("audit container did not start: {e}"));
    let code = wait_exit(&audit, Duration::from_secs(window_s + 20)).await;
    let took = started.elapsed();
    let lines = lines_of(&audit).await;
    assert_eq!(code, 0, "audit exits 0 when its window ends: {lines:#?}");
    assert!(
        took < Duration::from_secs(replica_timeout_s),
        "audit ended before the replica timeout would kill it: {took:?}"
    );

    let unexpected = unexpected_errors(&lines, &[]);
    assert!(unexpected.is_empty(), "errors: {unexpected:#?}");
    assert_labelled(&lines);
    let (start, end) = markers(&lines);
    assert_eq!(start.apps, [APP]);
    assert_eq!(
        (start.interval_s, start.duration_s),
        (Some(1.0), Some(window_s as f64)),
        "the derived window"
    );
    assert_eq!(
        (end.ticks_scheduled, end.ticks_completed),
        (Some(window_s), Some(window_s))
    );
    let window_ms = end.ts.epoch_ms() - start.ts.epoch_ms();
    assert!(
        (window_s as i64 * 1000..window_s as i64 * 1000 + CADENCE_TOLERANCE_MS)
            .contains(&window_ms),
        "the end marker closes the window on time: {window_ms} ms"
    );
    assert_on_cadence(&lines, window_s, 1000);
    let mut want_reps: Vec<(String, String)> = reps
        .iter()
        .map(|r| (rev.name.clone(), r.name.clone()))
        .collect();
    want_reps.sort();
    for k in 0..window_s {
        assert_eq!(
            revisions_at(&lines, k),
            [(rev.name.clone(), true, 2, 100)],
            "tick {k}"
        );
        assert_eq!(
            replicas_at(&lines, k),
            want_reps,
            "tick {k}: what ARM lists"
        );
    }

    audit
        .rm()
        .await
        .unwrap_or_else(|e| panic!("removing the audit container: {e}"));
    plane.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_image_runs_as_non_root_pid_1_and_on_docker_stop_writes_its_end_marker_and_exits_143()
{
    let Some(docker) = require_docker().await else {
        return;
    };
    docker.require_image("subject").await;
    docker.require_image(IMAGE).await;
    let plane = start_plane().await;
    plane.put_subject(1).await;

    let audit = sampler_container(&plane, IMAGE)
        .with_env_var("SAMPLE_INTERVAL_SECONDS", "1")
        .with_env_var("AUDIT_WINDOW_SECONDS", "60")
        .with_env_var("RUN_LABEL", RUN_LABEL)
        .start()
        .await
        .unwrap_or_else(|e| panic!("audit container did not start: {e}"));
    assert_pid1_non_root(&docker, &audit, IMAGE, "/audit").await;
    tokio::time::sleep(Duration::from_millis(3300)).await;

    let stop_at = Instant::now();
    audit
        .stop_with_timeout(Some(10))
        .await
        .unwrap_or_else(|e| panic!("docker stop: {e}"));
    let took = stop_at.elapsed();
    let code = wait_exit(&audit, Duration::from_secs(5)).await;
    let lines = lines_of(&audit).await;
    assert_eq!(
        code, 143,
        "SIGTERM reached audit as PID 1 and it exited 143, so the stopped execution still \
         shows as a failure (137 would be a SIGKILL after the grace): {lines:#?}"
    );
    assert!(took < Duration::from_secs(5), "docker stop took {took:?}");
    let unexpected = unexpected_errors(&lines, &["interrupted"]);
    assert!(unexpected.is_empty(), "errors: {unexpected:#?}");
    assert_labelled(&lines);
    let interrupted: Vec<_> = sampler_errors(&lines)
        .into_iter()
        .filter(|e| e.operation == "interrupted")
        .collect();
    assert_eq!(interrupted.len(), 1, "one `interrupted` line: {lines:#?}");
    let (_, end) = markers(&lines);
    let ran = ticks(&lines).len() as u64;
    assert!(
        ran >= 3,
        "about 3.3 s of 1 s ticks before the stop, got {ran}"
    );
    assert_eq!(
        (end.ticks_scheduled, end.ticks_completed),
        (Some(60), Some(ran))
    );
    assert_on_cadence(&lines, ran, 1000);

    audit
        .rm()
        .await
        .unwrap_or_else(|e| panic!("removing the audit container: {e}"));
    plane.stop().await;
}

/// The image as the platform runs it: a Container Apps job whose execution localplane starts on
/// its network with `ARM_ENDPOINT`/`ARM_TOKEN_SOURCE` filled in. With `replicaTimeout` 25 s and
/// no window set, audit samples 5 s and the execution ends Succeeded, its lines in the console
/// log table under the execution's name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_image_as_a_job_execution_ends_succeeded_before_its_replica_timeout() {
    let Some(docker) = require_docker().await else {
        return;
    };
    docker.require_image("subject").await;
    docker.require_image(IMAGE).await;
    let plane = start_plane().await;
    let rev = plane.put_subject(1).await;

    let (replica_timeout_s, window_s) = (25_u64, 5_u64);
    let job: Job = serde_json::from_value(json!({
        "location": "local",
        "properties": {
            "environmentId": plane.environment_id(),
            "configuration": {"triggerType": "Manual", "replicaTimeout": replica_timeout_s,
                "replicaRetryLimit": 0,
                "manualTriggerConfig": {"parallelism": 1, "replicaCompletionCount": 1}},
            "template": {"containers": [{"name": "audit", "image": "probelab/audit:dev",
                "env": [
                    {"name": "SUBSCRIPTION_ID", "value": SUB},
                    {"name": "RESOURCE_GROUP", "value": RG},
                    {"name": "CONTAINER_APP_NAMES", "value": APP},
                    {"name": "SAMPLE_INTERVAL_SECONDS", "value": "1"},
                    {"name": "REPLICA_TIMEOUT_SECONDS", "value": replica_timeout_s.to_string()},
                    {"name": "RUN_LABEL", "value": RUN_LABEL}
                ]}]}
        }
    }))
    .unwrap_or_else(|e| panic!("job body: {e}"));
    plane
        .arm
        .put_job(&plane.scope, "audit", &job)
        .await
        .unwrap_or_else(|e| panic!("PUT job: {e}"));
    let started = Instant::now();
    let exec = plane
        .arm
        .start_job(&plane.scope, "audit", None)
        .await
        .unwrap_or_else(|e| panic!("start job: {e}"));
    let status = loop {
        let e = plane
            .arm
            .get_execution(&plane.scope, "audit", &exec.name)
            .await
            .unwrap_or_else(|e| panic!("get execution: {e}"));
        match e.properties.status {
            Some(JobExecutionStatus::Running | JobExecutionStatus::Processing) | None => {}
            Some(s) => break s,
        }
        assert!(
            started.elapsed() < Duration::from_secs(replica_timeout_s + 15),
            "execution {} still running after its replica timeout",
            exec.name
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let took = started.elapsed();
    assert_eq!(
        status,
        JobExecutionStatus::Succeeded,
        "the audit execution ends on its own, exit 0"
    );
    assert!(
        took < Duration::from_secs(replica_timeout_s - 10),
        "ended with its window ({window_s} s), well before the replica timeout: {took:?}"
    );

    // The execution's stdout, as the console log table holds it (written asynchronously).
    let table = plane
        .plane
        .evidence_dir()
        .join("logs/ContainerAppConsoleLogs_CL.ndjson");
    let deadline = Instant::now() + Duration::from_secs(10);
    let lines = loop {
        let text = std::fs::read_to_string(&table).unwrap_or_default();
        let lines: Vec<Line> = text
            .lines()
            .filter_map(|row| serde_json::from_str::<serde_json::Value>(row).ok())
            .filter(|row| {
                row["JobName_s"] == "audit"
                    && row["ExecutionName_s"] == exec.name
                    && row["Stream_s"] == "stdout"
            })
            .map(|row| {
                let log = row["Log_s"].as_str().unwrap_or_default().to_owned();
                Line::from_json(&log).unwrap_or_else(|e| panic!("Log_s is not a line: {e}: {log}"))
            })
            .collect();
        let ended = lines.iter().any(|l| {
            matches!(l, Line::PerturbationWindowMarker(m) if m.phase == logline::line::MarkerPhase::End)
        });
        if ended {
            break lines;
        }
        assert!(
            Instant::now() < deadline,
            "no end marker of execution {} in {}: {lines:#?}",
            exec.name,
            table.display()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let unexpected = unexpected_errors(&lines, &[]);
    assert!(unexpected.is_empty(), "errors: {unexpected:#?}");
    assert_labelled(&lines);
    let (start, end) = markers(&lines);
    assert_eq!(start.duration_s, Some(window_s as f64));
    assert_eq!(
        (end.ticks_scheduled, end.ticks_completed),
        (Some(window_s), Some(window_s))
    );
    assert_on_cadence(&lines, window_s, 1000);
    for k in 0..window_s {
        assert_eq!(
            revisions_at(&lines, k),
            [(rev.name.clone(), true, 1, 100)],
            "tick {k}"
        );
        assert_eq!(replicas_at(&lines, k).len(), 1, "tick {k}");
    }
    plane.stop().await;
}
