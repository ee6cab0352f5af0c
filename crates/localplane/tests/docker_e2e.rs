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
use testkit::eventually;
use testkit::http::{FetchError, fetch};

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
    lab: &Plane,
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
    // All three replicas ready before the load starts.
    eventually(
        Duration::from_secs(60),
        "all three replicas ready",
        || async { all_ready(&latest_replicas(lab, app).await, 3).then_some(()) },
    )
    .await;
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
    let Some(lab) = Plane::docker().await else {
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

// ---------------------------------------------------------------------------------------------
// Helpers for e2e 2-5.

fn app_body(env: Value, replicas: u32, probes: Value, grace: u64, tags: Value) -> Value {
    let mut b = subject_app(env, replicas, probes);
    b["properties"]["template"]["terminationGracePeriodSeconds"] = json!(grace);
    b["tags"] = tags;
    b
}

/// PUT the app, wait for its operation, return its fqdn.
async fn create(lab: &Plane, app: &str, body: Value) -> String {
    let (code, h, v) = lab
        .call("PUT", &format!("{}?{AV}", lab.app_url(app)), Some(body))
        .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(
        lab.wait_op(&h, Duration::from_secs(90)).await,
        "Succeeded",
        "{app} became ready"
    );
    let (_, _, v) = lab
        .call("GET", &format!("{}?{AV}", lab.app_url(app)), None)
        .await;
    v["properties"]["configuration"]["ingress"]["fqdn"]
        .as_str()
        .unwrap()
        .to_string()
}

/// One request to an app's ingress (`addr`, its fqdn) on a new connection, with a JSON body:
/// `Ok((status, body))`, or how it failed (a timeout included).
async fn request(
    method: &str,
    addr: &str,
    path: &str,
    body: &str,
    limit: Duration,
) -> Result<(u16, String), FetchError> {
    let addr = addr
        .parse()
        .unwrap_or_else(|e| panic!("ingress address {addr}: {e}"));
    let headers = [("host", "subject"), ("content-type", "application/json")];
    let r = fetch(addr, method, path, &headers, body, limit).await?;
    Ok((r.status, r.body))
}

async fn latest_replicas(lab: &Plane, app: &str) -> Vec<Value> {
    let (_, _, v) = lab
        .call("GET", &format!("{}?{AV}", lab.app_url(app)), None)
        .await;
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

async fn restart_count(lab: &Plane, app: &str) -> u64 {
    latest_replicas(lab, app)
        .await
        .iter()
        .filter_map(|r| r["properties"]["containers"][0]["restartCount"].as_u64())
        .sum()
}

fn sys_for(lab: &Plane, app: &str, reason: &str) -> Vec<Value> {
    lab.system_rows()
        .into_iter()
        .filter(|r| r["ContainerAppName_s"] == app && r["Reason_s"] == reason)
        .collect()
}

fn ts_ms(row: &Value) -> i64 {
    row["TimeGenerated"]
        .as_str()
        .unwrap()
        .parse::<logline::Timestamp>()
        .unwrap()
        .epoch_ms()
}

fn http_probe(kind: &str, path: &str, period: u64, timeout: u64, threshold: u64) -> Value {
    json!({"type": kind, "httpGet": {"path": path, "port": 8080}, "periodSeconds": period, "timeoutSeconds": timeout, "failureThreshold": threshold})
}

/// E2E 2: a dependency outage through readiness only blocks traffic and recovers; through
/// liveness too it restart-loops; a slow dependency acts like an outage; a 50 % failing one
/// makes readiness flap. The main apps reach the dependency by name (`http://dep/health`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_2_dependency_coupled_probes() {
    let Some(lab) = Plane::docker().await else {
        return;
    };
    let dep = create(
        &lab,
        "dep",
        app_body(
            json!([{"name": "APP_MODE", "value": "dependency"}]),
            1,
            json!([]),
            2,
            json!({}),
        ),
    )
    .await;
    let check = |liveness: bool| {
        json!([
            {"name": "READINESS_CHECK_DEPENDENCY", "value": "true"},
            {"name": "LIVENESS_CHECK_DEPENDENCY", "value": liveness.to_string()},
            {"name": "DEPENDENCY_URL", "value": "http://dep/health"},
            {"name": "DEPENDENCY_TIMEOUT_MS", "value": "1000"},
        ])
    };
    let probes = json!([
        http_probe("Readiness", "/readyz", 1, 2, 2),
        http_probe("Liveness", "/livez", 1, 2, 3)
    ]);
    let ro = create(
        &lab,
        "readonly",
        app_body(check(false), 1, probes.clone(), 2, json!({})),
    )
    .await;
    create(
        &lab,
        "coupled",
        app_body(check(true), 1, probes, 2, json!({})),
    )
    .await;
    let (st, _) = request("GET", &ro, "/", "", Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(st, 200, "healthy dependency: traffic flows");

    // Outage.
    let set_dep = |body: &'static str| {
        let dep = dep.clone();
        async move {
            let (st, b) = request(
                "POST",
                &dep,
                "/admin/dependency",
                body,
                Duration::from_secs(5),
            )
            .await
            .unwrap();
            assert_eq!(st, 200, "{b}");
        }
    };
    set_dep(r#"{"healthy": false}"#).await;
    let outage = std::time::Instant::now();
    let (st, body) = eventually(
        Duration::from_secs(15),
        "readiness-only app answers 503",
        || async {
            let r = request("GET", &ro, "/", "", Duration::from_secs(5))
                .await
                .ok()?;
            (r.0 == 503).then_some(r)
        },
    )
    .await;
    assert_eq!((st, body.as_str()), (503, "no healthy upstream"));
    eventually(
        Duration::from_secs(45),
        "coupled restartCount >= 2",
        || async { (restart_count(&lab, "coupled").await >= 2).then_some(()) },
    )
    .await;
    let took = outage.elapsed();
    eprintln!("coupled: 2 restarts {took:?} after the outage began");
    assert_eq!(
        restart_count(&lab, "readonly").await,
        0,
        "readiness-only never restarts"
    );
    assert!(
        !sys_for(&lab, "coupled", "ContainerTerminated")
            .iter()
            .all(|r| r["Log_s"] != "Container 'subject' was terminated with reason 'ProbeFailure'")
    );
    assert!(sys_for(&lab, "coupled", "ProbeFailed").iter().any(|r| {
        r["Log_s"]
            .as_str()
            .unwrap()
            .starts_with("Probe of Liveness failed")
    }));
    assert!(sys_for(&lab, "readonly", "ContainerTerminated").is_empty());

    // Recovery.
    set_dep(r#"{"healthy": true}"#).await;
    eventually(
        Duration::from_secs(15),
        "readiness-only app recovers",
        || async {
            let r = request("GET", &ro, "/", "", Duration::from_secs(5))
                .await
                .ok()?;
            (r.0 == 200).then_some(())
        },
    )
    .await;

    // Slow dependency beyond DEPENDENCY_TIMEOUT_MS behaves as an outage.
    set_dep(r#"{"delay_ms": 3000}"#).await;
    eventually(
        Duration::from_secs(20),
        "slow dependency blocks traffic",
        || async {
            let r = request("GET", &ro, "/", "", Duration::from_secs(5))
                .await
                .ok()?;
            (r.0 == 503).then_some(())
        },
    )
    .await;
    set_dep(r#"{"delay_ms": 0, "fail_rate": 0.5}"#).await;

    // 50 % failures: readiness flaps, the client sees both.
    let mut seen = std::collections::BTreeSet::new();
    let until = tokio::time::Instant::now() + Duration::from_secs(30);
    while tokio::time::Instant::now() < until && seen.len() < 2 {
        if let Ok((st, _)) = request("GET", &ro, "/", "", Duration::from_secs(5)).await {
            seen.insert(st);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(seen, [200u16, 503].into_iter().collect(), "readiness flaps");
    assert_eq!(restart_count(&lab, "readonly").await, 0);
    lab.stop().await;
}

/// E2E 3: liveness patterns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_3_liveness_patterns() {
    let Some(lab) = Plane::docker().await else {
        return;
    };
    // (a) A blocking liveness handler beyond timeoutSeconds: a restart loop.
    create(
        &lab,
        "blocking",
        app_body(
            json!([{"name": "LIVENESS_IO_DELAY", "value": "3"}]),
            1,
            json!([http_probe("Liveness", "/livez", 1, 1, 2)]),
            2,
            json!({}),
        ),
    )
    .await;
    // (b) No probes of our own (Container Apps' default TCP ones only) + zombie.
    let zombie = create(
        &lab,
        "zombie",
        app_body(json!([]), 1, json!([]), 2, json!({})),
    )
    .await;
    // (c) Zombie with liveness (period 1, timeout 1, threshold 2) and a 5 s grace period.
    let grace = 5;
    let zl = create(
        &lab,
        "zombielive",
        app_body(
            json!([]),
            1,
            json!([http_probe("Liveness", "/livez", 1, 1, 2)]),
            grace,
            json!({}),
        ),
    )
    .await;

    let (st, _) = request(
        "POST",
        &zombie,
        "/simulate/zombie",
        "",
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    assert_eq!(st, 200);
    // The in-flight request to the zombie-with-liveness app, started before the zombie flip.
    let zl2 = zl.clone();
    let inflight = tokio::spawn(async move {
        let t0 = std::time::Instant::now();
        let r = request("GET", &zl2, "/slow?seconds=60", "", Duration::from_secs(90)).await;
        (r, t0.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (st, _) = request("POST", &zl, "/simulate/zombie", "", Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(st, 200);

    eventually(
        Duration::from_secs(40),
        "blocking liveness restarts twice",
        || async { (restart_count(&lab, "blocking").await >= 2).then_some(()) },
    )
    .await;
    assert!(
        sys_for(&lab, "blocking", "ProbeFailed")
            .iter()
            .any(|r| r["Log_s"] == "Probe of Liveness failed with timeout in 1 seconds.")
    );

    // (c): the in-flight request is cut with Envoy's 503 about the grace period after the kill.
    let (r, elapsed) = tokio::time::timeout(Duration::from_secs(60), inflight)
        .await
        .unwrap()
        .unwrap();
    let term = sys_for(&lab, "zombielive", "ContainerTerminated");
    let probe_kill = term
        .iter()
        .find(|r| r["Log_s"] == "Container 'subject' was terminated with reason 'ProbeFailure'")
        .expect("ProbeFailure termination");
    let (st, body) = r.expect("the ingress answers");
    assert_eq!(st, 503, "{body}");
    assert!(
        body.starts_with(
            "upstream connect error or disconnect/reset before headers. reset reason:"
        ),
        "{body}"
    );
    let cut_at = logline::Timestamp::now().epoch_ms();
    let after_kill_ms = cut_at - ts_ms(probe_kill);
    eprintln!(
        "zombie+liveness: in-flight request cut after {elapsed:?}, {after_kill_ms} ms after the ProbeFailure row"
    );
    assert!(
        elapsed < Duration::from_secs(30),
        "cut well before its 60 s"
    );
    assert!(
        after_kill_ms >= (grace as i64 - 1) * 1000,
        "cut only after the grace period: {after_kill_ms} ms"
    );

    // (b): still Running, no restart, and traffic hangs.
    let hung = request("GET", &zombie, "/", "", Duration::from_secs(3)).await;
    assert!(
        matches!(hung, Err(FetchError::Timeout(_))),
        "zombie without liveness: requests hang: {hung:?}"
    );
    assert_eq!(restart_count(&lab, "zombie").await, 0);
    let reps = latest_replicas(&lab, "zombie").await;
    assert_eq!(reps[0]["properties"]["runningState"], "Running");
    assert!(sys_for(&lab, "zombie", "ContainerTerminated").is_empty());
    lab.stop().await;
}

/// E2E 4: one worker, a 60 s request: readiness fails first, liveness restarts the container,
/// the blocking request is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_4_worker_saturation() {
    let Some(lab) = Plane::docker().await else {
        return;
    };
    let probes = json!([
        http_probe("Readiness", "/readyz", 2, 1, 2),
        http_probe("Liveness", "/livez", 3, 1, 3)
    ]);
    let addr = create(
        &lab,
        "worker",
        app_body(
            json!([{"name": "MAX_CONCURRENCY", "value": "1"}]),
            1,
            probes,
            3,
            json!({}),
        ),
    )
    .await;
    let t0 = std::time::Instant::now();
    let blocking = tokio::spawn(async move {
        request(
            "GET",
            &addr,
            "/delay?seconds=60",
            "",
            Duration::from_secs(90),
        )
        .await
    });
    eventually(Duration::from_secs(40), "liveness restart", || async {
        (restart_count(&lab, "worker").await >= 1).then_some(())
    })
    .await;
    let restart_after = t0.elapsed();
    let r = tokio::time::timeout(Duration::from_secs(30), blocking)
        .await
        .unwrap()
        .unwrap();
    assert!(
        !matches!(r, Ok((200, _))),
        "the blocking request is lost: {r:?}"
    );
    let failed = sys_for(&lab, "worker", "ProbeFailed");
    let kills = sys_for(&lab, "worker", "ContainerTerminated");
    let kill = kills
        .iter()
        .find(|r| r["Log_s"] == "Container 'subject' was terminated with reason 'ProbeFailure'")
        .expect("liveness kill");
    // Readiness reached its threshold (2 failures: out of routing) before liveness killed.
    let readiness_before_kill = failed
        .iter()
        .filter(|r| {
            r["Log_s"]
                .as_str()
                .unwrap()
                .starts_with("Probe of Readiness")
                && ts_ms(r) <= ts_ms(kill)
        })
        .count();
    assert!(
        readiness_before_kill >= 2,
        "readiness fails first: {failed:?}"
    );
    eprintln!(
        "worker saturation: restart {restart_after:?} after the blocking request, request result {r:?}"
    );
    // 3 liveness failures at a 3 s period need at least ~6 s; the grace period adds up to 3 s.
    assert!(restart_after >= Duration::from_secs(6) && restart_after < Duration::from_secs(40));
    lab.stop().await;
}

/// Closed-model keep-alive load: `workers` connections each sending requests back to back.
fn keepalive_load(
    addr: String,
    workers: usize,
    tally: Arc<Tally>,
    stop: tokio_util::sync::CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..workers {
            let addr = addr.clone();
            let tally = tally.clone();
            let stop = stop.clone();
            set.spawn(async move {
                let client: hyper_util::client::legacy::Client<_, Empty<Bytes>> =
                    hyper_util::client::legacy::Client::builder(
                        hyper_util::rt::TokioExecutor::new(),
                    )
                    .pool_max_idle_per_host(1)
                    .build_http();
                while !stop.is_cancelled() {
                    let req = http::Request::get(format!("http://{addr}/"))
                        .body(Empty::<Bytes>::new())
                        .unwrap();
                    let r =
                        tokio::time::timeout(Duration::from_secs(10), client.request(req)).await;
                    match r {
                        Ok(Ok(resp)) if resp.status() == 200 => {
                            let _ = resp.into_body().collect().await;
                            tally.ok.fetch_add(1, Ordering::Relaxed);
                        }
                        _ => {
                            tally.failed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            });
        }
        while set.join_next().await.is_some() {}
    })
}

/// One rollout (new ROLLOUT_GENERATION) of `app`, waiting until the old revision is gone.
async fn one_rollout(lab: &Plane, app: &str, env: Vec<Value>, grace: u64) {
    let (_, _, cur) = lab
        .call("GET", &format!("{}?{AV}", lab.app_url(app)), None)
        .await;
    let mut e = env;
    e.push(json!({"name": "ROLLOUT_GENERATION", "value": "2"}));
    let mut t = cur["properties"]["template"].clone();
    t["containers"][0]["env"] = json!(e);
    t["terminationGracePeriodSeconds"] = json!(grace);
    let (code, h, v) = lab
        .call(
            "PATCH",
            &format!("{}?{AV}", lab.app_url(app)),
            Some(json!({"properties": {"template": t}})),
        )
        .await;
    assert_eq!(code, 202, "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(60)).await, "Succeeded");
    eventually(Duration::from_secs(60), "old revision gone", || async {
        let (_, _, v) = lab
            .call("GET", &format!("{}/revisions?{AV}", lab.app_url(app)), None)
            .await;
        let live = v["value"]
            .as_array()?
            .iter()
            .filter(|r| r["properties"]["replicas"].as_u64().unwrap_or(0) > 0)
            .count();
        (live == 1).then_some(())
    })
    .await;
}

/// E2E 5: drain. `immediate` shutdown with routing kept after SIGTERM loses keep-alive
/// requests, `drain` does not; long side requests survive when the grace period exceeds them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_5_drain_and_grace() {
    let Some(lab) = Plane::docker().await else {
        return;
    };
    let probes = json!([http_probe("Readiness", "/readyz", 1, 1, 2)]);
    // Routing keeps sending to a replica for 2 s after its SIGTERM (the Kubernetes race).
    let lag = json!({"localplane.routingRemovalLagMs": "2000"});
    let mut results = Vec::new();
    for (app, mode) in [("immediate", "immediate"), ("drain", "drain")] {
        let env = vec![
            json!({"name": "SHUTDOWN_MODE", "value": mode}),
            json!({"name": "SHUTDOWN_DRAIN_SECONDS", "value": "4"}),
        ];
        let addr = create(
            &lab,
            app,
            app_body(json!(env.clone()), 2, probes.clone(), 10, lag.clone()),
        )
        .await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let tally = Arc::new(Tally::default());
        let stop = tokio_util::sync::CancellationToken::new();
        let loader = keepalive_load(addr, 8, tally.clone(), stop.clone());
        tokio::time::sleep(Duration::from_secs(1)).await;
        one_rollout(&lab, app, env, 10).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        stop.cancel();
        tokio::time::timeout(Duration::from_secs(20), loader)
            .await
            .unwrap()
            .unwrap();
        let (ok, failed) = (
            tally.ok.load(Ordering::Relaxed),
            tally.failed.load(Ordering::Relaxed),
        );
        eprintln!("{mode}: ok={ok} failed={failed}");
        assert!(ok > 100, "{mode}: load ran");
        results.push(failed);
    }
    assert!(
        results[0] > 0,
        "immediate exit while still routed must show failures"
    );
    assert_eq!(results[1], 0, "drain mode with routing lag loses nothing");

    // Side-stream requests longer than... the grace period.
    for (app, grace, survive) in [("longgrace", 10u64, true), ("shortgrace", 2u64, false)] {
        let env = vec![json!({"name": "SHUTDOWN_MODE", "value": "graceful"})];
        let addr = create(
            &lab,
            app,
            app_body(json!(env.clone()), 1, probes.clone(), grace, json!({})),
        )
        .await;
        let a2 = addr.clone();
        let side = tokio::spawn(async move {
            request("GET", &a2, "/slow?seconds=6", "", Duration::from_secs(30)).await
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
        one_rollout(&lab, app, env, grace).await;
        let r = tokio::time::timeout(Duration::from_secs(30), side)
            .await
            .unwrap()
            .unwrap();
        eprintln!("{app} (grace {grace} s): 6 s request -> {r:?}");
        if survive {
            assert!(matches!(r, Ok((200, _))), "{r:?}");
        } else {
            assert!(!matches!(r, Ok((200, _))), "{r:?}");
        }
    }
    lab.stop().await;
}

/// Jobs on Docker: a Manual job whose loadgen reaches an app by name and exits 0 (Succeeded),
/// `replicaTimeout` failing a job that runs too long, and a Schedule (cron) job firing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_jobs_manual_timeout_schedule() {
    let Some(lab) = Plane::docker().await else {
        return;
    };
    create(
        &lab,
        "target",
        app_body(json!([]), 1, json!([]), 2, json!({})),
    )
    .await;
    let job = |trigger: Value, timeout: u64, image: &str, env: Value| {
        json!({"location": "local", "properties": {
            "configuration": trigger.as_object().unwrap().clone().into_iter()
                .chain([("replicaTimeout".to_string(), json!(timeout)), ("replicaRetryLimit".to_string(), json!(0))])
                .collect::<serde_json::Map<_, _>>(),
            "template": {"terminationGracePeriodSeconds": 2, "containers": [{"name": "main", "image": image, "env": env}]}}})
    };
    let manual = json!({"triggerType": "Manual", "manualTriggerConfig": {"parallelism": 1, "replicaCompletionCount": 1}});
    let load_env = json!([{"name": "SUBJECT_URL", "value": "http://target/"}, {"name": "TARGET_RPS", "value": "20"}, {"name": "DURATION_SECONDS", "value": "2"}]);
    for (name, body) in [
        (
            "load",
            job(manual.clone(), 60, "probelab/loadgen:dev", load_env),
        ),
        (
            "stuck",
            job(manual.clone(), 3, "probelab/subject:dev", json!([])),
        ),
        (
            "cron",
            job(
                json!({"triggerType": "Schedule", "scheduleTriggerConfig": {"cronExpression": "* * * * *", "parallelism": 1, "replicaCompletionCount": 1}}),
                3,
                "probelab/subject:dev",
                json!([]),
            ),
        ),
    ] {
        let (code, _, v) = lab
            .call("PUT", &format!("{}?{AV}", lab.job_url(name)), Some(body))
            .await;
        assert_eq!(code, 201, "{v}");
    }
    let run = |name: &'static str| {
        let lab = &lab;
        async move {
            let (code, _, v) = lab
                .call("POST", &format!("{}/start?{AV}", lab.job_url(name)), None)
                .await;
            assert_eq!(code, 202, "{v}");
            let exec = v["name"].as_str().unwrap().to_string();
            eventually(Duration::from_secs(60), "execution ends", || async {
                let (_, _, v) = lab
                    .call(
                        "GET",
                        &format!("{}/executions/{exec}?{AV}", lab.job_url(name)),
                        None,
                    )
                    .await;
                let s = v["properties"]["status"].as_str()?.to_string();
                (s != "Running").then_some(s)
            })
            .await
        }
    };
    assert_eq!(run("load").await, "Succeeded");
    let load_lines: Vec<Value> = lab
        .console_rows()
        .into_iter()
        .filter(|r| r["JobName_s"] == "load")
        .collect();
    let summary = load_lines
        .iter()
        .filter_map(|r| serde_json::from_str::<Value>(r["Log_s"].as_str()?).ok())
        .find(|l| l["kind"] == "summary")
        .expect("loadgen summary in the console table");
    assert!(
        summary["ok"].as_u64().unwrap() > 0,
        "the job reached the app by name: {summary}"
    );
    assert_eq!(run("stuck").await, "Failed");
    eventually(Duration::from_secs(75), "a scheduled execution", || async {
        let (_, _, v) = lab
            .call(
                "GET",
                &format!("{}/executions?{AV}", lab.job_url("cron")),
                None,
            )
            .await;
        (!v["value"].as_array()?.is_empty()).then_some(())
    })
    .await;
    lab.stop().await;
}
