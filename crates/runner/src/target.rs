//! A target: an ARM endpoint and scope where the lab's environment, jobs and apps live, and how
//! the apps are reached from the host (actions) and from inside the environment (jobs).
//!
//! The local target is localplane's ARM API; the Azure target is `https://management.azure.com`
//! (or `ARM_ENDPOINT`, which is how the Azure code path is tested against localplane). Both go
//! through the same calls below.

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use arm::{ArmClient, ClientConfig, IdentityEnv, Scope, TokenSource, TokenSourceKind};
use reqwest::Method;
use serde_json::Value;
use url::Url;

use crate::RunError;

/// The subscription id localplane is addressed with (any id works; localplane lists this one).
pub const LOCAL_SUBSCRIPTION: &str = localplane::tenancy::SUBSCRIPTION_ID;
pub const LOCAL_RESOURCE_GROUP: &str = "probelab-local";
/// Resource names follow infra/main.bicep with its default `baseName`.
pub const DEFAULT_BASE_NAME: &str = "probelab";

/// Where `labctl deploy` writes the Azure environment's outputs, keyed by the variables
/// [`Target::azure`] reads. `PROBELAB_AZURE_STATE` names another file.
pub const AZURE_STATE_FILE: &str = ".probelab/azure.json";

/// The deployment outputs a state file's `outputs` holds that [`Target::azure`] reads, with the
/// variable each one fills when the file has no top-level value for it (state files written
/// before `labctl deploy` recorded them at the top level).
const OUTPUT_VARS: [(&str, &str); 2] = [
    ("registryLoginServer", "PROBELAB_REGISTRY_SERVER"),
    ("pullIdentityId", "PROBELAB_PULL_IDENTITY_ID"),
];

/// Reads a `labctl deploy` state file: its upper-case top-level string values (`SUBSCRIPTION_ID`,
/// `RESOURCE_GROUP`, `LOG_ANALYTICS_WORKSPACE_ID`, ...), plus `PROBELAB_REGISTRY_SERVER` and
/// `PROBELAB_PULL_IDENTITY_ID` from the outputs `registryLoginServer` and `pullIdentityId` when
/// the top level lacks them. Other keys (the rest of the raw outputs) are skipped.
pub fn read_azure_state(path: &Path) -> Result<BTreeMap<String, String>, RunError> {
    let text = std::fs::read_to_string(path).map_err(|e| RunError::io(path, e))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| {
        RunError::Config(format!(
            "{} (written by `labctl deploy`): {e}",
            path.display()
        ))
    })?;
    let obj = v
        .as_object()
        .ok_or_else(|| RunError::Config(format!("{} is not a JSON object", path.display())))?;
    let mut vars: BTreeMap<String, String> = obj
        .iter()
        .filter(|(k, _)| k.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_owned())))
        .collect();
    for (output, var) in OUTPUT_VARS {
        if let Some(v) = obj
            .get("outputs")
            .and_then(|o| o.get(output))
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
        {
            vars.entry(var.to_owned()).or_insert_with(|| v.to_owned());
        }
    }
    Ok(vars)
}

/// The private registry apps pull from on Azure, and the user-assigned identity with `AcrPull`
/// on it (infra/main.bicep's `registryLoginServer` and `pullIdentityId` outputs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistryAccess {
    pub server: String,
    /// Resource id of the pull identity.
    pub identity: String,
}

impl RegistryAccess {
    /// As the ARM body of an app carries it.
    pub fn placement(&self) -> lab::arm_body::Registry<'_> {
        lab::arm_body::Registry {
            server: &self.server,
            identity: &self.identity,
        }
    }
}

/// How a job inside the environment reaches an app's ingress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addressing {
    /// `http://<app>`, as in Container Apps (Azure, and localplane's docker runtime).
    ByName,
    /// `http://<fqdn>` (localplane's process runtime: every process is on the host).
    ByFqdn,
}

/// Which platform a [`Target`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetKind {
    /// localplane, started in-process.
    Local,
    /// Azure Container Apps (or any ARM endpoint).
    Azure,
}

impl TargetKind {
    /// `local` or `azure`, as runs.json and the progress lines name it.
    pub fn as_str(self) -> &'static str {
        match self {
            TargetKind::Local => "local",
            TargetKind::Azure => "azure",
        }
    }
}

