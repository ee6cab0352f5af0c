//! The Docker runtime (bollard 0.21, version negotiated with the engine).
//!
//! - Every localplane instance owns one bridge network `probelab-lp-<owner>`; `<owner>` is a
//!   hash of the state dir, so a restarted localplane finds the containers and the network its
//!   crashed predecessor left (labels `probelab.managed=true`, `probelab.owner=<owner>`, plus
//!   env/app/revision/replica) and removes them, while other instances' are left alone.
//! - localplane reaches replicas on their container IP on that network (no published ports).
//! - Containers reach apps by name: the environment ingress listens on the network's gateway IP
//!   port 80 and routes by `Host`, and every container gets `extra_hosts` entries
//!   `<app>:<gateway>` for the apps that exist when it starts, plus `localplane:<gateway>`; the
//!   ARM API is served on the gateway IP too (`ARM_ENDPOINT=http://<gateway>:<port>`).
//! - Nothing is pulled: a missing image is an error naming `scripts/build-images.sh`.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use bollard::Docker;
use bollard::container::LogOutput;
use bollard::models::{
    ContainerCreateBody, EndpointSettings, HostConfig, NetworkCreateRequest, NetworkingConfig,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, KillContainerOptionsBuilder, ListContainersOptionsBuilder,
    LogsOptionsBuilder, RemoveContainerOptionsBuilder,
};
use futures::StreamExt;
use tokio::sync::watch;

use super::{LABEL_MANAGED, LaunchError, LaunchSpec, Launched};
use crate::logsink::Sink;

pub const LABEL_OWNER: &str = "probelab.owner";
/// The id of the process that created the container or network (labctl, localplane, a test).
pub const LABEL_PID: &str = "probelab.pid";
/// That process's start time (field 22 of `/proc/<pid>/stat`, clock ticks since boot), so a pid
/// reused by another process after a reboot or wrap-around is not mistaken for the owner.
pub const LABEL_PID_START: &str = "probelab.pid-start";
/// The host (kernel hostname) of that process: only a process on the same host can be checked.
pub const LABEL_HOST: &str = "probelab.host";
/// The PID namespace of that process (`/proc/self/ns/pid`, e.g. `pid:[4026531836]`): a pid means
/// something only in its own namespace. The lab container (`deploy/local/compose.yaml`) shares
/// the host's network, hence its hostname, but not its PID namespace: without this label its
/// orphan sweep found no process behind the host's pids and removed the containers of runs
/// still going on the host (seen in CI when the lab image test ran beside other lab tests).
pub const LABEL_PIDNS: &str = "probelab.pidns";

/// The labels naming this process as the owner ([`LABEL_PID`], [`LABEL_PID_START`],
/// [`LABEL_HOST`], [`LABEL_PIDNS`]).
pub fn process_labels() -> Vec<(String, String)> {
    let pid = std::process::id();
    let mut v = vec![
        (LABEL_PID.to_string(), pid.to_string()),
        (LABEL_HOST.to_string(), hostname()),
        (LABEL_PIDNS.to_string(), pid_namespace()),
    ];
    if let Some(start) = process_start(pid) {
        v.push((LABEL_PID_START.to_string(), start.to_string()));
    }
    v
}

/// Sends container `id`'s exit code on `tx` once `wait` (the engine's wait, subscribed before
/// the start) ends; when the wait fails otherwise, the code from inspecting the container, or -1.
async fn forward_exit(
    docker: Docker,
    id: String,
    mut wait: impl futures::Stream<
        Item = Result<bollard::models::ContainerWaitResponse, bollard::errors::Error>,
    > + Unpin,
    tx: watch::Sender<Option<i64>>,
) {
    let code = match wait.next().await {
        Some(Ok(r)) => r.status_code,
        Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => code,
        _ => {
            // Fall back to inspecting the state.
            docker
                .inspect_container(&id, None)
                .await
                .ok()
                .and_then(|c| c.state.and_then(|s| s.exit_code))
                .unwrap_or(-1)
        }
    };
    // The kernel's OOM killer leaves exit code 137 (SIGKILL) like any other kill; the engine
    // tells them apart. Container Apps writes the same row for both (docs/FIDELITY.md).
    let oom = docker
        .inspect_container(&id, None)
        .await
        .ok()
        .and_then(|c| c.state.and_then(|s| s.oom_killed))
        .unwrap_or(false);
    if oom {
        tracing::warn!(container = %id, code, "container OOMKilled: its memory limit was reached");
    }
    tx.send_replace(Some(code));
}

