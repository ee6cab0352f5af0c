//! [`Rule::ErrorContext`]: a thiserror variant prints its cause once. A `#[error("...")]`
//! message that interpolates the variant's source field (named `source`, or marked
//! `#[source]` / `#[from]`) prints the cause twice in a chain (`{e:#}`, anyhow's `{:#}`):
//! `path: error: error`. Either the message carries the cause (and the field is no source), or
//! the field is the source (and the message leaves it out, or is `transparent`).

use crate::lexer::line_of;
use crate::source::test_ranges;
use crate::tree::Kind;
use crate::{Rule, Violation, Workspace};

pub fn check(ws: &Workspace) -> Vec<Violation> {
    let mut out = Vec::new();
    for krate in &ws.crates {
        for file in krate.files.iter().filter(|f| f.kind != Kind::Test) {
            let tests = test_ranges(&file.code);
            for (at, field) in double_printed(&file.no_comments)
                .into_iter()
                .filter(|(at, _)| !tests.iter().any(|r| r.contains(at)))
            {
                out.push(Violation {
                    rule: Rule::ErrorContext,
                    path: file.path.clone(),
                    line: line_of(&file.no_comments, at),
                    message: format!(
                        "the message prints `{field}`, which is also the error's source: the \
                         cause would print twice in a chain; keep it in one place"
                    ),
                });
            }
        }
    }
    out
}

/// (offset of the `#[error(`, the field) for each message that prints its source field.
pub fn double_printed(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("#[error(") {
        let args_start = at + "#[error(".len();
        let Some(args_len) = closing(&text[args_start..], '(', ')') else {
            continue;
        };
        let args = &text[args_start..args_start + args_len];
        if args.trim() == "transparent" {
            continue;
        }
        let Some(fields) = item_fields(&text[args_start + args_len..]) else {
            continue;
        };
        for (name, is_source) in fields {
            if is_source && prints(args, &name) {
                out.push((at, name));
            }
        }
    }
    out
}

/// Length up to (not including) the `close` that balances an already-open `open`.
fn closing(s: &str, open: char, close: char) -> Option<usize> {
    let mut depth = 1;
    let mut in_str = false;
    let mut prev = '\0';
    for (i, c) in s.char_indices() {
        if in_str {
            if c == '"' && prev != '\\' {
                in_str = false;
            }
        } else if c == '"' {
            in_str = true;
        } else if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
        prev = if prev == '\\' && c == '\\' { '\0' } else { c };
    }
    None
}

/// Whether the message arguments print `field` (`{field}`, `{field:?}`, `.field`; `{0}` for a
/// tuple field).
fn prints(args: &str, field: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let braced = args.match_indices(&format!("{{{field}")).any(|(i, m)| {
        let after = args[i + m.len()..].chars().next();
        matches!(after, Some('}' | ':'))
    });
    let dotted = args.match_indices(&format!(".{field}")).any(|(i, m)| {
        let after = args[i + m.len()..].chars().next();
        !after.is_some_and(ident)
    });
    braced || dotted
}

/// The fields of the variant or struct after an attribute: (name, is a source). Tuple fields
/// are named `0`, `1`, ...; `None` for a unit variant.
fn item_fields(rest: &str) -> Option<Vec<(String, bool)>> {
    // Skip further attributes and the item's head up to its field list.
    let mut s = rest;
    loop {
        s = s.trim_start();
        if let Some(attr) = s.strip_prefix("#[") {
            s = &attr[closing(attr, '[', ']')? + 1..];
        } else {
            break;
        }
    }
    let open = s.find(['{', '(', ',', ';', '}'])?;
    let (delim, close) = match s.as_bytes()[open] {
        b'{' => ('{', '}'),
        b'(' => ('(', ')'),
        _ => return None,
    };
    let body_start = open + 1;
    let body = &s[body_start..body_start + closing(&s[body_start..], delim, close)?];
    let mut fields = Vec::new();
    for (i, field) in split_top(body).into_iter().enumerate() {
        let attrs_source = field.contains("#[source]") || field.contains("#[from]");
        let mut f = field.as_str();
        while let Some(attr) = f.trim_start().strip_prefix("#[") {
            match closing(attr, '[', ']') {
                Some(end) => f = &attr[end + 1..],
                None => break,
            }
        }
        let f = f.trim_start();
        let f = f.strip_prefix("pub ").unwrap_or(f).trim_start();
        if delim == '{' {
            let Some((name, _)) = f.split_once(':') else {
                continue;
            };
            let name = name.trim().to_string();
            let is_source = attrs_source || name == "source";
            fields.push((name, is_source));
        } else if !f.is_empty() {
            fields.push((i.to_string(), attrs_source));
        }
    }
    Some(fields)
}

/// Splits a field list at its top-level commas.
fn split_top(body: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut depth = 0i32;
    for c in body.chars() {
        match c {
            '<' | '(' | '[' | '{' => depth += 1,
            '>' | ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(String::new());
                continue;
            }
            _ => {}
        }
        if let Some(p) = parts.last_mut() {
            p.push(c);
        }
    }
    parts.retain(|p| !p.trim().is_empty());
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_in_the_message_is_found() {
        let text = r#"
enum E {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: {error}")]
    Printed { path: String, error: std::io::Error },
    #[error("cannot read {path}")]
    Chained { path: String, #[source] error: std::io::Error },
    #[error("sending: {0}")]
    NotSent(#[source] std::io::Error),
    #[error(transparent)]
    Io2(#[from] std::io::Error),
    #[error("bad {0:?}")]
    Bad(String),
    #[error("{}: {err}", .path.display())]
    Shown { path: PathBuf, #[from] err: Box<dyn Error + Send> },
}
"#;
        let found: Vec<String> = double_printed(text).into_iter().map(|(_, f)| f).collect();
        assert_eq!(found, vec!["source", "0", "err"]);
    }
}
