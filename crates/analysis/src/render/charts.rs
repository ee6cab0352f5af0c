//! The pack's charts (`charts/*.svg`): the lab's shared-time-axis timeline
//! ([`crate::render::timeline_svg`]) and one zoomed on each step that fired an action (at most
//! [`MAX_STEP_CHARTS`]). Every chart puts err_pct with its threshold, latency, the share of
//! responses and the replicas per revision, the system events and the perturbation markers on
//! one clock.

use super::timeline_svg;
use crate::{Analysis, Error};

pub const MAX_STEP_CHARTS: usize = 20;

/// The lab's timeline chart's file name under `charts/`.
pub const TIMELINE: &str = "timeline.svg";

/// Renders every chart: `(file name, svg)`, the lab's timeline first.
pub fn render(a: &Analysis) -> Result<Vec<(String, String)>, Error> {
    let mut out = Vec::new();
    if let Some(svg) = timeline_svg::lab(a) {
        out.push((TIMELINE.to_owned(), svg));
    }
    for (name, svg) in timeline_svg::per_step(a).into_iter().take(MAX_STEP_CHARTS) {
        out.push((format!("timeline-{name}.svg"), svg));
    }
    Ok(out)
}
