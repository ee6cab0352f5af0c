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

use super::{LABEL_MANAGED, LaunchSpec, Launched};
use crate::logsink::Sink;

pub const LABEL_OWNER: &str = "probelab.owner";

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

    pub async fn launch(&self, spec: &LaunchSpec, sink: &Sink) -> Result<Launched, String> {
        if self.docker.inspect_image(&spec.image).await.is_err() {
            return Err(format!(
                "image '{}' is not present in the local Docker engine (nothing is pulled): build it with scripts/build-images.sh",
                spec.image
            ));
        }
        let name = docker_name(&format!("lp-{}-{}", spec.replica, spec.container));
        let mut labels: HashMap<String, String> = spec.labels.clone().into_iter().collect();
        labels.insert(LABEL_OWNER.to_string(), self.owner.clone());
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
        let body = ContainerCreateBody {
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
                ..Default::default()
            }),
            networking_config: Some(NetworkingConfig {
                endpoints_config: Some(endpoints),
            }),
            ..Default::default()
        };
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
            .create_container(Some(opts), body)
            .await
            .map_err(|e| format!("create container: {e}"))?;
        let id = created.id;
        // Subscribe to the exit before starting, so a fast exit is not missed.
        let (tx, rx) = watch::channel(None);
        let docker = self.docker.clone();
        let idc = id.clone();
        let mut wait = Box::pin(self.docker.wait_container(
            &idc,
            None::<bollard::query_parameters::WaitContainerOptions>,
        ));
        if let Err(e) = self.docker.start_container(&id, None).await {
            self.remove(&id).await;
            return Err(format!("start container: {e}"));
        }
        tokio::spawn(async move {
            let code = match wait.next().await {
                Some(Ok(r)) => r.status_code,
                Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => code,
                _ => {
                    // Fall back to inspecting the state.
                    docker
                        .inspect_container(&idc, None)
                        .await
                        .ok()
                        .and_then(|c| c.state.and_then(|s| s.exit_code))
                        .unwrap_or(-1)
                }
            };
            tx.send_replace(Some(code));
        });
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
        let sink2 = sink.clone();
        let spec2 = spec.clone();
        tokio::spawn(async move {
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
                    sink2.console(
                        &spec2.owner,
                        &spec2.replica,
                        &spec2.container,
                        stream,
                        line.trim_end_matches(['\n', '\r']).to_string(),
                    );
                }
            }
            for (buf, stream) in [(out, "stdout"), (errb, "stderr")] {
                if !buf.is_empty() {
                    sink2.console(&spec2.owner, &spec2.replica, &spec2.container, stream, buf);
                }
            }
        });
        let info = self
            .docker
            .inspect_container(&id, None)
            .await
            .map_err(|e| format!("inspect container: {e}"))?;
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
