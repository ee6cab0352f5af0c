//! `lab run`: the whole experiment, from the pre-registration copy to the verdict. The steps
//! of a deployed run are [`steps`].

mod steps;

pub use steps::run_steps;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use lab::Lab;
use localplane::{LocalplaneConfig, RuntimeKind};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::RunError;
use crate::actions::Actor;
use crate::deploy;
use crate::jobs::{self, StartMode};
use crate::pack::{self, RunsRecord, iso};
use crate::progress::{Progress, ProgressMode};
use crate::schedule::step_duration;
use crate::target::{Addressing, Target, TargetKind};

/// Where the lab runs.
#[derive(Clone, Debug)]
pub enum TargetChoice {
    /// localplane, started in-process for the run.
    Local(LocalRuntime),
    /// Azure (or any ARM endpoint, see [`Target::azure`]).
    Azure,
}

#[derive(Clone, Debug)]
pub enum LocalRuntime {
    Docker,
    /// Child processes; `bin_dir` holds the workspace binaries.
    Process {
        bin_dir: PathBuf,
    },
}

/// Everything `lab run` takes.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub lab: PathBuf,
    pub profile: String,
    pub target: TargetChoice,
    /// The evidence root; the pack is `<out>/<lab>-<stamp>/`.
    pub out: PathBuf,
    /// Multiplies every duration of the schedule (tests only; 1 = the profile's numbers). The
    /// rule is never scaled.
    pub time_scale: f64,
    pub progress: ProgressMode,
    /// How long every app may take to get its first revision ready.
    pub ready_timeout: Duration,
    pub start_mode: StartMode,
    pub lock_dir: PathBuf,
    /// Ctrl-C / SIGTERM / SIGHUP: stop jobs, shut localplane down, keep the partial pack.
    pub cancel: CancellationToken,
    /// A second signal: cut the containers' grace periods short (they are still removed).
    pub hurry: CancellationToken,
    /// What interrupted the run (e.g. `SIGTERM`), for `runs.json`'s `stopped_by`.
    pub interrupted_by: Arc<std::sync::Mutex<Option<String>>>,
    /// Azure: how long the Log Analytics row counts must stay unchanged before the logs are
    /// pulled, and the longest wait for that.
    pub logs_settle: crate::azure::Settle,
}

impl RunOptions {
    pub fn new(lab: PathBuf, profile: &str, target: TargetChoice, out: PathBuf) -> RunOptions {
        RunOptions {
            lab,
            profile: profile.to_owned(),
            target,
            out,
            time_scale: 1.0,
            progress: ProgressMode::Auto,
            ready_timeout: Duration::from_secs(300),
            start_mode: StartMode::UpdateThenStart,
            lock_dir: jobs::default_lock_dir(),
            cancel: CancellationToken::new(),
            hurry: CancellationToken::new(),
            interrupted_by: Arc::default(),
            logs_settle: crate::azure::Settle::default(),
        }
    }

    /// Records what interrupted the run and cancels it (`second`: also cuts the grace short).
    pub fn interrupt(&self, by: &str, second: bool) {
        if let Ok(mut g) = self.interrupted_by.lock()
            && g.is_none()
        {
            *g = Some(by.to_owned());
        }
        self.cancel.cancel();
        if second {
            self.hurry.cancel();
        }
    }

    fn stopped_by_interrupt(&self) -> String {
        let by = self
            .interrupted_by
            .lock()
            .ok()
            .and_then(|g| g.clone())
            .unwrap_or_else(|| "Ctrl-C".to_owned());
        format!("interrupted ({by})")
    }
}

/// What a run left.
pub struct RunOutcome {
    pub pack: PathBuf,
    pub record: RunsRecord,
    /// The analysis, when the run completed.
    pub analysis: Option<analysis::Analysis>,
    /// What stopped the run early (the pack is kept, `incomplete` in runs.json).
    pub error: Option<RunError>,
    pub wall: Duration,
}

