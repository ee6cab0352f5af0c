//! Ingress: one HTTP reverse proxy per app on 127.0.0.1, in front of the ready replicas.
//!
//! Round-robin over the endpoints the controller publishes in [`Routes`] (single revision
//! mode); upstream connections
//! are pooled keep-alive connections (hyper-util's pool, as Envoy keeps them); when no replica
//! is routable it answers Envoy's `503 no healthy upstream`, when the upstream dies before
//! answering Envoy's `503 upstream connect error or disconnect/reset before headers. reset
//! reason: ...`. A refused connect is retried once (Envoy's `retry_on: connect-failure` with its
//! default `num_retries` 1, after its jittered 25 ms back-off), to the replica the balancer picks
//! then; when the retry fails too the 503 reads `retried and the latest reset reason: connection
//! failure`, as users of Container Apps report it ([`Policy::connect_retries`]).
//!
//! The 240 s timeout is Envoy's stream idle timeout ([`TimeoutKind::Idle`], the default): the
//! timer restarts at every byte either way; when it runs out before the response started the
//! answer is `504 stream timeout` (`408 stream timeout` while the request body is incomplete),
//! after that the response is reset mid-body. So a response that keeps streaming is never cut,
//! and one silent for 240 s is. The tag `localplane.ingressTimeout = request` selects Envoy's
//! route timeout instead ([`TimeoutKind::Request`]): 240 s to the response headers,
//! `504 upstream request timeout`, a started response never cut.
//!
//! It also counts the app's requests in flight for the scaler ([`crate::scaler`]): a request
//! is in flight from its arrival until its response body has been sent. When the plane marks the
//! app as one that can scale to zero ([`Routes::set_hold`]) and no replica is routable, a request
//! is held (and the plane told through [`Routes::demand`]) until a replica is routable or the
//! timeout runs out (nothing moves while it is held: `504 stream timeout`).
//!
//! Multiple revision mode ([`Split`]): the controller publishes each revision with its traffic
//! weight, and a request goes to a revision by smooth weighted round-robin (nginx's algorithm:
//! each pick adds every weight to its revision's running score, takes the highest score and
//! subtracts the weights' sum from it), then round-robin over that revision's ready replicas.
//! Envoy (Container Apps' ingress) picks a weighted cluster per request at random by weight;
//! SWRR gives the same long-run shares but exactly: every `sum(weights)` consecutive requests
//! (100) split exactly by weight, so a test or a lab can pre-register an exact 90/10. A revision
//! with weight whose replicas are all unready gets its share answered as Envoy answers a
//! cluster without a healthy host, `503 no healthy upstream`: its share is not re-routed to
//! the other revisions. A request whose `Host` is a label host name, `<app>---<label>.<any>`
//! (Container Apps' per-label URL), goes only to the labelled revision (round-robin over its
//! ready replicas); an unknown label is a 404, as Envoy answers a host no route matches. In
//! single mode a label host name routes as any other request.
//!
//! Session affinity (`ingress.stickySessions.affinity: sticky`, single revision mode only, as
//! Learn's "Session affinity in Azure Container Apps" documents it; [`Routes::set_sticky`]): a
//! request carrying the cookie [`AFFINITY_COOKIE`] whose value names a replica that is routable
//! now goes to that replica; any other request is routed round-robin as usual and its response
//! (from the replica, not one the ingress answers itself) sets the cookie to the replica that
//! served it. So a client keeps its replica while that replica serves, and moves to another
//! (with a new cookie) once it is gone: Learn's "A client might be routed to a new replica if
//! the previous replica is no longer available". Learn says the affinity is cookie-based but
//! names no cookie: the name, the value (the replica name) and the attributes (`Path=/;
//! HttpOnly`, a session cookie) are ours.//!
//! Its parts: [`table`] (the routing table the controller publishes, and the pick of a backend
//! per request: round-robin, weighted split, labels, affinity) and [`body`] (the request and
//! response bodies that keep the stream timer and the in-flight count).

mod body;
mod table;

pub use table::{Backend, Group, Routes, Split};

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use body::{Activity, Counted, IdleBody, Replayable};
use table::Refusal;

/// Container Apps' (Envoy's) 240 s timeout for HTTP ingress: an idle timeout by default
/// ([`TimeoutKind`]).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(240);

