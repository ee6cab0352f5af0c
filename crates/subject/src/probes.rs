//! Probe endpoints: `/startup`, `/healthz`, `/ready` + `/readyz`, `/live` + `/livez`.
//!
//! | endpoint | warm-up (bind-early) | draining | dependency | simulations |
//! |---|---|---|---|---|
//! | `/startup` | 503 `starting` | 200 | none | zombie hangs |
//! | `/healthz` | 503 `starting` (200 with `WARM_READY_LIES`) | 503 `draining` | none | zombie hangs |
//! | `/ready(z)` | 503 `starting` (200 with `WARM_READY_LIES`) | 503 `draining` | `READINESS_CHECK_DEPENDENCY`: 503 `dependency-unready` | zombie hangs |
//! | `/live(z)` | 503 `starting` | 200 | `LIVENESS_CHECK_DEPENDENCY`: 503 `dependency-failed`; `/livez` + `DEPENDENCY_HOST`: TCP check | zombie and deadlock hang; `LIVENESS_IO_DELAY` sleeps first |

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::dependency::{check_url, log_check};
use crate::simulate::hang_while;
use crate::state::AppState;

fn answer(state: &AppState, code: StatusCode, status: &str, detail: Option<String>) -> Response {
    let mut body = serde_json::json!({
        "status": status,
        "revision": state.0.id.revision,
        "replica": state.0.id.replica,
    });
    if let Some(d) = detail {
        body["detail"] = d.into();
    }
    (code, Json(body)).into_response()
}

fn ok(state: &AppState) -> Response {
    answer(state, StatusCode::OK, "ok", None)
}

fn unavailable(state: &AppState, status: &str, detail: Option<String>) -> Response {
    answer(state, StatusCode::SERVICE_UNAVAILABLE, status, detail)
}

/// `GET /startup`.
pub async fn startup(State(state): State<AppState>) -> Response {
    if !state.is_started() {
        return unavailable(&state, "starting", None);
    }
    ok(&state)
}

/// `GET /healthz`.
pub async fn healthz(State(state): State<AppState>) -> Response {
    if !state.is_started() && !state.cfg().warm_ready_lies {
        return unavailable(&state, "starting", None);
    }
    if state.is_draining() {
        return unavailable(&state, "draining", None);
    }
    ok(&state)
}

/// `GET /ready` and `GET /readyz`.
pub async fn ready(State(state): State<AppState>) -> Response {
    if !state.is_started() && !state.cfg().warm_ready_lies {
        return unavailable(&state, "starting", None);
    }
    if state.is_draining() {
        return unavailable(&state, "draining", None);
    }
    if state.cfg().readiness_check_dependency
        && let Some(r) = check_url(&state, "readiness").await
        && !r.ok
    {
        return unavailable(&state, "dependency-unready", r.error);
    }
    ok(&state)
}

async fn live_common(state: &AppState, tcp: bool) -> Response {
    hang_while(state, |s| s.deadlocked).await;
    if !state.is_started() {
        return unavailable(state, "starting", None);
    }
    let io = state.cfg().liveness_io_delay;
    if !io.is_zero() {
        tokio::time::sleep(io).await;
    }
    if state.cfg().liveness_check_dependency
        && let Some(r) = check_url(state, "liveness").await
        && !r.ok
    {
        return unavailable(state, "dependency-failed", r.error);
    }
    if tcp && let Some(target) = state.cfg().dependency_host() {
        let r = state.0.client.check_tcp(&target).await;
        log_check(state, "liveness", &r);
        if !r.ok {
            return unavailable(state, "dependency-failed", r.error);
        }
    }
    ok(state)
}

/// `GET /live`.
pub async fn live(State(state): State<AppState>) -> Response {
    live_common(&state, false).await
}

/// `GET /livez`: as `/live`, plus the `DEPENDENCY_HOST` TCP check.
pub async fn livez(State(state): State<AppState>) -> Response {
    live_common(&state, true).await
}
