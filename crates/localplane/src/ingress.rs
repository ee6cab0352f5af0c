//! Ingress: one HTTP reverse proxy per app on 127.0.0.1, in front of the ready replicas.
//!
//! Round-robin over the endpoints the controller publishes in [`Routes`] (single revision
//! mode); upstream connections
//! are pooled keep-alive connections (hyper-util's pool, as Envoy keeps them); when no replica
//! is routable it answers Envoy's `503 no healthy upstream`, when the upstream dies before
//! answering Envoy's `503 upstream connect error or disconnect/reset before headers. reset
//! reason: ...`, and after 240 s Envoy's `504 upstream request timeout`.
//!
//! It also counts the app's requests in flight for the scaler ([`crate::scaler`]): a request
//! is in flight from its arrival until its response body has been sent. When the plane marks the
//! app as one that can scale to zero ([`Routes::set_hold`]) and no replica is routable, a request
//! is held (and the plane told through [`Routes::demand`]) until a replica is routable or the
//! request timeout runs out (`504 upstream request timeout`).
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
//! HttpOnly`, a session cookie) are ours.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::scaler::Observation;

/// Container Apps' (Envoy's) request timeout for HTTP ingress.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(240);

pub const NO_HEALTHY_UPSTREAM: &str = "no healthy upstream";
/// The session affinity cookie localplane's ingress sets (our name: Container Apps documents
/// cookie-based affinity without naming its cookie).
pub const AFFINITY_COOKIE: &str = "localplane-affinity";
pub const UPSTREAM_TIMEOUT: &str = "upstream request timeout";

/// The endpoints traffic goes to, replaced as a whole by the controller.
#[derive(Debug, Default)]
pub struct Routes {
    endpoints: RwLock<Arc<Vec<Backend>>>,
    next: AtomicUsize,
    /// Fired whenever the endpoints or the hold flag change (held requests look again).
    changed: Notify,
    /// Requests in flight now (held ones included).
    in_flight: AtomicU32,
    /// The most in flight at once since the last [`Routes::take_observation`].
    peak: AtomicU32,
    /// Requests arrived since the last [`Routes::take_observation`].
    arrived: AtomicU64,
    /// Whether a request finding no routable replica is held rather than answered 503.
    hold: AtomicBool,
    /// Session affinity by [`AFFINITY_COOKIE`] (single revision mode only).
    sticky: AtomicBool,
    /// Notified when a request is held: the plane activates the app.
    pub demand: Notify,
    /// Multiple revision mode: the weighted revisions and labels; `None` routes round-robin
    /// over `endpoints` (single revision mode).
    split: RwLock<Option<Arc<Split>>>,
    /// The smooth weighted round-robin scores and the per-revision round-robin positions of
    /// `split` (reset when it changes).
    split_state: Mutex<SplitState>,
}

/// Multiple revision mode's routing table: each revision with a weight (its ready replicas,
/// possibly none) and the labels that name a revision.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Split {
    pub groups: Vec<Group>,
    /// `(label, index into groups)`.
    pub labels: Vec<(String, usize)>,
}

/// One revision of a [`Split`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub revision: String,
    pub weight: u32,
    pub backends: Vec<Backend>,
}

#[derive(Debug, Default)]
struct SplitState {
    score: Vec<i64>,
    next: Vec<usize>,
}

/// Why a request is answered without an upstream at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// The picked revision has no routable replica: Envoy's `503 no healthy upstream`.
    NoHealthy,
    /// The label names no revision: a 404, as for a host no route matches.
    UnknownLabel,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backend {
    pub addr: SocketAddr,
    pub revision: String,
    pub replica: String,
}

impl Routes {
    pub fn set(&self, mut backends: Vec<Backend>) {
        backends.sort_by(|a, b| a.replica.cmp(&b.replica));
        if let Ok(mut e) = self.endpoints.write()
            && **e != backends
        {
            *e = Arc::new(backends);
            drop(e);
            self.changed.notify_waiters();
        }
    }

