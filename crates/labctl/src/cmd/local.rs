//! `labctl local up|down|status`: localplane in the foreground, and the commands that find it
//! through its state dir.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::ValueEnum;
use localplane::{LocalplaneConfig, RuntimeKind};

use crate::exit;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: LocalCommand,
    /// Where localplane keeps its state and labctl its pid file.
    #[arg(long, global = true, default_value = ".localplane", value_name = "DIR")]
    pub state_dir: PathBuf,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Runtime {
    Docker,
    Process,
}

#[derive(clap::Subcommand, Debug)]
pub enum LocalCommand {
    /// Run localplane in the foreground until Ctrl-C, SIGTERM or SIGHUP.
    Up {
        /// Address of the ARM API: loopback only (it starts containers on this host's Docker
        /// engine), unless --allow-remote is given with a token.
        #[arg(long, env = "LOCALPLANE_LISTEN", default_value = "127.0.0.1:8790")]
        listen: SocketAddr,
        /// Allow a non-loopback --listen address; needs --token (LOCALPLANE_TOKEN), and every
        /// request must then carry `Authorization: Bearer <token>` (others get ARM's 401).
        #[arg(long, env = "LOCALPLANE_ALLOW_REMOTE")]
        allow_remote: bool,
        /// Bearer token the ARM API requires (at least 16 characters; never logged). labctl and
        /// the sampler send it with ARM_TOKEN_SOURCE=static (or auto) and the same
        /// LOCALPLANE_TOKEN.
        #[arg(long, env = "LOCALPLANE_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// Evidence directory for its log tables (`<dir>/logs/*.ndjson`).
        #[arg(long, default_value = "evidence/localplane", value_name = "DIR")]
        evidence: PathBuf,
        #[arg(long, value_enum, default_value = "docker")]
        runtime: Runtime,
        #[arg(long, value_name = "DIR")]
        bin_dir: Option<PathBuf>,
    },
    /// Stop the localplane `up` started (SIGTERM; containers get their grace periods).
    Down {
        #[arg(long, default_value = "360s", value_parser = labkit::config::parse_duration)]
        wait: Duration,
    },
    /// Is it running, and where?
    Status,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let state_dir = args.state_dir;
    rt.block_on(async move {
        match args.command {
            LocalCommand::Up {
                listen,
                allow_remote,
                token,
                evidence,
                runtime,
                bin_dir,
            } => {
                let runtime = match runtime {
                    Runtime::Docker => RuntimeKind::Docker,
                    Runtime::Process => RuntimeKind::Process {
                        bin_dir: match bin_dir {
                            Some(d) => d,
                            None => std::env::current_exe()?
                                .parent()
                                .map(PathBuf::from)
                                .context("pass --bin-dir")?,
                        },
                    },
                };
                let cfg = LocalplaneConfig {
                    listen,
                    state_dir,
                    evidence_dir: evidence,
                    runtime,
                };
                let access = localplane::Access {
                    allow_remote,
                    token: token.filter(|t| !t.is_empty()),
                };
                runner::local::up(cfg, access, stop_signal(), |s| {
                    eprintln!(
                        "localplane: ARM API at {} (pid {}); logs in {}/logs; Ctrl-C or `labctl local down` stops it",
                        s.base_url,
                        s.pid,
                        s.evidence.display()
                    );
                    println!("ARM_ENDPOINT={}", s.base_url);
                })
                .await?;
                Ok(exit::HELD)
            }
            LocalCommand::Down { wait } => match runner::local::down(&state_dir, wait).await? {
                Some(s) => {
                    println!("stopped localplane (pid {})", s.pid);
                    Ok(exit::HELD)
                }
                None => {
                    println!("no localplane recorded in {}", state_dir.display());
                    Ok(exit::HELD)
                }
            },
            LocalCommand::Status => match runner::local::status(&state_dir).await? {
                Some((s, true)) => {
                    println!("running: pid {}, ARM API at {}, since {}", s.pid, s.base_url, s.started);
                    Ok(exit::HELD)
                }
                Some((s, false)) => {
                    println!("recorded (pid {}, {}) but not answering", s.pid, s.base_url);
                    Ok(exit::ERROR)
                }
                None => {
                    println!("not running (nothing recorded in {})", state_dir.display());
                    Ok(exit::ERROR)
                }
            },
        }
    })
}

/// The first Ctrl-C, SIGTERM or SIGHUP (containers then get their grace periods).
async fn stop_signal() {
    let mut signals = super::signals::Signals::new();
    if let Some(name) = signals.next().await {
        eprintln!("labctl: {name}: stopping localplane (containers get their grace periods)");
    }
}
