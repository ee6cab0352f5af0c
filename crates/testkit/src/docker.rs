//! Docker for tests: the engine gate, image checks, user-defined networks, and containers that
//! publish on 127.0.0.1 only.
//!
//! Every Docker test starts with
//!
//! ```no_run
//! # async fn t() {
//! let Some(docker) = testkit::docker::require_docker().await else { return };
//! docker.require_image("subject").await;
//! # }
//! ```
//!
//! [`require_docker`] panics when the engine is unreachable, unless `PROBELAB_SKIP_DOCKER=1`
//! (then it prints that the test skipped and returns `None`). The first call in a process also
//! removes containers and networks that an earlier, killed test process left behind.
//!
//! Engine API version: testcontainers 0.28 uses bollard 0.21, whose `API_DEFAULT_VERSION` is 1.53
//! and which never negotiates; an engine serving 1.41 (Debian 12's 20.10.24) refuses a `/v1.53/`
//! path. bollard 0.21 sends no version prefix at all, though: it builds each URL with
//! `Url::join` of an absolute path, which drops the `/v1.53` segment, and an engine serves an
//! unversioned path at its own newest API version. `tests/engine.rs` pins both facts, so a bollard
//! that starts sending the prefix fails there first, with the reason.

use std::collections::HashMap;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use bollard::Docker as Bollard;
use bollard::models::{
    EndpointSettings, HostConfig, NetworkConnectRequest, NetworkCreateRequest,
    NetworkDisconnectRequest, PortBinding,
};
use bollard::query_parameters::{
    InspectNetworkOptions, ListContainersOptionsBuilder, ListNetworksOptionsBuilder,
    RemoveContainerOptionsBuilder,
};
use testcontainers::core::ContainerPort;
use testcontainers::{ContainerAsync, ContainerRequest, GenericImage, ImageExt};

/// Set to `1` to skip Docker tests on purpose (CI never sets it).
pub const SKIP_ENV: &str = "PROBELAB_SKIP_DOCKER";
/// The command that builds every image the tests use.
pub const BUILD_COMMAND: &str = "scripts/build-images.sh";
/// Label on every container and network testkit creates; the value is the creating process id.
pub const OWNER_LABEL: &str = "org.probelab.testkit.pid";
/// Where the engine listens unless `DOCKER_HOST` says otherwise.
pub const DEFAULT_SOCKET: &str = "/var/run/docker.sock";
/// The tag tests run: what `scripts/build-images.sh` builds.
pub const TAG: &str = "dev";

/// Per-process state, set up once by the first [`require_docker`].
struct Engine {
    socket: PathBuf,
    version: String,
}

/// Why the engine is unreachable (the gate's panic message carries it).
#[derive(Debug, thiserror::Error)]
enum Unreachable {
    #[error("DOCKER_HOST={0}: testkit supports unix sockets only")]
    Host(String),
    #[error("{}: {error}", .socket.display())]
    Engine {
        socket: PathBuf,
        // Printed in the message (the panic shows one line), so not a `#[source]`.
        error: bollard::errors::Error,
    },
    #[error("testkit init task failed: {0}")]
    Init(tokio::task::JoinError),
}

static ENGINE: tokio::sync::OnceCell<Result<Engine, Unreachable>> =
    tokio::sync::OnceCell::const_new();
static BACKGROUND: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A runtime that lives as long as the process, for clean-up from `Drop` (each
/// `#[tokio::test]` has its own runtime, which may be blocked in that very `Drop`).
fn background() -> &'static tokio::runtime::Runtime {
    BACKGROUND.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("testkit-docker")
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("testkit: cannot build its background runtime: {e}"))
    })
}

/// Runs `fut` to completion on the background runtime and blocks until it is done (at most
/// `limit`). Safe to call from `Drop` inside any runtime flavour.
fn block_on_background(fut: impl Future<Output = ()> + Send + 'static, limit: Duration) {
    let (tx, rx) = std::sync::mpsc::channel();
    background().spawn(async move {
        fut.await;
        let _ = tx.send(());
    });
    let _ = rx.recv_timeout(limit);
}

/// `true` when the user asked to skip Docker tests.
pub fn skip_requested() -> bool {
    std::env::var(SKIP_ENV).is_ok_and(|v| v == "1")
}

