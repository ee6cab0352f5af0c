//! A work queue the subject holds in memory, the event source of event-driven job labs:
//! `POST /queue?items=N` enqueues N items (ids `item-1`, `item-2`, ... in order) and answers the
//! stats with the new items' ids in `items`, `GET /queue`
//! answers `{length, enqueued, taken}` (KEDA's `metrics-api` scaler reads `length`), and
//! `POST /queue/take` hands out the oldest item once (`200 {id, length}`, or `204` when the
//! queue is empty). A bottom module: it imports nothing of this crate.
//!
//! Each item is handed out at most once: a worker that dies after taking it loses it (no
//! visibility timeout, no redelivery), so a lab sees a lost item rather than a duplicate.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde::Serialize;

/// The most items one `POST /queue` adds.
pub const MAX_ENQUEUE: u64 = 10_000;
/// The most items the queue holds at once.
pub const MAX_HELD: usize = 100_000;

/// What `GET /queue` answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QueueStats {
    /// Items waiting to be taken.
    pub length: usize,
    /// Items ever enqueued.
    pub enqueued: u64,
    /// Items ever taken.
    pub taken: u64,
}

/// What `POST /queue` answers: the stats after, and the ids of the items it added.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Enqueued {
    #[serde(flatten)]
    pub stats: QueueStats,
    pub items: Vec<String>,
}

/// A `POST /queue` the queue refuses; the message of the 400.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnqueueError {
    #[error("items must be a whole number from 1 to {MAX_ENQUEUE}, got {0:?}")]
    Items(String),
    #[error("the queue holds at most {MAX_HELD} items ({held} held, {asked} asked)")]
    Full { held: usize, asked: u64 },
}

#[derive(Default)]
struct Inner {
    items: VecDeque<String>,
    enqueued: u64,
    taken: u64,
}

/// The queue; shared by every handler.
#[derive(Default)]
pub struct Queue(Mutex<Inner>);

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Parses `items` (absent: 1) and enqueues that many items; their ids and the stats after.
    pub fn enqueue(&self, items: Option<&str>) -> Result<Enqueued, EnqueueError> {
        let n = match items {
            None => 1,
            Some(raw) => raw
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=MAX_ENQUEUE).contains(n))
                .ok_or_else(|| EnqueueError::Items(raw.to_owned()))?,
        };
        let mut q = self.lock();
        let room = MAX_HELD.saturating_sub(q.items.len());
        if usize::try_from(n).map_or(true, |n| n > room) {
            return Err(EnqueueError::Full {
                held: q.items.len(),
                asked: n,
            });
        }
        let mut ids = Vec::new();
        for _ in 0..n {
            q.enqueued += 1;
            let id = format!("item-{}", q.enqueued);
            ids.push(id.clone());
            q.items.push_back(id);
        }
        Ok(Enqueued {
            stats: stats(&q),
            items: ids,
        })
    }

    /// The oldest item, removed (each is handed out once), and the stats after.
    pub fn take(&self) -> (Option<String>, QueueStats) {
        let mut q = self.lock();
        let item = q.items.pop_front();
        if item.is_some() {
            q.taken += 1;
        }
        (item, stats(&q))
    }

    pub fn stats(&self) -> QueueStats {
        stats(&self.lock())
    }
}

fn stats(q: &Inner) -> QueueStats {
    QueueStats {
        length: q.items.len(),
        enqueued: q.enqueued,
        taken: q.taken,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_handed_out_once_in_order() {
        let q = Queue::default();
        let first = q.enqueue(Some("3")).unwrap();
        assert_eq!(first.stats.length, 3);
        assert_eq!(first.items, ["item-1", "item-2", "item-3"]);
        let second = q.enqueue(None).unwrap();
        assert_eq!(
            (second.stats.length, second.items),
            (4, vec!["item-4".to_owned()])
        );
        let mut seen = Vec::new();
        while let (Some(id), _) = q.take() {
            seen.push(id);
        }
        assert_eq!(seen, ["item-1", "item-2", "item-3", "item-4"]);
        assert_eq!(
            q.stats(),
            QueueStats {
                length: 0,
                enqueued: 4,
                taken: 4
            }
        );
        assert_eq!(q.take().0, None);
        assert_eq!(q.stats().taken, 4, "an empty take counts nothing");
    }

    #[test]
    fn bad_counts_and_a_full_queue_are_refused() {
        let q = Queue::default();
        for bad in ["0", "-1", "x", "1.5", "10001"] {
            assert_eq!(
                q.enqueue(Some(bad)),
                Err(EnqueueError::Items(bad.into())),
                "{bad}"
            );
        }
        assert!(q.enqueue(Some("10000")).is_ok());
        for _ in 0..9 {
            q.enqueue(Some("10000")).unwrap();
        }
        assert_eq!(q.stats().length, MAX_HELD);
        assert!(matches!(q.enqueue(None), Err(EnqueueError::Full { .. })));
        assert_eq!(
            q.stats().enqueued,
            MAX_HELD as u64,
            "nothing added on refusal"
        );
    }
}
