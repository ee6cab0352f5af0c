//! [`Rule::ModuleCycle`]: the modules of a crate's `src/` form no cycle, at any depth.
//!
//! A module is a file's path under `src/` (`src/a.rs` and `src/a/mod.rs` are `a`, `src/a/b.rs`
//! is `a::b`; the target roots `lib.rs` and `main.rs` are the crate's root, and `src/bin/`
//! belongs to no module). A file depends on a module when it names a path to it outside test
//! code: `crate::a::b::X`, `super::b::f()` (from the file's own module: `super` is its parent),
//! `self::c`, and each item of a `{..}` group (`use crate::{a, b::Y}`). A path reaches the
//! deepest module it names; an edge joins the two siblings under the deepest module both lie
//! in (`a::b::c` naming `a::d::e` makes `a::b -> a::d`), so a module is never in a cycle with
//! its own parent or children (`mod.rs` re-exporting a child, a child using `super::` items of
//! its parent), only with its siblings' subtrees, as the top-level modules are with each other.
//! Test code does not count: `#[cfg(test)]` items, and the files of a `#[cfg(test)] mod x;`.
//! Paths are read in the lexer's code view, so comments (doc links included) and string literals
//! do not count. A `super::` inside an inline `mod x { .. }` is read as the file's, not the inline
//! module's: it then names the file's parent, whose edges do not count.

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

/// One crate's modules (each by its path, `a::b`): the sibling modules each depends on, and
/// where.
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
    module_path(in_crate)
        .filter(|m| !m.is_empty())
        .map(|m| m.split("::").next().unwrap_or_default().to_owned())
}

/// The module a file under `src/` is (`src/a/b.rs` and `src/a/b/mod.rs`: `a::b`), `""` for
/// the crate root (`lib.rs`, `main.rs`); `None` for `src/bin/` and files outside `src/`.
pub fn module_path(in_crate: &Path) -> Option<String> {
    let rel = in_crate.strip_prefix("src").ok()?;
    let mut parts: Vec<&str> = rel
        .components()
        .map(|c| c.as_os_str().to_str())
        .collect::<Option<_>>()?;
    if parts.first() == Some(&"bin") && parts.len() > 1 {
        return None;
    }
    let file = parts.pop()?.strip_suffix(".rs")?;
    if !(file == "mod" || (parts.is_empty() && matches!(file, "lib" | "main"))) {
        parts.push(file);
    }
    Some(parts.join("::"))
}

/// The crate's module graph, from its non-test `src/` files (each edge where it is first
/// named, in path order).
pub fn module_graph(krate: &Crate) -> Graph {
    let test_files = test_code_files(krate);
    let files: Vec<(&SourceFile, String)> = krate
        .files
        .iter()
        .filter(|f| f.kind != Kind::Test && !test_files.contains(&f.in_crate))
        .filter_map(|f| module_path(&f.in_crate).map(|m| (f, m)))
        .collect();
    let modules: BTreeSet<&str> = files.iter().map(|(_, m)| m.as_str()).collect();
    let mut graph = Graph::new();
    for (file, from) in &files {
        let tests = test_ranges(&file.code);
        for (at, named) in module_paths(&file.code, from) {
            if tests.iter().any(|r| r.contains(&at)) {
                continue;
            }
            let Some(to) = deepest_module(&named, &modules) else {
                continue;
            };
            let Some((a, b)) = siblings(from, to) else {
                continue;
            };
            graph
                .entry(a)
                .or_default()
                .entry(b)
                .or_insert_with(|| Edge {
                    path: file.path.clone(),
                    line: line_of(&file.code, at),
                });
        }
    }
    graph
}

/// The deepest module of `modules` that the path `segments` (from the crate root) names.
fn deepest_module<'m>(segments: &[String], modules: &BTreeSet<&'m str>) -> Option<&'m str> {
    (1..=segments.len())
        .rev()
        .find_map(|n| modules.get(segments[..n].join("::").as_str()).copied())
}

/// For a dependency of module `from` on module `to`: the two siblings under the deepest module
/// both lie in, the first containing `from` and the second `to`; `None` when one contains the
/// other (a module and its parent, child or itself).
fn siblings(from: &str, to: &str) -> Option<(String, String)> {
    let a: Vec<&str> = from.split("::").filter(|s| !s.is_empty()).collect();
    let b: Vec<&str> = to.split("::").filter(|s| !s.is_empty()).collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if common == a.len() || common == b.len() {
        return None;
    }
    Some((a[..=common].join("::"), b[..=common].join("::")))
}

