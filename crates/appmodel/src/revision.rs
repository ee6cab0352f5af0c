//! `Microsoft.App/containerApps/revisions` and their replicas.

use serde::{Deserialize, Serialize};

use crate::*;

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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_stream_endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_endpoint: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}
