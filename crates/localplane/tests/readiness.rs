//! When a new revision takes the traffic in single mode, through the ARM API alone (the process
//! runtime: real `subject` binaries on 127.0.0.1). Learn ("Update and deploy changes in Azure
//! Container Apps", *Zero downtime deployment*): a new revision is ready once it "has scaled up
//! to match the previous revisions replica count (respecting the new revision's min and max
//! replica count)" and all its replicas passed their startup and readiness probes. The tags
//! `localplane.revisionReady=firstReplica` and `localplane.newRevisionReplicas=minReplicas`
//! select what microsoft/azure-container-apps#638 reports instead.
//!
//! The new revision's readiness waits on a dependency app (the subject in dependency mode) that
//! answers 503 until a rollout of its own makes it healthy, so the test holds the new revision
//! unready for as long as it looks, then lets it become ready.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use testkit::eventually;

async fn put(lab: &Plane, app: &str, body: Value) {
    assert_eq!(lab.put_app(app, body).await, "Succeeded");
}

/// The revision that served `GET /` through the app's ingress (`fqdn`), if a replica answered.
async fn served_by(lab: &Plane, fqdn: &str) -> Option<String> {
    let (code, h, _) = lab.call("GET", &format!("http://{fqdn}/"), None).await;
    (code == 200)
        .then(|| h.get("x-revision")?.to_str().ok().map(str::to_owned))
        .flatten()
}

/// A dependency app whose `/health` answers `healthy`; a second PUT rolls it out to the other.
fn dependency(healthy: bool) -> Value {
    subject_app(
        json!([{"name": "APP_MODE", "value": "dependency"},
               {"name": "DEPENDENCY_HEALTHY", "value": healthy.to_string()}]),
        1,
        readiness(),
    )
}

/// The app `name` (`tags`) runs 3 ready replicas, then gets a revision with minReplicas 1 and
/// maxReplicas 3 whose readiness waits on the unhealthy dependency at `dep`. Returns what the
/// new revision ran while it could not be ready, and what it ran when it took the traffic
/// (replicas listed, replicas ready) once the dependency became healthy.
async fn roll_out_behind_dependency(
    lab: &Plane,
    name: &str,
    tags: Value,
    dep_fqdn: &str,
) -> (usize, usize, usize) {
    let mut body = subject_app(json!([]), 3, readiness());
    body["tags"] = tags.clone();
    put(lab, name, body).await;
    let v = lab.get_app(name).await;
    let rev1 = v["properties"]["latestRevisionName"]
        .as_str()
        .unwrap()
        .to_owned();
    let fqdn = v["properties"]["configuration"]["ingress"]["fqdn"]
        .as_str()
        .unwrap()
        .to_owned();
    eventually(Duration::from_secs(30), "3 ready replicas", || async {
        all_ready(&lab.replicas(name, &rev1).await, 3).then_some(())
    })
    .await;

    let mut body = subject_app(
        json!([{"name": "READINESS_CHECK_DEPENDENCY", "value": "true"},
               {"name": "DEPENDENCY_URL", "value": format!("http://{dep_fqdn}/health")},
               {"name": "ROLLOUT_GENERATION", "value": "2"}]),
        1,
        readiness(),
    );
    body["properties"]["template"]["scale"] = json!({"minReplicas": 1, "maxReplicas": 3});
    body["tags"] = tags;
    let (code, _, v) = lab
        .call("PUT", &format!("{}?{AV}", lab.app_url(name)), Some(body))
        .await;
    assert!(code == 200 || code == 201, "{code} {v}");
    let rev2 = lab.get_app(name).await["properties"]["latestRevisionName"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(rev1, rev2);
    // While the dependency is down the new revision can never be ready: it runs what the
    // rule scales it to, and the old revision keeps all the traffic.
    let unready = eventually(
        Duration::from_secs(30),
        "the new revision's replicas started",
        || async {
            let r = lab.replicas(name, &rev2).await;
            let started = r
                .iter()
                .all(|x| x["properties"]["runningState"] == "Running");
            (!r.is_empty() && started).then_some(r.len())
        },
    )
    .await;
    eventually(
        Duration::from_secs(30),
        "every new replica failed its readiness probe",
        || async {
            let failed: BTreeSet<String> = lab
                .system_rows()
                .iter()
                .filter(|r| r["Reason_s"] == "ProbeFailed" && r["RevisionName_s"] == rev2.as_str())
                .filter_map(|r| r["ReplicaName_s"].as_str().map(str::to_owned))
                .collect();
            (failed.len() == unready).then_some(())
        },
    )
    .await;
    assert_eq!(served_by(lab, &fqdn).await.as_deref(), Some(rev1.as_str()));
    let r = lab.revision(name, &rev2).await;
    assert_eq!(r["properties"]["trafficWeight"], 0, "{r}");
    assert_eq!(r["properties"]["provisioningState"], "Provisioning", "{r}");
    assert_eq!(lab.replicas(name, &rev2).await.len(), unready);

    // The dependency recovers: the first response of the new revision, and what it ran then.
    put(lab, "dep", dependency(true)).await;
    eventually(
        Duration::from_secs(30),
        "the new revision takes the traffic",
        || async { (served_by(lab, &fqdn).await.as_deref() == Some(rev2.as_str())).then_some(()) },
    )
    .await;
    let at_switch = lab.replicas(name, &rev2).await;
    let ready = at_switch
        .iter()
        .filter(|x| {
            x["properties"]["containers"]
                .as_array()
                .is_some_and(|c| c.iter().all(|c| c["ready"] == true))
        })
        .count();
    (unready, at_switch.len(), ready)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_revision_takes_the_traffic_once_it_runs_the_previous_count_ready() {
    let lab = Plane::process().await;
    assert_eq!(lab.put_env().await, 201);

    put(&lab, "dep", dependency(false)).await;
    let dep_fqdn = lab.get_app("dep").await["properties"]["configuration"]["ingress"]["fqdn"]
        .as_str()
        .unwrap()
        .to_owned();

    // Learn's rule (no tags): the new revision scales to the old one's 3 (its max is 3, its min
    // 1) and takes the traffic with all 3 ready.
    let (unready, listed, ready) =
        roll_out_behind_dependency(&lab, "web", json!({}), &dep_fqdn).await;
    assert_eq!(
        unready, 3,
        "scaled to the previous count before it was ready"
    );
    assert_eq!(
        (listed, ready),
        (3, 3),
        "took the traffic with 3 ready replicas"
    );

    // #638's report, by tag: the new revision starts at minReplicas (1) and takes the traffic
    // with it. The dependency is down again for this app's rollout.
    put(&lab, "dep", dependency(false)).await;
    let (unready, listed, ready) = roll_out_behind_dependency(
        &lab,
        "web638",
        json!({"localplane.revisionReady": "firstReplica", "localplane.newRevisionReplicas": "minReplicas"}),
        &dep_fqdn,
    )
    .await;
    assert_eq!(unready, 1, "started at minReplicas");
    assert_eq!(
        (listed, ready),
        (1, 1),
        "took the traffic with its one replica"
    );
    lab.stop().await;
}
