//! appmodel: the one typed model of the Microsoft.App resources probelab touches, shared by
//! both sides of its ARM wire: `arm` (the client, re-exported as `arm::models`) sends and reads
//! these types, `localplane` (the emulator) parses and validates the PUT/PATCH bodies it is sent
//! into them, and `lab` renders a lab's apps as them.
//!
//! Shapes follow the Microsoft.App REST specification (`api-version` 2024-03-01 and later):
//! `containerApps` (`app`), `managedEnvironments` (`environment`), `revisions` and `replicas`
//! (`revision`), `jobs` and `executions` (`job`); this root holds the enums, list pages, errors
//! and operation status. Two rules make them safe to round-trip against a service that is newer
//! than this code:
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

mod app;
mod environment;
mod job;
mod revision;

pub use app::*;
pub use environment::*;
pub use job::*;
pub use revision::*;

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
