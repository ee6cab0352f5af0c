//! `https://` targets against an in-process TLS server on 127.0.0.1 whose certificate is made
//! for the test (testkit's `TestCa` and its leaf for 127.0.0.1): trusted through `--ca-file`,
//! untrusted (`tls` error class, not `connect`), and `--insecure`. Side streams use TLS too.
#![allow(clippy::unwrap_used)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use testkit::test_ca::TestCa;
use tokio::net::TcpListener;

mod common;
use common::{reqs, run, summary};

struct TlsServer {
    addr: SocketAddr,
    /// PEM of the CA that signed the server's certificate.
    ca_pem: String,
    requests: Arc<AtomicU64>,
    handshakes: Arc<AtomicU64>,
}

impl TlsServer {
    async fn start() -> TlsServer {
        let ca = TestCa::new().unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(ca.server_config());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(AtomicU64::new(0));
        let handshakes = Arc::new(AtomicU64::new(0));
        let (rq, hs) = (requests.clone(), handshakes.clone());
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, rq, hs) = (acceptor.clone(), rq.clone(), hs.clone());
                tokio::spawn(async move {
                    // An untrusting client aborts the handshake: nothing to serve then.
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    hs.fetch_add(1, Ordering::SeqCst);
                    let svc = service_fn(move |_req: Request<hyper::body::Incoming>| {
                        rq.fetch_add(1, Ordering::SeqCst);
                        async move {
                            Ok::<_, Infallible>(
                                Response::builder()
                                    .header("x-revision", "rev-tls")
                                    .body(Full::new(Bytes::from_static(b"ok")))
                                    .unwrap(),
                            )
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), svc)
                        .await;
                });
            }
        });
        TlsServer {
            addr,
            ca_pem: ca.pem().to_owned(),
            requests,
            handshakes,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("https://{}{}", self.addr, path)
    }

    /// Writes the CA (or any PEM) to a file of its own for `--ca-file`.
    fn pem_file(&self, name: &str, pem: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "loadgen-tls-test-{}-{}",
            std::process::id(),
            self.addr.port()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, pem).unwrap();
        p
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_the_ca_trusted_is_ok_on_pooled_connections_and_side_streams() {
    let srv = TlsServer::start().await;
    let ca = srv.pem_file("ca.pem", &srv.ca_pem);
    let url = srv.url("/");
    let lines = run(&[
        "--url",
        &url,
        "--ca-file",
        ca.to_str().unwrap(),
        "--rate",
        "40",
        "--duration",
        "1s",
        "--bucket",
        "1s",
        "--also",
        "rate=4,path=/side,name=side",
    ])
    .await;
    let s = summary(&lines, "main");
    assert_eq!((s.count, s.ok, s.err), (40, 40, 0), "{:?}", s.errors);
    assert_eq!(s.served_by.get("rev-tls"), Some(&40));
    let side = summary(&lines, "side");
    assert_eq!((side.count, side.ok), (4, 4), "{:?}", side.errors);
    let r = reqs(&lines, "side");
    assert!(r.iter().all(|r| r.code == Some(200)), "{r:?}");
    assert_eq!(srv.requests.load(Ordering::SeqCst), 44);
    // Keep-alive: far fewer handshakes than requests (one per concurrent connection).
    let hs = srv.handshakes.load(Ordering::SeqCst);
    assert!(hs < 20, "{hs} TLS handshakes for 44 keep-alive requests");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_mode_does_a_tls_handshake_per_request() {
    let srv = TlsServer::start().await;
    let ca = srv.pem_file("ca.pem", &srv.ca_pem);
    let url = srv.url("/");
    let lines = run(&[
        "--url",
        &url,
        "--ca-file",
        ca.to_str().unwrap(),
        "--connection",
        "close",
        "--rate",
        "20",
        "--duration",
        "1s",
        "--bucket",
        "1s",
    ])
    .await;
    let s = summary(&lines, "main");
    assert_eq!((s.count, s.ok), (20, 20), "{:?}", s.errors);
    assert_eq!(srv.handshakes.load(Ordering::SeqCst), 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_certificate_is_counted_as_tls_not_connect() {
    let srv = TlsServer::start().await;
    // A bundle holding some other CA: the server's chain does not lead to it.
    let other = TestCa::new().unwrap();
    let ca = srv.pem_file("other.pem", other.pem());
    let url = srv.url("/");
    let lines = run(&[
        "--url",
        &url,
        "--ca-file",
        ca.to_str().unwrap(),
        "--rate",
        "10",
        "--duration",
        "1s",
        "--bucket",
        "1s",
        "--log-requests",
        "errors",
    ])
    .await;
    let s = summary(&lines, "main");
    assert_eq!((s.count, s.ok, s.err), (10, 0, 10));
    assert_eq!(s.errors.get("tls"), Some(&10), "{:?}", s.errors);
    assert_eq!(srv.requests.load(Ordering::SeqCst), 0);
    let r = reqs(&lines, "main");
    assert_eq!(r.len(), 10);
    let msg = r[0].err_msg.as_deref().unwrap_or_default();
    assert!(msg.contains("TLS handshake"), "{msg}");
    assert!(msg.to_lowercase().contains("certificate"), "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insecure_accepts_a_certificate_no_bundle_trusts() {
    let srv = TlsServer::start().await;
    let empty = srv.pem_file("none.pem", "no certificates here\n");
    let url = srv.url("/");
    let args = |insecure: bool| {
        let mut a = vec![
            "loadgen".to_owned(),
            "--url".into(),
            url.clone(),
            "--ca-file".into(),
            empty.to_str().unwrap().into(),
            "--rate".into(),
            "10".into(),
            "--duration".into(),
            "1s".into(),
            "--bucket".into(),
            "1s".into(),
        ];
        if insecure {
            a.push("--insecure".into());
        }
        a
    };
    // Without --insecure, a bundle with no certificate is a configuration error up front.
    let e = loadgen::Config::from_args(args(false))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no trusted CA certificate") && e.contains("--insecure"),
        "{e}"
    );
    let cfg = loadgen::Config::from_args(args(true)).unwrap();
    let (out, lines) = loadgen::Output::memory();
    loadgen::run(cfg, out, std::future::pending()).await;
    let lines = lines.lock().unwrap().clone();
    let s = summary(&lines, "main");
    assert_eq!((s.count, s.ok), (10, 10), "{:?}", s.errors);
}
