//! Scaling against the process runtime (real `subject` binaries on 127.0.0.1): Learn's HTTP
//! metric (requests in the past 15 s / 15, every 15 s) end to end; and, with the scale block's
//! periods in seconds and the `localplane.*` tags selecting the peak-in-flight metric at the
//! polling interval and `cooldownPeriod` as the scale-down window (so each test takes seconds,
//! not Learn's 15 s clock and 300 s window, which the scaler's unit tests cover): scale-out and
//! scale-in with `ManuallyStopped` rows, scale to zero after the cooldown, and a request at zero
//! held while a replica starts.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};
use testkit::eventually;

/// The tags that select localplane's earlier, faster-to-test scaling: the peak in flight at
/// `pollingInterval`, to the desired count at once, `cooldownPeriod` as the scale-down window.
fn quick_scaling() -> Value {
    json!({"localplane.httpMetric": "peakInFlight", "localplane.scaleUp": "atOnce",
        "localplane.scaleDownStabilization": "cooldownPeriod"})
}

/// A subject app with `scale` as given and a 1 s startup delay (bind late), with the
/// [`quick_scaling`] tags.
fn app(scale: Value, startup_s: u32) -> Value {
    let mut body = documented_app(scale, startup_s);
    body["tags"] = quick_scaling();
    body
}

/// As [`app`], without tags: Learn's scaling behaviour.
fn documented_app(scale: Value, startup_s: u32) -> Value {
    let mut body = subject_app(
        json!([{"name": "STARTUP_DELAY_SECONDS", "value": startup_s.to_string()}]),
        1,
        readiness(),
    );
    body["properties"]["template"]["scale"] = scale;
    body["properties"]["template"]["terminationGracePeriodSeconds"] = json!(2);
    body
}

