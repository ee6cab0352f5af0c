//! localplane: a local emulator of the parts of Azure Container Apps the labs exercise.
//!
//! It speaks a subset of the Microsoft.App ARM REST API ([`api`]), keeps apps, revisions,
//! replicas and jobs ([`plane`], [`job`], [`jobs`]), runs containers as Docker containers or
//! child processes ([`runtime`]), probes them with kubelet's semantics ([`prober`], [`replica`]),
//! routes traffic through a per-app reverse proxy ([`ingress`]) and writes Log Analytics shaped
//! rows ([`logsink`]). Entry point: [`start`].

pub mod access;
pub mod api;
pub mod cron;
pub mod error;
pub mod event;
pub mod execution;
pub mod faults;
pub mod handler;
pub mod ingress;
pub mod job;
pub mod jobs;
pub mod listing;
pub mod logsink;
pub mod maintenance;
pub mod model;
pub mod parity;
pub mod persist;
pub mod plane;
pub mod prober;
pub mod quota;
pub mod replica;
pub mod resources;
pub mod retention;
pub mod routes;
pub mod runtime;
pub mod scaler;
pub mod serve;
pub mod tags;
pub mod tenancy;
pub mod timings;
pub mod tls;
pub mod traffic;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use access::Access;
pub use error::Error;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How long [`Localplane::shutdown`] waits for containers to stop (longest grace + margin).
pub const SHUTDOWN_LIMIT: Duration = Duration::from_secs(330);

/// Where localplane listens, keeps state and writes evidence, and how it runs containers.
#[derive(Debug, Clone)]
pub struct LocalplaneConfig {
    pub listen: SocketAddr,
    pub state_dir: PathBuf,
    pub evidence_dir: PathBuf,
    pub runtime: RuntimeKind,
    /// Also speak HTTPS on `listen` (the same port), with the CA and server certificate of
    /// `<state_dir>/tls` ([`tls::LocalCa`]): what the az CLI and the Azure SDKs need.
    pub tls: bool,
    /// Replicas (of apps and job executions) running on this host at most: past it none is
    /// started, with the quota error ([`quota`]; [`quota::DEFAULT_MAX_REPLICAS`] by default).
    pub max_replicas: u32,
}

#[derive(Debug, Clone)]
pub enum RuntimeKind {
    /// Docker containers through bollard (the default; what the labs use).
    Docker,
    /// Child processes on 127.0.0.1: image `probelab/<name>:<tag>` runs `<bin_dir>/<name>`.
    Process { bin_dir: PathBuf },
}

/// A running localplane.
pub struct Localplane {
    addr: SocketAddr,
    ca: Option<tls::LocalCa>,
    plane: Arc<plane::Plane>,
    server_stop: CancellationToken,
    /// The ARM API servers (main listener, gateway listener), by address.
    servers: Vec<(String, tokio::task::JoinHandle<()>)>,
    sink_task: tokio::task::JoinHandle<()>,
    docker: Option<runtime::docker::DockerRuntime>,
}

/// Binds the ARM API (port 0 allowed) on a loopback address, restores state, starts the
/// controllers and returns. A non-loopback `listen` is refused: see [`start_with_access`].
pub async fn start(cfg: LocalplaneConfig) -> Result<Localplane, Error> {
    start_with_access(cfg, Access::default()).await
}

