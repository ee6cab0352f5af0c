//! Probes: one HTTP GET or TCP connect with a timeout, and kubelet's result counting.
//!
//! [`Counter`] is kubelet's `worker.doProbe` bookkeeping: a result only takes effect after it
//! was seen `failureThreshold` (or `successThreshold`) times in a row, and the initial value
//! (readiness: failure, liveness: success, startup: unknown, so that either a success run or a
//! failure run decides it) holds until then.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Empty;
use tokio::net::TcpStream;

use crate::model::{Probe, ProbeAction};

/// The user agent kubelet sends (`kube-probe/<major>.<minor>`).
pub const USER_AGENT: &str = "kube-probe/1.30";

/// Consecutive-result counting for one probe.
#[derive(Debug, Clone)]
pub struct Counter {
    failure_threshold: u32,
    success_threshold: u32,
    last: Option<bool>,
    run: u32,
    /// The result in force (`None`: unknown, a startup probe's initial value).
    state: Option<bool>,
}

impl Counter {
    /// A counter whose initial value is `initial` (readiness: `false`, liveness: `true`).
    pub fn new(initial: bool, probe: &Probe) -> Self {
        Counter {
            failure_threshold: probe.failure_threshold.max(1),
            success_threshold: probe.success_threshold.max(1),
            last: None,
            run: 0,
            state: Some(initial),
        }
    }

    /// A startup probe's counter: its initial value is unknown (kubelet's `results.Unknown`), so
    /// `successThreshold` successes in a row start the container and `failureThreshold`
    /// failures in a row kill it, whichever run completes first.
    pub fn startup(probe: &Probe) -> Self {
        Counter {
            state: None,
            ..Counter::new(false, probe)
        }
    }

    /// Records one result; returns the new state when it changed.
    pub fn record(&mut self, ok: bool) -> Option<bool> {
        if self.last == Some(ok) {
            self.run = self.run.saturating_add(1);
        } else {
            self.last = Some(ok);
            self.run = 1;
        }
        let needed = if ok {
            self.success_threshold
        } else {
            self.failure_threshold
        };
        if self.run < needed || self.state == Some(ok) {
            return None;
        }
        self.state = Some(ok);
        Some(ok)
    }

    /// After a liveness/startup kill kubelet starts counting afresh.
    pub fn reset(&mut self, state: bool) {
        self.last = None;
        self.run = 0;
        self.state = Some(state);
    }
}

/// A failed probe; its message is the one Container Apps prints (`Probe of <Kind> failed with
/// ...`), `kind` being [`log_word`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeFailure {
    /// Container Apps reports a failed TCP connect as status code 1, whatever the socket error.
    #[error("Probe of {kind} failed with status code: 1")]
    Tcp { kind: &'static str },
    #[error("Probe of {kind} failed with {cause}")]
    Http {
        kind: &'static str,
        cause: HttpFailure,
    },
    #[error("Probe of {kind} failed with timeout in {secs} seconds.")]
    Timeout { kind: &'static str, secs: u64 },
}

/// Why an HTTP probe failed (printed inside [`ProbeFailure::Http`]'s message, so not a source).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpFailure {
    #[error("connection error: {0}")]
    Connection(String),
    #[error("invalid request: {0}")]
    Request(String),
    #[error("status code: {0}")]
    Status(u16),
}

/// Runs one probe against `host`, `port_override` replacing the probe's port when set.
pub async fn run_probe(
    probe: &Probe,
    host: IpAddr,
    port_override: Option<u16>,
) -> Result<(), ProbeFailure> {
    let kind = log_word(probe.kind);
    let secs = probe.timeout.as_secs();
    let fut = async {
        match &probe.action {
            ProbeAction::Tcp { port } => {
                let addr = SocketAddr::new(host, port_override.unwrap_or(*port));
                // Container Apps reports a failed TCP connect as status code 1, whatever the
                // socket error was.
                TcpStream::connect(addr)
                    .await
                    .map(|_| ())
                    .map_err(|_| ProbeFailure::Tcp { kind })
            }
            ProbeAction::Http {
                path,
                port,
                headers,
            } => {
                let addr = SocketAddr::new(host, port_override.unwrap_or(*port));
                http_get(addr, path, headers)
                    .await
                    .map_err(|cause| ProbeFailure::Http { kind, cause })
            }
        }
    };
    match tokio::time::timeout(probe.timeout, fut).await {
        Ok(r) => r,
        Err(_) => Err(ProbeFailure::Timeout { kind, secs }),
    }
}

async fn http_get(
    addr: SocketAddr,
    path: &str,
    headers: &[(String, String)],
) -> Result<(), HttpFailure> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| HttpFailure::Connection(e.to_string()))?;
    let io = hyper_util::rt::TokioIo::new(stream);
    let (mut sender, conn) = hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(io)
        .await
        .map_err(|e| HttpFailure::Connection(e.to_string()))?;
    let conn_task = tokio::spawn(conn);
    let path = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    };
    let mut req = http::Request::get(path)
        .header(http::header::HOST, addr.to_string())
        .header(http::header::USER_AGENT, USER_AGENT)
        .header(http::header::CONNECTION, "close");
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let req = req
        .body(Empty::<Bytes>::new())
        .map_err(|e| HttpFailure::Request(e.to_string()))?;
    let result = sender.send_request(req).await;
    conn_task.abort();
    let resp = result.map_err(|e| HttpFailure::Connection(e.to_string()))?;
    let code = resp.status().as_u16();
    if (200..400).contains(&code) {
        Ok(())
    } else {
        Err(HttpFailure::Status(code))
    }
}

