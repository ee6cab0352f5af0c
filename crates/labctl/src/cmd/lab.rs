//! `labctl lab run LAB`: run a pre-registered lab end to end (the `runner` crate does the work)
//! and print the verdict; the exit code carries it (0 held, 3 falsified, 4 invalid, 1 error).
//! `labctl lab list` prints the catalogue and `labctl lab show LAB` one lab's pre-registration in
//! words (both validate the lab files as `lab run` does, so a broken file shows here first).
//!
//! LAB is a file path, or the bare name of a lab in `--labs-dir` (`startup-degraded` is
//! `<labs dir>/startup-degraded.toml`; the lab image sets `PROBELAB_LABS_DIR=/labs`).
//! `--evidence-owner` hands what the run wrote to another user afterwards: the lab image runs as
//! root (it drives the host's Docker engine and binds port 80 on the emulator's gateway) and
//! writes into a bind-mounted host directory, whose files must end up the host user's.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
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
    /// List the labs of --labs-dir: name, kind, how long the quick and the full schedule run,
    /// and the question each lab answers.
    #[command(
        long_about = "List the labs of --labs-dir (PROBELAB_LABS_DIR, default labs/).\n\n\
        One line per lab file: its NAME (what `lab run` and `lab show` take), its KIND \
        (falsification: held or falsified by a pre-registered rule; observation: held when every \
        expected observation is seen), how long its QUICK and FULL schedules run (the steps' \
        load time one after the other; deploying, readiness and the log pull come on top) and \
        the QUESTION it answers. Every file is validated as `lab run` validates it: a broken \
        one is listed as invalid, its error follows the table, and the exit code is 1.\n\n\
        Example:\n  labctl lab list\n  labctl lab list --json | jq -r .name"
    )]
    List(ListArgs),
    /// Show one lab's pre-registration in words: question, hypothesis, the binding rule, the
    /// preconditions, the checks, the apps, the load and the schedule.
    #[command(
        long_about = "Show one lab's pre-registration in words, as `lab run` would run \
        it with the same --profile: the question, the hypothesis (and the verdict it expects), \
        the binding rule (the same in every profile), the preconditions whose failure makes the \
        verdict invalid, the checks of an observation lab, the apps, the load and the schedule \
        step by step with its length.\n\n\
        LAB is resolved as `lab run` resolves it: a file path, or a bare name in --labs-dir.\n\n\
        Example:\n  labctl lab show startup-degraded --profile quick"
    )]
    Show(ShowArgs),
}

#[derive(clap::Args, Debug)]
pub struct ListArgs {
    /// Where the labs are (every `*.toml` in it).
    #[arg(
        long,
        env = "PROBELAB_LABS_DIR",
        default_value = "labs",
        value_name = "DIR"
    )]
    pub labs_dir: PathBuf,
    /// One JSON object per lab on stdout instead of the table (name, file, title, question,
    /// kind, quick_s, full_s, error).
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// The catalogue as a Markdown table, one row per lab (kind, expected verdict, quick, full,
    /// its `-<variant>` labs with the verdict each expects, question): README's catalogue is
    /// this output, checked by a test.
    #[arg(long)]
    pub markdown: bool,
}

#[derive(clap::Args, Debug)]
pub struct ShowArgs {
    /// The lab: a file path, or the bare name of a lab in --labs-dir.
    #[arg(value_name = "LAB")]
    pub lab: PathBuf,
    /// Where bare lab names are looked up.
    #[arg(
        long,
        env = "PROBELAB_LABS_DIR",
        default_value = "labs",
        value_name = "DIR"
    )]
    pub labs_dir: PathBuf,
    /// The profile to show: `full` (the file as written) or one the file defines (`quick`).
    #[arg(long, default_value = "full")]
    pub profile: String,
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

