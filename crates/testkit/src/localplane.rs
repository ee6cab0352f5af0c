//! localplane in the test's own process, with a temporary state and evidence dir (feature
//! `localplane`, so testkit's default build does not compile localplane).
//!
//! [`Harness::process`] runs replicas as the workspace's binaries on 127.0.0.1 (no Docker);
//! [`Harness::start`] takes any runtime. On the Docker runtime, call it after
//! [`crate::docker::require_docker`] (the gate stays in the test, where tidy's `DockerGate` looks
//! for it). [`Harness::stop`] shuts localplane down within a minute; a test that panics first
//! never calls it, so `Drop` stops the supervisors (nothing restarts what is removed next) and,
//! on Docker, removes the containers and network labelled with this localplane's owner.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use localplane::{Localplane, LocalplaneConfig, RuntimeKind};

/// How long [`Harness::stop`] waits for localplane's shutdown.
pub const STOP_LIMIT: Duration = Duration::from_secs(60);

/// A running localplane and the temporary dir that holds its `state/` and `evidence/`.
pub struct Harness {
    lp: Option<Localplane>,
    dir: tempfile::TempDir,
    /// On the Docker runtime, its network (`None` on the process runtime): what `Drop` cleans up.
    docker_network: Option<String>,
}

impl Harness {
    /// localplane on the process runtime: replicas are `target/<profile>/<image name>` (the
    /// `subject` binary must be built; see [`crate::bins::dir`]).
    pub async fn process() -> Harness {
        Harness::start(RuntimeKind::Process {
            bin_dir: crate::bins::dir(&["subject"]),
        })
        .await
    }

    /// localplane on `runtime`, its ARM API on 127.0.0.1 (a free port).
    ///
    /// # Panics
    /// When localplane does not start.
    pub async fn start(runtime: RuntimeKind) -> Harness {
        Harness::start_with(runtime, false).await
    }

    /// [`Harness::process`], with HTTPS on the same port (localplane's own CA in its state
    /// dir): for the real Azure clients, which send tokens over HTTPS only.
    pub async fn process_tls() -> Harness {
        Harness::start_with(
            RuntimeKind::Process {
                bin_dir: crate::bins::dir(&["subject"]),
            },
            true,
        )
        .await
    }

    /// localplane on `runtime`, its ARM API on 127.0.0.1 (a free port), speaking HTTPS too
    /// when `tls`.
    ///
    /// # Panics
    /// When localplane does not start.
    pub async fn start_with(runtime: RuntimeKind, tls: bool) -> Harness {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("a temporary dir: {e}"));
        let kind = match runtime {
            RuntimeKind::Docker => "Docker",
            RuntimeKind::Process { .. } => "process",
        };
        let lp = localplane::start(LocalplaneConfig {
            max_replicas: localplane::quota::DEFAULT_MAX_REPLICAS,
            tls,
            listen: std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0)),
            state_dir: dir.path().join("state"),
            evidence_dir: dir.path().join("evidence"),
            runtime,
        })
        .await
        .unwrap_or_else(|e| panic!("localplane did not start ({kind} runtime): {e}"));
        Harness {
            docker_network: lp.docker_network().map(str::to_owned),
            lp: Some(lp),
            dir,
        }
    }

    /// The running localplane.
    pub fn localplane(&self) -> &Localplane {
        self.lp
            .as_ref()
            .unwrap_or_else(|| panic!("localplane runs until stop"))
    }

    /// `http://127.0.0.1:PORT`, the ARM endpoint.
    pub fn base_url(&self) -> String {
        self.localplane().base_url()
    }

    /// With TLS: `https://127.0.0.1:PORT`.
    pub fn https_url(&self) -> Option<String> {
        self.localplane().https_url()
    }

    /// With TLS: the CA certificate clients trust.
    pub fn ca_path(&self) -> Option<PathBuf> {
        self.localplane().ca_path().map(Path::to_path_buf)
    }

    /// localplane's state dir.
    pub fn state_dir(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// The evidence dir localplane writes its Log Analytics shaped tables to (`logs/`).
    pub fn evidence_dir(&self) -> PathBuf {
        self.dir.path().join("evidence")
    }

    /// The temporary dir that holds both.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Shuts localplane down (containers stopped with their grace, the network removed).
    ///
    /// # Panics
    /// When the shutdown fails or takes longer than [`STOP_LIMIT`].
    pub async fn stop(mut self) {
        if let Some(lp) = self.lp.take() {
            tokio::time::timeout(STOP_LIMIT, lp.shutdown())
                .await
                .unwrap_or_else(|_| panic!("localplane did not shut down within {STOP_LIMIT:?}"))
                .unwrap_or_else(|e| panic!("localplane shutdown: {e}"));
        }
    }

    /// Removes, through the `docker` CLI, every container labelled with this localplane's owner,
    /// then its `network`.
    fn remove_docker_leftovers(&self, network: &str) {
        let owner = localplane::runtime::docker::owner_id(&self.state_dir());
        let docker = |args: &[&str]| Command::new("docker").args(args).output();
        if let Ok(out) = docker(&[
            "ps",
            "-aq",
            "--filter",
            &format!("label=probelab.owner={owner}"),
        ]) {
            let ids = String::from_utf8_lossy(&out.stdout);
            let ids: Vec<&str> = ids.split_whitespace().collect();
            if !ids.is_empty() {
                let _ = docker(&[&["rm", "-f"], ids.as_slice()].concat());
            }
        }
        let _ = docker(&["network", "rm", network]);
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        if let Some(lp) = &self.lp {
            // A test that panicked never called stop(): keep the supervisors from restarting
            // what is removed below.
            lp.begin_shutdown();
            std::thread::sleep(Duration::from_secs(1));
        }
        if let Some(network) = &self.docker_network {
            self.remove_docker_leftovers(network);
        }
    }
}