/// The gate every Docker test goes through first; see the module docs.
///
/// # Panics
/// When the engine is unreachable and `PROBELAB_SKIP_DOCKER` is not `1`, with what to do.
pub async fn require_docker() -> Option<Docker> {
    if skip_requested() {
        let name = std::thread::current()
            .name()
            .unwrap_or("this test")
            .to_string();
        eprintln!("SKIPPED {name}: {SKIP_ENV}=1 (Docker tests skipped on purpose)");
        return None;
    }
    let engine = ENGINE
        .get_or_init(|| async {
            match background().spawn(init()).await {
                Ok(result) => result,
                Err(e) => Err(Unreachable::Init(e)),
            }
        })
        .await;
    match engine {
        Ok(engine) => Some(Docker::connect(engine)),
        Err(msg) => panic!(
            "Docker is required for this test and is unreachable: {msg}\n\
             Start the engine (e.g. `service docker start`), or set {SKIP_ENV}=1 to skip \
             the Docker tests on purpose."
        ),
    }
}

fn upstream_socket() -> Result<PathBuf, Unreachable> {
    match std::env::var("DOCKER_HOST") {
        Ok(host) if !host.is_empty() => match host.strip_prefix("unix://") {
            Some(path) => Ok(PathBuf::from(path)),
            None => Err(Unreachable::Host(host)),
        },
        _ => Ok(PathBuf::from(DEFAULT_SOCKET)),
    }
}

async fn init() -> Result<Engine, Unreachable> {
    let socket = upstream_socket()?;
    let engine = |error| Unreachable::Engine {
        socket: socket.clone(),
        error,
    };
    let client = bollard_for(&socket).map_err(engine)?;
    let version = client
        .version()
        .await
        .map_err(engine)?
        .api_version
        .unwrap_or_else(|| "unknown".into());
    sweep_orphans(&client).await;
    Ok(Engine { socket, version })
}

/// A bollard client on `socket` (the version argument only matters to bollard's own
/// `client_version()`; see the module docs).
fn bollard_for(socket: &Path) -> Result<Bollard, bollard::errors::Error> {
    Bollard::connect_with_unix(&socket.to_string_lossy(), 120, bollard::API_DEFAULT_VERSION)
}

fn owner_is_alive(labels: Option<&HashMap<String, String>>) -> bool {
    let Some(pid) = labels.and_then(|l| l.get(OWNER_LABEL)) else {
        return true;
    };
    pid.parse::<u32>().is_err() || Path::new(&format!("/proc/{pid}")).exists()
}

/// Removes containers and networks labelled by a testkit process that no longer exists.
async fn sweep_orphans(client: &Bollard) {
    let filters = HashMap::from([("label", vec![OWNER_LABEL])]);
    let containers = client
        .list_containers(Some(
            ListContainersOptionsBuilder::new()
                .all(true)
                .filters(&filters)
                .build(),
        ))
        .await
        .unwrap_or_default();
    for c in containers {
        if owner_is_alive(c.labels.as_ref()) {
            continue;
        }
        if let Some(id) = c.id {
            eprintln!("testkit: removing orphaned test container {id}");
            let _ = client
                .remove_container(
                    &id,
                    Some(
                        RemoveContainerOptionsBuilder::new()
                            .force(true)
                            .v(true)
                            .build(),
                    ),
                )
                .await;
        }
    }
    let networks = client
        .list_networks(Some(
            ListNetworksOptionsBuilder::new().filters(&filters).build(),
        ))
        .await
        .unwrap_or_default();
    for n in networks {
        if owner_is_alive(n.labels.as_ref()) {
            continue;
        }
        if let Some(name) = n.name {
            eprintln!("testkit: removing orphaned test network {name}");
            remove_network(client, &name).await;
        }
    }
}

/// Disconnects every container from the network, then removes it.
async fn remove_network(client: &Bollard, name: &str) {
    if let Ok(net) = client
        .inspect_network(name, None::<InspectNetworkOptions>)
        .await
    {
        for id in net.containers.unwrap_or_default().into_keys() {
            let _ = client
                .disconnect_network(
                    name,
                    NetworkDisconnectRequest {
                        container: id,
                        force: Some(true),
                    },
                )
                .await;
        }
    }
    let _ = client.remove_network(name).await;
}

