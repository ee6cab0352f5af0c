//! The router: every endpoint, the middleware stack, and the workload handlers (`/`, `/status`,
//! `/delay`, `/slow`, `/cpu`, `/alloc`, `/queue`; `/stream` is [`crate::stream`]).
//!
//! Middleware, outermost first: request log (`REQUEST_END`) → identity headers and, while
//! draining, `Connection: close` → JSON `{error}` bodies for every 4xx/5xx → `MAX_CONCURRENCY`
//! semaphore and in-flight count → zombie gate → the routes.

use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::body::Body;
use axum::extract::{RawQuery, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use logline::line::SubjectEvent;
use tokio::time::Instant;

use crate::config::{AppMode, LogRequests};
use crate::http::{error_response, query_param};
use crate::state::AppState;
use crate::{concurrency, dependency, memory, probes, simulate, stream};

/// The whole router for `state`'s mode, middleware included.
pub fn router(state: AppState) -> Router {
    let guarded = Router::new()
        .route("/simulate/zombie", post(simulate::zombie))
        .route("/simulate/deadlock", post(simulate::deadlock))
        .route("/simulate/crash", post(simulate::crash))
        .route("/simulate/reset", post(simulate::reset));
    let guarded = match state.cfg().app_mode {
        AppMode::Dependency => guarded.route(
            "/admin/dependency",
            get(dependency::get_settings).post(dependency::set_settings),
        ),
        AppMode::Main | AppMode::QueueWorker | AppMode::Batch => guarded,
    };
    let guarded = guarded.route_layer(middleware::from_fn_with_state(
        state.clone(),
        simulate::require_token,
    ));

    let mut app = Router::new()
        .route("/", get(root))
        .route("/status", get(status))
        .route("/healthz", get(probes::healthz))
        .route("/startup", get(probes::startup))
        .route("/ready", get(probes::ready))
        .route("/readyz", get(probes::ready))
        .route("/live", get(probes::live))
        .route("/livez", get(probes::livez))
        .route("/delay", get(delay))
        .route("/slow", get(delay))
        .route("/cpu", get(cpu))
        .route("/alloc", get(alloc))
        .route("/queue", get(queue_stats).post(enqueue))
        .route("/queue/take", post(take))
        .route(stream::PATH, get(stream::stream));
    app = match state.cfg().app_mode {
        AppMode::Main | AppMode::QueueWorker | AppMode::Batch => {
            app.route("/dependency/health", get(dependency::dependency_health))
        }
        AppMode::Dependency => app.route("/health", get(dependency::health)),
    };
    app.merge(guarded)
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            simulate::zombie_gate,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            concurrency::limit,
        ))
        .layer(middleware::from_fn(json_errors))
        .layer(middleware::from_fn_with_state(state.clone(), headers))
        .layer(middleware::from_fn_with_state(state.clone(), log_request))
        .with_state(state)
}

async fn not_found(req: Request) -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        &format!("no such endpoint: {} {}", req.method(), req.uri().path()),
    )
}

/// Replaces any non-JSON error body (axum's rejections, 405s) with `{error}`.
async fn json_errors(req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    let status = resp.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return resp;
    }
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let text = axum::body::to_bytes(body, 64 * 1024)
        .await
        .ok()
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| status.canonical_reason().unwrap_or("error").to_owned());
    let mut out = error_response(status, &text);
    for (name, value) in parts.headers.iter() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            out.headers_mut().insert(name.clone(), value.clone());
        }
    }
    out
}

