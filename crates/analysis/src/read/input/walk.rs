//! Which files an analysis reads: files as given, directories walked.

use std::path::{Path, PathBuf};

use crate::Error;

/// Output files of an evidence pack, never read back as inputs.
const OUTPUT_NAMES: &[&str] = &[
    "gates.json",
    "verdict.json",
    "report.md",
    "manifest.sha256",
    "lab.toml",
    "inputs.json",
    "runs.json",
];

/// The input files for `paths`: files as given, directories walked (their `logs/` folder only
/// when there is one; the pack's own outputs are skipped), sorted.
pub fn collect(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| Error::io(p, e))?;
        if meta.is_dir() {
            let logs = p.join("logs");
            let root = if logs.is_dir() { logs } else { p.clone() };
            walk(&root, &mut out)?;
        } else {
            out.push(p.clone());
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Error> {
    let rd = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name.contains(".tmp") {
            continue;
        }
        let ft = entry.file_type().map_err(|e| Error::io(&path, e))?;
        if ft.is_dir() {
            if matches!(name.as_str(), "tables" | "charts" | "kql") {
                continue;
            }
            walk(&path, out)?;
        } else if !OUTPUT_NAMES.contains(&name.as_str())
            && !name.ends_with(".svg")
            && !name.ends_with(".tsv")
            && !name.ends_with(".md")
            && !name.ends_with(".toml")
        {
            out.push(path);
        }
    }
    Ok(())
}
