//! `labctl lab run LAB`: run a pre-registered lab end to end (the `runner` crate does the work)
//! and print the verdict; the exit code carries it (0 held, 3 falsified, 4 invalid, 1 error).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::ValueEnum;
use runner::progress::ProgressMode;
use runner::run::{LocalRuntime, RunOptions, TargetChoice};

use crate::exit;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: LabCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum LabCommand {
    /// Run a lab: copy it into a new evidence pack, deploy, run the steps, collect the logs,
    /// analyse, print the verdict and the path of report.md.
    Run(RunArgs),
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Target {
    Local,
    Azure,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Runtime {
    Docker,
    Process,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Progress {
    Auto,
    Plain,
    Quiet,
}

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The lab file (labs/*.toml).
    #[arg(value_name = "LAB")]
    pub lab: PathBuf,
    /// `local` (localplane started for the run) or `azure` (SUBSCRIPTION_ID, RESOURCE_GROUP,
    /// LOG_ANALYTICS_WORKSPACE_ID; the operator's Azure CLI login).
    #[arg(long, value_enum, default_value = "local")]
    pub target: Target,
    /// `full` (the file as written) or `quick` (the same shape in minutes).
    #[arg(long, default_value = "full")]
    pub profile: String,
    /// Where evidence packs go; the run writes `<out>/<lab>-<UTC stamp>/`.
    #[arg(long, default_value = "evidence", value_name = "DIR")]
    pub out: PathBuf,
    /// Local target: Docker containers (the labs' runtime) or child processes.
    #[arg(long, value_enum, default_value = "docker")]
    pub runtime: Runtime,
    /// Process runtime: directory holding the workspace binaries [default: next to labctl].
    #[arg(long, value_name = "DIR")]
    pub bin_dir: Option<PathBuf>,
    /// How jobs are started (see `labctl job start`).
    #[arg(long, default_value = "update-then-start")]
    pub mode: runner::jobs::StartMode,
    /// How long the apps may take to become ready.
    #[arg(long, default_value = "300s", value_parser = labkit::config::parse_duration)]
    pub ready_timeout: Duration,
    #[arg(long, value_enum, default_value = "auto")]
    pub progress: Progress,
    /// Multiply every duration of the schedule (for tests; the rule is never scaled).
    #[arg(long, default_value_t = 1.0, hide = true)]
    pub time_scale: f64,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    match args.command {
        LabCommand::Run(a) => run_lab(a),
    }
}

fn run_lab(a: RunArgs) -> anyhow::Result<u8> {
    let target = match a.target {
        Target::Azure => TargetChoice::Azure,
        Target::Local => TargetChoice::Local(match a.runtime {
            Runtime::Docker => LocalRuntime::Docker,
            Runtime::Process => LocalRuntime::Process {
                bin_dir: match a.bin_dir {
                    Some(d) => d,
                    None => std::env::current_exe()
                        .context("cannot find labctl's own path; pass --bin-dir")?
                        .parent()
                        .map(PathBuf::from)
                        .context("labctl has no parent directory; pass --bin-dir")?,
                },
            },
        }),
    };
    let mut opts = RunOptions::new(a.lab, &a.profile, target, a.out);
    opts.ready_timeout = a.ready_timeout;
    opts.start_mode = a.mode;
    opts.time_scale = a.time_scale;
    opts.progress = match a.progress {
        Progress::Auto => ProgressMode::Auto,
        Progress::Plain => ProgressMode::Plain,
        Progress::Quiet => ProgressMode::Quiet,
    };
    let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let cancel = opts.cancel.clone();
    rt.block_on(async move {
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("labctl: Ctrl-C: stopping jobs and localplane, keeping the partial pack");
                cancel.cancel();
            }
        });
        let out = runner::run_lab(opts).await?;
        eprintln!("wall time: {:.0} s", out.wall.as_secs_f64());
        if let Some(e) = out.error {
            eprintln!(
                "labctl: the run stopped early: {e}\npartial evidence (runs.json incomplete): {}\n\
                 analyse what there is with: labctl analyze {}",
                out.pack.display(),
                out.pack.display()
            );
            return Ok(exit::ERROR);
        }
        let Some(an) = out.analysis else {
            return Ok(exit::ERROR);
        };
        super::analyze::print_summary(&an, &out.pack);
        Ok(match an.verdict.verdict {
            analysis::Outcome::Held => exit::HELD,
            analysis::Outcome::Falsified => exit::FALSIFIED,
            analysis::Outcome::Invalid => exit::INVALID,
        })
    })
}
