//! One module per `labctl` command, plus the flags they share.

pub mod analyze;
pub mod campaign;
pub mod dashboard;
pub mod deploy;
pub mod job;
pub mod lab;
pub mod local;
pub mod logs;
pub mod report;
pub mod signals;
pub mod trigger;
pub mod verify;

use std::path::{Path, PathBuf};

use analysis::Rule;

/// The falsification rule flags (a lab file's `[rule]` overrides each key it sets).
#[derive(clap::Args, Clone, Debug)]
pub struct RuleArgs {
    /// K: how many consecutive windows above the threshold falsify the hypothesis.
    #[arg(long, default_value_t = 3, value_name = "K")]
    pub consecutive: u32,
    /// Threshold in percent: a window is bad when its err_pct is strictly above it.
    #[arg(long, default_value_t = 0.5, value_name = "PCT")]
    pub threshold: f64,
    /// Window length (`10s`, `1m`); every input is re-binned into windows aligned to the epoch.
    #[arg(long, default_value = "10s", value_parser = logline::config::parse_duration, value_name = "DURATION")]
    pub window: std::time::Duration,
    /// Lab file with `[hypothesis]`, `[rule]`, `[preconditions]`, `[phases]`
    /// [default: lab.toml in the output directory, when present].
    #[arg(long, value_name = "FILE")]
    pub lab: Option<PathBuf>,
}

impl RuleArgs {
    pub fn rule(&self) -> Rule {
        Rule {
            window_s: self.window.as_secs(),
            consecutive: self.consecutive,
            threshold_pct: self.threshold,
            ..Rule::default()
        }
    }

    pub fn options(&self, out: &Path) -> analysis::Options {
        analysis::Options {
            rule: self.rule(),
            lab: analysis::find_lab(self.lab.as_deref(), Some(out)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        r: RuleArgs,
    }

    #[test]
    fn defaults_are_the_original_labs_rule() {
        let t = T::parse_from(["t"]);
        assert_eq!(t.r.rule(), Rule::default());
        let t = T::parse_from([
            "t",
            "--window",
            "1m",
            "--consecutive",
            "2",
            "--threshold",
            "1",
        ]);
        assert_eq!((t.r.rule().window_s, t.r.rule().consecutive), (60, 2));
    }
}
