//! Startup: `bind-late` sleeps the delay and only then binds (probes see connection refused);
//! `bind-early` binds at once and flips `started` when the delay ends (probes see 503 meanwhile).

use std::net::SocketAddr;

use logline::line::SubjectEvent;
use tokio::net::TcpListener;

use crate::RunError;
use crate::config::StartupMode;
use crate::shutdown::Term;
use crate::state::AppState;

/// Binds the configured address and prints the `listening` line (with the real port: `PORT=0`
/// picks a free one).
pub async fn bind(state: &AppState) -> Result<TcpListener, RunError> {
    let cfg = state.cfg();
    let addr = SocketAddr::new(cfg.bind_address, cfg.port);
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| RunError::Bind { addr, source })?;
    let local = listener
        .local_addr()
        .map_err(|source| RunError::Bind { addr, source })?;
    tracing::info!(port = local.port(), address = %local, "listening");
    Ok(listener)
}

fn complete(state: &AppState, port: u16) {
    state.set_started();
    logline::log::emit(logline::line::SubjectLine {
        config: Some(serde_json::json!({
            "port": port,
            "startup_mode": state.cfg().startup_mode.name(),
            "startup_delay_s": state.cfg().startup_delay_seconds.as_secs_f64(),
            "uptime_s": state.uptime_s(),
        })),
        ..state.line(SubjectEvent::StartupComplete)
    });
}

/// Runs the startup phase. `Ok(None)` when a termination signal arrived before the socket was
/// bound (bind-late); the caller then exits without serving.
pub async fn start(state: &AppState, term: &mut Term) -> Result<Option<TcpListener>, RunError> {
    let delay = state.cfg().startup_delay_seconds;
    match state.cfg().startup_mode {
        StartupMode::BindLate => {
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = term.wait() => return Ok(None),
            }
            let listener = bind(state).await?;
            let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
            complete(state, port);
            Ok(Some(listener))
        }
        StartupMode::BindEarly => {
            let listener = bind(state).await?;
            let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
            let st = state.clone();
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                complete(&st, port);
            });
            Ok(Some(listener))
        }
    }
}