#[derive(clap::Args, Clone, Debug)]
pub struct RunArgs {
    /// The lab: a file path, or the bare name of a lab in --labs-dir (`startup-degraded` means
    /// `<labs dir>/startup-degraded.toml` when no file of that name exists).
    #[arg(value_name = "LAB")]
    pub lab: PathBuf,
    /// Where bare lab names are looked up.
    #[arg(
        long,
        env = "PROBELAB_LABS_DIR",
        default_value = "labs",
        value_name = "DIR"
    )]
    pub labs_dir: PathBuf,
    /// `local` (localplane started for the run) or `azure`: the environment `labctl deploy`
    /// created (SUBSCRIPTION_ID, RESOURCE_GROUP, LOG_ANALYTICS_WORKSPACE_ID from the environment
    /// or .probelab/azure.json), with the Azure CLI login or a managed identity. Before anything
    /// is deployed the run checks the settings, the identity's token, the environment and jobs,
    /// and that the workspace answers, and says what is missing.
    #[arg(long, value_enum, default_value = "local")]
    pub target: Target,
    /// `full` (the file as written) or `quick` (the same shape in minutes).
    #[arg(long, default_value = "full")]
    pub profile: String,
    /// Where evidence packs go; the run writes `<out>/<lab>-<UTC stamp>/`.
    #[arg(
        long,
        env = "PROBELAB_EVIDENCE_DIR",
        default_value = "evidence",
        value_name = "DIR"
    )]
    pub out: PathBuf,
    /// After the run (whatever its outcome), give everything it created under --out to this
    /// owner: `UID:GID`, or `auto` for the owner of the --out directory (of its nearest existing
    /// parent when it does not exist yet). For runs as root into a host directory, e.g. the lab
    /// container. Changing ownership needs root (CAP_CHOWN).
    #[arg(
        long,
        env = "PROBELAB_EVIDENCE_OWNER",
        value_name = "UID:GID|auto",
        value_parser = parse_owner
    )]
    pub evidence_owner: Option<Owner>,
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
    #[arg(long, default_value = "300s", value_parser = logline::config::parse_duration)]
    pub ready_timeout: Duration,
    #[arg(long, value_enum, default_value = "auto")]
    pub progress: Progress,
    /// Serve a live view while the run goes: report.html of the pack so far, re-rendered and
    /// reloaded every rule window, at http://127.0.0.1:PORT/ (127.0.0.1 only; port 0 picks a
    /// free one; without a value 127.0.0.1:8088). It stops with the run. Give LAB first, or
    /// write `--dashboard=ADDR`, so LAB is not taken for the address.
    #[arg(
        long,
        env = "PROBELAB_DASHBOARD",
        value_name = "127.0.0.1:PORT",
        num_args = 0..=1,
        default_missing_value = super::dashboard::DEFAULT_ADDR,
        value_parser = super::dashboard::parse_addr
    )]
    pub dashboard: Option<std::net::SocketAddr>,
    /// Target azure: pull the logs once no Log Analytics table's row count has grown for this
    /// long (ingestion lags the containers by 20 s to 3 min; e.g. 120s, 2m).
    #[arg(long, env = "PROBELAB_LOGS_SETTLE", default_value = "120s",
        value_parser = logline::config::parse_duration, value_name = "DURATION")]
    pub logs_settle: Duration,
    /// Target azure: the longest wait for the counts to settle; then what has arrived is pulled
    /// and the progress says so.
    #[arg(long, env = "PROBELAB_LOGS_SETTLE_TIMEOUT", default_value = "15m",
        value_parser = logline::config::parse_duration, value_name = "DURATION")]
    pub logs_settle_timeout: Duration,
    /// Multiply every duration of the schedule (for tests; the rule is never scaled).
    #[arg(long, default_value_t = 1.0, hide = true)]
    pub time_scale: f64,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    match args.command {
        LabCommand::Run(a) => run_lab(a),
        LabCommand::List(a) => list(a),
        LabCommand::Show(a) => show(a),
    }
}

/// One catalogue line: the lab's name and what `lab::load` made of its two profiles.
struct Entry {
    name: String,
    file: PathBuf,
    full: Result<lab::Lab, lab::LabError>,
    quick: Option<Result<lab::Lab, lab::LabError>>,
}

impl Entry {
    fn read(file: PathBuf) -> Entry {
        let name = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let full = lab::load(&file, "full");
        let quick = match lab::load(&file, "quick") {
            Err(lab::LabError::UnknownProfile { .. }) => None,
            other => Some(other),
        };
        Entry {
            name,
            file,
            full,
            quick,
        }
    }

    fn error(&self) -> Option<String> {
        let e = self.full.as_ref().err().map(ToString::to_string);
        e.or_else(|| {
            self.quick
                .as_ref()
                .and_then(|q| q.as_ref().err())
                .map(ToString::to_string)
        })
    }
}