pub const NO_HEALTHY_UPSTREAM: &str = "no healthy upstream";
/// The session affinity cookie localplane's ingress sets (our name: Container Apps documents
/// cookie-based affinity without naming its cookie).
pub const AFFINITY_COOKIE: &str = "localplane-affinity";
/// Envoy's body when its route timeout runs out ([`TimeoutKind::Request`]).
pub const UPSTREAM_TIMEOUT: &str = "upstream request timeout";
/// Envoy's body when its stream idle timeout runs out before a response started
/// ([`TimeoutKind::Idle`]): 14 bytes, what users of Container Apps report.
pub const STREAM_TIMEOUT: &str = "stream timeout";
/// Envoy's default base interval between retries (route `retry_back_off`).
pub const RETRY_BASE_INTERVAL: Duration = Duration::from_millis(25);

/// What the ingress's 240 s measures (tag [`crate::model::TAG_INGRESS_TIMEOUT`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutKind {
    /// Envoy's stream idle timeout: restarted by every byte in either direction; before a
    /// response started it answers `504 stream timeout` (`408` while the request is still
    /// incomplete), after it the stream is reset. A response that keeps streaming is never cut.
    Idle,
    /// Envoy's route timeout: from the request's arrival to the response headers, then
    /// `504 upstream request timeout`; a response that started is never cut.
    Request,
}

/// One app's ingress behaviour, from its `localplane.*` tags ([`Routes::set_policy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub timeout_kind: TimeoutKind,
    pub timeout: Duration,
    /// Retries of a failed connect (Envoy's `retry_on: connect-failure`; its default
    /// `num_retries` is 1); 0 answers the first connect failure with a 503.
    pub connect_retries: u32,
    /// The base of Envoy's jittered exponential back-off between retries.
    pub retry_base: Duration,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            timeout_kind: TimeoutKind::Idle,
            timeout: REQUEST_TIMEOUT,
            connect_retries: 1,
            retry_base: RETRY_BASE_INTERVAL,
        }
    }
}

/// A body error (the upstream's, or the idle timeout's reset).
type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Body = BoxBody<Bytes, BoxError>;

fn text(status: StatusCode, msg: &str) -> Response<Body> {
    let mut r = Response::new(
        Full::new(Bytes::from(msg.to_string()))
            .map_err(|never| match never {})
            .boxed(),
    );
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain"),
    );
    r
}

/// Finds the routes for a request's `Host` (the environment-wide ingress inside Docker).
pub type HostResolver = Arc<dyn Fn(&str) -> Option<Arc<Routes>> + Send + Sync>;

/// Which routes a listener serves: one app's, or any app's by `Host` header.
#[derive(Clone)]
pub enum Target {
    App(Arc<Routes>),
    ByHost(HostResolver),
}

/// Serves one app's proxy on `listener` until `stop` fires.
pub async fn serve(listener: TcpListener, routes: Arc<Routes>, stop: CancellationToken) {
    serve_target(listener, Target::App(routes), stop).await
}

/// Serves the proxy for `target` on `listener` until `stop` fires.
pub async fn serve_target(listener: TcpListener, target: Target, stop: CancellationToken) {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    connector.set_connect_timeout(Some(Duration::from_secs(5)));
    let client: Client<HttpConnector, Replayable> = Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(60))
        .pool_max_idle_per_host(256)
        .build(connector);
    loop {
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!(error = %e, "ingress accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stop.cancelled() => return,
        };
        let _ = stream.set_nodelay(true);
        let target = target.clone();
        let client = client.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
                let host = req
                    .headers()
                    .get(http::header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .or_else(|| req.uri().host())
                    .unwrap_or("");
                let (name, label) = crate::traffic::split_host(host);
                let label = label.map(str::to_string);
                let routes = match &target {
                    Target::App(r) => Some(r.clone()),
                    Target::ByHost(f) => f(name),
                };
                let client = client.clone();
                async move {
                    Ok::<_, Infallible>(match routes {
                        Some(routes) => {
                            let counted = routes.enter();
                            let resp = proxy(req, label.as_deref(), &routes, &client, peer).await;
                            let (parts, body) = resp.into_parts();
                            let body = Counted {
                                inner: body,
                                _in_flight: counted,
                            };
                            Response::from_parts(parts, body.boxed())
                        }
                        None => text(StatusCode::NOT_FOUND, "no app with this host name"),
                    })
                }
            });
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection(TokioIo::new(stream), svc);
            tokio::select! {
                _ = conn => {}
                _ = stop.cancelled() => {}
            }
        });
    }
}

