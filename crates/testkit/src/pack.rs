//! Evidence packs for tests: a copy of a fixture pack in a temporary dir, which a test may then
//! change (write its own lab file, leave runs.json out, add lines) without touching the fixture.

use std::path::{Path, PathBuf};

/// Copies the fixture pack `src` to `<temp dir>/pack`: every file of `src/logs/`, and of the
/// files at its top only those named in `files` (`lab.toml`, `runs.json`, `profile`). Returns
/// the temp dir (removed when dropped) and the copy.
///
/// # Panics
/// When a file cannot be read or written, naming it.
pub fn copy_fixture(src: &Path, files: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("a temporary dir: {e}"));
    let dst = tmp.path().join("pack");
    let logs = dst.join("logs");
    std::fs::create_dir_all(&logs).unwrap_or_else(|e| panic!("{}: {e}", logs.display()));
    let copy = |from: PathBuf, to: PathBuf| {
        std::fs::copy(&from, &to)
            .unwrap_or_else(|e| panic!("copying {} to {}: {e}", from.display(), to.display()));
    };
    for f in files {
        copy(src.join(f), dst.join(f));
    }
    let src_logs = src.join("logs");
    let entries =
        std::fs::read_dir(&src_logs).unwrap_or_else(|e| panic!("{}: {e}", src_logs.display()));
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| panic!("{}: {e}", src_logs.display()));
        copy(entry.path(), logs.join(entry.file_name()));
    }
    (tmp, dst)
}

/// A whole lab file from a test's subset of one: the keys every lab file has and the test does
/// not care about (`title`, `question`, `[hypothesis] text`, `steps`) added where the subset
/// lacks them, everything else as written. The analysis reads a pack's lab file into the lab
/// crate's type, where those keys are required.
///
/// # Panics
/// When `subset` is not TOML, or `hypothesis` or `steps` is of the wrong type.
pub fn complete_lab(subset: &str) -> String {
    let mut doc: toml::Table = subset
        .parse()
        .unwrap_or_else(|e| panic!("a lab subset that is TOML: {e}\n{subset}"));
    doc.entry("title").or_insert("a test lab".into());
    doc.entry("question")
        .or_insert("What does the planted pack show?".into());
    doc.entry("hypothesis")
        .or_insert(toml::Table::new().into())
        .as_table_mut()
        .unwrap_or_else(|| panic!("[hypothesis] is a table in {subset}"))
        .entry("text")
        .or_insert("the planted hypothesis".into());
    doc.entry("steps").or_insert(toml::Value::Array(Vec::new()));
    toml::to_string(&doc).unwrap_or_else(|e| panic!("a lab subset written back: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lab_subset_gets_the_keys_every_lab_has_and_keeps_its_own() {
        let whole: toml::Table = complete_lab("title = \"mine\"\n[rule]\nconsecutive = 2\n")
            .parse()
            .unwrap();
        assert_eq!(whole["title"].as_str(), Some("mine"));
        assert_eq!(whole["rule"]["consecutive"].as_integer(), Some(2));
        assert!(whole["question"].is_str() && whole["hypothesis"]["text"].is_str());
        assert_eq!(whole["steps"].as_array().map(Vec::len), Some(0));
        let with_steps: toml::Table = complete_lab("[[steps]]\nname = \"s\"\nphase = \"p\"\n")
            .parse()
            .unwrap();
        assert_eq!(with_steps["steps"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn copies_the_logs_and_only_the_named_top_files() {
        let src = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(src.path().join("logs")).expect("logs");
        for (f, text) in [
            ("lab.toml", "title = \"t\""),
            ("runs.json", "{}"),
            ("logs/a.ndjson", "{\"a\":1}\n"),
        ] {
            std::fs::write(src.path().join(f), text).expect("write");
        }
        let (_tmp, dst) = copy_fixture(src.path(), &["lab.toml"]);
        assert_eq!(dst.file_name().and_then(|n| n.to_str()), Some("pack"));
        assert!(dst.join("lab.toml").is_file());
        assert!(!dst.join("runs.json").exists());
        assert_eq!(
            std::fs::read_to_string(dst.join("logs/a.ndjson")).expect("copied"),
            "{\"a\":1}\n"
        );
    }
}
