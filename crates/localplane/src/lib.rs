//! localplane: a local emulator of the parts of Azure Container Apps the labs exercise.
//!
//! It speaks a subset of the Microsoft.App ARM REST API ([`api`]), keeps apps, revisions,
//! replicas and jobs ([`plane`], [`jobs`]), runs containers as Docker containers or child
//! processes ([`runtime`]), probes them with kubelet's semantics ([`prober`], [`replica`]),
//! routes traffic through a per-app reverse proxy ([`ingress`]) and writes Log Analytics shaped
//! rows ([`logsink`]). Entry point: [`start`].

pub mod api;
pub mod cron;
pub mod error;
pub mod faults;
pub mod ingress;
pub mod jobs;
pub mod logsink;
pub mod model;
pub mod parity;
pub mod persist;
pub mod plane;
pub mod prober;
pub mod replica;
pub mod runtime;
pub mod timings;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

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
    plane: Arc<plane::Plane>,
    server_stop: CancellationToken,
    server: tokio::task::JoinHandle<()>,
    sink_task: tokio::task::JoinHandle<()>,
    docker: Option<runtime::docker::DockerRuntime>,
}

/// Binds the ARM API (port 0 allowed), restores state, starts the controllers and returns.
pub async fn start(cfg: LocalplaneConfig) -> Result<Localplane, Error> {
    std::fs::create_dir_all(&cfg.state_dir).map_err(|source| Error::Io {
        path: cfg.state_dir.clone(),
        source,
    })?;
    let listener = tokio::net::TcpListener::bind(cfg.listen)
        .await
        .map_err(|source| Error::Bind {
            addr: cfg.listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| Error::Bind {
        addr: cfg.listen,
        source,
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
    let shutdown = CancellationToken::new();
    let base_url = format!("http://127.0.0.1:{}", addr.port());
    let plane = plane::Plane::new(plane::Ctx {
        runtime: rt,
        sink,
        shutdown: shutdown.clone(),
        tracker: TaskTracker::new(),
        base_url,
        state_dir: cfg.state_dir.clone(),
    });
    persist::restore(&plane)?;
    let faults = faults::Faults::new(shutdown.clone());
    let app = api::router(api::ApiState {
        plane: plane.clone(),
        faults,
    });
    let server_stop = CancellationToken::new();
    if let Some(d) = &docker {
        // Inside the Docker network: the ARM API and the environment ingress on the gateway IP.
        let arm = tokio::net::TcpListener::bind((d.gateway, addr.port()))
            .await
            .map_err(|source| Error::Bind {
                addr: SocketAddr::new(d.gateway, addr.port()),
                source,
            })?;
        let app2 = app.clone();
        let stop = server_stop.clone();
        tokio::spawn(async move {
            let _ = axum::serve(arm, app2)
                .with_graceful_shutdown(async move { stop.cancelled().await })
                .await;
        });
        let env_ingress = tokio::net::TcpListener::bind((d.gateway, 80))
            .await
            .map_err(|source| Error::Bind {
                addr: SocketAddr::new(d.gateway, 80),
                source,
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
    }
    let stop = server_stop.clone();
    let server = tokio::spawn(async move {
        let r = axum::serve(listener, app)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await;
        if let Err(e) = r {
            tracing::error!(error = %e, "ARM API server failed");
        }
    });
    tracing::info!(%addr, "localplane listening");
    Ok(Localplane {
        addr,
        plane,
        server_stop,
        server,
        sink_task,
        docker,
    })
}

impl Localplane {
    /// `http://127.0.0.1:PORT`, the ARM endpoint.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.addr.port())
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
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

    /// Stops every container with its grace period, closes ingress and the API, flushes logs.
    pub async fn shutdown(self) -> Result<(), Error> {
        self.plane.ctx.shutdown.cancel();
        self.plane.ctx.tracker.close();
        let _ = tokio::time::timeout(SHUTDOWN_LIMIT, self.plane.ctx.tracker.wait()).await;
        if let Some(d) = &self.docker {
            d.shutdown().await;
        }
        self.server_stop.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.server).await;
        // Dropping the plane drops the last sink handles; the writer then flushes and ends.
        drop(self.plane);
        let _ = tokio::time::timeout(Duration::from_secs(5), self.sink_task).await;
        Ok(())
    }
}
