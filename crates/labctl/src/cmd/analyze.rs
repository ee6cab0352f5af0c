//! `labctl analyze DIR|FILES...`: read the logs, compute the tables, gates and verdict, write the
//! evidence pack, print the verdict; the exit code carries it (0 held, 3 falsified, 4 invalid).

use std::path::{Path, PathBuf};

use analysis::Outcome;
use analysis::render::pack;
use anyhow::{Context, bail};

use super::RuleArgs;
use crate::exit;

/// Analyse logs into an evidence pack: tables/q1..q7 (+ forensics and extras) as .json and .tsv,
/// gates.json, verdict.json, inputs.json, report.md, report.html, charts/*.svg, manifest.sha256.
///
/// Inputs are auto-detected and can be mixed: ContainerAppConsoleLogs_CL /
/// ContainerAppSystemLogs_CL NDJSON rows, raw stdout of the probelab images, Log Analytics query
/// API JSON, `az monitor log-analytics query` output (including already-aggregated bucket
/// tables), and legacy k6 logfmt lines. A directory is read recursively (only its `logs/` folder
/// when it has one). Unparseable lines are counted and quoted in the report, never fatal.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Exit codes: 0 held; 1 error (nothing written or partly written); \
    2 usage error; 3 falsified; 4 invalid (a precondition failed, or no judged data). \
    The verdict is also in verdict.json and on the first line of the output."
)]
pub struct Args {
    /// Evidence directory, or log files.
    #[arg(required = true, value_name = "DIR|FILES")]
    pub inputs: Vec<PathBuf>,
    /// Where to write the pack [default: the directory given; else the first file's directory,
    /// or the pack above it when that directory is a pack's `logs/`].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub rule: RuleArgs,
}

/// The output directory: `--out`, else the single directory given, else the first file's folder.
pub fn out_dir(inputs: &[PathBuf], out: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(o) = out {
        return Ok(o);
    }
    let Some(first) = inputs.first() else {
        bail!("no input given");
    };
    if first.is_dir() {
        return Ok(first.clone());
    }
    let parent = first
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    // Files from a pack's logs/ folder: the pack is the folder above.
    if parent.file_name().is_some_and(|n| n == "logs")
        && let Some(pack) = parent.parent().filter(|p| !p.as_os_str().is_empty())
    {
        return Ok(pack.to_path_buf());
    }
    Ok(parent)
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let out = out_dir(&args.inputs, args.out)?;
    let opts = args.rule.options(&out);
    let t0 = std::time::Instant::now();
    let a = analysis::analyze(&args.inputs, &opts).context("analysis failed")?;
    let t1 = std::time::Instant::now();
    pack::write(&a, &out, pack::Parts::All)
        .with_context(|| format!("writing the evidence pack to {} (use --out)", out.display()))?;
    if std::env::var_os("LABCTL_TIMINGS").is_some() {
        eprintln!(
            "timings: read+compute {:.3} s, write pack {:.3} s",
            (t1 - t0).as_secs_f64(),
            t1.elapsed().as_secs_f64()
        );
    }
    print_summary(&a, &out);
    Ok(match a.verdict.verdict {
        Outcome::Held => exit::HELD,
        Outcome::Falsified => exit::FALSIFIED,
        Outcome::Invalid => exit::INVALID,
    })
}

pub fn print_summary(a: &analysis::Analysis, out: &std::path::Path) {
    let v = &a.verdict;
    println!(
        "verdict: {} (falsified: {})",
        v.verdict.as_str(),
        v.falsified
    );
    println!("rule: {}", v.rule_text);
    println!(
        "judged: {} run(s), {} windows, {} requests, {} errors; worst window {:.3} %",
        v.judged_runs.len(),
        v.judged_buckets,
        v.judged_requests,
        v.judged_errors,
        v.worst_bucket_err_pct
    );
    for (label, text) in v.strength_facts() {
        println!("{label}: {text}");
    }
    for r in &v.reasons {
        println!("why: {r}");
    }
    let s = a.stats();
    println!(
        "inputs: {} file(s), {} lines, {} unparseable",
        a.files.len(),
        s.lines,
        s.unparseable
    );
    for (loc, text) in &s.quoted {
        println!("  unparseable {loc}: {text}");
    }
    println!("report: {}", out.join("report.md").display());
    println!(
        "report.html: {}",
        out.join(analysis::render::html::REPORT_HTML).display()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_output_is_the_pack_holding_the_logs() {
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(
            out_dir(&[p("ev/x/logs/a.ndjson")], None).unwrap(),
            p("ev/x")
        );
        assert_eq!(out_dir(&[p("dump/a.json")], None).unwrap(), p("dump"));
        assert_eq!(out_dir(&[p("a.json")], None).unwrap(), p("."));
        assert_eq!(out_dir(&[p("a.json")], Some(p("o"))).unwrap(), p("o"));
    }
}
