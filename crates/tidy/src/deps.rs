//! [`Rule::DependencyDirection`]: the `# local crates` comment block of the root Cargo.toml
//! against the crates' manifests.
//!
//! The block's grammar, one crate a line (read, never hard-coded: the block is the contract):
//!
//! ```text
//! #   runner      -> lab, localplane, arm   (free text)
//! #   sampler     -> arm, logline            (tests only: localplane; free text)
//! #   logline      -> (nothing local)
//! # Images (subject, loadgen) never depend on localplane or analysis at run time.
//! ```
//!
//! The names before the first `(` are the crate's run-time local dependencies (`[dependencies]`
//! and `[build-dependencies]`), exactly; a `(tests only: a, b)` note lists, exactly, the local
//! crates it depends on only in `[dev-dependencies]`. Any other parenthesised text is a comment,
//! and so is a list item of more than one word (`localplane, as the ARM endpoint`).
//! Every member crate has a line, and every line names a member. testkit is never a run-time
//! dependency, and no crate of the `# Images (...)` line reaches, through run-time dependencies,
//! a crate that line names after "never depend on".

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::{Crate, Rule, Violation, Workspace};

/// The test-support crate: a dev-dependency only.
pub const TEST_SUPPORT: &str = "testkit";

/// One crate's line of the block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    pub line: usize,
    pub runtime: BTreeSet<String>,
    pub tests_only: BTreeSet<String>,
}

/// The block as written: each crate's line, and the `# Images` line's two lists.
#[derive(Debug, Default)]
pub struct Block {
    pub crates: BTreeMap<String, Allowed>,
    pub images: Option<(usize, BTreeSet<String>, BTreeSet<String>)>,
}

/// The crate names of a list: its one-word items, `or` separating names too (`localplane or
/// analysis` is two names; `localplane, as the ARM endpoint` is one and prose).
fn names(list: &str) -> BTreeSet<String> {
    list.split(',')
        .flat_map(|item| item.split(" or ").map(str::trim))
        .filter(|item| !item.is_empty() && !item.contains(char::is_whitespace))
        .map(|item| item.trim_end_matches('.').to_string())
        .collect()
}

/// Parses the block out of the root manifest's text; `None` when it has no `# local crates` line.
pub fn parse_block(text: &str) -> Option<Block> {
    let mut lines = text.lines().enumerate();
    lines.find(|(_, l)| l.trim_start().starts_with("# local crates"))?;
    let mut block = Block::default();
    for (i, line) in lines {
        let Some(body) = line.trim_start().strip_prefix('#') else {
            break;
        };
        let body = body.trim();
        if let Some(rest) = body.strip_prefix("Images (") {
            let (imgs, rest) = rest.split_once(')').unwrap_or((rest, ""));
            let never = rest
                .split_once("never depend on")
                .map(|(_, n)| n.split(" at run time").next().unwrap_or(n))
                .unwrap_or("");
            block.images = Some((i + 1, names(imgs), names(never)));
            continue;
        }
        let Some((name, rest)) = body.split_once("->") else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() || name.contains(' ') {
            continue;
        }
        let (list, notes) = rest.split_once('(').unwrap_or((rest, ""));
        let tests_only = notes
            .split_once("tests only:")
            .map(|(_, t)| names(t.split([';', ')']).next().unwrap_or("")))
            .unwrap_or_default();
        block.crates.insert(
            name.to_string(),
            Allowed {
                line: i + 1,
                runtime: names(list),
                tests_only,
            },
        );
    }
    Some(block)
}

fn local_deps(
    manifest: &toml::Table,
    tables: &[&str],
    members: &BTreeSet<String>,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut add = |t: Option<&toml::Value>| {
        for (key, value) in t.and_then(|t| t.as_table()).into_iter().flatten() {
            let name = value.get("package").and_then(|p| p.as_str()).unwrap_or(key);
            if members.contains(name) {
                out.insert(name.to_string());
            }
        }
    };
    for table in tables {
        add(manifest.get(*table));
        for target in manifest
            .get("target")
            .and_then(|t| t.as_table())
            .into_iter()
            .flat_map(|t| t.values())
        {
            add(target.get(*table));
        }
    }
    out
}

fn join(set: &BTreeSet<String>) -> String {
    set.iter().cloned().collect::<Vec<_>>().join(", ")
}

/// A [`Rule::DependencyDirection`] violation at `line` of the root Cargo.toml.
fn at_root(line: usize, message: String) -> Violation {
    Violation {
        rule: Rule::DependencyDirection,
        path: PathBuf::from("Cargo.toml"),
        line,
        message,
    }
}

/// Every disagreement between the block and the manifests.
pub fn check(ws: &Workspace) -> Vec<Violation> {
    let Some(block) = parse_block(&ws.manifest_text) else {
        return vec![at_root(
            0,
            "no `# local crates` block in [workspace.dependencies]: the dependency direction \
             is not written down"
                .into(),
        )];
    };
    let members: BTreeSet<String> = ws.crates.iter().map(|c| c.name.clone()).collect();
    let mut out = block_lines(&block, &members);
    let mut runtime_graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for krate in &ws.crates {
        let runtime = manifest_against_block(krate, &block, &members, &mut out);
        runtime_graph.insert(krate.name.clone(), runtime);
    }
    if let Some(images) = &block.images {
        images_reach(images, &runtime_graph, &members, &mut out);
    }
    out
}

