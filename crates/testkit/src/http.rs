//! A raw HTTP/1.1 client for black-box checks, a free-port helper, and (in [`conn`]) a
//! connection a test holds.
//!
//! Tests of container behaviour need to tell *how* a request failed: connection refused, the
//! connection closed or reset before a status line, or no answer within the timeout. A pooled
//! client hides that, so this one opens one TCP connection per request, sends
//! `Connection: close`, and reports an [`Outcome`]. Both clients answer with a [`Response`].

pub mod conn;

pub use conn::{Conn, FetchError, fetch};

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What became of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A complete response.
    Response(Response),
    /// The TCP connect was refused.
    Refused,
    /// The connection closed or was reset before a complete response arrived (also what
    /// Docker's userland proxy does when nothing listens in the container yet).
    Closed(String),
    /// No complete response within the timeout.
    Timeout,
}

impl Outcome {
    /// The status code, when a response came back.
    pub fn status(&self) -> Option<u16> {
        match self {
            Outcome::Response(r) => Some(r.status),
            _ => None,
        }
    }

    /// The response, or a panic that names what happened instead.
    #[track_caller]
    pub fn response(self) -> Response {
        match self {
            Outcome::Response(r) => r,
            other => panic!("expected an HTTP response, got {other:?}"),
        }
    }
}

/// A parsed HTTP/1.1 response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// Header names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    /// The first header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON.
    pub fn json(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::from_str(&self.body)
    }

    /// The body parsed as JSON, or a panic that shows the body.
    #[track_caller]
    pub fn expect_json(&self) -> serde_json::Value {
        self.json()
            .unwrap_or_else(|e| panic!("not JSON: {:?}: {e}", self.body))
    }
}

/// `GET path` on `addr`.
pub async fn get(addr: SocketAddr, path: &str, timeout: Duration) -> Outcome {
    request(addr, "GET", path, timeout).await
}

/// `POST path` (empty body) on `addr`.
pub async fn post(addr: SocketAddr, path: &str, timeout: Duration) -> Outcome {
    request(addr, "POST", path, timeout).await
}

/// One request with an empty body on a fresh connection, bounded by `timeout` as a whole.
pub async fn request(addr: SocketAddr, method: &str, path: &str, timeout: Duration) -> Outcome {
    request_with_body(addr, method, path, "", timeout).await
}

/// [`request`] with a JSON `body`.
pub async fn request_with_body(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &str,
    timeout: Duration,
) -> Outcome {
    match tokio::time::timeout(timeout, exchange(addr, method, path, body)).await {
        Ok(outcome) => outcome,
        Err(_) => Outcome::Timeout,
    }
}

async fn exchange(addr: SocketAddr, method: &str, path: &str, body: &str) -> Outcome {
    let mut stream = match TcpStream::connect(addr).await {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Outcome::Refused,
        Err(e) => return Outcome::Closed(format!("connect: {e}")),
    };
    let content_type = if body.is_empty() {
        ""
    } else {
        "Content-Type: application/json\r\n"
    };
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{content_type}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    if let Err(e) = stream.write_all(head.as_bytes()).await {
        return Outcome::Closed(format!("write: {e}"));
    }
    let mut buf = Vec::new();
    if let Err(e) = stream.read_to_end(&mut buf).await {
        // A reset after a complete response still counts as the response.
        return match parse(&buf) {
            Some(r) => Outcome::Response(r),
            None => Outcome::Closed(format!("read: {e}")),
        };
    }
    match parse(&buf) {
        Some(r) => Outcome::Response(r),
        None if buf.is_empty() => Outcome::Closed("closed before any byte".into()),
        None => Outcome::Closed(format!(
            "incomplete response: {}",
            String::from_utf8_lossy(&buf)
        )),
    }
}

/// Parses a complete response (content-length, chunked, or read-to-close body).
fn parse(buf: &[u8]) -> Option<Response> {
    let split = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&buf[..split]).ok()?;
    let raw_body = &buf[split + 4..];
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let mut parts = status_line.splitn(3, ' ');
    if !parts.next()?.starts_with("HTTP/1.") {
        return None;
    }
    let status: u16 = parts.next()?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let find = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let body = if find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        dechunk(raw_body)?
    } else if let Some(len) = find("content-length") {
        let len: usize = len.parse().ok()?;
        raw_body.get(..len)?.to_vec()
    } else {
        raw_body.to_vec()
    };
    Some(Response {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn dechunk(mut raw: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = raw.windows(2).position(|w| w == b"\r\n")?;
        let size_field = std::str::from_utf8(&raw[..line_end]).ok()?;
        let size_hex = size_field.split(';').next()?.trim();
        let size = usize::from_str_radix(size_hex, 16).ok()?;
        raw = &raw[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(raw.get(..size)?);
        raw = raw.get(size + 2..)?;
    }
}

/// `127.0.0.1:port`.
pub fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

/// A TCP port on 127.0.0.1 that was free a moment ago (bind port 0, read it, close). Another
/// process may take it before you bind it; use it where the port must be chosen up front.
pub fn free_port() -> std::io::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_content_length_and_chunked_bodies() {
        let r = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Revision: a\r\n\r\nok")
            .expect("response");
        assert_eq!(r.status, 200);
        assert_eq!(r.body, "ok");
        assert_eq!(r.header("x-revision"), Some("a"));
        let r = parse(
            b"HTTP/1.1 503 X\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n1\r\nc\r\n0\r\n\r\n",
        )
        .expect("response");
        assert_eq!((r.status, r.body.as_str()), (503, "abc"));
    }

    #[test]
    fn incomplete_responses_do_not_parse() {
        assert!(parse(b"").is_none());
        assert!(parse(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nok").is_none());
        assert!(
            parse(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n").is_none()
        );
    }

    #[tokio::test]
    async fn refused_and_timeout_are_told_apart() {
        let port = free_port().expect("free port");
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        assert_eq!(
            get(addr, "/", Duration::from_secs(2)).await,
            Outcome::Refused
        );

        let (addr, hold) = silent_server().await;
        assert_eq!(
            get(addr, "/", Duration::from_millis(300)).await,
            Outcome::Timeout
        );
        hold.abort();
    }

    /// A listener on 127.0.0.1 that accepts one connection and never answers (for 5 s); abort
    /// the task when done.
    pub(in crate::http) async fn silent_server() -> (SocketAddr, tokio::task::JoinHandle<()>) {
        let silent = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .expect("bind");
        let addr = silent.local_addr().expect("addr");
        let hold = tokio::spawn(async move {
            let conn = silent.accept().await;
            tokio::time::sleep(Duration::from_secs(5)).await;
            drop(conn);
        });
        (addr, hold)
    }

    #[tokio::test]
    async fn a_complete_response_is_read() {
        let server = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .expect("bind");
        let addr = server.local_addr().expect("addr");
        tokio::spawn(async move {
            if let Ok((mut s, _)) = server.accept().await {
                let mut req = [0u8; 1024];
                let _ = s.read(&mut req).await;
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"a\":1}")
                    .await;
            }
        });
        let r = get(addr, "/status", Duration::from_secs(2))
            .await
            .response();
        assert_eq!(r.json().expect("json")["a"], 1);
    }
}
