//! Virtual clients (`--clients`) against an in-process server with cookie affinity, as Container
//! Apps' `stickySessions` works: a request whose cookie names a live replica goes there; any
//! other goes round-robin and gets a cookie naming its replica.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use logline::line::Line;
use logline::line::loadgen::ClientChange;
use tokio::net::TcpListener;

mod common;
use common::{run, summary};

#[derive(Default)]
struct Sticky {
    /// The replicas requests may go to.
    live: Mutex<Vec<String>>,
    next: AtomicU64,
    requests: AtomicU64,
    /// Requests whose cookie named a replica.
    with_cookie: AtomicU64,
}

impl Sticky {
    async fn start(replicas: &[&str]) -> (SocketAddr, Arc<Sticky>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let st = Arc::new(Sticky::default());
        *st.live.lock().unwrap() = replicas.iter().map(|r| r.to_string()).collect();
        let s2 = st.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let st = s2.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |req| {
                        let st = st.clone();
                        async move { Ok::<_, Infallible>(st.answer(&req)) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        (addr, st)
    }

    fn answer(&self, req: &Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
        self.requests.fetch_add(1, Ordering::SeqCst);
        let live = self.live.lock().unwrap().clone();
        let named = req
            .headers()
            .get_all("cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .find_map(|p| p.trim().strip_prefix("aff=").map(str::to_owned));
        if named.is_some() {
            self.with_cookie.fetch_add(1, Ordering::SeqCst);
        }
        let mut b = Response::builder();
        let replica = match named.filter(|r| live.contains(r)) {
            Some(r) => r,
            None => {
                let i = self.next.fetch_add(1, Ordering::SeqCst) as usize % live.len();
                b = b.header("set-cookie", format!("aff={}; Path=/; HttpOnly", live[i]));
                live[i].clone()
            }
        };
        b.header("x-replica", replica)
            .body(Full::new(Bytes::from_static(b"ok\n")))
            .unwrap()
    }
}

fn changes(lines: &[Line]) -> Vec<&ClientChange> {
    lines
        .iter()
        .filter_map(|l| match l {
            Line::Client(c) => Some(c),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sticky_clients_keep_their_replica_until_it_goes_and_then_move_once() {
    let (addr, st) = Sticky::start(&["r0", "r1", "r2"]).await;
    let url = format!("http://{addr}/");
    // 6 clients at 60 RPS: each sends every 100 ms, long after its previous answer.
    let load = tokio::spawn(async move {
        run(&[
            "--url",
            &url,
            "--rate",
            "60",
            "--duration",
            "3",
            "--bucket",
            "1",
            "--clients",
            "6",
        ])
        .await
    });
    // Replica r1 goes away once every client has been served a few times.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while st.requests.load(Ordering::SeqCst) < 60 {
        assert!(tokio::time::Instant::now() < deadline, "no load arrived");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    st.live.lock().unwrap().retain(|r| r != "r1");
    let lines = load.await.unwrap();
    let changes = changes(&lines);

    // Every client was pinned once, by the cookie of its first answer.
    let pins: BTreeMap<u32, &ClientChange> = changes
        .iter()
        .filter(|c| c.previous_replica.is_none())
        .map(|c| (c.client, *c))
        .collect();
    assert_eq!(pins.len(), 6, "{changes:#?}");
    assert_eq!(
        changes
            .iter()
            .filter(|c| c.previous_replica.is_none())
            .count(),
        6
    );
    for p in pins.values() {
        let r = p.replica.as_deref().unwrap();
        assert_eq!(p.set_cookie, [format!("aff={r}")]);
    }
    // Round-robin spread them over the three replicas.
    let on_r1: Vec<u32> = pins
        .values()
        .filter(|p| p.replica.as_deref() == Some("r1"))
        .map(|p| p.client)
        .collect();
    assert_eq!(on_r1.len(), 2, "{pins:#?}");

    // Only r1's clients moved, each once, to a live replica, with a new cookie.
    let moves: Vec<&&ClientChange> = changes.iter().filter(|c| c.moved()).collect();
    let moved: Vec<u32> = moves.iter().map(|c| c.client).collect();
    assert_eq!(moved, on_r1, "{moves:#?}");
    for m in &moves {
        assert_eq!(m.previous_replica.as_deref(), Some("r1"));
        let to = m.replica.as_deref().unwrap();
        assert_ne!(to, "r1");
        assert_eq!(m.set_cookie, [format!("aff={to}")]);
    }
    assert_eq!(changes.len(), 6 + 2, "{changes:#?}");

    // Every request after a client's first carried its cookie; nothing failed.
    let s = summary(&lines, "main");
    assert_eq!(s.err, 0);
    assert_eq!(st.requests.load(Ordering::SeqCst), s.count);
    assert_eq!(st.with_cookie.load(Ordering::SeqCst), s.count - 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_clients_no_cookie_is_sent_and_no_client_line_printed() {
    let (addr, st) = Sticky::start(&["r0", "r1"]).await;
    let url = format!("http://{addr}/");
    let lines = run(&["--url", &url, "--rate", "50", "--duration", "1"]).await;
    assert!(changes(&lines).is_empty());
    assert!(summary(&lines, "main").count > 0);
    assert_eq!(st.with_cookie.load(Ordering::SeqCst), 0);
}
