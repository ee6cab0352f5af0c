//! testkit: the one test-support crate of the workspace (a dev-dependency only).
//!
//! - [`docker`]: [`docker::require_docker`], the gate every Docker test passes first (loud
//!   failure when the engine is unreachable, an explicit skip with `PROBELAB_SKIP_DOCKER=1`);
//!   "image present or fail with the command to run"; user-defined networks removed on drop;
//!   testcontainers requests that publish on 127.0.0.1 only; orphan clean-up; JSON-lines
//!   checks of container stdout. Its docs say why no Docker API version shim is needed.
//! - [`localplane`] (feature `localplane`): localplane in the test's process with a temporary
//!   state and evidence dir, stopped within a minute, its Docker leftovers removed on drop.
//! - [`arm_plane`] (feature `localplane`): that localplane through the `arm` crate's typed
//!   client, with a managed environment and the subject app, waits for it to settle; the
//!   subscription and resource paths every localplane test uses.
//! - [`wait`]: [`eventually`], a wait on the condition a test asserts instead of a fixed sleep.
//! - [`http`]: a one-connection-per-request HTTP/1.1 client that tells refused, closed/reset and
//!   timed-out requests apart, a connection a test holds ([`http::Conn`]) and a request with
//!   headers and a body ([`http::fetch`]), and a free-port helper.
//! - [`subject_status`]: the subject's in-flight count from its `/status`, and a wait for it.
//! - [`bins`]: `target/<profile>/`, where the workspace's binaries are, checked.
//! - [`lines`]: filters over logline's typed output lines (the sampler's errors).
//! - [`pack`]: a fixture evidence pack copied to a temporary dir.
//! - [`test_ca`]: a throw-away certificate authority and a server config for 127.0.0.1 it signed.
//! - [`https_front`]: a recording HTTPS reverse proxy (ARM over TLS with a bearer token, as on
//!   Azure, in front of localplane).
//! - [`log_analytics`]: a stand-in for the Log Analytics query API over localplane's log
//!   files, with an ingestion delay, a record limit and the columns Azure adds.

#[cfg(feature = "localplane")]
pub mod arm_plane;
pub mod bins;
pub mod docker;
pub mod fake_arm;
pub mod http;
pub mod https_front;
pub mod lines;
#[cfg(feature = "localplane")]
pub mod localplane;
pub mod log_analytics;
pub mod pack;
pub mod subject_status;
pub mod test_ca;
pub mod wait;

/// The subscription of every test against localplane or the fake ARM (both take any).
pub const SUBSCRIPTION: &str = "00000000-0000-0000-0000-000000000000";

/// Milliseconds since the epoch, now, on the clock our lines' `ts` are written with (the host
/// and its containers share it).
pub fn now_ms() -> i64 {
    logline::Timestamp::now().epoch_ms()
}

pub use docker::{Docker, NetworkGuard, require_docker};
pub use testcontainers;
pub use wait::eventually;
