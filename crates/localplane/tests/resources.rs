//! Resources and quotas through the ARM API alone (docs/FIDELITY.md, "Resources and quotas"):
//! a `resources` total Learn does not list is the service's 400, a GET shows the defaults and
//! the normalised memory, `minReplicas: 1000` fails with the quota error and starts no
//! container, and on Docker a listed pair is the container's CPU and memory limits and an
//! out-of-memory kill (`/alloc` past the limit) is the row Azure writes and a restart.
//!
//! The process runtime tests need no Docker; the Docker test is skipped with
//! `PROBELAB_SKIP_DOCKER=1` and fails loudly without an engine or the subject image.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use testkit::eventually;

fn env_url(lab: &Plane, env: &str) -> String {
    format!(
        "{}/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.App/managedEnvironments/{env}?{AV}",
        lab.base
    )
}

/// The subject app of the common bodies with `resources` on its container (none when null)
/// and `min` = `max` replicas.
fn app_with(resources: Value, replicas: u32) -> Value {
    let mut b = subject_app(json!([]), replicas, json!([]));
    if !resources.is_null() {
        b["properties"]["template"]["containers"][0]["resources"] = resources;
    }
    b
}

async fn put(lab: &Plane, app: &str, body: Value) -> (u16, http::HeaderMap, Value) {
    lab.call("PUT", &format!("{}?{AV}", lab.app_url(app)), Some(body))
        .await
}

async fn get_app(lab: &Plane, app: &str) -> Value {
    lab.call("GET", &format!("{}?{AV}", lab.app_url(app)), None)
        .await
        .2
}

async fn replicas(lab: &Plane, app: &str) -> Vec<Value> {
    let v = get_app(lab, app).await;
    let Some(rev) = v["properties"]["latestRevisionName"].as_str() else {
        return vec![];
    };
    let (_, _, v) = lab
        .call(
            "GET",
            &format!("{}/revisions/{rev}/replicas?{AV}", lab.app_url(app)),
            None,
        )
        .await;
    v["value"].as_array().cloned().unwrap_or_default()
}

fn rows(lab: &Plane, app: &str, reason: &str) -> Vec<Value> {
    lab.system_rows()
        .into_iter()
        .filter(|r| r["ContainerAppName_s"] == app && r["Reason_s"] == reason)
        .collect()
}

fn error_code(v: &Value) -> Option<&str> {
    v["error"]["code"].as_str()
}

fn error_message(v: &Value) -> &str {
    v["error"]["message"].as_str().unwrap_or_default()
}

/// The operation of `h` ends `Failed` with the quota error; its message.
async fn failed_on_quota(lab: &Plane, h: &http::HeaderMap) -> String {
    assert_eq!(lab.wait_op(h, Duration::from_secs(30)).await, "Failed");
    let url = h["azure-asyncoperation"].to_str().unwrap();
    let (_, _, op) = lab.call("GET", url, None).await;
    assert_eq!(error_code(&op), Some("QuotaExceeded"), "{op}");
    error_message(&op).to_owned()
}