/// The value of the [`AFFINITY_COOKIE`] among a request's `Cookie` headers (RFC 6265: pairs
/// separated by `;`; the first occurrence wins), if any.
fn affinity_cookie(headers: &http::HeaderMap) -> Option<String> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == AFFINITY_COOKIE)
        .map(|(_, value)| value.trim().trim_matches('"').to_string())
        .filter(|v| !v.is_empty())
}

const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
];

// Long on purpose: the request's whole path through the ingress (hold, connect with
// retries, the timer racing each wait) reads best in one place.
async fn proxy(
    req: Request<Incoming>,
    label: Option<&str>,
    routes: &Routes,
    client: &Client<HttpConnector, Replayable>,
    peer: SocketAddr,
) -> Response<Body> {
    let policy = routes.policy();
    let activity = Activity::new(&policy, hyper::body::Body::is_end_stream(req.body()));
    let affinity = affinity_cookie(req.headers());
    // The stream timer covers the whole request, the wait for a replica included: Envoy's
    // stream idle timer starts at the request's headers (so does its route timeout).
    let mut backend = tokio::select! {
        b = wait_for_backend(routes, label, affinity.as_deref()) => match b {
            Ok(b) => b,
            Err(resp) => return resp,
        },
        _ = activity.run_out() => return activity.reply(),
    };
    let (mut parts, body) = req.into_parts();
    let pq = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    parts.version = http::Version::HTTP_11;
    for name in HOP_BY_HOP {
        parts.headers.remove(*name);
    }
    if let Ok(v) = HeaderValue::from_str(&peer.ip().to_string()) {
        parts.headers.append("x-forwarded-for", v);
    }
    parts
        .headers
        .insert("x-forwarded-proto", HeaderValue::from_static("http"));
    let slot = Arc::new(Mutex::new(Some(body)));
    let mut retries = 0u32;
    let resp = loop {
        let Ok(uri) = format!("http://{}{}", backend.addr, pq).parse::<http::Uri>() else {
            return text(StatusCode::BAD_REQUEST, "bad request");
        };
        let mut up = Request::new(Replayable::new(&slot, &activity));
        *up.method_mut() = parts.method.clone();
        *up.uri_mut() = uri;
        *up.version_mut() = parts.version;
        *up.headers_mut() = parts.headers.clone();
        let r = tokio::select! {
            r = client.request(up) => r,
            _ = activity.run_out() => return activity.reply(),
        };
        let e = match r {
            Ok(resp) => break resp,
            Err(e) => e,
        };
        // Envoy's `retry_on: connect-failure`: a connect that failed sent nothing, so the
        // request (its body still in the slot) goes again, to the host the balancer picks now.
        let unsent = slot.lock().is_ok_and(|s| s.is_some());
        if e.is_connect() && unsent && retries < policy.connect_retries {
            retries += 1;
            tokio::select! {
                _ = tokio::time::sleep(backoff(policy.retry_base, retries)) => {}
                _ = activity.run_out() => return activity.reply(),
            }
            if let Ok(Some(b)) = routes.pick(label, affinity.as_deref()) {
                backend = b;
            }
            continue;
        }
        let reason = if e.is_connect() {
            "connection failure"
        } else {
            "connection termination"
        };
        let how = if retries > 0 {
            "retried and the latest reset reason"
        } else {
            "reset reason"
        };
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("upstream connect error or disconnect/reset before headers. {how}: {reason}"),
        );
    };
    activity.touch();
    let (mut parts, body) = resp.into_parts();
    for name in HOP_BY_HOP {
        parts.headers.remove(*name);
    }
    // A sticky app's response names the replica that served it unless the cookie already did.
    if routes.sticky()
        && affinity.as_deref() != Some(backend.replica.as_str())
        && let Ok(c) = HeaderValue::from_str(&format!(
            "{AFFINITY_COOKIE}={}; Path=/; HttpOnly",
            backend.replica
        ))
    {
        parts.headers.append(http::header::SET_COOKIE, c);
    }
    let body = match activity.kind {
        TimeoutKind::Idle => IdleBody::new(body, activity).boxed(),
        TimeoutKind::Request => body.map_err(BoxError::from).boxed(),
    };
    Response::from_parts(parts, body)
}