/// Runs a lab. Errors before the pack exists are returned as `Err`; later ones end up in
/// [`RunOutcome::error`] with the partial pack kept.
pub async fn run_lab(opts: RunOptions) -> Result<RunOutcome, RunError> {
    let t0 = Instant::now();
    let lab = lab::load(&opts.lab, &opts.profile)?;
    if matches!(opts.target, TargetChoice::Azure) {
        let steps = lab.localplane_only_steps();
        if !steps.is_empty() {
            return Err(RunError::Config(format!(
                "this lab cannot run on Azure: step(s) {} start a platform maintenance, which \
                 Container Apps starts itself and offers no API for; run it on localplane \
                 (--target local)",
                steps.join(", ")
            )));
        }
    }
    // Azure: what is missing is said before a pack exists or anything is deployed.
    let azure = match opts.target {
        TargetChoice::Azure => Some(
            crate::azure::prepare(&|k| std::env::var(k).ok(), opts.logs_settle, PathBuf::new())
                .await?,
        ),
        TargetChoice::Local(_) => None,
    };
    let started = Utc::now();
    let pack = pack::create(&opts.out, &opts.lab, &opts.profile, started)?;
    let mut record = RunsRecord {
        lab: pack::lab_name(&opts.lab),
        profile: opts.profile.clone(),
        target: match opts.target {
            TargetChoice::Local(_) => "local".into(),
            TargetChoice::Azure => "azure".into(),
        },
        started: iso(started),
        ended: None,
        incomplete: true,
        stopped_by: None,
        time_scale: opts.time_scale,
        localplane_timings: match opts.target {
            TargetChoice::Local(_) => Some(lab.localplane_timings.as_str().to_owned()),
            TargetChoice::Azure => None,
        },
        localplane_knobs: match opts.target {
            TargetChoice::Local(_) => Some(
                lab.apps
                    .iter()
                    .map(|a| (a.name.clone(), a.localplane_tags()))
                    .collect(),
            ),
            TargetChoice::Azure => None,
        },
        steps: Vec::new(),
        log_write_failures: Vec::new(),
    };
    record.write(&pack)?;
    let mut progress = Progress::new(opts.progress);
    progress.line(&format!("evidence pack: {}", pack.display()));
    let result = run_target(&lab, &pack, &mut record, &opts, &mut progress, azure).await;
    record.ended = Some(iso(Utc::now()));
    let error = match result {
        Ok(()) => {
            // Lost log rows keep the run incomplete (the analysis still runs and judges it).
            record.incomplete = !record.log_write_failures.is_empty();
            None
        }
        Err(e) => {
            record.stopped_by = Some(match &e {
                RunError::Interrupted => opts.stopped_by_interrupt(),
                e => e.to_string(),
            });
            Some(e)
        }
    };
    record.write(&pack)?;
    let analysis = if error.is_none() {
        progress.line("analysing the evidence");
        Some(analyze(&pack).await?)
    } else {
        None
    };
    Ok(RunOutcome {
        pack,
        record,
        analysis,
        error,
        wall: t0.elapsed(),
    })
}

/// Runs the analysis on a pack and writes its outputs (tables, verdict, report, manifest).
pub async fn analyze(pack: &Path) -> Result<analysis::Analysis, RunError> {
    let pack = pack.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let opts = analysis::Options {
            rule: analysis::Rule::default(),
            lab: analysis::find_lab(None, Some(&pack)),
        };
        let a = analysis::analyze(std::slice::from_ref(&pack), &opts)?;
        analysis::render::pack::write(&a, &pack, analysis::render::pack::Parts::All)?;
        Ok::<_, RunError>(a)
    })
    .await
    .map_err(|e| RunError::Config(format!("analysis task failed: {e}")))?
}

async fn cancellable<T>(
    cancel: &CancellationToken,
    f: impl std::future::Future<Output = Result<T, RunError>>,
) -> Result<T, RunError> {
    tokio::select! {
        r = f => r,
        _ = cancel.cancelled() => Err(RunError::Interrupted),
    }
}

async fn run_target(
    lab: &Lab,
    pack: &Path,
    record: &mut RunsRecord,
    opts: &RunOptions,
    progress: &mut Progress,
    azure: Option<crate::azure::AzureRun>,
) -> Result<(), RunError> {
    match &opts.target {
        TargetChoice::Local(rt) => {
            let (runtime, addressing) = match rt {
                LocalRuntime::Docker => {
                    deploy::check_docker_images(&deploy::images(lab))?;
                    (RuntimeKind::Docker, Addressing::ByName)
                }
                LocalRuntime::Process { bin_dir } => (
                    RuntimeKind::Process {
                        bin_dir: bin_dir.clone(),
                    },
                    Addressing::ByFqdn,
                ),
            };
            let state_dir = std::env::temp_dir().join(format!(
                "probelab-localplane-{}-{}",
                std::process::id(),
                pack.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            ));
            if matches!(runtime, RuntimeKind::Docker) {
                sweep_orphans(progress).await;
            }
            let lp = localplane::start(LocalplaneConfig {
                max_replicas: localplane::quota::DEFAULT_MAX_REPLICAS,
                tls: false,
                listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
                state_dir: state_dir.clone(),
                evidence_dir: pack.to_path_buf(),
                runtime,
            })
            .await?;
            let failures = lp.log_write_failures();
            let _hurry = forward_hurry(&opts.hurry, lp.hurry_handle());
            progress.line(&format!("localplane: ARM API at {}", lp.base_url()));
            progress.line(&format!(
                "localplane timings: {}",
                lab.localplane_timings.meaning()
            ));
            let result = match Target::local(&lp.base_url(), addressing) {
                Ok(t) => orchestrate(lab, pack, record, opts, progress, Arc::new(t)).await,
                Err(e) => Err(e),
            };
            progress.line("stopping localplane (containers get their grace periods)");
            let down = lp.shutdown().await;
            let _ = std::fs::remove_dir_all(&state_dir);
            record_log_failures(record, &failures, pack, progress);
            result?;
            down?;
            Ok(())
        }
        TargetChoice::Azure => {
            let Some(mut azure) = azure else {
                return Err(RunError::Config(
                    "target azure was not prepared (the checks did not run)".into(),
                ));
            };
            let t = Arc::new(azure.target);
            // Rows are selected by when they were printed: from a little before the first call.
            azure.pull.since = Utc::now() - chrono::Duration::minutes(5);
            azure.pull.out = pack.join("logs");
            orchestrate(lab, pack, record, opts, progress, t).await?;
            progress.line(&format!(
                "pulling logs from Log Analytics workspace {} (ingestion lags the containers; \
                 waiting until the row counts settle)",
                azure.pull.workspace
            ));
            let n = cancellable(&opts.cancel, crate::logs::pull(&azure.pull)).await?;
            progress.line(&format!("{n} log rows written"));
            Ok(())
        }
    }
}

