//! One HTTP request: send, read the whole body, classify the result.
//!
//! hyper 1 through hyper-util's pooled client: in keep-alive mode idle connections are reused;
//! in close mode the pool keeps nothing and every request carries `Connection: close`. A closed
//! model worker owns a client of its own, so it holds one persistent connection and rebuilds it
//! after an error or a `Connection: close` from the server.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::header::{CONNECTION, HeaderName, HeaderValue, USER_AGENT};
use hyper::{Request, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use crate::config::ConnMode;

/// The result of one request, before attribution to a window.
pub struct Response {
    pub status: Option<u16>,
    /// Error class of a request that got no (complete) response.
    pub err_class: Option<&'static str>,
    pub err_msg: Option<String>,
    pub revision: Option<HeaderValue>,
    pub replica: Option<HeaderValue>,
}

/// An HTTP client for one scenario (or one closed-model worker).
pub struct HttpClient {
    client: Client<HttpConnector, Empty<Bytes>>,
    uri: Uri,
    mode: ConnMode,
    timeout: Duration,
    revision_header: HeaderName,
    replica_header: HeaderName,
}

static UA: HeaderValue =
    HeaderValue::from_static(concat!("probelab-loadgen/", env!("CARGO_PKG_VERSION")));
static CLOSE: HeaderValue = HeaderValue::from_static("close");

impl HttpClient {
    pub fn new(
        uri: Uri,
        mode: ConnMode,
        timeout: Duration,
        max_idle: usize,
        revision_header: HeaderName,
        replica_header: HeaderName,
    ) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(timeout));
        let idle = match mode {
            ConnMode::Close => 0,
            ConnMode::KeepAlive => max_idle,
        };
        let client = Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_max_idle_per_host(idle)
            .pool_idle_timeout(Duration::from_secs(60))
            .build(connector);
        HttpClient {
            client,
            uri,
            mode,
            timeout,
            revision_header,
            replica_header,
        }
    }

    /// Sends one GET and reads the whole body, within the scenario's timeout. Never fails: every
    /// error becomes a classified [`Response`]. `want_msg` asks for the error text (for `req`
    /// lines); without it no string is built.
    pub async fn get(&self, want_msg: bool) -> Response {
        match tokio::time::timeout(self.timeout, self.get_inner()).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => Response {
                status: None,
                err_class: Some(classify(e.as_ref())),
                err_msg: want_msg.then(|| chain(e.as_ref())),
                revision: None,
                replica: None,
            },
            Err(_) => Response {
                status: None,
                err_class: Some("timeout"),
                err_msg: want_msg
                    .then(|| format!("no complete response within {:?}", self.timeout)),
                revision: None,
                replica: None,
            },
        }
    }

    async fn get_inner(&self) -> Result<Response, BoxError> {
        let mut req = Request::new(Empty::<Bytes>::new());
        *req.uri_mut() = self.uri.clone();
        let h = req.headers_mut();
        h.insert(USER_AGENT, UA.clone());
        if self.mode == ConnMode::Close {
            h.insert(CONNECTION, CLOSE.clone());
        }
        let resp = self.client.request(req).await?;
        let status = resp.status().as_u16();
        let revision = resp.headers().get(&self.revision_header).cloned();
        let replica = resp.headers().get(&self.replica_header).cloned();
        // Read the body to the end: the response is only complete (and the connection reusable)
        // then, and a reset mid-body is an error like any other.
        let mut body = resp.into_body();
        while let Some(frame) = body.frame().await {
            frame?;
        }
        Ok(Response {
            status: Some(status),
            err_class: None,
            err_msg: None,
            revision,
            replica,
        })
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The error chain as one line.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        let t = x.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = x.source();
    }
    s
}

/// Classifies a failed request: `connect`, `reset`, `timeout`, `dns`, `protocol` or `other`.
pub fn classify(e: &(dyn std::error::Error + 'static)) -> &'static str {
    let mut connect = false;
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(x) = cur {
        if x.downcast_ref::<hyper_util::client::legacy::Error>()
            .is_some_and(|le| le.is_connect())
        {
            connect = true;
        }
        if let Some(io) = x.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            match io.kind() {
                ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => {
                    return if connect { "connect" } else { "reset" };
                }
                TimedOut => return "timeout",
                ConnectionRefused | AddrNotAvailable | NotConnected | HostUnreachable
                | NetworkUnreachable => return "connect",
                _ => {}
            }
            let msg = io.to_string();
            if msg.contains("failed to lookup") || msg.contains("resolve") {
                return "dns";
            }
        }
        if let Some(he) = x.downcast_ref::<hyper::Error>() {
            if he.is_incomplete_message() || he.is_canceled() || he.is_closed() {
                return "reset";
            }
            if he.is_timeout() {
                return "timeout";
            }
            if he.is_parse() || he.is_parse_status() {
                return "protocol";
            }
        }
        cur = x.source();
    }
    if connect { "connect" } else { "other" }
}

/// The error class of a response whose status is not ok: `http_5xx`, `http_4xx`, ...
pub fn status_class(code: u16) -> &'static str {
    match code / 100 {
        1 => "http_1xx",
        2 => "http_2xx",
        3 => "http_3xx",
        4 => "http_4xx",
        5 => "http_5xx",
        _ => "http_other",
    }
}
