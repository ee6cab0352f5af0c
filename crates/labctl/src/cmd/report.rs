//! `labctl report DIR`: re-render report.md, report.html and charts of an evidence pack from its logs (and its
//! lab.toml), refresh the manifest, and print the report's path. Tables are left as they are;
//! run `analyze` to rewrite them.

use std::path::PathBuf;

use analysis::render::pack;
use anyhow::{Context, bail};

use super::RuleArgs;
use crate::exit;

/// Re-render report.md, report.html and charts/*.svg of an evidence pack (exit 0 whatever the verdict).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The evidence directory (its `logs/` folder, or every log file in it, is read).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    #[command(flatten)]
    pub rule: RuleArgs,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    if !args.dir.is_dir() {
        bail!("{} is not a directory", args.dir.display());
    }
    let opts = args.rule.options(&args.dir);
    let a = analysis::analyze(std::slice::from_ref(&args.dir), &opts).context("analysis failed")?;
    pack::write(&a, &args.dir, pack::Parts::Report)
        .with_context(|| format!("writing the report to {}", args.dir.display()))?;
    super::analyze::print_summary(&a, &args.dir);
    Ok(exit::HELD)
}
