//! `labctl verify DIR`: checks an evidence pack against its `manifest.sha256` (written by the
//! analysis): every listed file present with the same digest, and no file unlisted.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::RunError;

/// What the check found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct VerifyReport {
    pub checked: usize,
    pub mismatched: Vec<String>,
    pub missing: Vec<String>,
    /// Files in the pack the manifest does not list (added after the analysis).
    pub unlisted: Vec<String>,
    /// Manifest lines that are not `<64 hex>  <path>`, or paths that leave the pack.
    pub malformed: Vec<String>,
}

impl VerifyReport {
    pub fn ok(&self) -> bool {
        self.mismatched.is_empty()
            && self.missing.is_empty()
            && self.unlisted.is_empty()
            && self.malformed.is_empty()
    }
}

pub fn sha256_file(p: &Path) -> Result<String, RunError> {
    let mut h = Sha256::new();
    let mut f = std::fs::File::open(p).map_err(|e| RunError::io(p, e))?;
    std::io::copy(&mut f, &mut h).map_err(|e| RunError::io(p, e))?;
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Verifies `dir`.
pub fn verify(dir: &Path) -> Result<VerifyReport, RunError> {
    let m = dir.join("manifest.sha256");
    let text = std::fs::read_to_string(&m).map_err(|e| RunError::io(&m, e))?;
    let mut r = VerifyReport::default();
    let mut listed = std::collections::BTreeSet::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Some((hex, rel)) = line.split_once("  ") else {
            r.malformed.push(line.to_owned());
            continue;
        };
        let safe = !rel.starts_with('/')
            && !Path::new(rel)
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir));
        if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) || !safe {
            r.malformed.push(line.to_owned());
            continue;
        }
        listed.insert(rel.to_owned());
        let p = dir.join(rel);
        if !p.is_file() {
            r.missing.push(rel.to_owned());
            continue;
        }
        r.checked += 1;
        if sha256_file(&p)? != hex.to_ascii_lowercase() {
            r.mismatched.push(rel.to_owned());
        }
    }
    let mut all = Vec::new();
    list(dir, dir, &mut all)?;
    r.unlisted = all.into_iter().filter(|f| !listed.contains(f)).collect();
    Ok(r)
}

fn list(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), RunError> {
    for e in std::fs::read_dir(dir).map_err(|e| RunError::io(dir, e))? {
        let e = e.map_err(|e| RunError::io(dir, e))?;
        let p: PathBuf = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if name == "manifest.sha256" || name.contains(".tmp.") {
            continue;
        }
        let ft = e.file_type().map_err(|e| RunError::io(&p, e))?;
        if ft.is_dir() {
            list(root, &p, out)?;
        } else if ft.is_file()
            && let Ok(rel) = p.strip_prefix(root)
        {
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_changed_missing_and_added_files() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("logs")).unwrap();
        std::fs::write(d.path().join("lab.toml"), "x").unwrap();
        std::fs::write(d.path().join("logs/a.ndjson"), "{}\n").unwrap();
        analysis::render::pack::write_manifest(d.path()).unwrap();
        let r = verify(d.path()).unwrap();
        assert!(r.ok(), "{r:?}");
        assert_eq!(r.checked, 2);
        std::fs::write(d.path().join("lab.toml"), "y").unwrap();
        std::fs::remove_file(d.path().join("logs/a.ndjson")).unwrap();
        std::fs::write(d.path().join("extra"), "z").unwrap();
        let r = verify(d.path()).unwrap();
        assert_eq!(r.mismatched, vec!["lab.toml"]);
        assert_eq!(r.missing, vec!["logs/a.ndjson"]);
        assert_eq!(r.unlisted, vec!["extra"]);
        assert!(!r.ok());
    }
}
