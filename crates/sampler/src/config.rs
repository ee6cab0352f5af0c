//! Configuration from flags and the original samplers' environment variables.
//!
//! [`ArmArgs`] is shared with `audit` (flattened into its own parser); [`SamplerConfig`] is the
//! perturbation sampler's whole configuration.

use std::time::Duration;

use arm::{ClientConfig, IdentityEnv, TokenSourceKind};
use clap::{Args, Parser};
use logline::config::parse_duration;
use url::Url;

/// Which apps and jobs to sample, and how to reach ARM.
#[derive(Args, Clone, Debug)]
pub struct ArmArgs {
    /// Subscription holding the apps.
    #[arg(long, env = "SUBSCRIPTION_ID")]
    pub subscription_id: String,
    /// Resource group holding the apps.
    #[arg(long, env = "RESOURCE_GROUP")]
    pub resource_group: String,
    /// Container apps to sample (revisions, replicas), comma-separated.
    #[arg(long, env = "CONTAINER_APP_NAMES", value_delimiter = ',')]
    pub container_app_names: Vec<String>,
    /// Container Apps Jobs to sample (their executions), comma-separated.
    #[arg(long, env = "CONTAINER_APP_JOB_NAMES", value_delimiter = ',')]
    pub job_names: Vec<String>,
    /// Client id of the user-assigned managed identity (else `AZURE_CLIENT_ID`, else
    /// system-assigned).
    #[arg(long, env = "MANAGED_IDENTITY_CLIENT_ID", hide_env_values = true)]
    pub managed_identity_client_id: Option<String>,
    /// ARM base URL: Azure, or localplane's.
    #[arg(long, env = "ARM_ENDPOINT", default_value = arm::client::DEFAULT_ENDPOINT)]
    pub arm_endpoint: Url,
    /// `managed-identity`, `cli`, `none` or `auto`.
    #[arg(long, env = "ARM_TOKEN_SOURCE", default_value = "auto")]
    pub arm_token_source: TokenSourceKind,
    /// Microsoft.App api-version.
    #[arg(long, env = "ARM_API_VERSION", default_value = arm::client::DEFAULT_API_VERSION)]
    pub arm_api_version: String,
    /// Longest one ARM call may take (it is also cut at the end of its tick's slot).
    #[arg(long, env = "ARM_TIMEOUT_SECONDS", default_value = "10", value_parser = parse_duration)]
    pub arm_timeout: Duration,
}

impl ArmArgs {
    /// The app names, trimmed, empty entries dropped.
    pub fn apps(&self) -> Vec<String> {
        names(&self.container_app_names)
    }

    /// The job names, trimmed, empty entries dropped.
    pub fn jobs(&self) -> Vec<String> {
        names(&self.job_names)
    }

    /// The ARM client configuration.
    pub fn client_config(&self) -> ClientConfig {
        let mut cfg = ClientConfig::new(self.arm_endpoint.clone());
        cfg.api_version = self.arm_api_version.clone();
        cfg.call_timeout = self.arm_timeout;
        cfg
    }

    /// The identity variables, with `--managed-identity-client-id` taking precedence.
    pub fn identity_env(&self) -> IdentityEnv {
        let flag = self.managed_identity_client_id.clone();
        IdentityEnv::from_lookup(|k| {
            if k == "MANAGED_IDENTITY_CLIENT_ID" && flag.is_some() {
                flag.clone()
            } else {
                std::env::var(k).ok()
            }
        })
    }
}