/// Adds `X-Revision`, `X-Replica`, `X-Generation`; while draining, `Connection: close`.
async fn headers(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    for (name, value) in &state.0.id_headers {
        h.insert(*name, value.clone());
    }
    if state.is_draining() {
        h.insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    resp
}

/// Prints `REQUEST_END` as `LOG_REQUESTS` asks (path only: the query is never logged).
async fn log_request(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let mode = state.cfg().log_requests;
    // A stream's line is its body's, printed when the stream ends (`stream`).
    if mode == LogRequests::None || req.uri().path() == stream::PATH {
        return next.run(req).await;
    }
    let start = Instant::now();
    let method = req.method().to_string();
    let path = req.uri().path().to_owned();
    let resp = next.run(req).await;
    let status = resp.status();
    if mode == LogRequests::All || status.as_u16() >= 400 {
        let dur_ms = (start.elapsed().as_secs_f64() * 1e6).round() / 1000.0;
        logline::log::emit(logline::line::SubjectLine {
            method: Some(method),
            path: Some(path),
            status: Some(status.as_u16()),
            dur_ms: Some(dur_ms),
            inflight: Some(state.inflight()),
            ..state.line(SubjectEvent::RequestEnd)
        });
    }
    resp
}

/// `GET /`: the workload. 503 `warming` until startup completes.
async fn root(State(state): State<AppState>) -> Response {
    let id = &state.0.id;
    if !state.is_started() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(serde_json::json!({
                "status_code": 503,
                "status": "warming",
                "app": id.app,
                "revision": id.revision,
                "replica": id.replica,
                "generation": id.generation,
            })),
        )
            .into_response();
    }
    let cfg = state.cfg();
    if let Some(cap) = &state.0.capacity {
        cap.serve().await;
    }
    let k = state.0.served.fetch_add(1, Ordering::Relaxed) + 1;
    if injected_failure(k, cfg.fail_rate) {
        return error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            "injected failure (FAIL_RATE)",
        );
    }
    if cfg.request_delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(cfg.request_delay_ms)).await;
    }
    if cfg.work_ms > 0 {
        burn(Duration::from_millis(cfg.work_ms)).await;
    }
    Json(serde_json::json!({
        "status_code": 200,
        "status": "ok",
        "app": id.app,
        "revision": id.revision,
        "replica": id.replica,
        "generation": id.generation,
        "mode": cfg.app_mode.name(),
        "request_delay_ms": cfg.request_delay_ms,
        "work_ms": cfg.work_ms,
        "capacity_rps": cfg.capacity_rps,
        "ts": logline::Timestamp::now(),
    }))
    .into_response()
}

/// Whether the `k`-th `/` request (from 1) fails under `FAIL_RATE = rate`: when ⌊k·rate⌋ steps
/// up, so failures are spread evenly and any n consecutive requests hold ⌊n·rate⌋ or ⌈n·rate⌉.
fn injected_failure(k: u64, rate: f64) -> bool {
    rate > 0.0 && ((k as f64) * rate).floor() > ((k - 1) as f64 * rate).floor()
}

/// Burns CPU for `d` on the blocking pool (a tight loop, not a sleep).
async fn burn(d: Duration) {
    let _ = tokio::task::spawn_blocking(move || {
        let start = std::time::Instant::now();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        while start.elapsed() < d {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.rotate_left(5) ^ x.wrapping_mul(31));
            }
        }
        x
    })
    .await;
}

/// A `seconds` query parameter `/delay`, `/slow` and `/cpu` refuse; the message of the 400.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum SecondsError {
    #[error("query parameter seconds is required, e.g. ?seconds=5")]
    Missing,
    #[error("seconds must be a number between 0 and {max} (MAX_REQUEST_SECONDS), got {raw:?}")]
    OutOfRange { raw: String, max: f64 },
}

/// Parses `seconds` for `/delay`, `/slow`, `/cpu`: a finite number in `0..=MAX_REQUEST_SECONDS`.
fn seconds(state: &AppState, query: Option<&str>) -> Result<Duration, SecondsError> {
    let max = state.cfg().max_request_seconds;
    let raw = query_param(query, "seconds").ok_or(SecondsError::Missing)?;
    match raw.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=max).contains(&v) => Ok(Duration::from_secs_f64(v)),
        _ => Err(SecondsError::OutOfRange { raw, max }),
    }
}

