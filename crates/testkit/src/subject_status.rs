//! The subject app's `GET /status` as tests read it (the binary, its image, or the library in
//! this process): the number of requests in flight, and a wait until it reaches a count, in
//! place of a fixed sleep "to let the request reach its handler".
//!
//! `/status` counts itself out. It goes through the subject's `MAX_CONCURRENCY` cap like every
//! handler, so under a cap that is taken it does not answer at all.

use std::net::SocketAddr;
use std::time::Duration;

use crate::http::{self, Outcome};
use crate::wait::eventually;

/// How long one `/status` read may take.
pub const READ_TIMEOUT: Duration = Duration::from_secs(1);

/// The `inflight` of the subject on `addr`, or `None` when `/status` does not answer with it
/// within [`READ_TIMEOUT`].
pub async fn inflight(addr: SocketAddr) -> Option<u64> {
    match http::get(addr, "/status", READ_TIMEOUT).await {
        Outcome::Response(r) => r.json().ok()?["inflight"].as_u64(),
        _ => None,
    }
}

/// Waits (at most `limit`) until at least `n` requests are in flight at the subject on `addr`.
///
/// # Panics
/// When fewer than `n` are in flight after `limit`.
pub async fn wait_inflight(addr: SocketAddr, n: u64, limit: Duration) {
    let what = format!("{n} request(s) in flight at {addr}");
    eventually(limit, &what, || async {
        (inflight(addr).await >= Some(n)).then_some(())
    })
    .await;
}
