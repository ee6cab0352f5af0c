//! `labctl trigger`: drive one phase by hand against apps and jobs that already exist, with the
//! original trigger.sh's flags: `--preflight`, `--baseline --duration S`, `--perturbation
//! --events N --interval S` (rollouts), `--supplemental-restart --events N --interval S`
//! (revision restarts); `--app`, `--loadgen-job`, `--sampler-job`, `--rps`.
//!
//! The runs and actions are recorded in `<out>/trigger-<phase>-<UTC stamp>/runs.json`.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use chrono::Utc;
use runner::actions::Actor;
use runner::pack::{RunsRecord, iso, stamp};
use runner::progress::{Progress, ProgressMode};
use runner::run::{RunOptions, TargetChoice};
use runner::target::{Addressing, Target};

use crate::exit;

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("phase").required(true).args(["preflight", "baseline", "perturbation", "supplemental_restart"])))]
pub struct Args {
    /// Staircase preflight (100, 200, 400 RPS, 60 s each, 90 s pauses).
    #[arg(long)]
    pub preflight: bool,
    /// Baseline load for --duration.
    #[arg(long)]
    pub baseline: bool,
    /// --events rollouts (ROLLOUT_GENERATION) every --interval, under load, with the sampler.
    #[arg(long)]
    pub perturbation: bool,
    /// --events revision restarts every --interval, under load, with the sampler.
    #[arg(long)]
    pub supplemental_restart: bool,
    /// Baseline length (seconds or a duration).
    #[arg(long, default_value = "300")]
    pub duration: String,
    #[arg(long)]
    pub events: Option<u32>,
    /// Seconds (or a duration) between events.
    #[arg(long)]
    pub interval: Option<String>,
    /// Time from the load's start to the first event.
    #[arg(long, default_value = "30s")]
    pub offset: String,
    #[arg(long, default_value = "subject")]
    pub app: String,
    #[arg(long, default_value = "probelab-loadgen")]
    pub loadgen_job: String,
    #[arg(long, default_value = "probelab-perturbation-sampler")]
    pub sampler_job: String,
    #[arg(long, default_value_t = 200.0)]
    pub rps: f64,
    /// close (a new connection per request, as the original) or keep-alive.
    #[arg(long, default_value = "close")]
    pub connection: String,
    /// Use the localplane `labctl local up` runs instead of Azure.
    #[arg(long)]
    pub local: bool,
    #[arg(long, default_value = ".localplane", value_name = "DIR")]
    pub state_dir: PathBuf,
    #[arg(long, default_value = "evidence", value_name = "DIR")]
    pub out: PathBuf,
}

fn secs(s: &str) -> anyhow::Result<String> {
    let d = logline::config::parse_duration(s)?;
    Ok(format!("{}s", d.as_secs().max(1)))
}

/// The one-step lab a trigger runs.
pub fn trigger_lab(a: &Args) -> anyhow::Result<lab::Lab> {
    let (name, duration, action, events, interval, staircase) = if a.preflight {
        (
            "preflight",
            None,
            None,
            None,
            None,
            vec![100.0, 200.0, 400.0],
        )
    } else if a.baseline {
        (
            "baseline",
            Some(secs(&a.duration)?),
            None,
            None,
            None,
            vec![],
        )
    } else if a.perturbation {
        (
            "perturbation",
            None,
            Some(lab::Action::Rollout { app: a.app.clone() }),
            Some(a.events.unwrap_or(12)),
            Some(secs(a.interval.as_deref().unwrap_or("600"))?),
            vec![],
        )
    } else {
        (
            "supplemental-restart",
            None,
            Some(lab::Action::Restart { app: a.app.clone() }),
            Some(a.events.unwrap_or(3)),
            Some(secs(a.interval.as_deref().unwrap_or("480"))?),
            vec![],
        )
    };
    let text = format!(
        r#"
title = "trigger {name}"
question = "manual trigger"
kind = "falsification"
[hypothesis]
text = "manual trigger"
# Never judged here (`labctl analyze` judges the logs); the original lab's rule, so the lab
# validates.
[rule]
window = "10s"
consecutive = 3
threshold_pct = 0.5
[[apps]]
name = "{app}"
image = "probelab/subject:dev"
[[load]]
name = "main"
target = "{app}"
rate = {rps}
connection = "{conn}"
[[steps]]
name = "{name}"
phase = "{name}"
duration = "1s"
"#,
        app = a.app,
        rps = a.rps,
        conn = a.connection,
    );
    let mut lab = lab::parse(&text, "trigger".as_ref(), "full")?;
    let step = &mut lab.steps[0];
    step.duration = duration;
    step.action = action;
    step.events = events;
    step.interval = interval;
    step.offset = step.action.as_ref().map(|_| a.offset.clone());
    if !staircase.is_empty() {
        step.staircase = staircase;
        step.staircase_step = Some("60s".into());
        step.staircase_pause = Some("90s".into());
    }
    Ok(lab)
}

