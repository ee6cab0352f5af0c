//! `labctl logs pull`: the Container Apps log tables from Log Analytics into `<out>/*.ndjson`,
//! the same files the local sink writes, ready for `labctl analyze`.

use std::path::PathBuf;

use anyhow::Context;

use crate::exit;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: LogsCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum LogsCommand {
    /// Query ContainerAppConsoleLogs_CL and ContainerAppSystemLogs_CL since a time.
    Pull(PullArgs),
}

#[derive(clap::Args, Debug)]
pub struct PullArgs {
    /// The workspace's customer id.
    #[arg(long, env = "LOG_ANALYTICS_WORKSPACE_ID")]
    pub workspace: String,
    /// Start of the window (RFC 3339, e.g. 2026-06-12T14:00:00Z).
    #[arg(long)]
    pub since: chrono::DateTime<chrono::Utc>,
    /// End of the window [now].
    #[arg(long)]
    pub until: Option<chrono::DateTime<chrono::Utc>>,
    /// Output directory (an evidence pack's `logs/`).
    #[arg(long, default_value = "logs", value_name = "DIR")]
    pub out: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let LogsCommand::Pull(a) = args.command;
    let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let mut o = runner::logs::PullOptions::new(a.workspace, a.since, a.out.clone());
    o.until = a.until;
    let n = rt.block_on(runner::logs::pull(&o))?;
    println!("{n} row(s) written to {}", a.out.display());
    Ok(exit::HELD)
}
