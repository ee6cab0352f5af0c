//! Configuration: the clap [`Args`] (flags and the original lab's env names) and the validated
//! [`Config`] the run uses.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use http::Uri;
use logline::config::parse_duration;
use serde::Serialize;

use crate::clients::MAX_CLIENTS;
use crate::profile::Profile;
use crate::target::Target;
use crate::tls::{DEFAULT_CA_FILE, TlsError};

/// The longest run we accept: the run always ends by itself.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);
/// The longest per-request timeout we accept (histograms are bounded by it).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);
pub const DEFAULT_RATE: f64 = 200.0;
pub const DEFAULT_BUCKET: &str = "10s";
pub const DEFAULT_TIMEOUT: &str = "10s";
pub const DEFAULT_GRACE: &str = "5s";
/// The original lab's `maxVUs` floor: `--max-in-flight` defaults to max(200, 2 × peak rate).
pub const DEFAULT_MIN_IN_FLIGHT: usize = 200;

/// How connections are used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConnMode {
    /// A new connection per request with `Connection: close` (the original lab's
    /// `noConnectionReuse`); the server is left 250 ms to close it first, which keeps TIME_WAIT
    /// off the client's ports.
    Close,
    /// Pooled persistent connections.
    KeepAlive,
}

/// Which requests get a `req` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogRequests {
    All,
    Errors,
    None,
}

