//! The per-event summary report.md and report.html list (CONTRACT.md: branch a computes it in
//! this module; this branch only declares the struct so the report can render it).

/// One fired event, as report.md and report.html list it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct EventSummary {
    /// Step name.
    pub step: String,
    /// 1-based event number within the step.
    pub event: u32,
    /// `rollout`, `restart`, ...
    pub kind: String,
    pub perturbation_id: Option<String>,
    /// When the action fired (epoch ms).
    pub fired_ms: i64,
    pub new_revision: Option<String>,
    /// First sample with the new revision → first sample where it alone is active with traffic
    /// (restart: the replica turnover).
    pub transition_s: Option<f64>,
    /// Client-visible errors in the event's window.
    pub errors_in_window: u64,
    /// `perturbations_observed` passed for this event.
    pub observed: bool,
    /// Why not observed.
    pub problem: Option<String>,
}
