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
    /// Address of the ARM API.
    #[arg(long, env = "LOCALPLANE_LISTEN", default_value = "127.0.0.1:8790")]
    listen: SocketAddr,
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    labkit::log::init("localplane");
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
        listen: cli.listen,
        state_dir: cli.state_dir,
        evidence_dir: cli.evidence,
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
        let lp = match localplane::start(cfg).await {
            Ok(lp) => lp,
            Err(e) => {
                eprintln!("localplane: {e}");
                return ExitCode::FAILURE;
            }
        };
        eprintln!("localplane: ARM API at {}", lp.base_url());
        wait_for_signal().await;
        eprintln!("localplane: stopping containers with their grace periods");
        match lp.shutdown().await {
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