/// Both sides of the combinations table through PUT: a listed pair is accepted and its
/// neighbours are the service's 400; the total is every container's (a sidecar counts); a
/// malformed memory string is a 400; the Consumption workload profile's larger pairs only in an
/// environment with workload profiles.
#[tokio::test]
async fn resources_are_held_to_the_listed_combinations() {
    let lab = Plane::process().await;
    for (res, want) in [
        (json!({"cpu": 0.5, "memory": "1Gi"}), 201),
        (json!({"cpu": 0.5, "memory": "0.5Gi"}), 400),
        (json!({"cpu": 0.5, "memory": "1.5Gi"}), 400),
        (json!({"cpu": 0.75, "memory": "1.0Gi"}), 400),
        (json!({"cpu": 0.25, "memory": "1Gi"}), 400),
        (json!({"cpu": 2.0, "memory": "4Gi"}), 201),
        (json!({"cpu": 2.25, "memory": "4.5Gi"}), 400),
    ] {
        let (code, h, v) = put(&lab, "pairs", app_with(res.clone(), 1)).await;
        assert_eq!(code, want, "{res}: {v}");
        if code == 400 {
            assert_eq!(
                error_code(&v),
                Some("ContainerAppInvalidResourceTotal"),
                "{v}"
            );
            assert!(
                error_message(&v).starts_with(
                    "The total requested CPU and memory resources for this application"
                ),
                "{v}"
            );
        } else {
            lab.wait_op(&h, Duration::from_secs(60)).await;
        }
    }
    // 0.25 / 0.5Gi beside 0.5 / 1Gi is 0.75 / 1.5Gi (listed); 0.5 / 0.5Gi beside it is
    // 1.0 / 1.5Gi (not listed).
    let sidecar = |res: Value| {
        let mut b = app_with(json!({"cpu": 0.5, "memory": "1Gi"}), 1);
        b["properties"]["template"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "side", "image": "probelab/subject:dev", "resources": res}));
        b
    };
    let (code, _, v) = put(
        &lab,
        "side",
        sidecar(json!({"cpu": 0.5, "memory": "0.5Gi"})),
    )
    .await;
    assert_eq!(code, 400, "{v}");
    assert!(error_message(&v).contains("(CPU: 1, memory: 1.5)"), "{v}");
    let (code, _, v) = put(
        &lab,
        "side",
        sidecar(json!({"cpu": 0.25, "memory": "0.5Gi"})),
    )
    .await;
    assert_eq!(code, 201, "{v}");
    let (code, _, v) = put(
        &lab,
        "bad",
        app_with(json!({"cpu": 0.5, "memory": "512Mi"}), 1),
    )
    .await;
    assert_eq!(
        (code, error_code(&v)),
        (400, Some("ContainerAppInvalidResourceRequest")),
        "{v}"
    );
    // 4 / 8Gi: refused in a Consumption-only environment, accepted with workload profiles.
    let big = |env: &str| {
        let mut b = app_with(json!({"cpu": 4.0, "memory": "8Gi"}), 1);
        b["properties"]["environmentId"] = json!(format!(
            "/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.App/managedEnvironments/{env}"
        ));
        b
    };
    let profiles = json!({"workloadProfiles": [
        {"name": "Consumption", "workloadProfileType": "Consumption"}
    ]});
    for (env, props) in [("v1", json!({})), ("v2", profiles)] {
        let body = json!({"location": "local", "properties": props});
        let (code, _, v) = lab.call("PUT", &env_url(&lab, env), Some(body)).await;
        assert!(code == 200 || code == 201, "{v}");
    }
    let (code, _, v) = put(&lab, "big1", big("v1")).await;
    assert_eq!(code, 400, "{v}");
    assert!(
        error_message(&v).ends_with("[cpu: 2.0, memory: 4.0Gi]"),
        "{v}"
    );
    let (code, h, v) = put(&lab, "big2", big("v2")).await;
    assert_eq!(code, 201, "{v}");
    lab.wait_op(&h, Duration::from_secs(60)).await;
    lab.stop().await;
}

