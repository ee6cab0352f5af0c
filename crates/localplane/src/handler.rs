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
use crate::serve::Scheme;

/// The api-version localplane reports in the URLs it hands out.
pub const API_VERSION: &str = "2025-07-01";

/// The api-versions the provider lists (`GET .../providers/Microsoft.App`): those of the
/// clients localplane is tested with (our `arm` crate, the az CLI, azure-mgmt-appcontainers)
/// and the spec's stable versions between them. localplane answers any api-version alike.
pub const API_VERSIONS: &[&str] = &[
    "2025-07-01",
    "2025-01-01",
    "2024-03-01",
    "2023-05-01",
    "2022-10-01",
];

/// The state every ARM handler gets: the plane, the fault injector, and the listener's
/// bearer token if it has one (the identity endpoint hands out tokens built from it).
#[derive(Clone)]
pub struct ApiState {
    pub plane: Arc<Plane>,
    pub faults: Faults,
    pub token: Option<Arc<str>>,
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

/// The scheme and host a request came in on (`https://127.0.0.1:8790`): the origin of every
/// URL localplane hands back, as ARM's are on the `management.azure.com` the client called (a
/// client sends its token to that origin only). `None` for a request without a `Host`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin(pub Option<String>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Origin {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut http::request::Parts,
        _: &S,
    ) -> Result<Self, Self::Rejection> {
        let scheme = parts
            .extensions
            .get::<Scheme>()
            .copied()
            .unwrap_or(Scheme::Http);
        let host = parts
            .headers
            .get(http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_owned)
            .or_else(|| parts.uri.authority().map(|a| a.to_string()))
            .filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_graphic()));
        Ok(Origin(host.map(|h| format!("{}://{h}", scheme.as_str()))))
    }
}

impl Origin {
    /// The origin, or `plane`'s own ARM endpoint for a request that named none.
    pub fn base<'a>(&'a self, plane: &'a Plane) -> &'a str {
        self.0.as_deref().unwrap_or(&plane.ctx.base_url)
    }
}

/// The operation status and operation result URLs of `op` (`Azure-AsyncOperation` and
/// `Location`), on the origin the client called.
pub fn op_urls(plane: &Plane, origin: &Origin, op: &Op) -> (String, String) {
    let base = format!(
        "{}/subscriptions/{}/providers/Microsoft.App/locations/{}",
        origin.base(plane),
        op.sub,
        op.location
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
pub fn with_lro(
    mut resp: Response,
    plane: &Plane,
    origin: &Origin,
    op_id: &str,
    location: bool,
) -> Response {
    let st = plane.lock();
    if let Some(op) = st.ops.get(op_id) {
        let (status_url, result_url) = op_urls(plane, origin, op);
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
