//! An event-driven job's replicas as its `subject` queue workers logged them: each replica's
//! span from its first line (`BOOT_START`) to its last (`QUEUE_ITEM_DONE` or `QUEUE_EMPTY`), and
//! how many were alive at each moment. Read by the job checks ([`crate::judge::checks`]) and drawn in
//! the timeline's replica panel. A bottom module: it imports only the accumulator's line type.

use std::collections::{BTreeMap, BTreeSet};

use logline::line::{SubjectEvent, SubjectLine};

/// Each replica's `[first, last]` line times, epoch ms, by replica name.
pub type Spans<'a> = BTreeMap<&'a str, (i64, i64)>;

/// The apps whose lines are a queue worker's (a `QUEUE_*` event): the jobs under test.
pub fn job_names(lines: &[SubjectLine]) -> BTreeSet<&str> {
    lines
        .iter()
        .filter(|s| {
            matches!(
                s.event,
                SubjectEvent::QueueItemTaken
                    | SubjectEvent::QueueItemDone
                    | SubjectEvent::QueueEmpty
            )
        })
        .map(|s| s.app.as_str())
        .collect()
}

/// The replicas of `job` as their lines span them.
pub fn spans<'a>(lines: &'a [SubjectLine], job: &str) -> Spans<'a> {
    let mut spans: Spans = BTreeMap::new();
    for s in lines.iter().filter(|s| s.app == job) {
        let t = s.ts.epoch_ms();
        spans
            .entry(s.replica.as_str())
            .and_modify(|(a, b)| {
                *a = (*a).min(t);
                *b = (*b).max(t);
            })
            .or_insert((t, t));
    }
    spans
}

/// The span edges in time order, `+1` at a start and `-1` at an end: half-open `[first, last)`
/// (a replica seen once counts for a millisecond), ends before starts at the same instant, so
/// a replica ending as another starts does not overlap it.
fn edges(spans: &Spans) -> Vec<(i64, i32)> {
    let mut e: Vec<(i64, i32)> = spans
        .values()
        .flat_map(|(a, b)| [(*a, 1), ((*b).max(a + 1), -1)])
        .collect();
    e.sort_unstable();
    e
}

/// The most replicas alive at once and when that was first reached.
pub fn most_at_once(spans: &Spans) -> (usize, Option<i64>) {
    let (mut open, mut most, mut at) = (0i32, 0i32, None);
    for (t, d) in edges(spans) {
        open += d;
        if open > most {
            most = open;
            at = Some(t);
        }
    }
    (usize::try_from(most).unwrap_or(0), at)
}

/// Replicas alive over time, one point per change (the count from that moment on).
pub fn alive(spans: &Spans) -> Vec<(i64, f64)> {
    let mut pts: Vec<(i64, f64)> = Vec::new();
    let mut open = 0i32;
    for (t, d) in edges(spans) {
        open += d;
        match pts.last_mut() {
            Some(last) if last.0 == t => last.1 = f64::from(open),
            _ => pts.push((t, f64::from(open))),
        }
    }
    pts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_that_touch_do_not_overlap_and_nested_ones_do() {
        let spans = BTreeMap::from([("a", (0, 10)), ("b", (10, 20)), ("c", (12, 15))]);
        assert_eq!(most_at_once(&spans), (2, Some(12)));
        assert_eq!(
            alive(&spans),
            vec![(0, 1.0), (10, 1.0), (12, 2.0), (15, 1.0), (20, 0.0)]
        );
        let one = BTreeMap::from([("a", (5, 5))]);
        assert_eq!(most_at_once(&one), (1, Some(5)));
        assert_eq!(most_at_once(&BTreeMap::new()), (0, None));
    }
}