async fn orchestrate(
    lab: &Lab,
    pack: &Path,
    record: &mut RunsRecord,
    opts: &RunOptions,
    progress: &mut Progress,
    t: Arc<Target>,
) -> Result<(), RunError> {
    let cancel = &opts.cancel;
    let scale = opts.time_scale;
    let longest = lab
        .steps
        .iter()
        .map(|s| step_duration(s, scale))
        .max()
        .unwrap_or_default();
    let location = if t.kind == TargetKind::Local {
        progress.line("deploying the environment and jobs");
        cancellable(
            cancel,
            deploy::local_infrastructure(&t, longest + Duration::from_secs(600)),
        )
        .await?;
        "local".to_owned()
    } else {
        let env = cancellable(
            cancel,
            t.get(
                "get_environment",
                &t.resource_path("managedEnvironments", &t.env_name),
            ),
        )
        .await?;
        env.get("location")
            .and_then(|l| l.as_str())
            .unwrap_or("swedencentral")
            .to_owned()
    };
    let token = random_token();
    let names: Vec<String> = lab.apps.iter().map(|a| a.name.clone()).collect();
    if !names.is_empty() {
        progress.line(&format!("deploying apps: {}", names.join(", ")));
    }
    cancellable(
        cancel,
        deploy::apps(&t, lab, &record.lab, Some(&token), &location),
    )
    .await?;
    let awaited = deploy::awaited_apps(lab);
    cancellable(cancel, deploy::wait_ready(&t, &awaited, opts.ready_timeout)).await?;
    cancellable(cancel, deploy::wait_serving(&t, lab, opts.ready_timeout)).await?;
    if names.is_empty() {
        progress.line("no app to deploy: the lab's jobs are under test");
    } else if awaited.len() == names.len() {
        progress.line("every app is ready and every load target serves");
    } else {
        let not: Vec<&str> = names
            .iter()
            .filter(|n| !awaited.contains(n))
            .map(String::as_str)
            .collect();
        progress.line(&format!(
            "not waited for (wait_ready = false; the steps start while they start): {}; every \
             other app is ready and every load target of those serves",
            not.join(", ")
        ));
    }
    if !lab.jobs.is_empty() {
        let jobs: Vec<&str> = lab.jobs.iter().map(|j| j.name.as_str()).collect();
        progress.line(&format!("deploying jobs under test: {}", jobs.join(", ")));
        cancellable(cancel, deploy::jobs(&t, lab, &record.lab, &location)).await?;
    }
    let actor = Arc::new(Actor::new(t.clone(), Some(token), scale)?);
    run_steps(lab, &t, &actor, opts, progress, pack, record).await
}

/// Removes what a SIGKILLed earlier run left (containers and networks whose owning process is
/// gone, from any state dir).
async fn sweep_orphans(progress: &mut Progress) {
    let (c, n) = localplane::runtime::docker::sweep_dead_owners().await;
    if c + n > 0 {
        progress.line(&format!(
            "removed {c} container(s) and {n} network(s) left by a probelab process that is gone"
        ));
    }
}

/// Cuts localplane's grace periods short when `hurry` fires (a second signal). The returned
/// guard ends the forwarding task when dropped.
fn forward_hurry(
    hurry: &CancellationToken,
    lp_hurry: CancellationToken,
) -> tokio_util::sync::DropGuard {
    let done = CancellationToken::new();
    let (h, d) = (hurry.clone(), done.clone());
    tokio::spawn(async move {
        tokio::select! {
            _ = h.cancelled() => lp_hurry.cancel(),
            _ = d.cancelled() => {}
        }
    });
    done.drop_guard()
}

/// Copies the log sink's write failures into `runs.json`'s `log_write_failures` and says so.
fn record_log_failures(
    record: &mut RunsRecord,
    failures: &localplane::logsink::Failures,
    pack: &Path,
    progress: &mut Progress,
) {
    for f in failures.snapshot() {
        let f = pack::log_write_failure(&f, pack);
        progress.line(&format!(
            "error: log rows lost: {}: {} (from {}; {} rows)",
            f.file, f.error, f.first_failed_ts, f.rows_lost
        ));
        record.log_write_failures.push(f);
    }
}

fn random_token() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..32)
        .map(|_| char::from(b"0123456789abcdef"[rng.random_range(0..16)]))
        .collect()
}
