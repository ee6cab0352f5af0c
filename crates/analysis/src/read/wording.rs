//! The platform's wordings in `ContainerAppSystemLogs` messages: the probe type of a
//! `ProbeFailed` row, the reason of a `ContainerTerminated` row, and what each termination means
//! for restart counts. A bottom module (it reads only [`crate::read::model`]), so the tables, the event
//! evaluation and the checks all read the wordings the same way without importing one another.

use std::collections::BTreeMap;

use crate::read::model::SystemEvent;

/// The probe type of a `ProbeFailed` message (`Probe of Liveness failed ...` → `liveness`).
pub fn probe_type(msg: &str) -> String {
    msg.split_whitespace()
        .skip_while(|w| !w.eq_ignore_ascii_case("of"))
        .nth(1)
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The reason of a `ContainerTerminated` message (`... with reason 'ProbeFailure'` →
/// `ProbeFailure`, `... with exit code '137'` → `exit 137`).
pub fn termination_reason(msg: &str) -> String {
    let quoted = |after: &str| {
        let i = msg.find(after)? + after.len();
        let rest = msg[i..].trim_start().strip_prefix('\'')?;
        Some(rest[..rest.find('\'')?].to_owned())
    };
    if let Some(r) = quoted("reason") {
        r
    } else if let Some(c) = quoted("exit code") {
        format!("exit {c}")
    } else {
        "unknown".into()
    }
}

/// The exit code of a `ContainerTerminated` message (`... with exit code '137'` → 137); `None`
/// when it gives none (a reason only, or an empty code).
pub fn exit_code(msg: &str) -> Option<i64> {
    termination_reason(msg).strip_prefix("exit ")?.parse().ok()
}

/// What one `ContainerTerminated` row means for restart counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Termination {
    /// A container restart: `reason 'ProbeFailure'` (a liveness/startup kill) or a non-zero
    /// exit code (a crash).
    Restart(String),
    /// Not a restart: `reason 'ManuallyStopped'` (a retired or scaled-in replica, which Azure
    /// writes for every old replica of a rollout) or exit code 0.
    Stopped(String),
    /// The exit-code row Azure writes right after a probe kill of the same replica (no
    /// `ContainerStarted` between them): the same restart, not counted twice.
    AfterProbeKill(String),
    /// A wording we do not know: counted as neither, and reported.
    Unknown,
}

impl Termination {
    pub fn is_restart(&self) -> bool {
        matches!(self, Termination::Restart(_))
    }

    /// `ProbeFailure`, `exit 137`, `ManuallyStopped`, `exit 137 after probe kill`, `unknown`.
    pub fn label(&self) -> String {
        match self {
            Termination::Restart(s) | Termination::Stopped(s) => s.clone(),
            Termination::AfterProbeKill(s) => format!("{s} after probe kill"),
            Termination::Unknown => "unknown".into(),
        }
    }
}

/// Classifies every `ContainerTerminated` row of `system` (sorted by time): index → meaning.
pub fn terminations(system: &[SystemEvent]) -> BTreeMap<usize, Termination> {
    // Per replica: whether its last row was a probe kill with no ContainerStarted since.
    let mut killed: BTreeMap<(&str, &str), bool> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for (i, e) in system.iter().enumerate() {
        let key = (e.app.as_str(), e.replica.as_str());
        if e.reason == "ContainerStarted" {
            killed.insert(key, false);
            continue;
        }
        if e.reason != "ContainerTerminated" {
            continue;
        }
        let r = termination_reason(&e.msg);
        let after_kill = killed.get(&key).copied().unwrap_or(false);
        let t = if r == "ProbeFailure" {
            killed.insert(key, true);
            Termination::Restart(r)
        } else if r == "ManuallyStopped" {
            Termination::Stopped(r)
        } else if let Some(code) = r.strip_prefix("exit ") {
            if code.trim().is_empty() || code.trim() == "0" {
                Termination::Stopped(r)
            } else if after_kill {
                killed.insert(key, false);
                Termination::AfterProbeKill(r)
            } else {
                Termination::Restart(r)
            }
        } else {
            Termination::Unknown
        };
        out.insert(i, t);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_probe_types_and_termination_reasons_from_platform_messages() {
        assert_eq!(
            probe_type("Probe of Liveness failed with timeout in 5 seconds."),
            "liveness"
        );
        assert_eq!(
            probe_type("Probe of Readiness failed with status code: 503"),
            "readiness"
        );
        assert_eq!(
            termination_reason("Container 'subject' was terminated with reason 'ProbeFailure'"),
            "ProbeFailure"
        );
        assert_eq!(
            termination_reason("Container 'subject' was terminated with exit code '137'"),
            "exit 137"
        );
    }
}

#[cfg(test)]
mod termination_tests {
    use super::*;

    fn ev(ts_ms: i64, replica: &str, reason: &str, msg: &str) -> SystemEvent {
        SystemEvent {
            ts_ms,
            app: "a".into(),
            revision: "a--r1".into(),
            execution: String::new(),
            replica: replica.into(),
            reason: reason.into(),
            msg: msg.into(),
            kind: String::new(),
        }
    }

    #[test]
    fn a_probe_kill_and_its_exit_row_are_one_restart() {
        let kill = "Container 'c' was terminated with exit code '' and reason 'ProbeFailure'";
        let exit137 = "Container 'c' was terminated with exit code '137'";
        let rows = vec![
            ev(0, "x", "ContainerTerminated", kill),
            ev(1, "x", "ContainerTerminated", exit137),
            // another replica's exit right after x's kill is its own crash
            ev(2, "y", "ContainerTerminated", exit137),
            ev(3, "x", "ContainerStarted", "Started container 'c'"),
            // after a start, an exit 137 is a new restart
            ev(4, "x", "ContainerTerminated", exit137),
            ev(
                5,
                "x",
                "ContainerTerminated",
                "... exit code '' and reason 'ManuallyStopped'",
            ),
        ];
        let t = terminations(&rows);
        let labels: Vec<String> = t.values().map(Termination::label).collect();
        assert_eq!(
            labels,
            [
                "ProbeFailure",
                "exit 137 after probe kill",
                "exit 137",
                "exit 137",
                "ManuallyStopped"
            ]
        );
        let restarts: Vec<usize> = t
            .iter()
            .filter(|(_, k)| k.is_restart())
            .map(|(i, _)| *i)
            .collect();
        assert_eq!(restarts, [0, 2, 4]);
    }
}
