//! `labctl campaign run LAB --runs N`: run a lab N times, one after the other, then judge the
//! runs as one campaign; `labctl campaign report PACK...`: judge existing evidence packs of one
//! lab. The campaign rule is the lab's `[campaign]` table (pre-registered); the report
//! (`campaign.json`, `campaign.md` under `<out>/campaign-<lab>-<UTC stamp>/`) lists every run's
//! verdict, pools the valid runs' events with exact 95 % bounds, and its verdict is the exit
//! code (0 held, 3 falsified, 4 invalid, 1 error).

use std::path::{Path, PathBuf};

use analysis::campaign::{self, Campaign};
use analysis::{Options, Outcome, Rule};
use anyhow::{Context, bail};

use super::lab::{RunArgs as LabRunArgs, resolve_lab, run_once};
use crate::exit;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: CampaignCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum CampaignCommand {
    /// Run a lab several times, one after the other, then judge the runs together.
    #[command(
        long_about = "Run a lab N times, one after the other (each exactly as `lab run` runs \
        it, into its own evidence pack), then judge the runs as one campaign by the lab's \
        pre-registered [campaign] table: falsified when at least `falsified_runs` valid runs are \
        falsified, invalid when fewer than `min_valid_runs` (default: all) are valid. Every run \
        is listed; an invalid one is never dropped.\n\n\
        The campaign report pools every event of the valid runs (transition, errors, worst \
        window, whether a burst the rule sees overlapped it) with exact (Clopper-Pearson) 95 % \
        bounds: on the share of events with a burst and on the pooled error rate.\n\n\
        A run that stops with an error stops the campaign; the packs so far are named, and \
        `labctl campaign report` judges them.\n\n\
        Example (the original lab's 12 rollouts are 4 quick runs):\n  \
        labctl campaign run startup-degraded --profile quick --runs 4"
    )]
    Run(CampaignRunArgs),
    /// Judge existing evidence packs of one lab as one campaign.
    #[command(
        long_about = "Judge existing evidence packs of one lab (as `labctl lab run` wrote \
        them) as one campaign, by the [campaign] table of the first pack's lab.toml. Packs of \
        another lab or rule are refused. Writes campaign.json and campaign.md into --out.\n\n\
        Example:\n  labctl campaign report evidence/startup-degraded-2026*"
    )]
    Report(ReportArgs),
}

#[derive(clap::Args, Debug)]
pub struct CampaignRunArgs {
    /// How many runs [default: the lab's `[campaign] runs`, 4 when it has none].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: Option<u32>,
    #[command(flatten)]
    pub lab: LabRunArgs,
}

#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// The evidence packs, in run order.
    #[arg(value_name = "PACK", required = true, num_args = 1..)]
    pub packs: Vec<PathBuf>,
    /// Where campaign.json and campaign.md go [default: evidence/campaign-<lab>-<UTC stamp>].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    match args.command {
        CampaignCommand::Run(a) => run_campaign(a),
        CampaignCommand::Report(a) => {
            let out = match a.out {
                Some(o) => o,
                None => default_dir(Path::new("evidence"), &a.packs)?,
            };
            judge_and_write(&a.packs, &out)
        }
    }
}

fn run_campaign(a: CampaignRunArgs) -> anyhow::Result<u8> {
    let file = resolve_lab(&a.lab.lab, &a.lab.labs_dir)?;
    let lab = lab::load(&file, &a.lab.profile)?;
    let n = a.runs.unwrap_or(lab.campaign.runs);
    eprintln!(
        "campaign: {n} run(s) of {} (profile {}); {}",
        file.display(),
        a.lab.profile,
        lab.campaign.describe()
    );
    let mut packs = Vec::new();
    for i in 1..=n {
        eprintln!("campaign: run {i}/{n}");
        let (code, pack) = run_once(a.lab.clone())?;
        let Some(pack) = pack else {
            bail!(
                "run {i}/{n} stopped before it had an evidence pack; the campaign stops{}",
                so_far(&packs)
            );
        };
        if code == exit::ERROR {
            bail!(
                "run {i}/{n} stopped with an error (its pack {}); the campaign stops{}",
                pack.display(),
                so_far(&packs)
            );
        }
        packs.push(pack);
    }
    let out = default_dir(&a.lab.out, &packs)?;
    judge_and_write(&packs, &out)
}

/// ", judge the packs so far with: labctl campaign report ...", or nothing without packs.
fn so_far(packs: &[PathBuf]) -> String {
    if packs.is_empty() {
        return String::new();
    }
    let names: Vec<String> = packs.iter().map(|p| p.display().to_string()).collect();
    format!(
        "; judge the packs so far with: labctl campaign report {}",
        names.join(" ")
    )
}

/// `<out>/campaign-<lab>-<UTC stamp>`.
fn default_dir(out: &Path, packs: &[PathBuf]) -> anyhow::Result<PathBuf> {
    let first = packs.first().context("no evidence pack given")?;
    let lab = campaign::lab_name(&campaign::pack_name(first));
    Ok(out.join(format!(
        "campaign-{lab}-{}",
        runner::pack::stamp(chrono::Utc::now())
    )))
}

/// Analyses every pack, judges them as one campaign, writes the report into `out` and prints
/// its summary; the campaign verdict's exit code.
fn judge_and_write(packs: &[PathBuf], out: &Path) -> anyhow::Result<u8> {
    let mut analysed = Vec::new();
    for p in packs {
        if !p.is_dir() {
            bail!("{} is not an evidence pack directory", p.display());
        }
        let opts = Options {
            rule: Rule::default(),
            lab: analysis::find_lab(None, Some(p)),
        };
        let a = analysis::analyze(std::slice::from_ref(p), &opts)
            .with_context(|| format!("analysing {}", p.display()))?;
        analysed.push((p.clone(), a));
    }
    let c = campaign::judge(&analysed)?;
    c.write(out)
        .with_context(|| format!("writing the campaign report to {}", out.display()))?;
    print_summary(&c, out);
    Ok(match c.verdict {
        Outcome::Held => exit::HELD,
        Outcome::Falsified => exit::FALSIFIED,
        Outcome::Invalid => exit::INVALID,
    })
}

fn print_summary(c: &Campaign, out: &Path) {
    println!("campaign verdict: {}", c.verdict.as_str());
    println!("campaign rule: {}", c.campaign_rule_text);
    for r in &c.runs {
        println!(
            "  {}: {}{}",
            r.pack,
            r.verdict.as_str(),
            r.headroom_ratio
                .map_or(String::new(), |h| format!(" (headroom {h:.2})"))
        );
    }
    if let Some(b) = &c.bursts {
        println!(
            "events with a burst: {} of {}; the per-event burst probability is below {} % at 95 %",
            b.with_burst,
            b.events,
            analysis::judge::strength::pct_text(b.ci95_hi_pct)
        );
    }
    if let Some(r) = &c.pooled_error_rate {
        println!(
            "pooled error rate: {} errors in {} requests: {}",
            r.errors,
            r.requests,
            r.text()
        );
    }
    for r in &c.reasons {
        println!("why: {r}");
    }
    println!("campaign report: {}", out.join("campaign.md").display());
}
