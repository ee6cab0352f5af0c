//! Lines printed by `loadgen`: `meta`, `bucket`, `req`, `step`, `summary`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::Timestamp;

/// Whether a `meta` line opens or closes a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MetaPhase {
    Start,
    End,
}

/// `meta`: printed at the start and at the end of a run, with the effective configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub ts: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perturbation_id: Option<String>,
    pub phase: MetaPhase,
    /// The program that printed it, e.g. `loadgen`.
    pub tool: String,
    pub version: String,
    /// The effective configuration (flags and env merged), free-form.
    #[serde(default)]
    pub config: serde_json::Value,
}

/// `bucket`: one scenario's results for one wall-clock aligned window.
///
/// The first fields are the original lab's (`window_s` … `target_rps`); a bucket is printed for
/// every window of a run, also when it saw no request (then `count` is 0).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bucket {
    pub ts: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perturbation_id: Option<String>,
    pub window_s: u64,
    pub bucket_start_epoch_s: i64,
    pub bucket_start_iso: String,
    pub count: u64,
    pub ok: u64,
    pub err: u64,
    pub err_pct: f64,
    pub target_rps: f64,
    /// Scenario name: `main` for the main stream, the `name=` of a side stream otherwise.
    #[serde(default = "default_scenario")]
    pub scenario: String,
    /// Requests that could not start because `--max-in-flight` was reached (k6's dropped
    /// iterations). Not part of `count`.
    #[serde(default)]
    pub dropped: u64,
    /// Latency percentiles measured from each request's scheduled time (coordinated-omission
    /// free), in milliseconds; absent when the window saw no completed request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ms: Option<f64>,
    /// The same percentiles measured from the actual send time (what k6 reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_p50_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_p99_ms: Option<f64>,
    /// Responses by HTTP status code (`"200"`, `"503"`).
    #[serde(default)]
    pub status: BTreeMap<String, u64>,
    /// Failed requests by error class (`timeout`, `connect`, `tls`, `reset`, `dns`, `protocol`,
    /// `http_5xx`, ...).
    #[serde(default)]
    pub errors: BTreeMap<String, u64>,
    /// Responses by the revision that served them (`X-Revision`), `unknown` when not attributed.
    #[serde(default)]
    pub served_by: BTreeMap<String, u64>,
}

pub(crate) fn default_scenario() -> String {
    "main".to_owned()
}

/// `req`: one request (printed per `--log-requests`: all, errors only, or none).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Req {
    /// When the response (or the error) arrived.
    pub ts: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perturbation_id: Option<String>,
    #[serde(default = "default_scenario")]
    pub scenario: String,
    /// When the request was scheduled to start (open model).
    pub scheduled_ts: Timestamp,
    /// HTTP status, absent when no response arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
    /// Milliseconds from the scheduled time to the response.
    pub dur_ms: f64,
    /// Milliseconds from the actual send to the response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_dur_ms: Option<f64>,
    pub ok: bool,
    /// Error class (`timeout`, `connect`, `tls`, `reset`, `dns`, `protocol`, `http_5xx`, ...) of a
    /// failed request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub err_class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub err_msg: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<String>,
}

/// `client`: a virtual client of `--clients` whose replica or cookies changed. The first line
/// of a client is its first response from a replica (`previous_replica` absent: it is pinned);
/// every later one is a response from another replica than the client's previous one (it
/// moved), or one that set a cookie. Nothing is printed while a client stays where it is, so a
/// sticky run prints about one line per client and per move.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClientChange {
    /// When the response arrived.
    pub ts: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perturbation_id: Option<String>,
    #[serde(default = "default_scenario")]
    pub scenario: String,
    /// The virtual client, 0 to `clients - 1`.
    pub client: u32,
    /// The response's HTTP status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
    /// The replica that answered (the replica header), absent when the response named none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// The replica of the client's previous response from a replica; absent for its first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_replica: Option<String>,
    /// The cookies the response set, `name=value` each (attributes dropped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set_cookie: Vec<String>,
}

impl ClientChange {
    /// The client was served by another replica than before.
    pub fn moved(&self) -> bool {
        matches!((&self.previous_replica, &self.replica), (Some(a), Some(b)) if a != b)
    }
}

/// `step`: one step of a staircase preflight.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub ts: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perturbation_id: Option<String>,
    /// 1-based step number.
    pub step: u32,
    pub target_rps: f64,
    pub duration_s: f64,
    pub count: u64,
    pub ok: u64,
    pub err: u64,
    #[serde(default)]
    pub dropped: u64,
    pub achieved_rps: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ms: Option<f64>,
}

/// Latency percentiles of a whole run, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

/// `summary`: the last line of a run (one per scenario).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub ts: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perturbation_id: Option<String>,
    #[serde(default = "default_scenario")]
    pub scenario: String,
    pub duration_s: f64,
    pub count: u64,
    pub ok: u64,
    pub err: u64,
    pub err_pct: f64,
    pub dropped: u64,
    pub target_rps: f64,
    pub achieved_rps: f64,
    /// Measured from the scheduled time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Percentiles>,
    /// Measured from the actual send time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_latency: Option<Percentiles>,
    /// How late requests were sent after their scheduled time (open model; scheduler accuracy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lateness: Option<Percentiles>,
    #[serde(default)]
    pub status: BTreeMap<String, u64>,
    #[serde(default)]
    pub errors: BTreeMap<String, u64>,
    #[serde(default)]
    pub served_by: BTreeMap<String, u64>,
    /// Staircase only: p50(step 2) / p50(step 1), the original lab's headroom test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staircase_p50_ratio: Option<f64>,
    /// True when the run was stopped by a signal before its duration ended.
    #[serde(default)]
    pub interrupted: bool,
}
