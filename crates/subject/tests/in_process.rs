//! The library in-process: the router through tower `oneshot` (bad input, timing knobs, the
//! dependency mode, the 300 s hang cap under paused time) and `run_with` over real HTTP on
//! 127.0.0.1 (zombie, deadlock, reset).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::{InProcess, get, post};
use http_body_util::BodyExt;
use subject::config::{AppMode, Secret};
use subject::{AppState, Config};
use testkit::http::{FetchError, fetch, loopback};
use testkit::subject_status::wait_inflight;
use tokio::time::Instant;
use tower::ServiceExt;

fn no_exit() -> subject::ExitFn {
    Arc::new(|_| {})
}

fn router(cfg: Config) -> axum::Router {
    subject::routes::router(AppState::started(cfg, no_exit()))
}

async fn call(
    app: &axum::Router,
    method: &str,
    uri: &str,
    body: &str,
) -> (StatusCode, serde_json::Value) {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .body(Body::from(body.to_owned()))
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let v = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
    (status, v)
}

#[tokio::test]
async fn bad_input_gets_4xx_with_a_json_error() {
    let mut cfg = Config::defaults();
    cfg.max_request_seconds = 10.0;
    let app = router(cfg.clone());
    cfg.app_mode = AppMode::Dependency;
    let dep = router(cfg);
    let cases: &[(&axum::Router, &str, &str, &str, u16)] = &[
        (&app, "GET", "/delay", "", 400),
        (&app, "GET", "/delay?seconds=abc", "", 400),
        (&app, "GET", "/delay?seconds=-1", "", 400),
        (&app, "GET", "/delay?seconds=11", "", 400),
        (&app, "GET", "/delay?seconds=NaN", "", 400),
        (&app, "GET", "/delay?seconds=inf", "", 400),
        (&app, "GET", "/slow?seconds=1e400", "", 400),
        (&app, "GET", "/cpu?seconds=", "", 400),
        (&app, "GET", "/alloc", "", 400),
        (&app, "GET", "/alloc?mib=", "", 400),
        (&app, "GET", "/alloc?mib=-1", "", 400),
        (&app, "GET", "/alloc?mib=1.5", "", 400),
        (&app, "GET", "/alloc?mib=abc", "", 400),
        (&app, "GET", "/alloc?mib=8193", "", 400),
        (&app, "GET", "/alloc?mib=99999999999999999999999", "", 400),
        (&app, "POST", "/alloc?mib=1", "", 405),
        (&app, "GET", "/status?code=600", "", 400),
        (&app, "GET", "/status?code=199", "", 400),
        (&app, "GET", "/status?code=abc", "", 400),
        (&app, "GET", "/status?code=-500", "", 400),
        (&app, "POST", "/simulate/crash?code=256", "", 400),
        (&app, "POST", "/simulate/crash?code=x", "", 400),
        (&app, "GET", "/nope", "", 404),
        (&app, "GET", "/health", "", 404),
        (&app, "POST", "/admin/dependency", "{}", 404),
        (&app, "POST", "/status", "", 405),
        (&app, "DELETE", "/", "", 405),
        (&app, "GET", "/simulate/zombie", "", 405),
        (&dep, "POST", "/admin/dependency", "not json", 400),
        (&dep, "POST", "/admin/dependency", "", 400),
        (
            &dep,
            "POST",
            "/admin/dependency",
            r#"{"fail_rate": 2}"#,
            400,
        ),
        (
            &dep,
            "POST",
            "/admin/dependency",
            r#"{"fail_rate": -0.1}"#,
            400,
        ),
        (
            &dep,
            "POST",
            "/admin/dependency",
            r#"{"delay_ms": -5}"#,
            400,
        ),
        (
            &dep,
            "POST",
            "/admin/dependency",
            r#"{"delay_ms": 99999999}"#,
            400,
        ),
        (
            &dep,
            "POST",
            "/admin/dependency",
            r#"{"healthy": "yes"}"#,
            400,
        ),
        (
            &dep,
            "POST",
            "/admin/dependency",
            r#"{"helthy": true}"#,
            400,
        ),
        (&dep, "GET", "/dependency/health", "", 404),
    ];
    for (app, method, uri, body, want) in cases {
        let (status, v) = call(app, method, uri, body).await;
        assert_eq!(status.as_u16(), *want, "{method} {uri} {body}: {v}");
        assert!(v["error"].is_string(), "{method} {uri}: {v}");
    }
    // Main mode without DEPENDENCY_URL: nothing to check, a 4xx, not a 5xx.
    let (status, v) = call(&app, "GET", "/dependency/health", "").await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(v["error"].is_string());
}