fn lab_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let rd = std::fs::read_dir(dir).with_context(|| {
        format!(
            "cannot list the labs in {} (set --labs-dir or PROBELAB_LABS_DIR)",
            dir.display()
        )
    })?;
    let mut files = Vec::new();
    for e in rd {
        let p = e
            .with_context(|| format!("cannot list {}", dir.display()))?
            .path();
        if p.extension().is_some_and(|x| x == "toml") && p.is_file() {
            files.push(p);
        }
    }
    files.sort();
    Ok(files)
}

/// A schedule's length in words; `-` when the profile does not exist.
fn len(l: Option<&Result<lab::Lab, lab::LabError>>) -> String {
    match l {
        None => "-".to_owned(),
        Some(Err(_)) => "invalid".to_owned(),
        Some(Ok(l)) => lab::describe::human(lab::describe::schedule_length(l)),
    }
}

/// The lab `name` is a variant of: the longest other name it starts with, followed by `-`
/// (`blue-green-switch-unready` of `blue-green-switch`); `None` for a lab of its own.
fn variant_of<'a>(name: &str, names: &[&'a str]) -> Option<&'a str> {
    names
        .iter()
        .copied()
        .filter(|n| {
            name.len() > n.len() + 1 && name.starts_with(n) && name.as_bytes()[n.len()] == b'-'
        })
        .max_by_key(|n| n.len())
}

/// The lab at the root of `name`'s variants (`a` for `a-b-c` when `a-b` and `a` exist), or
/// `None` for a lab of its own.
fn root_of<'a>(name: &str, names: &[&'a str]) -> Option<&'a str> {
    let mut root = variant_of(name, names)?;
    while let Some(up) = variant_of(root, names) {
        root = up;
    }
    Some(root)
}

/// The verdict a lab file pre-registers (`expect`), `-` for none or `invalid` for a broken file.
fn expects(e: &Entry) -> &str {
    match &e.full {
        Ok(l) => l.hypothesis.expect.as_deref().unwrap_or("-"),
        Err(_) => "invalid",
    }
}

/// `lab list --markdown`: the catalogue table README holds, one row per lab with its variants
/// (`-<variant>` files, a variant's own variants included: controls and alternative readings)
/// and the verdict each expects in a cell of its own; broken files named on stderr.
fn markdown(entries: &[Entry]) -> anyhow::Result<u8> {
    let mut o = String::from(
        "| lab | kind | expects | quick | full | variants: expect | question |\n\
         |---|---|---|---|---|---|---|\n",
    );
    let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    let mut broken = false;
    for e in entries {
        if let Some(err) = e.error() {
            eprintln!("invalid: {err}");
            broken = true;
        }
        if variant_of(&e.name, &names).is_some() {
            continue;
        }
        let variants: Vec<String> = entries
            .iter()
            .filter(|v| root_of(&v.name, &names) == Some(e.name.as_str()))
            .map(|v| format!("`{}`: {}", &v.name[e.name.len()..], expects(v)))
            .collect();
        let variants = if variants.is_empty() {
            "-".to_owned()
        } else {
            variants.join(", ")
        };
        let (kind, question) = match &e.full {
            Ok(l) => (lab::describe::kind_name(l), l.question.replace('|', "\\|")),
            Err(_) => ("invalid", "(the lab file has errors)".to_owned()),
        };
        let _ = writeln!(
            o,
            "| `{}` | {kind} | {} | {} | {} | {variants} | {question} |",
            e.name,
            expects(e),
            len(e.quick.as_ref()),
            len(Some(&e.full)),
        );
    }
    print_out(&o)?;
    Ok(if broken { exit::ERROR } else { exit::HELD })
}

