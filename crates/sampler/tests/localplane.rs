//! The perturbation sampler against localplane's ARM API (process runtime: real `subject`
//! binaries on 127.0.0.1, through testkit's localplane harness). Needs `target/<profile>/subject`:
//! `cargo test --workspace` (or nextest) builds it; with `cargo test -p sampler` run
//! `cargo build -p subject` first.
//!
//! `cadence_holds_over_60_s_at_1_s` is the suite's one long test, on purpose: it checks the
//! absolute-time schedule over a real minute.

#![allow(clippy::unwrap_used)] // test helpers: a failure is the test failing

mod common;

use std::time::Duration;

use common::*;
use logline::line::Line;
use sampler::sink::Memory;
use serde_json::json;
use testkit::arm_plane::{ArmPlane, SUBSCRIPTION as SUB};
use testkit::eventually;
use testkit::lines::{sampler_errors, sampler_faults};
use testkit::localplane::Harness;

const RG: &str = "rg";

/// localplane (process runtime) with one environment and app `subject` with `replicas` ready
/// replicas.
async fn start(replicas: u32) -> ArmPlane {
    let lab = ArmPlane::on(Harness::process().await, RG).await;
    lab.put_subject(replicas).await;
    lab
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn samples_every_revision_and_replica_localplane_reports() {
    let lab = start(2).await;
    // A second revision through the client's env update (GET + PATCH of the whole template).
    let suffix = arm::fresh_revision_suffix();
    let app = lab
        .arm
        .set_app_env(
            &lab.scope,
            "subject",
            Some("subject"),
            "MARKER",
            "v2",
            Some(&suffix),
        )
        .await
        .unwrap();
    let c = &app.properties.template.unwrap().containers[0];
    assert_eq!(c.env_value("MARKER"), Some("v2"));
    assert_eq!(
        c.env_value("STARTUP_DELAY_SECONDS"),
        Some("0"),
        "rest of template kept"
    );
    lab.settle(2, 2, Duration::from_secs(60)).await;

    let cfg = config(&lab.plane.base_url(), "subject", "500ms", "2s");
    let sink = Memory::default();
    let out = sampler::run_with(&cfg, &client(&cfg), &sink, std::future::pending())
        .await
        .unwrap();
    assert_eq!((out.ticks_scheduled, out.ticks_completed), (4, 4));
    let lines = sink.lines();
    assert!(sampler_faults(&lines).is_empty(), "{lines:#?}");

    let revs = lab.arm.list_revisions(&lab.scope, "subject").await.unwrap();
    let active = revs.iter().find(|r| r.properties.active).unwrap();
    assert!(active.name.ends_with(&suffix), "{}", active.name);
    let reps = lab
        .arm
        .list_replicas(&lab.scope, "subject", &active.name)
        .await
        .unwrap();
    for tick in 0..4 {
        let mut rev_names: Vec<String> = lines
            .iter()
            .filter_map(|l| match l {
                Line::RevisionStateSample(s) if s.tick == Some(tick) => Some(s.revision.clone()),
                _ => None,
            })
            .collect();
        rev_names.sort();
        let mut want: Vec<String> = revs.iter().map(|r| r.name.clone()).collect();
        want.sort();
        assert_eq!(rev_names, want, "tick {tick}");
        let mut rep_names: Vec<String> = lines
            .iter()
            .filter_map(|l| match l {
                Line::ReplicaInventorySample(s) if s.tick == Some(tick) => {
                    assert_eq!(s.revision, active.name);
                    assert!(s.containers.iter().all(|c| c.ready && c.started));
                    Some(s.replica.clone())
                }
                _ => None,
            })
            .collect();
        rep_names.sort();
        let mut want: Vec<String> = reps.iter().map(|r| r.name.clone()).collect();
        want.sort();
        assert_eq!(rep_names, want, "tick {tick}");
    }
    let sample = lines
        .iter()
        .find_map(|l| match l {
            Line::RevisionStateSample(s) if s.revision == active.name => Some(s.clone()),
            _ => None,
        })
        .unwrap();
    assert!(sample.active && sample.replicas == 2 && sample.traffic_weight == 100);
    lab.plane.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn localplane_faults_cost_only_the_ticks_they_hit_and_are_reported() {
    let lab = start(1).await;
    let base = lab.plane.base_url();
    let cfg = config(&base, "subject", "1s", "8s");
    let sink = Memory::default();
    let arm = client(&cfg);
    let run = sampler::run_with(&cfg, &arm, &sink, std::future::pending());
    let inject = async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        post_fault(&base, r#"{"kind":"429","count":2,"retry_after_s":2}"#).await;
        tokio::time::sleep(Duration::from_millis(3000)).await;
        post_fault(&base, r#"{"kind":"500","count":2}"#).await;
    };
    let (out, ()) = tokio::join!(run, inject);
    let out = out.unwrap();
    let lines = sink.lines();
    assert_eq!(out.ticks_run, 8, "every tick ran: {lines:#?}");
    assert_eq!(out.ticks_skipped, 0);
    let errs = sampler_errors(&lines);
    assert!(
        errs.iter()
            .any(|e| e.status == Some(429) && e.code.as_deref().is_some_and(|c| !c.is_empty())),
        "429 reported with its ARM code: {errs:#?}"
    );
    // Two throttled answers spoil at most two ticks (a 2 s Retry-After does not fit in a 1 s
    // slot, so the tick reports instead of waiting); 500s are retried inside the slot and spoil
    // at most two more.
    let spoiled: std::collections::BTreeSet<_> = errs.iter().filter_map(|e| e.tick).collect();
    assert!(spoiled.len() <= 4, "{errs:#?}");
    assert!(out.ticks_completed >= 8 - spoiled.len() as u64);
    assert!(
        errs.iter()
            .all(|e| e.operation != "tick_late" && e.operation != "tick_skipped"),
        "{errs:#?}"
    );
    let starts = tick_starts(&lines);
    assert_on_schedule(&lines, &starts, 1000, 50);
    lab.plane.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cadence_holds_over_60_s_at_1_s() {
    let lab = start(2).await;
    let cfg = config(&lab.plane.base_url(), "subject", "1", "60");
    let sink = Memory::default();
    let out = sampler::run_with(&cfg, &client(&cfg), &sink, std::future::pending())
        .await
        .unwrap();
    let lines = sink.lines();
    assert_eq!(
        (out.ticks_scheduled, out.ticks_completed),
        (60, 60),
        "{:#?}",
        sampler_errors(&lines)
    );
    let starts = tick_starts(&lines);
    assert_eq!(starts.len(), 60);
    assert_on_schedule(&lines, &starts, 1000, 50);
    let (Line::PerturbationWindowMarker(start), Some(Line::PerturbationWindowMarker(end))) =
        (&lines[0], lines.last())
    else {
        panic!("markers first and last");
    };
    let window = end.ts.epoch_ms() - start.ts.epoch_ms();
    assert!((60_000..60_200).contains(&window), "window {window} ms");
    lab.plane.stop().await;
}

/// A job's executions, listed each tick as `JobExecutionSample` lines: a batch replica exiting
/// 3 is seen `Running`, then `Failed` with its end time; a job ARM does not know costs only its
/// own `list_executions` call (a `SamplerError`), not the app's samples.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn samples_each_jobs_executions_and_their_statuses() {
    use arm::models::Job;
    use clap::Parser;
    let lab = start(1).await;
    let (c, scope) = (&lab.arm, &lab.scope);
    let job: Job = serde_json::from_value(json!({
        "location": "local",
        "properties": {
            "environmentId": lab.environment_id(),
            "configuration": {"triggerType": "Manual", "replicaTimeout": 60, "replicaRetryLimit": 0,
                "manualTriggerConfig": {"parallelism": 1, "replicaCompletionCount": 1}},
            "template": {"containers": [{"name": "batch", "image": "probelab/subject:dev",
                "env": [{"name": "APP_MODE", "value": "batch"},
                        {"name": "WORK_MS", "value": "1500"},
                        {"name": "EXIT_CODE", "value": "3"}]}]}
        }
    }))
    .unwrap();
    c.put_job(scope, "batch", &job).await.unwrap();
    let started = c.start_job(scope, "batch", None).await.unwrap();
    let cfg = sampler::SamplerConfig::try_parse_from([
        "perturbation-sampler",
        "--subscription-id",
        SUB,
        "--resource-group",
        RG,
        "--container-app-names",
        "subject",
        "--job-names",
        "batch,nojob",
        "--arm-endpoint",
        &lab.plane.base_url(),
        "--arm-token-source",
        "none",
        "--interval",
        "500ms",
        "--duration",
        "4s",
    ])
    .unwrap();
    let sink = Memory::default();
    sampler::run_with(&cfg, &client(&cfg), &sink, std::future::pending())
        .await
        .unwrap();
    let lines = sink.lines();
    let statuses: Vec<(u64, String)> = lines
        .iter()
        .filter_map(|l| match l {
            Line::JobExecutionSample(s) if s.job == "batch" => {
                assert_eq!(s.execution, started.name);
                assert!(s.start_time.is_some(), "{s:?}");
                Some((s.tick.unwrap_or(0), s.status.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(statuses.len(), 8, "one line per tick: {statuses:?}");
    assert_eq!(statuses[0].1, "Running", "{statuses:?}");
    assert_eq!(statuses[7].1, "Failed", "{statuses:?}");
    let failed_end = lines.iter().rev().find_map(|l| match l {
        Line::JobExecutionSample(s) if s.status == "Failed" => s.end_time.clone(),
        _ => None,
    });
    assert!(failed_end.is_some(), "a Failed execution has its end time");
    let errors = sampler_errors(&lines);
    assert_eq!(errors.len(), 8, "nojob fails each tick: {errors:#?}");
    assert!(
        errors
            .iter()
            .all(|e| e.operation == "list_executions" && e.app.as_deref() == Some("nojob"))
    );
    assert!(
        lines
            .iter()
            .any(|l| matches!(l, Line::RevisionStateSample(s) if s.tick == Some(7)))
    );
    lab.plane.stop().await;
}

/// The ARM client's revision and job operations against localplane (here because sampler is
/// the crate whose tests already run localplane; arm itself stays free of it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arm_revision_restart_and_job_operations_against_localplane() {
    use arm::models::{Job, JobExecutionStatus, JobExecutionTemplate};
    let lab = start(1).await;
    let (c, scope) = (&lab.arm, &lab.scope);
    let revs = c.list_revisions(scope, "subject").await.unwrap();
    c.restart_revision(scope, "subject", &revs[0].name)
        .await
        .unwrap();
    lab.settle(1, 1, Duration::from_secs(60)).await;

    let job: Job = serde_json::from_value(json!({
        "location": "local",
        "properties": {
            "environmentId": lab.environment_id(),
            "configuration": {"triggerType": "Manual", "replicaTimeout": 60, "replicaRetryLimit": 0,
                "manualTriggerConfig": {"parallelism": 1, "replicaCompletionCount": 1}},
            "template": {"terminationGracePeriodSeconds": 1,
                "containers": [{"name": "worker", "image": "probelab/subject:dev",
                                "env": [{"name": "STARTUP_DELAY_SECONDS", "value": "0"}]}]}
        }
    }))
    .unwrap();
    c.put_job(scope, "sweep", &job).await.unwrap();
    let job = c
        .set_job_env(scope, "sweep", Some("worker"), "MARKER", "j2")
        .await
        .unwrap();
    let worker = &job.properties.template.unwrap().containers[0];
    assert_eq!(worker.env_value("MARKER"), Some("j2"));
    assert_eq!(worker.env_value("STARTUP_DELAY_SECONDS"), Some("0"));
    assert_eq!(
        job.properties.configuration.unwrap().replica_timeout,
        Some(60)
    );

    let first = c.start_job(scope, "sweep", None).await.unwrap();
    assert!(!first.name.is_empty());
    let override_template: JobExecutionTemplate = serde_json::from_value(json!({
        "containers": [{"name": "worker", "image": "probelab/subject:dev",
                        "env": [{"name": "APP_NAME", "value": "override"}]}]
    }))
    .unwrap();
    let second = c
        .start_job(scope, "sweep", Some(&override_template))
        .await
        .unwrap();
    assert_ne!(first.name, second.name);
    let execs = c.list_executions(scope, "sweep").await.unwrap();
    assert_eq!(execs.len(), 2);
    let e2 = c.get_execution(scope, "sweep", &second.name).await.unwrap();
    let t = e2.properties.template.unwrap();
    assert_eq!(t.containers[0].env_value("APP_NAME"), Some("override"));

    for name in [&first.name, &second.name] {
        c.stop_execution(scope, "sweep", name).await.unwrap();
    }
    eventually(
        Duration::from_secs(20),
        "execution stopped through the API",
        || async {
            let e = c.get_execution(scope, "sweep", &first.name).await.unwrap();
            (e.properties.status == Some(JobExecutionStatus::Stopped)).then_some(())
        },
    )
    .await;
    let err = c.get_execution(scope, "sweep", "nope").await.unwrap_err();
    assert!(err.is_not_found(), "{err}");
    lab.plane.stop().await;
}
