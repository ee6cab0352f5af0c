//! The ARM subset, revisions, ingress and faults against the process runtime (real `subject`
//! binaries on 127.0.0.1).

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use testkit::eventually;

fn readiness(period: u64) -> Value {
    json!([{"type": "Readiness", "httpGet": {"path": "/readyz", "port": 8080}, "periodSeconds": period, "failureThreshold": 2}])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arm_app_lifecycle_revisions_ingress() {
    let lab = Plane::process().await;
    assert_eq!(lab.put_env().await, 201);

    // Error shapes.
    let (code, _, v) = lab
        .call("GET", &format!("{}?{AV}", lab.app_url("nope")), None)
        .await;
    assert_eq!(code, 404);
    assert_eq!(v["error"]["code"], "ResourceNotFound");
    let (code, _, v) = lab.call("GET", &lab.app_url("nope"), None).await;
    assert_eq!(code, 400);
    assert_eq!(v["error"]["code"], "MissingApiVersionParameter");
    let (code, _, v) = lab
        .call(
            "PUT",
            &format!("{}?{AV}", lab.app_url("Bad--Name")),
            Some(json!({})),
        )
        .await;
    assert_eq!(code, 400, "{v}");

    // Create: 201 + Azure-AsyncOperation, the operation succeeds once a replica is ready.
    let app = "web";
    let body = subject_app(
        json!([{"name": "STARTUP_DELAY_SECONDS", "value": "1"}]),
        2,
        readiness(1),
    );
    let (code, h, v) = lab
        .call("PUT", &format!("{}?{AV}", lab.app_url(app)), Some(body))
        .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["properties"]["provisioningState"], "InProgress");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(30)).await, "Succeeded");

    let (code, _, v) = lab
        .call("GET", &format!("{}?{AV}", lab.app_url(app)), None)
        .await;
    assert_eq!(code, 200);
    let p = &v["properties"];
    assert_eq!(p["provisioningState"], "Succeeded");
    let rev1 = p["latestRevisionName"].as_str().unwrap().to_string();
    assert!(rev1.starts_with("web--"), "{rev1}");
    assert_eq!(p["latestReadyRevisionName"], rev1.as_str());
    let fqdn = p["configuration"]["ingress"]["fqdn"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(fqdn.starts_with("127.0.0.1:"), "{fqdn}");

    // Through the ingress.
    let (code, h, _) = lab.call("GET", &format!("http://{fqdn}/"), None).await;
    assert_eq!(code, 200);
    assert_eq!(h["x-revision"], rev1.as_str());

    let (_, _, v) = lab
        .call("GET", &format!("{}/revisions?{AV}", lab.app_url(app)), None)
        .await;
    let revs = v["value"].as_array().unwrap();
    assert_eq!(revs.len(), 1);
    let r = &revs[0]["properties"];
    assert_eq!(r["active"], true);
    assert_eq!(r["trafficWeight"], 100);
    assert_eq!(r["provisioningState"], "Provisioned");
    assert_eq!(r["healthState"], "Healthy");
    // minReplicas = maxReplicas = 2, both running: Azure reports `RunningAtMaxScale`.
    assert_eq!(r["runningState"], "RunningAtMaxScale");

    let reps = eventually(Duration::from_secs(20), "2 ready replicas", || async {
        let r = lab.replicas(app, &rev1).await;
        all_ready(&r, 2).then_some(r)
    })
    .await;
    let first_names: Vec<String> = reps
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();
    for n in &first_names {
        assert!(n.starts_with(&format!("{rev1}-")), "{n}");
    }
    let (code, _, v) = lab
        .call(
            "GET",
            &format!(
                "{}/revisions/{rev1}/replicas/{}?{AV}",
                lab.app_url(app),
                first_names[0]
            ),
            None,
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(v["properties"]["containers"][0]["restartCount"], 0);
    assert_eq!(v["properties"]["containers"][0]["started"], true);

    // PATCH a template env var: 202, a new revision takes the traffic, the old one goes away.
    let patch = json!({"properties": {"template": {"containers": [{
        "name": "subject", "image": "probelab/subject:dev",
        "env": [{"name": "STARTUP_DELAY_SECONDS", "value": "1"}, {"name": "ROLLOUT_GENERATION", "value": "2"}],
        "probes": readiness(1)}]}}});
    let (code, h, v) = lab
        .call("PATCH", &format!("{}?{AV}", lab.app_url(app)), Some(patch))
        .await;
    assert_eq!(code, 202, "{v}");
    assert!(h.contains_key("location"));
    assert_eq!(lab.wait_op(&h, Duration::from_secs(30)).await, "Succeeded");
    let (_, _, v) = lab
        .call("GET", &format!("{}?{AV}", lab.app_url(app)), None)
        .await;
    let rev2 = v["properties"]["latestRevisionName"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(rev1, rev2);
    let (_, h, _) = lab.call("GET", &format!("http://{fqdn}/"), None).await;
    assert_eq!(h["x-revision"], rev2.as_str());
    assert_eq!(h["x-generation"], "2");
    eventually(
        Duration::from_secs(20),
        "old revision deprovisioned",
        || async {
            let (_, _, v) = lab
                .call(
                    "GET",
                    &format!("{}/revisions/{rev1}?{AV}", lab.app_url(app)),
                    None,
                )
                .await;
            (v["properties"]["active"] == false
                && v["properties"]["trafficWeight"] == 0
                && v["properties"]["replicas"] == 0
                && v["properties"]["provisioningState"] == "Deprovisioned")
                .then_some(())
        },
    )
    .await;

    // Revision restart replaces the replicas one at a time.
    let before: Vec<String> = lab
        .replicas(app, &rev2)
        .await
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();
    let (code, _, v) = lab
        .call(
            "POST",
            &format!("{}/revisions/{rev2}/restart?{AV}", lab.app_url(app)),
            None,
        )
        .await;
    assert_eq!(code, 200, "{v}");
    eventually(
        Duration::from_secs(30),
        "restarted replicas ready",
        || async {
            let r = lab.replicas(app, &rev2).await;
            (all_ready(&r, 2)
                && r.iter()
                    .all(|x| !before.contains(&x["name"].as_str().unwrap().to_string())))
            .then_some(())
        },
    )
    .await;
    let (code, _, v) = lab
        .call(
            "POST",
            &format!("{}/revisions/{app}--nope/restart?{AV}", lab.app_url(app)),
            None,
        )
        .await;
    assert_eq!(code, 404, "{v}");

    // Delete: 202 + Location, then 404.
    let (code, h, _) = lab
        .call("DELETE", &format!("{}?{AV}", lab.app_url(app)), None)
        .await;
    assert_eq!(code, 202);
    assert_eq!(lab.wait_op(&h, Duration::from_secs(30)).await, "Succeeded");
    let (code, _, _) = lab
        .call("GET", &format!("{}?{AV}", lab.app_url(app)), None)
        .await;
    assert_eq!(code, 404);

    let sys = lab.system_rows();
    for reason in [
        "AssigningReplica",
        "PullingImage",
        "PulledImage",
        "ContainerCreated",
        "ContainerStarted",
        "RevisionReady",
        "RevisionDeactivating",
    ] {
        assert!(
            sys.iter().any(|r| r["Reason_s"] == reason),
            "no {reason} row"
        );
    }
    let console = lab.console_rows();
    assert!(console.iter().any(|r| r["ContainerAppName_s"] == app
        && r["RevisionName_s"] == rev1.as_str()
        && r["Log_s"].as_str().unwrap_or("").contains("BOOT_START")));
    lab.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_admin_429_500_hang() {
    let lab = Plane::process().await;
    let url = format!("{}?{AV}", lab.app_url("x"));
    let faults = format!("{}/localplane/faults", lab.base);
    let (code, _, _) = lab
        .call(
            "POST",
            &faults,
            Some(json!({"kind": "429", "count": 2, "retry_after_s": 2})),
        )
        .await;
    assert_eq!(code, 200);
    for _ in 0..2 {
        let (code, h, v) = lab.call("GET", &url, None).await;
        assert_eq!(code, 429);
        assert_eq!(h["retry-after"], "2");
        assert!(v["error"]["code"].is_string());
    }
    let (code, _, _) = lab.call("GET", &url, None).await;
    assert_eq!(code, 404, "faults are used up");
    lab.call("POST", &faults, Some(json!({"kind": "500", "count": 1})))
        .await;
    let (code, _, v) = lab.call("GET", &url, None).await;
    assert_eq!(code, 500);
    assert_eq!(v["error"]["code"], "InternalServerError");
    lab.call("POST", &faults, Some(json!({"kind": "hang", "count": 5})))
        .await;
    let hung = tokio::time::timeout(Duration::from_millis(500), lab.call("GET", &url, None)).await;
    assert!(hung.is_err(), "a hung request must not be answered");
    let (code, _, _) = lab.call("DELETE", &faults, None).await;
    assert_eq!(code, 204);
    let (code, _, _) = lab.call("GET", &url, None).await;
    assert_eq!(code, 404);
    let (code, _, v) = lab
        .call("POST", &faults, Some(json!({"kind": "boom"})))
        .await;
    assert_eq!(code, 400, "{v}");
    lab.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn liveness_timeout_kills_and_restarts() {
    let lab = Plane::process().await;
    let app = "live";
    let probes = json!([{"type": "Liveness", "httpGet": {"path": "/livez", "port": 8080}, "periodSeconds": 1, "timeoutSeconds": 1, "failureThreshold": 2}]);
    let body = subject_app(
        json!([{"name": "LIVENESS_IO_DELAY", "value": "3"}]),
        1,
        probes,
    );
    let (code, _, v) = lab
        .call("PUT", &format!("{}?{AV}", lab.app_url(app)), Some(body))
        .await;
    assert_eq!(code, 201, "{v}");
    let rc = eventually(Duration::from_secs(40), "restartCount >= 1", || async {
        let (_, _, v) = lab
            .call("GET", &format!("{}/revisions?{AV}", lab.app_url(app)), None)
            .await;
        let rev = v["value"][0]["name"].as_str()?.to_string();
        let reps = lab.replicas(app, &rev).await;
        let rc = reps.first()?["properties"]["containers"][0]["restartCount"].as_u64()?;
        (rc >= 1).then_some(rc)
    })
    .await;
    assert!(rc >= 1);
    // The sink writes its rows on its own thread, and the restart count rises before the new
    // container's rows are written: wait for the restart's rows, not a moment after the count.
    let restarted = |sys: &[Value]| {
        sys.iter()
            .filter(|r| r["Reason_s"] == "ContainerStarted")
            .count()
            >= 2
    };
    let sys = eventually(
        Duration::from_secs(10),
        "a second ContainerStarted row",
        || async {
            let sys = lab.system_rows();
            restarted(&sys).then_some(sys)
        },
    )
    .await;
    assert!(
        sys.iter().any(|r| r["Reason_s"] == "ProbeFailed"
            && r["Log_s"] == "Probe of Liveness failed with timeout in 1 seconds."),
        "{sys:?}"
    );
    assert!(
        sys.iter().any(|r| r["Reason_s"] == "ContainerTerminated"
            && r["Log_s"] == "Container 'subject' was terminated with reason 'ProbeFailure'"),
        "{sys:?}"
    );
    lab.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_manual_timeout_and_stop() {
    let lab = Plane::process().await;
    let job = json!({
        "location": "local",
        "properties": {
            "configuration": {"triggerType": "Manual", "replicaTimeout": 2, "replicaRetryLimit": 0,
                "manualTriggerConfig": {"parallelism": 1, "replicaCompletionCount": 1}},
            "template": {"terminationGracePeriodSeconds": 2, "containers": [{"name": "worker", "image": "probelab/subject:dev", "env": []}]}
        }
    });
    let (code, h, v) = lab
        .call("PUT", &format!("{}?{AV}", lab.job_url("sweep")), Some(job))
        .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(5)).await, "Succeeded");
    let (code, h, v) = lab
        .call(
            "POST",
            &format!("{}/start?{AV}", lab.job_url("sweep")),
            None,
        )
        .await;
    assert_eq!(code, 202, "{v}");
    assert!(h.contains_key("location"));
    let exec = v["name"].as_str().unwrap().to_string();
    let status = eventually(Duration::from_secs(20), "execution ends", || async {
        let (_, _, v) = lab
            .call(
                "GET",
                &format!("{}/executions/{exec}?{AV}", lab.job_url("sweep")),
                None,
            )
            .await;
        let s = v["properties"]["status"].as_str()?.to_string();
        (s != "Running").then_some(s)
    })
    .await;
    assert_eq!(
        status, "Failed",
        "replicaTimeout 2 s kills a process that never exits"
    );
    let sys = lab.system_rows();
    let deadline = sys
        .iter()
        .find(|r| r["ExecutionName_s"] == exec && r["Reason_s"] == "DeadlineExceeded")
        .unwrap_or_else(|| panic!("{sys:?}"));
    assert_eq!(
        deadline["Log_s"],
        "Pod was active on the node longer than the specified deadline"
    );

    // A second execution, stopped by the API.
    let (_, _, v) = lab.call("POST", &format!("{}/start?{AV}", lab.job_url("sweep")), Some(json!({"containers": [{"name": "worker", "env": [{"name": "APP_NAME", "value": "override"}]}]}))).await;
    let exec2 = v["name"].as_str().unwrap().to_string();
    let (code, _, _) = lab
        .call(
            "POST",
            &format!("{}/executions/{exec2}/stop?{AV}", lab.job_url("sweep")),
            None,
        )
        .await;
    assert_eq!(code, 200);
    let status = eventually(Duration::from_secs(20), "execution stopped", || async {
        let (_, _, v) = lab
            .call(
                "GET",
                &format!("{}/executions/{exec2}?{AV}", lab.job_url("sweep")),
                None,
            )
            .await;
        let s = v["properties"]["status"].as_str()?.to_string();
        (s != "Running").then_some(s)
    })
    .await;
    assert_eq!(status, "Stopped");
    let (_, _, v) = lab
        .call(
            "GET",
            &format!("{}/executions?{AV}", lab.job_url("sweep")),
            None,
        )
        .await;
    assert_eq!(v["value"].as_array().unwrap().len(), 2);
    assert_eq!(
        v["value"][0]["properties"]["template"]["containers"][0]["env"][0]["value"],
        "override"
    );
    let console = lab.console_rows();
    assert!(console.iter().any(|r| r["JobName_s"] == "sweep"));
    lab.stop().await;
}

/// A Manual job of one `subject` replica with these env vars, `replicaTimeout` and retries, the
/// tags given, and a template grace of 2 s (which a job ignores: its grace is a fixed 30 s).
fn subject_job(env: Value, timeout: u64, retries: u32, tags: Value) -> Value {
    json!({
        "location": "local",
        "tags": tags,
        "properties": {
            "configuration": {"triggerType": "Manual", "replicaTimeout": timeout, "replicaRetryLimit": retries,
                "manualTriggerConfig": {"parallelism": 1, "replicaCompletionCount": 1}},
            "template": {"terminationGracePeriodSeconds": 2,
                "containers": [{"name": "worker", "image": "probelab/subject:dev", "env": env}]}
        }
    })
}

/// PUTs job `name` and starts an execution; its name.
async fn put_and_start(lab: &Plane, name: &str, body: Value) -> String {
    let (code, h, v) = lab
        .call("PUT", &format!("{}?{AV}", lab.job_url(name)), Some(body))
        .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(5)).await, "Succeeded");
    let (code, _, v) = lab
        .call("POST", &format!("{}/start?{AV}", lab.job_url(name)), None)
        .await;
    assert_eq!(code, 202, "{v}");
    v["name"]
        .as_str()
        .expect("the execution's name")
        .to_string()
}

/// The execution's status once it is no longer `Running` (within `limit`).
async fn final_status(lab: &Plane, job: &str, exec: &str, limit: Duration) -> String {
    eventually(limit, "execution ends", || async {
        let (_, _, v) = lab
            .call(
                "GET",
                &format!("{}/executions/{exec}?{AV}", lab.job_url(job)),
                None,
            )
            .await;
        let s = v["properties"]["status"].as_str()?.to_string();
        (s != "Running").then_some(s)
    })
    .await
}

/// A row's `TimeGenerated`.
fn at(row: &Value) -> chrono::DateTime<chrono::FixedOffset> {
    let t = row["TimeGenerated"].as_str().expect("TimeGenerated");
    chrono::DateTime::parse_from_rfc3339(t).expect("an RFC 3339 TimeGenerated")
}

/// The rows (console or system) of execution `exec`.
fn of(rows: Vec<Value>, exec: &str) -> Vec<Value> {
    rows.into_iter()
        .filter(|r| r["ExecutionName_s"] == exec)
        .collect()
}

/// A job replica's termination grace is a fixed 30 s, on a stop of the execution and at its
/// `replicaTimeout` alike, whatever the template says (microsoft/azure-container-apps#1669: "The
/// 30-second hard timeout on job termination"; the template here asks for 2 s). On each side
/// of the boundary: a subject that drains 29 s after SIGTERM exits by itself (code 0); one that
/// needs 31 s is SIGKILLed 30 s after SIGTERM (137).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_replicas_get_30_s_after_sigterm_whatever_the_template_says() {
    let lab = Plane::process().await;
    let drain = |s: u32| {
        json!([{"name": "SHUTDOWN_MODE", "value": "drain"},
               {"name": "SHUTDOWN_DRAIN_SECONDS", "value": s.to_string()}])
    };
    // (job, drain seconds, stopped by the API (else by a 3 s replicaTimeout), exit code).
    let cases = [
        ("stop-29", 29, true, 0),
        ("stop-31", 31, true, 137),
        ("timeout-29", 29, false, 0),
        ("timeout-31", 31, false, 137),
    ];
    let mut execs = Vec::new();
    for (job, secs, stopped, _) in cases {
        let timeout = if stopped { 600 } else { 3 };
        execs.push(put_and_start(&lab, job, subject_job(drain(secs), timeout, 0, json!({}))).await);
    }
    for ((job, _, stopped, _), exec) in cases.iter().zip(&execs) {
        if !stopped {
            continue;
        }
        // Stopped once the subject is up (its SIGTERM handler installed).
        eventually(Duration::from_secs(20), "the subject started", || async {
            of(lab.console_rows(), exec)
                .iter()
                .any(|r| {
                    r["Log_s"]
                        .as_str()
                        .unwrap_or("")
                        .contains("STARTUP_COMPLETE")
                })
                .then_some(())
        })
        .await;
        let (code, _, _) = lab
            .call(
                "POST",
                &format!("{}/executions/{exec}/stop?{AV}", lab.job_url(job)),
                None,
            )
            .await;
        assert_eq!(code, 200);
    }
    for ((job, secs, stopped, code), exec) in cases.iter().zip(&execs) {
        let status = final_status(&lab, job, exec, Duration::from_secs(60)).await;
        assert_eq!(status, if *stopped { "Stopped" } else { "Failed" }, "{job}");
        let console = of(lab.console_rows(), exec);
        let sigterm = console
            .iter()
            .find(|r| {
                r["Log_s"]
                    .as_str()
                    .unwrap_or("")
                    .contains("SIGTERM_RECEIVED")
            })
            .unwrap_or_else(|| panic!("{job}: the subject saw SIGTERM: {console:?}"));
        let sys = of(lab.system_rows(), exec);
        let terminated = sys
            .iter()
            .find(|r| r["Reason_s"] == "ContainerTerminated")
            .unwrap_or_else(|| panic!("{job}: {sys:?}"));
        assert_eq!(
            terminated["Log_s"],
            format!("Container 'worker' was terminated with exit code '{code}'"),
            "{job}: a {secs} s drain against the 30 s grace"
        );
        let took = (at(terminated) - at(sigterm)).num_milliseconds();
        eprintln!("{job}: SIGTERM to ContainerTerminated {took} ms, exit {code}");
        if *code == 0 {
            assert!(
                (28_500..30_000).contains(&took),
                "{job}: exited by itself after {took} ms"
            );
        } else {
            assert!(
                (29_900..32_000).contains(&took),
                "{job}: SIGKILL after {took} ms"
            );
        }
        assert_eq!(
            sys.iter().any(|r| r["Reason_s"] == "DeadlineExceeded"),
            !stopped,
            "{job}: {sys:?}"
        );
    }
    lab.stop().await;
}