#[tokio::test]
async fn status_reports_state_and_answers_any_asked_code() {
    let mut cfg = Config::defaults();
    cfg.rollout_generation = "g2".into();
    cfg.revision = Some("rev-s".into());
    let app = router(cfg);
    let (status, v) = call(&app, "GET", "/status", "").await;
    assert_eq!(status, 200);
    for key in [
        "zombie",
        "deadlocked",
        "inflight",
        "started",
        "ready",
        "uptime_s",
        "revision",
        "replica",
        "generation",
    ] {
        assert!(!v[key].is_null(), "{key} in {v}");
    }
    assert_eq!(v["revision"], "rev-s");
    assert_eq!(v["generation"], "g2");
    assert_eq!(v["inflight"], 0);
    for code in [200u16, 201, 302, 404, 418, 500, 503, 599] {
        let (status, _) = call(&app, "GET", &format!("/status?code={code}"), "").await;
        assert_eq!(status.as_u16(), code);
    }
    let (status, _) = call(&app, "GET", "/status?code=204", "").await;
    assert_eq!(status, 204);
}

#[tokio::test]
async fn identity_headers_are_on_every_response() {
    let mut cfg = Config::defaults();
    cfg.container_app_revision = Some("r1".into());
    cfg.container_app_replica_name = Some("p1".into());
    cfg.rollout_generation = "7".into();
    let app = router(cfg);
    for (m, uri) in [
        ("GET", "/"),
        ("GET", "/live"),
        ("GET", "/nope"),
        ("POST", "/status"),
    ] {
        let req = Request::builder()
            .method(m)
            .uri(uri)
            .body(Body::empty())
            .unwrap();
        let resp = app.clone().oneshot(req).await.unwrap();
        let h = resp.headers();
        assert_eq!(h["x-revision"], "r1", "{uri}");
        assert_eq!(h["x-replica"], "p1", "{uri}");
        assert_eq!(h["x-generation"], "7", "{uri}");
    }
}

async fn timed(app: &axum::Router, uri: &str) -> (StatusCode, Duration) {
    let t = std::time::Instant::now();
    let (s, _) = call(app, "GET", uri, "").await;
    (s, t.elapsed())
}

#[tokio::test]
async fn request_delay_work_cpu_and_liveness_io_delay_take_their_time() {
    let mut cfg = Config::defaults();
    cfg.request_delay_ms = 200;
    let (s, d) = timed(&router(cfg), "/").await;
    assert_eq!(s, 200);
    assert!(
        d >= Duration::from_millis(200) && d < Duration::from_millis(600),
        "{d:?}"
    );

    let mut cfg = Config::defaults();
    cfg.work_ms = 200;
    let (s, d) = timed(&router(cfg), "/").await;
    assert_eq!(s, 200);
    assert!(
        d >= Duration::from_millis(200) && d < Duration::from_millis(800),
        "{d:?}"
    );

    let app = router(Config::defaults());
    let (s, d) = timed(&app, "/").await;
    assert_eq!(s, 200);
    assert!(d < Duration::from_millis(100), "{d:?}");
    let (s, d) = timed(&app, "/cpu?seconds=0.2").await;
    assert_eq!(s, 200);
    assert!(d >= Duration::from_millis(200), "{d:?}");
    let (s, d) = timed(&app, "/delay?seconds=0.2").await;
    assert_eq!(s, 200);
    assert!(d >= Duration::from_millis(200), "{d:?}");

    let mut cfg = Config::defaults();
    cfg.liveness_io_delay = Duration::from_millis(300);
    let app = router(cfg);
    for p in ["/live", "/livez"] {
        let (s, d) = timed(&app, p).await;
        assert_eq!(s, 200);
        assert!(d >= Duration::from_millis(300), "{p}: {d:?}");
    }
    let (_, d) = timed(&app, "/ready").await;
    assert!(
        d < Duration::from_millis(100),
        "readiness has no IO delay: {d:?}"
    );
}

/// This process's resident set, MiB (`VmRSS` of `/proc/self/status`).
fn rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb / 1024
}