/// Feeds a container's output to `sink` as console rows, one per line of stdout or stderr (a
/// last line without its newline too, when the stream ends).
async fn forward_logs(
    logs: impl futures::Stream<Item = Result<LogOutput, bollard::errors::Error>>,
    sink: Sink,
    spec: LaunchSpec,
) {
    let mut logs = Box::pin(logs);
    let mut out = String::new();
    let mut errb = String::new();
    while let Some(Ok(chunk)) = logs.next().await {
        let (buf, stream, bytes) = match chunk {
            LogOutput::StdOut { message } => (&mut out, "stdout", message),
            LogOutput::StdErr { message } => (&mut errb, "stderr", message),
            LogOutput::Console { message } => (&mut out, "stdout", message),
            LogOutput::StdIn { .. } => continue,
        };
        buf.push_str(&String::from_utf8_lossy(&bytes));
        while let Some(pos) = buf.find('\n') {
            let line: String = buf.drain(..=pos).collect();
            sink.console(
                &spec.owner,
                &spec.replica,
                &spec.container,
                stream,
                line.trim_end_matches(['\n', '\r']).to_string(),
            );
        }
    }
    for (buf, stream) in [(out, "stdout"), (errb, "stderr")] {
        if !buf.is_empty() {
            sink.console(&spec.owner, &spec.replica, &spec.container, stream, buf);
        }
    }
}

/// The initial PID namespace's inode (the kernel's `PROC_PID_INIT_INO`, 0xEFFFFFFC): the host's
/// processes live there, a container's do not.
const INITIAL_PID_NAMESPACE: &str = "pid:[4026531836]";

/// Whether this process runs in the host's (initial) PID namespace.
fn in_initial_pid_namespace() -> bool {
    pid_namespace() == INITIAL_PID_NAMESPACE
}

/// This process's PID namespace (`pid:[<inode>]`), empty when it cannot be read.
fn pid_namespace() -> String {
    std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Field 22 (`starttime`) of `/proc/<pid>/stat`; `None` when the process does not exist.
pub fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: split after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the process these labels name is gone: `true` only when they carry a pid of this host
/// and of this PID namespace, and that pid either does not exist or belongs to a process started
/// at another time. Anything that cannot be checked (no pid label, another host, another PID
/// namespace, or none recorded while ours is not the host's) is treated as alive and left alone.
pub fn owner_gone(labels: &HashMap<String, String>) -> bool {
    let Some(pid) = labels.get(LABEL_PID).and_then(|p| p.parse::<u32>().ok()) else {
        return false;
    };
    if labels.get(LABEL_HOST).is_some_and(|h| *h != hostname()) {
        return false;
    }
    let ours = pid_namespace();
    match labels.get(LABEL_PIDNS) {
        Some(ns) if *ns != ours => return false,
        // Labelled before the namespace was: checkable only from the initial namespace, whose
        // pids the host's processes have (a container sees other pids).
        None if !in_initial_pid_namespace() => return false,
        _ => {}
    }
    match process_start(pid) {
        None => true,
        Some(now) => labels
            .get(LABEL_PID_START)
            .and_then(|s| s.parse::<u64>().ok())
            .is_some_and(|recorded| recorded != now),
    }
}

/// Removes every container and network labelled `probelab.managed=true` whose owning process
/// ([`owner_gone`]) no longer exists, whatever state dir it used: what a SIGKILLed `labctl lab
/// run` or `labctl local up` left. Returns how many containers and networks it removed; engine
/// errors are logged and skipped (this is clean-up before a run, never a reason to refuse one).
pub async fn sweep_dead_owners() -> (usize, usize) {
    let docker = match Docker::connect_with_local_defaults() {
        Ok(d) => match d.negotiate_version().await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "orphan sweep: cannot negotiate with the engine");
                return (0, 0);
            }
        },
        Err(e) => {
            tracing::warn!(error = %e, "orphan sweep: cannot connect to the engine");
            return (0, 0);
        }
    };
    let filters = HashMap::from([("label".to_string(), vec![format!("{LABEL_MANAGED}=true")])]);
    let mut containers = 0;
    let list = docker
        .list_containers(Some(
            ListContainersOptionsBuilder::default()
                .all(true)
                .filters(&filters)
                .build(),
        ))
        .await
        .unwrap_or_default();
    for c in list {
        if !c.labels.as_ref().is_some_and(owner_gone) {
            continue;
        }
        if let Some(id) = c.id {
            tracing::info!(container = %id, "removing a container whose owning process is gone");
            if docker
                .remove_container(
                    &id,
                    Some(RemoveContainerOptionsBuilder::default().force(true).build()),
                )
                .await
                .is_ok()
            {
                containers += 1;
            }
        }
    }
    let mut networks = 0;
    let nets = docker
        .list_networks(Some(
            bollard::query_parameters::ListNetworksOptionsBuilder::default()
                .filters(&filters)
                .build(),
        ))
        .await
        .unwrap_or_default();
    for n in nets {
        if !n.labels.as_ref().is_some_and(owner_gone) {
            continue;
        }
        if let Some(name) = n.name {
            tracing::info!(network = %name, "removing a network whose owning process is gone");
            if docker.remove_network(&name).await.is_ok() {
                networks += 1;
            }
        }
    }
    (containers, networks)
}