/// The backend for a request, waiting while the app holds requests (scale from zero) and
/// nothing is routable; `Err` is the answer when it cannot be routed.
async fn wait_for_backend(
    routes: &Routes,
    label: Option<&str>,
    affinity: Option<&str>,
) -> Result<Backend, Response<Body>> {
    loop {
        let changed = routes.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        match routes.pick(label, affinity) {
            Ok(Some(b)) => return Ok(b),
            Ok(None) => {}
            Err(Refusal::NoHealthy) => {
                return Err(text(StatusCode::SERVICE_UNAVAILABLE, NO_HEALTHY_UPSTREAM));
            }
            Err(Refusal::UnknownLabel) => {
                return Err(text(StatusCode::NOT_FOUND, "no revision with this label"));
            }
        }
        if !routes.hold.load(Ordering::SeqCst) {
            return Err(text(StatusCode::SERVICE_UNAVAILABLE, NO_HEALTHY_UPSTREAM));
        }
        routes.demand.notify_one();
        changed.await;
    }
}

/// Envoy's fully jittered exponential back-off before retry `n` (from 1): uniform in
/// `[0, base * (2^n - 1))`, capped at 10 × base (its default `max_interval`).
fn backoff(base: Duration, n: u32) -> Duration {
    use rand::Rng;
    let factor = (1u64 << n.min(16)).saturating_sub(1);
    let cap = base.saturating_mul(10);
    let hi = base
        .saturating_mul(u32::try_from(factor).unwrap_or(u32::MAX))
        .min(cap);
    if hi.is_zero() {
        return hi;
    }
    hi.mul_f64(rand::rng().random_range(0.0..1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_affinity_cookie_is_found_among_others() {
        let mut h = http::HeaderMap::new();
        assert_eq!(affinity_cookie(&h), None);
        h.append(http::header::COOKIE, HeaderValue::from_static("a=1; b=2"));
        assert_eq!(affinity_cookie(&h), None);
        h.append(
            http::header::COOKIE,
            HeaderValue::from_static("x=y;localplane-affinity=app--v1-abc-def ; z=1"),
        );
        assert_eq!(affinity_cookie(&h).as_deref(), Some("app--v1-abc-def"));
        let mut h = http::HeaderMap::new();
        h.append(
            http::header::COOKIE,
            HeaderValue::from_static("localplane-affinity="),
        );
        assert_eq!(affinity_cookie(&h), None);
    }

    async fn backend(tag: &'static str) -> SocketAddr {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let a = l.local_addr().unwrap();
        let app = axum::Router::new().route("/", axum::routing::get(move || async move { tag }));
        tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
        a
    }

    #[tokio::test]
    async fn round_robin_and_no_healthy_upstream() {
        let routes = Arc::new(Routes::default());
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let stop = CancellationToken::new();
        tokio::spawn(serve(l, routes.clone(), stop.clone()));
        let get = || async move {
            let s = tokio::net::TcpStream::connect(addr).await.unwrap();
            let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(s))
                .await
                .unwrap();
            tokio::spawn(conn);
            let r = tx
                .send_request(
                    Request::get("/")
                        .header("host", "x")
                        .body(http_body_util::Empty::<Bytes>::new())
                        .unwrap(),
                )
                .await
                .unwrap();
            let st = r.status();
            let b = r.into_body().collect().await.unwrap().to_bytes();
            (st, String::from_utf8_lossy(&b).to_string())
        };
        assert_eq!(
            get().await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                NO_HEALTHY_UPSTREAM.to_string()
            )
        );
        let a = backend("a").await;
        let b = backend("b").await;
        routes.set(vec![
            Backend {
                addr: a,
                revision: "r".into(),
                replica: "1".into(),
            },
            Backend {
                addr: b,
                revision: "r".into(),
                replica: "2".into(),
            },
        ]);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..4 {
            let (st, body) = get().await;
            assert_eq!(st, StatusCode::OK);
            seen.insert(body);
        }
        assert_eq!(seen.len(), 2);
        // A dead upstream: Envoy's connect-failure body, after its retry.
        let dead = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        routes.set(vec![Backend {
            addr: dead,
            revision: "r".into(),
            replica: "3".into(),
        }]);
        let (st, body) = get().await;
        assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE);
        assert!(body.starts_with("upstream connect error or disconnect/reset before headers. retried and the latest reset reason: connection failure"), "{body}");
        stop.cancel();
    }

    /// A proxy for `routes` on a free port.
    async fn ingress(routes: &Arc<Routes>) -> (SocketAddr, CancellationToken) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let stop = CancellationToken::new();
        tokio::spawn(serve(l, routes.clone(), stop.clone()));
        (addr, stop)
    }

    /// An upstream on a free port serving `app` at `/`.
    async fn upstream(app: axum::Router) -> SocketAddr {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let a = l.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
        a
    }

    /// A port nothing listens on (connects to it are refused).
    fn dead_port() -> SocketAddr {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    }

    /// `GET /` through the ingress: the status, and the body or the error that ended it.
    async fn fetch(addr: SocketAddr) -> (StatusCode, Result<String, String>) {
        let s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(s))
            .await
            .unwrap();
        tokio::spawn(conn);
        let r = tx
            .send_request(
                Request::get("/")
                    .header("host", "x")
                    .body(http_body_util::Empty::<Bytes>::new())
                    .unwrap(),
            )
            .await
            .unwrap();
        let st = r.status();
        let body = r
            .into_body()
            .collect()
            .await
            .map(|b| String::from_utf8_lossy(&b.to_bytes()).to_string())
            .map_err(|e| e.to_string());
        (st, body)
    }

    /// A response that sends its headers, then `chunks` bytes `every` apart after `first`.
    fn streaming(first: Duration, every: Duration, chunks: usize) -> axum::Router {
        axum::Router::new().route(
            "/",
            axum::routing::get(move || async move {
                let s = futures::stream::unfold(0usize, move |i| async move {
                    if i == chunks {
                        return None;
                    }
                    tokio::time::sleep(if i == 0 { first } else { every }).await;
                    Some((Ok::<_, Infallible>(Bytes::from_static(b".")), i + 1))
                });
                axum::body::Body::from_stream(s)
            }),
        )
    }

    /// A response whose headers come after `d`.
    fn late_headers(d: Duration) -> axum::Router {
        axum::Router::new().route(
            "/",
            axum::routing::get(move || async move {
                tokio::time::sleep(d).await;
                "late"
            }),
        )
    }

    fn one(addr: SocketAddr, replica: &str) -> Backend {
        Backend {
            addr,
            revision: "r".into(),
            replica: replica.into(),
        }
    }

    /// The idle timeout scaled down: 400 ms stands for the platform's 240 s.
    const IDLE: Duration = Duration::from_millis(400);

    fn idle_policy() -> Policy {
        Policy {
            timeout: IDLE,
            ..Policy::default()
        }
    }

    /// The stream idle timeout (the default): a response that keeps sending a byte at half the
    /// timeout for three timeouts survives (the 60 s-every-60 s-for-300 s case), one whose
    /// stream goes quiet for longer than the timeout after its headers is reset mid-body.
    #[tokio::test]
    async fn idle_timeout_spares_a_streaming_response_and_resets_a_quiet_one() {
        assert_eq!(Policy::default().timeout_kind, TimeoutKind::Idle);
        assert_eq!(Policy::default().timeout, Duration::from_secs(240));
        let routes = Arc::new(Routes::default());
        routes.set_policy(idle_policy());
        let (addr, stop) = ingress(&routes).await;
        let half = IDLE / 2;
        routes.set(vec![one(upstream(streaming(half, half, 6)).await, "1")]);
        assert_eq!(fetch(addr).await, (StatusCode::OK, Ok("......".into())));
        // Quiet for twice the timeout after the headers and one byte: reset, not a 504.
        routes.set(vec![one(
            upstream(streaming(Duration::ZERO, IDLE * 2, 2)).await,
            "1",
        )]);
        let (st, body) = fetch(addr).await;
        assert_eq!(st, StatusCode::OK, "the headers had gone out");
        assert!(body.is_err(), "the stream is reset: {body:?}");
        stop.cancel();
    }

    /// Before any response: headers later than the idle timeout get Envoy's `504 stream timeout`
    /// (14 bytes); headers within it are served, however close to it.
    #[tokio::test]
    async fn idle_timeout_before_the_headers_is_a_504_stream_timeout() {
        let routes = Arc::new(Routes::default());
        routes.set_policy(idle_policy());
        let (addr, stop) = ingress(&routes).await;
        routes.set(vec![one(upstream(late_headers(IDLE / 2)).await, "1")]);
        assert_eq!(fetch(addr).await, (StatusCode::OK, Ok("late".into())));
        routes.set(vec![one(upstream(late_headers(IDLE * 2)).await, "1")]);
        let (st, body) = fetch(addr).await;
        assert_eq!(
            (st, body.as_deref()),
            (StatusCode::GATEWAY_TIMEOUT, Ok("stream timeout"))
        );
        assert_eq!(STREAM_TIMEOUT.len(), 14, "the body users report");
        // A held request (scale from zero) that no replica comes for: the same 504.
        routes.set(vec![]);
        routes.set_hold(true);
        let (st, body) = fetch(addr).await;
        assert_eq!(
            (st, body.as_deref()),
            (StatusCode::GATEWAY_TIMEOUT, Ok("stream timeout"))
        );
        stop.cancel();
    }

    /// A request whose body stops arriving: Envoy's `408 stream timeout` (the request was not
    /// received whole), not a 504.
    #[tokio::test]
    async fn idle_timeout_on_an_incomplete_request_is_a_408() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let routes = Arc::new(Routes::default());
        routes.set_policy(idle_policy());
        let (addr, stop) = ingress(&routes).await;
        let reads_all = axum::Router::new().route(
            "/",
            axum::routing::post(|body: Bytes| async move { body.len().to_string() }),
        );
        routes.set(vec![one(upstream(reads_all).await, "1")]);
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\nabc")
            .await
            .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 512];
        let read = async {
            while !String::from_utf8_lossy(&got).contains(STREAM_TIMEOUT) {
                let n = s.read(&mut buf).await.unwrap();
                assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
                got.extend_from_slice(&buf[..n]);
            }
        };
        tokio::time::timeout(Duration::from_secs(10), read)
            .await
            .unwrap();
        let got = String::from_utf8_lossy(&got);
        assert!(got.starts_with("HTTP/1.1 408"), "{got}");
        stop.cancel();
    }

    /// The other reported behaviour (tag `localplane.ingressTimeout` = `request`): Envoy's route
    /// timeout, to the headers only: late headers get `504 upstream request timeout`, and a
    /// response that started is never cut, however quiet.
    #[tokio::test]
    async fn request_timeout_cuts_late_headers_and_never_a_started_response() {
        let routes = Arc::new(Routes::default());
        routes.set_policy(Policy {
            timeout_kind: TimeoutKind::Request,
            ..idle_policy()
        });
        let (addr, stop) = ingress(&routes).await;
        routes.set(vec![one(upstream(late_headers(IDLE * 2)).await, "1")]);
        let (st, body) = fetch(addr).await;
        assert_eq!(
            (st, body.as_deref()),
            (StatusCode::GATEWAY_TIMEOUT, Ok(UPSTREAM_TIMEOUT))
        );
        routes.set(vec![one(
            upstream(streaming(Duration::ZERO, IDLE * 2, 2)).await,
            "1",
        )]);
        assert_eq!(fetch(addr).await, (StatusCode::OK, Ok("..".into())));
        stop.cancel();
    }

    /// Envoy's connect-failure retry (default on, one retry): a request whose first connect is
    /// refused is served by the host the retry picks; with every host refusing, the 503 says
    /// it retried; with retries off (0), the first refusal is the answer.
    #[tokio::test]
    async fn a_refused_connect_is_retried_once() {
        let routes = Arc::new(Routes::default());
        let (addr, stop) = ingress(&routes).await;
        let alive = upstream(late_headers(Duration::ZERO)).await;
        // Round-robin from the first replica ("1", refusing): the retry goes to "2".
        routes.set(vec![one(dead_port(), "1"), one(alive, "2")]);
        assert_eq!(fetch(addr).await, (StatusCode::OK, Ok("late".into())));
        routes.set(vec![one(dead_port(), "1")]);
        let (st, body) = fetch(addr).await;
        assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            body.as_deref(),
            Ok(
                "upstream connect error or disconnect/reset before headers. retried and the latest reset reason: connection failure"
            )
        );
        routes.set_policy(Policy {
            connect_retries: 0,
            ..Policy::default()
        });
        let (st, body) = fetch(addr).await;
        assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            body.as_deref(),
            Ok(
                "upstream connect error or disconnect/reset before headers. reset reason: connection failure"
            )
        );
        stop.cancel();
    }

    #[test]
    fn backoff_is_jittered_below_envoys_bound() {
        let base = Duration::from_millis(25);
        for _ in 0..100 {
            assert!(backoff(base, 1) < base);
            assert!(backoff(base, 2) < base * 3);
            assert!(backoff(base, 9) < base * 10, "capped at max_interval");
        }
        assert_eq!(backoff(Duration::ZERO, 1), Duration::ZERO);
    }
}
