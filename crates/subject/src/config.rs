//! Typed configuration: every setting is a flag and an env var (the original labs' names).
//!
//! `Config::parse()` (clap) reads flags and env alike; [`Config::validate`] checks the
//! combinations clap cannot see, and runs before any port is bound.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use clap::{ArgAction, Parser, ValueEnum};
use logline::config::{hostname, parse_bool, parse_duration, parse_fraction};

use crate::capacity::Sharing;

pub const ENV_PORT: &str = "PORT";
pub const DEFAULT_PORT: u16 = 8080;
pub const DEFAULT_APP_NAME: &str = "subject";
pub const DEFAULT_DEPENDENCY_TIMEOUT_MS: u64 = 2000;
pub const DEFAULT_MAX_REQUEST_SECONDS: f64 = 3600.0;
/// `MAX_ALLOC_MIB` by default: the most memory a Consumption replica can have (8 GiB).
pub const DEFAULT_MAX_ALLOC_MIB: u64 = 8192;
/// The largest `MAX_ALLOC_MIB` accepted (64 GiB).
pub const MAX_ALLOC_MIB_LIMIT: u64 = 65536;
pub const DEFAULT_SHUTDOWN_DRAIN_SECONDS: &str = "10";

/// What the process serves besides the common endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AppMode {
    /// The app under test (`/`, probes, slow work, `/dependency/health`).
    Main,
    /// A dependency other replicas check: `/health` plus `POST /admin/dependency`.
    Dependency,
    /// An event-driven job's replica: take one item from `QUEUE_URL`, work `WORK_MS`, exit 0
    /// (binds no port).
    QueueWorker,
    /// A job replica running one batch: work `WORK_MS`, exit `EXIT_CODE`; on SIGTERM, clean up
    /// for `SHUTDOWN_DRAIN_SECONDS`, then exit 143 (binds no port).
    Batch,
}

/// When the listening socket appears.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StartupMode {
    /// Sleep `STARTUP_DELAY_SECONDS`, then bind: probes see connection refused meanwhile.
    BindLate,
    /// Bind at once; probes answer 503 `starting` (and `/` 503 `warming`) until the delay ends.
    BindEarly,
}

/// What SIGTERM does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ShutdownMode {
    /// Exit at once: in-flight requests and keep-alive connections die.
    Immediate,
    /// Stop accepting, finish in-flight requests, close idle connections, exit.
    Graceful,
    /// Keep serving `SHUTDOWN_DRAIN_SECONDS` with `Connection: close` and readiness 503
    /// `draining`, then graceful.
    Drain,
}

/// Which requests print a `REQUEST_END` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogRequests {
    All,
    /// Status 400 and above.
    Errors,
    None,
}

macro_rules! value_enum_name {
    ($($ty:ty),*) => {$(
        impl $ty {
            /// The name as written in env vars and flags.
            pub fn name(&self) -> String {
                self.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default()
            }
        }
    )*};
}
value_enum_name!(AppMode, StartupMode, ShutdownMode, LogRequests);

/// A secret string: `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    /// The secret itself, for comparison only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

fn parse_secret(s: &str) -> Result<Secret, std::convert::Infallible> {
    Ok(Secret(s.to_owned()))
}

/// A value clap's parsers below reject (clap prints it after the flag or variable it names).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("{0:?} is not a concurrency cap: use a positive whole number, or 0 / unlimited")]
    Concurrency(String),
    #[error(
        "{0:?} is not a capacity: use requests per second, a positive number up to 1000000 \
         (unset the variable for no capacity model)"
    )]
    Capacity(String),
    #[error("{0:?} is not a coefficient of variation: use a number from 0 (constant work) to 10")]
    Cv(String),
    #[error("{0:?} is not a positive number of seconds")]
    Seconds(String),
    #[error("{0:?} is not a memory cap: use a whole number of MiB from 1 to 65536")]
    AllocMib(String),
}

