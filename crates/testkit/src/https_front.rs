//! An HTTPS front for a plain-HTTP test server (localplane's ARM API, the Log Analytics
//! stand-in): a reverse proxy on 127.0.0.1 that terminates TLS with a [`TestCa`]'s leaf, records
//! every request (method, path and query, the `Authorization` header) and forwards it unchanged
//! to the backend.
//!
//! As a reverse proxy does (nginx's `proxy_redirect`), the backend's own origin in an answer
//! (`Location`, `Azure-AsyncOperation`, a `nextLink` in the body) is rewritten to the front's,
//! so a client polls an operation on the origin it called, as it does on ARM, whose operation
//! URLs are on `management.azure.com`. A client never sends its token to another origin, so
//! without this every poll would reach the backend without one.
//!
//! The CA is handed to a client the way a user hands one over: [`TestCa::write_pem`] writes it
//! to a file for `SSL_CERT_FILE` (rustls' platform verifier, which reqwest and azure_core use,
//! then trusts it for that process and nothing else changes).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};

use crate::test_ca::TestCa;

/// One request the front forwarded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub method: String,
    /// Path and query, as sent.
    pub path: String,
    /// The `Authorization` header, verbatim.
    pub authorization: Option<String>,
    /// The status the backend answered (502 when it could not be reached).
    pub status: u16,
}

/// The running front; stops when dropped.
pub struct HttpsFront {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for HttpsFront {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl HttpsFront {
    /// Listens on 127.0.0.1 (a free port) with `ca`'s leaf and forwards to `backend` (plain
    /// HTTP on 127.0.0.1).
    pub async fn start(ca: &TestCa, backend: SocketAddr) -> std::io::Result<HttpsFront> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let acceptor = tokio_rustls::TlsAcceptor::from(ca.server_config());
        let client: Client<HttpConnector, Full<Bytes>> =
            Client::builder(TokioExecutor::new()).build_http();
        let log = seen.clone();
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, client, log) = (acceptor.clone(), client.clone(), log.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let svc = hyper::service::service_fn(move |req| {
                        forward(req, backend, addr, client.clone(), log.clone())
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), svc)
                        .await;
                });
            }
        });
        Ok(HttpsFront { addr, seen, task })
    }

    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.addr.port())
    }

    /// Every request forwarded so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

async fn forward(
    req: hyper::Request<Incoming>,
    backend: SocketAddr,
    front: SocketAddr,
    client: Client<HttpConnector, Full<Bytes>>,
    log: Arc<Mutex<Vec<Seen>>>,
) -> Result<hyper::Response<Full<Bytes>>, std::convert::Infallible> {
    let (parts, body) = req.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
    let mut seen = Seen {
        method: parts.method.to_string(),
        path: path.clone(),
        authorization: parts
            .headers
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        status: 502,
    };
    let bad_gateway = |msg: String| {
        let mut r = hyper::Response::new(Full::new(Bytes::from(msg)));
        *r.status_mut() = hyper::StatusCode::BAD_GATEWAY;
        r
    };
    let answer = async {
        let body = body
            .collect()
            .await
            .map_err(|e| format!("request body: {e}"))?
            .to_bytes();
        let uri: hyper::Uri = format!("http://{backend}{path}")
            .parse()
            .map_err(|e| format!("uri: {e}"))?;
        let mut out = hyper::Request::from_parts(parts, Full::new(body));
        *out.uri_mut() = uri;
        // The backend's own host, as nginx's default `proxy_set_header Host $proxy_host`: the
        // backend then names itself in its URLs, which the front rewrites below.
        if let Ok(host) = hyper::header::HeaderValue::from_str(&backend.to_string()) {
            out.headers_mut().insert(hyper::header::HOST, host);
        }
        let resp = client
            .request(out)
            .await
            .map_err(|e| format!("backend: {e}"))?;
        let (mut parts, body) = resp.into_parts();
        let body = body
            .collect()
            .await
            .map_err(|e| format!("response body: {e}"))?
            .to_bytes();
        let (from, to) = (format!("http://{backend}"), format!("https://{front}"));
        for name in ["location", "azure-asyncoperation"] {
            let rewritten = parts
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .filter(|v| v.starts_with(&from))
                .and_then(|v| {
                    hyper::header::HeaderValue::from_str(&v.replacen(&from, &to, 1)).ok()
                });
            if let Some(v) = rewritten {
                parts.headers.insert(name, v);
            }
        }
        let body = match std::str::from_utf8(&body) {
            Ok(text) if text.contains(&from) => {
                parts.headers.remove(hyper::header::CONTENT_LENGTH);
                Bytes::from(text.replace(&from, &to))
            }
            _ => body,
        };
        Ok::<_, String>(hyper::Response::from_parts(parts, Full::new(body)))
    }
    .await;
    let resp = answer.unwrap_or_else(bad_gateway);
    seen.status = resp.status().as_u16();
    log.lock().unwrap_or_else(|p| p.into_inner()).push(seen);
    Ok(resp)
}
