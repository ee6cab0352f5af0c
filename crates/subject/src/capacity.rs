//! `CAPACITY_RPS`: a finite-capacity server for `GET /`, made of sleeps, not CPU.
//!
//! The original rollout lab's app was one Python/Flask process per replica: it answered 100 RPS
//! (over 3 replicas) in 5.6 ms at the median and 200 RPS in 102.6 ms, a queue that forms well
//! below the rate the replicas could not carry at all. Our axum subject answers `/` in well under
//! a millisecond at any rate this machine can send, so nothing queues, and burning real CPU to
//! make it queue would measure the build machine's two cores, not the platform. This module
//! models a replica that can do `CAPACITY_RPS` requests' worth of work per second:
//!
//! - each request brings an amount of work drawn at arrival: mean `1 / CAPACITY_RPS` seconds of
//!   the server, coefficient of variation `CAPACITY_CV` ([`WorkDist`]: constant for 0, a
//!   constant plus an exponential part below 1, exponential at 1, a two-phase hyperexponential
//!   with balanced means above 1);
//! - `CAPACITY_SHARING=ps` (processor sharing): every request in the model progresses at
//!   `1/n` of the capacity while `n` are in it, as threads sharing one interpreter lock do;
//! - `CAPACITY_SHARING=fifo`: one request is served at a time, in arrival order, the others
//!   wait, as a single worker (or handlers that hold the interpreter lock for their whole
//!   work) does.
//!
//! With constant-rate arrivals, as loadgen sends and localplane's round-robin spreads them, a
//! server below capacity queues only through the variability of the work: with constant work
//! neither sharing queues at all. Which sharing and variability reproduce the original's
//! staircase, and why the shipped lab uses `fifo`, is measured in docs/FIDELITY.md.
//!
//! Both are exact queueing models driven by tokio's clock (so tests run them in paused time): a
//! timer that wakes late delays a response, but never the accounting of the work (the next
//! request starts, or the others speed up, at the exact instant the late one finished). A
//! request whose client goes away keeps its work in the model until done, as a thread computing
//! a response nobody reads would.

use std::cmp::{Ordering as CmpOrdering, Reverse};
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::ValueEnum;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

use crate::http::lock;

/// How requests share the capacity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Sharing {
    /// Processor sharing: each of `n` requests in the model progresses at `1/n` of the capacity.
    Ps,
    /// One at a time, in arrival order.
    Fifo,
}

impl Sharing {
    pub fn name(&self) -> &'static str {
        match self {
            Sharing::Ps => "ps",
            Sharing::Fifo => "fifo",
        }
    }
}

/// The largest accepted `CAPACITY_CV`.
pub const MAX_CV: f64 = 10.0;

/// The distribution of one request's work, in seconds of the whole server.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorkDist {
    /// Mean work, seconds (`1 / CAPACITY_RPS`).
    pub mean: f64,
    /// Coefficient of variation (standard deviation / mean), `0..=MAX_CV`.
    pub cv: f64,
}

impl WorkDist {
    /// One draw.
    pub fn draw(&self, rng: &mut impl Rng) -> f64 {
        let m = self.mean;
        let exp = |rng: &mut dyn rand::RngCore, mean: f64| {
            // 1 - u is in (0, 1], so the logarithm is finite.
            let u: f64 = rng.random::<f64>();
            -(1.0 - u).ln() * mean
        };
        if self.cv <= 0.0 {
            m
        } else if self.cv < 1.0 {
            // A constant plus an exponential: mean m, standard deviation cv × m.
            (1.0 - self.cv) * m + exp(rng, self.cv * m)
        } else {
            // Balanced-means H2: branch i with probability p_i and mean m / (2 p_i), which gives
            // mean m and squared CV cv².
            let c2 = self.cv * self.cv;
            let p = 0.5 * (1.0 + ((c2 - 1.0) / (c2 + 1.0)).sqrt());
            let pick: f64 = rng.random::<f64>();
            let branch = if pick < p { p } else { 1.0 - p };
            exp(rng, m / (2.0 * branch))
        }
    }
}