/// `/alloc` holds what it allocated, resident (the process's RSS grows by it), adds up across
/// calls, and refuses a call that would pass `MAX_ALLOC_MIB` without allocating anything.
#[tokio::test]
async fn alloc_holds_resident_memory_up_to_the_cap() {
    let mut cfg = Config::defaults();
    cfg.max_alloc_mib = 96;
    let app = router(cfg);
    let before = rss_mib();
    let (s, v) = call(&app, "GET", "/alloc?mib=64", "").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["allocated_mib"], 64);
    assert_eq!(v["held_mib"], 64);
    assert_eq!(v["max_alloc_mib"], 96);
    let grown = rss_mib().saturating_sub(before);
    assert!(grown >= 60, "RSS grew by {grown} MiB for 64 MiB held");
    let (s, v) = call(&app, "GET", "/alloc?mib=32", "").await;
    assert_eq!((s.as_u16(), v["held_mib"].as_u64()), (200, Some(96)), "{v}");
    // At the cap: one more MiB is refused, 0 only reports.
    let (s, v) = call(&app, "GET", "/alloc?mib=1", "").await;
    assert_eq!(s, 400, "{v}");
    assert!(
        v["error"].as_str().unwrap().contains("MAX_ALLOC_MIB"),
        "{v}"
    );
    let (s, v) = call(&app, "GET", "/alloc?mib=0", "").await;
    assert_eq!((s.as_u16(), v["held_mib"].as_u64()), (200, Some(96)), "{v}");
}

