//! One HTTP request: send, read the whole body, classify the result.
//!
//! hyper 1's HTTP/1.1 connection API with a pool of our own, so the number of connections is
//! bounded by construction: a request takes an idle connection when there is one and opens a new
//! one only when there is none, and it gives the connection back (keep-alive mode, server did
//! not ask to close) before it counts as finished. Every live connection is therefore either
//! idle or held by a request in flight, and a scenario never holds more connections than its
//! `--max-in-flight` (a closed-model worker's client: one). In close mode every request opens
//! its own connection (and TLS handshake), sends `Connection: close` and reads the response
//! itself ([`crate::oneshot`], no hyper connection), closing the connection as soon as the
//! response is complete.
//!
//! Stages are classified where they fail: resolving (`dns`), TCP connect (`connect`), TLS
//! handshake (`tls`), then the exchange itself (`reset`, `timeout`, `protocol`, ...).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{CONNECTION, HOST, HeaderName, HeaderValue, USER_AGENT};
use hyper::{Request, Uri};
use hyper_util::rt::TokioIo;
use rustls_pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::config::ConnMode;
use crate::oneshot::{self, ExchangeError, Wanted};

/// The result of one request, before attribution to a window.
pub struct Response {
    pub status: Option<u16>,
    /// Error class of a request that got no (complete) response.
    pub err_class: Option<&'static str>,
    pub err_msg: Option<String>,
    pub revision: Option<HeaderValue>,
    pub replica: Option<HeaderValue>,
}

/// Where requests go, computed once from the URL when the configuration is validated.
pub struct Target {
    uri: Uri,
    /// Origin-form request target (`/path?query`).
    path: Uri,
    /// `Host` header (the URL's authority without userinfo).
    host_header: HeaderValue,
    host: String,
    port: u16,
    /// The address when the host is an IP literal (no lookup per connection).
    literal: Option<SocketAddr>,
    tls: Option<(TlsConnector, ServerName<'static>)>,
    /// Close mode's whole request, written as it is on every connection.
    close_request: Box<[u8]>,
}

/// Why a client could not be built from a URL.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{0}: no host")]
    NoHost(Uri),
    #[error("{0}: https needs a TLS configuration")]
    NoTls(Uri),
    #[error("{0}: {1}")]
    Invalid(Uri, String),
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("uri", &self.uri)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl Target {
    /// Checks the URL (an `https://` one needs `tls`) and precomputes what every request needs.
    pub fn new(uri: &Uri, tls: Option<&Arc<rustls::ClientConfig>>) -> Result<Target, ClientError> {
        let authority = uri
            .authority()
            .ok_or_else(|| ClientError::NoHost(uri.clone()))?;
        let https = uri.scheme_str() == Some("https");
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        let host_part = authority.as_str().rsplit('@').next().unwrap_or_default();
        let host_header = HeaderValue::from_str(host_part)
            .map_err(|e| ClientError::Invalid(uri.clone(), e.to_string()))?;
        let path: Uri = uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .parse()
            .map_err(|e: hyper::http::uri::InvalidUri| {
                ClientError::Invalid(uri.clone(), e.to_string())
            })?;
        let literal = host
            .parse::<std::net::IpAddr>()
            .ok()
            .map(|ip| SocketAddr::new(ip, port));
        let tls = if https {
            let cfg = tls.ok_or_else(|| ClientError::NoTls(uri.clone()))?;
            let name = ServerName::try_from(host.clone())
                .map_err(|e| ClientError::Invalid(uri.clone(), e.to_string()))?;
            Some((TlsConnector::from(cfg.clone()), name))
        } else {
            None
        };
        let close_request = format!(
            "GET {path} HTTP/1.1\r\nhost: {host_part}\r\nuser-agent: {UA_TEXT}\r\nconnection: close\r\n\r\n"
        )
        .into_bytes()
        .into_boxed_slice();
        Ok(Target {
            uri: uri.clone(),
            close_request,
            path,
            host_header,
            host,
            port,
            literal,
            tls,
        })
    }
}

/// A failed request, by the stage that failed.
#[derive(Debug)]
enum Fail {
    Dns(std::io::Error),
    Connect(std::io::Error),
    Tls(std::io::Error),
    Http(hyper::Error),
    Exchange(ExchangeError),
}

impl Fail {
    fn class(&self) -> &'static str {
        match self {
            Fail::Dns(_) => "dns",
            Fail::Connect(e) if e.kind() == std::io::ErrorKind::TimedOut => "timeout",
            Fail::Connect(_) => "connect",
            Fail::Tls(_) => "tls",
            Fail::Http(e) => classify(e),
            Fail::Exchange(e) => e.class(),
        }
    }

