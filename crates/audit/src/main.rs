//! `audit`: parse, log, run, map to an exit code (0 at the window's end, 143 on SIGTERM).

use std::process::ExitCode;

use audit::AuditConfig;
use clap::Parser;

fn main() -> ExitCode {
    let cfg = AuditConfig::parse();
    sampler::init_logging(audit::SAMPLER_NAME);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(anyhow::Error::new(e).context("cannot start the tokio runtime")),
    };
    match runtime.block_on(audit::run(cfg)) {
        Ok(outcome) => ExitCode::from(sampler::exit_code(&outcome)),
        Err(e) => fail(anyhow::Error::new(e).context("audit cannot start")),
    }
}

fn fail(e: anyhow::Error) -> ExitCode {
    let chain = format!("{e:#}");
    tracing::error!(error = chain.as_str(), "setup failed");
    eprintln!("error: {chain}");
    ExitCode::from(1)
}
