//! When things happen within a step: the action fires `events` times, the first `offset` after
//! the step starts, then every `interval`; the load runs for the step's duration.
//!
//! Firing is scheduled at absolute times (`start + offset + k × interval`), never as a sleep after
//! the previous action, and each action runs as its own task, so a slow one (a rollout waiting
//! for its revision, a 60 s blocking request) never delays the next event.
//!
//! Every event has its own perturbation id ([`event_perturbation_id`]) and its own sampler
//! window ([`sampler_windows`]): the window opens [`SAMPLER_LEAD`] before the event (at most
//! half the time since the previous event or the step's start, so it never reaches back into the
//! previous event's transition) and closes when the next event fires, or at the step's end. The
//! sampler's start is scheduled at the window's opening, on its own task, so a slow job start
//! (the update-then-start lock, a container to create) never moves an event.

use std::future::Future;
use std::time::Duration;

use lab::Step;
use logline::config::parse_duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// `d × scale` (the test-only duration scale; 1 leaves the profile's numbers unchanged).
pub fn scaled(d: Duration, scale: f64) -> Duration {
    if (scale - 1.0).abs() < f64::EPSILON {
        d
    } else {
        d.mul_f64(scale.max(0.0))
    }
}

fn dur(s: &Option<String>) -> Option<Duration> {
    s.as_deref().and_then(|s| parse_duration(s).ok())
}

/// How long the step's load runs (scaled).
pub fn step_duration(step: &Step, scale: f64) -> Duration {
    scaled(step.load_duration(), scale)
}

/// When, from the step's start, each event fires (scaled); empty without an action.
pub fn event_times(step: &Step, scale: f64) -> Vec<Duration> {
    if step.action.is_none() {
        return Vec::new();
    }
    let n = step.events.unwrap_or(1);
    let offset = dur(&step.offset).unwrap_or_default();
    let interval = dur(&step.interval).unwrap_or_default();
    (0..n)
        .map(|k| scaled(offset + interval * k, scale))
        .collect()
}

/// How long before its event a sampler window opens (at most; see [`sampler_windows`]). It is
/// not scaled: it covers starting the sampler job, which takes as long whatever the schedule's
/// scale (on localplane's Docker runtime about 1 s: GET + PATCH the job, start it, create the
/// container; the sampler takes its first sample when it starts), and leaves the sampler at least
/// one sample of the state before the event. On Azure a job's replica may take longer to start
/// than the lead; its window then opens after the event fired (its first samples show the new
/// revision provisioning) and closes as late, since the sampler counts its duration from its own
/// start.
pub const SAMPLER_LEAD: Duration = Duration::from_secs(5);

/// One event's sampler window, as offsets from the step's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// 1-based event number.
    pub event: u32,
    /// When the event fires.
    pub fire: Duration,
    /// When the sampler is started.
    pub open: Duration,
    /// When the window ends: the next event's fire time, or the step's end.
    pub close: Duration,
}

impl Window {
    /// The sampler's `SAMPLE_DURATION_SECONDS` (whole seconds, at least 1).
    pub fn duration(&self) -> Duration {
        self.close.saturating_sub(self.open)
    }
}

/// The sampler windows of events firing at `times` in a step of length `step_len`: each opens
/// `lead` before its event, but no earlier than half-way from the previous event (or the step's
/// start) to it, and closes when the next event fires (the last at the step's end, or at its own
/// event if the step were shorter).
pub fn sampler_windows(times: &[Duration], step_len: Duration, lead: Duration) -> Vec<Window> {
    times
        .iter()
        .enumerate()
        .map(|(i, &fire)| {
            let prev = if i == 0 { Duration::ZERO } else { times[i - 1] };
            let gap = fire.saturating_sub(prev);
            let open = fire.saturating_sub(lead.min(gap / 2));
            let close = times.get(i + 1).copied().unwrap_or(step_len).max(fire);
            Window {
                event: u32::try_from(i + 1).unwrap_or(u32::MAX),
                fire,
                open,
                close,
            }
        })
        .collect()
}

/// The perturbation id of event `n` of a step: `<step name>-event-<n>-<stamp>` (the step's
/// `yyyymmddTHHMMSSZ`), unique within a pack because step names are.
pub fn event_perturbation_id(step: &str, n: u32, stamp: &str) -> String {
    format!("{step}-event-{n}-{stamp}")
}

/// Whole seconds, at least 1, for env variables such as `DURATION_SECONDS`.
pub fn whole_seconds(d: Duration) -> u64 {
    d.as_secs_f64().ceil().max(1.0) as u64
}

