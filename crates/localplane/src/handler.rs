//! What every ARM handler shares (`api`'s environments and apps, `jobs`' jobs and executions):
//! the api-version localplane reports, the handlers' state, request body parsing, the resource
//! name rule, and the URLs and headers of a long-running operation. It sits above `plane` (whose
//! state it carries) and below both handler modules, so neither imports the other.

use std::sync::Arc;

use axum::response::Response;
use bytes::Bytes;
use http::HeaderValue;
use serde_json::Value;

use crate::error::ArmError;
use crate::faults::Faults;
use crate::plane::{Op, Plane};

/// The api-version localplane reports in the URLs it hands out.
pub const API_VERSION: &str = "2025-07-01";

/// The state every ARM handler gets: the plane and the fault injector.
#[derive(Clone)]
pub struct ApiState {
    pub plane: Arc<Plane>,
    pub faults: Faults,
}

/// A request body as ARM reads it: JSON, and an object (anything else is a 400
/// `InvalidRequestContent`).
pub fn parse_body(body: &Bytes) -> Result<Value, ArmError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        ArmError::bad_request(
            "InvalidRequestContent",
            format!("The request content was invalid and could not be deserialized: {e}"),
        )
    })?;
    if !v.is_object() {
        return Err(ArmError::bad_request(
            "InvalidRequestContent",
            "The request content must be a JSON object.",
        ));
    }
    Ok(v)
}

/// Container app names: 2-32 lowercase letters, digits and '-', starting with a letter, ending
/// with a letter or digit, no '--'.
pub fn valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    (2..=32).contains(&b.len())
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b.last().is_some_and(|c| c.is_ascii_alphanumeric())
        && !name.contains("--")
}

/// The operation status and operation result URLs of `op` (`Azure-AsyncOperation` and
/// `Location`), on `plane`'s ARM endpoint.
pub fn op_urls(plane: &Plane, op: &Op) -> (String, String) {
    let base = format!(
        "{}/subscriptions/{}/providers/Microsoft.App/locations/{}",
        plane.ctx.base_url, op.sub, op.location
    );
    (
        format!(
            "{base}/containerappOperationStatuses/{}?api-version={API_VERSION}",
            op.id
        ),
        format!(
            "{base}/containerappOperationResults/{}?api-version={API_VERSION}",
            op.id
        ),
    )
}

/// Adds the long-running-operation headers of operation `op_id` to `resp`:
/// `Azure-AsyncOperation`, `Location` when `location` is set, and `Retry-After: 1`.
pub fn with_lro(mut resp: Response, plane: &Plane, op_id: &str, location: bool) -> Response {
    let st = plane.lock();
    if let Some(op) = st.ops.get(op_id) {
        let (status_url, result_url) = op_urls(plane, op);
        let h = resp.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&status_url) {
            h.insert("azure-asyncoperation", v);
        }
        if location && let Ok(v) = HeaderValue::from_str(&result_url) {
            h.insert(http::header::LOCATION, v);
        }
        h.insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::valid_name;

    #[test]
    fn app_names() {
        assert!(valid_name("subject"));
        assert!(valid_name("a1-b2"));
        assert!(!valid_name("Subject"));
        assert!(!valid_name("a--b"));
        assert!(!valid_name("1abc"));
        assert!(!valid_name("a"));
        assert!(!valid_name("abc-"));
    }
}