#[derive(Clone)]
pub struct DockerRuntime {
    docker: Docker,
    pub network: String,
    pub gateway: IpAddr,
    pub owner: String,
    pub engine_version: String,
    arm_port: Arc<std::sync::atomic::AtomicU16>,
}

fn err(e: impl std::fmt::Display) -> crate::Error {
    crate::Error::Docker(e.to_string())
}

/// FNV-1a of the state dir: a stable, short owner id.
pub fn owner_id(state_dir: &std::path::Path) -> String {
    let p = std::fs::canonicalize(state_dir).unwrap_or_else(|_| state_dir.to_path_buf());
    let mut h: u64 = 0xcbf29ce484222325;
    for b in p.to_string_lossy().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{:012x}", h & 0xffff_ffff_ffff)
}

impl DockerRuntime {
    /// Connects, negotiates the API version, removes this owner's orphans, creates the network.
    pub async fn connect(state_dir: &std::path::Path) -> Result<DockerRuntime, crate::Error> {
        let docker = Docker::connect_with_local_defaults()
            .map_err(|e| err(format!("cannot connect to the Docker engine: {e}")))?
            .negotiate_version()
            .await
            .map_err(|e| {
                err(format!(
                    "cannot negotiate the Docker API version (is the engine running?): {e}"
                ))
            })?;
        let v = docker.version().await.map_err(err)?;
        let engine_version = format!(
            "{} (API {})",
            v.version.unwrap_or_default(),
            v.api_version.unwrap_or_default()
        );
        let owner = owner_id(state_dir);
        let network = format!("probelab-lp-{owner}");
        let rt = DockerRuntime {
            docker,
            network: network.clone(),
            gateway: IpAddr::from([127, 0, 0, 1]),
            owner,
            engine_version,
            arm_port: Arc::default(),
        };
        rt.remove_orphans().await;
        let _ = rt.docker.remove_network(&network).await;
        let mut labels = HashMap::new();
        labels.insert(LABEL_MANAGED.to_string(), "true".to_string());
        labels.insert(LABEL_OWNER.to_string(), rt.owner.clone());
        labels.extend(process_labels());
        rt.docker
            .create_network(NetworkCreateRequest {
                name: network.clone(),
                driver: Some("bridge".into()),
                labels: Some(labels),
                ..Default::default()
            })
            .await
            .map_err(|e| err(format!("cannot create network {network}: {e}")))?;
        let info = rt
            .docker
            .inspect_network(&network, None)
            .await
            .map_err(err)?;
        let gateway = info
            .ipam
            .and_then(|i| i.config)
            .and_then(|c| c.into_iter().find_map(|c| c.gateway))
            .and_then(|g| g.parse::<IpAddr>().ok())
            .ok_or_else(|| err(format!("network {network} has no IPv4 gateway")))?;
        Ok(DockerRuntime { gateway, ..rt })
    }