pub fn run(a: Args) -> anyhow::Result<u8> {
    let lab = trigger_lab(&a)?;
    let phase = lab.steps[0].phase.clone();
    let now = Utc::now();
    let pack = a.out.join(format!("trigger-{phase}-{}", stamp(now)));
    std::fs::create_dir_all(&pack).with_context(|| format!("creating {}", pack.display()))?;
    let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    rt.block_on(async move {
        let mut target = if a.local {
            let s = runner::local::read(&a.state_dir)?
                .with_context(|| format!("no localplane recorded in {}", a.state_dir.display()))?;
            Target::local(&s.base_url, Addressing::ByName)?
        } else {
            Target::azure(&|k| std::env::var(k).ok())?
        };
        target.loadgen_job = a.loadgen_job.clone();
        target.sampler_job = a.sampler_job.clone();
        let target = Arc::new(target);
        let mut opts = RunOptions::new(
            PathBuf::from("trigger"),
            "full",
            TargetChoice::Azure,
            a.out.clone(),
        );
        let cancel = opts.cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        });
        opts.progress = ProgressMode::Auto;
        let mut record = RunsRecord {
            lab: format!("trigger-{phase}"),
            profile: "full".into(),
            target: target.kind.as_str().into(),
            started: iso(now),
            incomplete: true,
            time_scale: 1.0,
            ..Default::default()
        };
        record.write(&pack)?;
        let actor = Arc::new(Actor::new(target.clone(), None, 1.0)?);
        let mut progress = Progress::new(opts.progress);
        let r = runner::run::run_steps(
            &lab,
            &target,
            &actor,
            &opts,
            &mut progress,
            &pack,
            &mut record,
        )
        .await;
        record.ended = Some(iso(Utc::now()));
        record.incomplete = r.is_err();
        if let Err(e) = &r {
            record.stopped_by = Some(e.to_string());
        }
        record.write(&pack)?;
        println!("runs: {}", pack.join("runs.json").display());
        r?;
        Ok(exit::HELD)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::time::Duration;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: Args,
    }

    #[test]
    fn the_original_flags_make_one_step() {
        let t = T::parse_from(["t", "--perturbation", "--events", "2", "--interval", "60"]);
        let lab = trigger_lab(&t.a).unwrap();
        let s = &lab.steps[0];
        assert_eq!(s.phase, "perturbation");
        assert_eq!(s.events, Some(2));
        assert_eq!(s.load_duration(), Duration::from_secs(150));
        let t = T::parse_from(["t", "--baseline", "--duration", "60", "--rps", "50"]);
        let lab = trigger_lab(&t.a).unwrap();
        assert_eq!(lab.steps[0].load_duration(), Duration::from_secs(60));
        assert_eq!(lab.load[0].rate, Some(50.0));
        assert!(T::try_parse_from(["t"]).is_err(), "a phase is required");
    }
}