/// `replicaTimeout` bounds each replica by default (the spec: "Maximum number of seconds a
/// replica is allowed to run"): a replica that never exits is stopped 3 s after it started with
/// the kubelet's `DeadlineExceeded` row, and the retry gets its own 3 s. Under the tag
/// `localplane.replicaTimeout=execution` it bounds the execution, as a Kubernetes Job's
/// `activeDeadlineSeconds` (the row users post, microsoft/azure-container-apps#986): 3 s after
/// the start the execution is Failed with "Job was active longer than specified deadline" and
/// no retry starts, though `replicaRetryLimit` allows one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replica_timeout_bounds_each_replica_or_under_the_tag_the_execution() {
    let lab = Plane::process().await;
    let per_replica =
        put_and_start(&lab, "per-replica", subject_job(json!([]), 3, 1, json!({}))).await;
    let per_exec = put_and_start(
        &lab,
        "per-exec",
        subject_job(
            json!([]),
            3,
            1,
            json!({"localplane.replicaTimeout": "execution"}),
        ),
    )
    .await;
    let started = tokio::time::Instant::now();
    assert_eq!(
        final_status(&lab, "per-exec", &per_exec, Duration::from_secs(40)).await,
        "Failed"
    );
    assert_eq!(
        final_status(&lab, "per-replica", &per_replica, Duration::from_secs(40)).await,
        "Failed"
    );
    assert!(
        started.elapsed() >= Duration::from_secs(5),
        "two 3 s replicas, one after the other"
    );

    let replicas = |sys: &[Value]| {
        let mut r: Vec<String> = sys
            .iter()
            .filter(|r| r["Reason_s"] == "ContainerStarted")
            .map(|r| r["ReplicaName_s"].as_str().unwrap().to_string())
            .collect();
        r.dedup();
        r
    };
    let sys = of(lab.system_rows(), &per_replica);
    let deadlines: Vec<&Value> = sys
        .iter()
        .filter(|r| r["Reason_s"] == "DeadlineExceeded")
        .collect();
    assert_eq!(replicas(&sys).len(), 2, "the retry ran: {sys:?}");
    assert_eq!(deadlines.len(), 2, "one per replica: {sys:?}");
    for d in &deadlines {
        assert_eq!(
            d["Log_s"],
            "Pod was active on the node longer than the specified deadline"
        );
        assert_eq!(d["Type_s"], "Normal");
        assert!(replicas(&sys).contains(&d["ReplicaName_s"].as_str().unwrap().to_string()));
    }
    let span = (at(deadlines[1]) - at(deadlines[0])).num_milliseconds();
    assert!(span >= 2_900, "the retry got its own 3 s: {span} ms");

    let sys = of(lab.system_rows(), &per_exec);
    assert_eq!(
        replicas(&sys).len(),
        1,
        "no retry after the deadline: {sys:?}"
    );
    let deadlines: Vec<&Value> = sys
        .iter()
        .filter(|r| r["Reason_s"] == "DeadlineExceeded")
        .collect();
    assert_eq!(deadlines.len(), 1, "{sys:?}");
    assert_eq!(
        deadlines[0]["Log_s"],
        "Job was active longer than specified deadline"
    );
    assert_eq!(deadlines[0]["Type_s"], "Warning");
    assert_eq!(deadlines[0]["ReplicaName_s"], "");
    assert!(
        sys.iter().any(|r| r["Reason_s"] == "ContainerTerminated"),
        "its replica was stopped: {sys:?}"
    );

    // A tag localplane does not know is refused with its name.
    let (code, _, v) = lab
        .call(
            "PUT",
            &format!("{}?{AV}", lab.job_url("bad-tag")),
            Some(subject_job(
                json!([]),
                3,
                0,
                json!({"localplane.replicaTimeout": "pod"}),
            )),
        )
        .await;
    assert_eq!(code, 400, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("localplane.replicaTimeout"),
        "{v}"
    );
    lab.stop().await;
}
