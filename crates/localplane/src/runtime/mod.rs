//! Container runtimes: Docker (bollard) and plain child processes.
//!
//! Both give the supervisor the same thing: a started container with an address to probe and
//! proxy to, its output fed to the log sink, an exit code on a watch channel, and
//! `terminate` (SIGTERM) / `kill` (SIGKILL) / `remove`.

pub mod docker;
pub mod process;

use std::collections::BTreeMap;
use std::net::IpAddr;

use tokio::sync::watch;

use crate::logsink::{Owner, Sink};

/// Why a container did not start; the message goes into the replica's `details` and the
/// `ContainerCreateFailure` system row.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    #[error(
        "image '{0}' has no binary in the process runtime's table (subject, loadgen, perturbation-sampler, audit)"
    )]
    NoBinary(String),
    #[error("binary {} for image '{image}' is missing; build it (e.g. `cargo build -p {bin}`)", .path.display())]
    MissingBinary {
        path: std::path::PathBuf,
        image: String,
        bin: &'static str,
    },
    #[error("no free port: {0}")]
    NoFreePort(String),
    #[error("cannot start {}: {message}", .path.display())]
    Spawn {
        path: std::path::PathBuf,
        message: String,
    },
    #[error(
        "image '{0}' is not present in the local Docker engine (nothing is pulled): build it with scripts/build-images.sh"
    )]
    ImageMissing(String),
    /// A Docker engine call failed: `step` is what was asked (`create container`, ...).
    #[error("{step}: {message}")]
    Engine { step: &'static str, message: String },
}

/// Which label marks everything localplane creates.
pub const LABEL_MANAGED: &str = "probelab.managed";

/// Everything needed to start one container of one replica.
#[derive(Debug, Clone)]
pub struct LaunchSpec {
    pub owner: Owner,
    pub replica: String,
    pub container: String,
    pub image: String,
    pub command: Vec<String>,
    pub args: Vec<String>,
    /// The container's env, with the platform variables already added.
    pub env: Vec<(String, String)>,
    pub labels: BTreeMap<String, String>,
    /// Whether this container gets the replica's port (process runtime: the first container).
    pub primary: bool,
    /// App names the container should resolve to the environment ingress (Docker runtime).
    pub peers: Vec<String>,
    /// The container's CPU and memory: its limits on Docker (`NanoCpus`, `Memory`, no swap);
    /// the process runtime cannot apply them and does not.
    pub resources: crate::resources::Resources,
}

/// A started container.
#[derive(Debug)]
pub struct Launched {
    pub id: String,
    /// Where its ports are reachable from localplane.
    pub host: IpAddr,
    /// Process runtime: the one port the process was told to listen on (`PORT`); every probe
    /// and ingress port maps to it. Docker: `None` (ports are reached on the container's IP).
    pub port_override: Option<u16>,
    /// `None` while running, then the exit code (128 + signal for signals).
    pub exit: watch::Receiver<Option<i64>>,
}

impl Launched {
    pub fn port(&self, requested: u16) -> u16 {
        self.port_override.unwrap_or(requested)
    }
}

#[derive(Clone)]
pub enum Runtime {
    Process(process::ProcessRuntime),
    Docker(docker::DockerRuntime),
}

impl Runtime {
    pub async fn launch(&self, spec: &LaunchSpec, sink: &Sink) -> Result<Launched, LaunchError> {
        match self {
            Runtime::Process(p) => p.launch(spec, sink).await,
            Runtime::Docker(d) => d.launch(spec, sink).await,
        }
    }

    pub async fn terminate(&self, id: &str) {
        match self {
            Runtime::Process(p) => p.signal(id, "TERM").await,
            Runtime::Docker(d) => d.signal(id, "SIGTERM").await,
        }
    }

    pub async fn kill(&self, id: &str) {
        match self {
            Runtime::Process(p) => p.signal(id, "KILL").await,
            Runtime::Docker(d) => d.signal(id, "SIGKILL").await,
        }
    }

    pub async fn remove(&self, id: &str) {
        match self {
            Runtime::Process(p) => p.remove(id),
            Runtime::Docker(d) => d.remove(id).await,
        }
    }

    /// The address apps and jobs use for localplane's own ARM API (`ARM_ENDPOINT`).
    pub fn arm_endpoint_for_containers(&self, base_url: &str) -> String {
        match self {
            Runtime::Process(_) => base_url.to_string(),
            Runtime::Docker(d) => d.arm_endpoint(base_url),
        }
    }
}

/// Maps `probelab/<name>:<tag>` (or `<name>:<tag>`, or a bare `<name>`) to the workspace binary
/// that image contains. The one table of image names localplane knows.
pub fn binary_for_image(image: &str) -> Option<&'static str> {
    let without_tag = image
        .rsplit_once(':')
        .map_or(image, |(n, t)| if t.contains('/') { image } else { n });
    let name = without_tag.rsplit('/').next().unwrap_or(without_tag);
    const TABLE: &[(&str, &str)] = &[
        ("subject", "subject"),
        ("loadgen", "loadgen"),
        ("perturbation-sampler", "perturbation-sampler"),
        ("audit", "audit"),
    ];
    TABLE
        .iter()
        .find(|(img, _)| *img == name)
        .map(|(_, bin)| *bin)
}

/// Waits for the exit code, or returns `None` if `deadline` passes first.
pub async fn wait_exit(
    exit: &mut watch::Receiver<Option<i64>>,
    within: std::time::Duration,
) -> Option<i64> {
    let fut = async {
        loop {
            if let Some(code) = *exit.borrow_and_update() {
                return Some(code);
            }
            if exit.changed().await.is_err() {
                return *exit.borrow();
            }
        }
    };
    tokio::time::timeout(within, fut).await.ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::binary_for_image;

    #[test]
    fn image_table() {
        assert_eq!(binary_for_image("probelab/subject:dev"), Some("subject"));
        assert_eq!(
            binary_for_image("probelab/perturbation-sampler:1.2"),
            Some("perturbation-sampler")
        );
        assert_eq!(
            binary_for_image("localhost:5000/probelab/audit"),
            Some("audit")
        );
        assert_eq!(binary_for_image("nginx:latest"), None);
    }
}