/// Every `crate::`, `super::` and `self::` path in `code` (the lexer's code view) of a file of
/// module `module`, as segments from the crate root, with the offset of its first keyword; a
/// `{..}` group gives each item's path.
pub fn module_paths(code: &str, module: &str) -> Vec<(usize, Vec<String>)> {
    let own: Vec<String> = module
        .split("::")
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let mut out = Vec::new();
    for (at, base, rest) in path_starts(code, &own) {
        for tail in path_tails(rest) {
            let mut full = base.clone();
            full.extend(tail);
            if !full.is_empty() {
                out.push((at, full));
            }
        }
    }
    out.sort_by_key(|(at, _)| *at);
    out
}

/// Where each path begins (`crate::`, `self::`, a first `super::`), the module it starts from
/// (segments from the root; each further `super::` goes one up) and the text after its last
/// `::` keyword.
fn path_starts<'c>(code: &'c str, own: &[String]) -> Vec<(usize, Vec<String>, &'c str)> {
    let after_sep = |at: usize| code[..at].trim_end().ends_with("::");
    let mut out = Vec::new();
    for word in ["crate", "self", "super"] {
        for at in word_offsets(code, word) {
            if after_sep(at) {
                continue;
            }
            let Some(mut rest) = code[at + word.len()..].trim_start().strip_prefix("::") else {
                continue;
            };
            let mut base: Vec<String> = match word {
                "crate" => Vec::new(),
                "self" => own.to_vec(),
                _ => own[..own.len().saturating_sub(1)].to_vec(),
            };
            while let Some(r) = rest
                .trim_start()
                .strip_prefix("super")
                .and_then(|r| r.trim_start().strip_prefix("::"))
            {
                base.pop();
                rest = r;
            }
            out.push((at, base, rest.trim_start()));
        }
    }
    out
}

/// The paths `rest` names: its leading segments, then each item of a `{..}` group (nested
/// groups give each of their items).
fn path_tails(rest: &str) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut lead = Vec::new();
    let mut s = rest.trim_start();
    loop {
        let name: String = s.chars().take_while(|&c| ident(c)).collect();
        if name.is_empty() {
            break;
        }
        s = s[name.len()..].trim_start();
        lead.push(name);
        match s.strip_prefix("::") {
            Some(r) => s = r.trim_start(),
            None => return vec![lead],
        }
    }
    let Some(group) = s.strip_prefix('{') else {
        return vec![lead];
    };
    let mut out = Vec::new();
    for item in group_items(group) {
        for tail in path_tails(item) {
            let mut p = lead.clone();
            p.extend(tail.into_iter().filter(|t| t != "self"));
            out.push(p);
        }
    }
    if out.is_empty() {
        out.push(lead);
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
    fn module_paths_resolve_crate_self_and_super_from_the_file() {
        let code = "use crate::a::X;\nuse crate::{b::{Y, Z}, c, self};\nfn f() { crate :: d::g(); }\n\
                    pub(crate) fn h() {}\nuse super::line::inner;\nuse super::super::top;\n\
                    use self::kid::K;\nuse super::{fold::{A, B}, scan};\n";
        let found: Vec<(usize, String)> = module_paths(code, "input::fold")
            .into_iter()
            .map(|(at, m)| (line_of(code, at), m.join("::")))
            .collect();
        let want = [
            (1, "a::X"),
            (2, "b::Y"),
            (2, "b::Z"),
            (2, "c"),
            (3, "d::g"),
            (5, "input::line::inner"),
            (6, "top"),
            (7, "input::fold::kid::K"),
            (8, "input::fold::A"),
            (8, "input::fold::B"),
            (8, "input::scan"),
        ];
        assert_eq!(
            found,
            want.map(|(l, m)| (l, m.to_owned())).to_vec(),
            "{found:?}"
        );
    }

    #[test]
    fn module_paths_and_siblings() {
        let m = |p: &str| module_path(Path::new(p));
        assert_eq!(m("src/a.rs").as_deref(), Some("a"));
        assert_eq!(m("src/a/mod.rs").as_deref(), Some("a"));
        assert_eq!(m("src/a/b/c.rs").as_deref(), Some("a::b::c"));
        assert_eq!(m("src/lib.rs").as_deref(), Some(""));
        assert_eq!(m("src/bin/tool.rs"), None);
        assert_eq!(m("tests/a.rs"), None);
        // Siblings under the deepest common module; none between a module and its kin.
        let sib = |a, b| siblings(a, b).map(|(x, y)| format!("{x} -> {y}"));
        assert_eq!(sib("a::b::c", "a::d::e").as_deref(), Some("a::b -> a::d"));
        assert_eq!(sib("a", "b::c").as_deref(), Some("a -> b"));
        assert_eq!(sib("a::b", "a"), None);
        assert_eq!(sib("a", "a::b"), None);
        assert_eq!(sib("", "a"), None);
        assert_eq!(sib("a", "a"), None);
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
