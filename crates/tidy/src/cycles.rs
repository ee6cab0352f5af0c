//! [`Rule::ModuleCycle`]: the top-level modules of a crate's `src/` form no cycle.
//!
//! A top-level module is `src/a.rs` or `src/a/mod.rs` with every file under `src/a/` (the
//! target roots `lib.rs` and `main.rs`, and `src/bin/`, belong to none). Module `a` depends on
//! module `b` when one of `a`'s files names a `crate::b` path (`use crate::b::X`, `crate::b::f()`,
//! `use crate::{b, c::Y}`) outside test code: `#[cfg(test)]` items, and the files of a
//! `#[cfg(test)] mod x;`. Paths are read in the lexer's code view, so comments (doc links
//! included) and string literals do not count. `super::` paths are not followed.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use crate::lexer::{line_of, word_offsets};
use crate::source::{test_code_files, test_ranges};
use crate::tree::{Crate, Kind, SourceFile};
use crate::{Rule, Violation, Workspace};

/// Where a dependency between two modules is first named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    /// Relative to the workspace root.
    pub path: PathBuf,
    /// 1-based.
    pub line: usize,
}

/// One crate's modules: each top-level module, with the modules it depends on and where.
pub type Graph = BTreeMap<String, BTreeMap<String, Edge>>;

/// One violation per strongly connected set of modules, in every crate.
pub fn check(ws: &Workspace) -> Vec<Violation> {
    let mut out = Vec::new();
    for krate in &ws.crates {
        let graph = module_graph(krate);
        for tangle in tangles(&graph) {
            out.push(report(&krate.name, &graph, &tangle));
        }
    }
    out
}

/// The top-level module a file under `src/` belongs to (`src/a.rs`, `src/a/mod.rs`,
/// `src/a/b.rs`: `a`); `None` for `lib.rs`, `main.rs`, `src/bin/` and files outside `src/`.
pub fn top_module(in_crate: &Path) -> Option<String> {
    let mut parts = in_crate.strip_prefix("src").ok()?.components();
    let first = parts.next()?.as_os_str().to_str()?;
    if parts.next().is_some() {
        return (first != "bin").then(|| first.to_owned());
    }
    let stem = first.strip_suffix(".rs")?;
    (!matches!(stem, "lib" | "main" | "mod")).then(|| stem.to_owned())
}

/// The crate's module graph, from its non-test `src/` files (each edge where it is first
/// named, in path order).
pub fn module_graph(krate: &Crate) -> Graph {
    let test_files = test_code_files(krate);
    let files: Vec<(&SourceFile, String)> = krate
        .files
        .iter()
        .filter(|f| f.kind != Kind::Test && !test_files.contains(&f.in_crate))
        .filter_map(|f| top_module(&f.in_crate).map(|m| (f, m)))
        .collect();
    let modules: BTreeSet<&str> = files.iter().map(|(_, m)| m.as_str()).collect();
    let mut graph = Graph::new();
    for (file, from) in &files {
        let tests = test_ranges(&file.code);
        let edges = graph.entry(from.clone()).or_default();
        for (at, to) in crate_paths(&file.code) {
            if to == *from
                || !modules.contains(to.as_str())
                || tests.iter().any(|r| r.contains(&at))
            {
                continue;
            }
            edges.entry(to).or_insert_with(|| Edge {
                path: file.path.clone(),
                line: line_of(&file.code, at),
            });
        }
    }
    graph
}

/// The first segment of every `crate::` path in `code` (the lexer's code view), with the
/// offset of its `crate`; a `crate::{..}` group gives each item's first segment.
pub fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let first_segment =
        |s: &str| -> String { s.trim_start().chars().take_while(|&c| ident(c)).collect() };
    let mut out = Vec::new();
    for at in word_offsets(code, "crate") {
        let Some(rest) = code[at + "crate".len()..]
            .trim_start()
            .strip_prefix("::")
            .map(str::trim_start)
        else {
            continue;
        };
        let names: Vec<String> = match rest.strip_prefix('{') {
            Some(group) => group_items(group)
                .iter()
                .map(|i| first_segment(i))
                .collect(),
            None => vec![first_segment(rest)],
        };
        out.extend(names.into_iter().filter(|n| !n.is_empty()).map(|n| (at, n)));
    }
    out
}

/// The top-level comma-separated items of a `{..}` group whose `{` is already open.
fn group_items(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut from = 0;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[from..i]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    items
}

/// The strongly connected sets of more than one module (each module with every module it
/// reaches that reaches it back).
pub fn tangles(graph: &Graph) -> Vec<BTreeSet<String>> {
    let reach: BTreeMap<&str, BTreeSet<&str>> = graph
        .keys()
        .map(|m| (m.as_str(), reachable(graph, m)))
        .collect();
    let mut out: Vec<BTreeSet<String>> = Vec::new();
    for (m, from_m) in &reach {
        if out.iter().any(|t| t.contains(*m)) {
            continue;
        }
        let tangle: BTreeSet<String> = from_m
            .iter()
            .filter(|n| reach.get(*n).is_some_and(|r| r.contains(m)))
            .map(|n| (*n).to_owned())
            .collect();
        if tangle.len() > 1 {
            out.push(tangle);
        }
    }
    out
}