/// `MAX_CONCURRENCY`: a positive number, or `0` / `unlimited` / empty for no cap (returned as 0).
pub fn parse_max_concurrency(s: &str) -> Result<usize, ValueError> {
    let t = s.trim();
    if t.is_empty() || t.eq_ignore_ascii_case("unlimited") {
        return Ok(0);
    }
    match t.parse::<usize>() {
        Ok(n) if n <= tokio::sync::Semaphore::MAX_PERMITS => Ok(n),
        _ => Err(ValueError::Concurrency(s.to_owned())),
    }
}

/// `CAPACITY_RPS`: a positive finite rate, at most 1,000,000 per second.
pub fn parse_capacity_rps(s: &str) -> Result<f64, ValueError> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 1e6 => Ok(v),
        _ => Err(ValueError::Capacity(s.to_owned())),
    }
}

/// `CAPACITY_CV`: a coefficient of variation, `0..=10`.
pub fn parse_cv(s: &str) -> Result<f64, ValueError> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=crate::capacity::MAX_CV).contains(&v) => Ok(v),
        _ => Err(ValueError::Cv(s.to_owned())),
    }
}

/// `MAX_ALLOC_MIB`: a whole number of MiB, `1..=MAX_ALLOC_MIB_LIMIT`.
pub fn parse_alloc_mib(s: &str) -> Result<u64, ValueError> {
    match s.trim().parse::<u64>() {
        Ok(v) if (1..=MAX_ALLOC_MIB_LIMIT).contains(&v) => Ok(v),
        _ => Err(ValueError::AllocMib(s.to_owned())),
    }
}

/// `MAX_REQUEST_SECONDS`: a positive finite number of seconds.
pub fn parse_positive_seconds(s: &str) -> Result<f64, ValueError> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 1e9 => Ok(v),
        _ => Err(ValueError::Seconds(s.to_owned())),
    }
}

/// The subject app's configuration. Flags are the env names in kebab case
/// (`STARTUP_DELAY_SECONDS` is `--startup-delay-seconds`).
#[derive(Clone, Debug, Parser)]
#[command(name = "subject", version, about = "The probelab app under test.")]
pub struct Config {
    /// Port to listen on; 0 picks a free port (printed in the `listening` log line).
    #[arg(long, env = ENV_PORT, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Address to listen on.
    #[arg(long, env = "BIND_ADDRESS", default_value_t = IpAddr::V4(Ipv4Addr::UNSPECIFIED))]
    pub bind_address: IpAddr,
    #[arg(long, env = "APP_MODE", value_enum, default_value_t = AppMode::Main)]
    pub app_mode: AppMode,
    /// The app's name in its lines [`CONTAINER_APP_JOB_NAME`, then `subject`].
    #[arg(long, env = "APP_NAME")]
    pub app_name: Option<String>,
    /// A job replica's job (Container Apps sets it): the lines' app when `APP_NAME` is unset.
    #[arg(long, env = "CONTAINER_APP_JOB_NAME")]
    pub container_app_job_name: Option<String>,
    /// A job replica's execution (Container Apps sets it): the lines' revision when
    /// `CONTAINER_APP_REVISION` is unset.
    #[arg(long, env = "CONTAINER_APP_JOB_EXECUTION_NAME")]
    pub container_app_job_execution_name: Option<String>,
    /// Revision identity (Container Apps sets it).
    #[arg(long, env = "CONTAINER_APP_REVISION")]
    pub container_app_revision: Option<String>,
    /// Replica identity (Container Apps sets it).
    #[arg(long, env = "CONTAINER_APP_REPLICA_NAME")]
    pub container_app_replica_name: Option<String>,
    /// Fallback revision identity when `CONTAINER_APP_REVISION` is unset.
    #[arg(long, env = "REVISION")]
    pub revision: Option<String>,
    /// Echoed back in `generation` and `X-Generation`.
    #[arg(long, env = "ROLLOUT_GENERATION", default_value = "")]
    pub rollout_generation: String,

    /// Startup delay (`10`, `10s`, `1500ms`).
    #[arg(long, env = "STARTUP_DELAY_SECONDS", default_value = "0", value_parser = parse_duration)]
    pub startup_delay_seconds: Duration,
    #[arg(long, env = "STARTUP_MODE", value_enum, default_value_t = StartupMode::BindLate)]
    pub startup_mode: StartupMode,
    /// During bind-early warm-up, `/healthz` and `/ready(z)` answer 200 while `/` answers 503.
    #[arg(long, env = "WARM_READY_LIES", default_value = "false", value_parser = parse_bool, action = ArgAction::Set)]
    pub warm_ready_lies: bool,