/// Where a lab runs.
#[derive(Clone, Debug)]
pub struct Target {
    pub kind: TargetKind,
    pub arm: ArmClient,
    pub scope: Scope,
    pub env_name: String,
    pub loadgen_job: String,
    pub sampler_job: String,
    pub addressing: Addressing,
    /// `http` locally, `https` on Azure: how the host reaches an app's `fqdn`.
    pub host_scheme: &'static str,
    /// Replaces the `probelab/` prefix of images (Azure: `<registry>/probelab/`).
    pub image_prefix: Option<String>,
    /// The registry the apps pull from with the pull identity (Azure; `None` locally, where
    /// nothing is pulled).
    pub registry: Option<RegistryAccess>,
    /// How often a job execution's status is read while the runner waits for it to end: each
    /// step waits for its loadgen run, so up to one period per step is lost after the run ends.
    /// 250 ms on localplane (a GET answered from memory), 1 s on Azure.
    pub execution_poll: Duration,
}

/// Names of the resources, from `PROBELAB_BASE_NAME` [probelab].
pub fn names(base: &str) -> (String, String, String) {
    (
        format!("{base}-env"),
        format!("{base}-loadgen"),
        format!("{base}-perturbation-sampler"),
    )
}

impl Target {
    /// localplane at `base_url` (no token).
    pub fn local(base_url: &str, addressing: Addressing) -> Result<Target, RunError> {
        let endpoint = Url::parse(base_url)
            .map_err(|e| RunError::Config(format!("localplane URL {base_url}: {e}")))?;
        let mut cfg = ClientConfig::new(endpoint);
        cfg.lro_poll = Duration::from_millis(500);
        let arm = ArmClient::new(cfg, TokenSource::none())?;
        let (env_name, loadgen_job, sampler_job) = names(DEFAULT_BASE_NAME);
        Ok(Target {
            kind: TargetKind::Local,
            arm,
            scope: Scope::new(LOCAL_SUBSCRIPTION, LOCAL_RESOURCE_GROUP),
            env_name,
            loadgen_job,
            sampler_job,
            addressing,
            host_scheme: "http",
            image_prefix: None,
            registry: None,
            execution_poll: Duration::from_millis(250),
        })
    }

