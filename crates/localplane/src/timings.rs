//! How long localplane's platform steps take: `fast` (as short as the emulation allows, for
//! tests and quick profiles) or `recorded` (calibrated from a recording of the real service).
//!
//! The recorded values live here and only here. Source: the rollout lab's own Log Analytics
//! export of a real Container Apps environment (3 replicas, 25 s bind-late startup, 15
//! env-change rollouts, then a revision restart), kept as
//! `crates/localplane/tests/fixtures/recordings/q7-system-events-timeline-20260613055431.json`
//! (see the README there). `tests/parity.rs` recomputes every value below from that file and
//! fails when one drifts by more than its stated tolerance.
//!
//! Selection, per app: the resource tag `localplane.timings` (`fast`, `recorded`, or
//! `recorded:<factor>` for the recorded values multiplied by a factor in (0, 1], e.g.
//! `recorded:0.25` to keep a CI test short); without the tag, the process environment variable
//! `LOCALPLANE_TIMINGS` (same values) applies to every app, and without that, `fast`.

use std::time::Duration;

/// The tag that selects an app's timings.
pub const TAG_TIMINGS: &str = "localplane.timings";
/// The environment variable giving the default for apps without the tag.
pub const ENV_TIMINGS: &str = "LOCALPLANE_TIMINGS";

/// Recorded: `AssigningReplica` → `ContainerStarted`, median over the 48 replica starts of the
/// 15 rollouts and the restart's 3 replacements: 15.8 s (10.6–23.3 s; per revision the last of
/// its 3 replicas started 15.7–23.3 s after the assignment), rounded to 16 s.
pub const RECORDED_PROVISION_S: f64 = 16.0;
/// Recorded: the traffic switch → the old revision's replicas `ManuallyStopped`. The recording
/// has no switch row; it is derived as the median assigned → old stopped (82.0 s over 45 old
/// replicas, 75.7–87.0 s) minus the median assigned → started (15.8 s) minus the new replica's
/// time from start to ready (28.1 s: in the restart, started → the old replica it replaces is
/// stopped, 27.9–28.3 s): 38.1 s, rounded to 38 s.
pub const RECORDED_OLD_REVISION_LINGER_S: f64 = 38.0;
/// Restart back-off cap in `recorded` mode: 40 s (first restart at once, then 10 s doubling,
/// capped at 40 s). Not in the recording; calibrated so a liveness loop (period 10, threshold
/// 3, ≈31 s of failures after each start) gives 8 restarts in an 8.4-minute outage, as the
/// dependency lab's write-up reports (kills at 31, 62, 103, 154, 225, 296, 367, 438 s);
/// kubelet's 300 s cap gives 6 (31, 62, 103, 154, 225, 336 s). The liveness lab's "every 40–50 s" is met by the intervals
/// 41 and 51 s only; from the fifth kill on, both policies space kills 71 s (cap 40) or more.
pub const RECORDED_BACKOFF_MAX_S: u64 = 40;

/// Kubelet's crash-loop back-off: first restart at once, then 10 s doubling to 300 s.
pub const KUBELET_BACKOFF_INITIAL: Duration = Duration::from_secs(10);
pub const KUBELET_BACKOFF_MAX: Duration = Duration::from_secs(300);

/// The platform step durations an app runs with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timings {
    /// `AssigningReplica` → the container is launched (image pull and scheduling on Azure).
    pub provision: Duration,
    /// After the traffic switch, how long the old revision's replicas keep running before the
    /// revision is deactivated.
    pub old_revision_linger: Duration,
    /// Restart back-off: first restart at once, then `backoff_initial` doubling to
    /// `backoff_max`.
    pub backoff_initial: Duration,
    pub backoff_max: Duration,
    /// What was asked for (`fast`, `recorded`, `recorded:0.25`), for messages.
    pub name: &'static str,
}

impl Timings {
    pub const FAST: Timings = Timings {
        provision: Duration::ZERO,
        old_revision_linger: Duration::ZERO,
        backoff_initial: KUBELET_BACKOFF_INITIAL,
        backoff_max: KUBELET_BACKOFF_MAX,
        name: "fast",
    };