    /// Sleep per `/` request, milliseconds.
    #[arg(long, env = "REQUEST_DELAY_MS", default_value_t = 0)]
    pub request_delay_ms: u64,
    /// CPU burn per `/` request, milliseconds (queue-worker mode: how long the item's work
    /// takes, a sleep).
    #[arg(long, env = "WORK_MS", default_value_t = 0)]
    pub work_ms: u64,
    /// Batch mode: the exit code once the work is done (0 to 255; not 0: a failed replica).
    #[arg(long, env = "EXIT_CODE", default_value_t = 0, value_parser = clap::value_parser!(u8))]
    pub exit_code: u8,
    /// Fraction of `/` requests this replica answers `500 injected failure` (0 to 1), spread
    /// evenly rather than drawn at random: the k-th request fails when ⌊k·rate⌋ > ⌊(k−1)·rate⌋,
    /// so 0.2 fails every 5th. A canary's partial failure whose share of errors is exact, so a
    /// lab's tolerance judges the platform's traffic split, not the dice.
    #[arg(long, env = "FAIL_RATE", default_value = "0.0", value_parser = parse_fraction)]
    pub fail_rate: f64,

    /// A finite-capacity server for `/`, made of sleeps (no CPU): the replica does this many
    /// mean requests' worth of work per second, shared as CAPACITY_SHARING says, each request's
    /// work varying as CAPACITY_CV says. It stands for the original lab's one Python process per
    /// replica, whose latency grew long before its errors did; unset (the default): no model,
    /// `/` answers at once. Probes and the other endpoints are not in the model.
    #[arg(long, env = "CAPACITY_RPS", value_parser = parse_capacity_rps)]
    pub capacity_rps: Option<f64>,
    /// How requests share the capacity: `ps` (each of n requests in the model progresses at 1/n
    /// of it, like threads sharing one interpreter lock) or `fifo` (one at a time in arrival
    /// order, like a single worker).
    #[arg(long, env = "CAPACITY_SHARING", value_enum, default_value_t = Sharing::Ps)]
    pub capacity_sharing: Sharing,
    /// Coefficient of variation of one request's work (standard deviation / mean, 0..=10): 0
    /// constant, 1 exponential, above 1 a two-phase hyperexponential. With constant-rate arrivals
    /// and constant work nothing queues below capacity; the variability is what makes a queue.
    #[arg(long, env = "CAPACITY_CV", default_value = "1", value_parser = parse_cv)]
    pub capacity_cv: f64,

    /// `/ready` and `/readyz` also call `DEPENDENCY_URL`.
    #[arg(long, env = "READINESS_CHECK_DEPENDENCY", default_value = "false", value_parser = parse_bool, action = ArgAction::Set)]
    pub readiness_check_dependency: bool,
    /// `/live` and `/livez` also call `DEPENDENCY_URL`.
    #[arg(long, env = "LIVENESS_CHECK_DEPENDENCY", default_value = "false", value_parser = parse_bool, action = ArgAction::Set)]
    pub liveness_check_dependency: bool,
    /// The dependency's health URL (plain `http://`).
    #[arg(long, env = "DEPENDENCY_URL")]
    pub dependency_url: Option<String>,
    #[arg(long, env = "DEPENDENCY_TIMEOUT_MS", default_value_t = DEFAULT_DEPENDENCY_TIMEOUT_MS)]
    pub dependency_timeout_ms: u64,
    /// `host:port`: `/livez` also does a TCP connect check to it.
    #[arg(long, env = "DEPENDENCY_HOST")]
    pub dependency_host: Option<String>,
    /// Seconds of blocking work inside `/live` and `/livez`.
    #[arg(long, env = "LIVENESS_IO_DELAY", default_value = "0", value_parser = parse_duration)]
    pub liveness_io_delay: Duration,

