//! `perturbation-sampler`: parse, log, run, map to an exit code. Everything else is in the library.

use std::process::ExitCode;

use clap::Parser;
use sampler::SamplerConfig;

fn main() -> ExitCode {
    let cfg = SamplerConfig::parse();
    sampler::init_logging(sampler::SAMPLER_NAME);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(anyhow::Error::new(e).context("cannot start the tokio runtime")),
    };
    match runtime.block_on(sampler::run(cfg)) {
        Ok(outcome) => ExitCode::from(sampler::exit_code(&outcome)),
        Err(e) => fail(anyhow::Error::new(e).context("perturbation-sampler cannot start")),
    }
}

fn fail(e: anyhow::Error) -> ExitCode {
    let chain = format!("{e:#}");
    tracing::error!(error = chain.as_str(), "setup failed");
    eprintln!("error: {chain}");
    ExitCode::from(1)
}
