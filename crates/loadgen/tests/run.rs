//! End-to-end tests of `loadgen::run` (and of the binary for SIGTERM) against an in-process
//! HTTP server on 127.0.0.1 whose latency, revision header and connection policy the test
//! controls.
#![allow(clippy::unwrap_used)]

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
use logline::line::loadgen::{Bucket, Step};
use tokio::net::TcpListener;

mod common;
use common::{buckets, reqs, run, summary};
use tokio::time::Instant;

/// The test server's knobs and counters.
#[derive(Default)]
struct State {
    requests: AtomicU64,
    conns: AtomicU64,
    /// Added to every response.
    delay_ms: AtomicU64,
    /// Requests arriving before this instant are held until it.
    stall_until: Mutex<Option<Instant>>,
    revision: Mutex<String>,
}

struct Server {
    addr: SocketAddr,
    state: Arc<State>,
}

impl Server {
    async fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        *state.revision.lock().unwrap() = "rev-a".into();
        let st = state.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                st.conns.fetch_add(1, Ordering::SeqCst);
                let st = st.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |req| handle(st.clone(), req));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        Server { addr, state }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    fn requests(&self) -> u64 {
        self.state.requests.load(Ordering::SeqCst)
    }
}

async fn handle(
    st: Arc<State>,
    req: Request<hyper::body::Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let n = st.requests.fetch_add(1, Ordering::SeqCst);
    let stall = *st.stall_until.lock().unwrap();
    if let Some(t) = stall.filter(|t| Instant::now() < *t) {
        tokio::time::sleep_until(t).await;
    }
    let mut delay = st.delay_ms.load(Ordering::SeqCst);
    let slow_ms = req.uri().query().and_then(|q| q.strip_prefix("ms="));
    if let (true, Some(ms)) = (req.uri().path() == "/slow", slow_ms) {
        delay += ms.parse::<u64>().unwrap();
    }
    // `/jitter`: 0 to 18 ms, varying from request to request.
    if req.uri().path() == "/jitter" {
        delay += (n % 7) * 3;
    }
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    let rev = st.revision.lock().unwrap().clone();
    let mut resp = Response::builder()
        .header("x-revision", rev)
        .header("x-replica", "replica-1");
    if req.uri().path() == "/close" {
        resp = resp.header("connection", "close");
    }
    if req.uri().path() == "/fail" {
        resp = resp.status(503);
    }
    Ok(resp.body(Full::new(Bytes::from_static(b"ok"))).unwrap())
}

/// The URL of a server that accepts every connection and hangs up without a byte.
async fn hang_up_server() -> String {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", l.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            drop(s);
        }
    });
    url
}