/// A constant-arrival-rate HTTP load generator printing one JSON object per line.
#[derive(Parser, Debug, Clone)]
#[command(name = "loadgen", version, about, long_about = None)]
pub struct Args {
    /// Target URL: http://host[:port]/path?query or https://... (TLS, see --ca-file and
    /// --insecure), e.g. a Container Apps ingress https://<app>.<env>.azurecontainerapps.io/.
    #[arg(long, env = "SUBJECT_URL")]
    pub url: String,
    /// Requests per second (open model).
    #[arg(long, env = "TARGET_RPS", default_value_t = DEFAULT_RATE)]
    pub rate: f64,
    /// Run length (a bare number means seconds); at most 24 h.
    #[arg(long, env = "DURATION_SECONDS", value_parser = parse_duration)]
    pub duration: Duration,
    #[arg(long, env = "RUN_ID")]
    pub run_id: Option<String>,
    #[arg(long, env = "PERTURBATION_ID")]
    pub perturbation_id: Option<String>,
    /// Bucket window, aligned to wall-clock multiples.
    #[arg(long, env = "BUCKET_SECONDS", default_value = DEFAULT_BUCKET, value_parser = parse_duration)]
    pub bucket: Duration,
    /// Per-request timeout (connect + response + body).
    #[arg(long, env = "REQUEST_TIMEOUT", default_value = DEFAULT_TIMEOUT, value_parser = parse_duration)]
    pub timeout: Duration,
    /// Concurrency cap; a request that cannot start is counted as dropped [max(200, 2 × rate)].
    #[arg(long, env = "MAX_IN_FLIGHT")]
    pub max_in_flight: Option<usize>,
    /// Ramping stages `LEN:RATE,...` (linear from the previous rate, the first from --start-rate).
    #[arg(long, env = "STAGES")]
    pub stages: Option<String>,
    #[arg(long, env = "START_RATE", default_value_t = 0.0)]
    pub start_rate: f64,
    #[arg(long, env = "CONNECTION", value_enum, default_value = "keep-alive")]
    pub connection: ConnMode,
    /// Closed model: this many workers, each with one persistent connection.
    #[arg(long, env = "WORKERS")]
    pub workers: Option<usize>,
    /// Closed model: pause between a worker's requests.
    #[arg(long, env = "THINK", default_value = "0s", value_parser = parse_duration)]
    pub think: Duration,
    /// Virtual clients for the main stream (open model): its arrivals go to N clients in turn,
    /// each keeping its own cookies (`Set-Cookie` stored, sent back as `Cookie`), so an affinity
    /// cookie pins each client to a replica. Prints a `client` line when a client is first
    /// served, moves to another replica or gets a cookie. 1 to 10,000.
    #[arg(long, env = "CLIENTS")]
    pub clients: Option<usize>,
    /// Side stream `rate=1,path=/slow?seconds=20,timeout=60s,name=slow` (repeatable; in the env
    /// variable separate streams with `;`).
    #[arg(long = "also", env = "ALSO", value_delimiter = ';')]
    pub also: Vec<String>,
    #[arg(long, env = "REVISION_HEADER", default_value = "x-revision")]
    pub revision_header: String,
    #[arg(long, env = "REPLICA_HEADER", default_value = "x-replica")]
    pub replica_header: String,
    #[arg(long, env = "LOG_REQUESTS", value_enum, default_value = "errors")]
    pub log_requests: LogRequests,
    /// Statuses that count as ok, e.g. `200-399` or `200,204,301-302`.
    #[arg(long, env = "OK_STATUS", default_value = "200-399")]
    pub ok_status: String,
    /// Staircase preflight: rates to hold for --step each, with --pause between them.
    #[arg(long, env = "STAIRCASE", value_delimiter = ',')]
    pub staircase: Vec<f64>,
    #[arg(long, env = "STEP", default_value = "60s", value_parser = parse_duration)]
    pub step: Duration,
    #[arg(long, env = "PAUSE", default_value = "90s", value_parser = parse_duration)]
    pub pause: Duration,
    /// On SIGTERM/SIGINT, how long to wait for in-flight requests.
    #[arg(long, env = "GRACE", default_value = DEFAULT_GRACE, value_parser = parse_duration)]
    pub grace: Duration,
    /// https targets: PEM bundle of the trusted CA certificates.
    #[arg(long, env = "SSL_CERT_FILE", default_value = DEFAULT_CA_FILE)]
    pub ca_file: PathBuf,
    /// https targets: accept any server certificate (self-signed lab targets). The traffic is
    /// still encrypted but the server is not authenticated. Needed also for a certificate that
    /// is its own CA (`openssl req -x509`): verification rejects it as `CaUsedAsEndEntity`, a
    /// `tls` error; trusting a CA that signed the server's certificate works without it.
    #[arg(long, env = "TLS_INSECURE")]
    pub insecure: bool,
    /// Pacing precision: a request may go out up to this long after its due time, so that
    /// requests due close together share one timer wake-up (lateness stays below it plus the
    /// machine's scheduling delay). 0 wakes for every request: the most precise, and more CPU
    /// above ~1,000 RPS. Sub-millisecond pacing needs Linux (a timerfd); elsewhere tokio's
    /// 1 ms timer paces.
    #[arg(long, env = "PACING", default_value = "1ms", value_parser = parse_duration)]
    pub pacing: Duration,
    /// Runtime threads [auto: 1 below 5,000 RPS in all, else the CPUs available to the
    /// process]. 1 is a current-thread runtime, the cheapest per request; above ~5,000 RPS a
    /// second thread raises the highest rate held (docs/BENCHMARKS.md).
    #[arg(long, env = "THREADS")]
    pub threads: Option<usize>,
}

/// A configuration that cannot run.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    #[error("--url {0:?}: {1}")]
    Url(String, String),
    #[error("--duration must be between 1 ms and 24 h, got {0:?}")]
    Duration(Duration),
    #[error("--timeout must be between 1 ms and 1 h, got {0:?}")]
    Timeout(Duration),
    #[error("--pacing must be at most 1 s, got {0:?}")]
    Pacing(Duration),
    #[error("--bucket must be a whole number of seconds ≥ 1, got {0:?}")]
    Bucket(Duration),
    #[error("rate {0} is not a finite number ≥ 0 (and ≤ 1,000,000)")]
    Rate(f64),
    #[error("--stages {0:?}: expected LEN:RATE[,LEN:RATE...], e.g. 30s:100,60s:200")]
    Stages(String),
    #[error("--also {0:?}: {1}")]
    Also(String, String),
    #[error("--ok-status {0:?}: expected codes or ranges, e.g. 200-399 or 200,204")]
    OkStatus(String),
    #[error("{0:?} is not a valid header name")]
    Header(String),
    #[error("--clients must be between 1 and {MAX_CLIENTS}, got {0}")]
    Clients(usize),
    #[error("{0}")]
    Conflict(&'static str),
    #[error(transparent)]
    Tls(TlsError),
    #[error("{0}")]
    Target(String),
}

