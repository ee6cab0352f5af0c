//! The routing table the controller publishes ([`Routes`]) and the pick of one backend per
//! request: round-robin over the endpoints (single mode; the affinity cookie's replica while it
//! is routable when sticky), or smooth weighted round-robin over the revisions of a [`Split`]
//! and round-robin within one (multiple mode; a label host name picks its revision). It also
//! counts the requests in flight for the scaler.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::Notify;

use crate::scaler::Observation;

use super::Policy;

/// The endpoints traffic goes to, replaced as a whole by the controller.
#[derive(Debug, Default)]
pub struct Routes {
    endpoints: RwLock<Arc<Vec<Backend>>>,
    next: AtomicUsize,
    /// Fired whenever the endpoints or the hold flag change (held requests look again).
    pub(super) changed: Notify,
    /// Requests in flight now (held ones included).
    in_flight: AtomicU32,
    /// The most in flight at once since the last [`Routes::take_observation`].
    peak: AtomicU32,
    /// Requests arrived since the last [`Routes::take_observation`].
    arrived: AtomicU64,
    /// Whether a request finding no routable replica is held rather than answered 503.
    pub(super) hold: AtomicBool,
    /// Session affinity by [`AFFINITY_COOKIE`] (single revision mode only).
    sticky: AtomicBool,
    /// Notified when a request is held: the plane activates the app.
    pub demand: Notify,
    /// Multiple revision mode: the weighted revisions and labels; `None` routes round-robin
    /// over `endpoints` (single revision mode).
    split: RwLock<Option<Arc<Split>>>,
    /// The smooth weighted round-robin scores and the per-revision round-robin positions of
    /// `split` (reset when it changes).
    split_state: Mutex<SplitState>,
    /// The timeout and retry behaviour (the app's tags).
    policy: RwLock<Policy>,
}

/// Multiple revision mode's routing table: each revision with a weight (its ready replicas,
/// possibly none) and the labels that name a revision.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Split {
    pub groups: Vec<Group>,
    /// `(label, index into groups)`.
    pub labels: Vec<(String, usize)>,
}

/// One revision of a [`Split`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub revision: String,
    pub weight: u32,
    pub backends: Vec<Backend>,
}

#[derive(Debug, Default)]
struct SplitState {
    score: Vec<i64>,
    next: Vec<usize>,
}

/// Why a request is answered without an upstream at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The picked revision has no routable replica: Envoy's `503 no healthy upstream`.
    NoHealthy,
    /// The label names no revision: a 404, as for a host no route matches.
    UnknownLabel,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backend {
    pub addr: SocketAddr,
    pub revision: String,
    pub replica: String,
}

impl Routes {
    pub fn set(&self, mut backends: Vec<Backend>) {
        backends.sort_by(|a, b| a.replica.cmp(&b.replica));
        if let Ok(mut e) = self.endpoints.write()
            && **e != backends
        {
            *e = Arc::new(backends);
            drop(e);
            self.changed.notify_waiters();
        }
    }

    /// Whether requests that find no routable replica wait (an app that scales to zero).
    pub fn set_hold(&self, hold: bool) {
        if self.hold.swap(hold, Ordering::SeqCst) != hold {
            self.changed.notify_waiters();
        }
    }

    /// Whether requests stick to a replica by the affinity cookie (`stickySessions`).
    pub fn set_sticky(&self, sticky: bool) {
        self.sticky.store(sticky, Ordering::SeqCst);
    }

    pub fn sticky(&self) -> bool {
        self.sticky.load(Ordering::SeqCst)
    }

    /// The timeout and retry behaviour for requests that arrive from now on.
    pub fn set_policy(&self, policy: Policy) {
        if let Ok(mut p) = self.policy.write() {
            *p = policy;
        }
    }

    pub fn policy(&self) -> Policy {
        self.policy.read().map(|p| *p).unwrap_or_default()
    }

