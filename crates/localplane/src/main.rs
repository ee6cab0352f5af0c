//! `localplane`: run the Container Apps emulator until SIGINT/SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use localplane::{LocalplaneConfig, RuntimeKind};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Runtime {
    Docker,
    Process,
}

/// Local emulator of Azure Container Apps (probes, ingress, revisions, jobs) behind a
/// Microsoft.App ARM REST subset.
#[derive(Parser, Debug)]
#[command(version)]
struct Cli {
    /// Address of the ARM API. Loopback only (the API starts containers on this host's Docker
    /// engine), unless --allow-remote is given with a token.
    #[arg(long, env = "LOCALPLANE_LISTEN", default_value = "127.0.0.1:8790")]
    listen: SocketAddr,
    /// Allow a non-loopback --listen address (e.g. 0.0.0.0:8790). Needs --token: every request
    /// must then carry `Authorization: Bearer <token>` (others get ARM's 401).
    #[arg(long, env = "LOCALPLANE_ALLOW_REMOTE")]
    allow_remote: bool,
    /// Bearer token required on the ARM API listener (at least 16 characters; never logged).
    /// Clients: `ARM_TOKEN_SOURCE=static` with the same LOCALPLANE_TOKEN.
    #[arg(long, env = "LOCALPLANE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Where resource definitions are kept across restarts.
    #[arg(long, env = "LOCALPLANE_STATE_DIR", default_value = ".localplane")]
    state_dir: PathBuf,
    /// Evidence directory; log tables go to <evidence>/logs/*.ndjson.
    #[arg(
        long,
        env = "LOCALPLANE_EVIDENCE",
        default_value = "evidence/localplane"
    )]
    evidence: PathBuf,
    /// How containers run.
    #[arg(long, env = "LOCALPLANE_RUNTIME", value_enum, default_value = "docker")]
    runtime: Runtime,
    /// Process runtime: directory holding the workspace binaries (default: next to this one).
    #[arg(long, env = "LOCALPLANE_BIN_DIR")]
    bin_dir: Option<PathBuf>,
    /// Also speak HTTPS on --listen (the same port), with a local CA made once into
    /// <state-dir>/tls/ca.pem: what the az CLI and the Azure SDKs need (they send tokens over
    /// HTTPS only). Clients trust it with REQUESTS_CA_BUNDLE / SSL_CERT_FILE.
    #[arg(long, env = "LOCALPLANE_TLS")]
    tls: bool,
    /// Replicas (of apps and job executions) this host runs at most, so that a typo such as
    /// `minReplicas: 1000` starts no container: a revision whose replicas would pass it starts
    /// none and its operation fails with ARM's `QuotaExceeded`; a scale-out stops there. Each
    /// environment's cores quota (100, Learn's default) applies besides.
    #[arg(long, env = "LOCALPLANE_MAX_REPLICAS", default_value_t = localplane::quota::DEFAULT_MAX_REPLICAS, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    max_replicas: u32,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    logline::log::init("localplane");
    let runtime = match cli.runtime {
        Runtime::Docker => RuntimeKind::Docker,
        Runtime::Process => {
            let bin_dir = cli.bin_dir.clone().or_else(|| {
                std::env::current_exe()
                    .ok()
                    .and_then(|p| p.parent().map(PathBuf::from))
            });
            match bin_dir {
                Some(bin_dir) => RuntimeKind::Process { bin_dir },
                None => {
                    eprintln!("localplane: cannot find the binary directory; pass --bin-dir");
                    return ExitCode::from(2);
                }
            }
        }
    };
    let cfg = LocalplaneConfig {
        max_replicas: cli.max_replicas,
        tls: cli.tls,
        listen: cli.listen,
        state_dir: cli.state_dir.clone(),
        evidence_dir: cli.evidence.clone(),
        runtime,
    };
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("localplane: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    rt.block_on(async move {
        let access = localplane::Access {
            allow_remote: cli.allow_remote,
            token: cli.token.filter(|t| !t.is_empty()),
        };
        let lp = match localplane::start_with_access(cfg, access).await {
            Ok(lp) => lp,
            Err(e) => {
                eprintln!("localplane: {e}");
                return ExitCode::FAILURE;
            }
        };
        eprintln!("localplane: ARM API at {}", lp.base_url());
        if let (Some(url), Some(ca)) = (lp.https_url(), lp.ca_path()) {
            eprintln!(
                "localplane: and at {url} (trust {}: REQUESTS_CA_BUNDLE / SSL_CERT_FILE)",
                ca.display()
            );
        }
        let failures = lp.log_write_failures();
        wait_for_signal().await;
        eprintln!("localplane: stopping containers with their grace periods");
        let down = lp.shutdown().await;
        let lost = failures.snapshot();
        for f in &lost {
            eprintln!(
                "localplane: log write failed: {}: {} (from {}; {} rows lost)",
                f.file.display(),
                f.error,
                f.first_failed.to_rfc3339_ms(),
                f.rows_lost
            );
        }
        if !lost.is_empty() {
            return ExitCode::FAILURE;
        }
        match down {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("localplane: {e}");
                ExitCode::FAILURE
            }
        }
    })
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
