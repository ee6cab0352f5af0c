//! `MAX_CONCURRENCY`: one semaphore over every handler, probes included (a single gunicorn worker
//! with one thread is `1`). Requests beyond the cap wait for a permit; none is rejected. Also
//! counts the requests being handled (`inflight`).

use std::sync::atomic::Ordering;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use crate::state::AppState;

struct InflightGuard(AppState);

impl Drop for InflightGuard {
    fn drop(&mut self) {
        self.0.0.inflight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Middleware: waits for a permit (when capped), then counts the request as in flight until its
/// response is produced or the client goes away.
pub async fn limit(State(state): State<AppState>, req: Request, next: Next) -> Response {
    // The semaphore is never closed, so acquire only fails if it were; then serve uncapped
    // rather than fail the request.
    let _permit = match &state.0.semaphore {
        Some(sem) => sem.clone().acquire_owned().await.ok(),
        None => None,
    };
    state.0.inflight.fetch_add(1, Ordering::SeqCst);
    let _guard = InflightGuard(state.clone());
    next.run(req).await
}
