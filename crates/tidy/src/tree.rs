//! The workspace as the rules see it: the root manifest, and per crate its manifest and its
//! `.rs` files (each read once, with the lexer's views), classified as library, binary or test.

use std::fs;
use std::path::{Path, PathBuf};

use crate::TidyError;
use crate::lexer;

/// The workspace at a root directory (members: `crates/*`).
pub struct Workspace {
    pub root: PathBuf,
    /// The root Cargo.toml as text (its comments carry the dependency block).
    pub manifest_text: String,
    pub manifest: toml::Table,
    pub crates: Vec<Crate>,
    /// docs/ARCHITECTURE.md as text, `None` when the tree has none.
    pub architecture: Option<String>,
    /// README.md as text, `None` when the tree has none.
    pub readme: Option<String>,
    /// `.config/nextest.toml` as text, `None` when the tree has none.
    pub nextest_config: Option<String>,
    /// `scripts/test.sh` as text, `None` when the tree has none.
    pub test_script: Option<String>,
}

/// One member crate.
pub struct Crate {
    /// The `package.name`.
    pub name: String,
    /// Relative to the workspace root, e.g. `crates/lab`.
    pub dir: PathBuf,
    pub manifest: toml::Table,
    /// Whether it has `src/lib.rs`.
    pub has_lib: bool,
    pub files: Vec<SourceFile>,
}

/// Which kind of target a file belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Under `src/` of a crate with a library, not a binary's file.
    Library,
    /// `src/main.rs`, `src/bin/**`, or any `src/` file of a crate without a library.
    Binary,
    /// Under `tests/`, `examples/` or `benches/`.
    Test,
}

/// One `.rs` file.
pub struct SourceFile {
    /// Relative to the workspace root.
    pub path: PathBuf,
    /// Relative to the crate directory, e.g. `src/lib.rs`.
    pub in_crate: PathBuf,
    pub kind: Kind,
    pub text: String,
    /// Comments blanked, literals kept.
    pub no_comments: String,
    /// Comments and literal contents blanked.
    pub code: String,
}

impl Workspace {
    pub fn load(root: &Path) -> Result<Workspace, TidyError> {
        let manifest_path = root.join("Cargo.toml");
        let manifest_text = read(&manifest_path)?;
        let manifest = parse(&manifest_path, &manifest_text)?;
        let mut crates = Vec::new();
        let mut dirs: Vec<PathBuf> = list(&root.join("crates"))?
            .into_iter()
            .filter(|d| d.join("Cargo.toml").is_file())
            .collect();
        dirs.sort();
        for dir in dirs {
            crates.push(Crate::load(root, &dir)?);
        }
        let doc = root.join(crate::architecture::DOCUMENT);
        let architecture = if doc.is_file() {
            Some(read(&doc)?)
        } else {
            None
        };
        let readme = read_if_file(&root.join("README.md"))?;
        let nextest_config = read_if_file(&root.join(crate::nextest::CONFIG))?;
        let test_script = read_if_file(&root.join(crate::nextest::SCRIPT))?;
        Ok(Workspace {
            root: root.to_path_buf(),
            manifest_text,
            manifest,
            crates,
            architecture,
            readme,
            nextest_config,
            test_script,
        })
    }

    pub fn crate_named(&self, name: &str) -> Option<&Crate> {
        self.crates.iter().find(|c| c.name == name)
    }
}

/// The text of `path`, `None` when there is no such file.
fn read_if_file(path: &Path) -> Result<Option<String>, TidyError> {
    if path.is_file() {
        read(path).map(Some)
    } else {
        Ok(None)
    }
}

impl Crate {
    fn load(root: &Path, dir: &Path) -> Result<Crate, TidyError> {
        let manifest_path = dir.join("Cargo.toml");
        let manifest = parse(&manifest_path, &read(&manifest_path)?)?;
        let name = manifest
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(|n| n.as_str())
            .map_or_else(|| dir_name(dir), str::to_string);
        let has_lib = dir.join("src/lib.rs").is_file();
        let mut paths = Vec::new();
        for sub in ["src", "tests", "examples", "benches"] {
            rs_files(&dir.join(sub), &mut paths)?;
        }
        paths.sort();
        let mut files = Vec::new();
        for path in paths {
            let in_crate = path.strip_prefix(dir).unwrap_or(&path).to_path_buf();
            let kind = if !in_crate.starts_with("src") {
                Kind::Test
            } else if !has_lib
                || in_crate == Path::new("src/main.rs")
                || in_crate.starts_with("src/bin")
            {
                Kind::Binary
            } else {
                Kind::Library
            };
            let text = read(&path)?;
            files.push(SourceFile {
                path: path.strip_prefix(root).unwrap_or(&path).to_path_buf(),
                in_crate,
                kind,
                no_comments: lexer::without_comments(&text),
                code: lexer::code_only(&text),
                text,
            });
        }
        Ok(Crate {
            name,
            dir: dir.strip_prefix(root).unwrap_or(dir).to_path_buf(),
            manifest,
            has_lib,
            files,
        })
    }

    /// The file at `in_crate` (relative to the crate directory).
    pub fn file(&self, in_crate: &Path) -> Option<&SourceFile> {
        self.files.iter().find(|f| f.in_crate == in_crate)
    }
}

fn dir_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn read(path: &Path) -> Result<String, TidyError> {
    fs::read_to_string(path).map_err(|source| TidyError::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn parse(path: &Path, text: &str) -> Result<toml::Table, TidyError> {
    text.parse::<toml::Table>()
        .map_err(|source| TidyError::Manifest {
            path: path.to_path_buf(),
            source,
        })
}

fn list(dir: &Path) -> Result<Vec<PathBuf>, TidyError> {
    let entries = fs::read_dir(dir).map_err(|source| TidyError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    entries
        .map(|e| {
            e.map(|e| e.path()).map_err(|source| TidyError::Read {
                path: dir.to_path_buf(),
                source,
            })
        })
        .collect()
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), TidyError> {
    if !dir.is_dir() {
        return Ok(());
    }
    for path in list(dir)? {
        if path.is_dir() {
            rs_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// The files a `mod name;` item of the file at `in_crate` (relative to its crate) may load, as
/// rustc looks for them: `name.rs` or `name/mod.rs`, beside the file when it is a crate or test
/// target root (`lib.rs`, `main.rs`, `tests/*.rs`) or a `mod.rs`, else under a directory named
/// after it.
pub fn module_candidates(in_crate: &Path, name: &str) -> [PathBuf; 2] {
    let parent = in_crate.parent().unwrap_or(Path::new(""));
    let stem = in_crate.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let dir = if matches!(stem, "lib" | "main" | "mod") || parent == Path::new("tests") {
        parent.to_path_buf()
    } else {
        parent.join(stem)
    };
    [
        dir.join(format!("{name}.rs")),
        dir.join(name).join("mod.rs"),
    ]
}
