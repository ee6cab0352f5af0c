//! `labctl`: the probelab front door. This file only parses the command line, dispatches to one
//! module per command (`cmd::*`) and maps the result to an exit code.

mod cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit codes (also in `--help`).
pub mod exit {
    /// The analysis ran and the hypothesis held (or, for `report`, the report was written).
    pub const HELD: u8 = 0;
    /// An error stopped the command (unreadable input, bad lab file, unwritable output).
    pub const ERROR: u8 = 1;
    /// The analysis ran and the rule falsified the hypothesis.
    pub const FALSIFIED: u8 = 3;
    /// The analysis ran but a precondition failed (or nothing could be judged): `invalid`.
    pub const INVALID: u8 = 4;
}

#[derive(Parser)]
#[command(
    name = "labctl",
    version,
    about = "Run pre-registered Container Apps experiments and turn their logs into a verdict.",
    long_about = "labctl turns a lab's logs into an evidence pack with a mechanical verdict.\n\n\
        Typical use:\n  labctl lab list\n  labctl lab show startup-degraded\n  \
        labctl lab run startup-degraded --profile quick\n  \
        labctl analyze evidence/startup-degraded-20260612T141745Z/\n  \
        labctl analyze --out /tmp/pack exported-q2.json k6-stdout.log\n  \
        labctl report evidence/startup-degraded-20260612T141745Z/",
    after_help = "Exit codes: 0 analysis done and the hypothesis held (report: written); \
        1 error; 2 usage error; 3 falsified; 4 invalid (a precondition failed or nothing to judge)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Analyze(cmd::analyze::Args),
    Report(cmd::report::Args),
    /// The lab catalogue: list the labs, show one's pre-registration, run one end to end
    /// (`lab list`, `lab show NAME`, `lab run NAME --profile quick`).
    Lab(cmd::lab::Args),
    /// Several runs of one lab judged together by its pre-registered [campaign] table
    /// (`campaign run NAME --runs 4`, `campaign report PACK...`).
    Campaign(cmd::campaign::Args),
    /// Drive one phase by hand against deployed apps and jobs (the original trigger.sh).
    Trigger(cmd::trigger::Args),
    /// Start a Container Apps job with env changes (update-then-start or override).
    Job(cmd::job::Args),
    /// Run localplane in the foreground, stop it, or ask whether it runs.
    Local(cmd::local::Args),
    /// Pull the log tables from Log Analytics.
    Logs(cmd::logs::Args),
    /// Check an evidence pack against its manifest.sha256.
    Verify(cmd::verify::Args),
    Deploy(cmd::deploy::Args),
    Destroy(cmd::deploy::DestroyArgs),
    AzureEnv(cmd::deploy::EnvArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Analyze(a) => cmd::analyze::run(a),
        Command::Report(a) => cmd::report::run(a),
        Command::Lab(a) => cmd::lab::run(a),
        Command::Campaign(a) => cmd::campaign::run(a),
        Command::Trigger(a) => cmd::trigger::run(a),
        Command::Job(a) => cmd::job::run(a),
        Command::Local(a) => cmd::local::run(a),
        Command::Logs(a) => cmd::logs::run(a),
        Command::Verify(a) => cmd::verify::run(a),
        Command::Deploy(a) => cmd::deploy::run(a),
        Command::Destroy(a) => cmd::deploy::run_destroy(a),
        Command::AzureEnv(a) => cmd::deploy::run_env(a),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("labctl: error: {e:#}");
            ExitCode::from(exit::ERROR)
        }
    }
}