    pub fn set_arm_port(&self, port: u16) {
        self.arm_port
            .store(port, std::sync::atomic::Ordering::SeqCst);
    }

    /// Removes every container this owner left behind.
    pub async fn remove_orphans(&self) {
        let mut filters = HashMap::new();
        filters.insert(
            "label".to_string(),
            vec![
                format!("{LABEL_MANAGED}=true"),
                format!("{LABEL_OWNER}={}", self.owner),
            ],
        );
        let opts = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&filters)
            .build();
        if let Ok(list) = self.docker.list_containers(Some(opts)).await {
            for c in list {
                if let Some(id) = c.id {
                    tracing::info!(container = %id, "removing orphaned container");
                    self.remove(&id).await;
                }
            }
        }
    }

    /// Creates and starts the container of `spec` on the network (any leftover of the same name
    /// removed first), with its exit code on a watch channel and its output fed to `sink`.
    pub async fn launch(&self, spec: &LaunchSpec, sink: &Sink) -> Result<Launched, LaunchError> {
        if self.docker.inspect_image(&spec.image).await.is_err() {
            return Err(LaunchError::ImageMissing(spec.image.clone()));
        }
        let name = docker_name(&format!("lp-{}-{}", spec.replica, spec.container));
        let opts = CreateContainerOptionsBuilder::default().name(&name).build();
        let _ = self
            .docker
            .remove_container(
                &name,
                Some(RemoveContainerOptionsBuilder::default().force(true).build()),
            )
            .await;
        let created = self
            .docker
            .create_container(Some(opts), self.create_body(spec))
            .await
            .map_err(|e| LaunchError::Engine {
                step: "create container",
                message: e.to_string(),
            })?;
        let id = created.id;
        // Subscribe to the exit before starting, so a fast exit is not missed.
        let (tx, rx) = watch::channel(None);
        let wait = Box::pin(
            self.docker
                .wait_container(&id, None::<bollard::query_parameters::WaitContainerOptions>),
        );
        if let Err(e) = self.docker.start_container(&id, None).await {
            self.remove(&id).await;
            return Err(LaunchError::Engine {
                step: "start container",
                message: e.to_string(),
            });
        }
        tokio::spawn(forward_exit(self.docker.clone(), id.clone(), wait, tx));
        let logs = self.docker.logs(
            &id,
            Some(
                LogsOptionsBuilder::default()
                    .follow(true)
                    .stdout(true)
                    .stderr(true)
                    .build(),
            ),
        );
        tokio::spawn(forward_logs(logs, sink.clone(), spec.clone()));
        let info = self
            .docker
            .inspect_container(&id, None)
            .await
            .map_err(|e| LaunchError::Engine {
                step: "inspect container",
                message: e.to_string(),
            })?;
        let ip = info
            .network_settings
            .and_then(|n| n.networks)
            .and_then(|mut n| n.remove(&self.network))
            .and_then(|e| e.ip_address)
            .and_then(|ip| ip.parse::<IpAddr>().ok());
        let host = match ip {
            Some(ip) => ip,
            None => {
                // It exited before we could look (crash at start): report the exit normally.
                IpAddr::from([0, 0, 0, 0])
            }
        };
        Ok(Launched {
            id,
            host,
            port_override: None,
            exit: rx,
        })
    }

    /// The container of `spec`: its image, command and env, its labels plus this owner's and
    /// this process's, its hostname, and on the network under the replica's name with the
    /// `extra_hosts` entries for `localplane` and the peer apps.
    fn create_body(&self, spec: &LaunchSpec) -> ContainerCreateBody {
        let mut labels: HashMap<String, String> = spec.labels.clone().into_iter().collect();
        labels.insert(LABEL_OWNER.to_string(), self.owner.clone());
        labels.extend(process_labels());
        let mut extra_hosts = vec![format!("localplane:{}", self.gateway)];
        for peer in &spec.peers {
            extra_hosts.push(format!("{peer}:{}", self.gateway));
        }
        let mut endpoints = HashMap::new();
        endpoints.insert(
            self.network.clone(),
            EndpointSettings {
                aliases: Some(vec![spec.replica.clone()]),
                ..Default::default()
            },
        );
        ContainerCreateBody {
            image: Some(spec.image.clone()),
            env: Some(spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            entrypoint: (!spec.command.is_empty()).then(|| spec.command.clone()),
            cmd: (!spec.args.is_empty()).then(|| spec.args.clone()),
            labels: Some(labels),
            hostname: Some(truncate_hostname(&spec.replica)),
            host_config: Some(HostConfig {
                network_mode: Some(self.network.clone()),
                extra_hosts: Some(extra_hosts),
                init: Some(false),
                // The container's `resources` as its limits, as Container Apps applies them to
                // the replica: CPU throttled past `cpu`, the OOM killer past `memory`; swap as
                // large as the memory (`MemorySwap` is memory plus swap), so none.
                nano_cpus: Some(spec.resources.nano_cpus()),
                memory: Some(spec.resources.memory_bytes()),
                memory_swap: Some(spec.resources.memory_bytes()),
                ..Default::default()
            }),
            networking_config: Some(NetworkingConfig {
                endpoints_config: Some(endpoints),
            }),
            ..Default::default()
        }
    }

    pub async fn signal(&self, id: &str, sig: &str) {
        let _ = self
            .docker
            .kill_container(
                id,
                Some(KillContainerOptionsBuilder::default().signal(sig).build()),
            )
            .await;
    }

    pub async fn remove(&self, id: &str) {
        let _ = self
            .docker
            .remove_container(
                id,
                Some(RemoveContainerOptionsBuilder::default().force(true).build()),
            )
            .await;
    }

    pub fn arm_endpoint(&self, _base_url: &str) -> String {
        format!(
            "http://{}:{}",
            self.gateway,
            self.arm_port.load(std::sync::atomic::Ordering::SeqCst)
        )
    }

    /// Removes whatever is left (containers were already stopped with their grace) and the
    /// network.
    pub async fn shutdown(&self) {
        self.remove_orphans().await;
        let _ = self.docker.remove_network(&self.network).await;
    }
}

