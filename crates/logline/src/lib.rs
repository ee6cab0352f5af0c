//! logline: the JSON log lines every probelab image prints and the analysis reads, and what
//! every binary shares to print them.
//!
//! - [`line`]: the JSON line kinds (one serde type per kind) — the contract between the images,
//!   the log tables and the analysis.
//! - [`log`]: one JSON object per line on stdout, for events and for tracing diagnostics alike.
//! - [`clock`]: RFC 3339 millisecond timestamps and wall-clock aligned windows.
//! - [`config`]: value parsers shared by every binary's clap configuration (durations, booleans,
//!   `KEY=VALUE` pairs) so `10s`, `true` and `yes` mean the same thing everywhere.

pub mod clock;
pub mod config;
pub mod line;
pub mod log;

pub use clock::Timestamp;
pub use line::Line;