    /// Whether requests that find no routable replica wait (an app that scales to zero).
    pub fn set_hold(&self, hold: bool) {
        if self.hold.swap(hold, Ordering::SeqCst) != hold {
            self.changed.notify_waiters();
        }
    }

    /// Whether requests stick to a replica by the affinity cookie (`stickySessions`).
    pub fn set_sticky(&self, sticky: bool) {
        self.sticky.store(sticky, Ordering::SeqCst);
    }

    pub fn sticky(&self) -> bool {
        self.sticky.load(Ordering::SeqCst)
    }

    pub fn in_flight(&self) -> u32 {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// What the scaler reads at an evaluation: the peak in flight and the arrivals since the
    /// previous one (the peak restarts from what is in flight now).
    pub fn take_observation(&self) -> Observation {
        let now = self.in_flight.load(Ordering::SeqCst);
        Observation {
            peak_in_flight: self.peak.swap(now, Ordering::SeqCst).max(now),
            arrived: self.arrived.swap(0, Ordering::SeqCst),
        }
    }

    fn enter(self: &Arc<Self>) -> InFlight {
        let n = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(n, Ordering::SeqCst);
        self.arrived.fetch_add(1, Ordering::SeqCst);
        InFlight(self.clone())
    }

    pub fn snapshot(&self) -> Arc<Vec<Backend>> {
        self.endpoints.read().map(|e| e.clone()).unwrap_or_default()
    }

    /// Publishes multiple revision mode's table (`None`: single mode, round-robin over the
    /// endpoints); a changed table restarts the weighted round-robin from zero scores.
    pub fn set_split(&self, split: Option<Split>) {
        let Ok(mut cur) = self.split.write() else {
            return;
        };
        if cur.as_deref() == split.as_ref() {
            return;
        }
        let n = split.as_ref().map_or(0, |s| s.groups.len());
        *cur = split.map(Arc::new);
        drop(cur);
        if let Ok(mut st) = self.split_state.lock() {
            *st = SplitState {
                score: vec![0; n],
                next: vec![0; n],
            };
        }
        self.changed.notify_waiters();
    }

    /// The backend for a request (`label`: from a label host name; `affinity`: the replica its
    /// affinity cookie names): `Ok(None)` when nothing is routable (the request may be held),
    /// `Err` when it is answered at once.
    fn pick(
        &self,
        label: Option<&str>,
        affinity: Option<&str>,
    ) -> Result<Option<Backend>, Refusal> {
        let split = self.split.read().ok().and_then(|s| s.clone());
        let Some(split) = split else {
            // Single mode: labels are not acted on, a label host name routes as any other.
            let e = self.snapshot();
            if e.is_empty() {
                return Ok(None);
            }
            // Session affinity: the cookie's replica while it is routable, else round-robin.
            if self.sticky()
                && let Some(b) = affinity.and_then(|a| e.iter().find(|b| b.replica == a))
            {
                return Ok(Some(b.clone()));
            }
            let i = self.next.fetch_add(1, Ordering::Relaxed) % e.len();
            return Ok(e.get(i).cloned());
        };
        let Ok(mut st) = self.split_state.lock() else {
            return Ok(None);
        };
        let g = match label {
            Some(l) => match split.labels.iter().find(|(x, _)| x == l) {
                Some((_, g)) => *g,
                None => return Err(Refusal::UnknownLabel),
            },
            None => match swrr(&split.groups, &mut st.score) {
                Some(g) => g,
                None => return Ok(None),
            },
        };
        let (Some(group), Some(next)) = (split.groups.get(g), st.next.get_mut(g)) else {
            return Ok(None);
        };
        if group.backends.is_empty() {
            return Err(Refusal::NoHealthy);
        }
        let b = group.backends[*next % group.backends.len()].clone();
        *next = next.wrapping_add(1);
        Ok(Some(b))
    }
}

/// Smooth weighted round-robin (nginx): adds each group's weight to its score, picks the
/// highest score (the first on a tie) and subtracts the weights' sum from it. Over every
/// `sum(weights)` consecutive picks each group is picked exactly `weight` times.
fn swrr(groups: &[Group], score: &mut [i64]) -> Option<usize> {
    let total: i64 = groups.iter().map(|g| i64::from(g.weight)).sum();
    if total == 0 || score.len() != groups.len() {
        return None;
    }
    let mut best: Option<usize> = None;
    for (i, g) in groups.iter().enumerate() {
        score[i] += i64::from(g.weight);
        if g.weight > 0 && best.is_none_or(|b| score[i] > score[b]) {
            best = Some(i);
        }
    }
    let b = best?;
    score[b] -= total;
    Some(b)
}

type Body = BoxBody<Bytes, hyper::Error>;

/// One request counted in flight until dropped.
#[derive(Debug)]
struct InFlight(Arc<Routes>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A response body that keeps its request counted in flight until the body is done.
struct Counted {
    inner: Body,
    _in_flight: InFlight,
}

impl hyper::body::Body for Counted {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, hyper::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

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
    let client: Client<HttpConnector, Incoming> = Client::builder(TokioExecutor::new())
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

async fn proxy(
    mut req: Request<Incoming>,
    label: Option<&str>,
    routes: &Routes,
    client: &Client<HttpConnector, Incoming>,
    peer: SocketAddr,
) -> Response<Body> {
    // Envoy's route timeout covers the whole request, the wait for a replica included.
    let deadline = tokio::time::Instant::now() + REQUEST_TIMEOUT;
    let affinity = affinity_cookie(req.headers());
    let backend = loop {
        let changed = routes.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        match routes.pick(label, affinity.as_deref()) {
            Ok(Some(b)) => break b,
            Ok(None) => {}
            Err(Refusal::NoHealthy) => {
                return text(StatusCode::SERVICE_UNAVAILABLE, NO_HEALTHY_UPSTREAM);
            }
            Err(Refusal::UnknownLabel) => {
                return text(StatusCode::NOT_FOUND, "no revision with this label");
            }
        }
        if !routes.hold.load(Ordering::SeqCst) {
            return text(StatusCode::SERVICE_UNAVAILABLE, NO_HEALTHY_UPSTREAM);
        }
        routes.demand.notify_one();
        if tokio::time::timeout_at(deadline, changed).await.is_err() {
            return text(StatusCode::GATEWAY_TIMEOUT, UPSTREAM_TIMEOUT);
        }
    };
    let pq = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let uri = match format!("http://{}{}", backend.addr, pq).parse::<http::Uri>() {
        Ok(u) => u,
        Err(_) => return text(StatusCode::BAD_REQUEST, "bad request"),
    };
    *req.uri_mut() = uri;
    *req.version_mut() = http::Version::HTTP_11;
    // A sticky app's response names the replica that served it unless the cookie already did.
    let set_cookie = (routes.sticky() && affinity.as_deref() != Some(backend.replica.as_str()))
        .then(|| {
            HeaderValue::from_str(&format!(
                "{AFFINITY_COOKIE}={}; Path=/; HttpOnly",
                backend.replica
            ))
            .ok()
        })
        .flatten();
    let h = req.headers_mut();
    for name in HOP_BY_HOP {
        h.remove(*name);
    }
    if let Ok(v) = HeaderValue::from_str(&peer.ip().to_string()) {
        h.append("x-forwarded-for", v);
    }
    h.insert("x-forwarded-proto", HeaderValue::from_static("http"));
    match tokio::time::timeout_at(deadline, client.request(req)).await {
        Err(_) => text(StatusCode::GATEWAY_TIMEOUT, UPSTREAM_TIMEOUT),
        Ok(Err(e)) => {
            let reason = if e.is_connect() {
                "connection failure"
            } else {
                "connection termination"
            };
            text(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!(
                    "upstream connect error or disconnect/reset before headers. reset reason: {reason}"
                ),
            )
        }
        Ok(Ok(resp)) => {
            let (mut parts, body) = resp.into_parts();
            for name in HOP_BY_HOP {
                parts.headers.remove(*name);
            }
            if let Some(c) = set_cookie {
                parts.headers.append(http::header::SET_COOKIE, c);
            }
            Response::from_parts(parts, body.boxed())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn be(port: u16, revision: &str, replica: &str) -> Backend {
        Backend {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            revision: revision.into(),
            replica: replica.into(),
        }
    }

    fn group(revision: &str, weight: u32, backends: Vec<Backend>) -> Group {
        Group {
            revision: revision.into(),
            weight,
            backends,
        }
    }

    /// SWRR splits every 100 consecutive picks exactly by weight (from any starting point),
    /// round-robins inside a revision, and a weighted revision without replicas gets its share
    /// refused (503), not re-routed.
    #[test]
    fn weighted_split_is_exact_and_keeps_an_unready_share() {
        let routes = Routes::default();
        routes.set_split(Some(Split {
            groups: vec![
                group("a", 90, vec![be(1, "a", "a1"), be(2, "a", "a2")]),
                group("b", 10, vec![be(3, "b", "b1")]),
            ],
            labels: vec![("canary".into(), 1)],
        }));
        for _ in 0..37 {
            routes.pick(None, None).unwrap();
        }
        let mut count = std::collections::BTreeMap::new();
        for _ in 0..100 {
            let b = routes.pick(None, None).unwrap().unwrap();
            *count.entry(b.replica).or_insert(0i32) += 1;
        }
        assert_eq!(count["b1"], 10);
        assert_eq!(count["a1"] + count["a2"], 90);
        assert!((count["a1"] - count["a2"]).abs() <= 1, "{count:?}");
        // Labels: only the labelled revision; an unknown one is refused.
        for _ in 0..5 {
            assert_eq!(
                routes.pick(Some("canary"), None).unwrap().unwrap().replica,
                "b1"
            );
        }
        assert_eq!(routes.pick(Some("nope"), None), Err(Refusal::UnknownLabel));
        // The 10 % revision loses its replicas: its picks are 503s, the others still go to a.
        routes.set_split(Some(Split {
            groups: vec![
                group("a", 90, vec![be(1, "a", "a1")]),
                group("b", 10, vec![]),
            ],
            labels: vec![],
        }));
        let refused = (0..100)
            .filter(|_| routes.pick(None, None) == Err(Refusal::NoHealthy))
            .count();
        assert_eq!(refused, 10);
        // Single mode: no split, nothing routable, a label changes nothing.
        routes.set_split(None);
        assert_eq!(routes.pick(Some("canary"), None), Ok(None));
    }

    /// Session affinity: with `sticky` a cookie naming a routable replica keeps its requests
    /// there; a replica that is gone falls back to round-robin; without `sticky`, and in
    /// multiple revision mode, the cookie changes nothing.
    #[test]
    fn affinity_sticks_while_the_replica_is_routable() {
        let routes = Routes::default();
        routes.set(vec![be(1, "r", "r1"), be(2, "r", "r2"), be(3, "r", "r3")]);
        let picks = |n: usize, cookie: Option<&str>| -> std::collections::BTreeSet<String> {
            (0..n)
                .map(|_| routes.pick(None, cookie).unwrap().unwrap().replica)
                .collect()
        };
        assert_eq!(picks(3, Some("r2")).len(), 3, "not sticky: round-robin");
        routes.set_sticky(true);
        assert_eq!(picks(10, Some("r2")), ["r2".to_string()].into());
        assert_eq!(picks(3, None).len(), 3, "no cookie: round-robin");
        routes.set(vec![be(1, "r", "r1"), be(3, "r", "r3")]);
        assert_eq!(
            picks(4, Some("r2")),
            ["r1".to_string(), "r3".to_string()].into(),
            "a replica that is gone: round-robin over the others"
        );
        routes.set_split(Some(Split {
            groups: vec![group("r", 100, vec![be(1, "r", "r1"), be(3, "r", "r3")])],
            labels: vec![],
        }));
        assert_eq!(picks(4, Some("r3")).len(), 2, "multiple mode: not acted on");
    }

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
        // A dead upstream: Envoy's connect-failure body.
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
        assert!(body.starts_with("upstream connect error or disconnect/reset before headers. reset reason: connection failure"), "{body}");
        stop.cancel();
    }
}
