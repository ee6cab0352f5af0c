//! Two views of a Rust source file for textual rules: without comments (string literals kept,
//! for markers such as `Command::new("docker")`), and without comments or literals (for
//! keywords and types). Both keep every newline, so a byte offset maps to the same line.

/// What to blank out besides comments.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    Literals,
    Nothing,
}

/// `text` with comments replaced by spaces.
pub fn without_comments(text: &str) -> String {
    blank(text, Keep::Literals)
}

/// `text` with comments and the contents of string and char literals replaced by spaces (the
/// quotes stay).
pub fn code_only(text: &str) -> String {
    blank(text, Keep::Nothing)
}

fn blank(text: &str, keep: Keep) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    // Pushes b[from..to], blanked (newlines kept) unless `keep_it`.
    let push = |out: &mut String, from: usize, to: usize, keep_it: bool| {
        for &c in &b[from..to] {
            out.push(if keep_it || c == '\n' { c } else { ' ' });
        }
    };
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            let end = b[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(b.len(), |p| i + p);
            push(&mut out, i, end, false);
            i = end;
        } else if c == '/' && next == Some('*') {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                if b[j] == '/' && b.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if b[j] == '*' && b.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            push(&mut out, i, j.min(b.len()), false);
            i = j.min(b.len());
        } else if (c == 'r' || (c == 'b' && next == Some('r')))
            && (i == 0 || !ident(b[i - 1]))
            && raw_string_start(&b, i + usize::from(c == 'b') + 1).is_some()
        {
            let open = i + usize::from(c == 'b') + 1;
            let hashes = raw_string_start(&b, open).unwrap_or(0);
            let body = open + hashes + 1;
            let close: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let end = find(&b, body, &close).map_or(b.len(), |p| p + close.chars().count());
            push(&mut out, i, body, true);
            push(
                &mut out,
                body,
                end.saturating_sub(hashes + 1).max(body),
                keep == Keep::Literals,
            );
            push(
                &mut out,
                end.saturating_sub(hashes + 1).max(body),
                end,
                true,
            );
            i = end;
        } else if c == '"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != '"' {
                j += if b[j] == '\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            out.push('"');
            push(&mut out, i + 1, j.min(b.len()), keep == Keep::Literals);
            if j < b.len() {
                out.push('"');
            }
            i = end;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{1F600}') or a lifetime / label ('a).
            let len = if next == Some('\\') {
                b[i + 2..].iter().position(|&c| c == '\'').map(|p| p + 3)
            } else if b.get(i + 2) == Some(&'\'') {
                Some(3)
            } else {
                None
            };
            match len {
                Some(len) => {
                    out.push('\'');
                    push(&mut out, i + 1, i + len - 1, keep == Keep::Literals);
                    out.push('\'');
                    i += len;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// When `b[at..]` opens a raw string (`#*"`), the number of `#`.
fn raw_string_start(b: &[char], at: usize) -> Option<usize> {
    let hashes = b.get(at..)?.iter().take_while(|&&c| c == '#').count();
    (b.get(at + hashes) == Some(&'"')).then_some(hashes)
}

fn find(b: &[char], from: usize, needle: &str) -> Option<usize> {
    let n: Vec<char> = needle.chars().collect();
    (from..b.len()).find(|&i| b[i..].starts_with(&n))
}

/// The 1-based line of byte offset `at` in `text`.
pub fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

/// Byte offsets where `word` occurs as a whole identifier.
pub fn word_offsets<'a>(text: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).filter_map(move |(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        (!before.is_some_and(ident) && !after.is_some_and(ident)).then_some(at)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_go_and_lines_stay() {
        let src = "let a = 1; // unsafe\n/* unsafe /* nested */ still */ let b;\n";
        let code = code_only(src);
        assert!(!code.contains("unsafe"), "{code}");
        assert_eq!(code.matches('\n').count(), 2);
        assert!(code.contains("let b;"));
    }

    #[test]
    fn literals_are_blanked_only_in_the_code_view() {
        let src = r####"f("unsafe \" x"); g(r#"anyhow"#); let c = '"'; fn x<'a>(s: &'a str) {}"####;
        let code = code_only(src);
        assert!(
            !code.contains("unsafe") && !code.contains("anyhow"),
            "{code}"
        );
        assert!(code.contains("fn x<'a>(s: &'a str) {}"), "{code}");
        let kept = without_comments(src);
        assert!(
            kept.contains("\"unsafe \\\" x\"") && kept.contains("anyhow"),
            "{kept}"
        );
    }

    #[test]
    fn words_are_whole_identifiers() {
        let hits: Vec<usize> = word_offsets("unsafe_code unsafe x_unsafe", "unsafe").collect();
        assert_eq!(hits, vec![12]);
        assert_eq!(line_of("a\nb\nc", 4), 3);
    }
}
