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
    /// Run localplane in the foreground until Ctrl-C.
    Up {
        #[arg(long, default_value = "127.0.0.1:8790")]
        listen: SocketAddr,
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
                runner::local::up(cfg, stop_signal(), |s| {
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

async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
