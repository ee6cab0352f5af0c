//! A campaign: several runs of one lab judged together, as the lab's `[campaign]` table
//! pre-registers (`lab::Campaign`), written as `campaign.json` and `campaign.md`.
//!
//! Every run is listed with its verdict; an `invalid` run is never dropped: it counts against
//! `min_valid_runs` and the report says why it is invalid. The events of the valid runs are
//! pooled: each with its transition, errors, windows' error rate and worst window, and whether a
//! judged streak of the rule overlapped it (a burst). The pooled bounds are exact
//! (Clopper–Pearson) 95 % intervals: on the share of events with a burst ("0 bursts in 15
//! events: below 21.8 % per event"), and on the error rate of every judged request of the valid
//! runs. The campaign verdict is mechanical: `invalid` when fewer runs than `min_valid_runs`
//! (default: all) are valid, else `falsified` when at least `falsified_runs` valid runs are,
//! else `held`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::judge::strength::{self, Blindness, ErrorRate, pct_text};
use crate::judge::verdict::{Outcome, Status};
use crate::{Analysis, Error, EventSummary};

/// One run of the campaign.
#[derive(Clone, Debug, Serialize)]
pub struct CampaignRun {
    /// The evidence pack's directory name.
    pub pack: String,
    pub verdict: Outcome,
    pub reasons: Vec<String>,
    pub failed_preconditions: Vec<String>,
    pub judged_error_rate: Option<ErrorRate>,
    pub worst_window_err_pct: f64,
    /// The staircase's p50 ratio (`headroom_shown`), when the pack has one.
    pub headroom_ratio: Option<f64>,
    pub events: usize,
}

/// One event of a valid run, pooled: the run's pack and the event as its report lists it.
#[derive(Clone, Debug, Serialize)]
pub struct PooledEvent {
    pub pack: String,
    #[serde(flatten)]
    pub event: EventSummary,
}

/// The share of pooled events with a burst, with its exact 95 % interval.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct BurstShare {
    pub events: u64,
    pub with_burst: u64,
    pub pct: f64,
    pub ci95_lo_pct: f64,
    pub ci95_hi_pct: f64,
}

/// The worst windows of the pooled events: the smallest, the median and the largest err_pct.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

/// campaign.json.
#[derive(Clone, Debug, Serialize)]
pub struct Campaign {
    pub lab: String,
    pub hypothesis: Option<String>,
    pub rule_text: String,
    pub campaign_rule: lab::Campaign,
    pub campaign_rule_text: String,
    pub verdict: Outcome,
    pub reasons: Vec<String>,
    pub runs: Vec<CampaignRun>,
    pub valid_runs: usize,
    pub falsified_runs: usize,
    /// Every judged request of the valid runs.
    pub pooled_error_rate: Option<ErrorRate>,
    pub bursts: Option<BurstShare>,
    pub worst_windows: Option<Spread>,
    pub events: Vec<PooledEvent>,
    /// What the rule cannot see at the valid runs' pooled rate.
    pub blindness: Option<Blindness>,
    pub interval_method: &'static str,
}

/// Why packs cannot make one campaign.
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    #[error("a campaign needs at least one evidence pack")]
    NoPacks,
    #[error(
        "the packs are of different labs or rules: {first} judges by {first_rule:?}, {other} by {other_rule:?}"
    )]
    Mixed {
        first: String,
        first_rule: String,
        other: String,
        other_rule: String,
    },
}

/// The directory name of a pack path.
pub fn pack_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

/// The lab's name from a pack name `<lab>-<UTC stamp>` (the name itself when it has no stamp).
pub fn lab_name(pack: &str) -> String {
    match pack.rsplit_once('-') {
        Some((lab, stamp)) if stamp.len() == 16 && stamp.ends_with('Z') && stamp.contains('T') => {
            lab.to_owned()
        }
        _ => pack.to_owned(),
    }
}

