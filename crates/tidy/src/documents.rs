//! [`Rule::DocumentLength`]: the user's page and the map of the code stay short enough to read
//! whole: README.md at most 15,000 characters, docs/ARCHITECTURE.md at most 30,000 (about
//! rust-analyzer's architecture document for a far larger codebase). Measurements belong in
//! docs/BENCHMARKS.md and history in CHANGELOG.md, which have no limit. A missing README is a
//! violation too; a missing ARCHITECTURE.md is [`Rule::ArchitectureTable`]'s.

use std::path::PathBuf;

use crate::{Rule, Violation, Workspace};

/// Each document with a limit: its path from the workspace root and the most characters
/// (Unicode scalar values) it may hold.
pub const LIMITS: &[(&str, usize)] = &[("README.md", 15_000), ("docs/ARCHITECTURE.md", 30_000)];

/// A violation for each document of [`LIMITS`] over its limit, and for a missing README.
pub fn check(ws: &Workspace) -> Vec<Violation> {
    let mut out = Vec::new();
    for (path, limit) in LIMITS {
        let text = match *path {
            "README.md" => ws.readme.as_deref(),
            _ => ws.architecture.as_deref(),
        };
        let message = match text {
            None if *path == "README.md" => "the user's page is missing".to_owned(),
            None => continue,
            Some(t) => {
                let chars = t.chars().count();
                if chars <= *limit {
                    continue;
                }
                format!(
                    "{chars} characters (over {limit}): a document is a map, not a notebook; \
                     move measurements to docs/BENCHMARKS.md and history to CHANGELOG.md"
                )
            }
        };
        out.push(Violation {
            rule: Rule::DocumentLength,
            path: PathBuf::from(path),
            line: 0,
            message,
        });
    }
    out
}