/// One replica's capacity. Cheap to share (`Arc`).
pub struct Capacity {
    sharing: Sharing,
    dist: WorkDist,
    rng: Mutex<StdRng>,
    fifo: Mutex<Option<Instant>>,
    ps: Arc<Ps>,
}

impl std::fmt::Debug for Capacity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capacity")
            .field("sharing", &self.sharing)
            .field("dist", &self.dist)
            .finish_non_exhaustive()
    }
}

impl Capacity {
    /// A server doing `rps` mean requests' work per second; `seed` makes the draws
    /// reproducible (tests), `None` seeds from the OS.
    pub fn new(rps: f64, cv: f64, sharing: Sharing, seed: Option<u64>) -> Self {
        let rng = match seed {
            Some(s) => StdRng::seed_from_u64(s),
            None => StdRng::from_os_rng(),
        };
        Capacity {
            sharing,
            dist: WorkDist {
                mean: 1.0 / rps,
                cv: cv.clamp(0.0, MAX_CV),
            },
            rng: Mutex::new(rng),
            fifo: Mutex::new(None),
            ps: Arc::new(Ps::default()),
        }
    }

    pub fn sharing(&self) -> Sharing {
        self.sharing
    }

    /// Requests in the model now (waiting or being served); for `ps` those not yet done.
    pub fn in_model(&self) -> usize {
        match self.sharing {
            Sharing::Ps => lock(&self.ps.state).heap.len(),
            Sharing::Fifo => 0,
        }
    }

    /// Draws this request's work and waits until the model has done it.
    pub async fn serve(&self) {
        let work = {
            let mut rng = lock(&self.rng);
            self.dist.draw(&mut *rng)
        };
        self.serve_work(Duration::from_secs_f64(work)).await;
    }

    /// Waits until the model has done `work` (seconds of the whole server) for this request.
    pub async fn serve_work(&self, work: Duration) {
        match self.sharing {
            Sharing::Fifo => {
                let end = {
                    let mut free = lock(&self.fifo);
                    let now = Instant::now();
                    let start = free.map_or(now, |f| f.max(now));
                    let end = start + work;
                    *free = Some(end);
                    end
                };
                tokio::time::sleep_until(end).await;
            }
            Sharing::Ps => {
                let done = Ps::arrive(&self.ps, work.as_secs_f64());
                // The driver never drops a sender before sending; a closed channel would mean
                // it is gone, and then there is nothing left to wait for.
                let _ = done.await;
            }
        }
    }
}

/// A finish point in virtual time, ordered (never NaN: work and time are finite).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Finish(f64);

impl Eq for Finish {}

impl PartialOrd for Finish {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl Ord for Finish {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        self.0.total_cmp(&other.0)
    }
}

/// Processor sharing in virtual time: `v` is the work every job in the model has received; it
/// grows at `1/n` per second with `n` jobs in. A job arriving at `v₀` with work `w` leaves when
/// `v` reaches `v₀ + w`.
#[derive(Default)]
struct Ps {
    state: Mutex<PsState>,
    wake: Notify,
}

#[derive(Default)]
struct PsState {
    v: f64,
    last: Option<Instant>,
    next_id: u64,
    heap: BinaryHeap<Reverse<(Finish, u64)>>,
    waiters: HashMap<u64, oneshot::Sender<()>>,
    driver: bool,
}

impl PsState {
    /// Advances the model to `now`, releasing, at their exact instants, the jobs that finished.
    fn advance(&mut self, now: Instant) {
        let mut last = self.last.unwrap_or(now);
        loop {
            let n = self.heap.len();
            let Some(Reverse((Finish(f), id))) = self.heap.peek().copied() else {
                break;
            };
            let left = (f - self.v).max(0.0);
            let at = last + Duration::from_secs_f64(left * n as f64);
            if at > now {
                self.v += (now - last).as_secs_f64() / n as f64;
                last = now;
                break;
            }
            self.v = f;
            last = at;
            self.heap.pop();
            if let Some(tx) = self.waiters.remove(&id) {
                let _ = tx.send(());
            }
        }
        self.last = Some(now.max(last));
    }

