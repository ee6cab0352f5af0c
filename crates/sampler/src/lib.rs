//! sampler: the perturbation sampler (image `perturbation-sampler`) and the window loop `audit`
//! shares.
//!
//! For one perturbation window it prints a `PerturbationWindowMarker` (`start`), then at every
//! tick (`start + k * interval`) a `RevisionStateSample` per revision and a
//! `ReplicaInventorySample` per replica of every app in `CONTAINER_APP_NAMES`, then the `end`
//! marker, and exits 0. ARM faults become `SamplerError` lines and the cadence holds; see
//! [`window`] for the schedule's rules.
//!
//! - [`config`]: flags and the original env names ([`config::ArmArgs`] is shared with audit).
//! - [`window`]: the tick loop ([`window::run_window`]), the one piece of code both samplers run.
//! - [`tick`]: one tick's ARM calls and the lines they become.
//! - [`sink`]: stdout, or memory for tests.
//!
//! `main.rs` only parses, sets up logging and maps [`run`]'s result to an exit code; tests drive
//! [`run_with`] in-process.

pub mod config;
pub mod sink;
pub mod tick;
pub mod window;

use std::future::Future;

use arm::{ArmClient, ArmError, Scope, TokenSource};
pub use config::{ArmArgs, ConfigError, SamplerConfig};
pub use window::{Outcome, Window, run_window};

/// The `sampler` value of the perturbation sampler's lines.
pub const SAMPLER_NAME: &str = "perturbation-sampler";

/// The exit code of a run cut short by SIGTERM/SIGINT (128 + 15), so a kill stays visible.
pub const EXIT_INTERRUPTED: u8 = 143;

/// Why a run could not start. Once the window has started, failures are lines, not errors.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The cause is in the message, so no `#[source]`/`#[from]` (a chain would print it twice).
    #[error("ARM client: {0}")]
    Arm(ArmError),
}

impl From<ArmError> for SetupError {
    fn from(e: ArmError) -> SetupError {
        SetupError::Arm(e)
    }
}

/// The ARM client `args` describe: token source chosen by `ARM_TOKEN_SOURCE` (the identity
/// variables present are logged by name).
pub fn build_client(args: &ArmArgs) -> Result<ArmClient, ArmError> {
    let token = TokenSource::build(
        args.arm_token_source,
        &args.identity_env(),
        &args.arm_endpoint,
        arm::token::DEFAULT_SCOPE,
    )?;
    ArmClient::new(args.client_config(), token)
}

/// The window the perturbation sampler's configuration describes.
pub fn window_of(cfg: &SamplerConfig) -> Result<Window, ConfigError> {
    let apps = cfg.arm.apps();
    let jobs = cfg.arm.jobs();
    config::validate(&apps, &jobs, cfg.interval, cfg.duration)?;
    Ok(Window {
        scope: Scope::new(&cfg.arm.subscription_id, &cfg.arm.resource_group),
        apps,
        jobs,
        interval: cfg.interval,
        duration: cfg.duration,
        ctx: tick::LineContext {
            sampler: SAMPLER_NAME.to_owned(),
            run_id: cfg.run_id.clone(),
            perturbation_id: cfg.perturbation_id.clone(),
        },
    })
}

/// Runs the sampler with this client, sink and shutdown signal (tests call this).
pub async fn run_with(
    cfg: &SamplerConfig,
    client: &ArmClient,
    sink: &dyn sink::Sink,
    shutdown: impl Future<Output = ()>,
) -> Result<Outcome, SetupError> {
    let window = window_of(cfg)?;
    Ok(run_window(&window, client, sink, shutdown).await)
}

/// Runs the sampler as the binary does: client from the environment, lines on stdout,
/// SIGTERM/SIGINT end the window early.
pub async fn run(cfg: SamplerConfig) -> Result<Outcome, SetupError> {
    let window = window_of(&cfg)?;
    let client = build_client(&cfg.arm)?;
    Ok(run_window(&window, &client, &sink::Stdout, shutdown_signal()).await)
}

/// The exit code for an outcome: 0 for a window that ran to its end (errors included: they
/// are in the lines), 143 when a signal cut it short.
pub fn exit_code(outcome: &Outcome) -> u8 {
    if outcome.interrupted {
        EXIT_INTERRUPTED
    } else {
        0
    }
}

/// Completes on SIGTERM or SIGINT. If the handlers cannot be installed it never completes (the
/// window then simply runs to its end).
pub async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let term = signal(SignalKind::terminate());
    let int = signal(SignalKind::interrupt());
    match (term, int) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
    tracing::info!("shutdown signal received: ending the window");
}

/// JSON-lines logging on stdout (logline's layer). azure_identity and azure_core are held at
/// `warn` unless `RUST_LOG` says otherwise: their `info` lines would print the user-assigned
/// client id, and we log identity variables by name only.
pub fn init_logging(component: &'static str) {
    use tracing_subscriber::prelude::*;
    let filter = logline::log::filter_from_env(
        "info,azure_identity=warn,azure_core=warn,typespec_client_core=warn",
    );
    let _ = tracing_subscriber::registry()
        .with(logline::log::JsonLinesLayer::new(component))
        .with(filter)
        .try_init();
}
