//! Platform maintenance through localplane's admin API (`POST /localplane/apps/{app}/maintenance`)
//! on the process runtime (real `subject` binaries on 127.0.0.1), as a client of the app's
//! ingress sees it: under Learn's rolling form (the default) a one-replica app serves through
//! the move; under the stop-first form microsoft/azure-container-apps#1436 reports (tag
//! `localplane.maintenance=stopFirst`) it serves 503s until its replacement is ready, while a
//! two-replica app serves through it. Each app's replicas are all replaced, one at a time, each
//! old one ending with the `ManuallyStopped` row.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use testkit::eventually;

/// The subject with a 2 s bind-late startup and a 1 s readiness probe, `replicas` of it, and
/// the `localplane.maintenance` tag when `form` is given.
fn app(replicas: u32, form: Option<&str>) -> Value {
    let mut body = subject_app(
        json!([{"name": "STARTUP_DELAY_SECONDS", "value": "2"},
               {"name": "STARTUP_MODE", "value": "bind-late"},
               {"name": "SHUTDOWN_MODE", "value": "graceful"}]),
        replicas,
        json!([{"type": "Readiness", "httpGet": {"path": "/ready", "port": 8080},
                "periodSeconds": 1, "failureThreshold": 1}]),
    );
    if let Some(f) = form {
        body["tags"] = json!({"localplane.maintenance": f});
    }
    body
}

/// Deploys `name` and waits until its `n` replicas are ready; returns its ingress fqdn and
/// latest revision.
async fn deploy(lab: &Plane, name: &str, body: Value, n: usize) -> (String, String) {
    assert_eq!(lab.put_app(name, body).await, "Succeeded");
    let (rev, fqdn) = lab.latest_revision_and_fqdn(name).await;
    eventually(Duration::from_secs(30), "every replica ready", || async {
        all_ready(&lab.replicas(name, &rev).await, n).then_some(())
    })
    .await;
    (fqdn, rev)
}

fn names(reps: &[Value]) -> BTreeSet<String> {
    reps.iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect()
}

/// What a maintenance did as the app's clients and ARM saw it.
struct Seen {
    /// The 202's body: the plan.
    plan: Value,
    /// The operation's final status.
    status: String,
    /// `GET /` through the ingress every 20 ms while it ran: (2xx, anything else).
    ok: u32,
    failed: u32,
}

