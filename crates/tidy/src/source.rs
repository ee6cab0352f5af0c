//! The rules read from `.rs` files: [`Rule::Anyhow`], [`Rule::StringError`], [`Rule::Unsafe`]
//! and [`Rule::ModuleDoc`] (see the crate docs for what each enforces).
//!
//! "Library code" is a library's `src/` without its test code: items under `#[cfg(test)]`
//! (an inline `mod tests { .. }`, or a `mod x;` whose file is then test code as a whole).

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::lexer::{line_of, word_offsets};
use crate::tree::{Crate, Kind, SourceFile, module_candidates};
use crate::{Rule, Violation, Workspace};

/// The allowed `unsafe`: (file, how many `unsafe` tokens, why). Each one is documented where it
/// is, with a `// SAFETY:` comment, under an `#[allow(unsafe_code)]` that counts too.
pub const UNSAFE_ALLOWED: &[(&str, usize, &str)] = &[(
    "crates/loadgen/src/pacer.rs",
    1,
    "registering the pacer's timerfd with tokio (`AsyncFd::register_with_interest`): tokio's \
     safe constructors are deprecated as unsound (tokio-rs/tokio#8587)",
)];

/// Library files still allowed a `Result<_, String>`, each with why (`(path, reason)`). None is
/// left since issue 16's typed model landed; an entry whose file has no `Result<_, String>` is a
/// violation too, so the list can only shrink.
pub const STRING_ERROR_ALLOWED: &[(&str, &str)] = &[];

/// Every violation of this module's rules.
pub fn check(ws: &Workspace) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut unsafe_seen: BTreeSet<PathBuf> = BTreeSet::new();
    let mut string_error_files: BTreeSet<PathBuf> = BTreeSet::new();
    for krate in &ws.crates {
        let test_files = test_only_files(krate);
        anyhow_declared(krate, &mut out);
        for file in &krate.files {
            module_doc(file, &mut out);
            if unsafe_tokens(file, &mut out) > 0 {
                unsafe_seen.insert(file.path.clone());
            }
            if file.kind != Kind::Library || test_files.contains(&file.in_crate) {
                continue;
            }
            let tests = test_ranges(&file.code);
            anyhow_in_library(file, &tests, &mut out);
            if string_errors(file, &tests, &mut out) {
                string_error_files.insert(file.path.clone());
            }
        }
    }
    stale_allowances(ws, &unsafe_seen, &string_error_files, &mut out);
    unsafe_lint(ws, &mut out);
    out
}

/// [`Rule::Anyhow`]: the crate declares anyhow in `[dependencies]` but no binary of it uses it.
fn anyhow_declared(krate: &Crate, out: &mut Vec<Violation>) {
    let binary_uses_anyhow = krate
        .files
        .iter()
        .any(|f| f.kind == Kind::Binary && word_offsets(&f.code, "anyhow").next().is_some());
    if declares(&krate.manifest, "dependencies", "anyhow") && !binary_uses_anyhow {
        out.push(Violation {
            rule: Rule::Anyhow,
            path: krate.dir.join("Cargo.toml"),
            line: 0,
            message: if krate.has_lib {
                "declares anyhow in [dependencies] but no binary of the crate uses it \
                 (anyhow is for a binary's main; libraries use thiserror)"
                    .into()
            } else {
                "declares anyhow in [dependencies] but does not use it".into()
            },
        });
    }
}

/// [`Rule::Unsafe`]: every `unsafe` of the file when it has more than its allowance; returns
/// how many `unsafe` (and `allow(unsafe_code)`) it has.
fn unsafe_tokens(file: &SourceFile, out: &mut Vec<Violation>) -> usize {
    let hits: Vec<usize> = word_offsets(&file.code, "unsafe")
        .chain(allow_unsafe(&file.code))
        .collect();
    if hits.is_empty() {
        return 0;
    }
    let allowed = UNSAFE_ALLOWED
        .iter()
        .find(|(p, _, _)| Path::new(p) == file.path);
    // Each allowed `unsafe` comes with its `#[allow(unsafe_code)]`.
    let limit = allowed.map_or(0, |(_, n, _)| 2 * n);
    if hits.len() > limit {
        for &at in &hits {
            out.push(Violation {
                rule: Rule::Unsafe,
                path: file.path.clone(),
                line: line_of(&file.code, at),
                message: "`unsafe` outside the documented allowances \
                          (tidy::source::UNSAFE_ALLOWED)"
                    .into(),
            });
        }
    }
    hits.len()
}

