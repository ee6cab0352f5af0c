//! appmodel: the one typed model of the Microsoft.App resources probelab touches, shared by
//! both sides of its ARM wire: `arm` (the client, re-exported as `arm::models`) sends and reads
//! these types, `localplane` (the emulator) parses and validates the PUT/PATCH bodies it is sent
//! into them, and `lab` renders a lab's apps as them.
//!
//! Shapes follow the Microsoft.App REST specification (`api-version` 2024-03-01 and later):
//! `containerApps`, `revisions`, `replicas`, `jobs`, `executions`. Two rules make them safe to
//! round-trip against a service that is newer than this code:
//!
//! - **Unknown fields are kept.** Every object carries an `extra` map (`#[serde(flatten)]`), so a
//!   GET followed by a PATCH of the whole template sends back what we did not model (init
//!   containers, volumes, service binds, ...) unchanged.
//! - **Unknown enum values are kept.** The spec marks its enums `modelAsString`; ours have an
//!   `Other(String)` variant that carries any value we do not know, and writes it back verbatim.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Fields this crate does not model, kept verbatim for round-trips.
pub type Extra = Map<String, Value>;

/// A list that may be `null` on the wire: ARM, and the clients that send back what a GET gave
/// them (the az CLI's `containerapp create` sends `"traffic": null`, `"probes": null`), mean
/// "none" by it.
fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// Declares a `modelAsString` enum: known variants plus `Other(String)`.
macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $text:literal),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($variant,)*
            /// A value this version of the client does not know, kept verbatim.
            Other(String),
        }

        impl $name {
            /// The wire form of this value.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $text,)*
                    $name::Other(s) => s,
                }
            }
        }

        /// ARM reads enum values case-insensitively (the az CLI sends
        /// `"activeRevisionsMode": "multiple"`); an unknown one is kept verbatim.
        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                $(if s.eq_ignore_ascii_case($text) {
                    return $name::$variant;
                })*
                $name::Other(s.to_owned())
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                Ok($name::from(s.as_ref()))
            }
        }
    };
}

string_enum!(
    /// `RevisionHealthState`.
    RevisionHealthState { Healthy => "Healthy", Unhealthy => "Unhealthy", None => "None" }
);
string_enum!(
    /// `RevisionProvisioningState`.
    RevisionProvisioningState {
        Provisioning => "Provisioning",
        Provisioned => "Provisioned",
        Failed => "Failed",
        Deprovisioning => "Deprovisioning",
        Deprovisioned => "Deprovisioned",
    }
);
string_enum!(
    /// `RevisionRunningState`.
    RevisionRunningState {
        Running => "Running",
        Processing => "Processing",
        Stopped => "Stopped",
        Degraded => "Degraded",
        Failed => "Failed",
        Unknown => "Unknown",
    }
);
string_enum!(
    /// A replica's `runningState`.
    ReplicaRunningState { Running => "Running", NotRunning => "NotRunning", Unknown => "Unknown" }
);
string_enum!(
    /// A replica container's `runningState`.
    ContainerRunningState {
        Running => "Running",
        Terminated => "Terminated",
        Waiting => "Waiting",
    }
);
string_enum!(
    /// An app's or job's `provisioningState`.
    ProvisioningState {
        InProgress => "InProgress",
        Succeeded => "Succeeded",
        Failed => "Failed",
        Canceled => "Canceled",
        Deleting => "Deleting",
    }
);
string_enum!(
    /// `configuration.activeRevisionsMode`.
    ActiveRevisionsMode { Single => "Single", Multiple => "Multiple" }
);
string_enum!(
    /// `ingress.stickySessions.affinity`.
    Affinity { Sticky => "sticky", None => "none" }
);
string_enum!(
    /// A job's `configuration.triggerType`.
    TriggerType { Manual => "Manual", Schedule => "Schedule", Event => "Event" }
);
string_enum!(
    /// A job execution's `status`.
    JobExecutionStatus {
        Running => "Running",
        Processing => "Processing",
        Stopped => "Stopped",
        Degraded => "Degraded",
        Failed => "Failed",
        Unknown => "Unknown",
        Succeeded => "Succeeded",
    }
);
string_enum!(
    /// A probe's `type`.
    ProbeType { Liveness => "Liveness", Readiness => "Readiness", Startup => "Startup" }
);