/// Fires `f(n)` (n = 1, 2, ...) at `start + times[n-1]`, each future on its own task. Returns
/// the tasks once every event has fired, or as soon as `cancel` fires (later events are skipped).
pub async fn fire<F, Fut, T>(
    start: Instant,
    times: &[Duration],
    cancel: &CancellationToken,
    mut f: F,
) -> Vec<JoinHandle<T>>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let mut tasks = Vec::with_capacity(times.len());
    for (i, at) in times.iter().enumerate() {
        tokio::select! {
            _ = tokio::time::sleep_until(start + *at) => {}
            _ = cancel.cancelled() => break,
        }
        let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
        tasks.push(tokio::spawn(f(n)));
    }
    tasks
}

/// Awaits the tasks until `deadline`; a task still running then is aborted and left out.
pub async fn collect<T>(tasks: Vec<JoinHandle<T>>, deadline: Instant) -> (Vec<T>, usize) {
    let mut out = Vec::with_capacity(tasks.len());
    let mut aborted = 0;
    for mut t in tasks {
        tokio::select! {
            r = &mut t => match r {
                Ok(v) => out.push(v),
                Err(_) => aborted += 1,
            },
            _ = tokio::time::sleep_until(deadline) => {
                t.abort();
                aborted += 1;
            }
        }
    }
    (out, aborted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab::Action;

    fn step(events: u32, interval: &str, offset: Option<&str>) -> Step {
        Step {
            name: "perturbation".into(),
            phase: "perturbation".into(),
            duration: None,
            action: Some(Action::Rollout {
                app: "subject".into(),
            }),
            events: Some(events),
            interval: Some(interval.into()),
            offset: offset.map(Into::into),
            staircase: vec![],
            staircase_step: None,
            staircase_pause: None,
            loads: None,
            sample: false,
        }
    }

    #[test]
    fn events_are_offset_plus_k_intervals_and_the_load_covers_them() {
        let s = step(3, "30s", Some("10s"));
        let secs: Vec<u64> = event_times(&s, 1.0).iter().map(|d| d.as_secs()).collect();
        assert_eq!(secs, vec![10, 40, 70]);
        assert_eq!(step_duration(&s, 1.0), Duration::from_secs(100));
        let half: Vec<u64> = event_times(&s, 0.5).iter().map(|d| d.as_secs()).collect();
        assert_eq!(half, vec![5, 20, 35]);
        assert_eq!(step_duration(&s, 0.5), Duration::from_secs(50));
        let mut none = s.clone();
        none.action = None;
        assert!(event_times(&none, 1.0).is_empty());
        assert_eq!(whole_seconds(Duration::from_millis(1500)), 2);
        assert_eq!(whole_seconds(Duration::ZERO), 1);
    }

    #[test]
    fn each_event_gets_a_window_that_brackets_it_and_ends_at_the_next() {
        let s = step(3, "30s", Some("10s"));
        let times = event_times(&s, 1.0);
        let w = sampler_windows(&times, step_duration(&s, 1.0), SAMPLER_LEAD);
        let secs: Vec<(u32, u64, u64, u64)> = w
            .iter()
            .map(|w| {
                (
                    w.event,
                    w.open.as_secs(),
                    w.fire.as_secs(),
                    w.close.as_secs(),
                )
            })
            .collect();
        // 5 s lead; the last window closes at the step's end (100 s).
        assert_eq!(
            secs,
            vec![(1, 5, 10, 40), (2, 35, 40, 70), (3, 65, 70, 100)]
        );
        assert_eq!(w[0].duration(), Duration::from_secs(35));
        for x in &w {
            assert!(x.open < x.fire && x.fire < x.close, "{x:?}");
        }
        // Half scale: a 5 s offset leaves the first window 2.5 s of lead (half-way from the step's
        // start), 15 s intervals the full 5 s; the schedule of events itself is unchanged.
        let times = event_times(&s, 0.5);
        let w = sampler_windows(&times, step_duration(&s, 0.5), SAMPLER_LEAD);
        let ms: Vec<(u128, u128, u128)> = w
            .iter()
            .map(|w| (w.open.as_millis(), w.fire.as_millis(), w.close.as_millis()))
            .collect();
        assert_eq!(
            ms,
            vec![
                (2_500, 5_000, 20_000),
                (15_000, 20_000, 35_000),
                (30_000, 35_000, 50_000)
            ]
        );
        // Events 2 s apart: the lead shrinks to half the gap, never into the previous event.
        let close = [
            Duration::from_secs(10),
            Duration::from_secs(12),
            Duration::from_secs(14),
        ];
        let w = sampler_windows(&close, Duration::from_secs(20), SAMPLER_LEAD);
        assert_eq!(w[1].open, Duration::from_secs(11));
        assert_eq!(w[2].open, Duration::from_secs(13));
        assert!(w[1].open > w[0].fire);
        // No events, no windows; an event at the step's start has no lead.
        assert!(sampler_windows(&[], Duration::from_secs(9), SAMPLER_LEAD).is_empty());
        let w = sampler_windows(&[Duration::ZERO], Duration::from_secs(9), SAMPLER_LEAD);
        assert_eq!(
            (w[0].open, w[0].close),
            (Duration::ZERO, Duration::from_secs(9))
        );
    }

    #[test]
    fn event_ids_are_per_event_and_unique_within_a_pack() {
        let ts = "20260101T000000Z";
        assert_eq!(
            event_perturbation_id("perturbation", 1, ts),
            "perturbation-event-1-20260101T000000Z"
        );
        let mut ids: Vec<String> = (1..=12)
            .map(|n| event_perturbation_id("perturbation", n, ts))
            .chain((1..=3).map(|n| event_perturbation_id("supplemental-restart", n, ts)))
            .collect();
        let n = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n);
    }

    #[tokio::test(start_paused = true)]
    async fn events_fire_on_absolute_times_even_when_actions_are_slow() {
        let s = step(3, "30s", Some("10s"));
        let start = Instant::now();
        let cancel = CancellationToken::new();
        let tasks = fire(start, &event_times(&s, 1.0), &cancel, |n| async move {
            let fired = Instant::now() - start;
            // Each action takes longer than the interval: must not push the next event.
            tokio::time::sleep(Duration::from_secs(45)).await;
            (n, fired)
        })
        .await;
        let (done, aborted) = collect(tasks, start + Duration::from_secs(600)).await;
        assert_eq!(aborted, 0);
        let fired: Vec<(u32, u64)> = done.iter().map(|(n, d)| (*n, d.as_secs())).collect();
        assert_eq!(fired, vec![(1, 10), (2, 40), (3, 70)]);
        assert_eq!(
            (Instant::now() - start).as_secs(),
            115,
            "the last action ends at 70+45"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn slow_sampler_starts_neither_move_events_nor_each_other() {
        let s = step(3, "30s", Some("10s"));
        let times = event_times(&s, 1.0);
        let windows = sampler_windows(&times, step_duration(&s, 1.0), SAMPLER_LEAD);
        let opens: Vec<Duration> = windows.iter().map(|w| w.open).collect();
        let start = Instant::now();
        let cancel = CancellationToken::new();
        // A start that holds the per-job lock 3 s (update-then-start), one at a time.
        let lock = std::sync::Arc::new(tokio::sync::Mutex::new(()));
        let samplers = fire(start, &opens, &cancel, |n| {
            let lock = lock.clone();
            async move {
                let _held = lock.lock().await;
                tokio::time::sleep(Duration::from_secs(3)).await;
                (n, (Instant::now() - start).as_secs())
            }
        });
        let events = fire(start, &times, &cancel, |n| async move {
            (n, (Instant::now() - start).as_secs())
        });
        let (samplers, events) = tokio::join!(samplers, events);
        let deadline = start + Duration::from_secs(600);
        let (samplers, _) = collect(samplers, deadline).await;
        let (events, _) = collect(events, deadline).await;
        assert_eq!(events, vec![(1, 10), (2, 40), (3, 70)]);
        // Each sampler runs before its event fires: opened at 5/35/65 s, started 3 s later.
        assert_eq!(samplers, vec![(1, 8), (2, 38), (3, 68)]);
    }

    #[tokio::test(start_paused = true)]
    async fn cancel_skips_later_events_and_collect_aborts_late_tasks() {
        let s = step(5, "30s", Some("10s"));
        let start = Instant::now();
        let cancel = CancellationToken::new();
        let c2 = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(50)).await;
            c2.cancel();
        });
        let tasks = fire(start, &event_times(&s, 1.0), &cancel, |n| async move {
            if n == 2 {
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
            n
        })
        .await;
        assert_eq!(
            tasks.len(),
            2,
            "events at 10 s and 40 s fired, 70 s and later did not"
        );
        assert_eq!((Instant::now() - start).as_secs(), 50);
        let (done, aborted) = collect(tasks, Instant::now() + Duration::from_secs(5)).await;
        assert_eq!(done, vec![1]);
        assert_eq!(aborted, 1);
    }
}