fn assert_contiguous(bs: &[&Bucket]) {
    for w in bs.windows(2) {
        assert_eq!(
            w[1].bucket_start_epoch_s - w[0].bucket_start_epoch_s,
            w[0].window_s as i64,
            "gap between windows: {:?} -> {:?}",
            w[0].bucket_start_iso,
            w[1].bucket_start_iso
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bucket_counts_add_up_to_requests_sent() {
    let srv = Server::start().await;
    let url = srv.url("/");
    let lines = run(&[
        "--url",
        &url,
        "--rate",
        "40",
        "--duration",
        "2.5s",
        "--bucket",
        "1s",
    ])
    .await;
    let s = summary(&lines, "main");
    let bs = buckets(&lines, "main");
    assert_eq!(s.count, 100, "2.5 s at 40/s is exactly 100 arrivals");
    assert_eq!(bs.iter().map(|b| b.count).sum::<u64>(), s.count);
    assert_eq!(bs.iter().map(|b| b.ok).sum::<u64>(), 100);
    assert_eq!(srv.requests(), 100);
    assert_eq!((s.ok, s.err, s.dropped), (100, 0, 0));
    assert!(bs.len() >= 3, "{} buckets", bs.len());
    assert_contiguous(&bs);
    assert!(bs.iter().all(|b| b.window_s == 1 && b.target_rps == 40.0));
    for b in &bs {
        let iso: logline::Timestamp = b.bucket_start_iso.parse().unwrap();
        assert_eq!(iso.epoch_s(), b.bucket_start_epoch_s);
    }
    assert!(matches!(lines.first(), Some(Line::Meta(_))));
    assert!(matches!(lines.last(), Some(Line::Meta(_))));
    assert!((s.achieved_rps - 40.0).abs() < 0.5, "{}", s.achieved_rps);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_windows_are_emitted() {
    let srv = Server::start().await;
    let url = srv.url("/");
    // One request at t = 0 and one at t = 2 s: the windows around t = 1 s and t = 3 s are empty.
    let lines = run(&[
        "--url",
        &url,
        "--rate",
        "0.5",
        "--duration",
        "3.5s",
        "--bucket",
        "1s",
    ])
    .await;
    let bs = buckets(&lines, "main");
    assert!(bs.len() >= 4, "{} buckets", bs.len());
    assert_contiguous(&bs);
    assert!(bs.iter().filter(|b| b.count == 0).count() >= 2, "{bs:#?}");
    assert_eq!(bs.iter().map(|b| b.count).sum::<u64>(), 2);
    let empty = bs.iter().find(|b| b.count == 0).unwrap();
    assert_eq!((empty.err_pct, empty.p50_ms), (0.0, None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_counting_when_the_server_stalls_under_max_in_flight() {
    let srv = Server::start().await;
    let url = srv.url("/slow?ms=2500");
    let lines = run(&[
        "--url",
        &url,
        "--rate",
        "50",
        "--duration",
        "1s",
        "--bucket",
        "1s",
        "--max-in-flight",
        "5",
        "--timeout",
        "5s",
    ])
    .await;
    let s = summary(&lines, "main");
    assert_eq!(s.count, 5, "only the first 5 could start");
    assert_eq!(s.dropped, 45, "the rest are dropped, not queued");
    assert_eq!(s.ok, 5);
    let bs = buckets(&lines, "main");
    assert_eq!(bs.iter().map(|b| b.dropped).sum::<u64>(), 45);
    assert_eq!(srv.requests(), 5);
}

/// Runs 100 arrivals in 1 s on a current-thread runtime whose only thread is blocked for
/// `block_ms` from 0.7 s into the run (a CPU too busy for the scheduler).
async fn run_with_blocked_scheduler(block_ms: u64) -> Vec<Line> {
    let srv = Server::start().await;
    let url = srv.url("/");
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(700)).await;
        std::thread::sleep(Duration::from_millis(block_ms));
    });
    run(&[
        "--url",
        &url,
        "--rate",
        "100",
        "--duration",
        "1s",
        "--bucket",
        "1s",
    ])
    .await
}

/// A scheduler that falls far behind (blocked until 1.3 s after the end of the run) leaves
/// arrivals due but unsent: when it is stopped they count as dropped.
#[tokio::test(flavor = "current_thread")]
async fn arrivals_due_but_unsent_when_the_run_stops_count_as_dropped() {
    let lines = run_with_blocked_scheduler(1600).await;
    let s = summary(&lines, "main");
    assert_eq!(
        s.count + s.dropped,
        100,
        "every arrival due in the run is sent or dropped: {s:?}"
    );
    assert!(
        s.dropped >= 20,
        "the blocked last 300 ms were dropped: {s:?}"
    );
    assert_eq!(
        buckets(&lines, "main")
            .iter()
            .map(|b| b.dropped)
            .sum::<u64>(),
        s.dropped
    );
}

/// A scheduler only a little behind at the end (blocked until 0.1 s after it) still sends
/// the arrivals that were due before the end: late, not dropped.
#[tokio::test(flavor = "current_thread")]
async fn a_scheduler_slightly_late_at_the_end_still_sends_every_arrival() {
    let lines = run_with_blocked_scheduler(400).await;
    let s = summary(&lines, "main");
    assert_eq!((s.count, s.dropped), (100, 0), "{s:?}");
    let late = s.lateness.clone().expect("lateness of sent requests");
    assert!(
        late.max_ms >= 250.0,
        "the last arrivals went out late: {late:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_from_scheduled_time_grows_when_the_server_stalls() {
    let srv = Server::start().await;
    let url = srv.url("/");
    // Requests arriving between 0.5 s and 1.5 s are held until 1.5 s.
    let st = srv.state.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        *st.stall_until.lock().unwrap() = Some(Instant::now() + Duration::from_secs(1));
    });
    let lines = run(&[
        "--url",
        &url,
        "--rate",
        "40",
        "--duration",
        "2s",
        "--bucket",
        "1s",
    ])
    .await;
    let s = summary(&lines, "main");
    // The schedule went on during the stall: nothing omitted, nothing waited for a free slot.
    assert_eq!(s.count, 80);
    assert_eq!(s.dropped, 0);
    let lat = s.latency.as_ref().unwrap();
    assert!(lat.max_ms >= 800.0, "{lat:?}");
    assert!(lat.p90_ms >= 400.0, "{lat:?}");
    let late = s.lateness.as_ref().unwrap();
    assert!(late.p99_ms < 50.0, "sends kept to the schedule: {late:?}");
    let worst = buckets(&lines, "main")
        .iter()
        .filter_map(|b| b.p99_ms)
        .fold(0.0, f64::max);
    assert!(worst >= 500.0, "a bucket shows the stall: {worst}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attribution_counts_by_revision_and_side_stream_req_lines_carry_it() {
    let srv = Server::start().await;
    let url = srv.url("/");
    let st = srv.state.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(1000)).await;
        *st.revision.lock().unwrap() = "rev-b".into();
    });
    let lines = run(&[
        "--url",
        &url,
        "--rate",
        "40",
        "--duration",
        "2s",
        "--bucket",
        "1s",
        "--also",
        "rate=4,path=/slow?ms=50,timeout=5s,name=slow",
    ])
    .await;
    let s = summary(&lines, "main");
    let a = s.served_by.get("rev-a").copied().unwrap_or(0);
    let b = s.served_by.get("rev-b").copied().unwrap_or(0);
    assert!(a >= 20 && b >= 20, "{:?}", s.served_by);
    assert_eq!(a + b, s.count);
    let per_bucket: u64 = buckets(&lines, "main")
        .iter()
        .flat_map(|b| b.served_by.values())
        .sum();
    assert_eq!(per_bucket, s.count);
    assert!(
        reqs(&lines, "main").is_empty(),
        "main logs errors only by default"
    );
    let slow = summary(&lines, "slow");
    assert_eq!(slow.count, 8);
    let rs = reqs(&lines, "slow");
    assert_eq!(rs.len(), 8, "side streams log every request");
    assert!(
        rs.iter()
            .all(|r| r.ok && r.code == Some(200) && r.dur_ms >= 50.0)
    );
    assert!(rs.iter().all(|r| r.replica.as_deref() == Some("replica-1")));
    assert!(
        rs.iter()
            .all(|r| matches!(r.revision.as_deref(), Some("rev-a" | "rev-b")))
    );
    assert!(buckets(&lines, "slow").len() >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staircase_prints_steps_and_the_p50_ratio() {
    let srv = Server::start().await;
    let url = srv.url("/");
    srv.state.delay_ms.store(5, Ordering::SeqCst);
    let st = srv.state.clone();
    tokio::spawn(async move {
        // During the pause between the steps, the server gets 8x slower.
        tokio::time::sleep(Duration::from_millis(1250)).await;
        st.delay_ms.store(40, Ordering::SeqCst);
    });
    let lines = run(&[
        "--url",
        &url,
        "--duration",
        "60s",
        "--bucket",
        "1s",
        "--staircase",
        "20,30",
        "--step",
        "1s",
        "--pause",
        "500ms",
    ])
    .await;
    let steps: Vec<&Step> = lines
        .iter()
        .filter_map(|l| match l {
            Line::Step(s) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(steps.len(), 2);
    assert_eq!(
        (steps[0].step, steps[0].count, steps[0].target_rps),
        (1, 20, 20.0)
    );
    assert_eq!(
        (steps[1].step, steps[1].count, steps[1].target_rps),
        (2, 30, 30.0)
    );
    let s = summary(&lines, "main");
    assert_eq!(s.count, 50, "nothing is sent during the pause");
    let ratio = s.staircase_p50_ratio.unwrap();
    assert!(
        (3.0..=12.0).contains(&ratio),
        "ratio {ratio}, steps {steps:?}"
    );
    assert!(
        s.duration_s < 3.0,
        "the run ends with the staircase: {}",
        s.duration_s
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_model_keeps_one_connection_per_worker_and_reconnects_after_close() {
    let srv = Server::start().await;
    let url = srv.url("/");
    let lines = run(&[
        "--url",
        &url,
        "--workers",
        "2",
        "--think",
        "10ms",
        "--duration",
        "1s",
        "--bucket",
        "1s",
    ])
    .await;
    let s = summary(&lines, "main");
    assert!(s.count >= 20, "{}", s.count);
    assert_eq!(s.ok, s.count);
    assert_eq!(
        srv.state.conns.load(Ordering::SeqCst),
        2,
        "one persistent connection per worker"
    );

    let srv = Server::start().await;
    let url = srv.url("/close");
    let lines = run(&[
        "--url",
        &url,
        "--workers",
        "2",
        "--think",
        "10ms",
        "--duration",
        "1s",
        "--bucket",
        "1s",
    ])
    .await;
    let s = summary(&lines, "main");
    assert!(s.count >= 20, "{}", s.count);
    assert_eq!(s.ok, s.count, "{:?}", s.errors);
    assert_eq!(
        srv.state.conns.load(Ordering::SeqCst),
        s.count,
        "a new connection after every Connection: close"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_mode_opens_a_connection_per_request() {
    let srv = Server::start().await;
    let url = srv.url("/");
    let lines = run(&[
        "--url",
        &url,
        "--rate",
        "40",
        "--duration",
        "1s",
        "--bucket",
        "1s",
        "--connection",
        "close",
    ])
    .await;
    let s = summary(&lines, "main");
    assert_eq!((s.count, s.ok), (40, 40));
    assert_eq!(srv.state.conns.load(Ordering::SeqCst), 40);
    assert_eq!(s.served_by.get("rev-a"), Some(&40), "{:?}", s.served_by);
}

/// Close mode reads responses itself (no hyper client): the same attribution and the same
/// error classes as keep-alive mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_mode_attributes_and_classifies_errors_like_keep_alive() {
    let close = |url: String, extra: &'static [&'static str]| async move {
        let mut args = vec![
            "--url".to_owned(),
            url,
            "--connection".into(),
            "close".into(),
            "--rate".into(),
            "10".into(),
            "--duration".into(),
            "1s".into(),
            "--bucket".into(),
            "1s".into(),
            "--log-requests".into(),
            "all".into(),
        ];
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&args).await
    };
    let srv = Server::start().await;
    let lines = close(srv.url("/fail"), &[]).await;
    let s = summary(&lines, "main");
    assert_eq!(s.errors.get("http_5xx"), Some(&10), "{:?}", s.errors);
    let rs = reqs(&lines, "main");
    assert_eq!(rs.len(), 10);
    assert!(rs.iter().all(|r| r.code == Some(503)
        && r.revision.as_deref() == Some("rev-a")
        && r.replica.as_deref() == Some("replica-1")));

    let lines = close(srv.url("/slow?ms=2000"), &["--timeout", "300ms"]).await;
    let s = summary(&lines, "main");
    assert_eq!(s.errors.get("timeout"), Some(&10), "{:?}", s.errors);

    // `reset` (an end of stream or an RST, as the timing falls), with a message either way.
    let lines = close(hang_up_server().await, &[]).await;
    let s = summary(&lines, "main");
    assert_eq!(s.errors.get("reset"), Some(&10), "{:?}", s.errors);
    assert!(
        reqs(&lines, "main")
            .iter()
            .all(|r| r.err_class.as_deref() == Some("reset")
                && r.err_msg.as_ref().is_some_and(|m| !m.is_empty()))
    );
}

/// What a close-order server saw on one connection.
#[derive(Debug)]
struct CloseOrder {
    /// The client had closed its side before the server closed its own.
    client_closed_first: bool,
    /// From the complete response to the client's end of stream.
    client_fin_after_response: Duration,
}

/// The URL of a raw HTTP/1.1 server that answers `connection: close` and then closes its side
/// `server_closes_after` later (or never), and what it saw on each connection.
async fn close_order_server(
    server_closes_after: Option<Duration>,
) -> (String, Arc<Mutex<Vec<CloseOrder>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", l.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let seen = seen2.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut b = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut b).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&b[..n]),
                    }
                }
                let resp = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok";
                s.write_all(resp.as_bytes()).await.unwrap();
                let answered = Instant::now();
                let mut client_closed_first = false;
                if let Some(d) = server_closes_after {
                    tokio::time::sleep(d).await;
                    client_closed_first = matches!(s.try_read(&mut b), Ok(0));
                    s.shutdown().await.unwrap();
                }
                let eof = tokio::time::timeout(Duration::from_secs(5), async {
                    while !matches!(s.read(&mut b).await, Ok(0) | Err(_)) {}
                })
                .await;
                assert!(eof.is_ok(), "the client never closed the connection");
                seen.lock().unwrap().push(CloseOrder {
                    client_closed_first,
                    client_fin_after_response: answered.elapsed(),
                });
            });
        }
    });
    (url, seen)
}

