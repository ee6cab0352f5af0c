//! runner: runs a lab end to end, on the local emulator or on Azure, through one ARM code path.
//!
//! `labctl lab run` is a thin shell over [`run::run_lab`]:
//!
//! 1. [`pack`]: the evidence pack `evidence/<lab>-<UTC yyyymmddTHHMMSSZ>/` is created and the lab
//!    file copied in as `lab.toml` (with the profile recorded) before anything starts;
//! 2. [`target`]: the target (localplane started in-process with the pack as its evidence
//!    directory, or Azure from `SUBSCRIPTION_ID`/`RESOURCE_GROUP`) behind one [`target::Target`]
//!    that speaks ARM; [`deploy`] PUTs the environment, jobs and apps and waits until every app's
//!    latest revision is ready;
//! 3. the steps, in order ([`run`]): loadgen jobs started with [`jobs`] (update-then-start under a
//!    per-job lock file, or a start with an execution template override), a perturbation-sampler
//!    job for steps with an action, and the action fired on [`schedule`] by [`actions`]; every
//!    run and action is recorded in `runs.json` ([`pack::RunsRecord`]);
//! 4. logs: localplane's sink already wrote `logs/*.ndjson`; on Azure [`logs`] pulls the same
//!    tables from Log Analytics;
//! 5. the analysis (the `analysis` crate) writes tables, verdict, report and the manifest, which
//!    [`verify`] checks later.
//!
//! [`progress`] reports to stderr (bars on a terminal, plain lines otherwise); [`local`] keeps a
//! foreground localplane findable for `labctl local status|down`.

pub mod actions;
pub mod azure;
pub mod deploy;
pub mod error;
pub mod jobs;
pub mod loadgen;
pub mod local;
pub mod logs;
pub mod pack;
pub mod progress;
pub mod run;
pub mod schedule;
pub mod scrub;
pub mod target;
pub mod verify;

pub use error::RunError;
pub use run::{RunOptions, RunOutcome, TargetChoice, run_lab};
