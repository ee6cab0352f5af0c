//! What may run at once: each environment's cores quota, as Container Apps documents it, and a
//! cap of localplane's own on the replicas running on this host (`--max-replicas`,
//! `LOCALPLANE_MAX_REPLICAS`), so that a typo such as `minReplicas: 1000` starts no container
//! instead of a thousand.
//!
//! Every replica (of an app's revision, or of a job execution) holds a [`Lease`] on its cores in
//! its environment and on one host replica slot while it runs; dropping the lease gives them
//! back. [`Ledger::take`] takes the leases of several replicas at once or none of them, so a
//! revision whose initial replicas do not all fit starts none.
//!
//! Sources (docs/FIDELITY.md, "Resources and quotas"): Learn's "Quotas for Azure Container
//! Apps": cores per environment 100 by default (Consumption plan and Consumption workload
//! profile), "Calculated by the sum of cores requested by each active replica of all revisions
//! in an environment"; "If an environment runs out of allowed cores: Provisioning times out
//! with a failure; The app may be restricted from scaling out". The message Azure writes to
//! the system logs then (Azure OSS Developer Support, "Maximum Allowed Cores exceeded for the
//! Managed Environment", 2025-05-16): [`ENV_CORES_MESSAGE`].

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

/// Cores (hundredths) each environment may run: Learn's default of 100.
pub const ENV_CORES_QUOTA: u64 = 100 * 100;

/// Replicas localplane runs on this host at most, by default.
pub const DEFAULT_MAX_REPLICAS: u32 = 50;

/// What Azure writes when a replica does not fit in its environment's cores.
pub const ENV_CORES_MESSAGE: &str = "Maximum Allowed Cores exceeded for the Managed Environment. Please check https://learn.microsoft.com/en-us/azure/container-apps/quotas for resource limits.";

/// The reason of the system row for a replica that was not started (not in any export we have:
/// Kubernetes' reason for a pod that cannot be scheduled).
pub const REASON: &str = "FailedScheduling";

/// The code of an operation that failed on a quota (ARM's code for an exceeded quota; the
/// code Container Apps gives its failed provisioning is not known).
pub const CODE: &str = "QuotaExceeded";

/// Why replicas were not started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Exceeded {
    /// The environment's cores quota.
    #[error("{ENV_CORES_MESSAGE}")]
    EnvCores {
        env: String,
        /// Cores (hundredths) running in the environment now, asked for, and its quota.
        used: u64,
        asked: u64,
        quota: u64,
    },
    /// localplane's cap on the replicas running on this host.
    #[error(
        "localplane runs at most {cap} replicas on this host (--max-replicas, LOCALPLANE_MAX_REPLICAS) and {running} run now: {asked} more were not started"
    )]
    HostReplicas { running: u32, asked: u32, cap: u32 },
}

#[derive(Default)]
struct Usage {
    replicas: u32,
    /// Cores (hundredths) in use, by environment key.
    cores: HashMap<String, u64>,
    /// Revisions (or executions) whose refusal was already written, so a controller retrying
    /// every pass writes it once.
    noted: HashSet<String>,
}

/// The replicas running, against the quotas.
pub struct Ledger {
    max_replicas: u32,
    usage: Mutex<Usage>,
}

/// One replica's share: its cores in its environment and one host replica slot, given back on
/// drop.
#[derive(Debug)]
pub struct Lease {
    ledger: Arc<Ledger>,
    env: String,
    cores: u64,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut u = self.ledger.lock();
        u.replicas = u.replicas.saturating_sub(1);
        if let Some(c) = u.cores.get_mut(&self.env) {
            *c = c.saturating_sub(self.cores);
        }
    }
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger")
            .field("max_replicas", &self.max_replicas)
            .field("running", &self.running())
            .finish()
    }
}