/// Starts app `name`'s maintenance and sends `GET /` to its ingress every 20 ms (at most 3,000
/// requests) until the operation ends.
async fn maintain(lab: &Plane, name: &str, fqdn: &str) -> Seen {
    let running = Arc::new(AtomicBool::new(true));
    let client = lab.client.clone();
    let url = format!("http://{fqdn}/");
    let flag = running.clone();
    let load = tokio::spawn(async move {
        let (mut ok, mut failed) = (0u32, 0u32);
        for _ in 0..3_000 {
            if !flag.load(Ordering::SeqCst) {
                break;
            }
            let (code, _, _) = call(&client, "GET", &url, None).await;
            if (200..300).contains(&code) {
                ok += 1;
            } else {
                failed += 1;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        (ok, failed)
    });
    // Requests before the maintenance, so a failure below is the maintenance's.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (code, h, plan) = lab
        .call(
            "POST",
            &format!("{}/localplane/apps/{name}/maintenance", lab.base),
            None,
        )
        .await;
    assert_eq!(code, 202, "{plan}");
    let status = lab.wait_op(&h, Duration::from_secs(60)).await;
    running.store(false, Ordering::SeqCst);
    let (ok, failed) = load.await.unwrap();
    Seen {
        plan,
        status,
        ok,
        failed,
    }
}

/// The `ManuallyStopped` rows of app `name`, by replica.
fn manually_stopped(lab: &Plane, name: &str) -> BTreeSet<String> {
    lab.system_rows()
        .iter()
        .filter(|r| {
            r["ContainerAppName_s"] == name
                && r["Reason_s"] == "ContainerTerminated"
                && r["Log_s"]
                    .as_str()
                    .unwrap_or("")
                    .contains("ManuallyStopped")
        })
        .map(|r| r["ReplicaName_s"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_serves_through_rolling_maintenance_but_not_stop_first() {
    let lab = Plane::process().await;
    lab.put_env().await;
    let (rolling_fqdn, rolling_rev) = deploy(&lab, "rolling", app(1, None), 1).await;
    let (stop_fqdn, stop_rev) = deploy(&lab, "stopfirst", app(1, Some("stopFirst")), 1).await;

    for (name, fqdn, rev, form) in [
        ("rolling", &rolling_fqdn, &rolling_rev, "rolling"),
        ("stopfirst", &stop_fqdn, &stop_rev, "stopFirst"),
    ] {
        let before = names(&lab.replicas(name, rev).await);
        let seen = maintain(&lab, name, fqdn).await;
        assert_eq!(seen.status, "Succeeded", "{name}");
        assert_eq!(seen.plan["form"], form, "{}", seen.plan);
        let planned: BTreeSet<String> = seen.plan["revisions"][0]["replicas"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(planned, before, "the 202 names the replica to move");
        assert!(seen.ok > 0, "{name}: some requests served");
        // The old replica is gone, one new one serves, and the old one's stop is logged.
        let after = eventually(Duration::from_secs(20), "the old replica gone", || async {
            let reps = lab.replicas(name, rev).await;
            (all_ready(&reps, 1) && names(&reps).is_disjoint(&before)).then_some(names(&reps))
        })
        .await;
        assert_eq!(after.len(), 1);
        let stopped = eventually(
            Duration::from_secs(20),
            "the ManuallyStopped row",
            || async {
                let s = manually_stopped(&lab, name);
                s.is_superset(&before).then_some(s)
            },
        )
        .await;
        assert!(stopped.is_disjoint(&after), "{name}: {stopped:?}");
        eprintln!("{name}: {} ok, {} failed", seen.ok, seen.failed);
        if form == "rolling" {
            assert_eq!(seen.failed, 0, "rolling: no request fails");
        } else {
            // Stopped first: nothing serves for the replacement's 2 s startup.
            assert!(seen.failed >= 10, "stop-first: {} failed", seen.failed);
        }
    }
    lab.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_serve_through_stop_first_maintenance_one_at_a_time() {
    let lab = Plane::process().await;
    lab.put_env().await;
    let (fqdn, rev) = deploy(&lab, "two", app(2, Some("stopFirst")), 2).await;
    let before = names(&lab.replicas("two", &rev).await);
    let seen = maintain(&lab, "two", &fqdn).await;
    assert_eq!(seen.status, "Succeeded");
    assert_eq!(seen.failed, 0, "two replicas: no request fails");
    assert!(seen.ok > 0);
    let reps = lab.replicas("two", &rev).await;
    assert!(all_ready(&reps, 2), "{reps:?}");
    assert!(names(&reps).is_disjoint(&before), "both replicas moved");
    // One at a time: the second replica stops after the first one's replacement started.
    let rows = lab.system_rows();
    let at = |reason: &str, replica: &str| {
        rows.iter()
            .find(|r| {
                r["Reason_s"] == reason
                    && r["ReplicaName_s"] == replica
                    && (reason != "ContainerTerminated"
                        || r["Log_s"]
                            .as_str()
                            .unwrap_or("")
                            .contains("ManuallyStopped"))
            })
            .and_then(|r| r["TimeGenerated"].as_str())
            .map(str::to_owned)
    };
    let moved: Vec<String> = seen.plan["revisions"][0]["replicas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(moved.len(), 2);
    let first_stop = eventually(Duration::from_secs(20), "the first stop row", || async {
        at("ContainerTerminated", &moved[0])
    })
    .await;
    let second_stop = eventually(Duration::from_secs(20), "the second stop row", || async {
        at("ContainerTerminated", &moved[1])
    })
    .await;
    let replacements: Vec<String> = names(&reps).into_iter().collect();
    let first_start = replacements
        .iter()
        .filter_map(|r| at("AssigningReplica", r))
        .min()
        .unwrap();
    assert!(
        first_stop <= first_start && first_start <= second_stop,
        "stop, start, stop: {first_stop} {first_start} {second_stop}"
    );
    lab.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_api_refuses_an_unknown_app_and_a_second_maintenance() {
    let lab = Plane::process().await;
    lab.put_env().await;
    let url = |app: &str| format!("{}/localplane/apps/{app}/maintenance", lab.base);
    let (code, _, v) = lab.call("POST", &url("nope"), None).await;
    assert_eq!(code, 404, "{v}");
    assert_eq!(v["error"]["code"], "ResourceNotFound", "{v}");

    deploy(&lab, "busy", app(1, Some("stopFirst")), 1).await;
    let (code, h, v) = lab.call("POST", &url("busy"), None).await;
    assert_eq!(code, 202, "{v}");
    let (code, _, v) = lab.call("POST", &url("busy"), None).await;
    assert_eq!(code, 409, "{v}");
    assert_eq!(v["error"]["code"], "MaintenanceInProgress", "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(60)).await, "Succeeded");
    // Once it is over, a new one starts.
    let (code, h, v) = lab.call("POST", &url("busy"), None).await;
    assert_eq!(code, 202, "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(60)).await, "Succeeded");
    lab.stop().await;
}
