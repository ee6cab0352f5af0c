//! The client a main-mode subject checks its dependencies with (HTTP `DEPENDENCY_URL`, TCP
//! `DEPENDENCY_HOST`), and the parsing of those two settings. A bottom module: it imports nothing
//! of this crate, so the configuration can validate with it and the state can hold it.

use std::time::Duration;

use axum::body::Bytes;
use axum::http::Uri;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Serialize;
use tokio::time::Instant;

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

/// An error and its causes, `: `-separated (also the queue worker's).
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
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
