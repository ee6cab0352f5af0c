//! testkit: what probelab's Docker integration tests share (a dev-dependency only).
//!
//! - [`docker`]: [`docker::require_docker`], the gate every Docker test passes first (loud
//!   failure when the engine is unreachable, an explicit skip with `PROBELAB_SKIP_DOCKER=1`);
//!   "image present or fail with the command to run"; user-defined networks removed on drop;
//!   testcontainers requests that publish on 127.0.0.1 only; orphan clean-up; JSON-lines
//!   checks of container stdout. Its docs say why no Docker API version shim is needed.
//! - [`http`]: a one-connection-per-request HTTP/1.1 client that tells refused, closed/reset and
//!   timed-out requests apart, and a free-port helper.
//! - [`https_front`]: a test certificate authority and a recording HTTPS reverse proxy (ARM
//!   over TLS with a bearer token, as on Azure, in front of localplane).
//! - [`log_analytics`]: a stand-in for the Log Analytics query API over localplane's log
//!   files, with an ingestion delay, a record limit and the columns Azure adds.

pub mod docker;
pub mod http;
pub mod https_front;
pub mod log_analytics;

pub use docker::{Docker, NetworkGuard, require_docker};
pub use testcontainers;
