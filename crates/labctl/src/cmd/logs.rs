//! `labctl logs pull`: the Container Apps log tables from Log Analytics into `<out>/*.ndjson`,
//! the same files the local sink writes, ready for `labctl analyze`. Waits for late ingestion
//! (`--settle`) and scrubs what it writes (runner::logs, runner::scrub).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use crate::exit;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: LogsCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum LogsCommand {
    // The help text is on PullArgs (a doc comment here would replace its long help).
    Pull(PullArgs),
}

#[derive(clap::Args, Debug)]
#[command(
    about = "Pull ContainerAppConsoleLogs_CL and ContainerAppSystemLogs_CL from Log Analytics, \
        once ingestion has settled, scrubbed",
    long_about = "Query ContainerAppConsoleLogs_CL and ContainerAppSystemLogs_CL from Log \
        Analytics (query API, the operator's Azure CLI login) for the window [--since, --until] \
        and write them as <out>/<table>.ndjson, the files `labctl analyze` reads.\n\n\
        Log Analytics ingests rows minutes after they are printed (typically 20 s to 3 min), so \
        the pull first waits until no table's row count in the window has grown for --settle, \
        re-counting every settle/4 (at most 30 s), and gives up waiting after --settle-timeout \
        (it then writes what has arrived and says so). --settle 0 pulls at once.\n\n\
        One query answers at most 500,000 rows, so the rows are queried in time slices of about \
        200,000 (from the settled counts); a slice whose answer comes back cut (a PartialError) \
        is queried again as two halves. A table is never written with rows missing: if even a \
        millisecond's rows come back cut, the pull fails.\n\n\
        Every row is scrubbed before it is written (evidence packs are shared): subscription ids \
        become 00000000-0000-0000-0000-000000000000, tenant ids <tenant>, e-mail addresses \
        <email>, IPv4/IPv6 addresses <ip>. App, revision, replica and job names, run ids and \
        timestamps are kept, so the analysis works on scrubbed logs.\n\n\
        Progress goes to stderr; stdout gets one JSON line: {\"rows\":N,\"out\":\"DIR\"}.",
    after_help = "Example:\n  eval \"$(labctl azure-env)\"\n  \
        labctl logs pull --since 2026-06-12T14:00:00Z --out evidence/startup-degraded-20260612T140000Z/logs\n  \
        labctl analyze evidence/startup-degraded-20260612T140000Z"
)]
pub struct PullArgs {
    /// The workspace's customer id.
    #[arg(long, env = "LOG_ANALYTICS_WORKSPACE_ID")]
    pub workspace: String,
    /// Start of the window (RFC 3339, e.g. 2026-06-12T14:00:00Z).
    #[arg(long)]
    pub since: chrono::DateTime<chrono::Utc>,
    /// End of the window [now, when the pull starts].
    #[arg(long)]
    pub until: Option<chrono::DateTime<chrono::Utc>>,
    /// Output directory (an evidence pack's `logs/`).
    #[arg(long, default_value = "logs", value_name = "DIR")]
    pub out: PathBuf,
    /// Pull once no table's row count has grown for this long (e.g. 120s, 2m; 0 = at once).
    #[arg(long, env = "PROBELAB_LOGS_SETTLE", default_value = "120s",
        value_parser = logline::config::parse_duration, value_name = "DURATION")]
    pub settle: Duration,
    /// The longest wait for the counts to settle; then what has arrived is written.
    #[arg(long, env = "PROBELAB_LOGS_SETTLE_TIMEOUT", default_value = "15m",
        value_parser = logline::config::parse_duration, value_name = "DURATION")]
    pub settle_timeout: Duration,
    /// A subscription id to scrub wherever it appears (ids in resource paths are scrubbed
    /// anyway).
    #[arg(long, env = "SUBSCRIPTION_ID", value_name = "ID")]
    pub subscription_id: Option<String>,
    /// A tenant id to scrub wherever it appears.
    #[arg(long, env = "AZURE_TENANT_ID", value_name = "ID")]
    pub tenant_id: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let LogsCommand::Pull(a) = args.command;
    let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let mut o = runner::logs::PullOptions::new(a.workspace, a.since, a.out.clone());
    o.until = a.until;
    o.settle = a.settle;
    o.settle_timeout = a.settle_timeout;
    o.subscription_id = a.subscription_id;
    o.tenant_id = a.tenant_id;
    let n = rt
        .block_on(runner::logs::pull(&o))
        .context("logs pull failed")?;
    println!(
        "{}",
        serde_json::json!({ "rows": n, "out": a.out.display().to_string() })
    );
    Ok(exit::HELD)
}