    /// Azure, from `SUBSCRIPTION_ID`, `RESOURCE_GROUP`, and optionally `ARM_ENDPOINT`,
    /// `ARM_TOKEN_SOURCE` [auto: the operator's Azure CLI login on a workstation],
    /// `PROBELAB_BASE_NAME` [probelab], `PROBELAB_APP_SCHEME` [https: how the host reaches an
    /// app's ingress], `PROBELAB_IMAGE_PREFIX` (e.g. `myacr.azurecr.io/probelab/`)
    /// and `PROBELAB_REGISTRY_SERVER` with `PROBELAB_PULL_IDENTITY_ID` (both or neither: the apps
    /// then pull from that registry with that identity).
    pub fn azure(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Target, RunError> {
        let get = |k: &str| lookup(k).filter(|v| !v.trim().is_empty());
        let need = |k: &str| {
            get(k).ok_or_else(|| {
                RunError::Config(format!(
                    "target azure needs {k} (also SUBSCRIPTION_ID, RESOURCE_GROUP; \
                     LOG_ANALYTICS_WORKSPACE_ID to pull logs)"
                ))
            })
        };
        let sub = need("SUBSCRIPTION_ID")?;
        let rg = need("RESOURCE_GROUP")?;
        let endpoint_s =
            get("ARM_ENDPOINT").unwrap_or_else(|| arm::client::DEFAULT_ENDPOINT.into());
        let endpoint = Url::parse(&endpoint_s)
            .map_err(|e| RunError::Config(format!("ARM_ENDPOINT {endpoint_s}: {e}")))?;
        let kind = TokenSourceKind::from_str(&get("ARM_TOKEN_SOURCE").unwrap_or_default())
            .map_err(RunError::Config)?;
        let env = IdentityEnv::from_lookup(|k| lookup(k));
        let token = TokenSource::build(kind, &env, &endpoint, arm::token::DEFAULT_SCOPE)?;
        let arm = ArmClient::new(ClientConfig::new(endpoint), token)?;
        let base = get("PROBELAB_BASE_NAME").unwrap_or_else(|| DEFAULT_BASE_NAME.into());
        let (env_name, loadgen_job, sampler_job) = names(&base);
        let registry = match (
            get("PROBELAB_REGISTRY_SERVER"),
            get("PROBELAB_PULL_IDENTITY_ID"),
        ) {
            (Some(server), Some(identity)) => Some(RegistryAccess { server, identity }),
            (None, None) => None,
            (Some(_), None) | (None, Some(_)) => {
                return Err(RunError::Config(
                    "PROBELAB_REGISTRY_SERVER and PROBELAB_PULL_IDENTITY_ID go together (the \
                     apps pull from the registry with the identity that has AcrPull on it); \
                     set both, or run `labctl deploy` again to record them"
                        .into(),
                ));
            }
        };
        // Container Apps' external ingress is HTTPS; `http` is for the rehearsal against
        // localplane, whose ingress serves plain HTTP (docs/FIDELITY.md).
        let host_scheme = match get("PROBELAB_APP_SCHEME").as_deref() {
            None | Some("https") => "https",
            Some("http") => "http",
            Some(other) => {
                return Err(RunError::Config(format!(
                    "PROBELAB_APP_SCHEME {other:?}: use https (Container Apps' ingress) or http"
                )));
            }
        };
        Ok(Target {
            kind: TargetKind::Azure,
            arm,
            scope: Scope::new(sub, rg),
            env_name,
            loadgen_job,
            sampler_job,
            addressing: Addressing::ByName,
            host_scheme,
            image_prefix: get("PROBELAB_IMAGE_PREFIX"),
            registry,
            execution_poll: Duration::from_secs(1),
        })
    }

    /// `/subscriptions/.../providers/Microsoft.App/<kind>/<name>`.
    pub fn resource_path(&self, kind: &str, name: &str) -> String {
        format!(
            "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.App/{kind}/{name}",
            self.scope.subscription_id, self.scope.resource_group
        )
    }

    pub fn environment_id(&self) -> String {
        self.resource_path("managedEnvironments", &self.env_name)
    }

    /// The full URL of an ARM path, with `api-version`.
    pub fn url(&self, path: &str) -> Result<Url, RunError> {
        let cfg = self.arm.config();
        let mut url = cfg
            .endpoint
            .join(path)
            .map_err(|e| RunError::Config(format!("bad ARM path {path}: {e}")))?;
        url.query_pairs_mut()
            .append_pair("api-version", &cfg.api_version);
        Ok(url)
    }

    /// A mutating call, waiting for its long-running operation.
    pub async fn send(
        &self,
        op: &str,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, RunError> {
        let resp = self
            .arm
            .send_and_wait(op, method, self.url(path)?, body)
            .await?;
        Ok(serde_json::from_slice(&resp.body).unwrap_or(Value::Null))
    }

    /// A mutating call whose long-running operation is not waited for: the request was
    /// accepted (2xx), and the caller observes what follows.
    pub async fn send_accepted(
        &self,
        op: &str,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, RunError> {
        let resp = self.arm.send(op, method, self.url(path)?, body).await?;
        Ok(serde_json::from_slice(&resp.body).unwrap_or(Value::Null))
    }

    pub async fn get(&self, op: &str, path: &str) -> Result<Value, RunError> {
        let resp = self
            .arm
            .send(op, Method::GET, self.url(path)?, None)
            .await?;
        serde_json::from_slice(&resp.body).map_err(|e| {
            RunError::Arm(arm::ArmError::Decode {
                operation: op.to_owned(),
                error: e,
            })
        })
    }

    /// The image reference to deploy for a lab's `probelab/<name>:<tag>`.
    pub fn image(&self, image: &str) -> String {
        match (&self.image_prefix, image.strip_prefix("probelab/")) {
            (Some(prefix), Some(rest)) => {
                format!("{}/{rest}", prefix.trim_end_matches('/'))
            }
            _ => image.to_owned(),
        }
    }

    /// `scheme://<fqdn>` of an app's ingress, as the host reaches it (for actions).
    pub async fn app_host_url(&self, app: &str) -> Result<String, RunError> {
        let a = self.arm.get_app(&self.scope, app).await?;
        let fqdn = a
            .properties
            .configuration
            .and_then(|c| c.ingress)
            .and_then(|i| i.fqdn)
            .filter(|f| !f.is_empty())
            .ok_or_else(|| {
                RunError::Config(format!(
                    "app {app} has no ingress fqdn (is ingress enabled?)"
                ))
            })?;
        Ok(if fqdn.contains("://") {
            fqdn
        } else {
            format!("{}://{fqdn}", self.host_scheme)
        })
    }

    /// `http://<app>` (or the fqdn with the process runtime): how a job reaches the app.
    pub async fn app_env_url(&self, app: &str) -> Result<String, RunError> {
        match self.addressing {
            Addressing::ByName => Ok(format!("http://{app}")),
            Addressing::ByFqdn => {
                let u = self.app_host_url(app).await?;
                Ok(u.replacen("https://", "http://", 1))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deploy_state_file_gives_the_variables_and_skips_the_raw_outputs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("azure.json");
        std::fs::write(
            &path,
            r#"{"SUBSCRIPTION_ID":"sub","RESOURCE_GROUP":"rg","LOG_ANALYTICS_WORKSPACE_ID":"ws",
                "outputs":{"environmentId":"/x"},"lowercase":"no","PORT":8080}"#,
        )
        .unwrap();
        let state = read_azure_state(&path).unwrap();
        assert_eq!(
            state.keys().map(String::as_str).collect::<Vec<_>>(),
            [
                "LOG_ANALYTICS_WORKSPACE_ID",
                "RESOURCE_GROUP",
                "SUBSCRIPTION_ID"
            ]
        );
        let t = Target::azure(&|k| state.get(k).cloned()).unwrap();
        assert_eq!(t.scope.resource_group, "rg");
        std::fs::write(&path, "[1]").unwrap();
        assert!(
            read_azure_state(&path)
                .unwrap_err()
                .to_string()
                .contains("not a JSON object")
        );
        let missing = read_azure_state(&dir.path().join("nope.json"))
            .unwrap_err()
            .to_string();
        assert!(missing.contains("nope.json"), "{missing}");
    }

    #[test]
    fn the_registry_and_pull_identity_come_from_the_state_file_outputs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("azure.json");
        let pull = "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/probelab-pull";
        std::fs::write(
            &path,
            serde_json::json!({
                "SUBSCRIPTION_ID": "sub", "RESOURCE_GROUP": "rg",
                "outputs": {"registryLoginServer": "acr1.azurecr.io", "pullIdentityId": pull},
            })
            .to_string(),
        )
        .unwrap();
        let state = read_azure_state(&path).unwrap();
        assert_eq!(state["PROBELAB_REGISTRY_SERVER"], "acr1.azurecr.io");
        assert_eq!(state["PROBELAB_PULL_IDENTITY_ID"], pull);
        let t = Target::azure(&|k| state.get(k).cloned()).unwrap();
        assert_eq!(
            t.registry,
            Some(RegistryAccess {
                server: "acr1.azurecr.io".into(),
                identity: pull.into()
            })
        );
        // The environment (here: a top-level value) wins over the outputs.
        std::fs::write(
            &path,
            serde_json::json!({
                "PROBELAB_REGISTRY_SERVER": "other.azurecr.io",
                "outputs": {"registryLoginServer": "acr1.azurecr.io"},
            })
            .to_string(),
        )
        .unwrap();
        assert_eq!(
            read_azure_state(&path).unwrap()["PROBELAB_REGISTRY_SERVER"],
            "other.azurecr.io"
        );
        // One without the other is a configuration error, not a silent public pull.
        let err = Target::azure(&|k| match k {
            "SUBSCRIPTION_ID" | "RESOURCE_GROUP" => Some("x".into()),
            "PROBELAB_REGISTRY_SERVER" => Some("acr1.azurecr.io".into()),
            _ => None,
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("PROBELAB_PULL_IDENTITY_ID"), "{err}");
        // Locally nothing is pulled.
        let local = Target::local("http://127.0.0.1:9", Addressing::ByName).unwrap();
        assert!(local.registry.is_none());
    }

    /// The Azure code path against localplane: an app body carrying `registries` and a
    /// user-assigned `identity` is accepted (201), its registries kept, and it gets a revision.
    #[tokio::test]
    async fn localplane_accepts_an_app_that_pulls_with_an_identity() {
        let dir = tempfile::tempdir().unwrap();
        let lp = localplane::start(localplane::LocalplaneConfig {
            max_replicas: localplane::quota::DEFAULT_MAX_REPLICAS,
            tls: false,
            listen: std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0)),
            state_dir: dir.path().join("state"),
            evidence_dir: dir.path().join("evidence"),
            runtime: localplane::RuntimeKind::Process {
                bin_dir: dir.path().join("no-binaries"),
            },
        })
        .await
        .unwrap();
        let base = lp.base_url();
        let pull = "/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/probelab-rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/probelab-pull";
        let t = Target::azure(&|k| match k {
            "SUBSCRIPTION_ID" => Some("11111111-2222-3333-4444-555555555555".into()),
            "RESOURCE_GROUP" => Some("probelab-rg".into()),
            "ARM_ENDPOINT" => Some(base.clone()),
            "PROBELAB_REGISTRY_SERVER" => Some("acr1.azurecr.io".into()),
            "PROBELAB_PULL_IDENTITY_ID" => Some(pull.into()),
            _ => None,
        })
        .unwrap();
        crate::deploy::local_infrastructure(&t, Duration::from_secs(600))
            .await
            .unwrap();
        let app: lab::schema::App = serde_json::from_value(serde_json::json!({
            "name": "subject", "image": "probelab/subject:dev",
            "ingress": {"external": true, "target_port": 8080},
        }))
        .unwrap();
        let env_id = t.environment_id();
        let body = serde_json::to_value(lab::arm_body::container_app(
            &app,
            &lab::arm_body::Placement {
                location: "local",
                environment_id: &env_id,
                simulate_token: None,
                tags: &[],
                registry: t.registry.as_ref().map(|r| r.placement()),
            },
        ))
        .unwrap();
        let path = t.resource_path("containerApps", "subject");
        // Accepted (201): no waiting for the operation, as the revision can never get ready
        // without binaries.
        let put = t
            .arm
            .send("put_app", Method::PUT, t.url(&path).unwrap(), Some(&body))
            .await
            .unwrap();
        assert_eq!(put.status, 201);
        let got = t.get("get_app", &path).await.unwrap();
        assert_eq!(
            got["properties"]["configuration"]["registries"][0]["identity"],
            pull
        );
        // localplane accepts the app's `identity` and does not keep it (docs/FIDELITY.md).
        let a = t.arm.get_app(&t.scope, "subject").await.unwrap();
        assert!(
            a.properties
                .latest_revision_name
                .is_some_and(|r| !r.is_empty()),
            "a revision was created"
        );
        lp.shutdown().await.unwrap();
    }

    #[test]
    fn azure_needs_its_scope_and_names_follow_the_bicep() {
        let err = Target::azure(&|_| None).unwrap_err().to_string();
        assert!(err.contains("SUBSCRIPTION_ID"), "{err}");
        let t = Target::azure(&|k| match k {
            "SUBSCRIPTION_ID" => Some("sub".into()),
            "RESOURCE_GROUP" => Some("rg".into()),
            "ARM_ENDPOINT" => Some("http://127.0.0.1:9".into()),
            "PROBELAB_IMAGE_PREFIX" => Some("acr.example.io/probelab/".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(t.loadgen_job, "probelab-loadgen");
        assert_eq!(t.sampler_job, "probelab-perturbation-sampler");
        assert_eq!(
            t.environment_id(),
            "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.App/managedEnvironments/probelab-env"
        );
        assert_eq!(
            t.image("probelab/subject:dev"),
            "acr.example.io/probelab/subject:dev"
        );
        assert_eq!(t.image("nginx:1"), "nginx:1");
        let u = t.url("/x").unwrap();
        assert!(
            u.as_str().starts_with("http://127.0.0.1:9/x?api-version="),
            "{u}"
        );
    }
}
