//! Filters over logline's typed output lines ([`logline::line::Line`]) that more than one
//! crate's tests read: the sampler's and audit's, in-process and from their images.

use logline::line::{Line, SamplerError};

/// Every `SamplerError` line, in order.
pub fn sampler_errors(lines: &[Line]) -> Vec<&SamplerError> {
    lines
        .iter()
        .filter_map(|l| match l {
            Line::SamplerError(e) => Some(e),
            _ => None,
        })
        .collect()
}

/// Every `SamplerError` line except `tick_late`: the faults a test can hold the sampler to on a
/// shared machine. A tick that starts late (over `LATE_REPORT`, 50 ms) is the sampler reporting
/// the machine's stall honestly, not a fault of the code under test; a tick missed or cut still
/// shows here (`tick_skipped`, `tick_timeout`) and in `ticks_completed`.
pub fn sampler_faults(lines: &[Line]) -> Vec<&SamplerError> {
    sampler_errors(lines)
        .into_iter()
        .filter(|e| e.operation != "tick_late")
        .collect()
}