fn docker_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

fn truncate_hostname(s: &str) -> String {
    s.chars().take(63).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_dead_or_replaced_owner_on_this_host_is_gone() {
        let mine: HashMap<String, String> = process_labels().into_iter().collect();
        assert!(!owner_gone(&mine));
        let mut dead = mine.clone();
        dead.insert(LABEL_PID.into(), u32::MAX.to_string());
        assert!(owner_gone(&dead));
        let mut reused = mine.clone();
        reused.insert(LABEL_PID_START.into(), "1".into());
        assert!(
            owner_gone(&reused),
            "same pid, another start time: another process"
        );
        let mut elsewhere = dead.clone();
        elsewhere.insert(LABEL_HOST.into(), "some-other-host".into());
        assert!(
            !owner_gone(&elsewhere),
            "another host's process cannot be checked"
        );
        assert!(
            !owner_gone(&HashMap::new()),
            "no pid label: not ours to judge"
        );
        // A pid of another PID namespace (what the lab container sees of the host's runs, or
        // the host of the container's) means nothing here: alive, left alone.
        let mut other_ns = dead.clone();
        other_ns.insert(LABEL_PIDNS.into(), "pid:[1]".into());
        assert!(!owner_gone(&other_ns), "another PID namespace's pid");
        assert_eq!(mine.get(LABEL_PIDNS), Some(&pid_namespace()));
        assert!(pid_namespace().starts_with("pid:["), "{}", pid_namespace());
    }
}