/// Open or closed workload model of one scenario.
#[derive(Clone, Debug)]
pub enum Model {
    Open(Profile),
    Closed { workers: usize, think: Duration },
}

/// One stream of requests with its own counters and connections.
#[derive(Clone, Debug)]
pub struct ScenarioConfig {
    pub name: String,
    pub uri: Uri,
    /// The validated URL with what each request needs (Host header, TLS connector).
    pub target: Arc<Target>,
    pub model: Model,
    pub timeout: Duration,
    pub connection: ConnMode,
    pub max_in_flight: usize,
    pub log_requests: LogRequests,
    /// Virtual clients with cookie jars (`--clients`, main stream only); 0: none.
    pub clients: usize,
}

/// Which statuses count as ok.
#[derive(Clone, Debug, PartialEq)]
pub struct StatusSet(pub Vec<(u16, u16)>);

impl StatusSet {
    pub fn contains(&self, code: u16) -> bool {
        self.0.iter().any(|(a, b)| (*a..=*b).contains(&code))
    }
}

/// The validated configuration of a run.
#[derive(Clone, Debug)]
pub struct Config {
    pub run_id: Option<String>,
    pub perturbation_id: Option<String>,
    pub duration: Duration,
    pub bucket: Duration,
    pub grace: Duration,
    /// Longest a request waits past its due time to share a timer wake-up (`--pacing`).
    pub pacing: Duration,
    pub threads: usize,
    pub ok_status: StatusSet,
    pub revision_header: http::header::HeaderName,
    pub replica_header: http::header::HeaderName,
    /// `scenarios[0]` is `main`.
    pub scenarios: Vec<ScenarioConfig>,
    /// The flags as given, for the `meta` line.
    pub echo: serde_json::Value,
}

/// Why [`Config::from_args`] gave no configuration: the flags do not parse, or they do and
/// cannot run.
#[derive(Debug, thiserror::Error)]
pub enum ArgsError {
    #[error(transparent)]
    Flags(#[from] clap::Error),
    #[error(transparent)]
    Config(#[from] ConfigError),
}

impl Config {
    /// Parses flags (and env) the way the binary does; for tests.
    pub fn from_args<I, T>(args: I) -> Result<Config, ArgsError>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        Ok(Args::try_parse_from(args)?.into_config()?)
    }
}

fn check_rate(r: f64) -> Result<f64, ConfigError> {
    (r.is_finite() && (0.0..=1_000_000.0).contains(&r))
        .then_some(r)
        .ok_or(ConfigError::Rate(r))
}

fn parse_uri(s: &str) -> Result<Uri, ConfigError> {
    let uri: Uri = s
        .parse()
        .map_err(|e: http::uri::InvalidUri| ConfigError::Url(s.into(), e.to_string()))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        _ => {
            return Err(ConfigError::Url(
                s.into(),
                "expected http://host[:port]/path or https://host[:port]/path".into(),
            ));
        }
    }
    if uri.host().is_none() {
        return Err(ConfigError::Url(s.into(), "no host".into()));
    }
    if uri.path_and_query().is_none() {
        let mut parts = uri.into_parts();
        parts.path_and_query = Some(http::uri::PathAndQuery::from_static("/"));
        return Uri::from_parts(parts).map_err(|e| ConfigError::Url(s.into(), e.to_string()));
    }
    Ok(uri)
}

/// Parses `--stages 30s:100,60s:200`.
pub fn parse_stages(s: &str) -> Result<Vec<(Duration, f64)>, ConfigError> {
    let err = || ConfigError::Stages(s.to_owned());
    let v = s
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let (d, r) = p.split_once(':').ok_or_else(err)?;
            let d = parse_duration(d).map_err(|_| err())?;
            let r: f64 = r.trim().parse().map_err(|_| err())?;
            Ok((d, check_rate(r).map_err(|_| err())?))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if v.is_empty() {
        return Err(err());
    }
    Ok(v)
}

