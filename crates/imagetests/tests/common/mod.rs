//! Helpers shared by the image tests.
#![allow(dead_code)]

pub mod plane;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::Value;
use testkit::http;
use testkit::testcontainers::runners::AsyncRunner;
use testkit::testcontainers::{ContainerAsync, ContainerRequest, GenericImage, ImageExt};

pub const SUBJECT_PORT: u16 = 8080;
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// A subject container request: port 8080 published on 127.0.0.1, `env` set.
pub fn subject(env: &[(&str, &str)]) -> ContainerRequest<GenericImage> {
    env.iter().fold(
        testkit::docker::container("subject", &[SUBJECT_PORT]),
        |req, (k, v)| req.with_env_var(*k, *v),
    )
}

/// Starts the container (the image must exist; nothing is pulled).
pub async fn start(req: ContainerRequest<GenericImage>) -> ContainerAsync<GenericImage> {
    req.start()
        .await
        .unwrap_or_else(|e| panic!("container did not start: {e}"))
}

/// Polls `GET path` every 50 ms until it answers `status`; returns how long that took.
pub async fn wait_status(addr: SocketAddr, path: &str, status: u16, limit: Duration) -> Duration {
    let start = Instant::now();
    loop {
        let outcome = http::get(addr, path, PROBE_TIMEOUT).await;
        if outcome.status() == Some(status) {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < limit,
            "GET {path} did not answer {status} within {limit:?}; last: {outcome:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The container's stdout as JSON objects; panics on any torn or non-JSON line.
pub async fn stdout_json(c: &ContainerAsync<GenericImage>) -> Vec<Value> {
    let out = c
        .stdout_to_vec()
        .await
        .unwrap_or_else(|e| panic!("docker logs {}: {e}", c.id()));
    testkit::docker::json_lines(&out).unwrap_or_else(|e| panic!("stdout of {}: {e}", c.id()))
}

/// The container's stdout as JSON values once `done` holds of them, polling `docker logs`: a line
/// is written after its response went out, so a test that just got its answers waits for the
/// lines instead of reading a log that may still be catching up. Panics naming `what` when
/// `done` is still false after `limit`, with the last count of lines.
pub async fn stdout_json_until(
    c: &ContainerAsync<GenericImage>,
    what: &str,
    limit: Duration,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let lines = stdout_json(c).await;
        if done(&lines) {
            return lines;
        }
        assert!(
            start.elapsed() < limit,
            "{what}: not in the {} stdout lines of {} after {limit:?}",
            lines.len(),
            c.id()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The subject lines with this `event`.
pub fn events<'a>(lines: &'a [Value], event: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["kind"] == "subject" && l["event"] == event)
        .collect()
}

/// Position of the first subject line with this `event`.
pub fn position(lines: &[Value], event: &str) -> Option<usize> {
    lines
        .iter()
        .position(|l| l["kind"] == "subject" && l["event"] == event)
}

/// A line's `ts` as milliseconds since the epoch (RFC 3339 UTC with milliseconds).
pub fn ts_ms(line: &Value) -> i64 {
    let ts = line["ts"]
        .as_str()
        .unwrap_or_else(|| panic!("no ts: {line}"));
    chrono::DateTime::parse_from_rfc3339(ts)
        .unwrap_or_else(|e| panic!("ts {ts}: {e}"))
        .timestamp_millis()
}
