//! `log`: diagnostics from `tracing`, written as JSON lines like every other kind.

use serde::{Deserialize, Serialize};

use crate::Timestamp;

/// A tracing event: level, target, message and its structured fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogLine {
    pub ts: Timestamp,
    pub level: String,
    /// The program that printed it (`subject`, `loadgen`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    pub msg: String,
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub fields: serde_json::Map<String, serde_json::Value>,
}
