//! The ARM API's listeners. One port speaks plain HTTP and, when localplane has its CA
//! ([`crate::tls`]), HTTPS as well: a connection whose first byte is a TLS handshake record
//! (0x16; an HTTP request starts with a method's letter) is served over TLS. The real Azure
//! clients call `https://`, our own tests and the containers' jobs plain `http://`.
//!
//! Every request carries the scheme its connection used ([`Scheme`]), so that the URLs
//! localplane hands out (an operation's `Azure-AsyncOperation` and `Location`) point back at the
//! scheme and host the client called ([`crate::handler::Origin`]).

use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// The first byte of a TLS record carrying a handshake (RFC 8446, `ContentType.handshake`).
const TLS_HANDSHAKE: u8 = 0x16;
/// How long a connection may take to send its first byte or finish the TLS handshake.
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);

/// The scheme of the connection a request came in on (a request extension).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// Serves `app` on `listener` until `stop` fires, then lets open connections finish their
/// requests. With `tls`, a connection that opens with a TLS handshake is served over it.
pub fn serve(
    listener: TcpListener,
    app: Router,
    tls: Option<tokio_rustls::TlsAcceptor>,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let graceful = GracefulShutdown::new();
        loop {
            let tcp = tokio::select! {
                _ = stop.cancelled() => break,
                r = listener.accept() => match r {
                    Ok((tcp, _)) => tcp,
                    Err(e) => {
                        // Out of descriptors and the like: wait a little rather than spin.
                        tracing::warn!(error = %e, "ARM API accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let watcher = graceful.watcher();
            let (app, tls) = (app.clone(), tls.clone());
            tokio::spawn(async move {
                let _ = tcp.set_nodelay(true);
                let scheme = match (&tls, first_byte(&tcp).await) {
                    (_, None) => return,
                    (Some(_), Some(TLS_HANDSHAKE)) => Scheme::Https,
                    _ => Scheme::Http,
                };
                let app = app.map_request(move |mut req: http::Request<hyper::body::Incoming>| {
                    req.extensions_mut().insert(scheme);
                    req
                });
                let svc = TowerToHyperService::new(app);
                let builder = auto::Builder::new(TokioExecutor::new());
                match (scheme, tls) {
                    (Scheme::Https, Some(acceptor)) => {
                        let Ok(Ok(stream)) =
                            tokio::time::timeout(HANDSHAKE_LIMIT, acceptor.accept(tcp)).await
                        else {
                            return;
                        };
                        let conn = builder.serve_connection(TokioIo::new(stream), svc);
                        let _ = watcher.watch(conn).await;
                    }
                    _ => {
                        let conn = builder.serve_connection(TokioIo::new(tcp), svc);
                        let _ = watcher.watch(conn).await;
                    }
                }
            });
        }
        drop(listener);
        graceful.shutdown().await;
    })
}

/// The connection's first byte, without consuming it; `None` when it closes or stays silent.
async fn first_byte(tcp: &TcpStream) -> Option<u8> {
    let mut b = [0u8; 1];
    match tokio::time::timeout(HANDSHAKE_LIMIT, tcp.peek(&mut b)).await {
        Ok(Ok(1)) => Some(b[0]),
        _ => None,
    }
}