/// [`Rule::Anyhow`]: `anyhow` in a library file, outside its test code (`tests`).
fn anyhow_in_library(file: &SourceFile, tests: &[Range<usize>], out: &mut Vec<Violation>) {
    let in_tests = |at: usize| tests.iter().any(|r| r.contains(&at));
    for at in word_offsets(&file.code, "anyhow").filter(|&at| !in_tests(at)) {
        out.push(Violation {
            rule: Rule::Anyhow,
            path: file.path.clone(),
            line: line_of(&file.code, at),
            message: "anyhow in a library (allowed only in a binary's main.rs / bin/; \
                      use a thiserror enum)"
                .into(),
        });
    }
}

/// [`Rule::StringError`]: `Result<_, String>` in a library file outside its test code
/// (`tests`), unless the file is allowed; returns whether it has any.
fn string_errors(file: &SourceFile, tests: &[Range<usize>], out: &mut Vec<Violation>) -> bool {
    let in_tests = |at: usize| tests.iter().any(|r| r.contains(&at));
    let string_errors: Vec<usize> = string_results(&file.code)
        .into_iter()
        .filter(|&at| !in_tests(at))
        .collect();
    if string_errors.is_empty() {
        return false;
    }
    if STRING_ERROR_ALLOWED
        .iter()
        .any(|(p, _)| Path::new(p) == file.path)
    {
        return true;
    }
    for at in string_errors {
        out.push(Violation {
            rule: Rule::StringError,
            path: file.path.clone(),
            line: line_of(&file.code, at),
            message: "`Result<_, String>` in library code: return a thiserror enum \
                      that keeps the cause"
                .into(),
        });
    }
    true
}

/// An allowance whose file no longer needs it ([`UNSAFE_ALLOWED`] against the files with
/// `unsafe`, [`STRING_ERROR_ALLOWED`] against those with `Result<_, String>`).
fn stale_allowances(
    ws: &Workspace,
    unsafe_seen: &BTreeSet<PathBuf>,
    string_error_files: &BTreeSet<PathBuf>,
    out: &mut Vec<Violation>,
) {
    for (path, _, why) in UNSAFE_ALLOWED {
        let path = Path::new(path);
        if ws.root.join(path).exists() && !unsafe_seen.contains(path) {
            out.push(Violation {
                rule: Rule::Unsafe,
                path: path.to_path_buf(),
                line: 0,
                message: format!("allowed `unsafe` ({why}) is gone: remove its allowance"),
            });
        }
    }
    for (path, _) in STRING_ERROR_ALLOWED {
        let path = Path::new(path);
        if ws.root.join(path).exists() && !string_error_files.contains(path) {
            out.push(Violation {
                rule: Rule::StringError,
                path: path.to_path_buf(),
                line: 0,
                message: "has no `Result<_, String>` left: remove it from \
                          tidy::source::STRING_ERROR_ALLOWED"
                    .into(),
            });
        }
    }
}

fn declares(manifest: &toml::Table, table: &str, dep: &str) -> bool {
    manifest
        .get(table)
        .and_then(|t| t.as_table())
        .is_some_and(|t| t.contains_key(dep))
}

fn module_doc(file: &SourceFile, out: &mut Vec<Violation>) {
    let first = file.text.lines().find(|l| !l.trim().is_empty());
    if !first.is_some_and(|l| l.trim_start().starts_with("//!")) {
        out.push(Violation {
            rule: Rule::ModuleDoc,
            path: file.path.clone(),
            line: 1,
            message: "the module does not start with a `//!` line saying what it is".into(),
        });
    }
}

