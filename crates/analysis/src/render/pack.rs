//! Writing the evidence pack: every file atomically (temp file + rename), then
//! `manifest.sha256` (sha256sum format) over every file of the pack.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{charts, html, report};
pub use crate::atomic::write_atomic;
use crate::{Analysis, Error, inputs_summary};

/// Which parts to (re)write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parts {
    /// Tables, gates, verdict, inputs summary, report.md, report.html and charts.
    All,
    /// Only report.md, report.html and charts (plus the manifest).
    Report,
}

fn json_bytes(v: &impl serde::Serialize) -> Result<Vec<u8>, Error> {
    let mut b = serde_json::to_vec_pretty(v).map_err(|e| Error::Internal(e.to_string()))?;
    b.push(b'\n');
    Ok(b)
}

/// Writes the pack into `out`; returns the files written (manifest last).
pub fn write(a: &Analysis, out: &Path, parts: Parts) -> Result<Vec<PathBuf>, Error> {
    let mut written = Vec::new();
    if parts == Parts::All {
        for t in &a.tables {
            let base = out.join("tables").join(&t.name);
            let j = base.with_extension("json");
            write_atomic(&j, &json_bytes(&t.to_json())?)?;
            let tsv = base.with_extension("tsv");
            write_atomic(&tsv, t.to_tsv().as_bytes())?;
            written.push(j);
            written.push(tsv);
        }
        let gates = serde_json::json!({"gates": a.gates});
        for (name, bytes) in [
            ("gates.json", json_bytes(&gates)?),
            ("verdict.json", json_bytes(&a.verdict)?),
            ("inputs.json", json_bytes(&inputs_summary(a))?),
        ] {
            let p = out.join(name);
            write_atomic(&p, &bytes)?;
            written.push(p);
        }
    }
    let chart_files = charts::render(a)?;
    remove_stale_charts(&out.join("charts"), &chart_files)?;
    for (name, svg) in &chart_files {
        let p = out.join("charts").join(name);
        write_atomic(&p, svg.as_bytes())?;
        written.push(p);
    }
    let names: Vec<String> = chart_files.iter().map(|(n, _)| n.clone()).collect();
    let md = report::render(a, &names);
    let p = out.join("report.md");
    write_atomic(&p, md.as_bytes())?;
    written.push(p);
    let page = html::render(a, &a.events, &html::HtmlOptions::default());
    let p = out.join(html::REPORT_HTML);
    write_atomic(&p, page.as_bytes())?;
    written.push(p);
    written.push(write_manifest(out)?);
    Ok(written)
}

/// Removes the `*.svg` files under `charts/` this analysis does not write (an older analysis's
/// charts), so the pack and its manifest hold only charts of the current report.
fn remove_stale_charts(dir: &Path, keep: &[(String, String)]) -> Result<(), Error> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".svg") && !keep.iter().any(|(k, _)| *k == name) {
            let p = entry.path();
            std::fs::remove_file(&p).map_err(|e| Error::io(&p, e))?;
        }
    }
    Ok(())
}

/// Writes `manifest.sha256` over every file under `dir` (except itself and temp files).
pub fn write_manifest(dir: &Path) -> Result<PathBuf, Error> {
    let mut files = Vec::new();
    list(dir, dir, &mut files)?;
    files.sort();
    let mut out = String::new();
    for rel in files {
        let p = dir.join(&rel);
        let mut h = Sha256::new();
        let mut f = std::fs::File::open(&p).map_err(|e| Error::io(&p, e))?;
        std::io::copy(&mut f, &mut h).map_err(|e| Error::io(&p, e))?;
        let digest = h.finalize();
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        out.push_str(&format!("{hex}  {rel}\n"));
    }
    let m = dir.join("manifest.sha256");
    write_atomic(&m, out.as_bytes())?;
    Ok(m)
}

fn list(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), Error> {
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "manifest.sha256" || name.contains(".tmp.") {
            continue;
        }
        let ft = entry.file_type().map_err(|e| Error::io(&path, e))?;
        if ft.is_dir() {
            list(root, &path, out)?;
        } else if ft.is_file() {
            let rel = path
                .strip_prefix(root)
                .map(|r| r.to_string_lossy().replace('\\', "/"))
                .unwrap_or(name);
            out.push(rel);
        }
    }
    Ok(())
}
