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

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use http::header::{HeaderName, HeaderValue};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_util::either::Either;

use crate::config::ConnMode;
use crate::h1::{self, ExchangeError, Wanted};
use crate::target::{self, Target};

/// The result of one request, before attribution to a window.
pub struct Response {
    pub status: Option<u16>,
    /// Error class of a request that got no (complete) response.
    pub err_class: Option<&'static str>,
    pub err_msg: Option<String>,
    pub revision: Option<HeaderValue>,
    pub replica: Option<HeaderValue>,
    /// The `Set-Cookie` headers, kept for a scenario of virtual clients only.
    pub set_cookies: Vec<HeaderValue>,
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
    /// Keep `Set-Cookie` headers (a scenario of virtual clients).
    set_cookie: bool,
}

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
            set_cookie: false,
        }
    }

    /// The client of a scenario of virtual clients: it keeps the `Set-Cookie` headers.
    pub fn keeping_cookies(mut self) -> Self {
        self.set_cookie = true;
        self
    }

    /// Sends one GET and reads the whole body, within the scenario's timeout. Never fails: every
    /// error becomes a classified [`Response`]. `want_msg` asks for the error text (for `req`
    /// lines); without it no string is built. The request is complete when this returns; the
    /// caller then lets the [`Closing`] finish (after recording the response, so that waiting
    /// for the server to close is not counted as latency). `cookie` is sent as the `Cookie`
    /// header (a virtual client's jar).
    pub async fn get(&self, want_msg: bool, cookie: Option<&str>) -> (Response, Closing) {
        match tokio::time::timeout(self.timeout, self.get_inner(cookie)).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => (
                Response {
                    status: None,
                    err_class: Some(e.class()),
                    err_msg: want_msg.then(|| e.message()),
                    revision: None,
                    replica: None,
                    set_cookies: Vec::new(),
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
                    set_cookies: Vec::new(),
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

    async fn get_inner(&self, cookie: Option<&str>) -> Result<(Response, Closing), Fail> {
        let wanted = Wanted {
            revision: self.revision_header.as_str(),
            replica: self.replica_header.as_str(),
            set_cookie: self.set_cookie,
        };
        let with_cookie;
        let base: &[u8] = match self.mode {
            ConnMode::Close => &self.target.close_request,
            ConnMode::KeepAlive => &self.target.keep_alive_request,
        };
        let request = match cookie {
            None => base,
            Some(c) => {
                with_cookie = target::with_cookie(base, c);
                &with_cookie
            }
        };
        let (head, closing) = match self.mode {
            ConnMode::Close => {
                let mut conn = self.connect().await?;
                let head = h1::exchange(&mut conn, request, &wanted)
                    .await
                    .map_err(Fail::Exchange)?;
                (head, Closing(Some(conn)))
            }
            ConnMode::KeepAlive => {
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
            set_cookies: head.set_cookies,
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