/// Offsets of `allow(unsafe_code)` (with or without other lints in the list).
fn allow_unsafe(code: &str) -> impl Iterator<Item = usize> + '_ {
    word_offsets(code, "unsafe_code").filter(move |&at| {
        let before = &code[..at];
        let open = before.rfind("allow(").or_else(|| before.rfind("expect("));
        open.is_some_and(|o| !before[o..].contains(')'))
    })
}

/// The workspace denies `unsafe_code`, and every crate inherits the workspace lints.
fn unsafe_lint(ws: &Workspace, out: &mut Vec<Violation>) {
    let level = ws
        .manifest
        .get("workspace")
        .and_then(|w| w.get("lints"))
        .and_then(|l| l.get("rust"))
        .and_then(|r| r.get("unsafe_code"))
        .and_then(|v| {
            v.as_str()
                .or_else(|| v.get("level").and_then(|l| l.as_str()))
        });
    if !matches!(level, Some("deny" | "forbid")) {
        out.push(Violation {
            rule: Rule::Unsafe,
            path: PathBuf::from("Cargo.toml"),
            line: 0,
            message: "[workspace.lints.rust] must set unsafe_code = \"deny\"".into(),
        });
    }
    for krate in &ws.crates {
        let inherits = krate
            .manifest
            .get("lints")
            .and_then(|l| l.get("workspace"))
            .and_then(|w| w.as_bool())
            == Some(true);
        if !inherits {
            out.push(Violation {
                rule: Rule::Unsafe,
                path: krate.dir.join("Cargo.toml"),
                line: 0,
                message: "has no `[lints] workspace = true`: the workspace's unsafe_code = \
                          \"deny\" does not reach it"
                    .into(),
            });
        }
    }
}

/// Byte ranges of items under `#[cfg(test)]` whose body is inline (`mod tests { .. }`, a test
/// helper `fn`), in the code view.
pub fn test_ranges(code: &str) -> Vec<Range<usize>> {
    cfg_test_items(code)
        .into_iter()
        .filter_map(|(start, end, inline)| inline.then_some(start..end))
        .collect()
}