/// Parses `--ok-status 200-399,404`.
pub fn parse_status_set(s: &str) -> Result<StatusSet, ConfigError> {
    let err = || ConfigError::OkStatus(s.to_owned());
    let v = s
        .split(',')
        .map(|p| {
            let p = p.trim();
            let (a, b) = p.split_once('-').unwrap_or((p, p));
            let a: u16 = a.trim().parse().map_err(|_| err())?;
            let b: u16 = b.trim().parse().map_err(|_| err())?;
            ((100..=999).contains(&a) && (a..=999).contains(&b))
                .then_some((a, b))
                .ok_or_else(err)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(StatusSet(v))
}

/// A side stream as written on the command line, before the main URL is known.
#[derive(Clone, Debug, PartialEq)]
pub struct SideSpec {
    pub name: String,
    pub rate: f64,
    pub path: String,
    pub timeout: Option<Duration>,
    pub connection: Option<ConnMode>,
    pub max_in_flight: Option<usize>,
    pub log_requests: LogRequests,
}

/// Parses `rate=1,path=/slow?seconds=20,timeout=60s,name=slow` (also `connection=close|keep-alive`,
/// `max_in_flight=N`, `log=all|errors|none`; side streams log every request by default).
pub fn parse_side(s: &str) -> Result<SideSpec, ConfigError> {
    let err = |m: &str| ConfigError::Also(s.to_owned(), m.to_owned());
    let mut spec = SideSpec {
        name: String::new(),
        rate: 1.0,
        path: "/".into(),
        timeout: None,
        connection: None,
        max_in_flight: None,
        log_requests: LogRequests::All,
    };
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| err("expected KEY=VALUE pairs"))?;
        let v = v.trim();
        match k.trim() {
            "name" => spec.name = v.to_owned(),
            "rate" => {
                spec.rate = v
                    .parse()
                    .ok()
                    .and_then(|r| check_rate(r).ok())
                    .ok_or_else(|| err("rate is not a number ≥ 0"))?
            }
            "path" => {
                if !v.starts_with('/') {
                    return Err(err("path must start with /"));
                }
                spec.path = v.to_owned()
            }
            "timeout" => spec.timeout = Some(parse_duration(v).map_err(|e| err(&e.to_string()))?),
            "connection" => {
                spec.connection = Some(
                    ConnMode::from_str(v, true)
                        .map_err(|_| err("connection is close|keep-alive"))?,
                )
            }
            "max_in_flight" | "max-in-flight" => {
                spec.max_in_flight = Some(v.parse().map_err(|_| err("max_in_flight is a count"))?)
            }
            "log" => {
                spec.log_requests =
                    LogRequests::from_str(v, true).map_err(|_| err("log is all|errors|none"))?
            }
            other => return Err(err(&format!("unknown key {other:?}"))),
        }
    }
    if spec.name.is_empty() {
        spec.name = spec
            .path
            .trim_start_matches('/')
            .split(['?', '/'])
            .next()
            .filter(|s| !s.is_empty())
            .unwrap_or("side")
            .to_owned();
    }
    Ok(spec)
}

fn default_in_flight(rate: f64) -> usize {
    DEFAULT_MIN_IN_FLIGHT.max((2.0 * rate).ceil() as usize)
}

/// Above this total rate `--threads` defaults to every CPU available: on 2 cores a second thread
/// kept 16,000 RPS in close mode far closer to schedule (lateness p99 7.6 ms against 148 ms)
/// and in an earlier run (a Xeon) raised the highest rate held keep-alive from 16,000 to 32,000;
/// below it one thread is cheaper per request (keep-alive at 4,000 RPS: 22 against 35 µs).
/// Figures: docs/BENCHMARKS.md, loadgen.
pub const AUTO_THREADS_RATE: f64 = 5_000.0;

