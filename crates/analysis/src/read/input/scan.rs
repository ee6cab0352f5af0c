//! The field-targeted JSON scanner: walks one flat JSON object (or array) of scalars in any key
//! order and whitespace, handing out each value as a borrowed slice of the input, without
//! allocating. Anything it is not sure of (a nested value, an escaped key, a malformed token) makes
//! it give up, and the caller hands the text to serde; a value cut off by the end of the buffer is
//! reported apart, so a streaming reader can read more and try again.
//!
//! It reads JSON as it stands ([`Plain`]) or as it stands inside a quoted logfmt value
//! ([`InQuotes`]: k6's `msg="{\"kind\":\"req\"}"`, every quote written `\"`), so a k6 line is
//! scanned where it lies instead of being unescaped into a copy first.

/// A scalar value, borrowed from the input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Val<'a> {
    /// A string's raw bytes between the quotes; `true` when they hold escapes.
    Str(&'a [u8], bool),
    /// A number's bytes (validated by the caller when it is used).
    Num(&'a [u8]),
    Bool(bool),
    Null,
}

/// Why a scan stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The input ended inside the value: more bytes may complete it.
    Incomplete,
    /// Not a flat object / array of scalars (or not JSON): let serde decide.
    Declined,
}

#[inline]
fn ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = b.get(i) {
        i += 1;
    }
    i
}

/// `0x01` in every byte of a word.
const LO: u64 = 0x0101_0101_0101_0101;

/// The high bit of each byte of `w` that equals `c` (and maybe of some bytes above the lowest
/// one: only the lowest set bit is exact, which is the one used).
#[inline]
fn bytes_equal(w: u64, c: u8) -> u64 {
    let x = w ^ (LO * u64::from(c));
    x.wrapping_sub(LO) & !x & (LO << 7)
}

