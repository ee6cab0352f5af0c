//! Simulated failures: zombie (every handler hangs), deadlock (liveness hangs), crash (exit with a
//! code), reset; and the `X-Simulate-Token` guard over `/simulate/*` and `/admin/*`.

use std::time::Duration;

use axum::Json;
use axum::extract::{RawQuery, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use logline::line::SubjectEvent;

use crate::http::{error_response, query_param};
use crate::state::{AppState, Simulation};

/// How long a simulated hang lasts at most before the request proceeds.
pub const HANG_CAP: Duration = Duration::from_secs(300);

/// The header carrying the simulation token.
pub const TOKEN_HEADER: &str = "x-simulate-token";

/// Paths that keep answering while the process is a zombie.
pub const ZOMBIE_EXEMPT: [&str; 2] = ["/simulate/reset", "/status"];

/// Waits while `hung(simulation)` holds, until reset or [`HANG_CAP`].
pub async fn hang_while(state: &AppState, hung: impl Fn(&Simulation) -> bool) {
    let mut rx = state.0.sim.subscribe();
    let deadline = tokio::time::Instant::now() + HANG_CAP;
    loop {
        if !hung(&rx.borrow_and_update()) {
            return;
        }
        tokio::select! {
            changed = rx.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep_until(deadline) => return,
        }
    }
}

/// Middleware: while zombie, every request except [`ZOMBIE_EXEMPT`] hangs.
pub async fn zombie_gate(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if !ZOMBIE_EXEMPT.contains(&req.uri().path()) {
        hang_while(&state, |s| s.zombie).await;
    }
    next.run(req).await
}

/// Route layer: when `SIMULATE_TOKEN` is set, the header must carry it (401 otherwise).
pub async fn require_token(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if let Some(token) = state.cfg().simulate_token.as_ref()
        && !token.expose().is_empty()
    {
        let given = req.headers().get(TOKEN_HEADER).map(|v| v.as_bytes());
        if !given.is_some_and(|g| constant_time_eq(g, token.expose().as_bytes())) {
            return error_response(
                StatusCode::UNAUTHORIZED,
                "missing or wrong X-Simulate-Token header",
            );
        }
    }
    next.run(req).await
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn changed(state: &AppState, simulation: &str, detail: Option<String>) {
    logline::log::emit(logline::line::SubjectLine {
        simulation: Some(simulation.to_owned()),
        detail,
        ..state.line(SubjectEvent::SimulationChanged)
    });
}

fn sim_body(state: &AppState, simulation: &str) -> Response {
    let s = state.simulation();
    Json(serde_json::json!({
        "simulation": simulation,
        "zombie": s.zombie,
        "deadlocked": s.deadlocked,
    }))
    .into_response()
}

/// `POST /simulate/zombie`.
pub async fn zombie(State(state): State<AppState>) -> Response {
    state.0.sim.send_modify(|s| s.zombie = true);
    changed(&state, "zombie", None);
    sim_body(&state, "zombie")
}

/// `POST /simulate/deadlock`.
pub async fn deadlock(State(state): State<AppState>) -> Response {
    state.0.sim.send_modify(|s| s.deadlocked = true);
    changed(&state, "deadlock", None);
    sim_body(&state, "deadlock")
}

/// `POST /simulate/reset`: ends zombie and deadlock; hung requests proceed.
pub async fn reset(State(state): State<AppState>) -> Response {
    state.0.sim.send_replace(Simulation::default());
    changed(&state, "reset", None);
    sim_body(&state, "reset")
}

/// `POST /simulate/crash?code=N` (0..=255, default 1): answers, then exits with N.
pub async fn crash(State(state): State<AppState>, RawQuery(q): RawQuery) -> Response {
    let code = match query_param(q.as_deref(), "code") {
        None => 1,
        Some(v) => match v.trim().parse::<u8>() {
            Ok(c) => i32::from(c),
            Err(_) => {
                return error_response(
                    StatusCode::BAD_REQUEST,
                    &format!("code must be a whole number 0..=255, got {v:?}"),
                );
            }
        },
    };
    changed(&state, "crash", Some(format!("exit code {code}")));
    let exit = state.0.exit.clone();
    tokio::spawn(async move {
        // Let the answer reach the client first.
        tokio::time::sleep(Duration::from_millis(50)).await;
        exit(code);
    });
    Json(serde_json::json!({ "simulation": "crash", "code": code })).into_response()
}
