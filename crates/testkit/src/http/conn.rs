//! An HTTP/1.1 connection a test holds (hyper's client connection: keep-alive across requests,
//! closed when the server closes it), and [`fetch`], one request with headers and a body on a
//! fresh connection. For tests of a server's connection handling (a keep-alive connection
//! served, told to close and closed during a drain; an in-flight request cut) and of requests
//! that carry a body.
//!
//! Requests go out as the caller writes them: a `Host` of the address unless the caller sends
//! its own, and no `Connection: close` unless the caller sends one (the one-shot client of
//! [`crate::http`] always does, so it could not see a server ask for the close itself).

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use super::Response;

/// How a request on a [`Conn`] (or a [`fetch`]) failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("connect: {0}")]
    Connect(std::io::Error),
    #[error("handshake: {0}")]
    Handshake(hyper::Error),
    #[error("connection not ready: {0}")]
    NotReady(hyper::Error),
    #[error("request head: {0}")]
    Head(hyper::http::Error),
    /// The connection failed or closed before a response head arrived.
    #[error("request failed: {0}")]
    Request(hyper::Error),
    #[error("response body failed: {0}")]
    Body(hyper::Error),
    /// No complete response within the timeout ([`fetch`] only).
    #[error("timeout after {0:?}")]
    Timeout(Duration),
}

/// One HTTP/1.1 connection the test holds.
pub struct Conn {
    addr: SocketAddr,
    sender: SendRequest<Full<Bytes>>,
    task: JoinHandle<Result<(), hyper::Error>>,
}

impl Conn {
    /// Connects to `addr` (no Nagle delay) and does the HTTP/1.1 handshake.
    pub async fn open(addr: SocketAddr) -> Result<Conn, FetchError> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(FetchError::Connect)?;
        stream.set_nodelay(true).map_err(FetchError::Connect)?;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(FetchError::Handshake)?;
        let task = tokio::spawn(conn);
        Ok(Conn { addr, sender, task })
    }

    /// Sends a request on this connection and reads the whole response; `Err` when the
    /// connection failed or closed first.
    pub async fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Result<Response, FetchError> {
        self.sender.ready().await.map_err(FetchError::NotReady)?;
        let mut req = hyper::Request::builder().method(method).uri(path);
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            req = req.header(hyper::header::HOST, self.addr.to_string());
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req
            .body(Full::new(Bytes::from(body.to_owned())))
            .map_err(FetchError::Head)?;
        let resp = self
            .sender
            .send_request(req)
            .await
            .map_err(FetchError::Request)?;
        let (parts, body) = resp.into_parts();
        let body = body.collect().await.map_err(FetchError::Body)?.to_bytes();
        Ok(Response {
            status: parts.status.as_u16(),
            headers: parts
                .headers
                .iter()
                .map(|(k, v)| {
                    (
                        k.as_str().to_owned(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    }

    /// `GET path` on this connection.
    pub async fn get(&mut self, path: &str) -> Result<Response, FetchError> {
        self.send("GET", path, &[], "").await
    }

    /// True once the connection has ended (the server closed it, or it failed).
    pub fn is_closed(&self) -> bool {
        self.task.is_finished()
    }

    /// Waits (at most `timeout`) for the connection to end; true if it did.
    pub async fn wait_closed(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        while tokio::time::Instant::now() < deadline {
            if self.is_closed() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        self.is_closed()
    }
}

/// One request on a fresh [`Conn`], bounded by `timeout` as a whole (connect included).
pub async fn fetch(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    timeout: Duration,
) -> Result<Response, FetchError> {
    let exchange = async {
        let mut conn = Conn::open(addr).await?;
        conn.send(method, path, headers, body).await
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| FetchError::Timeout(timeout))?
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

    /// A server that answers each request on a connection with its head, echoed as the body,
    /// and keeps the connection open; `close` answers with `Connection: close` and closes.
    async fn echo_server(close: bool) -> SocketAddr {
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut s = BufReader::new(s);
                    loop {
                        let mut head = String::new();
                        let mut line = String::new();
                        while line != "\r\n" {
                            line.clear();
                            match s.read_line(&mut line).await {
                                Ok(0) | Err(_) => return,
                                Ok(_) => head.push_str(&line),
                            }
                        }
                        let length = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().to_owned())
                            })
                            .and_then(|v| v.parse::<usize>().ok())
                            .unwrap_or(0);
                        let mut body = vec![0u8; length];
                        if s.read_exact(&mut body).await.is_err() {
                            return;
                        }
                        let extra = if close { "Connection: close\r\n" } else { "" };
                        let resp = format!(
                            "HTTP/1.1 200 OK\r\n{extra}Content-Length: {}\r\n\r\n{head}",
                            head.len()
                        );
                        if s.get_mut().write_all(resp.as_bytes()).await.is_err() || close {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    #[tokio::test]
    async fn a_held_connection_serves_several_requests_as_written() {
        let addr = echo_server(false).await;
        let mut conn = Conn::open(addr).await.expect("open");
        let r = conn
            .send("POST", "/a", &[("x-test", "1")], "hello")
            .await
            .expect("first");
        assert_eq!(r.status, 200);
        assert!(r.body.starts_with("POST /a HTTP/1.1\r\n"), "{}", r.body);
        assert!(r.body.contains(&format!("host: {addr}\r\n")), "{}", r.body);
        assert!(r.body.contains("x-test: 1\r\n"), "{}", r.body);
        assert!(
            !r.body.to_ascii_lowercase().contains("connection:"),
            "{}",
            r.body
        );
        let r = conn
            .send("GET", "/b", &[("Host", "subject")], "")
            .await
            .expect("second, same connection");
        assert!(r.body.contains("host: subject\r\n"), "{}", r.body);
        assert!(!r.body.contains(&addr.to_string()), "one Host: {}", r.body);
        assert!(!conn.is_closed());
    }

    #[tokio::test]
    async fn a_server_close_is_seen_and_a_silent_server_times_out() {
        let addr = echo_server(true).await;
        let mut conn = Conn::open(addr).await.expect("open");
        let r = conn.get("/").await.expect("answered");
        assert_eq!(r.header("connection"), Some("close"));
        assert!(conn.wait_closed(Duration::from_secs(2)).await);

        let (addr, hold) = crate::http::tests::silent_server().await;
        let r = fetch(addr, "GET", "/", &[], "", Duration::from_millis(300)).await;
        assert!(matches!(r, Err(FetchError::Timeout(_))), "{r:?}");
        hold.abort();
    }
}
