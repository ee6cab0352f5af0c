//! When things happen within a step: the action fires `events` times, the first `offset` after
//! the step starts, then every `interval`; the load runs for the step's duration.
//!
//! Firing is scheduled at absolute times (`start + offset + k × interval`), never as a sleep after
//! the previous action, and each action runs as its own task, so a slow one (a rollout waiting
//! for its revision, a 60 s blocking request) never delays the next event.

use std::future::Future;
use std::time::Duration;

use lab::Step;
use labkit::config::parse_duration;
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
