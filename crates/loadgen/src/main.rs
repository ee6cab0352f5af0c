//! The `loadgen` binary: parse flags and env, run, map the result to an exit code.

use clap::Parser;

fn main() -> anyhow::Result<()> {
    let cfg = loadgen::Args::parse().into_config()?;
    logline::log::init("loadgen");
    loadgen::run_blocking(cfg, loadgen::Output::Stdout)?;
    Ok(())
}