/// The index of the next `"` or `\` at or after `from`. The strings of the lines we read are
/// short (a key, a timestamp, an id), where looking at 8 bytes at a time in a register beats a
/// vector search's set-up; what is longer than 32 bytes goes to `memchr2`.
#[inline(always)]
pub(crate) fn find_quote_or_escape(b: &[u8], from: usize) -> Option<usize> {
    let near = (from + 32).min(b.len());
    let mut i = from;
    while let Some(w) = b.get(i..near).and_then(<[u8]>::first_chunk::<8>) {
        let w = u64::from_le_bytes(*w);
        let hit = bytes_equal(w, b'"') | bytes_equal(w, b'\\');
        if hit != 0 {
            return Some(i + (hit.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    for (k, &c) in b[i..near].iter().enumerate() {
        if c == b'"' || c == b'\\' {
            return Some(i + k);
        }
    }
    memchr::memchr2(b'"', b'\\', &b[near..]).map(|k| near + k)
}

/// How the scanned bytes quote the JSON's strings.
pub(crate) trait Quoting {
    /// At `b[i]` (a `"` or a `\`): the string that opens there, as [`string`] returns it; `Declined`
    /// when no string opens there.
    fn string(b: &[u8], i: usize) -> Result<(&[u8], bool, usize), Stop>;
}

/// JSON as it stands.
pub(crate) struct Plain;

impl Quoting for Plain {
    #[inline(always)]
    fn string(b: &[u8], i: usize) -> Result<(&[u8], bool, usize), Stop> {
        if b[i] != b'"' {
            return Err(Stop::Declined);
        }
        string(b, i)
    }
}

/// JSON inside a double-quoted logfmt value, as k6 (logrus, Go's `strconv.Quote`) writes it:
/// every `"` of the JSON is `\"` there and every `\` is `\\`. Only strings without JSON escapes
/// are read (those are the same bytes quoted or not); a JSON escape inside a string (`\\`), a
/// logfmt escape outside one (`\t`) or a bare `"` (the logfmt value ends) declines, and the
/// caller unescapes the value and scans the copy.
pub(crate) struct InQuotes;

impl Quoting for InQuotes {
    #[inline(always)]
    fn string(b: &[u8], i: usize) -> Result<(&[u8], bool, usize), Stop> {
        match b.get(i + 1) {
            None => return Err(Stop::Incomplete),
            Some(b'"') if b[i] == b'\\' => {}
            Some(_) => return Err(Stop::Declined),
        }
        let start = i + 2;
        let Some(at) = find_quote_or_escape(b, start) else {
            return Err(Stop::Incomplete);
        };
        match (b[at], b.get(at + 1)) {
            (b'\\', Some(b'"')) => Ok((&b[start..at], false, at + 2)),
            (b'\\', None) => Err(Stop::Incomplete),
            _ => Err(Stop::Declined),
        }
    }
}

/// At an opening quote: the string's raw bytes, whether it holds escapes, and the index after
/// the closing quote.
#[inline(always)]
fn string(b: &[u8], i: usize) -> Result<(&[u8], bool, usize), Stop> {
    let start = i + 1;
    let mut j = start;
    let mut escaped = false;
    loop {
        let Some(at) = find_quote_or_escape(b, j) else {
            return Err(Stop::Incomplete);
        };
        if b[at] == b'"' {
            return Ok((&b[start..at], escaped, at + 1));
        }
        escaped = true;
        if at + 1 >= b.len() {
            return Err(Stop::Incomplete);
        }
        j = at + 2;
    }
}

/// [`string`] that also writes the unescaped value into `out` (cleared first), in the same
/// pass. An invalid escape or a lone surrogate declines (serde then reports it).
fn string_into<'a>(
    b: &'a [u8],
    i: usize,
    out: &mut Vec<u8>,
) -> Result<(&'a [u8], bool, usize), Stop> {
    out.clear();
    let start = i + 1;
    let mut seg = start;
    let mut escaped = false;
    loop {
        let Some(at) = find_quote_or_escape(b, seg) else {
            return Err(Stop::Incomplete);
        };
        out.extend_from_slice(&b[seg..at]);
        if b[at] == b'"' {
            return Ok((&b[start..at], escaped, at + 1));
        }
        escaped = true;
        let Some(&e) = b.get(at + 1) else {
            return Err(Stop::Incomplete);
        };
        seg = at + 2;
        if let Some(c) = one_char_escape(e) {
            out.push(c);
            continue;
        }
        if e != b'u' {
            return Err(Stop::Declined);
        }
        // A cut escape (or surrogate pair) may be completed by more bytes.
        let Some((ch, used)) = unicode_escape(b, seg) else {
            return Err(if b.len() < seg + 10 {
                Stop::Incomplete
            } else {
                Stop::Declined
            });
        };
        let mut tmp = [0u8; 4];
        out.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
        seg += used;
    }
}

/// The byte a one-character JSON escape (`\n`, `\"`, ...) stands for; `None` for `\u` and
/// for what is not an escape.
#[inline]
fn one_char_escape(e: u8) -> Option<u8> {
    Some(match e {
        b'"' => b'"',
        b'\\' => b'\\',
        b'/' => b'/',
        b'n' => b'\n',
        b't' => b'\t',
        b'r' => b'\r',
        b'b' => 0x08,
        b'f' => 0x0c,
        _ => return None,
    })
}

/// The character of `\\uXXXX` (or a `\\uXXXX\\uXXXX` surrogate pair) whose hex digits start
/// at `i`, and how many bytes it used after the `u`.
fn unicode_escape(b: &[u8], i: usize) -> Option<(char, usize)> {
    let hi = hex4(b, i)?;
    if (0xD800..0xDC00).contains(&hi) {
        if b.get(i + 4) != Some(&b'\\') || b.get(i + 5) != Some(&b'u') {
            return None;
        }
        let lo = hex4(b, i + 6)?;
        if !(0xDC00..0xE000).contains(&lo) {
            return None;
        }
        Some((
            char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))?,
            10,
        ))
    } else {
        Some((char::from_u32(hi)?, 4))
    }
}

/// A scalar at `i` (after whitespace); the value and the index after it.
#[inline(always)]
fn scalar<Q: Quoting>(b: &[u8], i: usize) -> Result<(Val<'_>, usize), Stop> {
    let lit = |word: &[u8], v: Val<'static>| -> Result<(Val<'static>, usize), Stop> {
        let end = i + word.len();
        if b.len() < end {
            if word.starts_with(&b[i..]) {
                return Err(Stop::Incomplete);
            }
            return Err(Stop::Declined);
        }
        if &b[i..end] == word {
            Ok((v, end))
        } else {
            Err(Stop::Declined)
        }
    };
    match b.get(i) {
        None => Err(Stop::Incomplete),
        Some(b'"' | b'\\') => {
            let (s, esc, j) = Q::string(b, i)?;
            Ok((Val::Str(s, esc), j))
        }
        Some(b't') => lit(b"true", Val::Bool(true)),
        Some(b'f') => lit(b"false", Val::Bool(false)),
        Some(b'n') => lit(b"null", Val::Null),
        Some(c) if *c == b'-' || c.is_ascii_digit() => {
            let mut j = i + 1;
            while j < b.len() && matches!(b[j], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                j += 1;
            }
            if j == b.len() {
                return Err(Stop::Incomplete);
            }
            Ok((Val::Num(&b[i..j]), j))
        }
        Some(_) => Err(Stop::Declined),
    }
}

