//! subject: the probelab app under test. One axum server covering every app of the original
//! labs: startup modes, probe endpoints, dependency checks (and a dependency mode to check
//! against), slow and CPU-heavy work, memory it holds (`/alloc`), simulated zombie / deadlock /
//! crash, a concurrency cap, three shutdown behaviours, and a work queue with its worker mode.
//!
//! [`run`] is the whole program (the binary only parses [`Config`]); [`run_with`] lets tests
//! supply the termination signal and learn the bound address; [`routes::router`] is the router
//! alone, for in-process `oneshot` tests.
//!
//! | endpoint | answers |
//! |---|---|
//! | `GET /` | `{status_code, status, app, revision, replica, generation, ...}`; 503 `warming` before startup; the `CAPACITY_RPS` model (see [`capacity`]), `REQUEST_DELAY_MS` sleep, `WORK_MS` CPU burn |
//! | `GET /startup`, `/healthz`, `/ready`, `/readyz`, `/live`, `/livez` | probes: see [`probes`] |
//! | `GET /delay?seconds=N`, `/slow?seconds=N`, `/cpu?seconds=N` | sleep / burn N s (`0..=MAX_REQUEST_SECONDS`) |
//! | `GET /alloc?mib=N` | allocates N more MiB, writes every page so it is resident, keeps it; `{allocated_mib, held_mib, ...}`; N a whole number `0..=MAX_ALLOC_MIB`, the total held at most `MAX_ALLOC_MIB` (default 8192): see [`memory`] |
//! | `GET /stream?seconds=N&interval=M` | 200 and its headers at once, then one byte `.` every M s, the body ending at N s (both up to `MAX_REQUEST_SECONDS`): see [`stream`] |
//! | `GET /status[?code=N]` | `{zombie, deadlocked, inflight, started, ready, draining, uptime_s, revision, replica, generation}`, with status N (200..=599) |
//! | `GET /dependency/health` (main mode) | checks `DEPENDENCY_URL`: 200 or 503 with `{ok, target, status, dur_ms, error}`; 409 when unset |
//! | `GET /health` (dependency mode) | 200 `healthy`, or 503 `unhealthy` / `failed` per `DEPENDENCY_HEALTHY`, `DEPENDENCY_DELAY_MS`, `DEPENDENCY_FAIL_RATE` |
//! | `GET`/`POST /admin/dependency` (dependency mode, token) | read / change `{healthy, delay_ms, fail_rate}` at run time |
//! | `POST /simulate/{zombie,deadlock,reset,crash?code=N}` (token) | see [`simulate`] |
//! | `POST /queue?items=N`, `GET /queue`, `POST /queue/take` | an in-memory work queue: enqueue N (default 1, answering their ids in `items`), `{length, enqueued, taken}`, take the oldest item once (`{id, length}` or 204): see [`queue`] |
//!
//! `APP_MODE=queue-worker` serves nothing: the process takes one item from `QUEUE_URL`'s queue,
//! works `WORK_MS`, and exits 0 (an event-driven job's replica): see [`worker`].
//! `APP_MODE=batch` serves nothing either: it works `WORK_MS` and exits `EXIT_CODE`, cleaning up
//! `SHUTDOWN_DRAIN_SECONDS` after a SIGTERM (a manual or scheduled job's replica): see [`batch`].
//!
//! Anything else: 404 / 405 with a JSON `{error}`; bad parameters: 400 with a JSON `{error}`.

pub mod batch;
pub mod capacity;
pub mod concurrency;
pub mod config;
pub mod dependency;
pub mod dependency_client;
pub mod http;
pub mod memory;
pub mod probes;
pub mod queue;
pub mod routes;
pub mod shutdown;
pub mod simulate;
pub mod startup;
pub mod state;
pub mod stream;
pub mod worker;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use logline::line::SubjectEvent;

pub use config::Config;
pub use state::{AppState, ExitFn};

/// How the process should exit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exit {
    pub code: i32,
}

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The cause is in the message, so no `#[source]`/`#[from]` (a chain would print it twice).
    #[error("invalid configuration: {0}")]
    Config(config::ConfigError),
    #[error("cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot install the signal handlers")]
    Signals(#[source] std::io::Error),
    #[error("server failed")]
    Serve(#[source] std::io::Error),
}

impl From<config::ConfigError> for RunError {
    fn from(e: config::ConfigError) -> RunError {
        RunError::Config(e)
    }
}

/// What the embedding program provides besides the configuration.
pub struct Hooks {
    /// Told the bound address once the socket listens.
    pub on_listening: Option<tokio::sync::oneshot::Sender<SocketAddr>>,
    /// Called by `/simulate/crash` with the exit code.
    pub exit: ExitFn,
}

impl Hooks {
    /// The real process: crash means `std::process::exit`.
    pub fn process() -> Self {
        Hooks {
            on_listening: None,
            exit: Arc::new(|code| std::process::exit(code)),
        }
    }
}

/// Runs the subject until SIGTERM/SIGINT; returns the exit code to use. With
/// `SHUTDOWN_MODE=immediate` the caller must exit the process at once (connections are still
/// open when this returns).
pub async fn run(cfg: Config) -> Result<Exit, RunError> {
    let signals = shutdown::os_signals().map_err(RunError::Signals)?;
    run_with(cfg, signals, Hooks::process()).await
}

/// [`run`] with the termination signal and hooks supplied by the caller.
pub async fn run_with(
    cfg: Config,
    term: impl Future<Output = &'static str> + Send + 'static,
    hooks: Hooks,
) -> Result<Exit, RunError> {
    cfg.validate()?;
    let state = AppState::new(cfg, hooks.exit);
    logline::log::emit(logline::line::SubjectLine {
        config: Some(state.cfg().to_log_json()),
        ..state.line(SubjectEvent::BootStart)
    });
    match state.cfg().app_mode {
        config::AppMode::QueueWorker => return Ok(worker::run(&state, term).await),
        config::AppMode::Batch => return Ok(batch::run(&state, term).await),
        config::AppMode::Main | config::AppMode::Dependency => {}
    }
    let mut term = shutdown::Term::spawn(term);
    let Some(listener) = startup::start(&state, &mut term).await? else {
        let signal = term.wait().await;
        shutdown::log_received(&state, signal);
        shutdown::log_complete(&state, "signalled before startup completed");
        return Ok(Exit { code: 0 });
    };
    if let (Some(tx), Ok(addr)) = (hooks.on_listening, listener.local_addr()) {
        let _ = tx.send(addr);
    }
    let app = routes::router(state.clone());
    shutdown::serve(&state, listener, app, term).await
}
