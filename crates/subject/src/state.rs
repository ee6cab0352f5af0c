//! The shared state every handler sees: configuration, identity, lifecycle flags, simulations,
//! the dependency mode's run-time settings.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::HeaderValue;
use logline::line::{SubjectEvent, SubjectLine};
use serde::Serialize;
use tokio::sync::{Semaphore, watch};
use tokio::time::Instant;

use crate::capacity::Capacity;
use crate::config::{Config, Identity};
use crate::dependency_client::DependencyClient;

/// How the process exits on `/simulate/crash` (the binary: `std::process::exit`).
pub type ExitFn = Arc<dyn Fn(i32) + Send + Sync>;

/// The simulations in force.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Simulation {
    pub zombie: bool,
    pub deadlocked: bool,
}

/// What a dependency-mode `/health` does; changed at run time by `POST /admin/dependency`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct DependencySettings {
    pub healthy: bool,
    pub delay_ms: u64,
    pub fail_rate: f64,
}

/// Shared state; cheap to clone.
#[derive(Clone)]
pub struct AppState(pub Arc<Inner>);

pub struct Inner {
    pub cfg: Config,
    pub id: Identity,
    /// Precomputed `X-Revision`, `X-Replica`, `X-Generation` (absent when not a valid header).
    pub id_headers: Vec<(&'static str, HeaderValue)>,
    pub boot: Instant,
    pub started: AtomicBool,
    pub draining: AtomicBool,
    pub inflight: AtomicU64,
    /// `/` requests that passed startup, counted for `FAIL_RATE`.
    pub served: AtomicU64,
    pub sim: watch::Sender<Simulation>,
    pub semaphore: Option<Arc<Semaphore>>,
    /// The `CAPACITY_RPS` model of `/`, when set.
    pub capacity: Option<Capacity>,
    pub dependency: Mutex<DependencySettings>,
    pub client: DependencyClient,
    pub exit: ExitFn,
    /// What `/alloc` holds ([`crate::memory`]).
    pub memory: crate::memory::Held,
    /// The work queue of `/queue` ([`crate::queue`]).
    pub queue: crate::queue::Queue,
}

impl AppState {
    /// State for `cfg`; `started` is false until startup completes.
    pub fn new(cfg: Config, exit: ExitFn) -> Self {
        let id = cfg.identity();
        let id_headers = [
            ("x-revision", &id.revision),
            ("x-replica", &id.replica),
            ("x-generation", &id.generation),
        ]
        .into_iter()
        .filter_map(|(n, v)| HeaderValue::from_str(v).ok().map(|v| (n, v)))
        .collect();
        let dependency = DependencySettings {
            healthy: cfg.dependency_healthy,
            delay_ms: cfg.dependency_delay_ms,
            fail_rate: cfg.dependency_fail_rate,
        };
        let client = DependencyClient::new(Duration::from_millis(cfg.dependency_timeout_ms));
        AppState(Arc::new(Inner {
            semaphore: cfg.max_concurrency().map(|n| Arc::new(Semaphore::new(n))),
            capacity: cfg
                .capacity_rps
                .map(|rps| Capacity::new(rps, cfg.capacity_cv, cfg.capacity_sharing, None)),
            id,
            id_headers,
            boot: Instant::now(),
            started: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            inflight: AtomicU64::new(0),
            served: AtomicU64::new(0),
            sim: watch::Sender::new(Simulation::default()),
            dependency: Mutex::new(dependency),
            client,
            exit,
            memory: crate::memory::Held::default(),
            queue: crate::queue::Queue::default(),
            cfg,
        }))
    }

    /// State that is already started (for in-process router tests).
    pub fn started(cfg: Config, exit: ExitFn) -> Self {
        let s = Self::new(cfg, exit);
        s.set_started();
        s
    }

    pub fn cfg(&self) -> &Config {
        &self.0.cfg
    }

    pub fn is_started(&self) -> bool {
        self.0.started.load(Ordering::SeqCst)
    }

    pub fn set_started(&self) {
        self.0.started.store(true, Ordering::SeqCst);
    }

    pub fn is_draining(&self) -> bool {
        self.0.draining.load(Ordering::SeqCst)
    }

    pub fn set_draining(&self) {
        self.0.draining.store(true, Ordering::SeqCst);
    }

    pub fn inflight(&self) -> u64 {
        self.0.inflight.load(Ordering::SeqCst)
    }

    pub fn simulation(&self) -> Simulation {
        *self.0.sim.borrow()
    }

    /// A subject line carrying this process's identity.
    pub fn line(&self, event: SubjectEvent) -> SubjectLine {
        let id = &self.0.id;
        SubjectLine::new(event, &id.app, &id.revision, &id.replica, &id.generation)
    }

    /// Seconds since the state was created (process boot for the binary).
    pub fn uptime_s(&self) -> f64 {
        self.0.boot.elapsed().as_secs_f64()
    }
}