    fn message(&self) -> String {
        match self {
            Fail::Dns(e) => format!("resolving the host: {}", chain(e)),
            Fail::Connect(e) => format!("connecting: {}", chain(e)),
            Fail::Tls(e) => format!("TLS handshake: {}", chain(e)),
            Fail::Http(e) => chain(e),
            Fail::Exchange(e) => chain(e),
        }
    }
}

type Conn = SendRequest<Empty<Bytes>>;

/// An HTTP client for one scenario (or one closed-model worker).
pub struct HttpClient {
    target: Arc<Target>,
    mode: ConnMode,
    timeout: Duration,
    /// Idle keep-alive connections. The lock is held for a push or a pop, never across an await.
    idle: Mutex<Vec<Conn>>,
    revision_header: HeaderName,
    replica_header: HeaderName,
}

const UA_TEXT: &str = concat!("probelab-loadgen/", env!("CARGO_PKG_VERSION"));
static UA: HeaderValue = HeaderValue::from_static(UA_TEXT);

impl HttpClient {
    /// A client for `target`. `max_conns` only sizes the idle list: the connection bound comes
    /// from the callers' in-flight cap (see the module docs).
    pub fn new(
        target: Arc<Target>,
        mode: ConnMode,
        timeout: Duration,
        max_conns: usize,
        revision_header: HeaderName,
        replica_header: HeaderName,
    ) -> Self {
        let cap = match mode {
            ConnMode::Close => 0,
            ConnMode::KeepAlive => max_conns.min(1024),
        };
        HttpClient {
            target,
            mode,
            timeout,
            idle: Mutex::new(Vec::with_capacity(cap)),
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
                err_class: Some(e.class()),
                err_msg: want_msg.then(|| e.message()),
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

    fn request(&self) -> Request<Empty<Bytes>> {
        let mut req = Request::new(Empty::<Bytes>::new());
        *req.uri_mut() = self.target.path.clone();
        let h = req.headers_mut();
        h.insert(HOST, self.target.host_header.clone());
        h.insert(USER_AGENT, UA.clone());
        req
    }

    /// An idle connection that is still usable, if any.
    async fn take_idle(&self) -> Option<Conn> {
        loop {
            let mut c = self.idle.lock().ok()?.pop()?;
            if c.is_closed() {
                continue;
            }
            if c.ready().await.is_ok() {
                return Some(c);
            }
        }
    }

    fn put_idle(&self, c: Conn) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.push(c);
        }
    }

