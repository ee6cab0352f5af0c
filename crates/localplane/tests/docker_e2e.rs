//! End-to-end tests on the Docker runtime with the real `probelab/subject:dev` image
//! (built by scripts/build-images.sh). Set `PROBELAB_SKIP_DOCKER=1` to skip them.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use common::*;
use http_body_util::{BodyExt, Empty};
use serde_json::{Value, json};

#[derive(Default)]
struct Tally {
    ok: AtomicU64,
    failed: AtomicU64,
    status_503: AtomicU64,
}

/// Open-model load: `rps` requests per second, each on a new connection, until `stop`.
fn load(
    addr: String,
    rps: u64,
    tally: Arc<Tally>,
    stop: tokio_util::sync::CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / rps));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut inflight = tokio::task::JoinSet::new();
        while !stop.is_cancelled() {
            tick.tick().await;
            let addr = addr.clone();
            let tally = tally.clone();
            inflight.spawn(async move {
                let r = tokio::time::timeout(Duration::from_secs(10), async {
                    let s = tokio::net::TcpStream::connect(&addr)
                        .await
                        .map_err(|e| e.to_string())?;
                    let (mut tx, conn) =
                        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(s))
                            .await
                            .map_err(|e| e.to_string())?;
                    tokio::spawn(conn);
                    let req = http::Request::get("/")
                        .header("host", "subject")
                        .body(Empty::<Bytes>::new())
                        .unwrap();
                    let resp = tx.send_request(req).await.map_err(|e| e.to_string())?;
                    let st = resp.status().as_u16();
                    let _ = resp.into_body().collect().await;
                    Ok::<u16, String>(st)
                })
                .await;
                match r {
                    Ok(Ok(200)) => tally.ok.fetch_add(1, Ordering::Relaxed),
                    Ok(Ok(503)) => {
                        tally.status_503.fetch_add(1, Ordering::Relaxed);
                        tally.failed.fetch_add(1, Ordering::Relaxed)
                    }
                    _ => tally.failed.fetch_add(1, Ordering::Relaxed),
                };
            });
            while inflight.try_join_next().is_some() {}
        }
        while inflight.join_next().await.is_some() {}
    })
}

fn rollout_app(env: Value) -> Value {
    let probes = json!([
        {"type": "Startup", "httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 1, "failureThreshold": 30},
        {"type": "Readiness", "httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 1, "failureThreshold": 3},
    ]);
    subject_app(env, 3, probes)
}

async fn rollouts(
    lab: &Lab,
    app: &str,
    env: Vec<Value>,
    n: usize,
) -> (Arc<Tally>, Vec<(String, bool, u64)>) {
    let (code, h, v) = lab
        .call(
            "PUT",
            &format!("{}?{AV}", lab.app_url(app)),
            Some(rollout_app(json!(env.clone()))),
        )
        .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(60)).await, "Succeeded");
    let (_, _, v) = lab
        .call("GET", &format!("{}?{AV}", lab.app_url(app)), None)
        .await;
    let fqdn = v["properties"]["configuration"]["ingress"]["fqdn"]
        .as_str()
        .unwrap()
        .to_string();
    // Let all three replicas become ready before the load starts.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let tally = Arc::new(Tally::default());
    let stop = tokio_util::sync::CancellationToken::new();
    let loader = load(fqdn, 200, tally.clone(), stop.clone());
    let mut timeline: Vec<(String, bool, u64)> = Vec::new();
    for generation in 2..(2 + n) {
        let mut e = env.clone();
        e.push(json!({"name": "ROLLOUT_GENERATION", "value": generation.to_string()}));
        let patch = json!({"properties": {"template": {"containers": [{"name": "subject", "image": "probelab/subject:dev", "env": e,
            "probes": rollout_app(json!([]))["properties"]["template"]["containers"][0]["probes"].clone()}]}}});
        let (code, h, v) = lab
            .call("PATCH", &format!("{}?{AV}", lab.app_url(app)), Some(patch))
            .await;
        assert_eq!(code, 202, "{v}");
        // Sample the revision timeline as the samplers would, until the old revision is gone.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        let mut op_done = false;
        loop {
            let (_, _, v) = lab
                .call("GET", &format!("{}/revisions?{AV}", lab.app_url(app)), None)
                .await;
            let revs = v["value"].as_array().cloned().unwrap_or_default();
            for r in &revs {
                let t = (
                    r["name"].as_str().unwrap_or("").to_string(),
                    r["properties"]["active"].as_bool().unwrap_or(false),
                    r["properties"]["trafficWeight"].as_u64().unwrap_or(0),
                );
                if !timeline.contains(&t) {
                    timeline.push(t);
                }
            }
            if !op_done {
                let url = h["azure-asyncoperation"].to_str().unwrap();
                let (_, _, o) = lab.call("GET", url, None).await;
                op_done = o["status"] == "Succeeded";
            }
            let active = revs
                .iter()
                .filter(|r| r["properties"]["replicas"].as_u64().unwrap_or(0) > 0)
                .count();
            if op_done && active == 1 {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "rollout {generation} did not finish: {revs:?}"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(20), loader)
        .await
        .unwrap()
        .unwrap();
    (tally, timeline)
}

/// E2E 1: rolling rollouts through the ingress lose nothing when readiness is honest, and the
/// positive control (`WARM_READY_LIES` + `bind-early`) shows client-visible 503s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_1_rolling_rollout_zero_errors_and_positive_control() {
    let Some(lab) = Lab::docker().await else {
        return;
    };
    let started = std::time::Instant::now();
    let env = vec![
        json!({"name": "STARTUP_DELAY_SECONDS", "value": "3"}),
        json!({"name": "STARTUP_MODE", "value": "bind-late"}),
    ];
    let (tally, timeline) = rollouts(&lab, "rollout", env, 3).await;
    let ok = tally.ok.load(Ordering::Relaxed);
    let failed = tally.failed.load(Ordering::Relaxed);
    eprintln!(
        "honest readiness: ok={ok} failed={failed} timeline={timeline:?} in {:?}",
        started.elapsed()
    );
    assert!(ok > 1000, "load ran: {ok}");
    assert_eq!(failed, 0, "zero failed requests across 3 rollouts");
    // Each of the 4 revisions was seen serving 100 % and later inactive with 0 (except the last).
    let names: std::collections::BTreeSet<&String> = timeline.iter().map(|t| &t.0).collect();
    assert_eq!(names.len(), 4, "{timeline:?}");
    for n in &names {
        assert!(
            timeline.iter().any(|t| &&t.0 == n && t.1 && t.2 == 100),
            "{n} never took the traffic: {timeline:?}"
        );
    }

    let env = vec![
        json!({"name": "STARTUP_DELAY_SECONDS", "value": "3"}),
        json!({"name": "STARTUP_MODE", "value": "bind-early"}),
        json!({"name": "WARM_READY_LIES", "value": "true"}),
    ];
    let (tally, _) = rollouts(&lab, "liar", env, 3).await;
    let bad = tally.status_503.load(Ordering::Relaxed);
    eprintln!(
        "lying readiness: ok={} 503={bad}",
        tally.ok.load(Ordering::Relaxed)
    );
    assert!(
        bad > 0,
        "the positive control must show client-visible 503s"
    );
    lab.stop().await;
}