    /// The recorded values scaled by `factor` (1.0: as recorded). The back-off is not scaled:
    /// it is the platform's policy, not a duration of the recorded scenario.
    pub fn recorded(factor: f64) -> Timings {
        let s = |x: f64| Duration::from_secs_f64(x * factor);
        Timings {
            provision: s(RECORDED_PROVISION_S),
            old_revision_linger: s(RECORDED_OLD_REVISION_LINGER_S),
            backoff_initial: KUBELET_BACKOFF_INITIAL,
            backoff_max: Duration::from_secs(RECORDED_BACKOFF_MAX_S),
            name: if factor == 1.0 {
                "recorded"
            } else {
                "recorded (scaled)"
            },
        }
    }

    /// Parses `fast`, `recorded` or `recorded:<factor>` (0 < factor ≤ 1).
    pub fn parse(s: &str) -> Result<Timings, TimingsError> {
        let s = s.trim();
        match s {
            "fast" => Ok(Timings::FAST),
            "recorded" => Ok(Timings::recorded(1.0)),
            _ => {
                let factor = s
                    .strip_prefix("recorded:")
                    .and_then(|f| f.parse::<f64>().ok())
                    .filter(|f| *f > 0.0 && *f <= 1.0)
                    .ok_or_else(|| TimingsError::Unknown(s.to_owned()))?;
                Ok(Timings::recorded(factor))
            }
        }
    }

    /// The default for apps without the tag: `LOCALPLANE_TIMINGS`, else `fast`.
    pub fn from_env() -> Result<Timings, TimingsError> {
        match std::env::var(ENV_TIMINGS) {
            Ok(v) if !v.trim().is_empty() => Timings::parse(&v).map_err(|e| match e {
                TimingsError::Unknown(got) => TimingsError::Env(got),
                env => env,
            }),
            _ => Ok(Timings::FAST),
        }
    }

    /// 0 → initial → 2 × … → max.
    pub fn next_backoff(&self, current: Duration) -> Duration {
        if current.is_zero() {
            self.backoff_initial
        } else {
            (current * 2).min(self.backoff_max)
        }
    }
}

/// A timings value that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimingsError {
    #[error(
        "timings must be 'fast', 'recorded' or 'recorded:<factor>' with 0 < factor <= 1, got '{0}'"
    )]
    Unknown(String),
    /// The same, read from `LOCALPLANE_TIMINGS`.
    #[error(
        "LOCALPLANE_TIMINGS: timings must be 'fast', 'recorded' or 'recorded:<factor>' with 0 < factor <= 1, got '{0}'"
    )]
    Env(String),
}

/// For callers that carry the message in an ARM error body (`ArmError::bad_request`).
impl From<TimingsError> for String {
    fn from(e: TimingsError) -> String {
        e.to_string()
    }
}

impl Default for Timings {
    fn default() -> Self {
        Timings::FAST
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_the_three_forms_and_rejects_the_rest() {
        assert_eq!(Timings::parse("fast").unwrap(), Timings::FAST);
        let r = Timings::parse("recorded").unwrap();
        assert_eq!(r.provision, Duration::from_secs(16));
        assert_eq!(r.old_revision_linger, Duration::from_secs(38));
        let q = Timings::parse("recorded:0.25").unwrap();
        assert_eq!(q.provision, Duration::from_secs(4));
        assert_eq!(q.backoff_max, Duration::from_secs(40));
        for bad in ["slow", "recorded:0", "recorded:2", "recorded:x", ""] {
            assert!(Timings::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn recorded_backoff_gives_eight_restarts_in_eight_point_four_minutes() {
        // A liveness loop with period 10 × 3: ≈31 s of failures after each (re)start.
        for (t, want) in [(Timings::recorded(1.0), 8), (Timings::FAST, 6)] {
            let (mut now, mut backoff, mut kills) = (0.0, Duration::ZERO, 0);
            loop {
                now += 31.0;
                if now > 8.4 * 60.0 {
                    break;
                }
                kills += 1;
                now += backoff.as_secs_f64();
                backoff = t.next_backoff(backoff);
            }
            assert_eq!(kills, want, "{}", t.name);
        }
    }
}
