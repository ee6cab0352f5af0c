//! The HTTP side: requests with a bearer token, retries with back-off, pagination and
//! long-running operations.
//!
//! Retries: 408, 429, 5xx (not 501/505), timeouts and transport failures are retried up to
//! [`RetryPolicy::max_attempts`] times. The wait before attempt `n+1` is the server's
//! `Retry-After` (`retry-after-ms`, `x-ms-retry-after-ms` or `Retry-After` in seconds or as an
//! HTTP date) when it sent one, else exponential back-off with full jitter
//! (`random(0..=min(max_delay, base_delay * 2^(n-1)))`). A caller with a deadline
//! ([`ArmClient::with_deadline`]) never waits past it: a retry that could not start in time is
//! not made, and the last error is returned instead, so a sampler tick never overruns because of
//! back-off.

use std::sync::Arc;
use std::time::Duration;

/// The HTTP method type [`ArmClient::send`] takes (reqwest's).
pub use reqwest::Method;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::time::Instant;
use url::Url;

use crate::ArmError;
use crate::models::{ErrorResponse, OperationStatus, Page};
use crate::token::TokenSource;

/// The default ARM endpoint (`ARM_ENDPOINT`).
pub const DEFAULT_ENDPOINT: &str = "https://management.azure.com";
/// The default Microsoft.App `api-version` (`ARM_API_VERSION`).
pub const DEFAULT_API_VERSION: &str = "2024-03-01";
/// Pages followed at most by one list call.
pub const MAX_PAGES: usize = 100;

/// How failed calls are retried.
#[derive(Clone, Debug)]
pub struct RetryPolicy {
    /// Attempts in total, the first included (1 = no retry).
    pub max_attempts: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// A `Retry-After` longer than this is clamped to it.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1`, given the failed attempt's `Retry-After`.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(ra) = retry_after {
            return ra.min(self.max_retry_after);
        }
        let exp = self
            .base_delay
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(20))
            .min(self.max_delay);
        // Full jitter: spreads the retries of many clients hit by the same throttle.
        exp.mul_f64(rand::random::<f64>())
    }
}

/// Everything the client needs besides the token source.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// `ARM_ENDPOINT`, e.g. `https://management.azure.com` or localplane's base URL.
    pub endpoint: Url,
    pub api_version: String,
    /// The longest one HTTP exchange (request and whole answer) may take.
    pub call_timeout: Duration,
    pub retry: RetryPolicy,
    /// How long to wait for a long-running operation in total.
    pub lro_timeout: Duration,
    /// Poll interval when the operation sends no `Retry-After`.
    pub lro_poll: Duration,
}

impl ClientConfig {
    /// Defaults around `endpoint`.
    pub fn new(endpoint: Url) -> Self {
        ClientConfig {
            endpoint,
            api_version: DEFAULT_API_VERSION.to_owned(),
            call_timeout: Duration::from_secs(30),
            retry: RetryPolicy::default(),
            lro_timeout: Duration::from_secs(600),
            lro_poll: Duration::from_secs(2),
        }
    }
}

/// A subscription and resource group: where the apps and jobs live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scope {
    pub subscription_id: String,
    pub resource_group: String,
}

impl Scope {
    pub fn new(subscription_id: impl Into<String>, resource_group: impl Into<String>) -> Self {
        Scope {
            subscription_id: subscription_id.into(),
            resource_group: resource_group.into(),
        }
    }
}

/// An answer that is not an error.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

struct Inner {
    http: reqwest::Client,
    cfg: ClientConfig,
    token: TokenSource,
}

/// The Microsoft.App ARM client. Cheap to clone; clones share the connection pool and token
/// cache.
#[derive(Clone)]
pub struct ArmClient {
    inner: Arc<Inner>,
    deadline: Option<Instant>,
}

impl std::fmt::Debug for ArmClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArmClient")
            .field("endpoint", &self.inner.cfg.endpoint.as_str())
            .field("token", &self.inner.token)
            .finish_non_exhaustive()
    }
}

pub(crate) fn segment(kind: &str, value: &str) -> Result<String, ArmError> {
    let ok = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '(' | ')'));
    if ok {
        Ok(value.to_owned())
    } else {
        Err(ArmError::Invalid(format!(
            "{kind} {value:?} is not a valid resource name segment"
        )))
    }
}