fn list(a: ListArgs) -> anyhow::Result<u8> {
    let mut entries: Vec<Entry> = lab_files(&a.labs_dir)?
        .into_iter()
        .map(Entry::read)
        .collect();
    // By name, so a control (`<lab>-<variant>`) follows its lab.
    entries.sort_by(|x, y| x.name.cmp(&y.name));
    if entries.is_empty() {
        anyhow::bail!("{} holds no *.toml lab", a.labs_dir.display());
    }
    if a.markdown {
        return markdown(&entries);
    }
    let secs = |l: &Result<lab::Lab, lab::LabError>| {
        l.as_ref()
            .ok()
            .map(|l| lab::describe::schedule_length(l).as_secs())
    };
    let mut broken = Vec::new();
    let mut o = String::new();
    // The name column fits the longest name, so the columns stay aligned.
    let w = entries
        .iter()
        .map(|e| e.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    if !a.json {
        let _ = writeln!(
            o,
            "{:<w$} {:<14} {:>10} {:>10}  QUESTION",
            "NAME", "KIND", "QUICK", "FULL"
        );
    }
    for e in &entries {
        let err = e.error();
        if a.json {
            let ok = e.full.as_ref().ok();
            let line = serde_json::json!({
                "name": e.name,
                "file": e.file.display().to_string(),
                "title": ok.map(|l| l.title.clone()),
                "question": ok.map(|l| l.question.clone()),
                "kind": ok.map(lab::describe::kind_name),
                "quick_s": e.quick.as_ref().and_then(secs),
                "full_s": secs(&e.full),
                "error": err,
            });
            let _ = writeln!(o, "{line}");
        } else {
            let (kind, question) = match &e.full {
                Ok(l) => (lab::describe::kind_name(l), l.question.as_str()),
                Err(_) => ("invalid", "(the lab file has errors: see below)"),
            };
            let _ = writeln!(
                o,
                "{:<w$} {:<14} {:>10} {:>10}  {question}",
                e.name,
                kind,
                len(e.quick.as_ref()),
                len(Some(&e.full)),
            );
        }
        if let Some(err) = err {
            broken.push(err);
        }
    }
    if !a.json && !broken.is_empty() {
        let _ = writeln!(o);
        for b in &broken {
            let _ = writeln!(o, "invalid: {b}");
        }
    }
    print_out(&o)?;
    Ok(if broken.is_empty() {
        exit::HELD
    } else {
        exit::ERROR
    })
}

fn show(a: ShowArgs) -> anyhow::Result<u8> {
    let file = resolve_lab(&a.lab, &a.labs_dir)?;
    let l = lab::load(&file, &a.profile)?;
    print_out(&lab::describe::pre_registration(
        &l,
        &file.display().to_string(),
        &a.profile,
    ))?;
    Ok(exit::HELD)
}

/// Who gets the evidence after the run (`--evidence-owner`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The owner of the --out directory.
    Auto,
    Ids {
        uid: u32,
        gid: u32,
    },
}

fn parse_owner(s: &str) -> Result<Owner, String> {
    if s == "auto" {
        return Ok(Owner::Auto);
    }
    let (u, g) = s
        .split_once(':')
        .ok_or_else(|| format!("'{s}': expected UID:GID (numbers, e.g. 1000:1000) or auto"))?;
    let num = |v: &str, what: &str| {
        v.parse::<u32>()
            .map_err(|_| format!("'{s}': {what} '{v}' is not a number (expected UID:GID or auto)"))
    };
    Ok(Owner::Ids {
        uid: num(u, "UID")?,
        gid: num(g, "GID")?,
    })
}

/// LAB as given when such a file exists; else, for a bare name, `<labs_dir>/<name>.toml`.
/// An unknown name is an error that lists the labs `labs_dir` holds.
pub fn resolve_lab(lab: &Path, labs_dir: &Path) -> anyhow::Result<PathBuf> {
    if lab.is_file() {
        return Ok(lab.to_path_buf());
    }
    let bare = lab.components().count() == 1;
    if !bare {
        anyhow::bail!("lab file {} does not exist", lab.display());
    }
    let name = lab.to_string_lossy();
    let file = if name.ends_with(".toml") {
        labs_dir.join(lab)
    } else {
        labs_dir.join(format!("{name}.toml"))
    };
    if file.is_file() {
        return Ok(file);
    }
    let available = match std::fs::read_dir(labs_dir) {
        Ok(rd) => {
            let mut names: Vec<String> = rd
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "toml") && p.is_file())
                .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .collect();
            names.sort();
            if names.is_empty() {
                format!("{} holds no *.toml lab", labs_dir.display())
            } else {
                format!("labs in {}: {}", labs_dir.display(), names.join(", "))
            }
        }
        Err(e) => format!("cannot list {}: {e}", labs_dir.display()),
    };
    anyhow::bail!(
        "no lab file {} and no lab named '{name}' ({available}); pass a path or set --labs-dir \
         (PROBELAB_LABS_DIR)",
        lab.display()
    )
}

