//! The `subject` binary: parse the configuration (flags and env), validate it before binding,
//! run, exit with the code the run asks for.

use clap::Parser;

fn main() {
    let cfg = subject::Config::parse();
    logline::log::init("subject");
    if let Err(e) = cfg.validate() {
        tracing::error!(error = %e, "invalid configuration");
        eprintln!("subject: invalid configuration: {e}");
        std::process::exit(2);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("subject: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    // process::exit, not a return: it does not wait for in-flight work (immediate shutdown means
    // exactly that) nor for CPU burns on the blocking pool.
    match rt.block_on(subject::run(cfg)) {
        Ok(exit) => std::process::exit(exit.code),
        Err(e) => {
            let chain = anyhow::Error::from(e);
            tracing::error!(error = format!("{chain:#}"), "subject failed");
            eprintln!("subject: {chain:#}");
            std::process::exit(1);
        }
    }
}