/// (start, end, has a `{ }` body) of each item after a `#[cfg(test)]`.
fn cfg_test_items(code: &str) -> Vec<(usize, usize, bool)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for (at, _) in code.match_indices("#[cfg(test)]") {
        let mut i = at + "#[cfg(test)]".len();
        // Further attributes.
        loop {
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            if b.get(i) == Some(&b'#') {
                let mut depth = 0;
                while i < b.len() {
                    match b[i] {
                        b'[' => depth += 1,
                        b']' => {
                            depth -= 1;
                            if depth == 0 {
                                i += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
            } else {
                break;
            }
        }
        let mut depth = 0i32;
        let mut j = i;
        let mut inline = false;
        while j < b.len() {
            match b[j] {
                b'(' | b'[' => depth += 1,
                b')' | b']' => depth -= 1,
                b';' if depth == 0 => break,
                b'{' if depth == 0 => {
                    inline = true;
                    let mut braces = 0;
                    while j < b.len() {
                        match b[j] {
                            b'{' => braces += 1,
                            b'}' => {
                                braces -= 1;
                                if braces == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                        j += 1;
                    }
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        out.push((at, (j + 1).min(b.len()), inline));
    }
    out
}

/// Files (relative to the crate) that are test code as a whole: `#[cfg(test)] mod x;` of a
/// library file.
fn test_only_files(krate: &Crate) -> BTreeSet<PathBuf> {
    cfg_test_module_files(
        krate,
        krate.files.iter().filter(|f| f.kind == Kind::Library),
    )
}

/// The crate's `src/` files that are not test code as a whole (their inline `#[cfg(test)]`
/// items are still in them: see [`test_ranges`]).
pub fn non_test_files(krate: &Crate) -> impl Iterator<Item = &SourceFile> {
    let test_files = test_code_files(krate);
    krate
        .files
        .iter()
        .filter(move |f| f.kind != Kind::Test && !test_files.contains(&f.in_crate))
}

/// Files (relative to the crate) that are test code as a whole: a `#[cfg(test)] mod x;` of
/// any `src/` file, and every file of the modules under such a file.
pub fn test_code_files(krate: &Crate) -> BTreeSet<PathBuf> {
    let declared =
        cfg_test_module_files(krate, krate.files.iter().filter(|f| f.kind != Kind::Test));
    // `src/a/tests.rs` and `src/a/tests/mod.rs` hold their child modules under `src/a/tests/`.
    let child_dirs: Vec<PathBuf> = declared
        .iter()
        .filter_map(|f| {
            let parent = f.parent()?;
            let stem = f.file_stem()?;
            Some(if stem == "mod" {
                parent.to_path_buf()
            } else {
                parent.join(stem)
            })
        })
        .collect();
    let mut out = declared;
    for file in &krate.files {
        if child_dirs.iter().any(|d| file.in_crate.starts_with(d)) {
            out.insert(file.in_crate.clone());
        }
    }
    out
}

/// The files the `#[cfg(test)] mod x;` items of `files` load.
fn cfg_test_module_files<'a>(
    krate: &Crate,
    files: impl Iterator<Item = &'a SourceFile>,
) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for file in files {
        for (start, end, inline) in cfg_test_items(&file.code) {
            if inline {
                continue;
            }
            let item = &file.code[start..end];
            let Some(name) = item
                .split_once("mod ")
                .map(|(_, rest)| rest.trim_end_matches(';').trim())
            else {
                continue;
            };
            for candidate in module_candidates(&file.in_crate, name) {
                if krate.file(&candidate).is_some() {
                    out.insert(candidate);
                }
            }
        }
    }
    out
}

/// Offsets of `Result<T, String>` (any `T`, whole generic arguments) in the code view.
pub fn string_results(code: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for at in word_offsets(code, "Result") {
        let rest = &code[at + "Result".len()..];
        let Some(args) = rest.trim_start().strip_prefix('<') else {
            continue;
        };
        let Some(parts) = generic_args(args) else {
            continue;
        };
        if parts.len() == 2 {
            let err = parts[1].split_whitespace().collect::<String>();
            if err == "String" || err == "std::string::String" || err == "alloc::string::String" {
                out.push(at);
            }
        }
    }
    out
}

/// The top-level comma-separated arguments up to the `>` that closes them.
fn generic_args(s: &str) -> Option<Vec<String>> {
    let mut parts = vec![String::new()];
    let mut depth = 0i32;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '-' if chars.peek() == Some(&'>') => {
                chars.next();
                parts.last_mut()?.push_str("->");
                continue;
            }
            '<' | '(' | '[' | '{' => depth += 1,
            '>' | ')' | ']' | '}' if depth > 0 => depth -= 1,
            '>' => {
                // A trailing comma leaves an empty last part.
                return Some(
                    parts
                        .into_iter()
                        .map(|p| p.trim().to_string())
                        .filter(|p| !p.is_empty())
                        .collect(),
                );
            }
            ')' | ']' | '}' | ';' => return None,
            ',' if depth == 0 => {
                parts.push(String::new());
                continue;
            }
            _ => {}
        }
        parts.last_mut()?.push(c);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_results_are_found_whole() {
        let code = "fn a() -> Result<Vec<(u8, String)>, String> {}\n\
                    fn b() -> Result<String, Error> {}\n\
                    fn c() -> io::Result<String> {}\n\
                    fn d<F: Fn() -> u8>() -> Result<\n    F,\n    String,\n> {}\n";
        let hits = string_results(code);
        assert_eq!(
            hits.iter().map(|&h| line_of(code, h)).collect::<Vec<_>>(),
            vec![1, 4]
        );
    }

    #[test]
    fn cfg_test_bodies_are_test_code() {
        let code =
            "fn lib() {}\n#[cfg(test)]\n#[allow(x)]\nmod tests { fn t() { {} } }\nfn after() {}\n";
        let ranges = test_ranges(code);
        assert_eq!(ranges.len(), 1);
        let r = &ranges[0];
        assert!(code[r.clone()].ends_with("} } }"), "{:?}", &code[r.clone()]);
        assert!(!r.contains(&code.find("after").unwrap_or(0)));
    }
}
