//! Dependencies, both sides: the checks a main-mode subject makes (HTTP `DEPENDENCY_URL`, TCP
//! `DEPENDENCY_HOST`), logged, and `GET /dependency/health`; and the `/health` a dependency-mode
//! subject serves, with its run-time switch `POST /admin/dependency`. The client that makes the
//! checks is [`crate::dependency_client`]; the settings `/health` honours live in
//! [`crate::state`].

use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use logline::line::SubjectEvent;
use serde::Deserialize;

use crate::dependency_client::CheckResult;
use crate::http::{error_response, lock};
use crate::state::AppState;

/// The body of `POST /admin/dependency`: each field optional, unknown fields rejected.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DependencyUpdate {
    pub healthy: Option<bool>,
    pub delay_ms: Option<u64>,
    pub fail_rate: Option<f64>,
}

/// Prints DEPENDENCY_CHECK_OK / DEPENDENCY_CHECK_FAIL for a check made for `probe`.
pub fn log_check(state: &AppState, probe: &str, r: &CheckResult) {
    let event = if r.ok {
        SubjectEvent::DependencyCheckOk
    } else {
        SubjectEvent::DependencyCheckFail
    };
    logline::log::emit(logline::line::SubjectLine {
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
    logline::log::emit(logline::line::SubjectLine {
        simulation: Some("dependency".to_owned()),
        detail: Some(format!(
            "healthy={} delay_ms={} fail_rate={}",
            now.healthy, now.delay_ms, now.fail_rate
        )),
        ..state.line(SubjectEvent::SimulationChanged)
    });
    Json(now).into_response()
}