    /// Cap on `seconds` for `/delay`, `/slow` and `/cpu`.
    #[arg(long, env = "MAX_REQUEST_SECONDS", default_value_t = DEFAULT_MAX_REQUEST_SECONDS, value_parser = parse_positive_seconds)]
    pub max_request_seconds: f64,
    /// Cap on the memory `/alloc` holds in all, MiB.
    #[arg(long, env = "MAX_ALLOC_MIB", default_value_t = DEFAULT_MAX_ALLOC_MIB, value_parser = parse_alloc_mib)]
    pub max_alloc_mib: u64,

    /// Dependency mode: does `/health` answer 200?
    #[arg(long, env = "DEPENDENCY_HEALTHY", default_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub dependency_healthy: bool,
    /// Dependency mode: sleep before `/health` answers, milliseconds.
    #[arg(long, env = "DEPENDENCY_DELAY_MS", default_value_t = 0)]
    pub dependency_delay_ms: u64,
    /// Dependency mode: fraction of `/health` calls answering 503.
    #[arg(long, env = "DEPENDENCY_FAIL_RATE", default_value = "0.0", value_parser = parse_fraction)]
    pub dependency_fail_rate: f64,

    /// When set, `/simulate/*` and `/admin/*` need header `X-Simulate-Token` with this value.
    #[arg(long, env = "SIMULATE_TOKEN", value_parser = parse_secret, hide_env_values = true)]
    pub simulate_token: Option<Secret>,

    /// Requests handled at once (0 or `unlimited`: no cap); the rest wait.
    #[arg(long, env = "MAX_CONCURRENCY", default_value = "unlimited", value_parser = parse_max_concurrency)]
    pub max_concurrency: usize,

    #[arg(long, env = "SHUTDOWN_MODE", value_enum, default_value_t = ShutdownMode::Graceful)]
    pub shutdown_mode: ShutdownMode,
    /// Drain length for `SHUTDOWN_MODE=drain`; batch mode: how long its cleanup after SIGTERM
    /// takes.
    #[arg(long, env = "SHUTDOWN_DRAIN_SECONDS", default_value = DEFAULT_SHUTDOWN_DRAIN_SECONDS, value_parser = parse_duration)]
    pub shutdown_drain_seconds: Duration,

    #[arg(long, env = "LOG_REQUESTS", value_enum, default_value_t = LogRequests::Errors)]
    pub log_requests: LogRequests,

    /// Queue-worker mode: the base URL of the subject holding the queue (plain `http://`); the
    /// worker calls `POST {QUEUE_URL}/queue/take`.
    #[arg(long, env = "QUEUE_URL")]
    pub queue_url: Option<String>,
}

/// A configuration that clap accepted but that cannot work.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    #[error("{0} is true but DEPENDENCY_URL is not set")]
    DependencyUrlMissing(&'static str),
    #[error("DEPENDENCY_URL {0:?} is not a plain http:// URL with a host (https is not supported)")]
    DependencyUrl(String),
    #[error("DEPENDENCY_HOST {0:?} is not host:port")]
    DependencyHost(String),
    #[error("DEPENDENCY_TIMEOUT_MS must be at least 1")]
    DependencyTimeout,
    #[error("APP_MODE=queue-worker needs QUEUE_URL")]
    QueueUrlMissing,
    #[error("QUEUE_URL {0:?} is not a plain http:// URL with a host (https is not supported)")]
    QueueUrl(String),
}

/// Who this process is: printed in every line and every response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub app: String,
    pub revision: String,
    pub replica: String,
    pub generation: String,
}