/// Where a container's walk goes on.
enum Next {
    /// A value (or key) starts at this index.
    Value(usize),
    /// The container closed; the index after it.
    End(usize),
}

/// At a container's opening `open` (whitespace allowed before it): where its first value
/// starts, or its end when it is empty.
#[inline]
fn open(b: &[u8], i: usize, open: u8, close: u8) -> Result<Next, Stop> {
    let i = ws(b, i);
    match b.get(i) {
        None => return Err(Stop::Incomplete),
        Some(&c) if c == open => {}
        Some(_) => return Err(Stop::Declined),
    }
    let i = ws(b, i + 1);
    match b.get(i) {
        None => Err(Stop::Incomplete),
        Some(&c) if c == close => Ok(Next::End(i + 1)),
        Some(_) => Ok(Next::Value(i)),
    }
}

/// After a value at `j`: a comma and the next value, or the container's `close`.
#[inline]
fn after_value(b: &[u8], j: usize, close: u8) -> Result<Next, Stop> {
    let i = ws(b, j);
    match b.get(i) {
        None => Err(Stop::Incomplete),
        Some(b',') => Ok(Next::Value(ws(b, i + 1))),
        Some(&c) if c == close => Ok(Next::End(i + 1)),
        Some(_) => Err(Stop::Declined),
    }
}

/// What became of the string value a scan reads inside ([`Inner`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Inside {
    /// Not seen (or not a string).
    No,
    /// A flat JSON object written as a JSON string, read where it lies: its fields went to
    /// [`Inner::fields`], and nothing was copied.
    Read,
    /// Unescaped into [`Inner::out`] (what is not such an object, or holds escapes of its own).
    Copied,
}

/// The string value a scan reads inside: a console row's `Log_s`, which holds one printed line,
/// usually one of our JSON lines (every quote written `\"`).
pub(crate) struct Inner<'o, G> {
    /// Where the value is unescaped when it is not read in place.
    pub out: &'o mut Vec<u8>,
    /// Given each field of the object the value holds, when it is read in place. Fields given
    /// during an attempt that then declines are stale: trust them only when `inside` is `Read`.
    pub fields: G,
    pub inside: Inside,
}

impl<'o, G> Inner<'o, G> {
    pub(crate) fn new(out: &'o mut Vec<u8>, fields: G) -> Self {
        Inner {
            out,
            fields,
            inside: Inside::No,
        }
    }

    /// At the opening quote of the value: its raw bytes as [`string`] returns them (marked
    /// escaped when read in place) and the index after it.
    fn read<'a>(&mut self, b: &'a [u8], i: usize) -> Result<(&'a [u8], bool, usize), Stop>
    where
        G: FnMut(&'a [u8], Val<'a>),
    {
        if let Ok(end) = object::<InQuotes>(b, i + 1, &mut self.fields) {
            // Only spaces may stand between the object and the closing quote.
            let close = end + b[end..].iter().take_while(|&&c| c == b' ').count();
            if b.get(close) == Some(&b'"') {
                self.inside = Inside::Read;
                return Ok((&b[i + 1..close], true, close + 1));
            }
        }
        let v = string_into(b, i, self.out)?;
        self.inside = Inside::Copied;
        Ok(v)
    }
}

/// Walks the flat object starting at `b[i]` (whitespace allowed before it), calling `f` with
/// each key's raw bytes and value; returns the index after the closing brace.
pub(crate) fn object<'a, Q: Quoting>(
    b: &'a [u8],
    i: usize,
    f: impl FnMut(&'a [u8], Val<'a>),
) -> Result<usize, Stop> {
    // A function pointer, not a closure: a closure here would be a new type for each `Q` and
    // `f`, and `Inner::read` instantiates `object` again with it, without end.
    let ignore: fn(&'a [u8], Val<'a>) = |_, _| {};
    object_into::<Q, _>(b, i, b"", &mut Inner::new(&mut Vec::new(), ignore), f)
}