async fn create(lab: &Plane, name: &str, body: Value) -> String {
    let (code, h, v) = lab
        .call("PUT", &format!("{}?{AV}", lab.app_url(name)), Some(body))
        .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(60)).await, "Succeeded");
    let (_, _, v) = lab
        .call("GET", &format!("{}?{AV}", lab.app_url(name)), None)
        .await;
    v["properties"]["latestRevisionName"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The revision's live replicas as ARM reports them.
async fn replica_count(lab: &Plane, app: &str, rev: &str) -> u64 {
    lab.revision(app, rev).await["properties"]["replicas"]
        .as_u64()
        .unwrap()
}

async fn ingress(lab: &Plane, app: &str) -> String {
    let (_, _, v) = lab
        .call("GET", &format!("{}?{AV}", lab.app_url(app)), None)
        .await;
    format!(
        "http://{}",
        v["properties"]["configuration"]["ingress"]["fqdn"]
            .as_str()
            .unwrap()
    )
}

fn rows_with(lab: &Plane, reason: &str) -> Vec<Value> {
    lab.system_rows()
        .into_iter()
        .filter(|r| r["Reason_s"] == reason)
        .collect()
}

/// Waits for the `ContainerTerminated` row with reason `ManuallyStopped` a scaled-in replica
/// writes, as a retired one does.
async fn wait_manually_stopped(lab: &Plane) {
    eventually(Duration::from_secs(10), "ManuallyStopped row", || async {
        lab.system_rows()
            .iter()
            .any(|r| {
                r["Reason_s"] == "ContainerTerminated"
                    && r["Log_s"]
                        .as_str()
                        .is_some_and(|l| l.contains("ManuallyStopped"))
            })
            .then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_to_zero_then_a_request_waits_for_a_cold_start() {
    let lab = Plane::process().await;
    let scale = json!({"minReplicas": 0, "maxReplicas": 3, "pollingInterval": 1,
        "cooldownPeriod": 3,
        "rules": [{"name": "http", "http": {"metadata": {"concurrentRequests": "5"}}}]});
    let rev = create(&lab, "cold", app(scale, 1)).await;
    let url = ingress(&lab, "cold").await;
    // Idle past the cooldown: the one replica is stopped like any retired replica.
    eventually(Duration::from_secs(20), "scale to zero", || async {
        (replica_count(&lab, "cold", &rev).await == 0).then_some(())
    })
    .await;
    let deactivated = rows_with(&lab, "KEDAScaleTargetDeactivated");
    assert_eq!(deactivated.len(), 1, "{deactivated:?}");
    assert!(
        deactivated[0]["Log_s"]
            .as_str()
            .unwrap()
            .contains("from 1 to 0"),
        "{deactivated:?}"
    );
    wait_manually_stopped(&lab).await;
    // A request at zero is held while a replica starts (1 s startup) and becomes ready: no
    // error, only latency.
    let t = Instant::now();
    let (code, _, body) = call(&lab.client, "GET", &format!("{url}/"), None).await;
    let waited = t.elapsed();
    assert_eq!(code, 200, "{body}");
    assert!(
        waited >= Duration::from_secs(1),
        "served after {waited:?}: faster than the startup delay, so not a cold start"
    );
    let activated = rows_with(&lab, "KEDAScaleTargetActivated");
    assert_eq!(activated.len(), 1, "{activated:?}");
    assert_eq!(replica_count(&lab, "cold", &rev).await, 1);
    // Warm now: the next request is served at once.
    let t = Instant::now();
    let (code, _, _) = call(&lab.client, "GET", &format!("{url}/"), None).await;
    assert_eq!(code, 200);
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    lab.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_rule_scales_out_under_load_and_in_after_the_cooldown() {
    let lab = Plane::process().await;
    let scale = json!({"minReplicas": 1, "maxReplicas": 2, "pollingInterval": 1,
        "cooldownPeriod": 3,
        "rules": [{"name": "http", "http": {"metadata": {"concurrentRequests": "2"}}}]});
    let rev = create(&lab, "busy", app(scale, 0)).await;
    let url = ingress(&lab, "busy").await;
    assert_eq!(replica_count(&lab, "busy", &rev).await, 1);
    // 6 requests of 4 s in flight: ceil(6 / 2) = 3 wanted, capped at maxReplicas 2.
    let slow: Vec<_> = (0..6)
        .map(|_| {
            let client = lab.client.clone();
            let u = format!("{url}/slow?seconds=4");
            tokio::spawn(async move { call(&client, "GET", &u, None).await.0 })
        })
        .collect();
    eventually(Duration::from_secs(10), "scale out to 2", || async {
        (replica_count(&lab, "busy", &rev).await == 2).then_some(())
    })
    .await;
    for s in slow {
        assert_eq!(
            s.await.unwrap(),
            200,
            "a request in flight during scale-out failed"
        );
    }
    let out = rows_with(&lab, "SuccessfulRescale");
    assert!(
        out.iter()
            .any(|r| r["Log_s"].as_str().unwrap().starts_with("New size: 2;")),
        "{out:?}"
    );
    let capped = rows_with(&lab, "RunningAtMaxScale");
    assert!(
        capped
            .iter()
            .any(|r| r["Log_s"].as_str().unwrap().contains("asks for 3")),
        "{capped:?}"
    );
    // Load gone: back to minReplicas 1 after the cooldown, the stopped one `ManuallyStopped`.
    let t = Instant::now();
    eventually(Duration::from_secs(20), "scale in to 1", || async {
        (replica_count(&lab, "busy", &rev).await == 1).then_some(())
    })
    .await;
    assert!(
        t.elapsed() >= Duration::from_secs(2),
        "scaled in {:?} after the load ended: sooner than the 3 s cooldown allows",
        t.elapsed()
    );
    wait_manually_stopped(&lab).await;
    assert!(
        rows_with(&lab, "SuccessfulRescale")
            .iter()
            .any(|r| r["Log_s"].as_str().unwrap().starts_with("New size: 1;")),
    );
    // minReplicas 1: never to zero, so no request is ever held.
    assert!(rows_with(&lab, "KEDAScaleTargetDeactivated").is_empty());
    lab.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_the_http_rule_counts_requests_in_the_past_15_s() {
    let lab = Plane::process().await;
    let scale = json!({"minReplicas": 1, "maxReplicas": 5, "pollingInterval": 1,
        "rules": [{"name": "http", "http": {"metadata": {"concurrentRequests": "1"}}}]});
    let rev = create(&lab, "rate", documented_app(scale, 0)).await;
    let url = ingress(&lab, "rate").await;
    // 62 short requests one after another: never more than 1 in flight (the peak metric would
    // keep 1 replica), but however an evaluation splits them, one 15 s window holds at least 31:
    // more than 2 concurrent by Learn's formula, so at least 3 replicas wanted; from 1, one step
    // goes to at most max(4, 2 x 1) = 4.
    for _ in 0..62 {
        assert_eq!(
            call(&lab.client, "GET", &format!("{url}/"), None).await.0,
            200
        );
    }
    eventually(
        Duration::from_secs(40),
        "scale out to 3 or more",
        || async { (replica_count(&lab, "rate", &rev).await >= 3).then_some(()) },
    )
    .await;
    let out = rows_with(&lab, "SuccessfulRescale");
    let first = out[0]["Log_s"].as_str().unwrap();
    assert!(
        (first.starts_with("New size: 3;") || first.starts_with("New size: 4;"))
            && first.contains("in the past 15 s / 15")
            && first.contains("(was 1)"),
        "{out:?}"
    );
    lab.stop().await;
}