    pub fn in_flight(&self) -> u32 {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// What the scaler reads at an evaluation: the peak in flight and the arrivals since the
    /// previous one (the peak restarts from what is in flight now).
    pub fn take_observation(&self) -> Observation {
        let now = self.in_flight.load(Ordering::SeqCst);
        Observation {
            peak_in_flight: self.peak.swap(now, Ordering::SeqCst).max(now),
            arrived: self.arrived.swap(0, Ordering::SeqCst),
        }
    }

    pub(super) fn enter(self: &Arc<Self>) -> InFlight {
        let n = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(n, Ordering::SeqCst);
        self.arrived.fetch_add(1, Ordering::SeqCst);
        InFlight(self.clone())
    }

    pub fn snapshot(&self) -> Arc<Vec<Backend>> {
        self.endpoints.read().map(|e| e.clone()).unwrap_or_default()
    }

    /// Publishes multiple revision mode's table (`None`: single mode, round-robin over the
    /// endpoints); a changed table restarts the weighted round-robin from zero scores.
    pub fn set_split(&self, split: Option<Split>) {
        let Ok(mut cur) = self.split.write() else {
            return;
        };
        if cur.as_deref() == split.as_ref() {
            return;
        }
        let n = split.as_ref().map_or(0, |s| s.groups.len());
        *cur = split.map(Arc::new);
        drop(cur);
        if let Ok(mut st) = self.split_state.lock() {
            *st = SplitState {
                score: vec![0; n],
                next: vec![0; n],
            };
        }
        self.changed.notify_waiters();
    }

    /// The backend for a request (`label`: from a label host name; `affinity`: the replica its
    /// affinity cookie names): `Ok(None)` when nothing is routable (the request may be held),
    /// `Err` when it is answered at once.
    pub(super) fn pick(
        &self,
        label: Option<&str>,
        affinity: Option<&str>,
    ) -> Result<Option<Backend>, Refusal> {
        let split = self.split.read().ok().and_then(|s| s.clone());
        let Some(split) = split else {
            // Single mode: labels are not acted on, a label host name routes as any other.
            let e = self.snapshot();
            if e.is_empty() {
                return Ok(None);
            }
            // Session affinity: the cookie's replica while it is routable, else round-robin.
            if self.sticky()
                && let Some(b) = affinity.and_then(|a| e.iter().find(|b| b.replica == a))
            {
                return Ok(Some(b.clone()));
            }
            let i = self.next.fetch_add(1, Ordering::Relaxed) % e.len();
            return Ok(e.get(i).cloned());
        };
        let Ok(mut st) = self.split_state.lock() else {
            return Ok(None);
        };
        let g = match label {
            Some(l) => match split.labels.iter().find(|(x, _)| x == l) {
                Some((_, g)) => *g,
                None => return Err(Refusal::UnknownLabel),
            },
            None => match swrr(&split.groups, &mut st.score) {
                Some(g) => g,
                None => return Ok(None),
            },
        };
        let (Some(group), Some(next)) = (split.groups.get(g), st.next.get_mut(g)) else {
            return Ok(None);
        };
        if group.backends.is_empty() {
            return Err(Refusal::NoHealthy);
        }
        let b = group.backends[*next % group.backends.len()].clone();
        *next = next.wrapping_add(1);
        Ok(Some(b))
    }
}

/// Smooth weighted round-robin (nginx): adds each group's weight to its score, picks the
/// highest score (the first on a tie) and subtracts the weights' sum from it. Over every
/// `sum(weights)` consecutive picks each group is picked exactly `weight` times.
fn swrr(groups: &[Group], score: &mut [i64]) -> Option<usize> {
    let total: i64 = groups.iter().map(|g| i64::from(g.weight)).sum();
    if total == 0 || score.len() != groups.len() {
        return None;
    }
    let mut best: Option<usize> = None;
    for (i, g) in groups.iter().enumerate() {
        score[i] += i64::from(g.weight);
        if g.weight > 0 && best.is_none_or(|b| score[i] > score[b]) {
            best = Some(i);
        }
    }
    let b = best?;
    score[b] -= total;
    Some(b)
}

/// One request counted in flight until dropped.
#[derive(Debug)]
pub(super) struct InFlight(Arc<Routes>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn be(port: u16, revision: &str, replica: &str) -> Backend {
        Backend {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            revision: revision.into(),
            replica: replica.into(),
        }
    }

    fn group(revision: &str, weight: u32, backends: Vec<Backend>) -> Group {
        Group {
            revision: revision.into(),
            weight,
            backends,
        }
    }

    /// SWRR splits every 100 consecutive picks exactly by weight (from any starting point),
    /// round-robins inside a revision, and a weighted revision without replicas gets its share
    /// refused (503), not re-routed.
    #[test]
    fn weighted_split_is_exact_and_keeps_an_unready_share() {
        let routes = Routes::default();
        routes.set_split(Some(Split {
            groups: vec![
                group("a", 90, vec![be(1, "a", "a1"), be(2, "a", "a2")]),
                group("b", 10, vec![be(3, "b", "b1")]),
            ],
            labels: vec![("canary".into(), 1)],
        }));
        for _ in 0..37 {
            routes.pick(None, None).unwrap();
        }
        let mut count = std::collections::BTreeMap::new();
        for _ in 0..100 {
            let b = routes.pick(None, None).unwrap().unwrap();
            *count.entry(b.replica).or_insert(0i32) += 1;
        }
        assert_eq!(count["b1"], 10);
        assert_eq!(count["a1"] + count["a2"], 90);
        assert!((count["a1"] - count["a2"]).abs() <= 1, "{count:?}");
        // Labels: only the labelled revision; an unknown one is refused.
        for _ in 0..5 {
            assert_eq!(
                routes.pick(Some("canary"), None).unwrap().unwrap().replica,
                "b1"
            );
        }
        assert_eq!(routes.pick(Some("nope"), None), Err(Refusal::UnknownLabel));
        // The 10 % revision loses its replicas: its picks are 503s, the others still go to a.
        routes.set_split(Some(Split {
            groups: vec![
                group("a", 90, vec![be(1, "a", "a1")]),
                group("b", 10, vec![]),
            ],
            labels: vec![],
        }));
        let refused = (0..100)
            .filter(|_| routes.pick(None, None) == Err(Refusal::NoHealthy))
            .count();
        assert_eq!(refused, 10);
        // Single mode: no split, nothing routable, a label changes nothing.
        routes.set_split(None);
        assert_eq!(routes.pick(Some("canary"), None), Ok(None));
    }

    /// Session affinity: with `sticky` a cookie naming a routable replica keeps its requests
    /// there; a replica that is gone falls back to round-robin; without `sticky`, and in
    /// multiple revision mode, the cookie changes nothing.
    #[test]
    fn affinity_sticks_while_the_replica_is_routable() {
        let routes = Routes::default();
        routes.set(vec![be(1, "r", "r1"), be(2, "r", "r2"), be(3, "r", "r3")]);
        let picks = |n: usize, cookie: Option<&str>| -> std::collections::BTreeSet<String> {
            (0..n)
                .map(|_| routes.pick(None, cookie).unwrap().unwrap().replica)
                .collect()
        };
        assert_eq!(picks(3, Some("r2")).len(), 3, "not sticky: round-robin");
        routes.set_sticky(true);
        assert_eq!(picks(10, Some("r2")), ["r2".to_string()].into());
        assert_eq!(picks(3, None).len(), 3, "no cookie: round-robin");
        routes.set(vec![be(1, "r", "r1"), be(3, "r", "r3")]);
        assert_eq!(
            picks(4, Some("r2")),
            ["r1".to_string(), "r3".to_string()].into(),
            "a replica that is gone: round-robin over the others"
        );
        routes.set_split(Some(Split {
            groups: vec![group("r", 100, vec![be(1, "r", "r1"), be(3, "r", "r3")])],
            labels: vec![],
        }));
        assert_eq!(picks(4, Some("r3")).len(), 2, "multiple mode: not acted on");
    }
}