/// Judges the analysed packs (`(pack dir, analysis)`, in run order) as one campaign under the
/// first pack's lab's `[campaign]`. Packs of another rule or lab are refused.
pub fn judge(packs: &[(PathBuf, Analysis)]) -> Result<Campaign, CampaignError> {
    let (first_dir, first) = packs.first().ok_or(CampaignError::NoPacks)?;
    let first_name = pack_name(first_dir);
    let lab = lab_name(&first_name);
    for (dir, a) in &packs[1..] {
        let name = pack_name(dir);
        if a.verdict.rule_text != first.verdict.rule_text || lab_name(&name) != lab {
            return Err(CampaignError::Mixed {
                first: first_name,
                first_rule: first.verdict.rule_text.clone(),
                other: name,
                other_rule: a.verdict.rule_text.clone(),
            });
        }
    }
    let rule = first.lab.campaign.clone();
    let runs: Vec<CampaignRun> = packs.iter().map(|(d, a)| run_of(d, a)).collect();
    let valid: Vec<&(PathBuf, Analysis)> = packs
        .iter()
        .filter(|(_, a)| a.verdict.verdict != Outcome::Invalid)
        .collect();
    let falsified = valid
        .iter()
        .filter(|(_, a)| a.verdict.verdict == Outcome::Falsified)
        .count();
    let (verdict, reasons) = decide(&rule, &runs, valid.len(), falsified);
    let events = pool(&valid);
    let (req, err, rate_num) = valid.iter().fold((0, 0, 0.0), |(n, e, r), (_, a)| {
        let v = &a.verdict;
        let rps = v.blindness.as_ref().map_or(0.0, |b| b.rate_rps);
        (
            n + v.judged_requests,
            e + v.judged_errors,
            r + rps * v.judged_requests as f64,
        )
    });
    let blindness =
        (req > 0 && rate_num > 0.0).then(|| Blindness::of(&first.rule, rate_num / req as f64));
    Ok(Campaign {
        lab,
        hypothesis: first.verdict.hypothesis.clone(),
        rule_text: first.verdict.rule_text.clone(),
        campaign_rule_text: rule.describe(),
        campaign_rule: rule,
        verdict,
        reasons,
        valid_runs: valid.len(),
        falsified_runs: falsified,
        pooled_error_rate: ErrorRate::new(err, req),
        bursts: burst_share(&events),
        worst_windows: spread(events.iter().filter_map(|e| e.event.worst_window_err_pct)),
        events,
        runs,
        blindness,
        interval_method: strength::METHOD,
    })
}

/// The campaign verdict by its rule, with the reason.
fn decide(
    rule: &lab::Campaign,
    runs: &[CampaignRun],
    valid: usize,
    falsified: usize,
) -> (Outcome, Vec<String>) {
    let n = runs.len() as u32;
    let need = rule.min_valid(n);
    if (valid as u32) < need {
        let invalid: Vec<String> = runs
            .iter()
            .filter(|r| r.verdict == Outcome::Invalid)
            .map(|r| format!("{} ({})", r.pack, r.reasons.join("; ")))
            .collect();
        let why = format!(
            "{valid} of {n} run(s) valid, the lab requires at least {need}; invalid: {}",
            invalid.join(", ")
        );
        (Outcome::Invalid, vec![why])
    } else if falsified as u32 >= rule.falsified_runs {
        let why = format!(
            "{falsified} valid run(s) falsified, the lab's campaign is falsified at {}",
            rule.falsified_runs
        );
        (Outcome::Falsified, vec![why])
    } else {
        let why = format!(
            "{falsified} of {valid} valid run(s) falsified, fewer than the {} that falsify the campaign",
            rule.falsified_runs
        );
        (Outcome::Held, vec![why])
    }
}

/// Every event of the valid runs, in run order.
fn pool(valid: &[&(PathBuf, Analysis)]) -> Vec<PooledEvent> {
    valid
        .iter()
        .flat_map(|(d, a)| {
            let pack = pack_name(d);
            a.events.iter().map(move |e| PooledEvent {
                pack: pack.clone(),
                event: e.clone(),
            })
        })
        .collect()
}

fn run_of(dir: &Path, a: &Analysis) -> CampaignRun {
    let v = &a.verdict;
    let headroom_ratio = a
        .gates
        .iter()
        .find(|g| g.name == "headroom_shown" && g.status != Status::NotEvaluated)
        .and_then(|g| g.numbers.get("ratio"))
        .and_then(Value::as_f64);
    CampaignRun {
        pack: pack_name(dir),
        verdict: v.verdict,
        reasons: v.reasons.clone(),
        failed_preconditions: v.failed_preconditions.clone(),
        judged_error_rate: v.judged_error_rate,
        worst_window_err_pct: v.worst_bucket_err_pct,
        headroom_ratio,
        events: a.events.len(),
    }
}

fn burst_share(events: &[PooledEvent]) -> Option<BurstShare> {
    let n = events.len() as u64;
    let k = events.iter().filter(|e| e.event.burst).count() as u64;
    // The same exact interval as an error rate: k "failures" in n trials.
    ErrorRate::new(k, n).map(|r| BurstShare {
        events: n,
        with_burst: k,
        pct: r.pct,
        ci95_lo_pct: r.lo_pct,
        ci95_hi_pct: r.hi_pct,
    })
}

