//! `labctl job start JOB`: start a Container Apps job with env changes, through ARM.
//!
//! `update-then-start` (default) patches the job template's env and starts with no override,
//! under a per-job lock file so two starts never race; `override` starts with a full execution
//! template and leaves the job untouched. The target is Azure (`SUBSCRIPTION_ID`,
//! `RESOURCE_GROUP`, `ARM_ENDPOINT` to point elsewhere) or, with `--local`, the localplane
//! `labctl local up` runs.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use runner::jobs::{self, StartMode};
use runner::target::{Addressing, Target};

use crate::exit;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: JobCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum JobCommand {
    /// Start a job execution with env changes; prints the execution name.
    Start(StartArgs),
}

#[derive(clap::Args, Debug)]
pub struct StartArgs {
    /// The job's name (e.g. probelab-loadgen).
    #[arg(value_name = "JOB")]
    pub job: String,
    /// An env variable for this run (repeatable).
    #[arg(long = "env", value_name = "K=V", value_parser = logline::config::parse_key_value)]
    pub env: Vec<(String, String)>,
    /// update-then-start (patch the template, then start; serialised per job) or override.
    #[arg(long, default_value = "update-then-start")]
    pub mode: StartMode,
    /// Wait for the execution to end and exit non-zero unless it Succeeded.
    #[arg(long)]
    pub wait: bool,
    /// With --wait: the longest wait.
    #[arg(long, default_value = "1h", value_parser = logline::config::parse_duration)]
    pub timeout: Duration,
    /// Use the localplane `labctl local up` runs (its state dir) instead of Azure.
    #[arg(long)]
    pub local: bool,
    #[arg(long, default_value = ".localplane", value_name = "DIR")]
    pub state_dir: PathBuf,
    /// Where the per-job lock files live.
    #[arg(long, value_name = "DIR")]
    pub lock_dir: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let JobCommand::Start(a) = args.command;
    let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    rt.block_on(async move {
        let target = if a.local {
            let s = runner::local::read(&a.state_dir)?.with_context(|| {
                format!(
                    "no localplane recorded in {} (start one with `labctl local up`)",
                    a.state_dir.display()
                )
            })?;
            Target::local(&s.base_url, Addressing::ByName)?
        } else {
            Target::azure(&|k| std::env::var(k).ok())?
        };
        let changes: Vec<jobs::EnvChange> = a.env.into_iter().map(|(k, v)| (k, Some(v))).collect();
        let lock_dir = a.lock_dir.unwrap_or_else(jobs::default_lock_dir);
        let exec = jobs::start(&target, &a.job, &changes, a.mode, &lock_dir).await?;
        println!("{exec}");
        if !a.wait {
            return Ok(exit::HELD);
        }
        let status = jobs::wait(&target, &a.job, &exec, a.timeout).await?;
        println!("{exec}: {status}");
        Ok(if status == "Succeeded" {
            exit::HELD
        } else {
            exit::ERROR
        })
    })
}