/// [`object`] that also reads the string value of `key` inside ([`Inner`]) as it scans it: for a
/// console row's `Log_s`, one pass instead of an unescaped copy scanned again. Plain JSON only.
pub(crate) fn object_into<'a, Q: Quoting, G: FnMut(&'a [u8], Val<'a>)>(
    b: &'a [u8],
    i: usize,
    key: &[u8],
    inner: &mut Inner<'_, G>,
    mut f: impl FnMut(&'a [u8], Val<'a>),
) -> Result<usize, Stop> {
    let mut i = match open(b, i, b'{', b'}')? {
        Next::Value(i) => i,
        Next::End(end) => return Ok(end),
    };
    loop {
        if !matches!(b.get(i), Some(b'"' | b'\\')) {
            return Err(if i >= b.len() {
                Stop::Incomplete
            } else {
                Stop::Declined
            });
        }
        let (k, esc, j) = Q::string(b, i)?;
        if esc {
            return Err(Stop::Declined);
        }
        i = ws(b, j);
        match b.get(i) {
            None => return Err(Stop::Incomplete),
            Some(b':') => {}
            Some(_) => return Err(Stop::Declined),
        }
        i = ws(b, i + 1);
        let (v, j) = if b.get(i) == Some(&b'"') && !key.is_empty() && k == key {
            let (s, esc, j) = inner.read(b, i)?;
            (Val::Str(s, esc), j)
        } else {
            scalar::<Q>(b, i)?
        };
        f(k, v);
        i = match after_value(b, j, b'}')? {
            Next::Value(i) => i,
            Next::End(end) => return Ok(end),
        };
    }
}

/// Walks the flat array starting at `b[i]`, calling `f` with each element's index and value
/// (the string at index `key`, if any, also read inside, as [`object_into`] does); returns the
/// index after the closing bracket.
pub(crate) fn array_into<'a, G: FnMut(&'a [u8], Val<'a>)>(
    b: &'a [u8],
    i: usize,
    key: Option<usize>,
    inner: &mut Inner<'_, G>,
    mut f: impl FnMut(usize, Val<'a>),
) -> Result<usize, Stop> {
    let mut i = match open(b, i, b'[', b']')? {
        Next::Value(i) => i,
        Next::End(end) => return Ok(end),
    };
    let mut n = 0;
    loop {
        let (v, j) = if key == Some(n) && b.get(i) == Some(&b'"') {
            let (s, esc, j) = inner.read(b, i)?;
            (Val::Str(s, esc), j)
        } else {
            scalar::<Plain>(b, i)?
        };
        f(n, v);
        n += 1;
        i = match after_value(b, j, b']')? {
            Next::Value(i) => i,
            Next::End(end) => return Ok(end),
        };
    }
}

/// Unescapes a JSON string's raw bytes into `out` (cleared first): for a value read in place
/// that must be read again as text, and the reference the fused scan ([`object_into`]) is
/// tested against. `false` when an escape is invalid or encodes a lone surrogate (the caller
/// then lets serde report it).
pub(crate) fn unescape(raw: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    out.reserve(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let Some(k) = memchr::memchr(b'\\', &raw[i..]) else {
            out.extend_from_slice(&raw[i..]);
            return true;
        };
        out.extend_from_slice(&raw[i..i + k]);
        i += k;
        let Some(&e) = raw.get(i + 1) else {
            return false;
        };
        i += 2;
        if let Some(c) = one_char_escape(e) {
            out.push(c);
            continue;
        }
        if e != b'u' {
            return false;
        }
        let Some((ch, used)) = unicode_escape(raw, i) else {
            return false;
        };
        i += used;
        let mut tmp = [0u8; 4];
        out.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
    }
    true
}

fn hex4(b: &[u8], i: usize) -> Option<u32> {
    let h = b.get(i..i + 4)?;
    let mut v = 0u32;
    for &c in h {
        v = v * 16 + (c as char).to_digit(16)?;
    }
    Some(v)
}