fn spread(values: impl Iterator<Item = f64>) -> Option<Spread> {
    let mut v: Vec<f64> = values.filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    Some(Spread {
        min: *v.first()?,
        median: v[v.len() / 2],
        max: *v.last()?,
    })
}

impl Campaign {
    /// campaign.md.
    pub fn render(&self) -> String {
        let mut md = String::new();
        let _ = writeln!(
            md,
            "# Campaign verdict: {}\n",
            self.verdict.as_str().to_uppercase()
        );
        let _ = writeln!(md, "- **lab:** {}", self.lab);
        if let Some(h) = &self.hypothesis {
            let _ = writeln!(md, "- **hypothesis:** {h}");
        }
        let _ = writeln!(md, "- **rule (each run):** {}", self.rule_text);
        let _ = writeln!(md, "- **campaign rule:** {}", self.campaign_rule_text);
        let _ = writeln!(
            md,
            "- **runs:** {} ({} valid, {} falsified)",
            self.runs.len(),
            self.valid_runs,
            self.falsified_runs
        );
        for r in &self.reasons {
            let _ = writeln!(md, "- **why:** {r}");
        }
        if let Some(b) = &self.bursts {
            let _ = writeln!(
                md,
                "- **events with a burst:** {} of {} ({} %, 95 % CI {}–{} %; {}): the per-event burst probability is below {} % at 95 %",
                b.with_burst,
                b.events,
                pct_text(b.pct),
                pct_text(b.ci95_lo_pct),
                pct_text(b.ci95_hi_pct),
                self.interval_method,
                pct_text(b.ci95_hi_pct)
            );
        }
        if let Some(r) = &self.pooled_error_rate {
            let _ = writeln!(
                md,
                "- **pooled error rate (valid runs):** {} errors in {} requests: {}",
                r.errors,
                r.requests,
                r.text()
            );
        }
        if let Some(s) = &self.worst_windows {
            let _ = writeln!(
                md,
                "- **worst window per event:** min {:.3} %, median {:.3} %, max {:.3} %",
                s.min, s.median, s.max
            );
        }
        if let Some(b) = &self.blindness {
            let _ = writeln!(md, "- **what the rule cannot see:** {}", b.sentence());
        }
        md.push_str("\n## Runs\n\n| pack | verdict | judged error rate (95 % CI) | worst window | headroom ratio | events | why |\n|---|---|---|---|---|---|---|\n");
        for r in &self.runs {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {:.3} % | {} | {} | {} |",
                r.pack,
                r.verdict.as_str(),
                r.judged_error_rate.map_or("-".to_owned(), |e| e.text()),
                r.worst_window_err_pct,
                r.headroom_ratio
                    .map_or("-".to_owned(), |x| format!("{x:.2}")),
                r.events,
                r.reasons.join("; ").replace('|', "\\|")
            );
        }
        md.push_str("\n## Events of the valid runs\n\n| pack | step | event | kind | transition s | errors in window | windows' error rate (95 % CI) | worst window | burst | observed |\n|---|---|---|---|---|---|---|---|---|---|\n");
        for PooledEvent { pack, event: e } in &self.events {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                pack,
                e.step,
                e.event,
                e.kind,
                e.transition_s.map_or("-".to_owned(), |t| format!("{t:.1}")),
                e.errors_in_window,
                e.window_error_rate.map_or("-".to_owned(), |r| r.text()),
                e.worst_window_err_pct
                    .map_or("-".to_owned(), |w| format!("{w:.3} %")),
                if e.burst { "**yes**" } else { "no" },
                if e.observed { "yes" } else { "**NO**" },
            );
        }
        md
    }

    /// Writes `campaign.json` and `campaign.md` into `dir` (atomically); returns their paths.
    pub fn write(&self, dir: &Path) -> Result<Vec<PathBuf>, Error> {
        let mut json =
            serde_json::to_vec_pretty(self).map_err(|e| Error::Internal(e.to_string()))?;
        json.push(b'\n');
        let j = dir.join("campaign.json");
        crate::render::pack::write_atomic(&j, &json)?;
        let m = dir.join("campaign.md");
        crate::render::pack::write_atomic(&m, self.render().as_bytes())?;
        Ok(vec![j, m])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pack_name_gives_its_lab() {
        assert_eq!(
            lab_name("startup-degraded-20261203T134237Z"),
            "startup-degraded"
        );
        assert_eq!(lab_name("my-pack"), "my-pack");
    }

    #[test]
    fn the_spread_of_nothing_is_nothing() {
        assert!(spread(std::iter::empty()).is_none());
        let s = spread([3.0, 1.0, 2.0].into_iter()).unwrap();
        assert_eq!((s.min, s.median, s.max), (1.0, 2.0, 3.0));
    }
}
