//! `lab run --target azure`, before anything is deployed or started: where the Azure
//! environment's settings come from, and the checks that say what is missing.
//!
//! The settings are the process environment first, then the state file `labctl deploy` wrote
//! (`.probelab/azure.json`, or `PROBELAB_AZURE_STATE`). [`prepare`] then checks, in this order,
//! and stops at the first that fails with what to do about it:
//!
//! 1. the settings exist at all (no state file and no `SUBSCRIPTION_ID`: run `labctl deploy`);
//! 2. `SUBSCRIPTION_ID`, `RESOURCE_GROUP` and `LOG_ANALYTICS_WORKSPACE_ID` are set (without the
//!    workspace the run could not collect its logs, so it does not start);
//! 3. an identity gives an ARM token (managed identity, the Azure CLI login, ...);
//! 4. the environment and the two jobs `labctl deploy` creates answer through ARM with it;
//! 5. the Log Analytics workspace answers a query (which also fetches its token).
//!
//! Only then does the run create apps and start jobs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::RunError;
use crate::logs::PullOptions;
use crate::target::{AZURE_STATE_FILE, Target, read_azure_state};

/// What `lab run` waits for before pulling the logs (`--logs-settle`,
/// `--logs-settle-timeout`); see [`crate::logs`].
#[derive(Clone, Copy, Debug)]
pub struct Settle {
    pub settle: Duration,
    pub timeout: Duration,
}

impl Default for Settle {
    fn default() -> Self {
        Settle {
            settle: crate::logs::DEFAULT_SETTLE,
            timeout: crate::logs::DEFAULT_SETTLE_TIMEOUT,
        }
    }
}

/// A checked Azure target and how its logs will be pulled (`since` is set by the run).
pub struct AzureRun {
    pub target: Target,
    pub pull: PullOptions,
}

/// The settings: `env` (the process environment) wins over the state file at `state_path`.
pub fn settings(
    env: &dyn Fn(&str) -> Option<String>,
    state_path: &Path,
) -> Result<BTreeMap<String, String>, RunError> {
    let mut vars = if state_path.exists() {
        read_azure_state(state_path)?
    } else {
        BTreeMap::new()
    };
    if vars.is_empty() && env("SUBSCRIPTION_ID").is_none_or(|s| s.trim().is_empty()) {
        return Err(RunError::Config(format!(
            "target azure: no Azure environment: {} does not exist and SUBSCRIPTION_ID is not \
             set; run `labctl deploy --resource-group RG --location REGION` first (it writes \
             that file), or point PROBELAB_AZURE_STATE at the file it wrote",
            state_path.display()
        )));
    }
    for k in [
        "SUBSCRIPTION_ID",
        "RESOURCE_GROUP",
        "LOG_ANALYTICS_WORKSPACE_ID",
        "ARM_ENDPOINT",
        "ARM_TOKEN_SOURCE",
        "PROBELAB_BASE_NAME",
        "PROBELAB_IMAGE_PREFIX",
        "PROBELAB_REGISTRY_SERVER",
        "PROBELAB_PULL_IDENTITY_ID",
        "PROBELAB_APP_SCHEME",
        "LOG_ANALYTICS_ENDPOINT",
        "AZURE_TENANT_ID",
    ] {
        if let Some(v) = env(k).filter(|v| !v.trim().is_empty()) {
            vars.insert(k.to_owned(), v);
        }
    }
    Ok(vars)
}

/// The state file: `PROBELAB_AZURE_STATE`, else [`AZURE_STATE_FILE`].
pub fn state_path(env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    env("PROBELAB_AZURE_STATE")
        .filter(|v| !v.trim().is_empty())
        .map_or_else(|| PathBuf::from(AZURE_STATE_FILE), PathBuf::from)
}

