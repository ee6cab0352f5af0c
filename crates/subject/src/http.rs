//! The small HTTP helpers every handler module shares: the JSON `{error}` answer, a poison-proof
//! mutex lock and a query-string lookup. A bottom module: it imports nothing of this crate, so
//! the handler modules and the router can all use it without importing one another.

use std::sync::{Mutex, MutexGuard};

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// A 4xx/5xx answer with a JSON `{error}` body.
pub fn error_response(code: StatusCode, msg: &str) -> Response {
    (code, Json(serde_json::json!({ "error": msg }))).into_response()
}

/// Locks a mutex, recovering the data if a holder panicked.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The first value of `key` in a raw query string (percent-decoded).
pub fn query_param(query: Option<&str>, key: &str) -> Option<String> {
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}
