//! `job start` through the Azure code path (`Target::azure` with `ARM_ENDPOINT` pointing at
//! localplane, no token on loopback): update-then-start, override, and the per-job lock that
//! keeps concurrent update-then-starts from running with each other's settings.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use localplane::{LocalplaneConfig, RuntimeKind};
use runner::deploy;
use runner::jobs::{self, JobLock, StartMode};
use runner::target::Target;

async fn plane(dir: &std::path::Path) -> localplane::Localplane {
    // The process runtime with an empty bin dir: executions are recorded (with their template)
    // and fail at once, which is all these tests need.
    localplane::start(LocalplaneConfig {
        max_replicas: localplane::quota::DEFAULT_MAX_REPLICAS,
        tls: false,
        listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        state_dir: dir.join("state"),
        evidence_dir: dir.join("evidence"),
        runtime: RuntimeKind::Process {
            bin_dir: dir.join("no-binaries"),
        },
    })
    .await
    .unwrap()
}

fn azure_target(base: &str) -> Target {
    let base = base.to_owned();
    Target::azure(&move |k| match k {
        "SUBSCRIPTION_ID" => Some("11111111-2222-3333-4444-555555555555".into()),
        "RESOURCE_GROUP" => Some("probelab-rg".into()),
        "ARM_ENDPOINT" => Some(base.clone()),
        _ => None,
    })
    .unwrap()
}

async fn exec_env(t: &Target, job: &str, exec: &str, name: &str) -> Option<String> {
    let e = t.arm.get_execution(&t.scope, job, exec).await.unwrap();
    let tpl = e.properties.template.unwrap();
    tpl.containers[0].env_value(name).map(str::to_owned)
}

async fn job_env(t: &Target, job: &str, name: &str) -> Option<String> {
    let j = t.arm.get_job(&t.scope, job).await.unwrap();
    j.properties.template.unwrap().containers[0]
        .env_value(name)
        .map(str::to_owned)
}

#[tokio::test]
async fn update_then_start_patches_the_template_and_override_leaves_it_alone() {
    let dir = tempfile::tempdir().unwrap();
    let lp = plane(dir.path()).await;
    let t = azure_target(&lp.base_url());
    assert_eq!(t.kind, runner::target::TargetKind::Azure);
    deploy::local_infrastructure(&t, Duration::from_secs(600))
        .await
        .unwrap();
    let job = t.loadgen_job.clone();
    let locks = dir.path().join("locks");
    let set = |k: &str, v: &str| (k.to_owned(), Some(v.to_owned()));

    let a = jobs::start(
        &t,
        &job,
        &[set("RUN_ID", "baseline-a"), set("TARGET_RPS", "50")],
        StartMode::UpdateThenStart,
        &locks,
    )
    .await
    .unwrap();
    assert_eq!(
        exec_env(&t, &job, &a, "RUN_ID").await.as_deref(),
        Some("baseline-a")
    );
    assert_eq!(
        job_env(&t, &job, "RUN_ID").await.as_deref(),
        Some("baseline-a")
    );
    assert_eq!(job_env(&t, &job, "TARGET_RPS").await.as_deref(), Some("50"));
    assert_eq!(
        job_env(&t, &job, "SUBSCRIPTION_ID").await.as_deref(),
        Some(t.scope.subscription_id.as_str()),
        "variables the start does not name are kept"
    );

    let b = jobs::start(
        &t,
        &job,
        &[set("RUN_ID", "override-b"), ("TARGET_RPS".into(), None)],
        StartMode::Override,
        &locks,
    )
    .await
    .unwrap();
    assert_eq!(
        exec_env(&t, &job, &b, "RUN_ID").await.as_deref(),
        Some("override-b")
    );
    assert_eq!(
        job_env(&t, &job, "RUN_ID").await.as_deref(),
        Some("baseline-a"),
        "override leaves the job template untouched"
    );
    assert_eq!(job_env(&t, &job, "TARGET_RPS").await.as_deref(), Some("50"));
    let st = jobs::wait(&t, &job, &b, Duration::from_secs(30))
        .await
        .unwrap();
    assert_ne!(st, "Running");
    assert!(
        !locks.read_dir().unwrap().any(|_| true),
        "no lock file is left behind"
    );
    lp.shutdown().await.unwrap();
}

