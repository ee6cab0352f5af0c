//! A new revision that never becomes ready, through the ARM API on the process runtime: the old
//! revision keeps all the traffic; the new one reports `Provisioning` / `Processing` / `None`
//! until the app's progress deadline (tag `localplane.progressDeadlineSeconds`, 600 s by
//! default), then `Failed` / `Failed` / `Unhealthy` with the running-state details users post
//! (microsoft/azure-container-apps#1219), and the update's operation fails with the wording
//! users post ("... Error details: Operation expired."). A later good revision takes the traffic
//! and deactivates both.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use testkit::eventually;

fn app(env: Value) -> Value {
    let mut body = subject_app(
        env,
        1,
        json!([{"type": "Readiness", "httpGet": {"path": "/ready", "port": 8080},
                "periodSeconds": 1, "failureThreshold": 1}]),
    );
    body["tags"] = json!({"localplane.progressDeadlineSeconds": "4"});
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_never_ready_revision_fails_at_the_deadline_and_never_gets_traffic() {
    let lab = Plane::process().await;
    lab.put_env().await;
    assert_eq!(lab.put_app("app", app(json!([]))).await, "Succeeded");
    let (good, _) = lab.latest_revision_and_fqdn("app").await;

    // Readiness checks a dependency nothing listens for: never ready.
    let never = json!([{"name": "READINESS_CHECK_DEPENDENCY", "value": "true"},
                       {"name": "DEPENDENCY_URL", "value": "http://127.0.0.1:9/"}]);
    let started = tokio::time::Instant::now();
    let body = app(never);
    let name = "app";
    let put_url = format!("{}?{AV}", lab.app_url(name));
    let (code, h, v) = lab.call("PUT", &put_url, Some(body)).await;
    assert!(code == 200 || code == 201, "{code} {v}");
    let (bad, _) = lab.latest_revision_and_fqdn(name).await;
    assert_ne!(bad, good);
    // Before the deadline: provisioning, no traffic.
    let rev = lab.revision(name, &bad).await;
    assert_eq!(
        rev["properties"]["provisioningState"], "Provisioning",
        "{rev}"
    );
    assert_eq!(rev["properties"]["runningState"], "Processing", "{rev}");
    assert_eq!(rev["properties"]["healthState"], "None", "{rev}");
    assert!(rev["properties"]["runningStateDetails"].is_null(), "{rev}");
    assert_eq!(rev["properties"]["trafficWeight"], 0);
    // The operation fails at the deadline, with the wording users post.
    assert_eq!(lab.wait_op(&h, Duration::from_secs(30)).await, "Failed");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(4) && waited < Duration::from_secs(10),
        "the operation failed after {waited:?}, the deadline is 4 s"
    );
    let url = h["azure-asyncoperation"].to_str().unwrap().to_owned();
    let (_, _, op) = lab.call("GET", &url, None).await;
    assert_eq!(op["error"]["code"], "ContainerAppOperationError", "{op}");
    assert_eq!(
        op["error"]["message"],
        "Failed to provision revision for container app 'app'. Error details: Operation expired."
    );
    // After it: Failed and Unhealthy, with the details; the old revision keeps the traffic.
    let rev = lab.revision(name, &bad).await;
    assert_eq!(rev["properties"]["provisioningState"], "Failed", "{rev}");
    assert_eq!(rev["properties"]["runningState"], "Failed", "{rev}");
    assert_eq!(rev["properties"]["healthState"], "Unhealthy", "{rev}");
    assert_eq!(
        rev["properties"]["runningStateDetails"],
        "Deployment Progress Deadline Exceeded. 0/1 replicas ready."
    );
    assert_eq!(rev["properties"]["active"], true);
    let old = lab.revision(name, &good).await;
    assert_eq!(old["properties"]["trafficWeight"], 100, "{old}");
    assert_eq!(
        old["properties"]["runningState"], "RunningAtMaxScale",
        "{old}"
    );

    // A good revision takes the traffic and both older ones are deactivated.
    let good_again = app(json!([{"name": "ROLLOUT", "value": "2"}]));
    assert_eq!(lab.put_app(name, good_again).await, "Succeeded");
    let (next, _) = lab.latest_revision_and_fqdn(name).await;
    for r in [&good, &bad] {
        eventually(
            Duration::from_secs(20),
            "the older revision deactivated",
            || async {
                let v = lab.revision(name, r).await;
                (v["properties"]["active"] == false).then_some(())
            },
        )
        .await;
    }
    assert_eq!(
        lab.revision(name, &next).await["properties"]["trafficWeight"],
        100
    );
    lab.stop().await;
}
