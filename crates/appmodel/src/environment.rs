//! `Microsoft.App/managedEnvironments`: the members probelab reads or localplane answers of an
//! environment; the rest of what a client sends (workload profiles, log configuration, VNet,
//! zone redundancy, ...) is kept in `extra`, so a GET gives back what the PUT carried.

use serde::{Deserialize, Serialize};

use crate::Extra;

/// `Microsoft.App/managedEnvironments`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ManagedEnvironment {
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
    #[serde(default)]
    pub properties: ManagedEnvironmentProperties,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `ManagedEnvironment.properties`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedEnvironmentProperties {
    /// The spec's `EnvironmentProvisioningState` (`Succeeded`, `Failed`, `Waiting`,
    /// `InitializationInProgress`, ...; read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<String>,
    /// The domain the environment's apps' FQDNs end in (read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_domain: Option<String>,
    /// The environment's static IP (read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub static_ip: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}