const POW10: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// A JSON number as `f64`, exactly as `str::parse` would read it. Plain decimals of at most 15
/// significant digits are computed directly (an exact integer divided by an exact power of ten
/// rounds correctly); anything else goes to the standard parser.
#[inline]
pub(crate) fn f64_of(b: &[u8]) -> Option<f64> {
    let (neg, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        _ => (false, b),
    };
    let mut m: u64 = 0;
    let mut n = 0usize;
    let mut frac: Option<usize> = None;
    let mut simple = !digits.is_empty();
    for (k, &c) in digits.iter().enumerate() {
        match c {
            b'0'..=b'9' => {
                m = m * 10 + u64::from(c - b'0');
                n += 1;
                if n > 15 {
                    simple = false;
                    break;
                }
            }
            b'.' if frac.is_none() && k > 0 && k + 1 < digits.len() => frac = Some(k),
            _ => {
                simple = false;
                break;
            }
        }
    }
    if simple {
        // A leading zero followed by digits is not JSON.
        if digits.len() > 1 && digits[0] == b'0' && digits[1] != b'.' {
            return None;
        }
        let scale = frac.map_or(0, |k| digits.len() - k - 1);
        let v = m as f64 / POW10[scale];
        return Some(if neg { -v } else { v });
    }
    json_number(b).then(|| std::str::from_utf8(b).ok()?.parse().ok())?
}