#[tokio::test]
async fn dependency_mode_health_honours_healthy_delay_and_fail_rate() {
    let mut cfg = Config::defaults();
    cfg.app_mode = AppMode::Dependency;
    cfg.dependency_fail_rate = 0.5;
    let app = router(cfg.clone());
    let mut codes = std::collections::BTreeMap::new();
    for _ in 0..200 {
        let (s, _) = call(&app, "GET", "/health", "").await;
        *codes.entry(s.as_u16()).or_insert(0) += 1;
    }
    assert_eq!(
        codes.keys().copied().collect::<Vec<_>>(),
        vec![200, 503],
        "{codes:?}"
    );
    assert!(codes[&200] > 50 && codes[&503] > 50, "{codes:?}");

    cfg.dependency_fail_rate = 0.0;
    cfg.dependency_healthy = false;
    let app = router(cfg.clone());
    let (s, v) = call(&app, "GET", "/health", "").await;
    assert_eq!((s.as_u16(), v["status"].as_str()), (503, Some("unhealthy")));
    let (s, v) = call(
        &app,
        "POST",
        "/admin/dependency",
        r#"{"healthy":true,"delay_ms":150}"#,
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(
        v,
        serde_json::json!({"healthy": true, "delay_ms": 150, "fail_rate": 0.0})
    );
    let (_, v) = call(&app, "GET", "/admin/dependency", "").await;
    assert_eq!(v["delay_ms"], 150);
    let (s, d) = timed(&app, "/health").await;
    assert_eq!(s, 200);
    assert!(d >= Duration::from_millis(150), "{d:?}");
    let (s, _) = call(&app, "POST", "/admin/dependency", r#"{"fail_rate":1}"#).await;
    assert_eq!(s, 200);
    let (s, v) = call(&app, "GET", "/health", "").await;
    assert_eq!((s.as_u16(), v["status"].as_str()), (503, Some("failed")));
}

#[tokio::test(start_paused = true)]
async fn a_zombie_hang_ends_after_300_seconds() {
    let app = router(Config::defaults());
    let (s, _) = call(&app, "POST", "/simulate/zombie", "").await;
    assert_eq!(s, 200);
    let t = Instant::now();
    let (s, _) = call(&app, "GET", "/live", "").await;
    assert_eq!(s, 200);
    let waited = t.elapsed();
    assert!(
        waited >= Duration::from_secs(300) && waited < Duration::from_secs(301),
        "{waited:?}"
    );
    let t = Instant::now();
    let (s, _) = call(&app, "POST", "/simulate/deadlock", "").await;
    assert!(t.elapsed() >= Duration::from_secs(300), "still a zombie");
    assert_eq!(s, 200);
}

const HANG: Duration = Duration::from_millis(400);

async fn hangs(port: u16, path: &str) -> bool {
    matches!(
        fetch(loopback(port), "GET", path, &[], "", HANG).await,
        Err(FetchError::Timeout(_))
    )
}

#[tokio::test]
async fn zombie_hangs_every_handler_but_reset_and_status_until_reset() {
    let s = InProcess::start(Config::defaults()).await;
    let port = s.port();
    assert_eq!(get(port, "/live").await.status, 200);
    let r = post(port, "/simulate/zombie", &[], "").await;
    assert_eq!(
        (r.status, r.expect_json()["zombie"].as_bool()),
        (200, Some(true))
    );
    for path in [
        "/", "/live", "/livez", "/ready", "/readyz", "/healthz", "/startup", "/nope",
    ] {
        assert!(hangs(port, path).await, "{path} hangs");
    }
    let pending = tokio::spawn(async move {
        fetch(
            loopback(port),
            "GET",
            "/ready",
            &[],
            "",
            Duration::from_secs(10),
        )
        .await
    });
    wait_inflight(loopback(port), 1, Duration::from_secs(5)).await;
    let st = get(port, "/status").await.expect_json();
    assert_eq!(st["zombie"], true);
    assert_eq!(st["inflight"], 1, "the hung /ready is in flight");
    let r = post(port, "/simulate/reset", &[], "").await;
    assert_eq!(r.status, 200);
    let r = tokio::time::timeout(Duration::from_secs(1), pending)
        .await
        .expect("the hung request proceeds on reset")
        .unwrap()
        .unwrap();
    assert_eq!(r.status, 200);
    assert!(!hangs(port, "/live").await);
    assert_eq!(get(port, "/status").await.expect_json()["zombie"], false);
}

#[tokio::test]
async fn deadlock_hangs_only_liveness_until_reset() {
    let s = InProcess::start(Config::defaults()).await;
    let port = s.port();
    let r = post(port, "/simulate/deadlock", &[], "").await;
    assert_eq!(
        (r.status, r.expect_json()["deadlocked"].as_bool()),
        (200, Some(true))
    );
    assert!(hangs(port, "/live").await);
    assert!(hangs(port, "/livez").await);
    for path in ["/", "/ready", "/readyz", "/healthz", "/startup", "/status"] {
        assert_eq!(get(port, path).await.status, 200, "{path} answers");
    }
    assert_eq!(get(port, "/status").await.expect_json()["deadlocked"], true);
    let pending = tokio::spawn(async move {
        fetch(
            loopback(port),
            "GET",
            "/live",
            &[],
            "",
            Duration::from_secs(10),
        )
        .await
    });
    wait_inflight(loopback(port), 1, Duration::from_secs(5)).await;
    post(port, "/simulate/reset", &[], "").await;
    let r = tokio::time::timeout(Duration::from_secs(1), pending)
        .await
        .expect("proceeds on reset")
        .unwrap()
        .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(get(port, "/livez").await.status, 200);
}

#[tokio::test]
async fn in_process_crash_calls_the_exit_hook_and_graceful_stop_returns_zero() {
    let mut s = InProcess::start(Config::defaults()).await;
    let port = s.port();
    assert_eq!(
        post(port, "/simulate/crash?code=9", &[], "").await.status,
        200
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while s.exits.lock().unwrap().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(*s.exits.lock().unwrap(), vec![9]);
    s.stop();
    let exit = tokio::time::timeout(Duration::from_secs(3), s.task)
        .await
        .expect("stops")
        .unwrap()
        .unwrap();
    assert_eq!(exit.code, 0);
}

#[tokio::test]
async fn simulate_token_guards_simulations_in_process() {
    let mut cfg = Config::defaults();
    cfg.simulate_token = Some(Secret::new("abc"));
    let app = router(cfg);
    let (s, v) = call(&app, "POST", "/simulate/zombie", "").await;
    assert_eq!(s, 401);
    assert!(v["error"].is_string());
    let req = Request::builder()
        .method("POST")
        .uri("/simulate/reset")
        .header("x-simulate-token", "abc")
        .body(Body::empty())
        .unwrap();
    assert_eq!(app.clone().oneshot(req).await.unwrap().status(), 200);
}

#[tokio::test(start_paused = true)]
async fn the_capacity_model_queues_root_requests_but_not_probes() {
    // 10 requests/s of constant work, one at a time: five at once take 100, 200, ... 500 ms,
    // while the probes answer at once.
    let mut cfg = Config::defaults();
    cfg.capacity_rps = Some(10.0);
    cfg.capacity_cv = 0.0;
    cfg.capacity_sharing = subject::capacity::Sharing::Fifo;
    let app = router(cfg);
    let t0 = Instant::now();
    let roots: Vec<_> = (0..5)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move {
                let (s, v) = call(&app, "GET", "/", "").await;
                (
                    s,
                    v["capacity_rps"].clone(),
                    (Instant::now() - t0).as_millis(),
                )
            })
        })
        .collect();
    tokio::task::yield_now().await;
    for p in ["/healthz", "/ready", "/live", "/status"] {
        let t = Instant::now();
        let (s, _) = call(&app, "GET", p, "").await;
        assert_eq!(s, 200, "{p}");
        assert_eq!(
            Instant::now() - t,
            Duration::ZERO,
            "{p} is not in the model"
        );
    }
    let mut ends = Vec::new();
    for r in roots {
        let (s, cap, ms) = r.await.unwrap();
        assert_eq!(s, 200);
        assert_eq!(cap, 10.0);
        ends.push(ms);
    }
    ends.sort();
    assert_eq!(ends, vec![100, 200, 300, 400, 500]);

    // Unset: `/` answers at once, whatever the load.
    let app = router(Config::defaults());
    let t = Instant::now();
    let (s, v) = call(&app, "GET", "/", "").await;
    assert_eq!(
        (s, v["capacity_rps"].clone()),
        (StatusCode::OK, serde_json::Value::Null)
    );
    assert_eq!(Instant::now() - t, Duration::ZERO);
}

