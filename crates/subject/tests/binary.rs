//! The real `subject` binary over real HTTP on 127.0.0.1: startup timing, shutdown modes seen from
//! a keep-alive client with an in-flight request, the concurrency cap, dependency checks against
//! a second subject flipped at run time, crash, identity, request logs, and the token's secrecy.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{Subject, get, post, refused};
use testkit::eventually;
use testkit::http::{self, Conn, FetchError, Response, fetch, free_port, loopback};
use testkit::subject_status::wait_inflight;
use testkit::wait::eventually_blocking;

const TOL: Duration = Duration::from_millis(100);

fn within(actual: Duration, expected: Duration) -> bool {
    actual + TOL >= expected && actual <= expected + TOL
}

/// Wall-clock ms of the process's BOOT_START line: timing is measured from it, so the time the
/// OS takes to exec the binary does not count against the ±100 ms.
fn boot_ms(s: &Subject) -> i64 {
    let v = s.wait_line(Duration::from_secs(5), |v| v["event"] == "BOOT_START");
    v["ts"]
        .as_str()
        .unwrap()
        .parse::<logline::Timestamp>()
        .unwrap()
        .epoch_ms()
}

fn ms(d: i64) -> Duration {
    Duration::from_millis(d.max(0) as u64)
}

#[tokio::test]
async fn bind_late_refuses_connections_until_the_delay_ends() {
    let port = free_port().expect("a free port");
    let p = port.to_string();
    let s = Subject::spawn(&[
        ("PORT", &p),
        ("STARTUP_MODE", "bind-late"),
        ("STARTUP_DELAY_SECONDS", "1"),
    ]);
    let mut refusals = 0;
    let mut last_refused = 0;
    let first_ok = loop {
        assert!(s.spawned.elapsed() < Duration::from_secs(5), "never bound");
        let t = testkit::now_ms();
        if refused(port).await {
            refusals += 1;
            last_refused = t;
        } else {
            break t;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let boot = boot_ms(&s);
    assert!(refusals > 10, "connections were refused during the delay");
    assert!(
        ms(last_refused - boot) >= Duration::from_millis(900),
        "still refused until near the delay, last refusal at {:?}",
        ms(last_refused - boot)
    );
    let bound = ms(first_ok - boot);
    assert!(
        within(bound, Duration::from_secs(1)),
        "bound at {bound:?} after BOOT_START, expected 1 s ± 100 ms"
    );
    let r = get(port, "/").await;
    assert_eq!(r.status, 200);
    assert_eq!(s.events("BOOT_START").len(), 1);
    let done = s.wait_line(Duration::from_secs(2), |v| v["event"] == "STARTUP_COMPLETE");
    assert_eq!(done["config"]["port"], port);
}

#[tokio::test]
async fn bind_early_answers_503_starting_then_200() {
    let s = Subject::spawn(&[
        ("STARTUP_MODE", "bind-early"),
        ("STARTUP_DELAY_SECONDS", "1"),
    ]);
    let port = s.port();
    let boot = boot_ms(&s);
    assert!(testkit::now_ms() - boot < 500, "bound at once");
    let r = get(port, "/").await;
    assert_eq!(
        (r.status, r.expect_json()["status"].as_str()),
        (503, Some("warming"))
    );
    for path in ["/healthz", "/ready", "/live"] {
        let r = get(port, path).await;
        assert_eq!(r.status, 503, "{path}");
        assert_eq!(r.expect_json()["status"], "starting", "{path}");
    }
    let first_ok = loop {
        assert!(
            s.spawned.elapsed() < Duration::from_secs(5),
            "never started"
        );
        let t = testkit::now_ms();
        let r = get(port, "/startup").await;
        if r.status == 200 {
            break t;
        }
        assert_eq!(r.expect_json()["status"], "starting");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let started = ms(first_ok - boot);
    assert!(
        within(started, Duration::from_secs(1)),
        "started at {started:?} after BOOT_START, expected 1 s ± 100 ms"
    );
    for path in ["/", "/healthz", "/ready", "/readyz", "/live", "/livez"] {
        assert_eq!(get(port, path).await.status, 200, "{path}");
    }
}

#[tokio::test]
async fn warm_ready_lies_makes_healthz_and_ready_200_while_root_is_503() {
    let s = Subject::spawn(&[
        ("STARTUP_MODE", "bind-early"),
        ("STARTUP_DELAY_SECONDS", "30"),
        ("WARM_READY_LIES", "true"),
    ]);
    let port = s.port();
    assert_eq!(get(port, "/healthz").await.status, 200);
    assert_eq!(get(port, "/ready").await.status, 200);
    assert_eq!(get(port, "/readyz").await.status, 200);
    assert_eq!(get(port, "/").await.status, 503);
    assert_eq!(get(port, "/startup").await.status, 503);
    assert_eq!(get(port, "/live").await.status, 503);
}

/// Opens a keep-alive connection (one request done on it) and starts `/slow?seconds=N` on another.
async fn keepalive_and_inflight(
    port: u16,
    slow_s: f64,
) -> (
    Conn,
    tokio::task::JoinHandle<(Result<Response, FetchError>, Instant)>,
) {
    let mut idle = Conn::open(loopback(port)).await.unwrap();
    assert_eq!(idle.get("/").await.unwrap().status, 200);
    let mut busy = Conn::open(loopback(port)).await.unwrap();
    let path = format!("/slow?seconds={slow_s}");
    let inflight = tokio::spawn(async move {
        let r = busy.get(&path).await;
        (r, Instant::now())
    });
    wait_inflight(loopback(port), 1, Duration::from_secs(5)).await;
    (idle, inflight)
}

#[tokio::test]
async fn shutdown_immediate_kills_inflight_requests_and_keepalive_connections() {
    let mut s = Subject::spawn(&[("SHUTDOWN_MODE", "immediate")]);
    let port = s.port();
    let (idle, inflight) = keepalive_and_inflight(port, 2.0).await;
    let term_at = Instant::now();
    s.sigterm();
    let st = s.wait_exit(Duration::from_secs(2)).expect("exits at once");
    assert!(
        term_at.elapsed() < Duration::from_millis(500),
        "exited at once"
    );
    assert_eq!(st.code(), Some(143));
    let (r, at) = inflight.await.unwrap();
    assert!(r.is_err(), "the in-flight request died: {r:?}");
    assert!(at - term_at < Duration::from_secs(1));
    assert!(
        idle.wait_closed(Duration::from_secs(1)).await,
        "keep-alive connection died"
    );
    assert!(refused(port).await);
    assert_eq!(s.events("SIGTERM_RECEIVED").len(), 1);
}

#[tokio::test]
async fn shutdown_graceful_finishes_inflight_closes_idle_and_refuses_new() {
    let mut s = Subject::spawn(&[("SHUTDOWN_MODE", "graceful")]);
    let port = s.port();
    let (idle, inflight) = keepalive_and_inflight(port, 1.5).await;
    let term_at = Instant::now();
    s.sigterm();
    s.wait_line(Duration::from_secs(2), |v| v["event"] == "SIGTERM_RECEIVED");
    assert!(
        idle.wait_closed(Duration::from_millis(500)).await,
        "idle keep-alive connection closed promptly"
    );
    eventually(
        Duration::from_millis(500),
        "no new connections after SIGTERM",
        || async { refused(port).await.then_some(()) },
    )
    .await;
    assert!(
        s.child.try_wait().unwrap().is_none(),
        "still finishing the in-flight request"
    );
    let (r, at) = inflight.await.unwrap();
    let r = r.expect("in-flight request finished");
    assert_eq!(r.status, 200);
    assert!(
        at - term_at >= Duration::from_millis(1100),
        "it really waited"
    );
    let st = s
        .wait_exit(Duration::from_secs(3))
        .expect("exits after in-flight work");
    assert_eq!(st.code(), Some(0));
    let done = s.wait_line(Duration::from_secs(1), |v| {
        v["event"] == "SHUTDOWN_COMPLETE"
    });
    assert_eq!(done["shutdown_mode"], "graceful");
}

#[tokio::test]
async fn shutdown_drain_keeps_serving_with_connection_close_then_exits() {
    let mut s = Subject::spawn(&[("SHUTDOWN_MODE", "drain"), ("SHUTDOWN_DRAIN_SECONDS", "1")]);
    let port = s.port();
    let (mut idle, inflight) = keepalive_and_inflight(port, 1.6).await;
    let term_at = Instant::now();
    s.sigterm();
    s.wait_line(Duration::from_secs(2), |v| v["event"] == "SIGTERM_RECEIVED");
    // The keep-alive connection still gets served, told to close, and is closed.
    let r = idle.get("/").await.expect("served during the drain");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("connection"), Some("close"));
    assert!(idle.wait_closed(Duration::from_millis(500)).await);
    // New connections are accepted; readiness says draining.
    let r = get(port, "/ready").await;
    assert_eq!(
        (r.status, r.expect_json()["status"].as_str()),
        (503, Some("draining"))
    );
    assert_eq!(r.header("connection"), Some("close"));
    assert_eq!(get(port, "/healthz").await.status, 503);
    assert_eq!(get(port, "/live").await.status, 200);
    // After the drain: no new connections, in-flight work finishes, exit 0.
    while term_at.elapsed() < Duration::from_millis(1300) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        refused(port).await,
        "graceful phase refuses new connections"
    );
    let (r, _) = inflight.await.unwrap();
    assert_eq!(r.expect("in-flight request finished").status, 200);
    let st = s.wait_exit(Duration::from_secs(3)).expect("exits");
    assert_eq!(st.code(), Some(0));
    assert!(term_at.elapsed() >= Duration::from_secs(1));
    assert_eq!(s.events("SHUTDOWN_COMPLETE").len(), 1);
}

#[tokio::test]
async fn max_concurrency_one_makes_live_wait_behind_a_slow_request() {
    let s = Subject::spawn(&[("MAX_CONCURRENCY", "1")]);
    let port = s.port();
    let slow = tokio::spawn(async move {
        fetch(
            loopback(port),
            "GET",
            "/delay?seconds=4",
            &[],
            "",
            Duration::from_secs(10),
        )
        .await
    });
    // The slow request holds the one permit once `/status`, which waits behind the cap like
    // every handler (so it cannot report the in-flight count here), gets no answer.
    eventually(
        Duration::from_secs(5),
        "the slow request to hold the only permit",
        || async {
            let status = http::get(loopback(port), "/status", Duration::from_millis(500)).await;
            (status == http::Outcome::Timeout).then_some(())
        },
    )
    .await;
    // A probe with a 3 s timeout fails, as a liveness probe would.
    let started = Instant::now();
    let r = fetch(
        loopback(port),
        "GET",
        "/live",
        &[],
        "",
        Duration::from_secs(3),
    )
    .await;
    assert!(
        matches!(r, Err(FetchError::Timeout(_))),
        "/live timed out: {r:?}"
    );
    assert!(started.elapsed() >= Duration::from_secs(3));
    // Requests wait rather than being rejected: this one is answered once the slow one ends.
    let r = fetch(
        loopback(port),
        "GET",
        "/live",
        &[],
        "",
        Duration::from_secs(5),
    )
    .await
    .expect("answered after the slow request");
    assert_eq!(r.status, 200);
    assert_eq!(slow.await.unwrap().unwrap().status, 200);
}

#[tokio::test]
async fn unlimited_concurrency_answers_live_during_a_slow_request() {
    let s = Subject::spawn(&[]);
    let port = s.port();
    let _slow = tokio::spawn(async move {
        fetch(
            loopback(port),
            "GET",
            "/delay?seconds=3",
            &[],
            "",
            Duration::from_secs(10),
        )
        .await
    });
    wait_inflight(loopback(port), 1, Duration::from_secs(2)).await;
    let r = fetch(
        loopback(port),
        "GET",
        "/live",
        &[],
        "",
        Duration::from_millis(500),
    )
    .await;
    assert_eq!(r.unwrap().status, 200);
    let st = get(port, "/status").await.expect_json();
    assert_eq!(st["inflight"], 1);
}

#[tokio::test]
async fn dependency_checks_follow_a_dependency_flipped_at_run_time() {
    let dep = Subject::spawn(&[("APP_MODE", "dependency"), ("APP_NAME", "dep")]);
    let dp = dep.port();
    let url = format!("http://127.0.0.1:{dp}/health");
    let readiness = Subject::spawn(&[
        ("READINESS_CHECK_DEPENDENCY", "true"),
        ("DEPENDENCY_URL", &url),
        ("DEPENDENCY_TIMEOUT_MS", "300"),
    ]);
    let liveness = Subject::spawn(&[
        ("LIVENESS_CHECK_DEPENDENCY", "true"),
        ("DEPENDENCY_URL", &url),
        ("DEPENDENCY_TIMEOUT_MS", "300"),
    ]);
    let (rp, lp) = (readiness.port(), liveness.port());

    assert_eq!(get(dp, "/health").await.status, 200);
    assert_eq!(get(rp, "/ready").await.status, 200);
    assert_eq!(get(lp, "/live").await.status, 200);
    let r = get(rp, "/dependency/health").await;
    assert_eq!(
        (r.status, r.expect_json()["ok"].as_bool()),
        (200, Some(true))
    );

    // Outage: readiness-only fails readiness, keeps liveness; liveness-check fails liveness.
    let r = post(dp, "/admin/dependency", &[], r#"{"healthy": false}"#).await;
    assert_eq!(
        (r.status, r.expect_json()["healthy"].as_bool()),
        (200, Some(false))
    );
    assert_eq!(get(dp, "/health").await.status, 503);
    let r = get(rp, "/ready").await;
    assert_eq!(
        (r.status, r.expect_json()["status"].as_str()),
        (503, Some("dependency-unready"))
    );
    assert_eq!(get(rp, "/readyz").await.status, 503);
    assert_eq!(get(rp, "/live").await.status, 200);
    let r = get(lp, "/live").await;
    assert_eq!(
        (r.status, r.expect_json()["status"].as_str()),
        (503, Some("dependency-failed"))
    );
    assert_eq!(get(lp, "/ready").await.status, 200);
    let r = get(rp, "/dependency/health").await;
    assert_eq!(
        (r.status, r.expect_json()["status"].as_u64()),
        (503, Some(503))
    );

    // Slow dependency: the check times out.
    post(
        dp,
        "/admin/dependency",
        &[],
        r#"{"healthy": true, "delay_ms": 600}"#,
    )
    .await;
    let t = Instant::now();
    let r = get(rp, "/ready").await;
    assert_eq!(r.status, 503);
    assert!(
        r.expect_json()["detail"]
            .as_str()
            .unwrap()
            .contains("timeout"),
        "{}",
        r.body
    );
    assert!(t.elapsed() < Duration::from_millis(550));

    // Recovered.
    post(dp, "/admin/dependency", &[], r#"{"delay_ms": 0}"#).await;
    assert_eq!(get(rp, "/ready").await.status, 200);
    assert_eq!(get(lp, "/live").await.status, 200);

    let fails = readiness.events("DEPENDENCY_CHECK_FAIL");
    assert!(
        fails
            .iter()
            .any(|v| v["probe"] == "readiness" && v["target"] == url.as_str())
    );
    assert!(!readiness.events("DEPENDENCY_CHECK_OK").is_empty());
    assert!(!liveness.events("DEPENDENCY_CHECK_FAIL").is_empty());
    assert!(
        dep.events("SIMULATION_CHANGED")
            .iter()
            .any(|v| v["simulation"] == "dependency")
    );
}

#[tokio::test]
async fn livez_does_a_tcp_check_of_dependency_host() {
    let dep = Subject::spawn(&[("APP_MODE", "dependency")]);
    let up = format!("127.0.0.1:{}", dep.port());
    let down = format!("127.0.0.1:{}", free_port().expect("a free port"));
    let good = Subject::spawn(&[("DEPENDENCY_HOST", &up)]);
    let bad = Subject::spawn(&[("DEPENDENCY_HOST", &down), ("DEPENDENCY_TIMEOUT_MS", "300")]);
    assert_eq!(get(good.port(), "/livez").await.status, 200);
    let r = get(bad.port(), "/livez").await;
    assert_eq!(
        (r.status, r.expect_json()["status"].as_str()),
        (503, Some("dependency-failed"))
    );
    // /live does no TCP check.
    assert_eq!(get(bad.port(), "/live").await.status, 200);
}

#[tokio::test]
async fn crash_exits_with_the_requested_code() {
    let mut s = Subject::spawn(&[]);
    let port = s.port();
    let r = post(port, "/simulate/crash?code=7", &[], "").await;
    assert_eq!(r.status, 200);
    let st = s.wait_exit(Duration::from_secs(3)).expect("crashed");
    assert_eq!(st.code(), Some(7));
    let c = s.events("SIMULATION_CHANGED");
    assert_eq!(c.len(), 1);
    assert_eq!(c[0]["simulation"], "crash");
}

#[tokio::test]
async fn the_token_is_required_and_never_logged() {
    let token = format!("tok-{}-sekrit", std::process::id());
    let mut s = Subject::spawn(&[
        ("SIMULATE_TOKEN", &token),
        ("LOG_REQUESTS", "all"),
        ("RUST_LOG", "trace"),
    ]);
    let port = s.port();
    let good = [("X-Simulate-Token", token.as_str())];
    assert_eq!(post(port, "/simulate/deadlock", &[], "").await.status, 401);
    let r = post(
        port,
        "/simulate/deadlock",
        &[("X-Simulate-Token", "wrong")],
        "",
    )
    .await;
    assert_eq!(r.status, 401);
    assert!(r.expect_json()["error"].is_string());
    assert_eq!(
        post(port, &format!("/simulate/zombie?token={token}"), &[], "")
            .await
            .status,
        401
    );
    assert_eq!(
        post(port, "/simulate/deadlock", &good, "").await.status,
        200
    );
    assert_eq!(post(port, "/simulate/reset", &good, "").await.status, 200);
    assert_eq!(
        post(port, "/simulate/crash?code=3", &good, "").await.status,
        200
    );
    // wait_exit also waits for the last stdout and stderr lines.
    let st = s.wait_exit(Duration::from_secs(3)).expect("crashed");
    assert_eq!(st.code(), Some(3));
    let out = s.stdout().join("\n") + &s.stderr().join("\n");
    assert!(s.events("REQUEST_END").len() >= 6, "requests were logged");
    assert!(out.contains("simulate_token_set"), "the config was logged");
    assert!(!out.contains("sekrit"), "token leaked: {out}");
}

#[tokio::test]
async fn dependency_admin_needs_the_token_too() {
    let s = Subject::spawn(&[("APP_MODE", "dependency"), ("SIMULATE_TOKEN", "t0k")]);
    let port = s.port();
    assert_eq!(
        post(port, "/admin/dependency", &[], r#"{"healthy":false}"#)
            .await
            .status,
        401
    );
    assert_eq!(get(port, "/health").await.status, 200);
    let r = post(
        port,
        "/admin/dependency",
        &[("X-Simulate-Token", "t0k")],
        r#"{"healthy":false}"#,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(get(port, "/health").await.status, 503);
}

#[tokio::test]
async fn identity_comes_from_container_apps_env_with_fallbacks() {
    let s = Subject::spawn(&[
        ("CONTAINER_APP_REVISION", "subject--0000003"),
        ("CONTAINER_APP_REPLICA_NAME", "subject--0000003-abc"),
        ("REVISION", "ignored"),
        ("ROLLOUT_GENERATION", "g7"),
        ("APP_NAME", "api"),
    ]);
    let r = get(s.port(), "/").await;
    assert_eq!(r.header("x-revision"), Some("subject--0000003"));
    assert_eq!(r.header("x-replica"), Some("subject--0000003-abc"));
    assert_eq!(r.header("x-generation"), Some("g7"));
    let b = r.expect_json();
    assert_eq!(b["status_code"], 200);
    assert_eq!(b["app"], "api");
    assert_eq!(b["revision"], "subject--0000003");
    assert_eq!(b["generation"], "g7");
    let boot = &s.events("BOOT_START")[0];
    assert_eq!(boot["revision"], "subject--0000003");
    assert_eq!(boot["replica"], "subject--0000003-abc");
    assert_eq!(boot["generation"], "g7");

    let s = Subject::spawn(&[("REVISION", "rev-b")]);
    let r = get(s.port(), "/status").await;
    assert_eq!(r.header("x-revision"), Some("rev-b"));
    assert_eq!(r.expect_json()["replica"], logline::config::hostname());
}

#[tokio::test]
async fn log_requests_all_errors_none() {
    let all = Subject::spawn(&[("LOG_REQUESTS", "all")]);
    let errors = Subject::spawn(&[]);
    let none = Subject::spawn(&[("LOG_REQUESTS", "none")]);
    for s in [&all, &errors, &none] {
        let port = s.port();
        assert_eq!(get(port, "/").await.status, 200);
        assert_eq!(get(port, "/nope").await.status, 404);
        assert_eq!(get(port, "/status?code=500").await.status, 500);
    }
    let count = |s: &Subject| s.events("REQUEST_END").len();
    // Each line is printed before its response goes out, and copied from the pipe by a thread.
    eventually_blocking(Duration::from_secs(5), "the logged requests' lines", || {
        (count(&all) >= 3 && count(&errors) >= 2).then_some(())
    });
    assert_eq!(count(&all), 3);
    assert_eq!(count(&errors), 2);
    assert_eq!(count(&none), 0);
    let e = &errors.events("REQUEST_END")[0];
    assert_eq!(
        (
            e["method"].as_str(),
            e["path"].as_str(),
            e["status"].as_u64()
        ),
        (Some("GET"), Some("/nope"), Some(404))
    );
    assert!(e["dur_ms"].is_number());
}

#[tokio::test]
async fn every_stdout_line_is_one_json_object() {
    let mut s = Subject::spawn(&[("LOG_REQUESTS", "all")]);
    let port = s.port();
    get(port, "/").await;
    get(port, "/delay?seconds=x").await;
    s.sigterm();
    // wait_exit also waits for the last stdout and stderr lines.
    s.wait_exit(Duration::from_secs(3)).expect("exits");
    let lines = s.json_lines();
    let kinds: Vec<_> = lines
        .iter()
        .map(|v| v["kind"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        kinds.iter().all(|k| k == "subject" || k == "log"),
        "{kinds:?}"
    );
    for l in s.stdout() {
        if l.contains("\"kind\":\"subject\"") {
            logline::Line::from_json(&l).unwrap_or_else(|e| panic!("{l}: {e}"));
        }
    }
    let events: Vec<_> = s
        .events("BOOT_START")
        .into_iter()
        .chain(s.events("STARTUP_COMPLETE"))
        .chain(s.events("SIGTERM_RECEIVED"))
        .chain(s.events("SHUTDOWN_COMPLETE"))
        .collect();
    assert_eq!(events.len(), 4);
}

#[tokio::test]
async fn invalid_configuration_fails_before_binding() {
    let port = free_port().expect("a free port");
    let p = port.to_string();
    let mut s = Subject::spawn(&[("PORT", &p), ("READINESS_CHECK_DEPENDENCY", "true")]);
    let st = s.wait_exit(Duration::from_secs(5)).expect("exits");
    assert_eq!(st.code(), Some(2));
    assert!(s.stderr().join("\n").contains("DEPENDENCY_URL"));
    let mut s = Subject::spawn(&[("PORT", &p), ("MAX_CONCURRENCY", "lots")]);
    let st = s.wait_exit(Duration::from_secs(5)).expect("exits");
    assert_eq!(st.code(), Some(2));
    assert!(refused(port).await);
}

/// `/stream`'s `REQUEST_END` is printed once, when its body ends: completed, or cut when the
/// client goes away mid-stream.
#[tokio::test]
async fn a_stream_logs_its_end_completed_or_cut() {
    let s = Subject::spawn(&[("LOG_REQUESTS", "all")]);
    let port = s.port();
    let r = get(port, "/stream?seconds=0.3&interval=0.1").await;
    assert_eq!((r.status, r.body.as_str()), (200, "..."));
    // A client that goes away after the first byte of a 30 s stream.
    {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut c = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        c.write_all(b"GET /stream?seconds=30&interval=0.1 HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 256];
        while !String::from_utf8_lossy(&got).contains("\r\n\r\n1\r\n.") {
            let n = c.read(&mut buf).await.unwrap();
            assert!(n > 0, "{}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
        }
    }
    let streams = || -> Vec<serde_json::Value> {
        s.events("REQUEST_END")
            .into_iter()
            .filter(|e| e["path"] == "/stream")
            .collect()
    };
    eventually_blocking(Duration::from_secs(5), "both streams' lines", || {
        (streams().len() >= 2).then_some(())
    });
    let lines = streams();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["detail"], "stream completed: 3 of 3 bytes");
    assert!(
        lines[0]["dur_ms"].as_f64().unwrap() >= 300.0,
        "{}",
        lines[0]
    );
    let detail = lines[1]["detail"].as_str().unwrap();
    assert!(detail.starts_with("stream cut: "), "{detail}");
}
