//! Legacy k6 lines: logrus logfmt (`time="..." level=info msg="{\"kind\":...}" source=console`),
//! whose quoted `msg` holds the script's JSON line.

use std::sync::LazyLock;

/// Searcher built once: `memmem::find` would build one per call, per line.
static MSG: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new(b" msg=\""));

/// Whether a line looks like logfmt with a `msg`.
pub(crate) fn is_logfmt(s: &[u8]) -> bool {
    s.starts_with(b"time=") || s.starts_with(b"msg=\"") || MSG.find(s).is_some()
}

/// Index of the opening quote of `msg="`.
pub(crate) fn msg_quote(s: &[u8]) -> Option<usize> {
    if s.starts_with(b"msg=\"") {
        Some(4)
    } else {
        MSG.find(s).map(|i| i + 5)
    }
}

/// The unescaped `msg` value into `out`, without allocating. `None` when there is no quoted
/// `msg` or it holds an escape other than `\"`, `\\`, `\n`, `\t`, `\r` (then [`logfmt_msg`]
/// decides).
pub(crate) fn msg_into(s: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let q = msg_quote(s)?;
    out.clear();
    let mut i = q + 1;
    loop {
        let k = super::scan::find_quote_or_escape(s, i)?;
        out.extend_from_slice(&s[i..k]);
        i = k;
        if s[i] == b'"' {
            return Some(());
        }
        let c = match s.get(i + 1)? {
            b'"' => b'"',
            b'\\' => b'\\',
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            _ => return None,
        };
        out.push(c);
        i += 2;
    }
}

/// The unescaped value of `msg="..."` in a logfmt line.
pub fn logfmt_msg(s: &str) -> Option<String> {
    let start = msg_quote(s.as_bytes())?;
    let b = s.as_bytes();
    let mut i = start + 1;
    let mut escaped = false;
    while i < b.len() {
        match b[i] {
            b'\\' if !escaped => escaped = true,
            b'"' if !escaped => break,
            _ => escaped = false,
        }
        i += 1;
    }
    if i >= b.len() {
        return None;
    }
    let quoted = &s[start..=i];
    serde_json::from_str::<String>(quoted).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logfmt_msg_unescapes_the_json() {
        let l = r#"time="2026-06-12T14:18:21Z" level=info msg="{\"kind\":\"bucket\",\"count\":3}" source=console"#;
        assert_eq!(logfmt_msg(l).unwrap(), r#"{"kind":"bucket","count":3}"#);
        let mut out = Vec::new();
        msg_into(l.as_bytes(), &mut out).unwrap();
        assert_eq!(out, br#"{"kind":"bucket","count":3}"#);
    }

    #[test]
    fn the_fast_msg_reader_agrees_or_declines() {
        let mut out = Vec::new();
        let l = r#"msg="a \\ b \"c\" \t" x=1"#;
        msg_into(l.as_bytes(), &mut out).unwrap();
        assert_eq!(std::str::from_utf8(&out).unwrap(), logfmt_msg(l).unwrap());
        assert!(msg_into(br#"level=info msg="\u00e9""#, &mut out).is_none());
        assert!(msg_into(br#"level=info msg="unterminated"#, &mut out).is_none());
        assert!(msg_into(br#"level=info text="x""#, &mut out).is_none());
        assert!(is_logfmt(br#"level=info msg="x""#));
        assert!(!is_logfmt(br#"{"kind":"req"}"#));
    }
}
