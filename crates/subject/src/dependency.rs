//! Dependencies, both sides: the checks a main-mode subject makes (HTTP `DEPENDENCY_URL`, TCP
//! `DEPENDENCY_HOST`) and the `/health` a dependency-mode subject serves, with its run-time
//! switch `POST /admin/dependency`.

use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use labkit::event::SubjectEvent;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::routes::{error_response, lock};
use crate::state::AppState;

/// What a dependency-mode `/health` does; changed at run time by `POST /admin/dependency`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct DependencySettings {
    pub healthy: bool,
    pub delay_ms: u64,
    pub fail_rate: f64,
}

/// The body of `POST /admin/dependency`: each field optional, unknown fields rejected.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DependencyUpdate {
    pub healthy: Option<bool>,
    pub delay_ms: Option<u64>,
    pub fail_rate: Option<f64>,
}

/// Parses a plain `http://host[:port]/path` URL.
pub fn parse_http_url(s: &str) -> Option<Uri> {
    let u = url::Url::parse(s).ok()?;
    if u.scheme() != "http" || u.host_str().is_none_or(str::is_empty) {
        return None;
    }
    s.parse::<Uri>().ok()
}

/// Parses `host:port` (`[::1]:80` for IPv6).
pub fn parse_host_port(s: &str) -> Option<(String, u16)> {
    let (host, port) = s.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port: u16 = port.parse().ok()?;
    (!host.is_empty() && port != 0).then(|| (host.to_owned(), port))
}

/// The outcome of one dependency check.
#[derive(Clone, Debug, Serialize)]
pub struct CheckResult {
    pub ok: bool,
    pub target: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    pub dur_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A plain-HTTP client with a per-check timeout.
#[derive(Clone)]
pub struct DependencyClient {
    client: Client<HttpConnector, Empty<Bytes>>,
    timeout: Duration,
}

impl DependencyClient {
    pub fn new(timeout: Duration) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(timeout));
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        DependencyClient { client, timeout }
    }

    /// GET `url`; success is a 2xx or 3xx answer within the timeout.
    pub async fn check_http(&self, url: &str) -> CheckResult {
        let start = Instant::now();
        let result = match parse_http_url(url) {
            None => Err("not a plain http:// URL".to_owned()),
            Some(uri) => {
                let fut = async {
                    let resp = self.client.get(uri).await.map_err(|e| error_chain(&e))?;
                    let status = resp.status();
                    // Read the body so the connection returns to the pool.
                    let _ = resp.into_body().collect().await;
                    Ok::<_, String>(status)
                };
                match tokio::time::timeout(self.timeout, fut).await {
                    Ok(r) => r,
                    Err(_) => Err(format!("timeout after {} ms", self.timeout.as_millis())),
                }
            }
        };
        let dur_ms = ms(start);
        match result {
            Ok(status) => {
                let ok = status.is_success() || status.is_redirection();
                CheckResult {
                    ok,
                    target: url.to_owned(),
                    status: Some(status.as_u16()),
                    dur_ms,
                    error: (!ok).then(|| format!("status {}", status.as_u16())),
                }
            }
            Err(e) => CheckResult {
                ok: false,
                target: url.to_owned(),
                status: None,
                dur_ms,
                error: Some(e),
            },
        }
    }

    /// TCP connect to `host:port` within the timeout.
    pub async fn check_tcp(&self, target: &str) -> CheckResult {
        let start = Instant::now();
        let result = match parse_host_port(target) {
            None => Err("not host:port".to_owned()),
            Some((host, port)) => {
                match tokio::time::timeout(
                    self.timeout,
                    tokio::net::TcpStream::connect((host.as_str(), port)),
                )
                .await
                {
                    Ok(Ok(_stream)) => Ok(()),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err(format!("timeout after {} ms", self.timeout.as_millis())),
                }
            }
        };
        CheckResult {
            ok: result.is_ok(),
            target: target.to_owned(),
            status: None,
            dur_ms: ms(start),
            error: result.err(),
        }
    }
}