/// A unique name for something this process creates: `probelab-test-<what>-<pid>-<n>`.
pub fn unique_name(what: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("probelab-test-{what}-{}-{n}", std::process::id())
}

/// `probelab/<name>:dev`.
pub fn image_ref(name: &str) -> String {
    format!("probelab/{name}:{TAG}")
}

/// A testcontainers request for `probelab/<name>:dev`, labelled with this process (so a killed
/// test run's leftovers are removed by the next one) and publishing `ports` on 127.0.0.1 only, on
/// ports the engine picks. Nothing else is published (testcontainers would otherwise publish
/// every exposed port on 0.0.0.0).
pub fn container(name: &str, ports: &[u16]) -> ContainerRequest<GenericImage> {
    let bindings: HashMap<String, Option<Vec<PortBinding>>> = ports
        .iter()
        .map(|p| {
            (
                format!("{p}/tcp"),
                Some(vec![PortBinding {
                    host_ip: Some(Ipv4Addr::LOCALHOST.to_string()),
                    host_port: Some(String::new()),
                }]),
            )
        })
        .collect();
    let image = ports.iter().fold(
        GenericImage::new(format!("probelab/{name}"), TAG.to_string()),
        |image, p| image.with_exposed_port(ContainerPort::Tcp(*p)),
    );
    image
        .with_label(OWNER_LABEL, std::process::id().to_string())
        .with_container_name(unique_name(name))
        .with_host_config_modifier(move |hc: &mut HostConfig| {
            hc.publish_all_ports = Some(false);
            hc.port_bindings = Some(bindings.clone());
        })
}

/// The 127.0.0.1 address where `port` of the container is published.
pub async fn published(container: &ContainerAsync<GenericImage>, port: u16) -> SocketAddr {
    let host_port = container
        .get_host_port_ipv4(port)
        .await
        .unwrap_or_else(|e| panic!("port {port} of {} is not published: {e}", container.id()));
    SocketAddr::from((Ipv4Addr::LOCALHOST, host_port))
}

