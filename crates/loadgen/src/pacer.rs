//! Waiting for a request's due time with sub-millisecond precision.
//!
//! tokio's timer has a 1 ms tick: a sleep wakes on the first tick at or after its deadline, and
//! the runtime's `epoll_wait` timeout is whole milliseconds too, so a request due at `t` left
//! between `t` and `t + 2 ms` (p99 lateness 2.03 ms at 2,000 RPS, docs/BENCHMARKS.md). On Linux
//! the open-model scheduler instead arms a `timerfd` at an absolute time on `CLOCK_MONOTONIC`
//! (the clock behind `std`'s and tokio's `Instant`) and waits for it through the runtime's I/O
//! driver: the wake comes within microseconds of the time asked, with no extra thread and no
//! spinning. Where a timerfd cannot be made (another OS, a seccomp profile that forbids it), or
//! one fails mid-run, the wait falls back to tokio's sleep: the schedule stays right, only
//! coarser.
//!
//! Each wake-up costs a context switch, so the pacer trades precision for CPU with a *slack*
//! (`--pacing`): a wait never ends more than the slack after its due time, and wakes are at
//! least the slack apart, so at high rates the requests due within one slack go out together.
//! Lateness is bounded by the slack (plus the machine's scheduling delay) instead of by two
//! timer ticks, at most one wake-up per slack instead of one per tick. A wait never ends before
//! its due time.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

/// Waits until absolute instants, as precisely as the platform allows.
pub struct Pacer {
    slack: Slack,
    timer: Timer,
}

/// The slack's decisions: when to wake for a due time, given the last wake.
struct Slack {
    slack: Duration,
    /// When the last wait ended: the next wake is at least `slack` later.
    last_wake: Option<Instant>,
}

/// The sleep itself: the timerfd, or tokio's timer.
struct Timer {
    #[cfg(target_os = "linux")]
    fd: Option<linux::TimerFd>,
}

impl Pacer {
    /// A pacer for the current runtime with the given slack (see the module docs). Must be
    /// called inside a tokio runtime (the timerfd is registered with its I/O driver).
    pub fn new(slack: Duration) -> Pacer {
        Pacer {
            slack: Slack {
                slack,
                last_wake: None,
            },
            timer: Timer {
                #[cfg(target_os = "linux")]
                fd: linux::TimerFd::new()
                    .map_err(
                        |e| tracing::debug!(error = %e, "no timerfd, pacing with tokio's timer"),
                    )
                    .ok(),
            },
        }
    }

    /// Whether waits use the precise timer (false: tokio's 1 ms timer).
    pub fn is_precise(&self) -> bool {
        #[cfg(target_os = "linux")]
        {
            self.timer.fd.is_some()
        }
        #[cfg(not(target_os = "linux"))]
        {
            false
        }
    }

    /// Returns at `due` or after it, but not later than `due` + slack (plus scheduling delay);
    /// at once when `due` has passed. Cancel-safe: dropping the future leaves the pacer usable.
    pub async fn wait_until(&mut self, due: Instant) {
        let timer = &mut self.timer;
        self.slack
            .wait(due, Instant::now(), |at| timer.sleep_until(at))
            .await;
    }
}

impl Slack {
    /// The pacer's loop, with the clock reading (`now`) and the sleep given: returns at once
    /// when `due` is not after `now`, else sleeps until [`Slack::next_wake`] and records that
    /// wake once the sleep has ended (a dropped wait records nothing).
    async fn wait<F, Fut>(&mut self, due: Instant, now: Instant, sleep: F)
    where
        F: FnOnce(Instant) -> Fut,
        Fut: Future<Output = ()>,
    {
        if due <= now {
            return;
        }
        let wake = self.next_wake(due);
        sleep(wake).await;
        self.last_wake = Some(wake);
    }

    /// When to wake for `due` (not yet passed): at `due`, or one slack after the last wake when
    /// that is later; as the last wake was at or before now, that is less than a slack late.
    fn next_wake(&self, due: Instant) -> Instant {
        match self.last_wake {
            Some(last) => due.max(last + self.slack),
            None => due,
        }
    }
}

