//! One HTTP request: send, read the whole body, classify the result.
//!
//! HTTP/1.1 over a pool of our own, so the number of connections is bounded by construction: a
//! request takes an idle connection when there is one and opens a new one only when there is
//! none, and it gives the connection back (keep-alive mode, response complete and reusable)
//! before it counts as finished. Every live connection is therefore either idle or held by a
//! request in flight, and a scenario never holds more connections than its `--max-in-flight` (a
//! closed-model worker's client: one). In close mode every request opens its own connection
//! (and TLS handshake) and sends `Connection: close`; once the response is complete the server,
//! which must then close (RFC 9112 §9.6), is given [`SERVER_CLOSE_WAIT`] to close first, so
//! that the TCP `TIME_WAIT` state stays on the server's side. A client that closes first keeps
//! each of its ports in `TIME_WAIT` for a minute: against one address (no `tcp_tw_reuse` off
//! loopback) its ~28,000 ephemeral ports run out at a few hundred new connections a second,
//! and connects then fail with "cannot assign requested address". The exchange itself is
//! [`crate::h1`]: the request task writes and reads, no connection task.
//!
//! Stages are classified where they fail: resolving (`dns`), TCP connect (`connect`), TLS
//! handshake (`tls`), then the exchange itself (`reset`, `timeout`, `protocol`, ...).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use http::Uri;
use http::header::{HeaderName, HeaderValue};
use rustls_pki_types::ServerName;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_util::either::Either;