/// Writes `text` to stdout; a reader that went away (`| head`) is not an error.
fn print_out(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("cannot write to stdout")
        }
        _ => Ok(()),
    }
}

/// What exists under `out` before the run, and who will own what the run adds.
struct Handover {
    owner: (u32, u32),
    out_existed: bool,
    before: HashSet<OsString>,
}

impl Handover {
    fn prepare(owner: Owner, out: &Path) -> anyhow::Result<Handover> {
        use std::os::unix::fs::MetadataExt;
        let owner = match owner {
            Owner::Ids { uid, gid } => (uid, gid),
            Owner::Auto => {
                let dir = out
                    .ancestors()
                    .find(|p| p.exists())
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| PathBuf::from("."));
                let m = std::fs::metadata(&dir).with_context(|| {
                    format!("--evidence-owner auto: cannot stat {}", dir.display())
                })?;
                (m.uid(), m.gid())
            }
        };
        let out_existed = out.is_dir();
        let mut before = HashSet::new();
        if out_existed {
            for e in
                std::fs::read_dir(out).with_context(|| format!("cannot list {}", out.display()))?
            {
                before.insert(
                    e.with_context(|| format!("cannot list {}", out.display()))?
                        .file_name(),
                );
            }
        }
        Ok(Handover {
            owner,
            out_existed,
            before,
        })
    }

    /// Changes the owner of every entry the run created under `out` (recursively, symlinks
    /// themselves, never their targets).
    fn apply(&self, out: &Path) -> anyhow::Result<()> {
        if !out.exists() {
            return Ok(());
        }
        if !self.out_existed {
            return chown_tree(out, self.owner);
        }
        for e in std::fs::read_dir(out).with_context(|| format!("cannot list {}", out.display()))? {
            let e = e.with_context(|| format!("cannot list {}", out.display()))?;
            if !self.before.contains(&e.file_name()) {
                chown_tree(&e.path(), self.owner)?;
            }
        }
        Ok(())
    }
}

fn chown_tree(path: &Path, (uid, gid): (u32, u32)) -> anyhow::Result<()> {
    std::os::unix::fs::lchown(path, Some(uid), Some(gid))
        .with_context(|| format!("cannot give {} to {uid}:{gid}", path.display()))?;
    let meta = std::fs::symlink_metadata(path)
        .with_context(|| format!("cannot stat {}", path.display()))?;
    if meta.is_dir() {
        for e in
            std::fs::read_dir(path).with_context(|| format!("cannot list {}", path.display()))?
        {
            let e = e.with_context(|| format!("cannot list {}", path.display()))?;
            chown_tree(&e.path(), (uid, gid))?;
        }
    }
    Ok(())
}

fn run_lab(a: RunArgs) -> anyhow::Result<u8> {
    run_once(a).map(|(code, _)| code)
}

/// Runs the lab once as `lab run` does (the evidence handed over when asked); its exit code and
/// its evidence pack (`None` when the run stopped before it had one).
pub fn run_once(a: RunArgs) -> anyhow::Result<(u8, Option<PathBuf>)> {
    let lab = resolve_lab(&a.lab, &a.labs_dir)?;
    let handover = match a.evidence_owner {
        Some(o) => Some(Handover::prepare(o, &a.out)?),
        None => None,
    };
    let out = a.out.clone();
    let result = run_resolved(a, lab);
    if let Some(h) = handover
        && let Err(e) = h.apply(&out)
    {
        eprintln!("labctl: {e:#}");
        return result.map(|(_, pack)| (exit::ERROR, pack));
    }
    result
}

fn run_resolved(a: RunArgs, lab: PathBuf) -> anyhow::Result<(u8, Option<PathBuf>)> {
    let out_dir = a.out.clone();
    let dashboard = a.dashboard;
    let opts = run_options(a, lab)?;
    let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let stopper = opts.clone();
    rt.block_on(async move {
        // Installed before the run starts: from here on SIGTERM/SIGHUP never kill labctl
        // outright (which would leave every container behind).
        forward_signals(stopper);
        let live = match dashboard {
            Some(addr) => Some(start_dashboard(addr, out_dir).await?),
            None => None,
        };
        let out = runner::run_lab(opts).await;
        if let Some(d) = live {
            d.stop();
        }
        let out = out?;
        let pack = out.pack.clone();
        Ok((report_outcome(out), Some(pack)))
    })
}