impl ArmClient {
    /// A client for `cfg.endpoint` authenticating with `token`.
    pub fn new(cfg: ClientConfig, token: TokenSource) -> Result<Self, ArmError> {
        if !matches!(cfg.endpoint.scheme(), "http" | "https") {
            return Err(ArmError::Invalid(format!(
                "ARM endpoint {} is not an http(s) URL",
                cfg.endpoint
            )));
        }
        let http = crate::tls::client_builder()
            .user_agent(concat!("probelab-arm/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(cfg.call_timeout.min(Duration::from_secs(10)))
            .pool_idle_timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| ArmError::Invalid(format!("cannot build the HTTP client: {e}")))?;
        Ok(ArmClient {
            inner: Arc::new(Inner { http, cfg, token }),
            deadline: None,
        })
    }

    /// A clone whose calls (retries and waits included) give up at `deadline`.
    pub fn with_deadline(&self, deadline: Instant) -> Self {
        ArmClient {
            inner: self.inner.clone(),
            deadline: Some(deadline),
        }
    }

    /// The token source (for its kind and fetch count).
    pub fn token_source(&self) -> &TokenSource {
        &self.inner.token
    }

    /// The configuration.
    pub fn config(&self) -> &ClientConfig {
        &self.inner.cfg
    }

    // ---- URLs --------------------------------------------------------------------------------

    /// `endpoint + path` with this client's `api-version`, for calls this client has no method
    /// for (pass it to [`ArmClient::send`] or [`ArmClient::send_and_wait`]).
    pub fn resource_url(&self, path: &str) -> Result<Url, ArmError> {
        self.url(path)
    }

    pub(crate) fn url(&self, path: &str) -> Result<Url, ArmError> {
        let mut url = self
            .inner
            .cfg
            .endpoint
            .join(path)
            .map_err(|e| ArmError::Invalid(format!("bad ARM path {path}: {e}")))?;
        url.query_pairs_mut()
            .append_pair("api-version", &self.inner.cfg.api_version);
        Ok(url)
    }

    pub(crate) fn app_path(scope: &Scope, app: &str) -> Result<String, ArmError> {
        Ok(format!(
            "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.App/containerApps/{}",
            segment("subscription", &scope.subscription_id)?,
            segment("resource group", &scope.resource_group)?,
            segment("app", app)?
        ))
    }

    pub(crate) fn job_path(scope: &Scope, job: &str) -> Result<String, ArmError> {
        Ok(format!(
            "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.App/jobs/{}",
            segment("subscription", &scope.subscription_id)?,
            segment("resource group", &scope.resource_group)?,
            segment("job", job)?
        ))
    }

    fn same_origin(&self, url: &Url) -> bool {
        let base = &self.inner.cfg.endpoint;
        url.scheme() == base.scheme()
            && url.host_str() == base.host_str()
            && url.port_or_known_default() == base.port_or_known_default()
    }

    // ---- the core exchange -------------------------------------------------------------------

    fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// One request with retries. Error statuses become [`ArmError::Api`].
    pub async fn send(
        &self,
        operation: &str,
        method: Method,
        url: Url,
        body: Option<&serde_json::Value>,
    ) -> Result<RawResponse, ArmError> {
        let policy = &self.inner.cfg.retry;
        let mut attempt: u32 = 0;
        let mut reauthenticated = false;
        loop {
            attempt += 1;
            let mut timeout = self.inner.cfg.call_timeout;
            if let Some(left) = self.remaining() {
                if left.is_zero() {
                    return Err(ArmError::Timeout {
                        operation: operation.to_owned(),
                        after: Duration::ZERO,
                    });
                }
                timeout = timeout.min(left);
            }
            let result = self
                .attempt(operation, method.clone(), url.clone(), body, timeout)
                .await;
            let err = match result {
                Ok(resp) => return Ok(resp),
                Err(e) => e,
            };
            if err.status() == Some(401)
                && !reauthenticated
                && self.inner.token.kind() != crate::TokenSourceKind::None
            {
                // An expired or revoked token: fetch a new one once, right away.
                reauthenticated = true;
                self.inner.token.invalidate().await;
                attempt -= 1;
                continue;
            }
            if !err.is_retryable() || attempt >= policy.max_attempts {
                return Err(err);
            }
            let retry_after = match &err {
                ArmError::Api { retry_after, .. } => *retry_after,
                _ => None,
            };
            let wait = policy.delay(attempt, retry_after);
            if self.remaining().is_some_and(|left| wait >= left) {
                tracing::debug!(
                    operation,
                    attempt,
                    wait_ms = wait.as_millis() as u64,
                    "not retrying: the wait would pass the caller's deadline"
                );
                return Err(err);
            }
            tracing::debug!(
                operation,
                attempt,
                status = err.status().unwrap_or(0),
                wait_ms = wait.as_millis() as u64,
                "retrying ARM call"
            );
            tokio::time::sleep(wait).await;
        }
    }

    async fn attempt(
        &self,
        operation: &str,
        method: Method,
        url: Url,
        body: Option<&serde_json::Value>,
        timeout: Duration,
    ) -> Result<RawResponse, ArmError> {
        let mut req = self
            .inner
            .http
            .request(method, url.clone())
            .timeout(timeout);
        if self.same_origin(&url) {
            // The token fetch counts against the same timeout: a hanging identity endpoint
            // must not hold a call past its deadline either.
            let token = tokio::time::timeout(timeout, self.inner.token.token())
                .await
                .map_err(|_| ArmError::Token(format!("no token within {timeout:?}")))??;
            if let Some(token) = token {
                req = req.bearer_auth(token.secret());
            }
        }
        req = match body {
            Some(b) => req.json(b),
            None => req.header(reqwest::header::CONTENT_LENGTH, "0"),
        };
        let exchange = async {
            let resp = req.send().await?;
            let status = resp.status();
            let headers = resp.headers().clone();
            let body = resp.bytes().await?;
            Ok::<_, reqwest::Error>((status, headers, body))
        };
        let timed_out = || ArmError::Timeout {
            operation: operation.to_owned(),
            after: timeout,
        };
        let (status, headers, body) = match tokio::time::timeout(timeout, exchange).await {
            Err(_) => return Err(timed_out()),
            Ok(Err(e)) if e.is_timeout() => return Err(timed_out()),
            Ok(Err(e)) => {
                return Err(ArmError::Transport {
                    operation: operation.to_owned(),
                    error: e.without_url(),
                });
            }
            Ok(Ok(x)) => x,
        };
        if status.is_success() {
            return Ok(RawResponse {
                status: status.as_u16(),
                headers,
                body: body.to_vec(),
            });
        }
        Err(api_error(operation, status, &headers, &body))
    }

    pub(crate) async fn get_json<T: DeserializeOwned>(
        &self,
        operation: &str,
        url: Url,
    ) -> Result<T, ArmError> {
        let resp = self.send(operation, Method::GET, url, None).await?;
        decode(operation, &resp.body)
    }

    pub(crate) async fn list_all<T: DeserializeOwned>(
        &self,
        operation: &str,
        first: Url,
    ) -> Result<Vec<T>, ArmError> {
        let mut out = Vec::new();
        let mut next = Some(first);
        let mut pages = 0;
        while let Some(url) = next.take() {
            pages += 1;
            if pages > MAX_PAGES {
                return Err(ArmError::Invalid(format!(
                    "{operation}: more than {MAX_PAGES} pages; giving up"
                )));
            }
            let page: Page<T> = self.get_json(operation, url).await?;
            out.extend(page.value);
            if let Some(link) = page.next_link.filter(|l| !l.is_empty()) {
                let url = Url::parse(&link)
                    .or_else(|_| self.inner.cfg.endpoint.join(&link))
                    .map_err(|e| ArmError::Invalid(format!("{operation}: bad nextLink: {e}")))?;
                next = Some(url);
            }
        }
        Ok(out)
    }

    /// Sends a mutating request and waits for its long-running operation, if it started one.
    /// Returns the final answer (for `Location` polling) or the first one.
    pub async fn send_and_wait(
        &self,
        operation: &str,
        method: Method,
        url: Url,
        body: Option<&serde_json::Value>,
    ) -> Result<RawResponse, ArmError> {
        let first = self.send(operation, method, url, body).await?;
        self.wait_lro(operation, first).await
    }

    /// Waits for the operation an answer started: polls `Azure-AsyncOperation` when present
    /// (until `Succeeded`/`Failed`/`Canceled`), else `Location` (until it stops answering 202),
    /// honouring `Retry-After` between polls. Answers that started nothing come back as they are.
    pub async fn wait_lro(
        &self,
        operation: &str,
        first: RawResponse,
    ) -> Result<RawResponse, ArmError> {
        if first.status != 201 && first.status != 202 {
            return Ok(first);
        }
        let async_op = header_url(&first.headers, "azure-asyncoperation");
        let location = header_url(&first.headers, "location");
        if async_op.is_none() && location.is_none() {
            return Ok(first);
        }
        let mut deadline = Instant::now() + self.inner.cfg.lro_timeout;
        if let Some(d) = self.deadline {
            deadline = deadline.min(d);
        }
        let poller = self.with_deadline(deadline);
        let mut wait = retry_after(&first.headers).unwrap_or(self.inner.cfg.lro_poll);
        let poll_op = format!("{operation} (poll)");
        for _ in 0..10_000 {
            if Instant::now() + wait > deadline {
                break;
            }
            tokio::time::sleep(wait).await;
            if let Some(url) = &async_op {
                let resp = poller
                    .send(&poll_op, Method::GET, url.clone(), None)
                    .await?;
                let st: OperationStatus = decode(&poll_op, &resp.body)?;
                if st.is_terminal() {
                    if st.succeeded() {
                        return Ok(first);
                    }
                    let err = st.error.unwrap_or_default();
                    return Err(ArmError::Operation {
                        operation: operation.to_owned(),
                        status: st.status,
                        code: err.code,
                        message: err.message,
                    });
                }
                wait = retry_after(&resp.headers).unwrap_or(self.inner.cfg.lro_poll);
            } else if let Some(url) = &location {
                let resp = poller
                    .send(&poll_op, Method::GET, url.clone(), None)
                    .await?;
                if resp.status != 202 {
                    return Ok(resp);
                }
                wait = retry_after(&resp.headers).unwrap_or(self.inner.cfg.lro_poll);
            }
        }
        Err(ArmError::Operation {
            operation: operation.to_owned(),
            status: "TimedOut".into(),
            code: "Timeout".into(),
            message: format!("did not finish within {:?}", self.inner.cfg.lro_timeout),
        })
    }
}

pub(crate) fn to_value<T: Serialize>(v: &T) -> Result<serde_json::Value, ArmError> {
    serde_json::to_value(v).map_err(|source| ArmError::Decode {
        operation: "encode".into(),
        error: source,
    })
}

pub(crate) fn decode<T: DeserializeOwned>(operation: &str, body: &[u8]) -> Result<T, ArmError> {
    serde_json::from_slice(body).map_err(|source| ArmError::Decode {
        operation: operation.to_owned(),
        error: source,
    })
}

fn header_url(headers: &HeaderMap, name: &str) -> Option<Url> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| Url::parse(s).ok())
}