/// The server's `n` observations (it records a connection when the client's end of stream
/// arrives, which may be just after the run returns).
async fn all_seen(seen: &Mutex<Vec<CloseOrder>>, n: usize) -> Vec<CloseOrder> {
    let deadline = Instant::now() + Duration::from_secs(2);
    while seen.lock().unwrap().len() < n && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    assert_eq!(seen.len(), n, "{seen:?}");
    seen
}

/// Close mode leaves the closing to the server, which `Connection: close` obliges to close: the
/// side that closes first keeps the port pair in TIME_WAIT for a minute, and a client's
/// ephemeral ports are few. A server that does not close is given SERVER_CLOSE_WAIT; neither
/// wait is counted as latency.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_mode_lets_the_server_close_first() {
    let args = |url: &str| {
        vec![
            "--url".to_owned(),
            url.to_owned(),
            "--connection".into(),
            "close".into(),
            "--rate".into(),
            "10".into(),
            "--duration".into(),
            "0.5s".into(),
        ]
    };
    // The server closes well after the response, but less than SERVER_CLOSE_WAIT after it.
    let server_delay = Duration::from_millis(120);
    let (url, seen) = close_order_server(Some(server_delay)).await;
    let a = args(&url);
    let lines = run(&a.iter().map(String::as_str).collect::<Vec<_>>()).await;
    let s = summary(&lines, "main");
    assert_eq!((s.count, s.ok), (5, 5));
    let seen = all_seen(&seen, 5).await;
    for c in seen.iter() {
        assert!(!c.client_closed_first, "the client closed first: {seen:?}");
        // 220 ms, below SERVER_CLOSE_WAIT: a client deaf to the server's close fails here.
        assert!(
            c.client_fin_after_response < server_delay + Duration::from_millis(100),
            "the client lingered after the server closed: {seen:?}"
        );
    }
    let max_ms = s.latency.as_ref().unwrap().max_ms;
    assert!(max_ms < 100.0, "the wait counted as latency: {max_ms} ms");

    let (url, seen) = close_order_server(None).await;
    let a = args(&url);
    let t0 = Instant::now();
    let lines = run(&a.iter().map(String::as_str).collect::<Vec<_>>()).await;
    let s = summary(&lines, "main");
    assert_eq!((s.count, s.ok), (5, 5));
    let max_ms = s.latency.as_ref().unwrap().max_ms;
    assert!(max_ms < 100.0, "the wait counted as latency: {max_ms} ms");
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    let seen = all_seen(&seen, 5).await;
    let wait = loadgen::client::SERVER_CLOSE_WAIT;
    for c in seen.iter() {
        assert!(
            c.client_fin_after_response >= wait - Duration::from_millis(5)
                && c.client_fin_after_response < wait + Duration::from_millis(500),
            "the client closed after {:?}, not after about {wait:?}",
            c.client_fin_after_response
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_port_ends_on_time_with_every_request_classified_connect() {
    let port = testkit::http::free_port().unwrap();
    let url = format!("http://127.0.0.1:{port}/");
    let t0 = Instant::now();
    let lines = run(&[
        "--url",
        &url,
        "--rate",
        "20",
        "--duration",
        "1.5s",
        "--bucket",
        "1s",
    ])
    .await;
    assert!(
        t0.elapsed() < Duration::from_millis(2500),
        "{:?}",
        t0.elapsed()
    );
    let s = summary(&lines, "main");
    assert_eq!(s.count, 30);
    assert_eq!(s.err, 30);
    assert_eq!(s.errors.get("connect"), Some(&30), "{:?}", s.errors);
    let rs = reqs(&lines, "main");
    assert_eq!(rs.len(), 30, "errors are logged by default");
    assert!(
        rs.iter()
            .all(|r| r.err_class.as_deref() == Some("connect") && r.code.is_none())
    );
    assert!(rs.iter().all(|r| r.err_msg.is_some()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_flushes_the_open_bucket_and_the_summary() {
    let srv = Server::start().await;
    let url = srv.url("/");
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args([
            "--url",
            &url,
            "--rate",
            "20",
            "--duration",
            "60s",
            "--bucket",
            "60s",
            "--grace",
            "1s",
            "--also",
            "rate=1,path=/slow?ms=20000,timeout=30s,name=slow",
            // The multi-thread runtime (the default from 5,000 RPS): the signal stops it too.
            "--threads",
            "2",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let pid = child.id().unwrap();
    // kill(1), not libc::kill: the workspace allows `unsafe` in one documented place only.
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -TERM {pid}: {sent}");
    let t0 = Instant::now();
    let out = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .expect("loadgen did not exit after SIGTERM")
        .unwrap();
    assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<Line> = stdout
        .lines()
        .map(|l| Line::from_json(l).unwrap())
        .collect();
    let s = summary(&lines, "main");
    assert!(s.interrupted);
    assert!(s.count >= 25, "{}", s.count);
    let bs = buckets(&lines, "main");
    assert_eq!(
        bs.iter().map(|b| b.count).sum::<u64>(),
        s.count,
        "the open bucket was flushed"
    );
    let slow = summary(&lines, "slow");
    assert!(
        slow.errors.get("aborted").copied().unwrap_or(0) >= 1,
        "{:?}",
        slow.errors
    );
    assert_eq!(
        buckets(&lines, "slow").iter().map(|b| b.count).sum::<u64>(),
        slow.count
    );
    assert!(
        matches!(lines.last(), Some(Line::Meta(m)) if m.phase == logline::line::MetaPhase::End)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_classified_reset_timeout_and_http_5xx_without_ending_the_run() {
    // A server that accepts and hangs up before answering: `reset`.
    let url = hang_up_server().await;
    let lines = run(&[
        "--url",
        &url,
        "--rate",
        "20",
        "--duration",
        "1s",
        "--bucket",
        "1s",
    ])
    .await;
    let s = summary(&lines, "main");
    assert_eq!(
        (s.count, s.errors.get("reset")),
        (20, Some(&20)),
        "{:?}",
        s.errors
    );

    let srv = Server::start().await;
    let slow = srv.url("/slow?ms=2000");
    let lines = run(&[
        "--url",
        &slow,
        "--rate",
        "10",
        "--duration",
        "1s",
        "--bucket",
        "1s",
        "--timeout",
        "300ms",
    ])
    .await;
    let s = summary(&lines, "main");
    assert_eq!(
        (s.count, s.errors.get("timeout")),
        (10, Some(&10)),
        "{:?}",
        s.errors
    );

    let fail = srv.url("/fail");
    let lines = run(&[
        "--url",
        &fail,
        "--rate",
        "10",
        "--duration",
        "1s",
        "--bucket",
        "1s",
    ])
    .await;
    let s = summary(&lines, "main");
    assert_eq!(s.errors.get("http_5xx"), Some(&10), "{:?}", s.errors);
    assert_eq!(s.status.get("503"), Some(&10));
    assert!(
        reqs(&lines, "main")
            .iter()
            .all(|r| r.code == Some(503) && !r.ok)
    );
    // --ok-status can make a 503 count as ok.
    let lines = run(&[
        "--url",
        &fail,
        "--rate",
        "10",
        "--duration",
        "1s",
        "--bucket",
        "1s",
        "--ok-status",
        "200-599",
    ])
    .await;
    assert_eq!(summary(&lines, "main").ok, 10);
}

/// A server that answers one request per connection without saying so and closes the
/// connection 30 ms later (an idle timeout shorter than the gap between requests): each request
/// must find its idle connection closed and open a new one, never fail on the dead one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_skips_idle_connections_the_server_has_closed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", l.local_addr().unwrap());
    let conns = Arc::new(AtomicU64::new(0));
    let c = conns.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            c.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut req = Vec::new();
                let mut buf = [0u8; 1024];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    .await;
                tokio::time::sleep(Duration::from_millis(30)).await;
            });
        }
    });
    let lines = run(&[
        "--url",
        &url,
        "--rate",
        "10",
        "--duration",
        "1s",
        "--bucket",
        "1s",
    ])
    .await;
    let s = summary(&lines, "main");
    assert_eq!((s.count, s.ok), (10, 10), "{:?}", s.errors);
    assert_eq!(conns.load(Ordering::SeqCst), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_never_holds_more_connections_than_max_in_flight() {
    let srv = Server::start().await;
    // Responses of varying length keep the pool busy: requests finish and start out of order,
    // some due while every connection is taken (dropped), some while one is just coming back.
    let url = srv.url("/jitter");
    let lines = run(&[
        "--url",
        &url,
        "--rate",
        "400",
        "--duration",
        "2s",
        "--bucket",
        "1s",
        "--max-in-flight",
        "4",
    ])
    .await;
    let s = summary(&lines, "main");
    assert_eq!(s.count + s.dropped, 800, "every arrival is sent or dropped");
    assert!(s.dropped > 0, "the cap was reached: {s:?}");
    assert_eq!(s.err, 0, "{:?}", s.errors);
    let conns = srv.state.conns.load(Ordering::SeqCst);
    assert!(
        (1..=4).contains(&conns),
        "{conns} connections accepted for {} requests with --max-in-flight 4",
        s.count
    );
}