/// `GET /delay?seconds=N` and `/slow?seconds=N`: sleep N seconds, then answer.
async fn delay(State(state): State<AppState>, RawQuery(q): RawQuery) -> Response {
    let d = match seconds(&state, q.as_deref()) {
        Ok(d) => d,
        Err(e) => return error_response(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    tokio::time::sleep(d).await;
    Json(serde_json::json!({
        "status": "ok",
        "slept_s": d.as_secs_f64(),
        "revision": state.0.id.revision,
        "replica": state.0.id.replica,
    }))
    .into_response()
}

/// `GET /cpu?seconds=N`: burn CPU N seconds, then answer.
async fn cpu(State(state): State<AppState>, RawQuery(q): RawQuery) -> Response {
    let d = match seconds(&state, q.as_deref()) {
        Ok(d) => d,
        Err(e) => return error_response(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    burn(d).await;
    Json(serde_json::json!({
        "status": "ok",
        "burned_s": d.as_secs_f64(),
        "revision": state.0.id.revision,
        "replica": state.0.id.replica,
    }))
    .into_response()
}

/// `GET /alloc?mib=N`: hold N more MiB, resident ([`crate::memory`]), then answer the total.
async fn alloc(State(state): State<AppState>, RawQuery(q): RawQuery) -> Response {
    let max = state.cfg().max_alloc_mib;
    let held = &state.0.memory;
    let n =
        match memory::parse_mib(q.as_deref(), max).and_then(|n| held.reserve(n, max).map(|()| n)) {
            Ok(n) => n,
            Err(e) => return error_response(StatusCode::BAD_REQUEST, &e.to_string()),
        };
    if held.hold(n).await.is_err() {
        return error_response(StatusCode::INTERNAL_SERVER_ERROR, "allocation failed");
    }
    Json(serde_json::json!({
        "status": "ok",
        "allocated_mib": n,
        "held_mib": held.mib(),
        "max_alloc_mib": max,
        "revision": state.0.id.revision,
        "replica": state.0.id.replica,
    }))
    .into_response()
}

/// `GET /queue`: `{length, enqueued, taken}` ([`crate::queue`]).
async fn queue_stats(State(state): State<AppState>) -> Response {
    Json(state.0.queue.stats()).into_response()
}

/// `POST /queue?items=N`: enqueue N items (default 1); the stats after, or 400.
async fn enqueue(State(state): State<AppState>, RawQuery(q): RawQuery) -> Response {
    let items = query_param(q.as_deref(), "items");
    match state.0.queue.enqueue(items.as_deref()) {
        Ok(s) => Json(s).into_response(),
        Err(e) => error_response(StatusCode::BAD_REQUEST, &e.to_string()),
    }
}

/// `POST /queue/take`: the oldest item, once (`{id, length}`), or 204 when the queue is empty.
async fn take(State(state): State<AppState>) -> Response {
    match state.0.queue.take() {
        (Some(id), s) => Json(serde_json::json!({"id": id, "length": s.length})).into_response(),
        (None, _) => StatusCode::NO_CONTENT.into_response(),
    }
}

/// `GET /status`, or `/status?code=N` to answer with status N (200..=599).
async fn status(State(state): State<AppState>, RawQuery(q): RawQuery) -> Response {
    let code = match query_param(q.as_deref(), "code") {
        None => StatusCode::OK,
        Some(v) => match v.trim().parse::<u16>() {
            Ok(n) if (200..=599).contains(&n) => match StatusCode::from_u16(n) {
                Ok(c) => c,
                Err(_) => return error_response(StatusCode::BAD_REQUEST, "invalid status code"),
            },
            _ => {
                return error_response(
                    StatusCode::BAD_REQUEST,
                    &format!("code must be a whole number 200..=599, got {v:?}"),
                );
            }
        },
    };
    let sim = state.simulation();
    let id = &state.0.id;
    let body = serde_json::json!({
        "zombie": sim.zombie,
        "deadlocked": sim.deadlocked,
        // This request excluded.
        "inflight": state.inflight().saturating_sub(1),
        "started": state.is_started(),
        "ready": state.is_started() && !state.is_draining(),
        "draining": state.is_draining(),
        "uptime_s": (state.uptime_s() * 1000.0).round() / 1000.0,
        "app": id.app,
        "revision": id.revision,
        "replica": id.replica,
        "generation": id.generation,
        "status_code": code.as_u16(),
    });
    let mut resp = (code, Json(body)).into_response();
    if [
        StatusCode::NO_CONTENT,
        StatusCode::RESET_CONTENT,
        StatusCode::NOT_MODIFIED,
    ]
    .contains(&code)
    {
        *resp.body_mut() = Body::empty();
        resp.headers_mut().remove(header::CONTENT_TYPE);
    }
    resp
}