/// The wait a `Retry-After`-style header asks for: `retry-after-ms`, `x-ms-retry-after-ms`,
/// then `Retry-After` as seconds or as an HTTP date.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    for name in ["retry-after-ms", "x-ms-retry-after-ms"] {
        if let Some(ms) = text(name).and_then(|s| s.parse::<u64>().ok()) {
            return Some(Duration::from_millis(ms));
        }
    }
    let ra = text("retry-after")?;
    if let Ok(secs) = ra.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::from_secs_f64(secs.min(86_400.0)));
    }
    let when = chrono::DateTime::parse_from_rfc2822(ra).ok()?;
    let ms = when.timestamp_millis() - chrono::Utc::now().timestamp_millis();
    Some(Duration::from_millis(u64::try_from(ms).unwrap_or(0)))
}

fn api_error(operation: &str, status: StatusCode, headers: &HeaderMap, body: &[u8]) -> ArmError {
    let parsed: Option<ErrorResponse> = serde_json::from_slice(body).ok();
    let (code, message) = match parsed {
        Some(e) if !e.error.code.is_empty() || !e.error.message.is_empty() => {
            (e.error.code, e.error.message)
        }
        _ => {
            let text = String::from_utf8_lossy(body);
            let text: String = text.chars().take(500).collect();
            let code = status
                .canonical_reason()
                .unwrap_or("HttpError")
                .replace(' ', "");
            (code, text.trim().to_owned())
        }
    };
    ArmError::Api {
        operation: operation.to_owned(),
        status: status.as_u16(),
        code,
        message,
        retry_after: retry_after(headers),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_forms() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("x-ms-retry-after-ms", "1500".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(1500)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(
            retry_after(&h),
            Some(Duration::ZERO),
            "a past date means now"
        );
        let mut h = HeaderMap::new();
        h.insert("retry-after", "soon".parse().unwrap());
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn backoff_grows_is_jittered_and_capped_and_retry_after_wins() {
        let p = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
            max_retry_after: Duration::from_secs(5),
        };
        for attempt in 1..10 {
            let cap = Duration::from_millis((100u64 << (attempt - 1)).min(1000));
            for _ in 0..50 {
                assert!(p.delay(attempt, None) <= cap);
            }
        }
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(60))),
            Duration::from_secs(5)
        );
    }

    #[test]
    fn api_errors_carry_the_arm_code_and_message() {
        let body = br#"{"error":{"code":"TooManyRequests","message":"slow down"}}"#;
        let mut h = HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap());
        let e = api_error("list_revisions", StatusCode::TOO_MANY_REQUESTS, &h, body);
        assert_eq!(e.status(), Some(429));
        assert_eq!(e.code(), "TooManyRequests");
        assert_eq!(e.message(), "slow down");
        assert!(e.is_retryable());
        assert!(e.to_string().contains("TooManyRequests"), "{e}");
        let e = api_error(
            "get_app",
            StatusCode::BAD_GATEWAY,
            &HeaderMap::new(),
            b"<html>",
        );
        assert_eq!(e.code(), "BadGateway");
        assert!(e.is_retryable());
        let e = api_error("get_app", StatusCode::NOT_FOUND, &HeaderMap::new(), b"");
        assert!(e.is_not_found() && !e.is_retryable());
    }

    #[test]
    fn names_with_slashes_or_queries_are_refused() {
        assert!(segment("app", "subject").is_ok());
        assert!(segment("app", "a/b").is_err());
        assert!(segment("app", "a?x=1").is_err());
        assert!(segment("app", "").is_err());
    }
}
