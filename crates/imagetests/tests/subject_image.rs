//! The `probelab/subject:dev` image, black-box: what a platform sees from outside the container.

mod common;

use std::time::{Duration, Instant};

use common::*;
use testkit::docker::{published, require_docker, wait_exit};
use testkit::http::{self, Outcome};
use testkit::subject_status::wait_inflight;
use testkit::testcontainers::ImageExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bind_late_startup_delay_refuses_connections_then_answers() {
    let Some(docker) = require_docker().await else {
        return;
    };
    docker.require_image("subject").await;
    let c = start(subject(&[
        ("STARTUP_DELAY_SECONDS", "2"),
        ("STARTUP_MODE", "bind-late"),
    ]))
    .await;
    let addr = published(&c, SUBJECT_PORT).await;

    let start = Instant::now();
    let mut failures = Vec::new();
    let first_ok_ms = loop {
        match http::get(addr, "/healthz", PROBE_TIMEOUT).await {
            Outcome::Response(r) if r.status == 200 => break testkit::now_ms(),
            other => failures.push(other),
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "no 200 within 15 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };

    // Nothing listens during the delay: Docker's proxy accepts and drops (or the connect is
    // refused); never an HTTP answer such as a 503.
    assert!(
        failures.len() >= 5,
        "expected failed probes during the 2 s delay, got {failures:?}"
    );
    assert!(
        failures
            .iter()
            .all(|o| matches!(o, Outcome::Closed(_) | Outcome::Refused)),
        "bind-late must not answer before the delay: {failures:?}"
    );

    let lines = stdout_json(&c).await;
    let boot = ts_ms(events(&lines, "BOOT_START")[0]);
    let ready = ts_ms(events(&lines, "STARTUP_COMPLETE")[0]);
    assert!(
        (1950..=2400).contains(&(ready - boot)),
        "STARTUP_COMPLETE {} ms after BOOT_START",
        ready - boot
    );
    let seen = first_ok_ms - boot;
    assert!(
        (1950..=3000).contains(&seen),
        "first 200 seen from outside {seen} ms after BOOT_START"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bind_early_probes_answer_503_then_200_with_identity() {
    let Some(docker) = require_docker().await else {
        return;
    };
    docker.require_image("subject").await;
    let c = start(subject(&[
        ("STARTUP_DELAY_SECONDS", "2"),
        ("STARTUP_MODE", "bind-early"),
        ("CONTAINER_APP_REVISION", "subject--rev1"),
        ("CONTAINER_APP_REPLICA_NAME", "subject--rev1-replica-a"),
        ("ROLLOUT_GENERATION", "g7"),
    ]))
    .await;
    let addr = published(&c, SUBJECT_PORT).await;

    wait_status(addr, "/startup", 503, Duration::from_secs(5)).await;
    let warming = http::get(addr, "/", PROBE_TIMEOUT).await.response();
    assert_eq!(warming.status, 503, "{warming:?}");
    assert!(warming.body.contains("warming"), "{}", warming.body);
    let took = wait_status(addr, "/startup", 200, Duration::from_secs(10)).await;
    assert!(
        took > Duration::from_millis(500),
        "warm-up too short: {took:?}"
    );

    for path in [
        "/healthz", "/startup", "/ready", "/readyz", "/live", "/livez",
    ] {
        let r = http::get(addr, path, PROBE_TIMEOUT).await.response();
        assert_eq!(r.status, 200, "{path}: {r:?}");
    }
    let root = http::get(addr, "/", PROBE_TIMEOUT).await.response();
    assert_eq!(root.status, 200, "{root:?}");
    assert_eq!(root.header("x-revision"), Some("subject--rev1"));
    assert_eq!(root.header("x-replica"), Some("subject--rev1-replica-a"));
    assert_eq!(root.header("x-generation"), Some("g7"));
    let body = root.json().expect("JSON body");
    assert_eq!(body["revision"], "subject--rev1");
    assert_eq!(body["status_code"], 200);
    let status = http::get(addr, "/status", PROBE_TIMEOUT)
        .await
        .response()
        .json()
        .expect("status JSON");
    assert_eq!(
        (status["started"].as_bool(), status["ready"].as_bool()),
        (Some(true), Some(true))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zombie_hangs_every_probe_until_reset() {
    let Some(docker) = require_docker().await else {
        return;
    };
    docker.require_image("subject").await;
    let c = start(subject(&[])).await;
    let addr = published(&c, SUBJECT_PORT).await;
    wait_status(addr, "/healthz", 200, Duration::from_secs(10)).await;

    let set = http::post(addr, "/simulate/zombie", PROBE_TIMEOUT)
        .await
        .response();
    assert_eq!(set.status, 200, "{set:?}");
    for path in ["/healthz", "/live", "/readyz", "/"] {
        assert_eq!(
            http::get(addr, path, Duration::from_millis(1500)).await,
            Outcome::Timeout,
            "{path} must hang while zombie"
        );
    }
    let status = http::get(addr, "/status", PROBE_TIMEOUT).await.response();
    assert_eq!(status.json().expect("JSON")["zombie"], true);

    let reset = http::post(addr, "/simulate/reset", PROBE_TIMEOUT)
        .await
        .response();
    assert_eq!(reset.status, 200, "{reset:?}");
    wait_status(addr, "/healthz", 200, Duration::from_secs(3)).await;
    let lines = stdout_json_until(&c, "the reset line", Duration::from_secs(10), |ls| {
        ls.iter()
            .any(|l| l["event"] == "SIMULATION_CHANGED" && l["simulation"] == "reset")
    })
    .await;
    let sims: Vec<_> = events(&lines, "SIMULATION_CHANGED")
        .iter()
        .map(|l| l["simulation"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        sims.contains(&"zombie".to_string()) && sims.contains(&"reset".to_string()),
        "{sims:?}"
    );
}

/// What one `docker stop -t 10` did to a subject with a `/slow?seconds=3` request in flight.
struct Stopped {
    slow: Outcome,
    stop_took: Duration,
    exit_code: i64,
    lines: Vec<serde_json::Value>,
    /// Readiness and `/` while the stop was under way (drain mode only).
    during: Option<(Outcome, Outcome)>,
}

async fn stop_with_slow_request_in_flight(mode: &str, extra: &[(&str, &str)]) -> Option<Stopped> {
    let docker = require_docker().await?;
    docker.require_image("subject").await;
    let mut env = vec![("SHUTDOWN_MODE", mode), ("LOG_REQUESTS", "all")];
    env.extend_from_slice(extra);
    let c = start(subject(&env)).await;
    let addr = published(&c, SUBJECT_PORT).await;
    wait_status(addr, "/healthz", 200, Duration::from_secs(10)).await;

    let slow = tokio::spawn(http::get(addr, "/slow?seconds=3", Duration::from_secs(20)));
    wait_inflight(addr, 1, Duration::from_secs(3)).await;

    let started = Instant::now();
    let probe_during = async {
        if mode != "drain" {
            return None;
        }
        let limit = Instant::now() + Duration::from_secs(2);
        let ready = loop {
            let o = http::get(addr, "/readyz", PROBE_TIMEOUT).await;
            if o.status() == Some(503) || Instant::now() > limit {
                break o;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let root = http::get(addr, "/", PROBE_TIMEOUT).await;
        Some((ready, root))
    };
    let (stopped, during) = tokio::join!(c.stop_with_timeout(Some(10)), probe_during);
    stopped.unwrap_or_else(|e| panic!("docker stop: {e}"));
    let stop_took = started.elapsed();
    let slow = slow.await.expect("slow request task");
    let exit_code = wait_exit(&c, Duration::from_secs(5)).await;
    let lines = stdout_json(&c).await;
    Some(Stopped {
        slow,
        stop_took,
        exit_code,
        lines,
        during,
    })
}

/// SIGTERM reached the binary (PID 1) and it logged it before completing its shutdown.
fn assert_sigterm_handled(s: &Stopped, mode: &str) {
    let term = events(&s.lines, "SIGTERM_RECEIVED");
    assert_eq!(
        term.len(),
        1,
        "one SIGTERM_RECEIVED expected: {:?}",
        s.lines
    );
    assert_eq!(term[0]["detail"], "SIGTERM");
    assert_eq!(term[0]["shutdown_mode"], mode);
    assert_ne!(s.exit_code, 137, "SIGKILLed: SIGTERM was not handled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_sigterm_finishes_the_in_flight_request_then_exits_0() {
    let Some(s) = stop_with_slow_request_in_flight("graceful", &[]).await else {
        return;
    };
    assert_sigterm_handled(&s, "graceful");
    let r = s.slow.clone().response();
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(s.exit_code, 0);
    assert!(
        s.stop_took >= Duration::from_millis(1500) && s.stop_took < Duration::from_secs(9),
        "stop took {:?}: must wait for the request, not for the 10 s grace",
        s.stop_took
    );
    let term = position(&s.lines, "SIGTERM_RECEIVED").expect("SIGTERM_RECEIVED");
    let done = position(&s.lines, "SHUTDOWN_COMPLETE").expect("SHUTDOWN_COMPLETE");
    let slow_end = s
        .lines
        .iter()
        .position(|l| l["event"] == "REQUEST_END" && l["path"] == "/slow" && l["status"] == 200)
        .expect("REQUEST_END of /slow");
    assert!(term < slow_end && slow_end < done, "order: {:?}", s.lines);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn immediate_sigterm_cuts_the_in_flight_request_and_exits_143() {
    let Some(s) = stop_with_slow_request_in_flight("immediate", &[]).await else {
        return;
    };
    assert_sigterm_handled(&s, "immediate");
    assert!(
        matches!(s.slow, Outcome::Closed(_)),
        "the in-flight request must be cut: {:?}",
        s.slow
    );
    assert_eq!(s.exit_code, 143);
    // Far below the 10 s grace period (a SIGKILL would take all of it); the slack is for a busy
    // engine, not for the process.
    assert!(
        s.stop_took < Duration::from_secs(3),
        "immediate exit took {:?}",
        s.stop_took
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_sigterm_keeps_serving_with_connection_close_then_exits_0() {
    let Some(s) =
        stop_with_slow_request_in_flight("drain", &[("SHUTDOWN_DRAIN_SECONDS", "2")]).await
    else {
        return;
    };
    assert_sigterm_handled(&s, "drain");
    let (ready, root) = s.during.clone().expect("probed during the drain");
    let ready = ready.response();
    assert_eq!(ready.status, 503, "{ready:?}");
    assert!(ready.body.contains("draining"), "{}", ready.body);
    let root = root.response();
    assert_eq!(root.status, 200, "{root:?}");
    assert_eq!(root.header("connection"), Some("close"));
    assert_eq!(s.slow.clone().response().status, 200);
    assert_eq!(s.exit_code, 0);
    assert!(
        s.stop_took >= Duration::from_millis(1900) && s.stop_took < Duration::from_secs(9),
        "stop took {:?} with a 2 s drain",
        s.stop_took
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdout_lines_stay_whole_in_docker_logs_under_concurrent_requests() {
    let Some(docker) = require_docker().await else {
        return;
    };
    docker.require_image("subject").await;
    let c = start(subject(&[("LOG_REQUESTS", "all")])).await;
    let addr = published(&c, SUBJECT_PORT).await;
    wait_status(addr, "/healthz", 200, Duration::from_secs(10)).await;

    const TASKS: usize = 20;
    const PER_TASK: usize = 15;
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        tasks.push(tokio::spawn(async move {
            let mut ok = 0;
            for _ in 0..PER_TASK {
                if http::get(
                    addr,
                    "/?pad=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                    Duration::from_secs(5),
                )
                .await
                .status()
                    == Some(200)
                {
                    ok += 1;
                }
            }
            ok
        }));
    }
    let mut ok = 0;
    for t in tasks {
        ok += t.await.expect("task");
    }
    assert_eq!(ok, TASKS * PER_TASK);

    // Every line parses on its own (stdout_json panics on a torn one) and carries kind + ts.
    // A REQUEST_END line is written after its response went out, so wait for all of them.
    let root_end = |l: &serde_json::Value| l["event"] == "REQUEST_END" && l["path"] == "/";
    let lines = stdout_json_until(
        &c,
        "every REQUEST_END line",
        Duration::from_secs(10),
        |ls| ls.iter().filter(|l| root_end(l)).count() >= TASKS * PER_TASK,
    )
    .await;
    assert!(
        lines
            .iter()
            .all(|l| l["kind"].is_string() && l["ts"].is_string())
    );
    let root_ends = lines.iter().filter(|l| root_end(l)).count();
    assert_eq!(root_ends, TASKS * PER_TASK);
    assert!(
        lines.iter().all(|l| !l.to_string().contains("pad=")),
        "the query string must never be logged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_are_scratch_non_root_and_the_subject_binary_is_pid_1() {
    let Some(docker) = require_docker().await else {
        return;
    };
    docker.require_image("subject").await;
    for (name, port) in [
        ("subject", Some("8080/tcp")),
        ("loadgen", None),
        ("perturbation-sampler", None),
        ("audit", None),
    ] {
        docker.require_image(name).await;
        let image = docker
            .client()
            .inspect_image(&testkit::docker::image_ref(name))
            .await
            .expect("inspect image");
        let size = image.size.expect("size");
        assert!(size <= 20_000_000, "{name} is {size} bytes");
        let config = image.config.expect("config");
        assert_eq!(config.user.as_deref(), Some("65532:65532"), "{name}");
        assert_eq!(
            config.entrypoint,
            Some(vec![format!("/{name}")]),
            "{name}: exec-form entrypoint, no shell"
        );
        assert_eq!(
            config
                .exposed_ports
                .map(|p| p.into_iter().collect::<Vec<_>>()),
            port.map(|p| vec![p.to_string()]),
            "{name}"
        );
        let labels = config.labels.unwrap_or_default();
        for key in ["source", "revision", "version"] {
            let key = format!("org.opencontainers.image.{key}");
            assert!(
                labels
                    .get(&key)
                    .is_some_and(|v| !v.is_empty() && v != "unknown"),
                "{name}: label {key} missing: {labels:?}"
            );
        }
    }

    let c = start(subject(&[])).await;
    let addr = published(&c, SUBJECT_PORT).await;
    wait_status(addr, "/healthz", 200, Duration::from_secs(10)).await;
    let inspected = docker
        .client()
        .inspect_container(c.id(), None)
        .await
        .expect("inspect container");
    let pid = inspected.state.and_then(|s| s.pid).expect("pid");
    // The container's init process, seen from the host: our binary, PID 1 in its namespace.
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).expect("cmdline");
    assert_eq!(cmdline.split(|b| *b == 0).next(), Some(&b"/subject"[..]));
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let nspid = status
        .lines()
        .find(|l| l.starts_with("NSpid:"))
        .expect("NSpid line");
    assert_eq!(nspid.split_whitespace().last(), Some("1"), "{nspid}");
    let uid = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .expect("Uid line");
    assert!(
        uid.split_whitespace().skip(1).all(|u| u == "65532"),
        "{uid}"
    );
    // Published on 127.0.0.1 only.
    let bindings = inspected
        .host_config
        .and_then(|h| h.port_bindings)
        .unwrap_or_default();
    assert!(
        bindings
            .values()
            .flatten()
            .flatten()
            .all(|b| b.host_ip.as_deref() == Some("127.0.0.1")),
        "{bindings:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampler_and_audit_binaries_run_from_scratch() {
    let Some(docker) = require_docker().await else {
        return;
    };
    for name in ["perturbation-sampler", "audit"] {
        docker.require_image(name).await;
        // A static binary with no loader, no shell and no libraries beside it: --version runs.
        let c = start(testkit::docker::container(name, &[]).with_cmd(["--version"])).await;
        assert_eq!(wait_exit(&c, Duration::from_secs(10)).await, 0, "{name}");
        let out = c.stdout_to_vec().await.expect("docker logs");
        let out = String::from_utf8_lossy(&out);
        assert!(out.contains(name) && out.contains('.'), "{name}: {out}");
    }
}
