//! Lines printed by the perturbation sampler and the audit sampler.
//!
//! Field names are the original samplers' (`app`, `revision`, `active`, `replicas`,
//! `traffic_weight`, `provisioning_state`, ...) so the original KQL keeps working.

use serde::{Deserialize, Serialize};

use crate::Timestamp;

/// `RevisionStateSample`: one revision of one app at one tick.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RevisionStateSample {
    pub ts: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perturbation_id: Option<String>,
    /// Which sampler printed it: `perturbation-sampler` or `audit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampler: Option<String>,
    /// 0-based tick number within the sampler's run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick: Option<u64>,
    pub app: String,
    pub revision: String,
    pub active: bool,
    pub replicas: u32,
    pub traffic_weight: u32,
    pub provisioning_state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_active_time: Option<String>,
}

/// `JobExecutionSample`: one execution of one job at one tick (the job's executions list).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobExecutionSample {
    pub ts: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perturbation_id: Option<String>,
    /// Which sampler printed it: `perturbation-sampler` or `audit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampler: Option<String>,
    /// 0-based tick number within the sampler's run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick: Option<u64>,
    pub job: String,
    pub execution: String,
    /// `properties.status`: Running, Processing, Stopped, Degraded, Failed, Unknown, Succeeded
    /// (empty when ARM gave none).
    #[serde(default)]
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<String>,
}

/// One container of a replica, as `ReplicaInventorySample.containers[]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContainerSample {
    pub name: String,
    #[serde(default)]
    pub ready: bool,
    #[serde(default)]
    pub started: bool,
    #[serde(default)]
    pub restart_count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_state: Option<String>,
}

/// `ReplicaInventorySample`: one replica at one tick.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplicaInventorySample {
    pub ts: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perturbation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampler: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick: Option<u64>,
    pub app: String,
    pub revision: String,
    pub replica: String,
    pub running_state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_time: Option<String>,
    #[serde(default)]
    pub containers: Vec<ContainerSample>,
}

/// Whether a marker opens or closes a perturbation window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MarkerPhase {
    Start,
    End,
}

/// `PerturbationWindowMarker`: the sampler's window opens (`start`) or closes (`end`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PerturbationWindowMarker {
    pub ts: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perturbation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampler: Option<String>,
    pub phase: MarkerPhase,
    #[serde(default)]
    pub apps: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// On `end`: ticks scheduled and ticks completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticks_scheduled: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticks_completed: Option<u64>,
}

/// `SamplerError`: an ARM call failed, or a tick ran late; the sampler keeps its cadence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplerError {
    pub ts: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perturbation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampler: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    /// What was being done: `list_revisions`, `list_replicas`, `token`, `tick_late`, ...
    pub operation: String,
    /// HTTP status of the failed call, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// ARM error code (`TooManyRequests`, `ResourceNotFound`, ...), when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    pub message: String,
    /// For `tick_late`: how late the tick started, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_ms: Option<u64>,
}
