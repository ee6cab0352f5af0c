//! `Microsoft.App/containerApps`: the app, its configuration (secrets, registries, ingress,
//! traffic), its template (containers, env, resources, probes) and its scale rules.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::*;

/// `Microsoft.App/containerApps`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ContainerApp {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// Resource tags (`TrackedResource.tags`: string values).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<ManagedServiceIdentity>,
    #[serde(default)]
    pub properties: ContainerAppProperties,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `ContainerApp.properties`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerAppProperties {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_environment_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_revision_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_ready_revision_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_revision_fqdn: Option<String>,
    /// `Progressing`, `Running`, `Stopped`, ... (read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outbound_ip_addresses: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_stream_endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<Configuration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<Template>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `ManagedServiceIdentity`: the identities assigned to an app (`type`: `None`,
/// `SystemAssigned`, `UserAssigned`, `SystemAssigned,UserAssigned`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedServiceIdentity {
    #[serde(rename = "type")]
    pub kind: String,
    /// Resource id of each user-assigned identity → its (server-filled) details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_assigned_identities: Option<BTreeMap<String, Value>>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `ContainerApp.properties.configuration`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Configuration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_revisions_mode: Option<ActiveRevisionsMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress: Option<Ingress>,
    /// How many inactive revisions the service keeps (the spec's `maxInactiveRevisions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_inactive_revisions: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secrets: Option<Vec<Secret>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registries: Option<Vec<RegistryCredentials>>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// One `configuration.secrets` entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Secret {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// One `configuration.registries` entry: a registry server and how to authenticate to it
/// (a managed `identity`'s resource id, or `username` + `passwordSecretRef`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegistryCredentials {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_secret_ref: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `configuration.ingress`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ingress {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fqdn: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<bool>,
    /// The spec's `int32`; localplane checks the 1..65535 range itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_port: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_insecure: Option<bool>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub traffic: Vec<TrafficWeight>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sticky_sessions: Option<StickySessions>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `ingress.stickySessions`: session affinity (`sticky` or `none`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StickySessions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// One entry of `ingress.traffic` (`TrafficWeight`): a weight for a named revision or for
/// whatever revision is latest (`latestRevision: true`), optionally with a `label`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrafficWeight {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_revision: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// An app's or revision's `template`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Template {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_suffix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<u64>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub containers: Vec<Container>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<Scale>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// One container of a template.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub env: Vec<EnvVar>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ContainerResources>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub probes: Vec<Probe>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Container {
    /// Sets `name` to `value` in this container's env, replacing a plain value or a secret
    /// reference of that name, appending it otherwise. Returns whether anything changed.
    pub fn set_env(&mut self, name: &str, value: &str) -> bool {
        match self.env.iter_mut().find(|e| e.name == name) {
            Some(e) if e.value.as_deref() == Some(value) && e.secret_ref.is_none() => false,
            Some(e) => {
                e.value = Some(value.to_owned());
                e.secret_ref = None;
                true
            }
            None => {
                self.env.push(EnvVar {
                    name: name.to_owned(),
                    value: Some(value.to_owned()),
                    ..EnvVar::default()
                });
                true
            }
        }
    }

    /// The plain value of env var `name`, if set.
    pub fn env_value(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|e| e.name == name)
            .and_then(|e| e.value.as_deref())
    }
}

/// One `env` entry: a plain `value` or a `secretRef`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvVar {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A container's `resources`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerResources {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A container `probes[]` entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Probe {
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub probe_type: Option<ProbeType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_get: Option<HttpGetAction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_socket: Option<TcpSocketAction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_delay_seconds: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_seconds: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_threshold: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_threshold: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<u64>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `probe.httpGet`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpGetAction {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Required by the spec (`int32`); a missing port reads as 0, which localplane refuses.
    #[serde(default)]
    pub port: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_headers: Option<Vec<HttpHeader>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// One `httpGet.httpHeaders` entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HttpHeader {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub value: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `probe.tcpSocket`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TcpSocketAction {
    /// Required by the spec (`int32`); a missing port reads as 0, which localplane refuses.
    #[serde(default)]
    pub port: i32,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `template.scale` (`Scale`): the replica range and the rules that move an app within it.
/// The service's defaults when a field is left out: `maxReplicas` 10, `cooldownPeriod` 300 s,
/// `pollingInterval` 30 s (see [`Scale::DEFAULT_MAX_REPLICAS`] and the others).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Scale {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_replicas: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_replicas: Option<u32>,
    /// Seconds after the last active trigger before scaling back to `minReplicas`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown_period: Option<u32>,
    /// Seconds between checks of each event-driven rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polling_interval: Option<u32>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub rules: Vec<ScaleRule>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Scale {
    /// `maxReplicas` when the template leaves it out (the spec's default).
    pub const DEFAULT_MAX_REPLICAS: u32 = 10;
    /// `cooldownPeriod` when the template leaves it out (the spec's default, seconds).
    pub const DEFAULT_COOLDOWN_PERIOD_S: u32 = 300;
    /// `pollingInterval` when the template leaves it out (the spec's default, seconds).
    pub const DEFAULT_POLLING_INTERVAL_S: u32 = 30;
}

/// One `scale.rules[]` entry (`ScaleRule`): a name and exactly one trigger.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleRule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub azure_queue: Option<QueueScaleRule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<CustomScaleRule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpScaleRule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpScaleRule>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `ScaleRule.http` (`HttpScaleRule`): scales on concurrent HTTP requests; `metadata` holds
/// the scaler's parameters as strings (`concurrentRequests`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpScaleRule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<BTreeMap<String, String>>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub auth: Vec<ScaleRuleAuth>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `ScaleRule.tcp` (`TcpScaleRule`): scales on concurrent TCP connections (`concurrentConnections`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TcpScaleRule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<BTreeMap<String, String>>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub auth: Vec<ScaleRuleAuth>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `ScaleRule.custom` (`CustomScaleRule`): any KEDA scaler, named by `type`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomScaleRule {
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<BTreeMap<String, String>>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub auth: Vec<ScaleRuleAuth>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `ScaleRule.azureQueue` (`QueueScaleRule`): scales on an Azure Storage queue's length.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueScaleRule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_length: Option<u32>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub auth: Vec<ScaleRuleAuth>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// One `auth[]` entry of a scale rule: a secret passed to the scaler as `triggerParameter`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleRuleAuth {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_parameter: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}