impl Ledger {
    pub fn new(max_replicas: u32) -> Arc<Ledger> {
        Arc::new(Ledger {
            max_replicas,
            usage: Mutex::new(Usage::default()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Usage> {
        self.usage.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn max_replicas(&self) -> u32 {
        self.max_replicas
    }

    /// Replicas holding a lease now.
    pub fn running(&self) -> u32 {
        self.lock().replicas
    }

    /// Cores (hundredths) in use in environment `env`.
    pub fn cores(&self, env: &str) -> u64 {
        self.lock().cores.get(env).copied().unwrap_or(0)
    }

    /// Leases for `n` replicas of `cores` (hundredths) each in environment `env`: all of them,
    /// or none and why (the environment's cores quota is checked first, then the host cap).
    pub fn take(self: &Arc<Self>, env: &str, cores: u64, n: u32) -> Result<Vec<Lease>, Exceeded> {
        let mut u = self.lock();
        let used = u.cores.get(env).copied().unwrap_or(0);
        let asked = cores.saturating_mul(u64::from(n));
        if used.saturating_add(asked) > ENV_CORES_QUOTA {
            return Err(Exceeded::EnvCores {
                env: env.to_owned(),
                used,
                asked,
                quota: ENV_CORES_QUOTA,
            });
        }
        if u.replicas.saturating_add(n) > self.max_replicas {
            return Err(Exceeded::HostReplicas {
                running: u.replicas,
                asked: n,
                cap: self.max_replicas,
            });
        }
        u.replicas += n;
        *u.cores.entry(env.to_owned()).or_insert(0) += asked;
        drop(u);
        Ok((0..n)
            .map(|_| Lease {
                ledger: self.clone(),
                env: env.to_owned(),
                cores,
            })
            .collect())
    }

    /// Whether the refusal of `what` (a revision, an execution) is new: `true` the first time
    /// after [`Ledger::forget`].
    pub fn note(&self, what: &str) -> bool {
        self.lock().noted.insert(what.to_owned())
    }

    /// `what` started: a later refusal is written again.
    pub fn forget(&self, what: &str) {
        self.lock().noted.remove(what);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The environment's 100 cores: 200 replicas of 0.5 fit, the 201st does not; another
    /// environment has its own 100.
    #[test]
    fn the_environment_cores_quota_on_both_sides() {
        let l = Ledger::new(1000);
        let held = l.take("env", 50, 200).unwrap();
        assert_eq!(l.cores("env"), ENV_CORES_QUOTA);
        assert!(matches!(
            l.take("env", 50, 1),
            Err(Exceeded::EnvCores {
                used: 10_000,
                asked: 50,
                ..
            })
        ));
        assert!(l.take("other", 50, 200).is_ok());
        drop(held);
        assert_eq!(l.cores("env"), 0);
        assert!(l.take("env", 25, 400).is_ok());
    }

    /// The host cap: `cap` replicas fit, one more does not, whatever their environments; all
    /// or nothing: a refused take holds nothing.
    #[test]
    fn the_host_cap_on_both_sides_and_all_or_nothing() {
        let l = Ledger::new(3);
        let a = l.take("a", 25, 2).unwrap();
        let e = l.take("b", 25, 2).unwrap_err();
        assert_eq!(
            e,
            Exceeded::HostReplicas {
                running: 2,
                asked: 2,
                cap: 3
            }
        );
        assert_eq!((l.running(), l.cores("b")), (2, 0), "nothing was taken");
        let b = l.take("b", 25, 1).unwrap();
        assert_eq!(l.running(), 3);
        assert!(l.take("c", 25, 1).is_err());
        drop(a);
        drop(b);
        assert_eq!(l.running(), 0);
        assert!(l.take("c", 25, 3).is_ok());
    }

    /// `minReplicas: 1000` of 0.5 vCPU is over both: the environment's quota is named.
    #[test]
    fn a_thousand_replicas_are_refused_with_the_environment_message() {
        let l = Ledger::new(DEFAULT_MAX_REPLICAS);
        let e = l.take("env", 50, 1000).unwrap_err();
        assert_eq!(e.to_string(), ENV_CORES_MESSAGE);
        assert_eq!(l.running(), 0);
        // 60 of 0.25 vCPU (15 cores) fit the environment but not the host.
        let e = l.take("env", 25, 60).unwrap_err();
        assert!(matches!(e, Exceeded::HostReplicas { cap: 50, .. }), "{e}");
        assert!(e.to_string().contains("LOCALPLANE_MAX_REPLICAS"), "{e}");
    }

    #[test]
    fn a_refusal_is_noted_once_until_forgotten() {
        let l = Ledger::new(1);
        assert!(l.note("app--r1"));
        assert!(!l.note("app--r1"));
        l.forget("app--r1");
        assert!(l.note("app--r1"));
    }
}