fn ms(start: Instant) -> f64 {
    (start.elapsed().as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Prints DEPENDENCY_CHECK_OK / DEPENDENCY_CHECK_FAIL for a check made for `probe`.
pub fn log_check(state: &AppState, probe: &str, r: &CheckResult) {
    let event = if r.ok {
        SubjectEvent::DependencyCheckOk
    } else {
        SubjectEvent::DependencyCheckFail
    };
    labkit::log::emit(labkit::event::SubjectLine {
        probe: Some(probe.to_owned()),
        target: Some(r.target.clone()),
        status: r.status,
        dur_ms: Some(r.dur_ms),
        detail: r.error.clone(),
        ..state.line(event)
    });
}

/// Checks `DEPENDENCY_URL` for `probe` and logs the result; `None` when no URL is set.
pub async fn check_url(state: &AppState, probe: &str) -> Option<CheckResult> {
    let url = state.cfg().dependency_url()?;
    let r = state.0.client.check_http(&url).await;
    log_check(state, probe, &r);
    Some(r)
}

/// `GET /dependency/health` (main mode): calls the dependency and reports the result.
pub async fn dependency_health(State(state): State<AppState>) -> Response {
    match check_url(&state, "dependency").await {
        None => error_response(
            StatusCode::CONFLICT,
            "DEPENDENCY_URL is not set: there is no dependency to check",
        ),
        Some(r) => {
            let code = if r.ok {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            (code, Json(r)).into_response()
        }
    }
}

/// `GET /health` (dependency mode): honours healthy, delay and fail rate.
pub async fn health(State(state): State<AppState>) -> Response {
    let s = *lock(&state.0.dependency);
    if s.delay_ms > 0 {
        let cap = state.cfg().max_request_seconds;
        let secs = (s.delay_ms as f64 / 1000.0).min(cap);
        tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    }
    let (code, status) = if !s.healthy {
        (StatusCode::SERVICE_UNAVAILABLE, "unhealthy")
    } else if s.fail_rate > 0.0 && rand::random::<f64>() < s.fail_rate {
        (StatusCode::SERVICE_UNAVAILABLE, "failed")
    } else {
        (StatusCode::OK, "healthy")
    };
    let body = serde_json::json!({
        "status": status,
        "app": state.0.id.app,
        "revision": state.0.id.revision,
        "replica": state.0.id.replica,
        "dependency": s,
    });
    (code, Json(body)).into_response()
}

/// `GET /admin/dependency`: the current settings.
pub async fn get_settings(State(state): State<AppState>) -> Response {
    let s = *lock(&state.0.dependency);
    Json(s).into_response()
}

/// `POST /admin/dependency` with JSON `{healthy, delay_ms, fail_rate}` (each optional).
pub async fn set_settings(State(state): State<AppState>, body: Bytes) -> Response {
    let update: DependencyUpdate = match serde_json::from_slice(&body) {
        Ok(u) => u,
        Err(e) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                &format!("body must be JSON {{healthy, delay_ms, fail_rate}}: {e}"),
            );
        }
    };
    if let Some(r) = update.fail_rate
        && !(0.0..=1.0).contains(&r)
    {
        return error_response(StatusCode::BAD_REQUEST, "fail_rate must be between 0 and 1");
    }
    let max_ms = state.cfg().max_request_seconds * 1000.0;
    if let Some(d) = update.delay_ms
        && d as f64 > max_ms
    {
        return error_response(
            StatusCode::BAD_REQUEST,
            &format!("delay_ms must be at most MAX_REQUEST_SECONDS * 1000 = {max_ms}"),
        );
    }
    let now = {
        let mut s = lock(&state.0.dependency);
        if let Some(h) = update.healthy {
            s.healthy = h;
        }
        if let Some(d) = update.delay_ms {
            s.delay_ms = d;
        }
        if let Some(r) = update.fail_rate {
            s.fail_rate = r;
        }
        *s
    };
    labkit::log::emit(labkit::event::SubjectLine {
        simulation: Some("dependency".to_owned()),
        detail: Some(format!(
            "healthy={} delay_ms={} fail_rate={}",
            now.healthy, now.delay_ms, now.fail_rate
        )),
        ..state.line(SubjectEvent::SimulationChanged)
    });
    Json(now).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_host_ports() {
        assert!(parse_http_url("http://127.0.0.1:8080/health").is_some());
        assert!(parse_http_url("http://dep/health").is_some());
        assert!(parse_http_url("https://dep/health").is_none());
        assert!(parse_http_url("dep/health").is_none());
        assert_eq!(parse_host_port("db:5432"), Some(("db".to_owned(), 5432)));
        assert_eq!(parse_host_port("[::1]:80"), Some(("::1".to_owned(), 80)));
        assert_eq!(parse_host_port("db"), None);
        assert_eq!(parse_host_port(":80"), None);
        assert_eq!(parse_host_port("db:0"), None);
        assert_eq!(parse_host_port("db:x"), None);
    }
}
