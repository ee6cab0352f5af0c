//! Shutdown on SIGTERM (and SIGINT, for people at a terminal), by `SHUTDOWN_MODE`:
//! - `immediate`: return at once with exit code 143 (as a process killed by SIGTERM); the binary
//!   exits, so in-flight requests and keep-alive connections die.
//! - `graceful`: stop accepting, close idle keep-alive connections, finish in-flight requests,
//!   exit 0.
//! - `drain`: keep serving `SHUTDOWN_DRAIN_SECONDS` with `Connection: close` on every response and
//!   readiness answering 503 `draining`, then graceful.

use std::future::{Future, IntoFuture};

use axum::Router;
use logline::line::SubjectEvent;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::config::ShutdownMode;
use crate::state::AppState;
use crate::{Exit, RunError};

/// Exit code for `immediate`: 128 + SIGTERM, what a shell or Docker reports for a process the
/// signal killed.
pub const IMMEDIATE_EXIT_CODE: i32 = 143;

/// The termination signal, once it has arrived (its name, e.g. `SIGTERM`).
#[derive(Clone)]
pub struct Term(watch::Receiver<Option<&'static str>>);

impl Term {
    /// Watches `signal` (which resolves with the signal's name) from a background task.
    pub fn spawn(signal: impl Future<Output = &'static str> + Send + 'static) -> Self {
        let (tx, rx) = watch::channel(None);
        tokio::spawn(async move {
            let name = signal.await;
            let _ = tx.send(Some(name));
            // Keep the sender alive so receivers never see a closed channel.
            std::future::pending::<()>().await;
        });
        Term(rx)
    }

    /// Resolves when the signal has arrived (at once if it already has).
    pub async fn wait(&mut self) -> &'static str {
        let got = self.0.wait_for(Option::is_some).await.map(|v| *v);
        match got {
            Ok(v) => v.unwrap_or("SIGTERM"),
            // Sender gone: never happens (see spawn); treat as "never signalled".
            Err(_) => std::future::pending().await,
        }
    }
}

/// SIGTERM or SIGINT. Installed before startup so a signal during the startup delay is ours.
pub fn os_signals() -> std::io::Result<impl Future<Output = &'static str> + Send + 'static> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        }
    })
}

/// Prints SIGTERM_RECEIVED.
pub fn log_received(state: &AppState, signal: &str) {
    logline::log::emit(logline::line::SubjectLine {
        shutdown_mode: Some(state.cfg().shutdown_mode.name()),
        inflight: Some(state.inflight()),
        detail: Some(signal.to_owned()),
        ..state.line(SubjectEvent::SigtermReceived)
    });
}

/// Prints SHUTDOWN_COMPLETE.
pub fn log_complete(state: &AppState, detail: &str) {
    logline::log::emit(logline::line::SubjectLine {
        shutdown_mode: Some(state.cfg().shutdown_mode.name()),
        inflight: Some(state.inflight()),
        detail: Some(detail.to_owned()),
        ..state.line(SubjectEvent::ShutdownComplete)
    });
}

/// Serves `app` on `listener` until the termination signal, then shuts down by mode.
pub async fn serve(
    state: &AppState,
    listener: TcpListener,
    app: Router,
    mut term: Term,
) -> Result<Exit, RunError> {
    let serve = axum::serve(listener, app);
    match state.cfg().shutdown_mode {
        ShutdownMode::Immediate => {
            tokio::select! {
                r = serve.into_future() => {
                    r.map_err(RunError::Serve)?;
                    Ok(Exit { code: 0 })
                }
                signal = term.wait() => {
                    log_received(state, signal);
                    log_complete(state, "immediate: in-flight requests and connections dropped");
                    Ok(Exit { code: IMMEDIATE_EXIT_CODE })
                }
            }
        }
        mode @ (ShutdownMode::Graceful | ShutdownMode::Drain) => {
            let st = state.clone();
            let signal = async move {
                let signal = term.wait().await;
                log_received(&st, signal);
                if mode == ShutdownMode::Drain {
                    st.set_draining();
                    tokio::time::sleep(st.cfg().shutdown_drain_seconds).await;
                }
            };
            serve
                .with_graceful_shutdown(signal)
                .await
                .map_err(RunError::Serve)?;
            log_complete(state, "in-flight requests finished");
            Ok(Exit { code: 0 })
        }
    }
}