/// Every module reachable from `from` (itself included when it is on a cycle).
fn reachable<'g>(graph: &'g Graph, from: &str) -> BTreeSet<&'g str> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from];
    while let Some(m) = todo.pop() {
        for next in graph.get(m).into_iter().flat_map(|e| e.keys()) {
            if seen.insert(next.as_str()) {
                todo.push(next.as_str());
            }
        }
    }
    seen
}

/// A shortest cycle through the first module of `tangle`, staying inside it: the modules in
/// order, the first not repeated at the end.
pub fn shortest_cycle(graph: &Graph, tangle: &BTreeSet<String>) -> Vec<String> {
    let Some(start) = tangle.first() else {
        return Vec::new();
    };
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut todo = VecDeque::from([start.as_str()]);
    while let Some(m) = todo.pop_front() {
        for next in graph.get(m).into_iter().flat_map(|e| e.keys()) {
            if next == start {
                let mut cycle = vec![m.to_owned()];
                let mut at = m;
                while at != start {
                    at = came_from[at];
                    cycle.push(at.to_owned());
                }
                cycle.reverse();
                return cycle;
            }
            if tangle.contains(next) && !came_from.contains_key(next.as_str()) {
                came_from.insert(next.as_str(), m);
                todo.push_back(next);
            }
        }
    }
    Vec::new()
}

/// The violation for one tangle: a shortest cycle in it, each of its edges with where it is
/// named, and the tangle's other modules; placed at the cycle's first edge.
fn report(krate: &str, graph: &Graph, tangle: &BTreeSet<String>) -> Violation {
    let cycle = shortest_cycle(graph, tangle);
    let edges: Vec<(&String, &String, &Edge)> = cycle
        .iter()
        .zip(cycle.iter().cycle().skip(1))
        .filter_map(|(a, b)| Some((a, b, graph.get(a)?.get(b)?)))
        .collect();
    let chain: Vec<&str> = cycle
        .iter()
        .chain(cycle.first())
        .map(String::as_str)
        .collect();
    let named: Vec<String> = edges
        .iter()
        .map(|(a, b, e)| format!("{a} -> {b} at {}:{}", e.path.display(), e.line))
        .collect();
    let others: Vec<&str> = tangle
        .iter()
        .filter(|m| !cycle.contains(*m))
        .map(String::as_str)
        .collect();
    let also = if others.is_empty() {
        String::new()
    } else {
        format!("; the cycle is tangled with {} too", others.join(", "))
    };
    let (path, line) = edges
        .first()
        .map_or((PathBuf::new(), 0), |(_, _, e)| (e.path.clone(), e.line));
    Violation {
        rule: Rule::ModuleCycle,
        path,
        line,
        message: format!(
            "the modules of crate `{krate}` form a cycle {} ({}){also}: move what they share \
             into a module of its own that depends on neither",
            chain.join(" -> "),
            named.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crate_paths_give_first_segments() {
        let code = "use crate::a::X;\nuse crate::{b::{Y, Z}, c, self};\nfn f() { crate :: d::g(); }\n\
                    pub(crate) fn h() {}\n";
        let found: Vec<(usize, String)> = crate_paths(code)
            .into_iter()
            .map(|(at, m)| (line_of(code, at), m))
            .collect();
        let want = [(1, "a"), (2, "b"), (2, "c"), (2, "self"), (3, "d")];
        assert_eq!(
            found,
            want.map(|(l, m)| (l, m.to_owned())).to_vec(),
            "{found:?}"
        );
    }

    #[test]
    fn top_modules() {
        let top = |p: &str| top_module(Path::new(p));
        assert_eq!(top("src/a.rs").as_deref(), Some("a"));
        assert_eq!(top("src/a/mod.rs").as_deref(), Some("a"));
        assert_eq!(top("src/a/b/c.rs").as_deref(), Some("a"));
        assert_eq!(top("src/lib.rs"), None);
        assert_eq!(top("src/main.rs"), None);
        assert_eq!(top("src/bin/tool.rs"), None);
        assert_eq!(top("tests/a.rs"), None);
    }

    #[test]
    fn a_tangle_reports_its_shortest_cycle() {
        let edge = |line| Edge {
            path: PathBuf::from("x.rs"),
            line,
        };
        let mut graph = Graph::new();
        for (from, to, line) in [
            ("a", "b", 1),
            ("b", "c", 2),
            ("c", "a", 3),
            ("b", "a", 4),
            ("d", "a", 5),
        ] {
            graph
                .entry(from.to_owned())
                .or_default()
                .insert(to.to_owned(), edge(line));
        }
        graph.entry("d".to_owned()).or_default();
        let found = tangles(&graph);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(shortest_cycle(&graph, &found[0]), vec!["a", "b"]);
        let v = report("k", &graph, &found[0]);
        assert_eq!(v.line, 1);
        assert!(
            v.message
                .contains("a -> b -> a (a -> b at x.rs:1, b -> a at x.rs:4)")
                && v.message.contains("tangled with c"),
            "{}",
            v.message
        );
    }
}