/// A GET shows Azure's defaults for a container without `resources`, and what was sent
/// normalised (`0.50Gi` as `0.5Gi`, `2.0Gi` as `2Gi`), for apps and jobs; a job is held to the
/// same table at PUT and in a start's override.
#[tokio::test]
async fn a_get_shows_the_defaults_and_the_normalised_memory() {
    let lab = Plane::process().await;
    let (code, h, v) = put(&lab, "shown", app_with(Value::Null, 1)).await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(
        v["properties"]["template"]["containers"][0]["resources"],
        json!({"cpu": 0.5, "memory": "1Gi", "ephemeralStorage": "2Gi"}),
        "{v}"
    );
    lab.wait_op(&h, Duration::from_secs(60)).await;
    let sent = json!({"cpu": 0.25, "memory": "0.50Gi"});
    let (code, h, v) = put(&lab, "shown", app_with(sent, 1)).await;
    assert_eq!(code, 201, "{v}");
    lab.wait_op(&h, Duration::from_secs(60)).await;
    assert_eq!(
        get_app(&lab, "shown").await["properties"]["template"]["containers"][0]["resources"],
        json!({"cpu": 0.25, "memory": "0.5Gi", "ephemeralStorage": "1Gi"})
    );
    let job = |res: Value| {
        json!({"location": "local", "properties": {
            "environmentId": format!("/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.App/managedEnvironments/env"),
            "configuration": {"triggerType": "Manual", "replicaTimeout": 60, "replicaRetryLimit": 0},
            "template": {"containers": [
                {"name": "main", "image": "probelab/subject:dev", "resources": res}
            ]}
        }})
    };
    let url = format!("{}?{AV}", lab.job_url("sized-job"));
    let (code, _, v) = lab
        .call("PUT", &url, Some(job(json!({"cpu": 1.0, "memory": "1Gi"}))))
        .await;
    assert_eq!(
        (code, error_code(&v)),
        (400, Some("ContainerAppInvalidResourceTotal")),
        "{v}"
    );
    let (code, _, v) = lab
        .call("PUT", &url, Some(job(json!({"cpu": 1, "memory": "2.0Gi"}))))
        .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(
        v["properties"]["template"]["containers"][0]["resources"],
        json!({"cpu": 1.0, "memory": "2Gi", "ephemeralStorage": "4Gi"}),
        "{v}"
    );
    let over = json!({"containers": [
        {"name": "main", "resources": {"cpu": 1.0, "memory": "3Gi"}}
    ]});
    let (code, _, v) = lab
        .call(
            "POST",
            &format!("{}/start?{AV}", lab.job_url("sized-job")),
            Some(over),
        )
        .await;
    assert_eq!(
        (code, error_code(&v)),
        (400, Some("ContainerAppInvalidResourceTotal")),
        "{v}"
    );
    lab.stop().await;
}

/// `minReplicas: 1000` (500 cores, over the environment's 100): the PUT is accepted as Azure
/// accepts it, its operation fails with the quota error, the refusal is one system row, and no
/// replica starts; 60 replicas of 0.25 vCPU (15 cores) fit the environment but not the host's
/// default cap of 50: the same, naming the cap. Back under both, the next revision starts.
#[tokio::test]
async fn a_thousand_replicas_fail_with_the_quota_error_and_start_nothing() {
    let lab = Plane::process().await;
    let (code, h, v) = put(&lab, "typo", app_with(Value::Null, 1000)).await;
    assert_eq!(code, 201, "{v}");
    let msg = failed_on_quota(&lab, &h).await;
    assert_eq!(msg, localplane::quota::ENV_CORES_MESSAGE);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(replicas(&lab, "typo").await.is_empty());
    assert!(rows(&lab, "typo", "AssigningReplica").is_empty());
    assert!(rows(&lab, "typo", "ContainerStarted").is_empty());
    let refused = rows(&lab, "typo", "FailedScheduling");
    assert_eq!(
        refused.len(),
        1,
        "once, not at every controller pass: {refused:?}"
    );
    assert_eq!(refused[0]["Log_s"], localplane::quota::ENV_CORES_MESSAGE);

    let quarter = json!({"cpu": 0.25, "memory": "0.5Gi"});
    let (code, h, v) = put(&lab, "many", app_with(quarter, 60)).await;
    assert_eq!(code, 201, "{v}");
    let msg = failed_on_quota(&lab, &h).await;
    assert!(
        msg.contains("at most 50 replicas") && msg.contains("LOCALPLANE_MAX_REPLICAS"),
        "{msg}"
    );
    assert!(replicas(&lab, "many").await.is_empty());

    let (code, h, v) = put(&lab, "typo", app_with(Value::Null, 2)).await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(60)).await, "Succeeded");
    eventually(Duration::from_secs(30), "two replicas", || async {
        (replicas(&lab, "typo").await.len() == 2).then_some(())
    })
    .await;
    lab.stop().await;
}

