//! Rendering: the judged analysis as files. report.md ([`report`]), report.html ([`html`]), the
//! shared-time-axis timeline as SVG ([`timeline_svg`], drawn from the judged series) and the
//! charts around it ([`charts`]), and the evidence pack written atomically ([`pack`]).

pub mod charts;
pub mod html;
pub mod pack;
pub mod report;
pub mod timeline_svg;