fn names(list: &[String]) -> Vec<String> {
    list.iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The perturbation sampler's configuration (image `perturbation-sampler`).
#[derive(Parser, Clone, Debug)]
#[command(
    name = "perturbation-sampler",
    version,
    about = "Samples revision and replica state through ARM at absolute-time ticks for one perturbation window, as JSON lines."
)]
pub struct SamplerConfig {
    #[command(flatten)]
    pub arm: ArmArgs,
    /// Written into every line as `perturbation_id`.
    #[arg(long, env = "PERTURBATION_ID")]
    pub perturbation_id: Option<String>,
    /// Written into every line as `run_id`.
    #[arg(long, env = "RUN_ID")]
    pub run_id: Option<String>,
    /// Time between ticks (`5`, `1s`, `500ms`).
    #[arg(long, env = "SAMPLE_INTERVAL_SECONDS", default_value = "5", value_parser = parse_duration)]
    pub interval: Duration,
    /// Length of the window (`600`, `10m`).
    #[arg(long, env = "SAMPLE_DURATION_SECONDS", default_value = "600", value_parser = parse_duration)]
    pub duration: Duration,
}

/// A configuration that parses but cannot run.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    #[error("CONTAINER_APP_NAMES and CONTAINER_APP_JOB_NAMES name nothing to sample")]
    NothingToSample,
    #[error("the sample interval must be at least 10ms")]
    IntervalTooShort,
    #[error("the window ({window:?}) is shorter than one interval ({interval:?})")]
    WindowTooShort {
        window: Duration,
        interval: Duration,
    },
}

/// Checks the parts every sampler shares: something to sample, and the interval and window.
pub fn validate(
    apps: &[String],
    jobs: &[String],
    interval: Duration,
    window: Duration,
) -> Result<(), ConfigError> {
    if apps.is_empty() && jobs.is_empty() {
        return Err(ConfigError::NothingToSample);
    }
    if interval < Duration::from_millis(10) {
        return Err(ConfigError::IntervalTooShort);
    }
    if window < interval {
        return Err(ConfigError::WindowTooShort { window, interval });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &[&str] = &[
        "perturbation-sampler",
        "--subscription-id",
        "sub",
        "--resource-group",
        "rg",
    ];

    fn parse(extra: &[&str]) -> Result<SamplerConfig, clap::Error> {
        SamplerConfig::try_parse_from(BASE.iter().chain(extra))
    }

    #[test]
    fn defaults_are_the_original_samplers() {
        let c = parse(&["--container-app-names", "a,b"]).unwrap();
        assert_eq!(c.interval, Duration::from_secs(5));
        assert_eq!(c.duration, Duration::from_secs(600));
        assert_eq!(c.arm.apps(), ["a", "b"]);
        assert_eq!(c.arm.arm_endpoint.as_str(), "https://management.azure.com/");
        assert_eq!(c.arm.arm_token_source, TokenSourceKind::Auto);
        assert_eq!(c.arm.arm_timeout, Duration::from_secs(10));
    }

    #[test]
    fn intervals_take_units_and_bare_seconds() {
        let c = parse(&[
            "--container-app-names",
            "a",
            "--interval",
            "500ms",
            "--duration",
            "2m",
        ])
        .unwrap();
        assert_eq!(c.interval, Duration::from_millis(500));
        assert_eq!(c.duration, Duration::from_secs(120));
        assert!(parse(&["--container-app-names", "a", "--interval", "soon"]).is_err());
        assert!(parse(&["--container-app-names", "a", "--arm-token-source", "pw"]).is_err());
    }

    #[test]
    fn app_lists_are_trimmed_and_empty_ones_refused() {
        let c = parse(&["--container-app-names", " a , ,b "]).unwrap();
        assert_eq!(c.arm.apps(), ["a", "b"]);
        let s = Duration::from_secs(1);
        assert_eq!(validate(&[], &[], s, s), Err(ConfigError::NothingToSample));
        assert!(validate(&["a".into()], &[], s, Duration::from_millis(10)).is_err());
        assert!(validate(&["a".into()], &[], Duration::from_millis(1), s).is_err());
        assert!(validate(&["a".into()], &[], s, s).is_ok());
        let c = parse(&["--job-names", "j, k"]).unwrap();
        assert_eq!(
            (c.arm.apps(), c.arm.jobs()),
            (vec![], vec!["j".into(), "k".into()])
        );
        assert!(validate(&[], &c.arm.jobs(), s, s).is_ok());
    }
}