/// Waits (at most `limit`) until the container has exited; returns its exit code.
pub async fn wait_exit(container: &ContainerAsync<GenericImage>, limit: Duration) -> i64 {
    let start = Instant::now();
    loop {
        match container.is_running().await {
            Ok(false) => {
                return container
                    .exit_code()
                    .await
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| panic!("container {} has no exit code", container.id()));
            }
            Ok(true) => {}
            Err(e) => panic!("inspecting container {}: {e}", container.id()),
        }
        assert!(
            start.elapsed() < limit,
            "container {} still running after {limit:?}",
            container.id()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A container's stdout that is not JSON lines.
#[derive(Debug, thiserror::Error)]
pub enum JsonLinesError {
    #[error("stdout is not UTF-8: {0}")]
    Utf8(std::str::Utf8Error),
    #[error("line {line}: not a JSON object: {text}")]
    NotObject { line: usize, text: String },
    #[error("line {line}: {error}: {text}")]
    Json {
        line: usize,
        error: serde_json::Error,
        text: String,
    },
}

/// Parses stdout as JSON lines; any line that is not one complete JSON object is an error.
pub fn json_lines(stdout: &[u8]) -> Result<Vec<serde_json::Value>, JsonLinesError> {
    let text = std::str::from_utf8(stdout).map_err(JsonLinesError::Utf8)?;
    text.lines()
        .enumerate()
        .map(
            |(i, line)| match serde_json::from_str::<serde_json::Value>(line) {
                Ok(v) if v.is_object() => Ok(v),
                Ok(_) => Err(JsonLinesError::NotObject {
                    line: i + 1,
                    text: line.to_owned(),
                }),
                Err(error) => Err(JsonLinesError::Json {
                    line: i + 1,
                    error,
                    text: line.to_owned(),
                }),
            },
        )
        .collect()
}

/// A connection to the engine for one test (testcontainers has its own).
pub struct Docker {
    client: Bollard,
    socket: PathBuf,
    version: String,
}

impl Docker {
    fn connect(engine: &Engine) -> Self {
        let client = bollard_for(&engine.socket)
            .unwrap_or_else(|e| panic!("Docker client for {}: {e}", engine.socket.display()));
        Self {
            client,
            socket: engine.socket.clone(),
            version: engine.version.clone(),
        }
    }

    /// A bollard client straight to the engine's socket.
    pub fn client(&self) -> &Bollard {
        &self.client
    }

    /// The engine's API version, as its `/version` reports it (e.g. `1.41`).
    pub fn engine_api_version(&self) -> &str {
        &self.version
    }

    /// The engine's socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Panics with the command to run when `probelab/<name>:dev` is not on the engine (nothing
    /// can be pulled; testcontainers would try and fail obscurely).
    pub async fn require_image(&self, name: &str) {
        let image = image_ref(name);
        match self.client.inspect_image(&image).await {
            Ok(_) => {}
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => panic!(
                "image {image} is not on this Docker engine and no registry can supply it: \
                 build it with `{BUILD_COMMAND}` (or `just images`)"
            ),
            Err(e) => panic!("inspecting image {image}: {e}"),
        }
    }

    /// Creates a user-defined bridge network (Docker's DNS resolves container names and aliases
    /// on it), removed when the guard drops: declare the guard before the containers on it.
    pub async fn network(&self, what: &str) -> NetworkGuard {
        let name = unique_name(what);
        self.client
            .create_network(NetworkCreateRequest {
                name: name.clone(),
                driver: Some("bridge".into()),
                labels: Some(HashMap::from([(
                    OWNER_LABEL.to_string(),
                    std::process::id().to_string(),
                )])),
                ..Default::default()
            })
            .await
            .unwrap_or_else(|e| panic!("creating network {name}: {e}"));
        NetworkGuard {
            name,
            socket: self.socket.clone(),
        }
    }
}

/// A user-defined network that is removed (containers disconnected first) on drop, test
/// failure included.
pub struct NetworkGuard {
    name: String,
    socket: PathBuf,
}

impl NetworkGuard {
    /// The network's name, for `ImageExt::with_network`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Connects a running container with DNS `aliases` (a fixed name such as `subject` without
    /// making the container name itself fixed, so parallel tests do not collide).
    pub async fn connect(&self, docker: &Docker, container_id: &str, aliases: &[&str]) {
        docker
            .client
            .connect_network(
                &self.name,
                NetworkConnectRequest {
                    container: container_id.to_string(),
                    endpoint_config: Some(EndpointSettings {
                        aliases: Some(aliases.iter().map(|a| a.to_string()).collect()),
                        ..Default::default()
                    }),
                },
            )
            .await
            .unwrap_or_else(|e| panic!("connecting {container_id} to {}: {e}", self.name));
    }
}

impl Drop for NetworkGuard {
    fn drop(&mut self) {
        let name = self.name.clone();
        let socket = self.socket.clone();
        block_on_background(
            async move {
                if let Ok(client) = bollard_for(&socket) {
                    remove_network(&client, &name).await;
                }
            },
            Duration::from_secs(30),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_rejects_torn_lines() {
        assert_eq!(
            json_lines(b"{\"kind\":\"a\"}\n{\"kind\":\"b\"}\n")
                .expect("lines")
                .len(),
            2
        );
        assert!(json_lines(b"{\"kind\":\"a\"}\n{\"kind\":").is_err());
        assert!(json_lines(b"plain text\n").is_err());
        assert!(json_lines(b"[1]\n").is_err());
    }

    #[test]
    fn unique_names_differ_and_carry_the_pid() {
        let a = unique_name("net");
        let b = unique_name("net");
        assert_ne!(a, b);
        assert!(a.contains(&std::process::id().to_string()));
    }

    #[test]
    fn only_dead_owners_are_orphans() {
        let mine = HashMap::from([(OWNER_LABEL.to_string(), std::process::id().to_string())]);
        assert!(owner_is_alive(Some(&mine)));
        let dead = HashMap::from([(OWNER_LABEL.to_string(), u32::MAX.to_string())]);
        assert!(!owner_is_alive(Some(&dead)));
        assert!(owner_is_alive(None));
    }
}
