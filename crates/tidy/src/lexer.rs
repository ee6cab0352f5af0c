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

/// `text` with comments blanked, and the contents of literals too unless `keep` says so.
fn blank(text: &str, keep: Keep) -> String {
    let b: Vec<char> = text.chars().collect();
    let keep_literals = keep == Keep::Literals;
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        i = if c == '/' && next == Some('/') {
            let end = b[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(b.len(), |p| i + p);
            push(&mut out, &b[i..end], false);
            end
        } else if c == '/' && next == Some('*') {
            let end = block_comment_end(&b, i);
            push(&mut out, &b[i..end], false);
            end
        } else if let Some(open) = raw_string_open(&b, i) {
            raw_string(&b, i, open, keep_literals, &mut out)
        } else if c == '"' {
            string(&b, i, keep_literals, &mut out)
        } else if c == '\'' {
            char_literal(&b, i, keep_literals, &mut out)
        } else {
            out.push(c);
            i + 1
        };
    }
    out
}

/// Pushes `chars`, blanked (newlines kept) unless `keep_it`.
fn push(out: &mut String, chars: &[char], keep_it: bool) {
    for &c in chars {
        out.push(if keep_it || c == '\n' { c } else { ' ' });
    }
}

/// The end of the (nested) block comment opening at `b[at]`.
fn block_comment_end(b: &[char], at: usize) -> usize {
    let mut depth = 0usize;
    let mut j = at;
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
    j.min(b.len())
}

/// When a raw string (`r#"`, `br"`, ...) starts at `b[at]`, where its `#`s begin.
fn raw_string_open(b: &[char], at: usize) -> Option<usize> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let c = b[at];
    let byte = c == 'b' && b.get(at + 1) == Some(&'r');
    let open = at + usize::from(byte) + 1;
    ((c == 'r' || byte) && (at == 0 || !ident(b[at - 1])) && raw_string_start(b, open).is_some())
        .then_some(open)
}

/// Pushes the raw string starting at `b[at]` (its `#`s at `open`), its contents blanked
/// unless `keep_literals`; returns the index past it.
fn raw_string(b: &[char], at: usize, open: usize, keep_literals: bool, out: &mut String) -> usize {
    let hashes = raw_string_start(b, open).unwrap_or(0);
    let body = open + hashes + 1;
    let close: String = std::iter::once('"')
        .chain(std::iter::repeat_n('#', hashes))
        .collect();
    let end = find(b, body, &close).map_or(b.len(), |p| p + close.chars().count());
    let body_end = end.saturating_sub(hashes + 1).max(body);
    push(out, &b[at..body], true);
    push(out, &b[body..body_end], keep_literals);
    push(out, &b[body_end..end], true);
    end
}

/// Pushes the string literal starting at `b[at]`, its contents blanked unless
/// `keep_literals`; returns the index past it.
fn string(b: &[char], at: usize, keep_literals: bool, out: &mut String) -> usize {
    let mut j = at + 1;
    while j < b.len() && b[j] != '"' {
        j += if b[j] == '\\' { 2 } else { 1 };
    }
    out.push('"');
    push(out, &b[at + 1..j.min(b.len())], keep_literals);
    if j < b.len() {
        out.push('"');
    }
    (j + 1).min(b.len())
}

/// Pushes the char literal ('x', '\n', '\u{1F600}') starting at `b[at]`, its contents blanked
/// unless `keep_literals`, or the quote of a lifetime or label ('a); returns the index past it.
fn char_literal(b: &[char], at: usize, keep_literals: bool, out: &mut String) -> usize {
    let len = if b.get(at + 1) == Some(&'\\') {
        b[at + 2..].iter().position(|&c| c == '\'').map(|p| p + 3)
    } else if b.get(at + 2) == Some(&'\'') {
        Some(3)
    } else {
        None
    };
    match len {
        Some(len) => {
            out.push('\'');
            push(out, &b[at + 1..at + len - 1], keep_literals);
            out.push('\'');
            at + len
        }
        None => {
            out.push('\'');
            at + 1
        }
    }
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