impl Timer {
    async fn sleep_until(&mut self, at: Instant) {
        #[cfg(target_os = "linux")]
        if let Some(fd) = &mut self.fd {
            match fd.wait_until(at.into_std()).await {
                Ok(()) => return,
                Err(e) => {
                    tracing::debug!(error = %e, "timerfd failed, pacing with tokio's timer");
                    self.fd = None;
                }
            }
        }
        tokio::time::sleep_until(at).await;
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io;
    use std::time::{Duration, Instant};

    use rustix::fd::OwnedFd;
    use rustix::time::{
        ClockId, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec,
        clock_gettime, timerfd_create, timerfd_settime,
    };
    use tokio::io::Interest;
    use tokio::io::unix::AsyncFd;

    /// A one-shot `CLOCK_MONOTONIC` timerfd registered with the runtime.
    pub struct TimerFd {
        fd: AsyncFd<OwnedFd>,
        /// The same moment on both clocks, taken once: due instants are converted to
        /// `CLOCK_MONOTONIC` time relative to it (std's `Instant` hides its timespec).
        anchor: Instant,
        anchor_mono: Duration,
    }

    /// Registers the timerfd with the runtime's I/O driver. The one `unsafe` block of loadgen:
    /// tokio's safe constructors are deprecated as unsound for descriptors that can be closed
    /// while registered (tokio-rs/tokio#8587).
    #[allow(unsafe_code)]
    fn register(fd: OwnedFd) -> io::Result<AsyncFd<OwnedFd>> {
        // SAFETY: the `AsyncFd` owns the `OwnedFd`: the descriptor stays open and the same until
        // the `AsyncFd` is dropped (which deregisters it first). Nothing here calls `get_mut` or
        // `into_inner`, so it is never replaced or closed while registered.
        unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.map_err(io::Error::from)
    }

    impl TimerFd {
        pub fn new() -> io::Result<TimerFd> {
            let fd = timerfd_create(
                TimerfdClockId::Monotonic,
                TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
            )?;
            let anchor = Instant::now();
            let mono = clock_gettime(ClockId::Monotonic);
            let anchor_mono = Duration::new(
                u64::try_from(mono.tv_sec).unwrap_or(0),
                u32::try_from(mono.tv_nsec).unwrap_or(0),
            );
            Ok(TimerFd {
                fd: register(fd)?,
                anchor,
                anchor_mono,
            })
        }

        pub async fn wait_until(&mut self, at: Instant) -> io::Result<()> {
            let Some(after_anchor) = at.checked_duration_since(self.anchor) else {
                return Ok(()); // before the pacer existed: already due
            };
            let due = self.anchor_mono + after_anchor;
            let spec = Itimerspec {
                it_interval: Timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: Timespec {
                    tv_sec: i64::try_from(due.as_secs()).unwrap_or(i64::MAX),
                    tv_nsec: i64::from(due.subsec_nanos()),
                },
            };
            loop {
                // Arming discards an expiry of an earlier, abandoned wait; the expiry count is
                // never read (a system call saved per wait): the next arming resets it.
                timerfd_settime(self.fd.get_ref(), TimerfdTimerFlags::ABSTIME, &spec)?;
                let mut guard = self.fd.readable().await?;
                guard.clear_ready();
                // Readiness can be left over from an abandoned wait (its timer fired, then the
                // wait was dropped): never return before the due time; arm again and wait.
                if Instant::now() >= at {
                    return Ok(());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request is never sent before its due time, whichever timer paces it.
    #[tokio::test(flavor = "current_thread")]
    async fn never_wakes_before_the_due_time() {
        let mut pacer = Pacer::new(Duration::ZERO);
        #[cfg(target_os = "linux")]
        assert!(pacer.is_precise(), "Linux paces with a timerfd");
        let start = Instant::now();
        for i in 1..=40u32 {
            let at = start + Duration::from_micros(250) * i;
            pacer.wait_until(at).await;
            assert!(Instant::now() >= at, "woke before wait {i}'s due time");
        }
    }

    /// A wait that is dropped (the run was cancelled) leaves the pacer usable, and a due time
    /// already past returns at once.
    #[tokio::test(flavor = "current_thread")]
    async fn a_dropped_wait_does_not_disturb_the_next() {
        let mut pacer = Pacer::new(Duration::ZERO);
        let far = Instant::now() + Duration::from_secs(3600);
        let dropped = tokio::time::timeout(Duration::from_millis(5), pacer.wait_until(far)).await;
        assert!(dropped.is_err(), "an hour's wait ended early");
        pacer.wait_until(Instant::now()).await;
        let at = Instant::now() + Duration::from_millis(3);
        tokio::time::timeout(Duration::from_secs(5), pacer.wait_until(at))
            .await
            .expect("the next wait ends");
        assert!(Instant::now() >= at);
    }

    /// Runs the pacer's own loop ([`Slack::wait`], which [`Pacer::wait_until`] runs with the
    /// real clock and timer) on a clock that stands at the last wake: each sleep ends exactly
    /// at the instant asked. Returns, per request, when it was sent, and the wakes.
    async fn pace(
        slack: Duration,
        start: Instant,
        dues: &[Instant],
    ) -> (Vec<Instant>, Vec<Instant>) {
        let mut pacer = Slack {
            slack,
            last_wake: None,
        };
        let mut now = start;
        let mut wakes = Vec::new();
        let mut sent = Vec::new();
        for &due in dues {
            pacer
                .wait(due, now, |at| {
                    wakes.push(at);
                    now = at;
                    std::future::ready(())
                })
                .await;
            sent.push(now);
        }
        (sent, wakes)
    }

    /// The slack's contract: wakes are at least a slack apart, and no request waits a slack or
    /// more past its due time; with no slack every request gets its own wake-up at its due time.
    #[tokio::test(flavor = "current_thread")]
    async fn slack_batches_wakes_and_bounds_lateness() {
        let slack = Duration::from_millis(1);
        let start = Instant::now();
        let t0 = start + Duration::from_millis(1);
        // 10,000 RPS for 10 ms, from 1 ms after the pacer starts.
        let dues: Vec<Instant> = (0..100u32)
            .map(|i| t0 + Duration::from_micros(100) * i)
            .collect();
        let (sent, wakes) = pace(slack, start, &dues).await;
        for (i, (&due, &at)) in dues.iter().zip(&sent).enumerate() {
            assert!(at >= due, "request {i} sent early");
            assert!(at - due < slack, "request {i} waited a slack or more");
        }
        for pair in wakes.windows(2) {
            assert!(pair[1] - pair[0] >= slack, "wakes closer than the slack");
        }
        // The first request at its due time (0 ms), then a wake every millisecond to 10 ms.
        assert_eq!(wakes.first(), Some(&t0));
        assert_eq!(wakes.len(), 11, "one wake per millisecond at 10,000 RPS");

        let (sent, wakes) = pace(Duration::ZERO, start, &dues[..5]).await;
        assert_eq!(sent, dues[..5], "no slack: each request at its due time");
        assert_eq!(wakes, dues[..5], "no slack: one wake per request");
    }
}
