//! The signals that stop a command as Ctrl-C does: SIGINT, SIGTERM (systemd, `timeout`, a CI
//! cancel, `kill`) and SIGHUP (a closed terminal).

use tokio::signal::unix::{Signal, SignalKind, signal};

/// SIGINT, SIGTERM and SIGHUP, as one stream (handlers are installed on creation, so a signal
/// arriving later is never the default "terminate now").
pub struct Signals {
    int: Option<Signal>,
    term: Option<Signal>,
    hup: Option<Signal>,
}

impl Signals {
    pub fn new() -> Signals {
        Signals {
            int: signal(SignalKind::interrupt()).ok(),
            term: signal(SignalKind::terminate()).ok(),
            hup: signal(SignalKind::hangup()).ok(),
        }
    }

    /// The name of the next signal (`None` when no handler could be installed at all).
    pub async fn next(&mut self) -> Option<&'static str> {
        async fn recv(s: &mut Option<Signal>) -> Option<()> {
            match s {
                Some(s) => s.recv().await,
                None => std::future::pending().await,
            }
        }
        if self.int.is_none() && self.term.is_none() && self.hup.is_none() {
            return None;
        }
        tokio::select! {
            Some(()) = recv(&mut self.int) => Some("SIGINT (Ctrl-C)"),
            Some(()) = recv(&mut self.term) => Some("SIGTERM"),
            Some(()) = recv(&mut self.hup) => Some("SIGHUP"),
            else => None,
        }
    }
}
