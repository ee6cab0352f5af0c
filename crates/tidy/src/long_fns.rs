//! [`Rule::LongFunction`]: a function outside test code is at most [`LIMIT`] lines long (from
//! its `fn` line to its closing brace), unless a line of the comments and attributes directly
//! above it starts with [`EXEMPTION`] and says why it reads best whole (a linear sequence that
//! reads worse split, such as a state machine).
//!
//! Only `src/` is read. Test code is skipped: `#[cfg(test)]` items, the files of a
//! `#[cfg(test)] mod x;` ([`crate::source::test_code_files`]), and `#[test]` /
//! `#[tokio::test]` functions. Functions are found in the lexer's code view, so braces in
//! strings and comments do not count.

use std::collections::BTreeSet;

use crate::lexer::{line_of, word_offsets};
use crate::source::{non_test_files, test_ranges};
use crate::tree::SourceFile;
use crate::{Rule, Violation, Workspace};

/// The most lines a function may have without saying why.
pub const LIMIT: usize = 100;
/// How the comment that says why a function is long starts.
pub const EXEMPTION: &str = "// Long on purpose:";

/// A function with a body, as found in the code view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    pub name: String,
    /// Offset of its `fn` keyword.
    pub at: usize,
    /// 1-based line of its `fn` keyword.
    pub line: usize,
    /// Lines from its `fn` line to its closing brace, both included.
    pub lines: usize,
}

/// Every function over [`LIMIT`] lines outside test code without an [`EXEMPTION`] comment.
pub fn check(ws: &Workspace) -> Vec<Violation> {
    let mut out = Vec::new();
    for krate in &ws.crates {
        for file in non_test_files(krate) {
            let tests = test_ranges(&file.code);
            for f in functions(&file.code) {
                if f.lines <= LIMIT || tests.iter().any(|r| r.contains(&f.at)) {
                    continue;
                }
                if excused(file, f.line) {
                    continue;
                }
                out.push(Violation {
                    rule: Rule::LongFunction,
                    path: file.path.clone(),
                    line: f.line,
                    message: format!(
                        "fn `{}` is {} lines long (over {LIMIT}): split it along its jobs, or \
                         say why it reads best whole in a `{EXEMPTION}` comment above it",
                        f.name, f.lines
                    ),
                });
            }
        }
    }
    out
}

/// Every function with a body in `code` (the lexer's code view).
pub fn functions(code: &str) -> Vec<Function> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    word_offsets(code, "fn")
        .filter_map(|at| {
            let after = &code[at + "fn".len()..];
            let rest = after.trim_start();
            // `fn(u8) -> u8` is a type; a function is `fn name`.
            let name: String = rest.chars().take_while(|&c| ident(c)).collect();
            if rest.len() == after.len() || name.is_empty() {
                return None;
            }
            let signature = at + "fn".len() + (after.len() - rest.len()) + name.len();
            let open = body_open(code, signature)?;
            let close = closing_brace(code, open)?;
            let line = line_of(code, at);
            Some(Function {
                name,
                at,
                line,
                lines: line_of(code, close) - line + 1,
            })
        })
        .collect()
}

/// The `{` that opens the body of the signature starting at `from`; `None` for a declaration
/// without a body (`fn f();`).
fn body_open(code: &str, from: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in code[from..].char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            '{' if depth == 0 => return Some(from + i),
            ';' | '}' if depth == 0 => return None,
            _ => {}
        }
    }
    None
}

/// The `}` that closes the `{` at `open`.
fn closing_brace(code: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in code[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Whether the comments and attributes directly above line `line` (1-based) say why the
/// function there is long, or mark it a test.
fn excused(file: &SourceFile, line: usize) -> bool {
    let raw: Vec<&str> = file.text.lines().collect();
    let code: Vec<&str> = file.code.lines().collect();
    let attributes = attribute_lines(&file.code);
    let above = (0..line.saturating_sub(1)).rev().take_while(|&i| {
        raw.get(i).is_some_and(|l| l.trim_start().starts_with("//")) || attributes.contains(&i)
    });
    for i in above {
        let says_why = raw.get(i).is_some_and(|l| {
            l.trim_start()
                .strip_prefix(EXEMPTION)
                .is_some_and(|why| !why.trim().is_empty())
        });
        if says_why || code.get(i).is_some_and(|l| is_test_attribute(l)) {
            return true;
        }
    }
    false
}

/// The 0-based lines an attribute (`#[..]`, `#![..]`) of `code` covers, wholly or partly.
fn attribute_lines(code: &str) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices('#') {
        let rest = &code[at + 1..];
        let Some(open) = rest
            .strip_prefix('[')
            .map(|_| at + 1)
            .or_else(|| rest.strip_prefix("![").map(|_| at + 2))
        else {
            continue;
        };
        let mut depth = 0usize;
        let close = code[open..].char_indices().find_map(|(i, c)| {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(open + i);
                    }
                }
                _ => {}
            }
            None
        });
        let end = close.unwrap_or(code.len());
        out.extend(line_of(code, at) - 1..line_of(code, end));
    }
    out
}

/// Whether a line starts a test attribute (`#[test]`, `#[tokio::test]`, `#[tokio::test(..)]`).
fn is_test_attribute(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("#[")
        && (t.starts_with("#[test]") || t.contains("::test]") || t.contains("::test("))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn functions_and_their_lengths() {
        let code = "fn a() {\n    let x = [0u8; 3];\n}\ntrait T {\n    fn b(&self);\n}\n\
                    type F = fn(u8) -> u8;\npub async fn c<T: Fn() -> u8>(t: T) -> u8 where T: Copy { t() }\n";
        let found: Vec<(String, usize, usize)> = functions(code)
            .into_iter()
            .map(|f| (f.name, f.line, f.lines))
            .collect();
        assert_eq!(
            found,
            vec![("a".to_owned(), 1, 3), ("c".to_owned(), 8, 1)],
            "{found:?}"
        );
    }

    #[test]
    fn attributes_may_span_lines() {
        let code = "#[cfg_attr(\n    x,\n    derive(Debug)\n)]\nstruct S;\n#![allow(a)]\n";
        assert_eq!(
            attribute_lines(code).into_iter().collect::<Vec<_>>(),
            vec![0, 1, 2, 3, 5]
        );
        assert!(is_test_attribute("    #[tokio::test(flavor = \"\")]"));
        assert!(!is_test_attribute("#[cfg(test)]"));
    }
}
