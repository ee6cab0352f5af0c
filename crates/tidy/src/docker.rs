//! [`Rule::DockerGate`]: every test that touches Docker goes through testkit's gate,
//! `testkit::docker::require_docker` (which fails loudly without an engine, skips only on
//! `PROBELAB_SKIP_DOCKER=1`, and removes what a killed test run left behind).
//!
//! A test target is `tests/<name>.rs` with the module files it declares (`mod common;`, a
//! `#[path]` module). It touches Docker when one of its files, outside comments, contains a
//! [`MARKERS`] entry; then one of its files must call `require_docker`. And no file outside
//! testkit's `src/` reads `PROBELAB_SKIP_DOCKER` (a gate of its own).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::lexer::line_of;
use crate::tree::{Crate, Kind, SourceFile, module_candidates};
use crate::{Rule, Violation, Workspace};

/// What a file that talks to Docker contains: the engine's client libraries, its CLI, or
/// localplane's / runner's Docker runtime.
pub const MARKERS: &[&str] = &[
    "Command::new(\"docker\")",
    "bollard::",
    "testcontainers::",
    "RuntimeKind::Docker",
    "LocalRuntime::Docker",
];

/// The gate's name, as a call.
pub const GATE: &str = "require_docker(";
/// The skip switch only the gate reads.
pub const SKIP_ENV: &str = "\"PROBELAB_SKIP_DOCKER\"";

pub fn check(ws: &Workspace) -> Vec<Violation> {
    let mut out = Vec::new();
    for krate in &ws.crates {
        for file in &krate.files {
            let gate_owner = krate.name == "testkit" && file.kind != Kind::Test;
            if gate_owner {
                continue;
            }
            if let Some(at) = file.no_comments.find(SKIP_ENV) {
                out.push(Violation {
                    rule: Rule::DockerGate,
                    path: file.path.clone(),
                    line: line_of(&file.no_comments, at),
                    message: "reads PROBELAB_SKIP_DOCKER itself: a gate of its own; call \
                              testkit::docker::require_docker instead"
                        .into(),
                });
            }
        }
        for target in krate.files.iter().filter(|f| is_test_target(f)) {
            let files = target_files(krate, target);
            let marker = files.iter().find_map(|f| {
                MARKERS
                    .iter()
                    .find_map(|m| f.no_comments.find(m).map(|at| (f, *m, at)))
            });
            let Some((f, marker, at)) = marker else {
                continue;
            };
            if files.iter().any(|f| f.no_comments.contains(GATE)) {
                continue;
            }
            out.push(Violation {
                rule: Rule::DockerGate,
                path: target.path.clone(),
                line: 0,
                message: format!(
                    "touches Docker ({marker} at {}:{}) but never calls \
                     testkit::docker::require_docker",
                    f.path.display(),
                    line_of(&f.no_comments, at)
                ),
            });
        }
    }
    out
}

fn is_test_target(f: &SourceFile) -> bool {
    f.kind == Kind::Test && f.in_crate.parent() == Some(Path::new("tests"))
}

/// The target's file and every module file it declares, transitively.
fn target_files<'a>(krate: &'a Crate, target: &'a SourceFile) -> Vec<&'a SourceFile> {
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    let mut todo = vec![target];
    let mut out = Vec::new();
    while let Some(file) = todo.pop() {
        if !seen.insert(file.in_crate.clone()) {
            continue;
        }
        out.push(file);
        for child in declared_modules(file) {
            if let Some(f) = krate.file(&child) {
                todo.push(f);
            }
        }
    }
    out
}

/// The files `mod x;` items of `file` load (relative to the crate; `#[path]` honoured).
fn declared_modules(file: &SourceFile) -> Vec<PathBuf> {
    let parent = file.in_crate.parent().unwrap_or(Path::new(""));
    let mut out = Vec::new();
    let lines: Vec<&str> = file.no_comments.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let t = t.strip_prefix("pub ").unwrap_or(t);
        let Some(name) = t
            .strip_prefix("mod ")
            .and_then(|r| r.trim_end().strip_suffix(';'))
        else {
            continue;
        };
        let path_attr = i
            .checked_sub(1)
            .map(|p| lines[p].trim())
            .and_then(|l| l.strip_prefix("#[path = \""))
            .and_then(|l| l.strip_suffix("\"]"));
        match path_attr {
            Some(p) => out.push(normalize(&parent.join(p))),
            None => out.extend(module_candidates(&file.in_crate, name.trim())),
        }
    }
    out
}

fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}