/// `--threads` when not given: 1 below [`AUTO_THREADS_RATE`], else the CPUs this process may
/// use (std reads the cgroup quota, so a 0.5-vCPU container job stays on one thread).
fn auto_threads(total_rate: f64) -> usize {
    if total_rate < AUTO_THREADS_RATE {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl Args {
    /// Validates the arguments into a runnable [`Config`].
    pub fn into_config(self) -> Result<Config, ConfigError> {
        self.check_limits()?;
        let uri = parse_uri(&self.url)?;
        // Side streams share the main URL's scheme and host, so one TLS configuration serves all.
        let tls = match uri.scheme_str() {
            Some("https") => Some(
                crate::tls::client_config(&self.ca_file, self.insecure)
                    .map_err(ConfigError::Tls)?,
            ),
            _ => None,
        };
        let target = |u: &Uri| {
            Target::new(u, tls.as_ref())
                .map(Arc::new)
                .map_err(|e| ConfigError::Target(e.to_string()))
        };
        let model = self.main_model()?;
        let peak = match &model {
            Model::Open(p) => p.peak_rate(),
            Model::Closed { .. } => 0.0,
        };
        let max_in_flight = match (&model, self.max_in_flight) {
            (Model::Closed { workers, .. }, _) => *workers,
            (_, Some(n)) => n.max(1),
            (_, None) => default_in_flight(peak),
        };
        let mut scenarios = vec![ScenarioConfig {
            name: "main".into(),
            uri: uri.clone(),
            target: target(&uri)?,
            model,
            timeout: self.timeout,
            connection: self.connection,
            max_in_flight,
            log_requests: self.log_requests,
            clients: self.clients.unwrap_or(0),
        }];
        for s in &self.also {
            let side = self.side_scenario(s, &uri, &scenarios, &target)?;
            scenarios.push(side);
        }
        let total_rate: f64 = scenarios
            .iter()
            .map(|s| match &s.model {
                Model::Open(p) => p.peak_rate(),
                Model::Closed { .. } => 0.0,
            })
            .sum();
        let threads = match self.threads {
            Some(n) => n.max(1),
            None => auto_threads(total_rate),
        };
        let echo = self.echo(max_in_flight, threads);
        let header = |s: &str| {
            http::header::HeaderName::from_bytes(s.trim().as_bytes())
                .map_err(|_| ConfigError::Header(s.to_owned()))
        };
        Ok(Config {
            ok_status: parse_status_set(&self.ok_status)?,
            revision_header: header(&self.revision_header)?,
            replica_header: header(&self.replica_header)?,
            run_id: self.run_id,
            perturbation_id: self.perturbation_id,
            duration: self.duration,
            bucket: self.bucket,
            grace: self.grace,
            pacing: self.pacing,
            threads,
            scenarios,
            echo,
        })
    }

    /// The bounds every run keeps: duration, timeout, bucket, pacing and the rates.
    fn check_limits(&self) -> Result<(), ConfigError> {
        if self.duration.is_zero() || self.duration > MAX_DURATION {
            return Err(ConfigError::Duration(self.duration));
        }
        if self.timeout.is_zero() || self.timeout > MAX_TIMEOUT {
            return Err(ConfigError::Timeout(self.timeout));
        }
        if self.bucket.subsec_nanos() != 0 || self.bucket.is_zero() {
            return Err(ConfigError::Bucket(self.bucket));
        }
        if self.pacing > Duration::from_secs(1) {
            return Err(ConfigError::Pacing(self.pacing));
        }
        check_rate(self.rate)?;
        check_rate(self.start_rate)?;
        match self.clients {
            Some(n) if n == 0 || n > MAX_CLIENTS => return Err(ConfigError::Clients(n)),
            Some(_) if self.workers.is_some() => {
                return Err(ConfigError::Conflict(
                    "--clients spreads the open model's arrivals; it does not combine with \
                     --workers (closed model)",
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// The main scenario's model: closed (`--workers`), stages, staircase or a constant rate;
    /// the combinations that contradict each other are refused.
    fn main_model(&self) -> Result<Model, ConfigError> {
        let open = |p: Profile| Model::Open(p);
        Ok(
            match (&self.workers, &self.stages, self.staircase.is_empty()) {
                (Some(_), Some(_), _) | (Some(_), _, false) => {
                    return Err(ConfigError::Conflict(
                        "--workers (closed model) does not combine with --stages or --staircase",
                    ));
                }
                (None, Some(_), false) => {
                    return Err(ConfigError::Conflict(
                        "choose --stages or --staircase, not both",
                    ));
                }
                (Some(0), _, _) => return Err(ConfigError::Conflict("--workers must be ≥ 1")),
                (Some(w), None, true) => Model::Closed {
                    workers: *w,
                    think: self.think,
                },
                (None, Some(st), true) => {
                    open(Profile::stages(self.start_rate, &parse_stages(st)?))
                }
                (None, None, false) => {
                    for r in &self.staircase {
                        check_rate(*r)?;
                    }
                    open(Profile::staircase(&self.staircase, self.step, self.pause))
                }
                (None, None, true) => {
                    open(Profile::constant(self.rate, self.duration.as_secs_f64()))
                }
            },
        )
    }

    /// The side stream `--also s`: the main URL with the side's path, a constant rate for the
    /// whole run; its name must be new among `scenarios`.
    fn side_scenario(
        &self,
        s: &str,
        uri: &Uri,
        scenarios: &[ScenarioConfig],
        target: &impl Fn(&Uri) -> Result<Arc<Target>, ConfigError>,
    ) -> Result<ScenarioConfig, ConfigError> {
        let side = parse_side(s)?;
        if scenarios.iter().any(|x| x.name == side.name) {
            return Err(ConfigError::Also(s.to_owned(), "duplicate name".into()));
        }
        let mut parts = uri.clone().into_parts();
        parts.path_and_query = Some(
            side.path
                .parse()
                .map_err(|_| ConfigError::Also(s.to_owned(), "bad path".into()))?,
        );
        let side_uri =
            Uri::from_parts(parts).map_err(|e| ConfigError::Also(s.to_owned(), e.to_string()))?;
        let timeout = side.timeout.unwrap_or(self.timeout);
        if timeout.is_zero() || timeout > MAX_TIMEOUT {
            return Err(ConfigError::Timeout(timeout));
        }
        Ok(ScenarioConfig {
            name: side.name,
            target: target(&side_uri)?,
            uri: side_uri,
            model: Model::Open(Profile::constant(side.rate, self.duration.as_secs_f64())),
            timeout,
            connection: side.connection.unwrap_or(self.connection),
            max_in_flight: side
                .max_in_flight
                .unwrap_or(default_in_flight(side.rate))
                .max(1),
            log_requests: side.log_requests,
            clients: 0,
        })
    }

    /// The flags as given (with the `max_in_flight` and `threads` chosen), for the `meta` line.
    fn echo(&self, max_in_flight: usize, threads: usize) -> serde_json::Value {
        serde_json::json!({
            "url": self.url,
            "rate": self.rate,
            "duration_s": self.duration.as_secs_f64(),
            "bucket_s": self.bucket.as_secs(),
            "timeout_s": self.timeout.as_secs_f64(),
            "max_in_flight": max_in_flight,
            "stages": self.stages,
            "start_rate": self.start_rate,
            "connection": self.connection,
            "workers": self.workers,
            "clients": self.clients,
            "think_s": self.think.as_secs_f64(),
            "also": self.also,
            "revision_header": self.revision_header,
            "replica_header": self.replica_header,
            "log_requests": self.log_requests,
            "ok_status": self.ok_status,
            "staircase": self.staircase,
            "step_s": self.step.as_secs_f64(),
            "pause_s": self.pause.as_secs_f64(),
            "grace_s": self.grace.as_secs_f64(),
            "pacing_ms": self.pacing.as_secs_f64() * 1000.0,
            "threads": threads,
            "ca_file": self.ca_file,
            "insecure": self.insecure,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(extra: &[&str]) -> Result<Config, String> {
        let mut a = vec![
            "loadgen",
            "--url",
            "http://127.0.0.1:9/x?y=1",
            "--duration",
            "10",
        ];
        a.extend_from_slice(extra);
        Config::from_args(a).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_follow_the_original_lab() {
        let c = cfg(&[]).unwrap();
        assert_eq!(c.bucket, Duration::from_secs(10));
        let m = &c.scenarios[0];
        assert_eq!(m.max_in_flight, 400);
        assert_eq!(m.connection, ConnMode::KeepAlive);
        assert_eq!(m.log_requests, LogRequests::Errors);
        assert!(c.ok_status.contains(200) && c.ok_status.contains(399));
        assert!(!c.ok_status.contains(404));
    }

    #[test]
    fn threads_follow_the_rate_unless_given() {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(cfg(&["--rate", "4999"]).unwrap().threads, 1);
        assert_eq!(cfg(&["--rate", "5000"]).unwrap().threads, cpus);
        // Side streams count towards the total.
        let both = cfg(&["--rate", "4000", "--also", "rate=1000,path=/x"]).unwrap();
        assert_eq!(both.threads, cpus);
        assert_eq!(
            cfg(&["--rate", "9000", "--threads", "1"]).unwrap().threads,
            1
        );
        assert_eq!(cfg(&["--rate", "10", "--threads", "3"]).unwrap().threads, 3);
    }

    #[test]
    fn pacing_defaults_to_a_millisecond_and_is_bounded() {
        assert_eq!(cfg(&[]).unwrap().pacing, Duration::from_millis(1));
        assert_eq!(cfg(&["--pacing", "0"]).unwrap().pacing, Duration::ZERO);
        assert_eq!(
            cfg(&["--pacing", "0.25ms"]).unwrap().pacing,
            Duration::from_micros(250)
        );
        assert!(cfg(&["--pacing", "2s"]).unwrap_err().contains("--pacing"));
    }

    #[test]
    fn duration_is_capped_at_24_hours() {
        let with = |d: &str| {
            Config::from_args(["loadgen", "--url", "http://127.0.0.1:9/", "--duration", d])
                .map_err(|e| e.to_string())
        };
        assert!(with("24h").is_ok());
        assert!(with("24h1s").unwrap_err().contains("24 h"));
        assert!(with("0").is_err());
    }

    #[test]
    fn side_streams_parse_and_get_the_main_host() {
        let c = cfg(&[
            "--also",
            "rate=1,path=/slow?seconds=20,timeout=60s,name=slow",
            "--also",
            "rate=0.5,path=/health",
        ])
        .unwrap();
        assert_eq!(c.scenarios.len(), 3);
        let s = &c.scenarios[1];
        assert_eq!(s.name, "slow");
        assert_eq!(s.uri.to_string(), "http://127.0.0.1:9/slow?seconds=20");
        assert_eq!(s.timeout, Duration::from_secs(60));
        assert_eq!(s.log_requests, LogRequests::All);
        assert_eq!(c.scenarios[2].name, "health");
        assert!(
            cfg(&["--also", "rate=1,bogus=2"])
                .unwrap_err()
                .contains("bogus")
        );
        assert!(
            cfg(&["--also", "name=main"])
                .unwrap_err()
                .contains("duplicate")
        );
    }

    #[test]
    fn stages_and_status_sets_parse() {
        assert_eq!(
            parse_stages("30s:100,1m:200").unwrap(),
            vec![
                (Duration::from_secs(30), 100.0),
                (Duration::from_secs(60), 200.0)
            ]
        );
        assert!(parse_stages("30s").is_err());
        assert!(parse_stages("30s:-1").is_err());
        let s = parse_status_set("200,301-302").unwrap();
        assert!(s.contains(200) && s.contains(302) && !s.contains(201));
        assert!(parse_status_set("2xx").is_err());
        assert!(parse_status_set("300-200").is_err());
    }

    #[test]
    fn bad_urls_and_conflicts_are_rejected() {
        assert!(Config::from_args(["loadgen", "--url", "ftp://x", "--duration", "1"]).is_err());
        assert!(cfg(&["--workers", "2", "--stages", "1s:1"]).is_err());
        assert!(cfg(&["--bucket", "1.5s"]).is_err());
        let c = cfg(&["--workers", "3"]).unwrap();
        assert!(matches!(
            c.scenarios[0].model,
            Model::Closed { workers: 3, .. }
        ));
    }

    #[test]
    fn clients_need_the_open_model_and_a_bounded_count() {
        assert_eq!(cfg(&[]).unwrap().scenarios[0].clients, 0);
        let c = cfg(&["--clients", "12", "--also", "name=side,rate=1"]).unwrap();
        assert_eq!(c.scenarios[0].clients, 12);
        assert_eq!(c.scenarios[1].clients, 0, "side streams keep no cookies");
        assert_eq!(c.echo["clients"], 12);
        assert!(
            cfg(&["--clients", "0"])
                .unwrap_err()
                .contains("between 1 and")
        );
        assert!(cfg(&["--clients", "10001"]).unwrap_err().contains("10000"));
        assert!(
            cfg(&["--clients", "2", "--workers", "2"])
                .unwrap_err()
                .contains("--workers")
        );
    }
}
