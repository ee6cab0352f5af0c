//! audit: the scheduled audit sampler (image `audit`).
//!
//! The original audit job looped forever, so every cron execution was killed at the job's
//! `replicaTimeout` and shown as Failed. This one samples for a bounded window
//! (`AUDIT_WINDOW_SECONDS`, default a safe margin under `REPLICA_TIMEOUT_SECONDS`: 200 s for
//! 240) and exits 0, so executions end Succeeded; on SIGTERM it writes its end marker and exits
//! 143, so a real kill stays visible as a failure.
//!
//! The sampling itself is the perturbation sampler's window loop
//! ([`sampler::window::run_window`]): the same absolute-time ticks, the same lines, with
//! `sampler: "audit"` and `run_id` from `RUN_LABEL`.

use std::time::Duration;

use arm::Scope;
use clap::Parser;
use logline::config::parse_duration;
use sampler::sink::{Sink, Stdout};
use sampler::tick::LineContext;
use sampler::{ArmArgs, ConfigError, Outcome, SetupError, Window, run_window};

/// The `sampler` value of audit lines.
pub const SAMPLER_NAME: &str = "audit";

/// The audit sampler's configuration.
#[derive(Parser, Clone, Debug)]
#[command(
    name = "audit",
    version,
    about = "Samples revision and replica state through ARM for a bounded window (a scheduled job's run), as JSON lines."
)]
pub struct AuditConfig {
    #[command(flatten)]
    pub arm: ArmArgs,
    /// Written into every line as `run_id`.
    #[arg(long, env = "RUN_LABEL")]
    pub run_label: Option<String>,
    /// Written into every line as `perturbation_id`.
    #[arg(long, env = "PERTURBATION_ID")]
    pub perturbation_id: Option<String>,
    /// Time between ticks.
    #[arg(long, env = "SAMPLE_INTERVAL_SECONDS", default_value = "30", value_parser = parse_duration)]
    pub interval: Duration,
    /// How long to sample before exiting 0 [default: replica timeout minus a margin].
    #[arg(long, env = "AUDIT_WINDOW_SECONDS", value_parser = parse_duration)]
    pub window: Option<Duration>,
    /// The job's `replicaTimeout`, from which the default window is derived.
    #[arg(long, env = "REPLICA_TIMEOUT_SECONDS", default_value = "240", value_parser = parse_duration)]
    pub replica_timeout: Duration,
}

/// The default window for a job's `replicaTimeout`: the timeout minus a margin of a sixth of it,
/// at least 20 s (240 s -> 200 s, 60 s -> 40 s), so start-up, the last tick and the exit fit.
pub fn default_window(replica_timeout: Duration) -> Duration {
    let margin = (replica_timeout / 6).max(Duration::from_secs(20));
    replica_timeout.saturating_sub(margin)
}

impl AuditConfig {
    /// The window length in force.
    pub fn window_length(&self) -> Duration {
        self.window
            .unwrap_or_else(|| default_window(self.replica_timeout))
    }

    /// The sampling window this configuration describes.
    pub fn window(&self) -> Result<Window, ConfigError> {
        let apps = self.arm.apps();
        let jobs = self.arm.jobs();
        let duration = self.window_length();
        sampler::config::validate(&apps, &jobs, self.interval, duration)?;
        Ok(Window {
            scope: Scope::new(&self.arm.subscription_id, &self.arm.resource_group),
            apps,
            jobs,
            interval: self.interval,
            duration,
            ctx: LineContext {
                sampler: SAMPLER_NAME.to_owned(),
                run_id: self.run_label.clone(),
                perturbation_id: self.perturbation_id.clone(),
            },
        })
    }
}

/// Runs audit with this client, sink and shutdown signal (tests call this).
pub async fn run_with(
    cfg: &AuditConfig,
    client: &arm::ArmClient,
    sink: &dyn Sink,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<Outcome, SetupError> {
    let window = cfg.window()?;
    Ok(run_window(&window, client, sink, shutdown).await)
}

/// Runs audit as the binary does: client from the environment, lines on stdout, SIGTERM or
/// SIGINT end the window early (exit 143, see [`sampler::exit_code`]).
pub async fn run(cfg: AuditConfig) -> Result<Outcome, SetupError> {
    let window = cfg.window()?;
    tracing::info!(
        window_s = window.duration.as_secs_f64(),
        interval_s = window.interval.as_secs_f64(),
        "audit window"
    );
    let client = sampler::build_client(&cfg.arm)?;
    Ok(run_window(&window, &client, &Stdout, sampler::shutdown_signal()).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &[&str]) -> AuditConfig {
        let base = [
            "audit",
            "--subscription-id",
            "s",
            "--resource-group",
            "rg",
            "--container-app-names",
            "a",
        ];
        AuditConfig::try_parse_from(base.iter().chain(extra)).unwrap()
    }

    #[test]
    fn the_default_window_leaves_a_margin_under_the_replica_timeout() {
        let s = Duration::from_secs;
        assert_eq!(default_window(s(240)), s(200));
        assert_eq!(default_window(s(60)), s(40));
        assert_eq!(default_window(s(1800)), s(1500));
        assert_eq!(default_window(s(10)), s(0));
    }

    #[test]
    fn defaults_are_the_original_audits_plus_a_bounded_window() {
        let c = parse(&[]);
        assert_eq!(c.interval, Duration::from_secs(30));
        assert_eq!(c.window_length(), Duration::from_secs(200));
        let w = c.window().unwrap();
        assert_eq!(w.ticks(), 6);
        assert_eq!(w.ctx.sampler, "audit");
        let c = parse(&["--window", "90", "--run-label", "nightly"]);
        assert_eq!(c.window_length(), Duration::from_secs(90));
        assert_eq!(c.window().unwrap().ctx.run_id.as_deref(), Some("nightly"));
        let c = parse(&["--replica-timeout", "10"]);
        assert!(
            c.window().is_err(),
            "a window shorter than one interval is refused"
        );
    }
}
