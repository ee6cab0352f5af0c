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