/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`: the standard parser also takes `1.`, `.5`
/// and `+1`, which serde (and so this reader) refuses.
fn json_number(b: &[u8]) -> bool {
    let mut i = usize::from(b.first() == Some(&b'-'));
    let int = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    if int == 0 || (int > 1 && b[i] == b'0') {
        return false;
    }
    i += int;
    if b.get(i) == Some(&b'.') {
        let f = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if f == 0 {
            return false;
        }
        i += 1 + f;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let e = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        if e == 0 {
            return false;
        }
        i += e;
    }
    i == b.len()
}

/// A JSON number that is an integer in `u16` (an HTTP status).
#[inline]
pub(crate) fn u16_of(b: &[u8]) -> Option<u16> {
    if b.is_empty() || b.len() > 5 || (b.len() > 1 && b[0] == b'0') {
        return None;
    }
    let mut v: u32 = 0;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u32::from(c - b'0');
    }
    u16::try_from(v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(s: &str) -> Result<Vec<(String, Val<'_>)>, Stop> {
        let mut out = Vec::new();
        object::<Plain>(s.as_bytes(), 0, |k, v| {
            out.push((String::from_utf8_lossy(k).into_owned(), v))
        })?;
        Ok(out)
    }

    #[test]
    fn finds_the_first_quote_or_backslash_at_any_offset() {
        for len in 0..80 {
            for at in 0..=len {
                for c in [b'"', b'\\'] {
                    let mut b = vec![b'a'; len];
                    if at < len {
                        b[at] = c;
                        // a later one must not hide the first
                        if at + 1 < len {
                            b[at + 1] = b'"';
                        }
                    }
                    for from in 0..=at.min(len) {
                        let want = (at < len).then_some(at);
                        assert_eq!(find_quote_or_escape(&b, from), want, "{len} {at} {from}");
                    }
                }
            }
        }
        // bytes next to the ones searched for (0x21, 0x5b, 0x5d, high bytes) are not them
        let b = b"!#[]\x5c\xa2\xdc\xff\x01\x00 abc \"";
        assert_eq!(find_quote_or_escape(b, 0), Some(4));
        assert_eq!(find_quote_or_escape(b"\xa2\xdc\x22", 0), Some(2));
    }

    #[test]
    fn reads_any_order_and_whitespace() {
        let p = pairs("{\"b\": 1.5 ,\n \"a\" :\"x\\\"y\", \"c\":true,\"d\":null}").unwrap();
        assert_eq!(p[0], ("b".into(), Val::Num(b"1.5")));
        assert_eq!(p[1], ("a".into(), Val::Str(b"x\\\"y", true)));
        assert_eq!(p[2], ("c".into(), Val::Bool(true)));
        assert_eq!(p[3], ("d".into(), Val::Null));
        assert_eq!(pairs("{}").unwrap().len(), 0);
    }

    #[test]
    fn declines_what_is_not_flat_and_tells_a_cut_from_a_fault() {
        assert_eq!(pairs(r#"{"a":{"b":1}}"#), Err(Stop::Declined));
        assert_eq!(pairs(r#"{"a":[1]}"#), Err(Stop::Declined));
        assert_eq!(pairs(r#"{"a\u0062":1}"#), Err(Stop::Declined));
        assert_eq!(pairs(r#"{"a":tru}"#), Err(Stop::Declined));
        assert_eq!(pairs(r#"{"a":1 "b":2}"#), Err(Stop::Declined));
        assert_eq!(pairs(r#"{"a":"xy"#), Err(Stop::Incomplete));
        assert_eq!(pairs(r#"{"a":12"#), Err(Stop::Incomplete));
        assert_eq!(pairs(r#"{"a":tr"#), Err(Stop::Incomplete));
        assert_eq!(pairs(r#"{"a":1,"#), Err(Stop::Incomplete));
    }

    #[test]
    fn unescapes_like_serde() {
        let mut out = Vec::new();
        for raw in [
            r#"plain"#,
            r#"{\"kind\":\"req\",\"m\":\"a\\\\b\"}"#,
            r#"tab\there\nnew \u00e9 \ud83d\ude00 \/"#,
        ] {
            assert!(unescape(raw.as_bytes(), &mut out));
            let want: String = serde_json::from_str(&format!("\"{raw}\"")).unwrap();
            assert_eq!(std::str::from_utf8(&out).unwrap(), want);
        }
        assert!(!unescape(br"\ud83d alone", &mut out));
        assert!(!unescape(br"\ud83d\u0041", &mut out));
        assert!(!unescape(br"\x41", &mut out));
    }

    /// A scan of `row` reading `Log_s` inside: what it saw, what became of `Log_s`, the copy.
    /// The end, the fields read inside, what became of `Log_s`, its copy.
    type Scanned = (usize, Vec<(Vec<u8>, String)>, Inside, Vec<u8>);

    fn scan_row(row: &[u8]) -> Result<Scanned, Stop> {
        let mut out = Vec::new();
        let mut fields = Vec::new();
        let mut inner = Inner::new(&mut out, |k: &[u8], v: Val<'_>| {
            fields.push((k.to_vec(), format!("{v:?}")))
        });
        let end = object_into::<Plain, _>(row, 0, b"Log_s", &mut inner, |_, _| {})?;
        let inside = inner.inside;
        Ok((end, fields, inside, out))
    }

    #[test]
    fn the_unescaping_scan_agrees_with_unescape_and_with_serde() {
        let log = r#"{"kind":"req","m":"a\\b \u00e9 \ud83d\ude00","n":1}"#;
        let row = format!(
            r#"{{"x": 1, "Log_s": {}, "y": "z"}}"#,
            serde_json::to_string(log).unwrap()
        );
        let mut out = Vec::new();
        let mut seen = Vec::new();
        let mut inner = Inner::new(&mut out, |_: &[u8], _: Val<'_>| {});
        let end = object_into::<Plain, _>(row.as_bytes(), 0, b"Log_s", &mut inner, |k, v| {
            seen.push((k, v))
        })
        .unwrap();
        // Escapes of its own inside: not read in place, unescaped in the scan's pass.
        assert_eq!(inner.inside, Inside::Copied);
        assert_eq!(end, row.len());
        assert_eq!(std::str::from_utf8(&out).unwrap(), log);
        assert_eq!(seen.len(), 3);
        let Val::Str(raw, true) = seen[1].1 else {
            panic!("{:?}", seen[1])
        };
        let mut again = Vec::new();
        assert!(unescape(raw, &mut again));
        assert_eq!(again, out);
        // cut anywhere: incomplete, never a wrong value
        for cut in 1..row.len() {
            let r = scan_row(&row.as_bytes()[..cut]);
            assert_eq!(r.map(|r| r.0), Err(Stop::Incomplete), "cut at {cut}");
        }
        let arr = format!(r#"[1, {}]"#, serde_json::to_string(log).unwrap());
        let mut inner = Inner::new(&mut out, |_: &[u8], _: Val<'_>| {});
        array_into(arr.as_bytes(), 0, Some(1), &mut inner, |_, _| {}).unwrap();
        assert_eq!(std::str::from_utf8(&out).unwrap(), log);
        let bad = r#"{"Log_s": "\x41"}"#;
        assert_eq!(scan_row(bad.as_bytes()).map(|r| r.0), Err(Stop::Declined));
    }

    #[test]
    fn a_json_line_in_log_s_is_read_in_place_as_its_copy_would_be() {
        let log = r#"{"kind":"req","ts":"2026-06-12T14:18:20.017Z","code":200,"dur_ms":17.41,"ok":true,"replica":null}"#;
        let row = format!(
            r#"{{"ContainerAppName_s":"loadgen","Log_s":{},"Stream_s":"stdout"}}"#,
            serde_json::to_string(log).unwrap()
        );
        let (end, fields, inside, out) = scan_row(row.as_bytes()).unwrap();
        assert_eq!((end, inside), (row.len(), Inside::Read));
        assert!(out.is_empty(), "nothing copied");
        let mut want = Vec::new();
        object::<Plain>(log.as_bytes(), 0, |k, v| {
            want.push((k.to_vec(), format!("{v:?}")))
        })
        .unwrap();
        assert_eq!(fields, want);
        // Cut anywhere (a document streamed in blocks): incomplete, never a value.
        for cut in 1..row.len() {
            let r = scan_row(&row.as_bytes()[..cut]);
            assert_eq!(r.map(|r| r.0), Err(Stop::Incomplete), "cut at {cut}");
        }
        // Not one flat object (plain text, a k6 line, text after the object, a trailing
        // newline): copied, as before.
        for log in [
            "Stopping container",
            r#"time="x" level=info msg="{\"kind\":\"req\"}""#,
            r#"{"kind":"req"} more"#,
            "{\"kind\":\"req\"}\n",
            r#"{"kind":{"nested":1}}"#,
        ] {
            let row = format!(r#"{{"Log_s":{}}}"#, serde_json::to_string(log).unwrap());
            let (_, _, inside, out) = scan_row(row.as_bytes()).unwrap();
            assert_eq!(inside, Inside::Copied, "{log}");
            assert_eq!(std::str::from_utf8(&out).unwrap(), log);
        }
    }

    #[test]
    fn json_in_logfmt_quotes_reads_as_its_unescaped_copy_or_declines() {
        let json = r#"{"kind":"req", "ts":"2026-06-12T14:18:20.123Z","code":503,"ok":false,"x":null,"e":""}"#;
        let quoted = format!("msg=\"{}\" source=console", json.replace('"', "\\\""));
        let b = quoted.as_bytes();
        let mut want = Vec::new();
        object::<Plain>(json.as_bytes(), 0, |k, v| want.push((k.to_vec(), v))).unwrap();
        let mut got = Vec::new();
        let end = object::<InQuotes>(b, 5, |k, v| got.push((k.to_vec(), v))).unwrap();
        assert_eq!(got, want);
        assert_eq!(&quoted[end..], "\" source=console");
        // A JSON escape in a string (`\\\"` in the logfmt), a bare quote, a logfmt escape
        // outside a string: declined; a cut: incomplete or declined, never a value.
        for bad in [
            r#"{\"a\":\"x\\\"y\"}"#,
            r#"{\"a\":"x"}"#,
            r#"{\"a\":\t1}"#,
            r#"{"a":1}"#,
        ] {
            assert_eq!(
                object::<InQuotes>(bad.as_bytes(), 0, |_, _| {}),
                Err(Stop::Declined),
                "{bad}"
            );
        }
        for cut in 1..end - 5 {
            assert!(
                object::<InQuotes>(&b[5..5 + cut], 0, |_, _| {}).is_err(),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn numbers_parse_exactly_as_the_standard_parser() {
        for s in [
            "0",
            "17.41",
            "29.487",
            "-3.5",
            "255.062",
            "1e3",
            "0.1",
            "123456789012345.6",
            "1.7976931348623157e308",
            "45.000",
        ] {
            assert_eq!(f64_of(s.as_bytes()), s.parse::<f64>().ok(), "{s}");
        }
        assert_eq!(f64_of(b"01"), None);
        assert_eq!(f64_of(b"1."), None);
        assert_eq!(f64_of(b".5"), None);
        assert_eq!(f64_of(b"1.e3"), None);
        assert_eq!(f64_of(b"1e"), None);
        assert_eq!(f64_of(b"-"), None);
        assert_eq!(u16_of(b"503"), Some(503));
        assert_eq!(u16_of(b"70000"), None);
        assert_eq!(u16_of(b"2.0"), None);
    }
}