/// [`start`], with who may reach the ARM API: `access` decides whether `cfg.listen` may be a
/// non-loopback address (only with [`Access::allow_remote`] and a token) and whether requests on
/// it need `Authorization: Bearer <token>` ([`access::require_token`]).
pub async fn start_with_access(cfg: LocalplaneConfig, access: Access) -> Result<Localplane, Error> {
    access.check_listen(cfg.listen)?;
    std::fs::create_dir_all(&cfg.state_dir).map_err(|source| Error::Io {
        path: cfg.state_dir.clone(),
        error: source,
    })?;
    let listener = tokio::net::TcpListener::bind(cfg.listen)
        .await
        .map_err(|source| Error::Bind {
            addr: cfg.listen,
            error: source,
        })?;
    let addr = listener.local_addr().map_err(|source| Error::Bind {
        addr: cfg.listen,
        error: source,
    })?;
    let (sink, sink_task) = logsink::start(&cfg.evidence_dir).await?;
    let (rt, docker) = match &cfg.runtime {
        RuntimeKind::Process { bin_dir } => (
            runtime::Runtime::Process(runtime::process::ProcessRuntime::new(bin_dir.clone())),
            None,
        ),
        RuntimeKind::Docker => {
            let d = runtime::docker::DockerRuntime::connect(&cfg.state_dir).await?;
            d.set_arm_port(addr.port());
            (runtime::Runtime::Docker(d.clone()), Some(d))
        }
    };
    let ca = if cfg.tls {
        Some(tls::LocalCa::load_or_create(&cfg.state_dir)?)
    } else {
        None
    };
    let shutdown = CancellationToken::new();
    let base_url = format!("http://127.0.0.1:{}", addr.port());
    let plane = plane::Plane::new(plane::Ctx {
        runtime: rt,
        sink,
        shutdown: shutdown.clone(),
        hurry: CancellationToken::new(),
        tracker: TaskTracker::new(),
        base_url,
        state_dir: cfg.state_dir.clone(),
        max_replicas: cfg.max_replicas,
    });
    persist::restore(&plane)?;
    let faults = faults::Faults::new(shutdown.clone());
    let app = routes::router(handler::ApiState {
        plane: plane.clone(),
        faults,
        token: access.token.as_deref().map(Arc::<str>::from),
    });
    let server_stop = CancellationToken::new();
    let mut servers = Vec::new();
    if let Some(d) = &docker {
        servers.push(serve_on_gateway(d, addr.port(), app.clone(), &plane, &server_stop).await?);
    }
    let app = match &access.token {
        Some(t) => app.layer(axum::middleware::from_fn_with_state(
            Arc::<str>::from(t.as_str()),
            access::require_token,
        )),
        None => app,
    };
    servers.push((
        addr.to_string(),
        serve::serve(
            listener,
            app,
            ca.as_ref().map(tls::LocalCa::acceptor),
            server_stop.clone(),
        ),
    ));
    tracing::info!(%addr, token = access.token.is_some(), "localplane listening");
    Ok(Localplane {
        addr,
        ca,
        plane,
        server_stop,
        servers,
        sink_task,
        docker,
    })
}

/// Inside the Docker network: the ARM API on `arm_port` and the environment ingress on port 80
/// of the gateway IP of the network localplane created (reached by its own jobs; no token
/// there). Returns the ARM server, by address.
async fn serve_on_gateway(
    d: &runtime::docker::DockerRuntime,
    arm_port: u16,
    app: axum::Router,
    plane: &Arc<plane::Plane>,
    server_stop: &CancellationToken,
) -> Result<(String, tokio::task::JoinHandle<()>), Error> {
    let arm_addr = SocketAddr::new(d.gateway, arm_port);
    let arm = tokio::net::TcpListener::bind(arm_addr)
        .await
        .map_err(|source| Error::Bind {
            addr: arm_addr,
            error: source,
        })?;
    let server = (
        format!("gateway {arm_addr}"),
        serve::serve(arm, app, None, server_stop.clone()),
    );
    let env_ingress = tokio::net::TcpListener::bind((d.gateway, 80))
        .await
        .map_err(|source| Error::Bind {
            addr: SocketAddr::new(d.gateway, 80),
            error: source,
        })?;
    let p = plane.clone();
    let resolver: ingress::HostResolver = Arc::new(move |name: &str| {
        let st = p.lock();
        st.apps.get(&plane::key(name)).map(|a| a.routes.clone())
    });
    tokio::spawn(ingress::serve_target(
        env_ingress,
        ingress::Target::ByHost(resolver),
        server_stop.clone(),
    ));
    Ok(server)
}

impl Localplane {
    /// `http://127.0.0.1:PORT`, the ARM endpoint.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.addr.port())
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// With TLS: `https://127.0.0.1:PORT`, the ARM endpoint the real Azure clients call.
    pub fn https_url(&self) -> Option<String> {
        self.ca
            .as_ref()
            .map(|_| format!("https://127.0.0.1:{}", self.addr.port()))
    }

