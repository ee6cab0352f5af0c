//! Lines printed by the subject app: `kind: "subject"` with the event name in `event`.

use serde::{Deserialize, Serialize};

use crate::Timestamp;

/// The subject's event names (the original labs' names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SubjectEvent {
    BootStart,
    StartupComplete,
    RequestEnd,
    DependencyCheckOk,
    DependencyCheckFail,
    SimulationChanged,
    SigtermReceived,
    ShutdownComplete,
    /// Queue-worker mode: the item this process took from the queue (`item`).
    QueueItemTaken,
    /// Queue-worker mode: the item is done (`item`, `dur_ms` of the work), then the process exits.
    QueueItemDone,
    /// Queue-worker mode: the queue had no item to take; the process exits 0 without work.
    QueueEmpty,
    /// Batch mode: the work is done (`dur_ms`); the process exits with the code in `detail`.
    BatchDone,
}

/// A `subject` line. Fields that do not apply to an event are omitted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubjectLine {
    pub ts: Timestamp,
    pub event: SubjectEvent,
    pub app: String,
    pub revision: String,
    pub replica: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub generation: String,
    /// REQUEST_END: method, path (without query), status, duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dur_ms: Option<f64>,
    /// Requests being handled when the line was printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inflight: Option<u64>,
    /// DEPENDENCY_CHECK_*: which probe asked (`readiness`, `liveness`, `dependency`) and the
    /// target checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// SIMULATION_CHANGED: `zombie`, `deadlock`, `crash`, `reset`, `dependency`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulation: Option<String>,
    /// SIGTERM_RECEIVED / SHUTDOWN_COMPLETE: the shutdown mode in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shutdown_mode: Option<String>,
    /// Human-readable detail (an error message, the reason for a state change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// BOOT_START / STARTUP_COMPLETE: the effective configuration, secrets removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Value>,
    /// QUEUE_ITEM_*: the id of the queue item (the subject's `/queue`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<String>,
}

impl SubjectLine {
    /// A line with only the identity fields set; fill the rest with struct update syntax.
    pub fn new(
        event: SubjectEvent,
        app: &str,
        revision: &str,
        replica: &str,
        generation: &str,
    ) -> Self {
        SubjectLine {
            ts: Timestamp::now(),
            event,
            app: app.to_owned(),
            revision: revision.to_owned(),
            replica: replica.to_owned(),
            generation: generation.to_owned(),
            method: None,
            path: None,
            status: None,
            dur_ms: None,
            inflight: None,
            probe: None,
            target: None,
            simulation: None,
            shutdown_mode: None,
            detail: None,
            config: None,
            item: None,
        }
    }
}