fn containers_of(lab: &Plane, app: &str) -> Vec<String> {
    let owner = localplane::runtime::docker::owner_id(&lab.plane.state_dir());
    let out = std::process::Command::new("docker")
        .args([
            "ps",
            "-aq",
            "--filter",
            &format!("label=probelab.owner={owner}"),
            "--filter",
            &format!("label=probelab.app={app}"),
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(String::from)
        .collect()
}

fn inspect(id: &str, format: &str) -> String {
    let out = std::process::Command::new("docker")
        .args(["inspect", "--format", format, id])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// On Docker: 0.5 / 1Gi is the container's `NanoCpus` 500000000 and `Memory` 1073741824 (and
/// no swap); an unlisted pair is a 400; `minReplicas: 1000` starts no container; `/alloc` past
/// a 0.5Gi limit is killed by the kernel, written as Azure writes it, and restarted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_limits_oom_kill_and_quota() {
    let Some(lab) = Plane::docker().await else {
        return;
    };
    let half = json!({"cpu": 0.5, "memory": "1Gi"});
    let (code, h, v) = put(&lab, "sized", app_with(half, 1)).await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(90)).await, "Succeeded");
    let ids = containers_of(&lab, "sized");
    assert_eq!(ids.len(), 1, "{ids:?}");
    let limits = "{{.HostConfig.NanoCpus}} {{.HostConfig.Memory}} {{.HostConfig.MemorySwap}}";
    assert_eq!(inspect(&ids[0], limits), "500000000 1073741824 1073741824");
    let unlisted = json!({"cpu": 0.5, "memory": "2Gi"});
    let (code, _, v) = put(&lab, "unlisted", app_with(unlisted, 1)).await;
    assert_eq!(
        (code, error_code(&v)),
        (400, Some("ContainerAppInvalidResourceTotal")),
        "{v}"
    );

    let (code, h, v) = put(&lab, "typo", app_with(Value::Null, 1000)).await;
    assert_eq!(code, 201, "{v}");
    failed_on_quota(&lab, &h).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(containers_of(&lab, "typo").is_empty());

    // Out of memory: 0.25 / 0.5Gi, 128 MiB held fine, then 512 MiB more.
    let quarter = json!({"cpu": 0.25, "memory": "0.5Gi"});
    let (code, h, v) = put(&lab, "oom", app_with(quarter, 1)).await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(90)).await, "Succeeded");
    let fqdn = get_app(&lab, "oom").await["properties"]["configuration"]["ingress"]["fqdn"]
        .as_str()
        .unwrap()
        .to_owned();
    let addr: std::net::SocketAddr = fqdn.parse().unwrap();
    let alloc = |mib: u32| async move {
        let path = format!("/alloc?mib={mib}");
        let limit = Duration::from_secs(30);
        testkit::http::fetch(addr, "GET", &path, &[("host", "oom")], "", limit).await
    };
    let r = alloc(128).await.unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let held: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(held["held_mib"], 128, "{held}");
    let r = alloc(512).await;
    assert!(r.as_ref().map_or(true, |r| r.status != 200), "{r:?}");
    eventually(Duration::from_secs(30), "the OOM kill's row", || async {
        rows(&lab, "oom", "ContainerTerminated")
            .iter()
            .any(|r| r["Log_s"] == "Container 'subject' was terminated with exit code '137'")
            .then_some(())
    })
    .await;
    eventually(
        Duration::from_secs(60),
        "restarted once and running",
        || async {
            replicas(&lab, "oom").await.first().and_then(|r| {
                let c = &r["properties"]["containers"][0];
                let up = r["properties"]["runningState"] == "Running" && c["restartCount"] == 1;
                up.then_some(())
            })
        },
    )
    .await;
    lab.stop().await;
}