    /// When the next job leaves if nobody arrives.
    fn next_departure(&self) -> Option<Instant> {
        let Reverse((Finish(f), _)) = self.heap.peek()?;
        let last = self.last?;
        let n = self.heap.len() as f64;
        Some(last + Duration::from_secs_f64((f - self.v).max(0.0) * n))
    }
}

impl Ps {
    fn arrive(this: &Arc<Self>, work: f64) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        let spawn = {
            let mut st = lock(&this.state);
            st.advance(Instant::now());
            let id = st.next_id;
            st.next_id += 1;
            let finish = Finish(st.v + work.max(0.0));
            st.heap.push(Reverse((finish, id)));
            st.waiters.insert(id, tx);
            !std::mem::replace(&mut st.driver, true)
        };
        if spawn {
            tokio::spawn(Self::drive(this.clone()));
        }
        this.wake.notify_one();
        rx
    }

    /// Releases jobs as they finish; woken early by every arrival.
    async fn drive(this: Arc<Self>) {
        loop {
            let next = {
                let mut st = lock(&this.state);
                st.advance(Instant::now());
                st.next_departure()
            };
            match next {
                Some(at) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at) => {}
                        _ = this.wake.notified() => {}
                    }
                }
                None => this.wake.notified().await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(d: Duration) -> u128 {
        d.as_millis()
    }

    /// Starts one request of `work` at `at` (from `t0`), returning when it ended (from `t0`).
    fn request(
        cap: &Arc<Capacity>,
        t0: Instant,
        at: Duration,
        work: Duration,
    ) -> tokio::task::JoinHandle<Duration> {
        let cap = cap.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(t0 + at).await;
            cap.serve_work(work).await;
            Instant::now() - t0
        })
    }

    async fn ends(hs: Vec<tokio::task::JoinHandle<Duration>>) -> Vec<u128> {
        let mut out = Vec::new();
        for h in hs {
            out.push(ms(h.await.unwrap()));
        }
        out
    }

    #[tokio::test(start_paused = true)]
    async fn fifo_serves_one_at_a_time_in_arrival_order() {
        let cap = Arc::new(Capacity::new(100.0, 0.0, Sharing::Fifo, Some(1)));
        let t0 = Instant::now();
        let w = Duration::from_millis(10);
        let hs = (0..3)
            .map(|_| request(&cap, t0, Duration::ZERO, w))
            .collect();
        assert_eq!(ends(hs).await, vec![10, 20, 30]);
        // Spaced wider than the work: nobody waits.
        let t0 = Instant::now();
        let hs = (0..3)
            .map(|i| request(&cap, t0, Duration::from_millis(20 * i), w))
            .collect();
        assert_eq!(ends(hs).await, vec![10, 30, 50]);
    }

    #[tokio::test(start_paused = true)]
    async fn ps_shares_the_capacity_among_the_requests_in_it() {
        let cap = Arc::new(Capacity::new(100.0, 0.0, Sharing::Ps, Some(1)));
        let t0 = Instant::now();
        let w = Duration::from_millis(10);
        // Two at once: each at half speed, both done at 20 ms.
        let hs = (0..2)
            .map(|_| request(&cap, t0, Duration::ZERO, w))
            .collect();
        assert_eq!(ends(hs).await, vec![20, 20]);
        // The second arrives when the first is half done: the first's last 5 ms take 10, then
        // the second finishes its remaining 5 ms alone.
        let t0 = Instant::now();
        let hs = vec![
            request(&cap, t0, Duration::ZERO, w),
            request(&cap, t0, Duration::from_millis(5), w),
        ];
        assert_eq!(ends(hs).await, vec![15, 20]);
        assert_eq!(cap.in_model(), 0);
        // A long and a short one: the short one leaves first (fifo would make it wait).
        let t0 = Instant::now();
        let hs = vec![
            request(&cap, t0, Duration::ZERO, Duration::from_millis(100)),
            request(&cap, t0, Duration::ZERO, Duration::from_millis(10)),
        ];
        assert_eq!(ends(hs).await, vec![110, 20]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_whose_client_left_still_takes_its_share() {
        let cap = Arc::new(Capacity::new(100.0, 0.0, Sharing::Ps, Some(1)));
        let t0 = Instant::now();
        let gone = request(&cap, t0, Duration::ZERO, Duration::from_millis(10));
        let stays = request(&cap, t0, Duration::ZERO, Duration::from_millis(10));
        tokio::time::sleep(Duration::from_millis(1)).await;
        gone.abort();
        assert_eq!(ms(stays.await.unwrap()), 20);
    }

    /// p50 of the response times of `n` requests at a constant `rate`, from empty.
    async fn p50_at(cap: Arc<Capacity>, rate: f64, secs: f64) -> f64 {
        let t0 = Instant::now();
        let n = (rate * secs) as u64;
        let hs: Vec<_> = (0..n)
            .map(|i| {
                let cap = cap.clone();
                let at = t0 + Duration::from_secs_f64(i as f64 / rate);
                tokio::spawn(async move {
                    tokio::time::sleep_until(at).await;
                    cap.serve().await;
                    (Instant::now() - at).as_secs_f64()
                })
            })
            .collect();
        let mut v = Vec::new();
        for h in hs {
            v.push(h.await.unwrap());
        }
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    #[tokio::test(start_paused = true)]
    async fn constant_work_below_capacity_never_queues_whatever_the_sharing() {
        // One replica's share of 100 and 200 RPS over 3 replicas, capacity 78/s: without
        // variability the median is the work itself at both rates, a ratio of 1 (the response
        // comes at the next tick of tokio's 1 ms timer after the work ends).
        for sharing in [Sharing::Ps, Sharing::Fifo] {
            let a = p50_at(
                Arc::new(Capacity::new(78.0, 0.0, sharing, Some(3))),
                100.0 / 3.0,
                30.0,
            )
            .await;
            let b = p50_at(
                Arc::new(Capacity::new(78.0, 0.0, sharing, Some(3))),
                200.0 / 3.0,
                30.0,
            )
            .await;
            assert!((b / a - 1.0).abs() < 0.05, "{sharing:?}: {a} {b}");
            assert!(
                (1.0 / 78.0..1.0 / 78.0 + 0.0011).contains(&a),
                "{sharing:?}: {a}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn variable_work_makes_a_queue_below_capacity_fifo_more_than_ps() {
        // The rollout lab's setting until 2026-12-03: capacity 78/s, CV 3. Per replica
        // 33.3/s and 66.7/s (ρ = 0.43 and 0.85) for 30 s, seeded. (Its sizing against every
        // draw is tests/headroom_sizing.rs.)
        let run = |sharing, rate, seed| async move {
            p50_at(
                Arc::new(Capacity::new(78.0, 3.0, sharing, Some(seed))),
                rate,
                30.0,
            )
            .await
        };
        let fifo =
            run(Sharing::Fifo, 200.0 / 3.0, 7).await / run(Sharing::Fifo, 100.0 / 3.0, 7).await;
        let ps = run(Sharing::Ps, 200.0 / 3.0, 7).await / run(Sharing::Ps, 100.0 / 3.0, 7).await;
        assert!(fifo >= 5.0, "fifo ratio {fifo}");
        assert!(ps > 1.0 && ps < fifo, "ps ratio {ps}, fifo {fifo}");
    }

    #[test]
    fn the_work_has_the_configured_mean_and_variability() {
        for cv in [0.0, 0.5, 1.0, 3.0] {
            let d = WorkDist { mean: 0.01, cv };
            let mut rng = StdRng::seed_from_u64(42);
            let n = 400_000;
            let xs: Vec<f64> = (0..n).map(|_| d.draw(&mut rng)).collect();
            let mean = xs.iter().sum::<f64>() / n as f64;
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
            let got_cv = var.sqrt() / mean;
            assert!((mean / 0.01 - 1.0).abs() < 0.03, "cv {cv}: mean {mean}");
            assert!(
                (got_cv - cv).abs() < 0.05 * cv.max(1.0),
                "cv {cv}: got {got_cv}"
            );
            assert!(xs.iter().all(|x| x.is_finite() && *x >= 0.0));
        }
    }
}