fn non_empty(s: &Option<String>) -> Option<String> {
    s.as_ref()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

impl Config {
    /// The defaults, as if no flag and no env var were given (for tests and embedding).
    pub fn defaults() -> Self {
        Config {
            port: DEFAULT_PORT,
            bind_address: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            app_mode: AppMode::Main,
            app_name: None,
            container_app_job_name: None,
            container_app_job_execution_name: None,
            container_app_revision: None,
            container_app_replica_name: None,
            revision: None,
            rollout_generation: String::new(),
            startup_delay_seconds: Duration::ZERO,
            startup_mode: StartupMode::BindLate,
            warm_ready_lies: false,
            request_delay_ms: 0,
            work_ms: 0,
            exit_code: 0,
            fail_rate: 0.0,
            capacity_rps: None,
            capacity_sharing: Sharing::Ps,
            capacity_cv: 1.0,
            readiness_check_dependency: false,
            liveness_check_dependency: false,
            dependency_url: None,
            dependency_timeout_ms: DEFAULT_DEPENDENCY_TIMEOUT_MS,
            dependency_host: None,
            liveness_io_delay: Duration::ZERO,
            max_request_seconds: DEFAULT_MAX_REQUEST_SECONDS,
            max_alloc_mib: DEFAULT_MAX_ALLOC_MIB,
            dependency_healthy: true,
            dependency_delay_ms: 0,
            dependency_fail_rate: 0.0,
            simulate_token: None,
            max_concurrency: 0,
            shutdown_mode: ShutdownMode::Graceful,
            shutdown_drain_seconds: Duration::from_secs(10),
            log_requests: LogRequests::Errors,
            queue_url: None,
        }
    }

    /// Checks what clap cannot: run before binding any port.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let url = non_empty(&self.dependency_url);
        if url.is_none() {
            if self.readiness_check_dependency {
                return Err(ConfigError::DependencyUrlMissing(
                    "READINESS_CHECK_DEPENDENCY",
                ));
            }
            if self.liveness_check_dependency {
                return Err(ConfigError::DependencyUrlMissing(
                    "LIVENESS_CHECK_DEPENDENCY",
                ));
            }
        }
        if let Some(u) = url {
            crate::dependency_client::parse_http_url(&u).ok_or(ConfigError::DependencyUrl(u))?;
        }
        if let Some(h) = non_empty(&self.dependency_host) {
            crate::dependency_client::parse_host_port(&h).ok_or(ConfigError::DependencyHost(h))?;
        }
        if self.dependency_timeout_ms == 0 {
            return Err(ConfigError::DependencyTimeout);
        }
        match self.queue_url() {
            Some(u) => {
                crate::dependency_client::parse_http_url(&u).ok_or(ConfigError::QueueUrl(u))?;
            }
            None if self.app_mode == AppMode::QueueWorker => {
                return Err(ConfigError::QueueUrlMissing);
            }
            None => {}
        }
        Ok(())
    }

    /// The concurrency cap, `None` for unlimited.
    pub fn max_concurrency(&self) -> Option<usize> {
        (self.max_concurrency > 0).then_some(self.max_concurrency)
    }

    /// The dependency URL, if set and non-empty.
    pub fn dependency_url(&self) -> Option<String> {
        non_empty(&self.dependency_url)
    }

    /// The queue-worker's queue, if set and non-empty.
    pub fn queue_url(&self) -> Option<String> {
        non_empty(&self.queue_url)
    }

    /// The TCP dependency, if set and non-empty.
    pub fn dependency_host(&self) -> Option<String> {
        non_empty(&self.dependency_host)
    }

    /// App from `APP_NAME`, then `CONTAINER_APP_JOB_NAME`, then `subject`; revision from
    /// `CONTAINER_APP_REVISION`, then `CONTAINER_APP_JOB_EXECUTION_NAME` (a job replica's
    /// execution), then `REVISION`, then `local`; replica from `CONTAINER_APP_REPLICA_NAME`,
    /// then the host name.
    pub fn identity(&self) -> Identity {
        Identity {
            app: non_empty(&self.app_name)
                .or_else(|| non_empty(&self.container_app_job_name))
                .unwrap_or_else(|| DEFAULT_APP_NAME.to_owned()),
            revision: non_empty(&self.container_app_revision)
                .or_else(|| non_empty(&self.container_app_job_execution_name))
                .or_else(|| non_empty(&self.revision))
                .unwrap_or_else(|| "local".to_owned()),
            replica: non_empty(&self.container_app_replica_name).unwrap_or_else(hostname),
            generation: self.rollout_generation.clone(),
        }
    }

    /// The effective configuration as JSON for BOOT_START, the token replaced by whether it is set.
    pub fn to_log_json(&self) -> serde_json::Value {
        serde_json::json!({
            "port": self.port,
            "bind_address": self.bind_address.to_string(),
            "app_mode": self.app_mode.name(),
            "startup_mode": self.startup_mode.name(),
            "startup_delay_s": self.startup_delay_seconds.as_secs_f64(),
            "warm_ready_lies": self.warm_ready_lies,
            "request_delay_ms": self.request_delay_ms,
            "work_ms": self.work_ms,
            "exit_code": self.exit_code,
            "fail_rate": self.fail_rate,
            "capacity_rps": self.capacity_rps,
            "capacity_sharing": self.capacity_rps.map(|_| self.capacity_sharing.name()),
            "capacity_cv": self.capacity_rps.map(|_| self.capacity_cv),
            "readiness_check_dependency": self.readiness_check_dependency,
            "liveness_check_dependency": self.liveness_check_dependency,
            "dependency_url": self.dependency_url(),
            "dependency_timeout_ms": self.dependency_timeout_ms,
            "dependency_host": self.dependency_host(),
            "liveness_io_delay_s": self.liveness_io_delay.as_secs_f64(),
            "max_request_seconds": self.max_request_seconds,
            "max_alloc_mib": self.max_alloc_mib,
            "dependency_healthy": self.dependency_healthy,
            "dependency_delay_ms": self.dependency_delay_ms,
            "dependency_fail_rate": self.dependency_fail_rate,
            "simulate_token_set": self.simulate_token.as_ref().is_some_and(|t| !t.expose().is_empty()),
            "max_concurrency": self.max_concurrency(),
            "shutdown_mode": self.shutdown_mode.name(),
            "shutdown_drain_s": self.shutdown_drain_seconds.as_secs_f64(),
            "log_requests": self.log_requests.name(),
            "queue_url": self.queue_url(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Config, clap::Error> {
        let mut v = vec!["subject"];
        v.extend_from_slice(args);
        Config::try_parse_from(v)
    }

    #[test]
    fn flags_match_the_env_names_and_defaults_match_defaults() {
        let c = parse(&[]).unwrap();
        let d = Config::defaults();
        assert_eq!(c.port, d.port);
        assert_eq!(c.startup_mode, StartupMode::BindLate);
        assert_eq!(c.shutdown_mode, ShutdownMode::Graceful);
        assert_eq!(c.log_requests, LogRequests::Errors);
        assert_eq!(c.max_concurrency(), None);
        assert_eq!(c.shutdown_drain_seconds, Duration::from_secs(10));
        assert!(c.dependency_healthy);
        let c = parse(&[
            "--startup-delay-seconds",
            "1.5",
            "--startup-mode",
            "bind-early",
            "--warm-ready-lies",
            "yes",
            "--max-concurrency",
            "1",
            "--shutdown-mode",
            "drain",
            "--app-mode",
            "dependency",
            "--dependency-fail-rate",
            "0.25",
        ])
        .unwrap();
        assert_eq!(c.startup_delay_seconds, Duration::from_millis(1500));
        assert_eq!(c.startup_mode, StartupMode::BindEarly);
        assert!(c.warm_ready_lies);
        assert_eq!(c.max_concurrency(), Some(1));
        assert_eq!(c.shutdown_mode, ShutdownMode::Drain);
        assert_eq!(c.app_mode, AppMode::Dependency);
        assert_eq!(c.dependency_fail_rate, 0.25);
    }

    #[test]
    fn bad_values_are_rejected_before_binding() {
        for bad in [
            &["--port", "99999"][..],
            &["--startup-delay-seconds", "-1"],
            &["--startup-mode", "sideways"],
            &["--max-concurrency", "-2"],
            &["--dependency-fail-rate", "2"],
            &["--fail-rate", "1.5"],
            &["--fail-rate", "-0.1"],
            &["--max-request-seconds", "0"],
            &["--warm-ready-lies", "maybe"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        let mut c = Config::defaults();
        c.readiness_check_dependency = true;
        assert!(matches!(
            c.validate(),
            Err(ConfigError::DependencyUrlMissing(_))
        ));
        c.dependency_url = Some("https://x/health".into());
        assert!(matches!(c.validate(), Err(ConfigError::DependencyUrl(_))));
        c.dependency_url = Some("http://127.0.0.1:9/health".into());
        assert_eq!(c.validate(), Ok(()));
        c.dependency_host = Some("nohost".into());
        assert!(matches!(c.validate(), Err(ConfigError::DependencyHost(_))));
    }

    #[test]
    fn the_capacity_model_is_off_unless_asked_for() {
        let c = parse(&[]).unwrap();
        assert_eq!(c.capacity_rps, None);
        assert_eq!(c.to_log_json()["capacity_sharing"], serde_json::Value::Null);
        let c = parse(&[
            "--capacity-rps",
            "78",
            "--capacity-sharing",
            "fifo",
            "--capacity-cv",
            "3",
        ])
        .unwrap();
        assert_eq!(c.capacity_rps, Some(78.0));
        assert_eq!(c.capacity_sharing, Sharing::Fifo);
        assert_eq!(c.capacity_cv, 3.0);
        assert_eq!(c.to_log_json()["capacity_sharing"], "fifo");
        for bad in [
            &["--capacity-rps", "0"][..],
            &["--capacity-rps=-5"],
            &["--capacity-rps", "inf"],
            &["--capacity-rps", "fast"],
            &["--capacity-cv", "11"],
            &["--capacity-cv=-1"],
            &["--capacity-sharing", "lifo"],
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains("capacity"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn the_queue_worker_needs_a_plain_http_queue_url() {
        let c = parse(&["--app-mode", "queue-worker"]).unwrap();
        assert_eq!(c.validate(), Err(ConfigError::QueueUrlMissing));
        let c = parse(&["--app-mode", "queue-worker", "--queue-url", "https://q"]).unwrap();
        assert!(matches!(c.validate(), Err(ConfigError::QueueUrl(_))));
        let c = parse(&["--app-mode", "queue-worker", "--queue-url", "http://q:8080"]).unwrap();
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(c.to_log_json()["app_mode"], "queue-worker");
        assert_eq!(
            parse(&[]).unwrap().validate(),
            Ok(()),
            "main mode needs none"
        );
    }

    #[test]
    fn max_concurrency_parser() {
        assert_eq!(parse_max_concurrency("unlimited"), Ok(0));
        assert_eq!(parse_max_concurrency("0"), Ok(0));
        assert_eq!(parse_max_concurrency(""), Ok(0));
        assert_eq!(parse_max_concurrency("4"), Ok(4));
        assert!(parse_max_concurrency("x").is_err());
    }

    #[test]
    fn identity_falls_back_to_revision_and_hostname() {
        let mut c = Config::defaults();
        c.revision = Some("rev-a".into());
        let id = c.identity();
        assert_eq!(id.revision, "rev-a");
        assert_eq!(id.replica, hostname());
        c.container_app_revision = Some("subject--0000002".into());
        c.container_app_replica_name = Some("subject--0000002-abc".into());
        let id = c.identity();
        assert_eq!(id.revision, "subject--0000002");
        assert_eq!(id.replica, "subject--0000002-abc");
        assert_eq!(id.app, "subject");
    }

    #[test]
    fn a_job_replica_names_its_job_and_execution_unless_told_otherwise() {
        let mut c = parse(&[]).unwrap();
        c.container_app_job_name = Some("drain".into());
        c.container_app_job_execution_name = Some("drain-abc1234".into());
        let id = c.identity();
        assert_eq!(
            (id.app.as_str(), id.revision.as_str()),
            ("drain", "drain-abc1234")
        );
        c.app_name = Some("worker".into());
        c.container_app_revision = Some("worker--1".into());
        let id = c.identity();
        assert_eq!(
            (id.app.as_str(), id.revision.as_str()),
            ("worker", "worker--1")
        );
    }

    #[test]
    fn the_token_never_shows_in_debug_or_log_json() {
        let mut c = Config::defaults();
        c.simulate_token = Some(Secret::new("hunter2-token"));
        assert!(!format!("{c:?}").contains("hunter2"));
        assert!(!c.to_log_json().to_string().contains("hunter2"));
        assert_eq!(c.to_log_json()["simulate_token_set"], true);
    }
}