    async fn tcp(&self) -> Result<TcpStream, Fail> {
        let t = &self.target;
        let stream = if let Some(addr) = t.literal {
            TcpStream::connect(addr).await.map_err(Fail::Connect)?
        } else {
            let addrs = tokio::net::lookup_host((t.host.as_str(), t.port))
                .await
                .map_err(Fail::Dns)?;
            let mut last = None;
            let mut found = None;
            for a in addrs {
                match TcpStream::connect(a).await {
                    Ok(s) => {
                        found = Some(s);
                        break;
                    }
                    Err(e) => last = Some(e),
                }
            }
            match (found, last) {
                (Some(s), _) => s,
                (None, Some(e)) => return Err(Fail::Connect(e)),
                (None, None) => {
                    return Err(Fail::Dns(std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        format!("{} has no address", t.host),
                    )));
                }
            }
        };
        // Small requests: do not let Nagle hold them back. A plain-HTTP request on its own
        // connection is that connection's only write, which Nagle never delays: skipping the
        // option there saves a system call per request (TLS writes its handshake first).
        if self.mode == ConnMode::KeepAlive || t.tls.is_some() {
            let _ = stream.set_nodelay(true);
        }
        Ok(stream)
    }

    /// A new pooled connection: its hyper connection task runs on its own, as the connection
    /// outlives the request.
    async fn connect(&self) -> Result<Conn, Fail> {
        let tcp = self.tcp().await?;
        let builder = http1::Builder::new();
        match &self.target.tls {
            None => {
                let (sr, conn) = builder
                    .handshake(TokioIo::new(tcp))
                    .await
                    .map_err(Fail::Http)?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                Ok(sr)
            }
            // Boxed like close mode's TLS exchange (see `get_inner`).
            Some((connector, name)) => {
                Box::pin(async move {
                    let tls = connector
                        .connect(name.clone(), tcp)
                        .await
                        .map_err(Fail::Tls)?;
                    let (sr, conn) = builder
                        .handshake(TokioIo::new(tls))
                        .await
                        .map_err(Fail::Http)?;
                    tokio::spawn(async move {
                        let _ = conn.await;
                    });
                    Ok(sr)
                })
                .await
            }
        }
    }

    async fn get_inner(&self) -> Result<Response, Fail> {
        match self.mode {
            ConnMode::KeepAlive => self.get_pooled().await,
            ConnMode::Close => {
                let tcp = self.tcp().await?;
                match &self.target.tls {
                    None => self.get_once(tcp).await,
                    // Boxed: a TLS stream is kilobytes, and every plain-HTTP request's future
                    // (moved into its task when spawned) would otherwise be as large.
                    Some((connector, name)) => {
                        Box::pin(async move {
                            let tls = connector
                                .connect(name.clone(), tcp)
                                .await
                                .map_err(Fail::Tls)?;
                            self.get_once(tls).await
                        })
                        .await
                    }
                }
            }
        }
    }

    /// Keep-alive mode: an idle connection or a new one, given back unless the server closes it.
    async fn get_pooled(&self) -> Result<Response, Fail> {
        let (mut conn, was_reused) = match self.take_idle().await {
            Some(c) => (c, true),
            None => (self.connect().await?, false),
        };
        let resp = match conn.send_request(self.request()).await {
            Ok(r) => r,
            // The server closed an idle connection before the request went out: the request
            // was not sent, so it is retried once on a fresh connection.
            Err(e) if was_reused && e.is_canceled() => {
                conn = self.connect().await?;
                conn.send_request(self.request())
                    .await
                    .map_err(Fail::Http)?
            }
            Err(e) => return Err(Fail::Http(e)),
        };
        let (response, server_closes) = self.read_response(resp).await?;
        if !server_closes {
            self.put_idle(conn);
        }
        Ok(response)
    }

    /// Close mode: the one request of a connection ([`oneshot`]); dropping `io` closes it.
    async fn get_once<S>(&self, mut io: S) -> Result<Response, Fail>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
        let wanted = Wanted {
            revision: self.revision_header.as_str(),
            replica: self.replica_header.as_str(),
        };
        let head = oneshot::exchange(&mut io, &self.target.close_request, &wanted)
            .await
            .map_err(Fail::Exchange)?;
        Ok(Response {
            status: Some(head.status),
            err_class: None,
            err_msg: None,
            revision: head.revision,
            replica: head.replica,
        })
    }

    /// Reads the whole body and the attribution headers; also says whether the server asked
    /// to close the connection.
    async fn read_response(
        &self,
        resp: hyper::Response<hyper::body::Incoming>,
    ) -> Result<(Response, bool), Fail> {
        let status = resp.status().as_u16();
        let headers = resp.headers();
        let revision = headers.get(&self.revision_header).cloned();
        let replica = headers.get(&self.replica_header).cloned();
        let server_closes = headers
            .get(CONNECTION)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
        // Read the body to the end: the response is only complete (and the connection reusable)
        // then, and a reset mid-body is an error like any other.
        let mut body = resp.into_body();
        while let Some(frame) = body.frame().await {
            frame.map_err(Fail::Http)?;
        }
        let response = Response {
            status: Some(status),
            err_class: None,
            err_msg: None,
            revision,
            replica,
        };
        Ok((response, server_closes))
    }
}

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

/// Classifies a failed exchange on an established connection: `reset`, `timeout`, `protocol`
/// or `other`.
pub fn classify(e: &(dyn std::error::Error + 'static)) -> &'static str {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(x) = cur {
        if let Some(io) = x.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            match io.kind() {
                ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => return "reset",
                TimedOut => return "timeout",
                ConnectionRefused | AddrNotAvailable | NotConnected | HostUnreachable
                | NetworkUnreachable => return "connect",
                _ => {}
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
    "other"
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