/// The runner's options for `lab run` of the resolved lab file `lab`.
fn run_options(a: RunArgs, lab: PathBuf) -> anyhow::Result<RunOptions> {
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
    let mut opts = RunOptions::new(lab, &a.profile, target, a.out);
    opts.ready_timeout = a.ready_timeout;
    opts.start_mode = a.mode;
    opts.time_scale = a.time_scale;
    opts.logs_settle = runner::azure::Settle {
        settle: a.logs_settle,
        timeout: a.logs_settle_timeout,
    };
    opts.progress = match a.progress {
        Progress::Auto => ProgressMode::Auto,
        Progress::Plain => ProgressMode::Plain,
        Progress::Quiet => ProgressMode::Quiet,
    };
    Ok(opts)
}

/// Turns SIGINT/SIGTERM/SIGHUP into a clean stop of the run (a second one also cuts the
/// containers' grace periods short); must be called inside the runtime.
fn forward_signals(stopper: RunOptions) {
    let mut signals = super::signals::Signals::new();
    tokio::spawn(async move {
        let mut seen = 0;
        while let Some(name) = signals.next().await {
            seen += 1;
            if seen == 1 {
                eprintln!(
                    "labctl: {name}: stopping jobs and localplane (containers get their grace \
                     periods), keeping the partial pack; a second signal skips the grace"
                );
                stopper.interrupt(name, false);
            } else {
                eprintln!(
                    "labctl: {name} again: killing the containers without grace (they are \
                     still removed)"
                );
                stopper.interrupt(name, true);
            }
        }
    });
}

