//! Batch mode (`APP_MODE=batch`): the process is one replica of a manual or scheduled job. It
//! works `WORK_MS` (a sleep), prints `BATCH_DONE` and exits `EXIT_CODE` (a non-zero code is a
//! failed replica, which the platform retries while `replicaRetryLimit` allows). A SIGTERM
//! during the work (a stopped execution, a `replicaTimeout`) prints `SIGTERM_RECEIVED`, then the
//! replica cleans up for `SHUTDOWN_DRAIN_SECONDS` (a sleep) and prints `SHUTDOWN_COMPLETE` before
//! it exits 143; a SIGKILL before that leaves the cleanup unfinished and its line unprinted. No
//! port is bound.

use std::future::Future;
use std::time::Duration;

use logline::line::SubjectEvent;
use tokio::time::Instant;

use crate::Exit;
use crate::shutdown::{IMMEDIATE_EXIT_CODE, log_complete, log_received};
use crate::state::AppState;

/// Runs the batch: work, exit; or SIGTERM, cleanup, exit 143.
pub async fn run(
    state: &AppState,
    term: impl Future<Output = &'static str> + Send + 'static,
) -> Exit {
    let start = Instant::now();
    let work = Duration::from_millis(state.cfg().work_ms);
    tokio::select! {
        () = tokio::time::sleep(work) => {
            let code = i32::from(state.cfg().exit_code);
            logline::log::emit(logline::line::SubjectLine {
                dur_ms: Some((start.elapsed().as_secs_f64() * 1e6).round() / 1000.0),
                detail: Some(format!("exit code {code}")),
                ..state.line(SubjectEvent::BatchDone)
            });
            Exit { code }
        }
        signal = term => {
            log_received(state, signal);
            let cleanup = state.cfg().shutdown_drain_seconds;
            tokio::time::sleep(cleanup).await;
            log_complete(
                state,
                &format!("batch cleanup of {} s done", cleanup.as_secs_f64()),
            );
            Exit { code: IMMEDIATE_EXIT_CODE }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{AppMode, Config};

    fn state(work_ms: u64, exit_code: u8, cleanup: Duration) -> AppState {
        let cfg = Config {
            app_mode: AppMode::Batch,
            work_ms,
            exit_code,
            shutdown_drain_seconds: cleanup,
            ..Config::defaults()
        };
        AppState::new(cfg, std::sync::Arc::new(|_| {}))
    }

    #[tokio::test(start_paused = true)]
    async fn the_work_ends_with_the_configured_exit_code() {
        let s = state(5_000, 3, Duration::ZERO);
        let exit = run(&s, std::future::pending()).await;
        assert_eq!(exit.code, 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_sigterm_during_the_work_cleans_up_then_exits_143() {
        let s = state(60_000, 0, Duration::from_secs(45));
        let t0 = Instant::now();
        let term = async {
            tokio::time::sleep(Duration::from_secs(2)).await;
            "SIGTERM"
        };
        let exit = run(&s, term).await;
        assert_eq!(exit.code, 143);
        assert_eq!(t0.elapsed(), Duration::from_secs(47));
    }
}