    /// With TLS: the CA certificate a client trusts (`REQUESTS_CA_BUNDLE`, `SSL_CERT_FILE`).
    pub fn ca_path(&self) -> Option<&std::path::Path> {
        self.ca.as_ref().map(tls::LocalCa::ca_path)
    }

    /// Docker runtime: the engine version localplane negotiated with (for the record).
    pub fn docker_engine(&self) -> Option<String> {
        self.docker.as_ref().map(|d| d.engine_version.clone())
    }

    /// Docker runtime: the bridge network its containers run on (`probelab-lp-<owner>`); a
    /// container attached to it reaches the ARM API at [`Localplane::container_arm_endpoint`].
    pub fn docker_network(&self) -> Option<&str> {
        self.docker.as_ref().map(|d| d.network.as_str())
    }

    /// The `ARM_ENDPOINT` containers use: `http://<gateway>:<port>` on Docker (the API is
    /// served on the network's gateway IP too), [`Localplane::base_url`] on the process runtime.
    pub fn container_arm_endpoint(&self) -> String {
        self.plane
            .ctx
            .runtime
            .arm_endpoint_for_containers(&self.plane.ctx.base_url)
    }

    /// Tells every controller and supervisor to stop (no new containers are started) without
    /// waiting; for drop guards that cannot `.await` [`Localplane::shutdown`].
    pub fn begin_shutdown(&self) {
        self.plane.ctx.shutdown.cancel();
    }

    /// A handle that, cancelled, cuts every grace period short: containers still running (or
    /// stopping) during [`Localplane::shutdown`] are killed at once and still removed (a second
    /// Ctrl-C / SIGTERM).
    pub fn hurry_handle(&self) -> CancellationToken {
        self.plane.ctx.hurry.clone()
    }

    /// The log sink's write failures; the handle stays readable after [`Localplane::shutdown`].
    pub fn log_write_failures(&self) -> logsink::Failures {
        self.plane.ctx.sink.failures()
    }

    /// Stops every container with its grace period, closes ingress and the API, flushes logs.
    pub async fn shutdown(self) -> Result<(), Error> {
        self.plane.ctx.shutdown.cancel();
        self.plane.ctx.tracker.close();
        let _ = tokio::time::timeout(SHUTDOWN_LIMIT, self.plane.ctx.tracker.wait()).await;
        if let Some(d) = &self.docker {
            d.shutdown().await;
        }
        self.server_stop.cancel();
        let mut failure = None;
        for (name, task) in self.servers {
            let r = join_server(&name, task, Duration::from_secs(5)).await;
            if let Err(e) = r {
                tracing::error!(error = %e, "ARM API server");
                failure.get_or_insert(e);
            }
        }
        // Dropping the plane drops the last sink handles; the writer then flushes and ends.
        drop(self.plane);
        let _ = tokio::time::timeout(Duration::from_secs(5), self.sink_task).await;
        failure.map_or(Ok(()), Err)
    }
}

/// Waits (at most `limit`) for an ARM API server task after its stop signal. A panic is an
/// error naming the listener; a server still draining a connection after `limit` is only
/// logged (the process is about to end, and nothing it would still answer is evidence).
async fn join_server(
    name: &str,
    task: tokio::task::JoinHandle<()>,
    limit: Duration,
) -> Result<(), Error> {
    match tokio::time::timeout(limit, task).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(Error::Server(
            name.to_owned(),
            format!("the task failed: {e}"),
        )),
        Err(_) => {
            tracing::warn!(
                listener = name,
                "ARM API server still draining connections after {} s",
                limit.as_secs()
            );
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_server_task_that_panicked_is_an_error() {
        let ok = tokio::spawn(async {});
        assert!(join_server("a", ok, Duration::from_secs(1)).await.is_ok());
        let panicked = tokio::spawn(async { panic!("boom") });
        let e = join_server("127.0.0.1:1", panicked, Duration::from_secs(1))
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("127.0.0.1:1") && e.contains("panicked"), "{e}");
        let hangs = tokio::spawn(std::future::pending::<()>());
        assert!(
            join_server("b", hangs, Duration::from_millis(50))
                .await
                .is_ok()
        );
    }
}