/// `FAIL_RATE`: a canary's partial failure, spread evenly (every 5th request at 0.2), only on
/// `/`, with a JSON body that says it was injected; probes and other endpoints stay healthy.
#[tokio::test]
async fn fail_rate_fails_an_exact_evenly_spread_share_of_root_requests() {
    let mut cfg = Config::defaults();
    cfg.fail_rate = 0.2;
    let app = router(cfg);
    let mut failed = Vec::new();
    for k in 1..=100 {
        let (s, body) = call(&app, "GET", "/", "").await;
        if s == StatusCode::INTERNAL_SERVER_ERROR {
            assert!(
                body["error"].as_str().unwrap().contains("FAIL_RATE"),
                "{body}"
            );
            failed.push(k);
        } else {
            assert_eq!(s, StatusCode::OK, "request {k}");
        }
    }
    assert_eq!(failed, (1..=20).map(|i| i * 5).collect::<Vec<_>>());
    for p in ["/ready", "/healthz", "/live", "/status"] {
        let (s, _) = call(&app, "GET", p, "").await;
        assert_ne!(s, StatusCode::INTERNAL_SERVER_ERROR, "{p}");
    }

    let app = router(Config::defaults());
    for _ in 0..50 {
        assert_eq!(call(&app, "GET", "/", "").await.0, StatusCode::OK);
    }
    let mut cfg = Config::defaults();
    cfg.fail_rate = 1.0;
    let app = router(cfg);
    for _ in 0..10 {
        assert_eq!(
            call(&app, "GET", "/", "").await.0,
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }
}

/// `/stream`: the headers at once, then a byte every interval, the end at `seconds` (paused
/// time: the 300 s of the ingress lab's streams take no real time).
#[tokio::test(start_paused = true)]
async fn stream_sends_a_byte_every_interval_then_ends() {
    let app = router(Config::defaults());
    let t = Instant::now();
    let req = Request::get("/stream?seconds=300&interval=60")
        .body(Body::empty())
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(t.elapsed(), Duration::ZERO, "the headers go out at once");
    let mut body = resp.into_body();
    let mut at = Vec::new();
    while let Some(f) = body.frame().await {
        let f = f.unwrap();
        if let Some(d) = f.data_ref() {
            assert_eq!(&d[..], b".");
            at.push(t.elapsed().as_secs());
        }
    }
    assert_eq!(at, [60, 120, 180, 240, 300]);
    assert_eq!(t.elapsed(), Duration::from_secs(300));
    // A quiet stream: one byte at 241 s, the end at 300 s.
    let t = Instant::now();
    let req = Request::get("/stream?seconds=300&interval=241")
        .body(Body::empty())
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    let mut body = resp.into_body();
    let mut at = Vec::new();
    while let Some(f) = body.frame().await {
        if f.unwrap().data_ref().is_some() {
            at.push(t.elapsed().as_secs());
        }
    }
    assert_eq!((at, t.elapsed().as_secs()), (vec![241], 300));
    let (s, v) = call(&app, "GET", "/stream?seconds=300", "").await;
    assert_eq!(s, 400);
    assert!(v["error"].as_str().unwrap().contains("interval"), "{v}");
}

#[tokio::test]
async fn the_queue_enqueues_hands_each_item_out_once_and_refuses_bad_counts() {
    let app = router(Config::defaults());
    let (code, v) = call(&app, "GET", "/queue", "").await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(
        v,
        serde_json::json!({"length": 0, "enqueued": 0, "taken": 0})
    );
    let (code, v) = call(&app, "POST", "/queue?items=3", "").await;
    assert_eq!(code, StatusCode::OK, "{v}");
    assert_eq!(v["length"], 3);
    assert_eq!(
        v["items"],
        serde_json::json!(["item-1", "item-2", "item-3"]),
        "the answer names the items it added"
    );
    let (code, v) = call(&app, "POST", "/queue", "").await;
    assert_eq!((code, v["length"].clone()), (StatusCode::OK, 4.into()));
    assert_eq!(v["items"], serde_json::json!(["item-4"]));
    for bad in ["0", "x", "10001"] {
        let (code, v) = call(&app, "POST", &format!("/queue?items={bad}"), "").await;
        assert_eq!(code, StatusCode::BAD_REQUEST, "{bad}");
        assert!(v["error"].as_str().unwrap().contains("items"), "{v}");
    }
    let mut ids = Vec::new();
    loop {
        let (code, v) = call(&app, "POST", "/queue/take", "").await;
        if code == StatusCode::NO_CONTENT {
            break;
        }
        assert_eq!(code, StatusCode::OK);
        ids.push(v["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(ids, ["item-1", "item-2", "item-3", "item-4"]);
    let (_, v) = call(&app, "GET", "/queue", "").await;
    assert_eq!(
        v,
        serde_json::json!({"length": 0, "enqueued": 4, "taken": 4})
    );
    let (code, _) = call(&app, "GET", "/queue/take", "").await;
    assert_eq!(code, StatusCode::METHOD_NOT_ALLOWED, "take is a POST");
}

/// Serves a main-mode subject's router on 127.0.0.1; its base URL and its state.
async fn queue_server() -> (String, AppState) {
    let state = AppState::started(Config::defaults(), no_exit());
    let app = subject::routes::router(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), state)
}

fn worker(queue_url: &str, work_ms: u64) -> Config {
    let mut cfg = Config::defaults();
    cfg.app_mode = AppMode::QueueWorker;
    cfg.queue_url = Some(queue_url.to_owned());
    cfg.work_ms = work_ms;
    cfg
}

async fn run_worker(cfg: Config) -> (i32, Duration) {
    let hooks = subject::Hooks {
        on_listening: None,
        exit: no_exit(),
    };
    let start = Instant::now();
    let exit = subject::run_with(cfg, std::future::pending(), hooks)
        .await
        .unwrap();
    (exit.code, start.elapsed())
}

#[tokio::test]
async fn a_queue_worker_takes_one_item_works_and_exits_0() {
    let (url, state) = queue_server().await;
    state.0.queue.enqueue(Some("2")).unwrap();
    let (code, took) = run_worker(worker(&url, 300)).await;
    assert_eq!(code, 0);
    assert!(
        took >= Duration::from_millis(300),
        "it worked WORK_MS: {took:?}"
    );
    let s = state.0.queue.stats();
    assert_eq!((s.length, s.taken), (1, 1), "one item, not both");
    // Again: the second item; then an empty queue is an exit 0 without work.
    assert_eq!(run_worker(worker(&url, 0)).await.0, 0);
    assert_eq!(state.0.queue.stats().taken, 2);
    assert_eq!(run_worker(worker(&url, 0)).await.0, 0);
    assert_eq!(state.0.queue.stats().taken, 2);
}

#[tokio::test]
async fn a_queue_worker_that_cannot_reach_its_queue_exits_1() {
    let port = testkit::http::free_port().unwrap();
    let (code, took) = run_worker(worker(&format!("http://127.0.0.1:{port}"), 0)).await;
    assert_eq!(code, 1);
    assert!(took < Duration::from_secs(10), "{took:?}");
}
