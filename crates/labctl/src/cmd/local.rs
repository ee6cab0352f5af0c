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
    /// Run localplane in the foreground until Ctrl-C, SIGTERM or SIGHUP.
    Up {
        /// Address of the ARM API: loopback only (it starts containers on this host's Docker
        /// engine), unless --allow-remote is given with a token.
        #[arg(long, env = "LOCALPLANE_LISTEN", default_value = "127.0.0.1:8790")]
        listen: SocketAddr,
        /// Allow a non-loopback --listen address; needs --token (LOCALPLANE_TOKEN), and every
        /// request must then carry `Authorization: Bearer <token>` (others get ARM's 401).
        #[arg(long, env = "LOCALPLANE_ALLOW_REMOTE")]
        allow_remote: bool,
        /// Bearer token the ARM API requires (at least 16 characters; never logged). labctl and
        /// the sampler send it with ARM_TOKEN_SOURCE=static (or auto) and the same
        /// LOCALPLANE_TOKEN.
        #[arg(long, env = "LOCALPLANE_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// Evidence directory for its log tables (`<dir>/logs/*.ndjson`).
        #[arg(long, default_value = "evidence/localplane", value_name = "DIR")]
        evidence: PathBuf,
        #[arg(long, value_enum, default_value = "docker")]
        runtime: Runtime,
        #[arg(long, value_name = "DIR")]
        bin_dir: Option<PathBuf>,
        /// Serve plain HTTP only. By default the same port also speaks HTTPS, with a local CA
        /// made once into <state-dir>/tls/ca.pem, so that the az CLI and the Azure SDKs (which
        /// send tokens over HTTPS only) reach it; `labctl local az` prints how.
        #[arg(long)]
        no_tls: bool,
        /// Replicas (of apps and job executions) localplane runs at most on this host, so that a
        /// typo such as `minReplicas: 1000` starts no container: past it none is started and the
        /// operation fails with ARM's `QuotaExceeded`.
        #[arg(long, env = "LOCALPLANE_MAX_REPLICAS", default_value_t = localplane::quota::DEFAULT_MAX_REPLICAS, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        max_replicas: u32,
    },
    /// Print the shell lines that point your own `az containerapp ...` and Azure SDK scripts at
    /// the running localplane: `eval "$(labctl local az)"`.
    ///
    /// They export the CA bundle (REQUESTS_CA_BUNDLE, SSL_CERT_FILE), the managed-identity
    /// endpoint (IDENTITY_ENDPOINT, IDENTITY_HEADER), the subscription and ARM endpoint
    /// (AZURE_SUBSCRIPTION_ID, ARM_ENDPOINT) and an az config dir of localplane's own
    /// (AZURE_CONFIG_DIR, so your Azure login is untouched), then register the cloud
    /// `localplane` from its /metadata/endpoints and run `az login --identity`.
    Az {
        /// Only the exports: no `az cloud register`, `az cloud set`, `az login` lines.
        #[arg(long)]
        exports_only: bool,
    },
    /// Stop the localplane `up` started (SIGTERM; containers get their grace periods).
    Down {
        #[arg(long, default_value = "360s", value_parser = logline::config::parse_duration)]
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
                allow_remote,
                token,
                evidence,
                runtime,
                bin_dir,
                no_tls,
                max_replicas,
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
                    max_replicas,
                    tls: !no_tls,
                    listen,
                    state_dir,
                    evidence_dir: evidence,
                    runtime,
                };
                let access = localplane::Access {
                    allow_remote,
                    token: token.filter(|t| !t.is_empty()),
                };
                runner::local::up(cfg, access, stop_signal(), |s| {
                    eprintln!(
                        "localplane: ARM API at {} (pid {}); logs in {}/logs; Ctrl-C or `labctl local down` stops it",
                        s.base_url,
                        s.pid,
                        s.evidence.display()
                    );
                    if let (Some(url), Some(ca)) = (&s.https_url, &s.ca) {
                        eprintln!(
                            "localplane: HTTPS on the same port ({url}, CA {}); your own az scripts: eval \"$(labctl local az)\"",
                            ca.display()
                        );
                    }
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
            LocalCommand::Az { exports_only } => print_az(&state_dir, exports_only),
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

/// `labctl local az`: the lines for the localplane recorded in `state_dir`, which must run.
fn print_az(state_dir: &std::path::Path, exports_only: bool) -> anyhow::Result<u8> {
    let Some(s) = runner::local::read(state_dir)? else {
        anyhow::bail!(
            "no localplane recorded in {}: start one with `labctl local up` first",
            state_dir.display()
        );
    };
    if !runner::local::alive(s.pid) {
        anyhow::bail!(
            "the localplane recorded in {} (pid {}) is not running: `labctl local up`",
            state_dir.display(),
            s.pid
        );
    }
    let config_dir =
        std::path::absolute(state_dir.join("az")).context("the az config dir's absolute path")?;
    print!("{}", az_lines(&s, &config_dir, exports_only)?);
    Ok(exit::HELD)
}

/// The shell lines of `labctl local az` for the localplane `s` records: exports, then (unless
/// `exports_only`) the cloud registration and the login.
fn az_lines(
    s: &runner::local::LocalState,
    config_dir: &std::path::Path,
    exports_only: bool,
) -> anyhow::Result<String> {
    let (Some(url), Some(ca)) = (&s.https_url, &s.ca) else {
        anyhow::bail!(
            "this localplane serves plain HTTP only (started with --no-tls); the az CLI and the \
             Azure SDKs need HTTPS: restart it without --no-tls"
        );
    };
    let q = |v: &str| format!("'{}'", v.replace('\'', r"'\''"));
    let ca = ca.to_string_lossy();
    let header = if s.token {
        // The token is never written down: the identity endpoint wants it as the header.
        "\"${LOCALPLANE_TOKEN:?set LOCALPLANE_TOKEN to the token localplane runs with}\"".to_owned()
    } else {
        q("localplane")
    };
    let mut out = format!(
        "# localplane (pid {pid}) at {url}; apply with: eval \"$(labctl local az)\"\n\
         export AZURE_CONFIG_DIR={cfg}\n\
         export REQUESTS_CA_BUNDLE={ca}\n\
         export SSL_CERT_FILE={ca}\n\
         export IDENTITY_ENDPOINT={identity}\n\
         export IDENTITY_HEADER={header}\n\
         export AZURE_SUBSCRIPTION_ID={sub}\n\
         export ARM_ENDPOINT={arm}\n",
        pid = s.pid,
        cfg = q(&config_dir.to_string_lossy()),
        ca = q(&ca),
        identity = q(&format!("{url}{}", localplane::tenancy::IDENTITY_PATH)),
        sub = q(localplane::tenancy::SUBSCRIPTION_ID),
        arm = q(url),
    );
    if !exports_only {
        let rm = q(&format!("{url}/"));
        out.push_str(&format!(
            "az cloud register --name localplane --endpoint-resource-manager {rm} --only-show-errors >/dev/null 2>&1 \\\n  \
             || az cloud update --name localplane --endpoint-resource-manager {rm} --only-show-errors >/dev/null\n\
             az cloud set --name localplane --only-show-errors\n\
             az login --identity --only-show-errors -o none\n"
        ));
    }
    Ok(out)
}

/// The first Ctrl-C, SIGTERM or SIGHUP (containers then get their grace periods).
async fn stop_signal() {
    let mut signals = super::signals::Signals::new();
    if let Some(name) = signals.next().await {
        eprintln!("labctl: {name}: stopping localplane (containers get their grace periods)");
    }
}
