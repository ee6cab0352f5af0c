//! A replica container killed from outside (`docker kill`, as the OOM killer does): seen as
//! Container Apps shows it (issue 19, point 4): `ContainerTerminated` with exit code 137, a
//! restart (at once the first time, then after kubelet's 10 s back-off, with a `BackOff` row),
//! the restart count in the replica and the app still `Running`. Docker runtime; set
//! `PROBELAB_SKIP_DOCKER=1` to skip.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use testkit::eventually;

fn container_ids(lab: &Plane) -> Vec<String> {
    let owner = localplane::runtime::docker::owner_id(&lab.plane.state_dir());
    let out = std::process::Command::new("docker")
        .args([
            "ps",
            "-q",
            "--filter",
            &format!("label=probelab.owner={owner}"),
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(String::from)
        .collect()
}

async fn replica(lab: &Plane) -> Option<Value> {
    let (_, _, v) = lab
        .call("GET", &format!("{}?{AV}", lab.app_url("killed")), None)
        .await;
    let rev = v["properties"]["latestRevisionName"].as_str()?.to_owned();
    let (_, _, v) = lab
        .call(
            "GET",
            &format!("{}/revisions/{rev}/replicas?{AV}", lab.app_url("killed")),
            None,
        )
        .await;
    v["value"].as_array()?.first().cloned()
}

fn terminated_137(lab: &Plane) -> usize {
    lab.system_rows()
        .iter()
        .filter(|r| {
            r["Reason_s"] == "ContainerTerminated"
                && r["Log_s"] == "Container 'subject' was terminated with exit code '137'"
        })
        .count()
}

async fn running_with_restarts(lab: &Plane, n: u64) -> bool {
    replica(lab).await.is_some_and(|r| {
        let c = &r["properties"]["containers"][0];
        r["properties"]["runningState"] == "Running" && c["restartCount"] == n
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_from_outside_is_terminated_137_and_restarted_with_back_off() {
    let Some(lab) = Plane::docker().await else {
        return;
    };
    let (code, h, v) = lab
        .call(
            "PUT",
            &format!("{}?{AV}", lab.app_url("killed")),
            Some(subject_app(json!([]), 1, json!([]))),
        )
        .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(90)).await, "Succeeded");
    eventually(Duration::from_secs(60), "the replica runs", || async {
        running_with_restarts(&lab, 0).await.then_some(())
    })
    .await;
    let ids = container_ids(&lab);
    assert_eq!(ids.len(), 1, "{ids:?}");
    let killed = std::process::Command::new("docker")
        .args(["kill", &ids[0]])
        .output()
        .unwrap();
    assert!(killed.status.success(), "{killed:?}");
    eventually(
        Duration::from_secs(30),
        "ContainerTerminated 137",
        || async { (terminated_137(&lab) == 1).then_some(()) },
    )
    .await;
    // kubelet restarts the first time at once.
    eventually(Duration::from_secs(30), "restarted once", || async {
        running_with_restarts(&lab, 1).await.then_some(())
    })
    .await;
    let (_, _, app) = lab
        .call("GET", &format!("{}?{AV}", lab.app_url("killed")), None)
        .await;
    assert_eq!(app["properties"]["runningStatus"], "Running", "{app}");
    // A second kill: the restart waits the 10 s back-off, said in a BackOff row.
    let ids = container_ids(&lab);
    assert_eq!(ids.len(), 1, "{ids:?}");
    let killed_at = tokio::time::Instant::now();
    std::process::Command::new("docker")
        .args(["kill", &ids[0]])
        .output()
        .unwrap();
    eventually(Duration::from_secs(30), "a BackOff row", || async {
        lab.system_rows()
            .iter()
            .any(|r| {
                r["Reason_s"] == "BackOff"
                    && r["Log_s"] == "Back-off restarting failed container 'subject' for 10 seconds"
            })
            .then_some(())
    })
    .await;
    let waiting = replica(&lab).await.unwrap();
    assert_eq!(
        waiting["properties"]["containers"][0]["runningStateDetails"], "CrashLoopBackOff",
        "{waiting}"
    );
    eventually(Duration::from_secs(40), "restarted twice", || async {
        running_with_restarts(&lab, 2).await.then_some(())
    })
    .await;
    assert!(
        killed_at.elapsed() >= Duration::from_secs(10),
        "restarted before the back-off: {:?}",
        killed_at.elapsed()
    );
    assert_eq!(terminated_137(&lab), 2);
    lab.stop().await;
}