/// The block's lines on their own: each names a member, and none lists testkit at run time.
fn block_lines(block: &Block, members: &BTreeSet<String>) -> Vec<Violation> {
    let mut out = Vec::new();
    for (name, allowed) in &block.crates {
        if !members.contains(name) {
            out.push(at_root(
                allowed.line,
                format!("names `{name}`, which is not a crate of the workspace"),
            ));
        }
        if allowed.runtime.contains(TEST_SUPPORT) {
            out.push(at_root(
                allowed.line,
                format!(
                    "`{name}` may not depend on {TEST_SUPPORT} at run time (a dev-dependency only)"
                ),
            ));
        }
    }
    out
}

/// One crate's manifest against its line of the block (testkit never at run time, the
/// run-time and tests-only lists exactly as written); returns its run-time local dependencies.
fn manifest_against_block(
    krate: &Crate,
    block: &Block,
    members: &BTreeSet<String>,
    out: &mut Vec<Violation>,
) -> BTreeSet<String> {
    let manifest_path = krate.dir.join("Cargo.toml");
    let runtime = local_deps(
        &krate.manifest,
        &["dependencies", "build-dependencies"],
        members,
    );
    let dev: BTreeSet<String> = local_deps(&krate.manifest, &["dev-dependencies"], members)
        .difference(&runtime)
        .cloned()
        .collect();
    if runtime.contains(TEST_SUPPORT) {
        out.push(Violation {
            rule: Rule::DependencyDirection,
            path: manifest_path.clone(),
            line: 0,
            message: format!(
                "{TEST_SUPPORT} is a [dependencies] entry: it is a dev-dependency only"
            ),
        });
    }
    let Some(allowed) = block.crates.get(&krate.name) else {
        out.push(at_root(
            0,
            format!("the block has no line for `{}`", krate.name),
        ));
        return runtime;
    };
    let lists = [
        ("run-time dependencies", &allowed.runtime, &runtime),
        ("tests-only dependencies", &allowed.tests_only, &dev),
    ];
    for (what, block_says, manifest) in lists {
        for m in disagreement(what, block_says, manifest, &manifest_path, &krate.name) {
            out.push(at_root(allowed.line, m));
        }
    }
    runtime
}

/// What a manifest declares that the block does not list, and what the block lists that the
/// manifest does not declare, for one kind of dependency (`what`) of crate `name`.
fn disagreement(
    what: &str,
    block_says: &BTreeSet<String>,
    manifest: &BTreeSet<String>,
    manifest_path: &Path,
    name: &str,
) -> Vec<String> {
    let extra: BTreeSet<String> = manifest.difference(block_says).cloned().collect();
    let missing: BTreeSet<String> = block_says.difference(manifest).cloned().collect();
    let mut msgs = Vec::new();
    if !extra.is_empty() {
        msgs.push(format!(
            "{} declares {what} {} that the block's line for `{name}` does not list",
            manifest_path.display(),
            join(&extra),
        ));
    }
    if !missing.is_empty() {
        msgs.push(format!(
            "the block lists {} as {what} of `{name}`, but {} does not declare it",
            join(&missing),
            manifest_path.display()
        ));
    }
    msgs
}

/// The `# Images (...)` line: no image crate reaches, through run-time dependencies, a crate
/// the line excludes, and every image it names is a member.
fn images_reach(
    (line, images, never): &(usize, BTreeSet<String>, BTreeSet<String>),
    runtime_graph: &BTreeMap<String, BTreeSet<String>>,
    members: &BTreeSet<String>,
    out: &mut Vec<Violation>,
) {
    for image in images {
        let mut seen = BTreeSet::new();
        let mut todo = vec![image.clone()];
        while let Some(c) = todo.pop() {
            for d in runtime_graph.get(&c).into_iter().flatten() {
                if seen.insert(d.clone()) {
                    todo.push(d.clone());
                }
            }
        }
        for bad in never.intersection(&seen) {
            out.push(at_root(
                *line,
                format!("image crate `{image}` depends at run time on `{bad}`"),
            ));
        }
        if !members.contains(image) {
            out.push(at_root(
                *line,
                format!("names `{image}`, which is not a crate of the workspace"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_grammar() {
        let text = "[workspace.dependencies]\n# local crates; the allowed direction:\n\
            #   runner  -> lab, arm   (lab run, job start)\n\
            #   sampler -> arm        (tests only: localplane, as the ARM endpoint)\n\
            #   logline  -> (nothing local)\n\
            # Images (subject, sampler) never depend on localplane or analysis at run time.\n\
            logline = { path = \"crates/logline\" }\n#   late -> x\n";
        let block = parse_block(text).expect("a block");
        assert_eq!(block.crates.len(), 3, "{block:?}");
        let runner = &block.crates["runner"];
        assert_eq!(join(&runner.runtime), "arm, lab");
        assert_eq!(runner.line, 3);
        assert_eq!(join(&block.crates["sampler"].tests_only), "localplane");
        assert!(block.crates["logline"].runtime.is_empty());
        let (_, images, never) = block.images.expect("images line");
        assert_eq!(
            (join(&images), join(&never)),
            ("sampler, subject".into(), "analysis, localplane".into())
        );
    }
}
