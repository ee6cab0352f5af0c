//! Waiting on the condition a test asserts instead of sleeping a fixed time: [`eventually`]
//! polls until the condition holds and fails, naming it, once a deadline has passed;
//! [`eventually_blocking`] does the same for a synchronous condition on a blocked thread.

use std::future::Future;
use std::time::Duration;

/// The most often [`eventually`] polls: every 10 ms.
pub const MIN_PERIOD: Duration = Duration::from_millis(10);
/// The least often [`eventually`] polls: every 100 ms.
pub const MAX_PERIOD: Duration = Duration::from_millis(100);

/// How often [`eventually`] polls within `limit`: about fifty times over it, between
/// [`MIN_PERIOD`] and [`MAX_PERIOD`] (a 500 ms wait polls every 10 ms, a 10 s one every 100 ms).
pub fn period(limit: Duration) -> Duration {
    (limit / 50).clamp(MIN_PERIOD, MAX_PERIOD)
}

/// Polls `f` (at [`period`]`(limit)`) until it returns `Some`, and returns that value.
///
/// # Panics
/// When `f` still returns `None` after `limit`: "timed out after {limit} waiting for {what}".
#[track_caller]
pub fn eventually<T, F, Fut>(limit: Duration, what: &str, mut f: F) -> impl Future<Output = T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let caller = std::panic::Location::caller();
    async move {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(v) = f().await {
                return v;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out after {limit:?} waiting for {what} (at {caller})"
            );
            tokio::time::sleep(period(limit)).await;
        }
    }
}

/// [`eventually`] for a synchronous condition: polls `f` on this thread (sleeping between
/// polls) until it returns `Some`, and returns that value.
///
/// # Panics
/// When `f` still returns `None` after `limit`: "timed out after {limit} waiting for {what}".
#[track_caller]
pub fn eventually_blocking<T>(limit: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(period(limit));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn the_period_follows_the_limit_within_its_bounds() {
        assert_eq!(period(Duration::from_millis(100)), MIN_PERIOD);
        assert_eq!(period(Duration::from_secs(1)), Duration::from_millis(20));
        assert_eq!(period(Duration::from_secs(60)), MAX_PERIOD);
    }

    #[tokio::test]
    async fn returns_the_value_once_the_condition_holds() {
        let calls = AtomicU32::new(0);
        let v = eventually(Duration::from_secs(5), "the third call", || async {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            (n == 3).then_some(n)
        })
        .await;
        assert_eq!(v, 3);
    }

    #[test]
    fn the_blocking_variant_returns_the_value_once_the_condition_holds() {
        let mut calls = 0;
        let v = eventually_blocking(Duration::from_secs(5), "the second call", || {
            calls += 1;
            (calls == 2).then_some("done")
        });
        assert_eq!((v, calls), ("done", 2));
    }

    #[test]
    #[should_panic(expected = "timed out after 50ms waiting for nothing")]
    fn the_blocking_variant_panics_naming_the_condition() {
        eventually_blocking(Duration::from_millis(50), "nothing", || None::<()>);
    }

    #[tokio::test]
    #[should_panic(expected = "timed out after 50ms waiting for nothing")]
    async fn panics_naming_the_condition_after_the_limit() {
        eventually(Duration::from_millis(50), "nothing", || async {
            None::<()>
        })
        .await;
    }
}