/// Starts `--dashboard` on `addr`, serving the pack the run is about to create under `out_dir`.
async fn start_dashboard(
    addr: std::net::SocketAddr,
    out_dir: PathBuf,
) -> anyhow::Result<super::dashboard::Dashboard> {
    let before: HashSet<OsString> = std::fs::read_dir(&out_dir)
        .map(|rd| rd.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    let d = super::dashboard::Dashboard::start(addr, out_dir, before, None).await?;
    eprintln!(
        "dashboard: http://{}/ (the pack so far, reloaded every window; stops with the run)",
        d.addr()
    );
    Ok(d)
}

/// Prints how the run ended (an early stop, the summary, lost log rows) and returns its exit
/// code: the verdict's, or an error.
fn report_outcome(out: runner::RunOutcome) -> u8 {
    eprintln!("wall time: {:.0} s", out.wall.as_secs_f64());
    if let Some(e) = out.error {
        eprintln!(
            "labctl: the run stopped early: {e}\npartial evidence (runs.json incomplete): {}\n\
             analyse what there is with: labctl analyze {}",
            out.pack.display(),
            out.pack.display()
        );
        return exit::ERROR;
    }
    let Some(an) = out.analysis else {
        return exit::ERROR;
    };
    super::analyze::print_summary(&an, &out.pack);
    if !out.record.log_write_failures.is_empty() {
        for f in &out.record.log_write_failures {
            eprintln!(
                "labctl: error: log rows lost: {}: {} (from {}; {} rows); recorded in \
                 runs.json log_write_failures, the pack is incomplete",
                out.pack.join(&f.file).display(),
                f.error,
                f.first_failed_ts,
                f.rows_lost
            );
        }
        return exit::ERROR;
    }
    match an.verdict.verdict {
        analysis::Outcome::Held => exit::HELD,
        analysis::Outcome::Falsified => exit::FALSIFIED,
        analysis::Outcome::Invalid => exit::INVALID,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_variant_belongs_to_the_longest_lab_name_it_extends() {
        let names = [
            "canary-split",
            "canary",
            "rollout",
            "rollout-under-autoscale",
        ];
        assert_eq!(
            variant_of("canary-split-half", &names),
            Some("canary-split")
        );
        assert_eq!(
            variant_of("rollout-under-autoscale-min-3", &names),
            Some("rollout-under-autoscale")
        );
        // Only a whole name followed by `-` makes a variant; a lab is not its own.
        assert_eq!(variant_of("canary-split", &names), Some("canary"));
        assert_eq!(variant_of("canaryx", &names), None);
        assert_eq!(variant_of("rollout", &names), None);
        assert_eq!(variant_of("rollout-", &names), None);
        // A variant of a variant belongs to the lab at the root.
        assert_eq!(
            root_of("canary-split-half", &names),
            Some("canary"),
            "canary-split is itself a variant of canary"
        );
        assert_eq!(root_of("canary", &names), None);
    }

    fn labs_dir() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for n in [
            "worker-saturation.toml",
            "startup-degraded.toml",
            "notes.md",
        ] {
            std::fs::write(d.path().join(n), "").unwrap();
        }
        d
    }

    #[test]
    fn a_bare_name_is_a_lab_in_the_labs_dir() {
        let d = labs_dir();
        let got = resolve_lab(Path::new("startup-degraded"), d.path()).unwrap();
        assert_eq!(got, d.path().join("startup-degraded.toml"));
        let got = resolve_lab(Path::new("worker-saturation.toml"), d.path()).unwrap();
        assert_eq!(got, d.path().join("worker-saturation.toml"));
    }

    #[test]
    fn an_existing_path_wins_over_the_labs_dir() {
        let d = labs_dir();
        let own = tempfile::tempdir().unwrap();
        let file = own.path().join("mine.toml");
        std::fs::write(&file, "").unwrap();
        assert_eq!(resolve_lab(&file, d.path()).unwrap(), file);
    }

    #[test]
    fn an_unknown_name_lists_the_available_labs() {
        let d = labs_dir();
        let e = resolve_lab(Path::new("startup-degradd"), d.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("no lab named 'startup-degradd'"), "{e}");
        assert!(e.contains("startup-degraded, worker-saturation"), "{e}");
        assert!(!e.contains("notes"), "{e}");
    }

    #[test]
    fn a_missing_path_is_not_looked_up_by_name() {
        let d = labs_dir();
        let e = resolve_lab(Path::new("elsewhere/startup-degraded.toml"), d.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not exist"), "{e}");
    }

    #[test]
    fn owner_is_uid_gid_or_auto() {
        assert_eq!(parse_owner("auto"), Ok(Owner::Auto));
        assert_eq!(
            parse_owner("1000:1001"),
            Ok(Owner::Ids {
                uid: 1000,
                gid: 1001
            })
        );
        assert!(parse_owner("1000").unwrap_err().contains("UID:GID"));
        assert!(parse_owner("me:1000").unwrap_err().contains("'me'"));
        assert!(parse_owner("1000:").is_err());
    }

    #[test]
    fn handover_changes_only_what_the_run_created() {
        use std::os::unix::fs::MetadataExt;
        let out = tempfile::tempdir().unwrap();
        std::fs::write(out.path().join("old"), "").unwrap();
        let me = std::fs::metadata(out.path()).unwrap();
        let h = Handover::prepare(Owner::Auto, out.path()).unwrap();
        assert_eq!(h.owner, (me.uid(), me.gid()));
        std::fs::create_dir_all(out.path().join("pack/logs")).unwrap();
        std::fs::write(out.path().join("pack/logs/x.ndjson"), "{}").unwrap();
        std::os::unix::fs::symlink("/nonexistent", out.path().join("pack/link")).unwrap();
        // Giving files to ourselves needs no privilege, so this runs as any user.
        h.apply(out.path()).unwrap();
        let m = std::fs::metadata(out.path().join("pack/logs/x.ndjson")).unwrap();
        assert_eq!((m.uid(), m.gid()), (me.uid(), me.gid()));
        if me.uid() == 0 {
            // As root, check a real change: new entries move, the old file stays.
            let h = Handover {
                owner: (4242, 4343),
                out_existed: true,
                before: ["old".into()].into_iter().collect(),
            };
            h.apply(out.path()).unwrap();
            for p in ["pack", "pack/logs", "pack/logs/x.ndjson"] {
                let m = std::fs::metadata(out.path().join(p)).unwrap();
                assert_eq!((m.uid(), m.gid()), (4242, 4343), "{p}");
            }
            let l = std::fs::symlink_metadata(out.path().join("pack/link")).unwrap();
            assert_eq!(l.uid(), 4242);
            assert_eq!(std::fs::metadata(out.path().join("old")).unwrap().uid(), 0);
        }
    }
}