/// The probe type as Container Apps writes it in `Probe of <word> failed ...` rows: `StartUp`,
/// `Readiness`, `Liveness`.
pub fn log_word(kind: crate::model::ProbeKind) -> &'static str {
    match kind {
        crate::model::ProbeKind::Startup => "StartUp",
        other => other.word(),
    }
}

/// Sleeps for `d` unless `stop` fires first; `true` when the sleep completed.
pub async fn sleep_or(d: Duration, stop: &tokio_util::sync::CancellationToken) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(d) => true,
        _ = stop.cancelled() => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ProbeKind;

    fn probe(fail: u32, succ: u32) -> Probe {
        Probe {
            kind: ProbeKind::Readiness,
            action: ProbeAction::Tcp { port: 1 },
            initial_delay: Duration::ZERO,
            period: Duration::from_secs(10),
            timeout: Duration::from_secs(1),
            failure_threshold: fail,
            success_threshold: succ,
            grace: None,
        }
    }

    #[test]
    fn readiness_starts_failed_and_needs_success_threshold() {
        let mut c = Counter::new(false, &probe(3, 2));
        assert_eq!(c.record(true), None);
        assert_eq!(c.record(true), Some(true));
        assert_eq!(c.record(false), None);
        assert_eq!(
            c.record(true),
            None,
            "a single success after a failure keeps the state"
        );
        assert_eq!(c.record(false), None);
        assert_eq!(c.record(false), None);
        assert_eq!(c.record(false), Some(false));
    }

    #[test]
    fn liveness_fails_after_threshold_consecutive() {
        let mut c = Counter::new(true, &probe(3, 1));
        assert_eq!(c.record(false), None);
        assert_eq!(c.record(false), None);
        assert_eq!(c.record(true), None);
        assert_eq!(c.record(false), None);
        assert_eq!(c.record(false), None);
        assert_eq!(c.record(false), Some(false));
        c.reset(true);
        assert_eq!(c.record(false), None);
    }

    #[test]
    fn startup_is_decided_by_whichever_run_reaches_its_threshold_first() {
        // Failures: the threshold-th failure in a row kills, one before it does not (the
        // default startup probe: 240 failures of 1 s each). A startup counter that began as
        // "failed" never changed state on failures, so a startup probe could never kill.
        let mut c = Counter::startup(&probe(240, 1));
        for i in 1..240 {
            assert_eq!(c.record(false), None, "failure {i} of 240");
        }
        assert_eq!(c.record(false), Some(false), "the 240th failure kills");
        // A success before the threshold starts the container, and resets the failure run.
        let mut c = Counter::startup(&probe(3, 1));
        assert_eq!(c.record(false), None);
        assert_eq!(c.record(false), None);
        assert_eq!(c.record(true), Some(true), "started");
        let mut c = Counter::startup(&probe(3, 2));
        assert_eq!(c.record(false), None);
        assert_eq!(c.record(false), None);
        assert_eq!(c.record(true), None, "one success of the two needed");
        assert_eq!(c.record(false), None, "the failure run starts again");
        assert_eq!(c.record(false), None);
        assert_eq!(c.record(false), Some(false));
    }

    #[tokio::test]
    async fn tcp_probe_refused_and_http_status() {
        // A port nobody listens on: connection refused.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let mut p = probe(3, 1);
        p.action = ProbeAction::Tcp { port };
        let e = run_probe(&p, IpAddr::from([127, 0, 0, 1]), None)
            .await
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Probe of Readiness failed with status code: 1"
        );
        p.kind = ProbeKind::Startup;
        let e = run_probe(&p, IpAddr::from([127, 0, 0, 1]), None)
            .await
            .unwrap_err();
        assert_eq!(e.to_string(), "Probe of StartUp failed with status code: 1");
        p.kind = ProbeKind::Readiness;

        // An HTTP server answering 503.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let app = axum::Router::new()
            .route(
                "/ready",
                axum::routing::get(|| async { (http::StatusCode::SERVICE_UNAVAILABLE, "no") }),
            )
            .route(
                "/ok",
                axum::routing::get(|| async { (http::StatusCode::FOUND, "moved") }),
            )
            .route(
                "/slow",
                axum::routing::get(|| async {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    "late"
                }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        p.action = ProbeAction::Http {
            path: "/ready".into(),
            port,
            headers: vec![],
        };
        let e = run_probe(&p, IpAddr::from([127, 0, 0, 1]), None)
            .await
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Probe of Readiness failed with status code: 503"
        );
        p.action = ProbeAction::Http {
            path: "/ok".into(),
            port,
            headers: vec![],
        };
        run_probe(&p, IpAddr::from([127, 0, 0, 1]), None)
            .await
            .unwrap();
        p.kind = ProbeKind::Liveness;
        p.action = ProbeAction::Http {
            path: "/slow".into(),
            port,
            headers: vec![],
        };
        let e = run_probe(&p, IpAddr::from([127, 0, 0, 1]), None)
            .await
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Probe of Liveness failed with timeout in 1 seconds."
        );
    }
}