#[tokio::test]
async fn concurrent_update_then_starts_never_run_with_each_others_settings() {
    let dir = tempfile::tempdir().unwrap();
    let lp = plane(dir.path()).await;
    let t = Arc::new(azure_target(&lp.base_url()));
    deploy::local_infrastructure(&t, Duration::from_secs(600))
        .await
        .unwrap();
    let job = t.loadgen_job.clone();
    let locks = dir.path().join("locks");

    let mut tasks = Vec::new();
    for i in 0..8 {
        let (t, job, locks) = (t.clone(), job.clone(), locks.clone());
        tasks.push(tokio::spawn(async move {
            let run = format!("run-{i}");
            let exec = jobs::start(
                &t,
                &job,
                &[("RUN_ID".into(), Some(run.clone()))],
                StartMode::UpdateThenStart,
                &locks,
            )
            .await
            .unwrap();
            (run, exec)
        }));
    }
    let mut seen = BTreeSet::new();
    for task in tasks {
        let (run, exec) = task.await.unwrap();
        assert_eq!(
            exec_env(&t, &job, &exec, "RUN_ID").await.as_deref(),
            Some(run.as_str()),
            "execution {exec} ran with another start's RUN_ID"
        );
        seen.insert(run);
    }
    assert_eq!(seen.len(), 8);
    lp.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_held_lock_delays_the_start_until_it_is_released() {
    let dir = tempfile::tempdir().unwrap();
    let lp = plane(dir.path()).await;
    let t = Arc::new(azure_target(&lp.base_url()));
    deploy::local_infrastructure(&t, Duration::from_secs(600))
        .await
        .unwrap();
    let job = t.loadgen_job.clone();
    let locks = dir.path().join("locks");
    let name = jobs::lock_name(&t, &job);
    assert_eq!(
        name,
        format!("127_0_0_1-{}-probelab-rg-{job}", lp.addr().port())
    );
    let held = JobLock::acquire(&locks, &name, Duration::from_secs(1))
        .await
        .unwrap();
    let task = {
        let (t, job, locks) = (t.clone(), job.clone(), locks.clone());
        tokio::spawn(async move {
            jobs::start(
                &t,
                &job,
                &[("RUN_ID".into(), Some("late".into()))],
                StartMode::UpdateThenStart,
                &locks,
            )
            .await
            .unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(
        t.arm
            .list_executions(&t.scope, &job)
            .await
            .unwrap()
            .is_empty(),
        "the start must wait for the lock"
    );
    drop(held);
    let exec = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        exec_env(&t, &job, &exec, "RUN_ID").await.as_deref(),
        Some("late")
    );
    lp.shutdown().await.unwrap();
}

/// The job's `manualTriggerConfig` as localplane stores it.
async fn manual_config(t: &Target, job: &str) -> serde_json::Value {
    let j = t.arm.get_job(&t.scope, job).await.unwrap();
    j.properties
        .configuration
        .unwrap()
        .manual_trigger_config
        .unwrap()
}

#[tokio::test]
async fn a_start_states_its_replica_count_and_override_refuses_another() {
    let dir = tempfile::tempdir().unwrap();
    let lp = plane(dir.path()).await;
    let t = azure_target(&lp.base_url());
    deploy::local_infrastructure(&t, Duration::from_secs(600))
        .await
        .unwrap();
    let job = t.loadgen_job.clone();
    let locks = dir.path().join("locks");
    let env = [("RUN_ID".to_owned(), Some("r".to_owned()))];
    let start = |n: Option<u32>, mode| {
        let (t, job, env, locks) = (&t, &job, &env, &locks);
        async move { jobs::start_replicas(t, job, env, n, mode, locks).await }
    };
    let three = start(Some(3), StartMode::UpdateThenStart).await.unwrap();
    let m = manual_config(&t, &job).await;
    assert_eq!(m["parallelism"], 3);
    assert_eq!(m["replicaCompletionCount"], 3);
    let j = t.arm.get_job(&t.scope, &job).await.unwrap();
    let c = j.properties.configuration.unwrap();
    assert_eq!(
        c.replica_timeout,
        Some(600),
        "the rest of the configuration is kept"
    );
    // No binary to run: each of the three replicas fails to start, so the execution fails.
    let st = jobs::wait(&t, &job, &three, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(st, "Failed");
    let sys = dir
        .path()
        .join("evidence/logs/ContainerAppSystemLogs_CL.ndjson");
    let replicas = || -> BTreeSet<String> {
        std::fs::read_to_string(&sys)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|r| r["ExecutionName_s"] == three.as_str())
            .filter(|r| r["Reason_s"] == "ContainerCreateFailure")
            .filter_map(|r| r["ReplicaName_s"].as_str().map(str::to_owned))
            .collect()
    };
    testkit::wait::eventually_blocking(
        Duration::from_secs(10),
        "three replicas' ContainerCreateFailure rows",
        || (replicas().len() == 3).then_some(()),
    );
    // No count: the job is left as it is.
    start(None, StartMode::UpdateThenStart).await.unwrap();
    assert_eq!(manual_config(&t, &job).await["parallelism"], 3);
    start(Some(1), StartMode::UpdateThenStart).await.unwrap();
    assert_eq!(manual_config(&t, &job).await["parallelism"], 1);
    start(Some(1), StartMode::Override).await.unwrap();
    let e = start(Some(2), StartMode::Override).await.unwrap_err();
    assert!(
        e.to_string()
            .contains("needs 2 replicas per execution and the job runs 1"),
        "{e}"
    );
    lp.shutdown().await.unwrap();
}
