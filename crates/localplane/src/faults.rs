//! Fault injection for ARM clients: `POST /localplane/faults` makes the next N ARM requests
//! (those whose path contains `path`, when given) answer 429 (with `Retry-After`), 500, hang,
//! or `emptyBody` (the operation is done, and answered 200 with no body: the wire contract a
//! real client's parser checks); `DELETE /localplane/faults` clears.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::error::ArmError;

/// How long a hung request is held before it is answered 504 (clients give up earlier).
pub const HANG_LIMIT: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum FaultKind {
    #[serde(rename = "429")]
    TooMany,
    #[serde(rename = "500")]
    Internal,
    #[serde(rename = "hang")]
    Hang,
    #[serde(rename = "emptyBody")]
    EmptyBody,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultRequest {
    pub kind: FaultKind,
    #[serde(default = "one")]
    pub count: u32,
    #[serde(default = "two")]
    pub retry_after_s: u32,
    /// Only requests whose path contains this (case-insensitively) take the fault.
    #[serde(default)]
    pub path: Option<String>,
}

fn one() -> u32 {
    1
}
fn two() -> u32 {
    2
}

#[derive(Clone, Default)]
pub struct Faults {
    inner: Arc<Mutex<Option<FaultRequest>>>,
    pub shutdown: CancellationToken,
}

impl Faults {
    pub fn new(shutdown: CancellationToken) -> Self {
        Faults {
            inner: Arc::default(),
            shutdown,
        }
    }

    pub fn set(&self, f: Option<FaultRequest>) {
        if let Ok(mut g) = self.inner.lock() {
            *g = f.filter(|f| f.count > 0);
        }
    }

    /// Takes one fault off the counter, if any is armed for `path`.
    fn take(&self, path: &str) -> Option<FaultRequest> {
        let mut g = self.inner.lock().ok()?;
        let f = g.as_mut()?;
        if let Some(p) = &f.path
            && !path.to_ascii_lowercase().contains(&p.to_ascii_lowercase())
        {
            return None;
        }
        let out = f.clone();
        f.count -= 1;
        if f.count == 0 {
            *g = None;
        }
        Some(out)
    }

    pub fn remaining(&self) -> u32 {
        self.inner
            .lock()
            .ok()
            .and_then(|g| g.as_ref().map(|f| f.count))
            .unwrap_or(0)
    }
}

pub async fn post_faults(State(f): State<Faults>, body: axum::body::Bytes) -> Response {
    match serde_json::from_slice::<FaultRequest>(&body) {
        Ok(req) => {
            f.set(Some(req.clone()));
            (StatusCode::OK, Json(serde_json::json!({"armed": req.count}))).into_response()
        }
        Err(e) => ArmError::bad_request(
            "InvalidRequestContent",
            format!("expected {{\"kind\":\"429\"|\"500\"|\"hang\"|\"emptyBody\",\"count\":N,\"retry_after_s\":S,\"path\":\"...\"}}: {e}"),
        )
        .into_response(),
    }
}

pub async fn delete_faults(State(f): State<Faults>) -> StatusCode {
    f.set(None);
    StatusCode::NO_CONTENT
}

/// Middleware on the ARM routes.
pub async fn inject(State(f): State<Faults>, req: Request, next: Next) -> Response {
    match f.take(req.uri().path()) {
        None => next.run(req).await,
        Some(fault) => match fault.kind {
            FaultKind::TooMany => {
                let mut r = ArmError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "TooManyRequests",
                    "The request is being throttled (localplane fault injection).",
                )
                .into_response();
                if let Ok(v) = http::HeaderValue::from_str(&fault.retry_after_s.to_string()) {
                    r.headers_mut().insert(http::header::RETRY_AFTER, v);
                }
                r
            }
            FaultKind::Internal => ArmError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalServerError",
                "Encountered an internal server error (localplane fault injection).",
            )
            .into_response(),
            FaultKind::EmptyBody => {
                let _ = next.run(req).await;
                StatusCode::OK.into_response()
            }
            FaultKind::Hang => {
                tokio::select! {
                    _ = tokio::time::sleep(HANG_LIMIT) => {}
                    _ = f.shutdown.cancelled() => {}
                }
                ArmError::new(
                    StatusCode::GATEWAY_TIMEOUT,
                    "GatewayTimeout",
                    "The gateway did not receive a response within the specified time period.",
                )
                .into_response()
            }
        },
    }
}