use crate::config::ConnMode;
use crate::h1::{self, ExchangeError, Wanted};

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
    host: String,
    port: u16,
    /// The address when the host is an IP literal (no lookup per connection).
    literal: Option<SocketAddr>,
    tls: Option<(TlsConnector, ServerName<'static>)>,
    /// The whole request of each mode, written as it is on every exchange.
    keep_alive_request: Box<[u8]>,
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
        // The request line and Host header must be valid header text: checked here once.
        HeaderValue::from_str(host_part)
            .map_err(|e| ClientError::Invalid(uri.clone(), e.to_string()))?;
        let path = match uri.query() {
            Some(q) => format!("{}?{q}", uri.path()),
            None => uri.path().to_owned(),
        };
        if path
            .bytes()
            .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
        {
            return Err(ClientError::Invalid(
                uri.clone(),
                "the path holds whitespace or a control character".into(),
            ));
        }
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
        let request = |connection: &str| {
            format!(
                "GET {path} HTTP/1.1\r\nhost: {host_part}\r\nuser-agent: {UA}\r\n{connection}\r\n"
            )
            .into_bytes()
            .into_boxed_slice()
        };
        Ok(Target {
            uri: uri.clone(),
            host,
            port,
            literal,
            keep_alive_request: request(""),
            close_request: request("connection: close\r\n"),
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
    Exchange(ExchangeError),
}

impl Fail {
    fn class(&self) -> &'static str {
        match self {
            Fail::Dns(_) => "dns",
            Fail::Connect(e) if e.kind() == std::io::ErrorKind::TimedOut => "timeout",
            Fail::Connect(_) => "connect",
            Fail::Tls(_) => "tls",
            Fail::Exchange(e) => e.class(),
        }
    }

    fn message(&self) -> String {
        match self {
            Fail::Dns(e) => format!("resolving the host: {}", chain(e)),
            Fail::Connect(e) => format!("connecting: {}", chain(e)),
            Fail::Tls(e) => format!("TLS handshake: {}", chain(e)),
            Fail::Exchange(e) => chain(e),
        }
    }
}

/// How long a close-mode request waits, after its complete response, for the server to close
/// the connection before closing it itself (see the module docs). A server that honours
/// `Connection: close` sends its FIN with or right after the response: the wait is then one
/// `read` that returns end of stream.
pub const SERVER_CLOSE_WAIT: Duration = Duration::from_millis(250);

/// A close-mode connection whose response is complete, waiting for the server to close it;
/// nothing for a keep-alive request or a failed one (dropped at once).
#[must_use = "dropping it closes the connection from the client's side"]
pub struct Closing(Option<Conn>);

impl Closing {
    /// Waits up to [`SERVER_CLOSE_WAIT`] for the server's end of stream (whatever else it
    /// sends is discarded), then closes the connection.
    pub async fn finish(self) {
        let Some(mut conn) = self.0 else { return };
        let mut sink = [0u8; 512];
        let _ = tokio::time::timeout(SERVER_CLOSE_WAIT, async {
            // Ends at end of stream (0) or on an error (the server reset it: closed too).
            while let Ok(1..) = conn.read(&mut sink).await {}
        })
        .await;
    }
}

/// A connection: plain TCP or TLS over it (boxed: a TLS stream is kilobytes, and every
/// request's future, moved into its task when spawned, would otherwise be as large).
type Conn = Either<TcpStream, Box<TlsStream<TcpStream>>>;

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

const UA: &str = concat!("probelab-loadgen/", env!("CARGO_PKG_VERSION"));

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
    /// lines); without it no string is built. The request is complete when this returns; the
    /// caller then lets the [`Closing`] finish (after recording the response, so that waiting
    /// for the server to close is not counted as latency).
    pub async fn get(&self, want_msg: bool) -> (Response, Closing) {
        match tokio::time::timeout(self.timeout, self.get_inner()).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => (
                Response {
                    status: None,
                    err_class: Some(e.class()),
                    err_msg: want_msg.then(|| e.message()),
                    revision: None,
                    replica: None,
                },
                Closing(None),
            ),
            Err(_) => (
                Response {
                    status: None,
                    err_class: Some("timeout"),
                    err_msg: want_msg
                        .then(|| format!("no complete response within {:?}", self.timeout)),
                    revision: None,
                    replica: None,
                },
                Closing(None),
            ),
        }
    }

    /// An idle connection the server has not closed, if any.
    fn take_idle(&self) -> Option<Conn> {
        loop {
            let c = self.idle.lock().ok()?.pop()?;
            let tcp = match &c {
                Either::Left(t) => t,
                Either::Right(t) => t.get_ref().0,
            };
            if !closed_while_idle(tcp) {
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

    /// A new connection, with its TLS handshake for `https://`.
    async fn connect(&self) -> Result<Conn, Fail> {
        let tcp = self.tcp().await?;
        match &self.target.tls {
            None => Ok(Either::Left(tcp)),
            Some((connector, name)) => Box::pin(connector.connect(name.clone(), tcp))
                .await
                .map(|t| Either::Right(Box::new(t)))
                .map_err(Fail::Tls),
        }
    }

    async fn get_inner(&self) -> Result<(Response, Closing), Fail> {
        let wanted = Wanted {
            revision: self.revision_header.as_str(),
            replica: self.replica_header.as_str(),
        };
        let (head, closing) = match self.mode {
            ConnMode::Close => {
                let mut conn = self.connect().await?;
                let head = h1::exchange(&mut conn, &self.target.close_request, &wanted)
                    .await
                    .map_err(Fail::Exchange)?;
                (head, Closing(Some(conn)))
            }
            ConnMode::KeepAlive => {
                let request = &self.target.keep_alive_request;
                let (mut conn, reused) = match self.take_idle() {
                    Some(c) => (c, true),
                    None => (self.connect().await?, false),
                };
                let head = match h1::exchange(&mut conn, request, &wanted).await {
                    // The server closed the idle connection as the request went out: it was
                    // not delivered, so it is sent once more on a fresh connection.
                    Err(ExchangeError::NotSent(_)) if reused => {
                        conn = self.connect().await?;
                        h1::exchange(&mut conn, request, &wanted).await
                    }
                    r => r,
                }
                .map_err(Fail::Exchange)?;
                if head.reusable {
                    self.put_idle(conn);
                }
                (head, Closing(None))
            }
        };
        let response = Response {
            status: Some(head.status),
            err_class: None,
            err_msg: None,
            revision: head.revision,
            replica: head.replica,
        };
        Ok((response, closing))
    }
}

/// Whether the server closed (or wrote to) an idle connection: no system call unless the
/// runtime saw the socket become readable since its last read, and then one `recv` that
/// reads nothing from a healthy connection. Bytes from the server while no request was
/// outstanding make the connection unusable as well.
fn closed_while_idle(tcp: &TcpStream) -> bool {
    let mut cx = Context::from_waker(Waker::noop());
    match tcp.poll_read_ready(&mut cx) {
        Poll::Pending => false,
        Poll::Ready(Err(_)) => true,
        Poll::Ready(Ok(())) => {
            let mut probe = [0u8; 1];
            !matches!(tcp.try_read(&mut probe), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
        }
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

/// Classifies an I/O error of an exchange on an established connection by the first
/// `std::io::Error` in its chain: `reset`, `timeout`, `connect` or `other`.
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
