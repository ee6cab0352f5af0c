//! `Microsoft.App/jobs` and their executions.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::*;

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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<ManagedServiceIdentity>,
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
    /// `Ready`, `Progressing`, `Suspended` (read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outbound_ip_addresses: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_stream_endpoint: Option<String>,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_trigger_config: Option<EventTriggerConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registries: Option<Vec<RegistryCredentials>>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `configuration.eventTriggerConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventTriggerConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_completion_count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<JobScale>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `eventTriggerConfig.scale`: when executions start.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobScale {
    /// Seconds between two reads of the rules' metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polling_interval: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_executions: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_executions: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<JobScaleRule>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// One of `scale.rules`: a KEDA scaler by `type` with its `metadata`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobScaleRule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The KEDA scaler type, e.g. `metrics-api`, `azure-servicebus`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The scaler's metadata (an object of strings in the spec's examples).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
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