/// Runs the checks of the module docs; `out` is the pack's `logs/` directory.
pub async fn prepare(
    env: &dyn Fn(&str) -> Option<String>,
    settle: Settle,
    out: PathBuf,
) -> Result<AzureRun, RunError> {
    let path = state_path(env);
    let vars = settings(env, &path)?;
    let from = if path.exists() {
        format!("the environment and {}", path.display())
    } else {
        "the environment".to_owned()
    };
    let missing: Vec<&str> = [
        "SUBSCRIPTION_ID",
        "RESOURCE_GROUP",
        "LOG_ANALYTICS_WORKSPACE_ID",
    ]
    .into_iter()
    .filter(|k| !vars.contains_key(*k))
    .collect();
    if !missing.is_empty() {
        return Err(RunError::Config(format!(
            "target azure needs {} (not in {from}); `labctl deploy` records them, \
             `eval \"$(labctl azure-env)\"` exports them",
            missing.join(", ")
        )));
    }
    // The identity's variables (IDENTITY_ENDPOINT, AZURE_CLIENT_ID, ...) come from the
    // environment only.
    let lookup = |k: &str| vars.get(k).cloned().or_else(|| env(k));
    let target = Target::azure(&lookup)?;
    // 3. An identity: fetch the ARM token now, not after the apps exist.
    let kind = target.arm.token_source().kind();
    target.arm.token_source().token().await.map_err(|e| {
        RunError::Config(format!(
            "target azure: no ARM token from the {kind} identity ({e}); on a workstation run \
             `az login` (and `az account set -s SUBSCRIPTION`), inside Azure give the host a \
             managed identity (IDENTITY_ENDPOINT and IDENTITY_HEADER are then set), or choose \
             the source with ARM_TOKEN_SOURCE"
        ))
    })?;
    // 4. What `labctl deploy` created.
    for (what, path) in [
        (
            "environment",
            target.resource_path("managedEnvironments", &target.env_name),
        ),
        ("job", target.resource_path("jobs", &target.loadgen_job)),
        ("job", target.resource_path("jobs", &target.sampler_job)),
    ] {
        let name = path.rsplit('/').next().unwrap_or_default().to_owned();
        target.get("preflight", &path).await.map_err(|e| {
            RunError::Config(format!(
                "target azure: the {what} {name} in resource group {} does not answer ({e}); \
                 run `labctl deploy` (with the same --base-name) first",
                target.scope.resource_group
            ))
        })?;
    }
    // 5. The workspace answers (and its token is fetched).
    let mut pull = PullOptions::new(
        lookup("LOG_ANALYTICS_WORKSPACE_ID").unwrap_or_default(),
        chrono::Utc::now(),
        out,
    );
    if let Some(e) = lookup("LOG_ANALYTICS_ENDPOINT") {
        pull.endpoint = e;
    }
    pull.settle = settle.settle;
    pull.settle_timeout = settle.timeout;
    pull.subscription_id = lookup("SUBSCRIPTION_ID");
    pull.tenant_id = lookup("AZURE_TENANT_ID");
    crate::logs::check_workspace(&pull).await.map_err(|e| {
        RunError::Config(format!(
            "target azure: the Log Analytics workspace {} does not answer ({e}); check \
             LOG_ANALYTICS_WORKSPACE_ID (the workspace's customer id, `labctl deploy` records \
             it) and that the identity may read it (Log Analytics Reader)",
            pull.workspace
        ))
    })?;
    Ok(AzureRun { target, pull })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn no_state_file_and_no_subscription_says_to_deploy_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("azure.json");
        let err = settings(&env(&[]), &path).unwrap_err().to_string();
        assert!(
            err.contains("labctl deploy") && err.contains("azure.json"),
            "{err}"
        );
        // The environment alone is enough.
        let v = settings(&env(&[("SUBSCRIPTION_ID", "s")]), &path).unwrap();
        assert_eq!(v["SUBSCRIPTION_ID"], "s");
    }

    #[test]
    fn the_environment_wins_over_the_state_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("azure.json");
        std::fs::write(
            &path,
            r#"{"SUBSCRIPTION_ID":"from-file","RESOURCE_GROUP":"rg","LOG_ANALYTICS_WORKSPACE_ID":"ws"}"#,
        )
        .unwrap();
        let v = settings(&env(&[("RESOURCE_GROUP", "from-env")]), &path).unwrap();
        assert_eq!(v["SUBSCRIPTION_ID"], "from-file");
        assert_eq!(v["RESOURCE_GROUP"], "from-env");
    }

    #[tokio::test]
    async fn a_missing_workspace_id_stops_the_run_before_any_call() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("azure.json");
        std::fs::write(&path, r#"{"SUBSCRIPTION_ID":"s","RESOURCE_GROUP":"rg"}"#).unwrap();
        let p = path.display().to_string();
        let e = move |k: &str| (k == "PROBELAB_AZURE_STATE").then(|| p.clone());
        let err = prepare(&e, Settle::default(), dir.path().join("logs"))
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("LOG_ANALYTICS_WORKSPACE_ID") && err.contains("azure.json"),
            "{err}"
        );
    }
}