/// One page of an ARM list: `value` plus `nextLink` when there is more.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Page<T> {
    #[serde(default = "Vec::new")]
    pub value: Vec<T>,
    #[serde(rename = "nextLink", default, skip_serializing_if = "Option::is_none")]
    pub next_link: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// containerApps

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

// ---------------------------------------------------------------------------------------------
// revisions and replicas

/// `Microsoft.App/containerApps/revisions`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Revision {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default)]
    pub name: String,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default)]
    pub properties: RevisionProperties,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `Revision.properties`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionProperties {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_active_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fqdn: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<Template>,
    #[serde(default)]
    pub active: bool,
    #[serde(default)]
    pub replicas: u32,
    #[serde(default)]
    pub traffic_weight: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_state: Option<RevisionHealthState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<RevisionProvisioningState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_state: Option<RevisionRunningState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_state_details: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `Microsoft.App/containerApps/revisions/replicas`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Replica {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default)]
    pub name: String,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default)]
    pub properties: ReplicaProperties,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `Replica.properties`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaProperties {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_state: Option<ReplicaRunningState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_state_details: Option<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub containers: Vec<ReplicaContainer>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_containers: Option<Vec<ReplicaContainer>>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// One container of a replica.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaContainer {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
    #[serde(default)]
    pub ready: bool,
    #[serde(default)]
    pub started: bool,
    #[serde(default)]
    pub restart_count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_state: Option<ContainerRunningState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_state_details: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

// ---------------------------------------------------------------------------------------------
// jobs and executions

/// `Microsoft.App/jobs`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Job {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    #[serde(default)]
    pub properties: JobProperties,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `Job.properties`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobProperties {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<JobConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<Template>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `Job.properties.configuration`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobConfiguration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_type: Option<TriggerType>,
    /// Seconds a replica may run before it is killed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_timeout: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_retry_limit: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual_trigger_config: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_trigger_config: Option<ScheduleTriggerConfig>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `configuration.scheduleTriggerConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleTriggerConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron_expression: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_completion_count: Option<u32>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The body of a job start: an optional override of the job's containers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobExecutionTemplate {
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub containers: Vec<Container>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub init_containers: Vec<Container>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// What a job start answers: the new execution's name and id.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobExecutionBase {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `Microsoft.App/jobs/executions`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobExecution {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default)]
    pub properties: JobExecutionProperties,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `JobExecution.properties`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobExecutionProperties {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<JobExecutionStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<JobExecutionTemplate>,
    #[serde(flatten)]
    pub extra: Extra,
}

// ---------------------------------------------------------------------------------------------
// errors and operations

/// ARM's error envelope: `{"error": {"code": ..., "message": ...}}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorResponse {
    #[serde(default)]
    pub error: ErrorDetail,
}

/// The inside of an ARM error.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    #[serde(default)]
    pub code: String,
    #[serde(default)]
    pub message: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The body an `Azure-AsyncOperation` URL answers with.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OperationStatus {
    #[serde(default)]
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorDetail>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl OperationStatus {
    /// True once the operation reached `Succeeded`, `Failed` or `Canceled` (any case).
    pub fn is_terminal(&self) -> bool {
        matches!(
            self.status.to_ascii_lowercase().as_str(),
            "succeeded" | "failed" | "canceled" | "cancelled"
        )
    }

    /// True for `Succeeded`.
    pub fn succeeded(&self) -> bool {
        self.status.eq_ignore_ascii_case("succeeded")
    }
}
