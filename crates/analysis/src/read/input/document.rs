//! JSON documents: an `az monitor log-analytics query` list of row objects, or a query API answer
//! (`{"tables":[{"name","columns","rows":[[...]]}]}`), streamed row by row through a buffer (memory
//! flat in the number of rows). Each row goes through the scanner like a line; a row it declines
//! is parsed by serde alone. A document that is not valid JSON is read up to the fault, which is
//! counted and quoted (the rows after it cannot be found reliably).
//!
//! Two threads: the second starts at a likely row boundary after the middle (`},{` between row
//! objects, `],[` between row arrays, whitespace allowed) and reads to the end of that list; the
//! first reads from the start and takes the second's result only if it arrives exactly at that
//! boundary between two rows of the same list. Otherwise (the guess fell inside a string, or the
//! list is not the first one) it reads on alone: the guess costs time, never correctness.

use std::fs::File;
use std::path::Path;

use serde_json::{Map, Value};

use super::line::{Row, Scratch, api_row_at, row_at, row_object};
use super::scan::Stop;
use super::split::read_at;
use crate::Error;
use crate::read::model::{Acc, Loc};

const BUF: usize = 1 << 20;

/// Documents at least this large are read by two threads.
const PARALLEL_MIN_BYTES: u64 = 4 << 20;

/// A file read through a growing window.
struct Stream<'p> {
    f: File,
    path: &'p Path,
    buf: Vec<u8>,
    /// `buf[lo..hi]` is unread; `base` is the file offset of `buf[0]`.
    lo: usize,
    hi: usize,
    base: u64,
    eof: bool,
}

impl<'p> Stream<'p> {
    fn open(path: &'p Path, at: u64) -> Result<Self, Error> {
        Ok(Stream {
            f: File::open(path).map_err(|e| Error::io(path, e))?,
            path,
            buf: vec![0u8; BUF],
            lo: 0,
            hi: 0,
            base: at,
            eof: false,
        })
    }

    fn pos(&self) -> u64 {
        self.base + self.lo as u64
    }

    fn seek(&mut self, at: u64) {
        self.base = at;
        self.lo = 0;
        self.hi = 0;
        self.eof = false;
    }

    /// Reads more bytes after the unread ones; `false` at the end of the file.
    fn more(&mut self) -> Result<bool, Error> {
        if self.eof {
            return Ok(false);
        }
        self.buf.copy_within(self.lo..self.hi, 0);
        self.base += self.lo as u64;
        self.hi -= self.lo;
        self.lo = 0;
        if self.hi == self.buf.len() {
            let n = self.buf.len() * 2;
            self.buf.resize(n, 0);
        }
        let at = self.base + self.hi as u64;
        let n = read_at(&mut self.f, self.path, at, &mut self.buf[self.hi..])?;
        self.hi += n;
        if n == 0 {
            self.eof = true;
        }
        Ok(n > 0)
    }

    /// The next byte that is not whitespace (not consumed), `None` at the end.
    fn peek(&mut self) -> Result<Option<u8>, Error> {
        loop {
            while self.lo < self.hi && self.buf[self.lo].is_ascii_whitespace() {
                self.lo += 1;
            }
            if self.lo < self.hi {
                return Ok(Some(self.buf[self.lo]));
            }
            if !self.more()? {
                return Ok(None);
            }
        }
    }

    /// Consumes `c` if it is the next byte that is not whitespace.
    fn eat(&mut self, c: u8) -> Result<bool, Error> {
        if self.peek()? == Some(c) {
            self.lo += 1;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Runs a scanner on the unread bytes, reading more while it says the value is cut off.
    fn scan<T>(&mut self, mut f: impl FnMut(&[u8]) -> Result<T, Stop>) -> Result<Option<T>, Error> {
        loop {
            match f(&self.buf[self.lo..self.hi]) {
                Ok(t) => return Ok(Some(t)),
                Err(Stop::Incomplete) if self.more()? => {}
                Err(_) => return Ok(None),
            }
        }
    }

    /// One JSON value by serde (consumed), or the parse error with the text where it occurred.
    fn value(&mut self) -> Result<Result<Value, (String, String)>, Error> {
        loop {
            let (r, used) = {
                let mut it = serde_json::Deserializer::from_slice(&self.buf[self.lo..self.hi])
                    .into_iter::<Value>();
                let r = it.next();
                (r, it.byte_offset())
            };
            match r {
                // A number that ends the buffer may go on after it.
                Some(Ok(Value::Number(_))) if self.lo + used == self.hi && self.more()? => {}
                Some(Ok(v)) => {
                    self.lo += used;
                    return Ok(Ok(v));
                }
                None if self.more()? => {}
                None => {
                    return Ok(Err((
                        "(end of file)".to_owned(),
                        "a value is missing".to_owned(),
                    )));
                }
                Some(Err(e)) if e.is_eof() && self.more()? => {}
                Some(Err(e)) => {
                    let end = (self.lo + 200).min(self.hi);
                    let text = String::from_utf8_lossy(&self.buf[self.lo..end]).into_owned();
                    return Ok(Err((text, e.to_string())));
                }
            }
        }
    }

    /// A string key and its colon.
    fn key(&mut self) -> Result<Option<String>, Error> {
        if self.peek()? != Some(b'"') {
            return Ok(None);
        }
        let k = match self.value()? {
            Ok(Value::String(k)) => k,
            _ => return Ok(None),
        };
        Ok(self.eat(b':')?.then_some(k))
    }
}

/// What kind of list the rows are in.
#[derive(Clone)]
enum List {
    /// A top-level list of row objects (`az`).
    Objects,
    /// A query API table's rows, named by its columns.
    Arrays(Vec<String>),
}

/// How reading a list ended.
enum End {
    /// At its closing bracket (consumed).
    Closed,
    /// At a fault, already counted; nothing after it can be read.
    Broken,
}

/// The second thread's part: rows from a boundary to the end of their list.
struct Tail {
    acc: Acc,
    rows: u64,
    /// Where the list ended (after its `]`), or `None` when it ended at a fault.
    end: Option<u64>,
}

/// The second thread, started at `start`, for the first thread to take at that boundary.
struct Handoff<'s> {
    start: u64,
    thread: std::thread::ScopedJoinHandle<'s, Result<Option<Tail>, Error>>,
}

struct Reader<'p> {
    s: Stream<'p>,
    acc: Acc,
    sc: Scratch,
    loc: Loc,
    /// Whether the second thread's rows were taken.
    took: bool,
}

impl<'p> Reader<'p> {
    fn new(path: &'p Path, name: &str, at: u64, window_ms: i64) -> Result<Self, Error> {
        Ok(Reader {
            s: Stream::open(path, at)?,
            acc: Acc::new(window_ms),
            sc: Scratch::default(),
            loc: Loc {
                file: name.to_owned(),
                line: 0,
            },
            took: false,
        })
    }

    fn fault(&mut self, text: &str, why: &str) -> End {
        self.acc.stats.lines += 1;
        self.loc.line += 1;
        self.acc.stats.unparseable_at(&self.loc, text, why);
        End::Broken
    }

    /// One row at the stream's position (after whitespace); `Some` when it was a fault.
    fn row(&mut self, list: &List) -> Result<Option<End>, Error> {
        self.loc.line += 1;
        let (acc, sc, loc) = (&mut self.acc, &mut self.sc, &self.loc);
        let fast = match list {
            List::Objects => self.s.scan(|b| row_at(acc, sc, b, loc))?,
            List::Arrays(cols) => self.s.scan(|b| api_row_at(acc, sc, b, cols, loc))?,
        };
        if let Some(Row::Read(n)) = fast {
            self.acc.stats.lines += 1;
            self.s.lo += n;
            return Ok(None);
        }
        let v = match self.s.value()? {
            Ok(v) => v,
            Err((text, why)) => {
                self.loc.line -= 1;
                return Ok(Some(self.fault(&text, &why)));
            }
        };
        self.acc.stats.lines += 1;
        match (list, v) {
            (List::Objects, Value::Object(m)) => row_object(&mut self.acc, &m, &self.loc),
            (List::Arrays(cols), Value::Array(vals)) => {
                let m: Map<String, Value> = cols.iter().cloned().zip(vals).collect();
                row_object(&mut self.acc, &m, &self.loc);
            }
            (List::Objects, other) => {
                self.acc
                    .stats
                    .unparseable_at(&self.loc, &other.to_string(), "row is not an object")
            }
            (List::Arrays(_), other) => {
                self.acc
                    .stats
                    .unparseable_at(&self.loc, &other.to_string(), "row is not an array")
            }
        }
        Ok(None)
    }

    /// The rows of a list whose `[` is consumed, up to and including its `]`. At the handoff's
    /// boundary, takes the second thread's rows instead of reading them.
    fn rows(&mut self, list: &List, handoff: &mut Option<Handoff<'_>>) -> Result<End, Error> {
        if self.s.eat(b']')? {
            return Ok(End::Closed);
        }
        loop {
            if self.s.peek()?.is_none() {
                return Ok(self.fault("(end of file)", "the list is not closed"));
            }
            if let Some(h) = handoff.take() {
                let here = self.s.pos();
                if here < h.start {
                    *handoff = Some(h);
                } else if here == h.start
                    && let Some(tail) = h.thread.join().unwrap_or_else(|_| {
                        Err(Error::Internal("reader thread panicked".to_owned()))
                    })?
                {
                    let mut acc = tail.acc;
                    acc.stats.shift_lines(self.loc.line);
                    self.loc.line += tail.rows;
                    self.acc.merge(acc);
                    self.took = true;
                    return Ok(match tail.end {
                        Some(e) => {
                            self.s.seek(e);
                            End::Closed
                        }
                        None => End::Broken,
                    });
                }
                // Past the guess without meeting it: it was not a boundary; read on alone.
            }
            if let Some(end) = self.row(list)? {
                return Ok(end);
            }
            if self.s.eat(b',')? {
                continue;
            }
            if self.s.eat(b']')? {
                return Ok(End::Closed);
            }
            let text = self.s.value()?.map_or_else(|e| e.0, |v| v.to_string());
            return Ok(self.fault(&text, "expected , or ] after a row"));
        }
    }

    /// Skips one value (a key of no interest); `false` at a fault (counted).
    fn skip(&mut self) -> Result<bool, Error> {
        match self.s.value()? {
            Ok(_) => Ok(true),
            Err((text, why)) => {
                self.fault(&text, &why);
                Ok(false)
            }
        }
    }

    /// A query API table whose `{` is consumed. `columns` come before `rows` in the API's
    /// answers; rows before any columns are counted as a fault.
    fn table(&mut self, handoff: &mut Option<Handoff<'_>>) -> Result<End, Error> {
        let mut cols: Option<Vec<String>> = None;
        if self.s.eat(b'}')? {
            return Ok(End::Closed);
        }
        loop {
            let Some(k) = self.s.key()? else {
                let text = self.s.value()?.map_or_else(|e| e.0, |v| v.to_string());
                return Ok(self.fault(&text, "expected a key in a table"));
            };
            match k.as_str() {
                "columns" => match self.s.value()? {
                    Ok(v) => cols = Some(column_names(&v)),
                    Err((text, why)) => return Ok(self.fault(&text, &why)),
                },
                "rows" => {
                    let Some(c) = cols.clone() else {
                        return Ok(self.fault("\"rows\"", "table rows before its columns"));
                    };
                    if !self.s.eat(b'[')? {
                        return Ok(self.fault("\"rows\"", "table rows are not a list"));
                    }
                    if let End::Broken = self.rows(&List::Arrays(c), handoff)? {
                        return Ok(End::Broken);
                    }
                }
                _ => {
                    if !self.skip()? {
                        return Ok(End::Broken);
                    }
                }
            }
            if self.s.eat(b',')? {
                continue;
            }
            if self.s.eat(b'}')? {
                return Ok(End::Closed);
            }
            return Ok(self.fault("(table)", "expected , or } in a table"));
        }
    }

    /// A query API answer whose `{` is consumed.
    fn answer(&mut self, handoff: &mut Option<Handoff<'_>>) -> Result<End, Error> {
        if self.s.eat(b'}')? {
            return Ok(End::Closed);
        }
        loop {
            let Some(k) = self.s.key()? else {
                return Ok(self.fault("(answer)", "expected a key"));
            };
            if k == "tables" {
                if !self.s.eat(b'[')? {
                    return Ok(self.fault("\"tables\"", "tables are not a list"));
                }
                if !self.s.eat(b']')? {
                    loop {
                        if !self.s.eat(b'{')? {
                            return Ok(self.fault("(tables)", "a table is not an object"));
                        }
                        if let End::Broken = self.table(handoff)? {
                            return Ok(End::Broken);
                        }
                        // Only the first table's rows are split.
                        *handoff = None;
                        if self.s.eat(b',')? {
                            continue;
                        }
                        if self.s.eat(b']')? {
                            break;
                        }
                        return Ok(self.fault("(tables)", "expected , or ] after a table"));
                    }
                }
            } else if !self.skip()? {
                return Ok(End::Broken);
            }
            if self.s.eat(b',')? {
                continue;
            }
            if self.s.eat(b'}')? {
                return Ok(End::Closed);
            }
            return Ok(self.fault("(answer)", "expected , or } in the answer"));
        }
    }

    /// After the document: nothing but whitespace.
    fn trailing(&mut self) -> Result<(), Error> {
        if self.s.peek()?.is_some() {
            let end = (self.s.lo + 200).min(self.s.hi);
            let text = String::from_utf8_lossy(&self.s.buf[self.s.lo..end]).into_owned();
            self.fault(&text, "text after the JSON document");
        }
        Ok(())
    }
}

fn column_names(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| match c {
                    Value::String(s) => s.clone(),
                    other => other
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What a document is, from its first bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Doc {
    /// `[` row objects `]`.
    List,
    /// `{"tables": ...}`.
    Answer,
    /// Any other JSON value: read whole by serde (a single row object, say).
    Other,
}

fn doc_kind(head: &[u8]) -> Doc {
    let mut i = 0;
    let ws = |i: &mut usize| {
        while *i < head.len() && head[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    ws(&mut i);
    match head.get(i) {
        Some(b'[') => Doc::List,
        Some(b'{') => {
            i += 1;
            ws(&mut i);
            if head[i..].starts_with(b"\"tables\"") {
                Doc::Answer
            } else {
                Doc::Other
            }
        }
        _ => Doc::Other,
    }
}

/// A likely boundary between two rows after `from`: the offset of the `{` (list of objects) or
/// `[` (rows of a table) that follows `}` / `]` and a comma.
fn guess_boundary(path: &Path, from: u64, doc: Doc) -> Result<Option<u64>, Error> {
    let (close, open) = match doc {
        Doc::List => (b'}', b'{'),
        Doc::Answer => (b']', b'['),
        Doc::Other => return Ok(None),
    };
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut buf = vec![0u8; 4 << 20];
    let n = read_at(&mut f, path, from, &mut buf)?;
    let b = &buf[..n];
    for i in memchr::memchr_iter(open, b) {
        let mut j = i;
        let back = |j: &mut usize| {
            while *j > 0 && b[*j - 1].is_ascii_whitespace() {
                *j -= 1;
            }
        };
        back(&mut j);
        if j == 0 || b[j - 1] != b',' {
            continue;
        }
        j -= 1;
        back(&mut j);
        if j > 0 && b[j - 1] == close {
            return Ok(Some(from + i as u64));
        }
    }
    Ok(None)
}

/// The second thread: the rows from `start` to the end of their list. `None` when the header
/// it needs (a table's columns) cannot be read.
fn tail(
    path: &Path,
    name: &str,
    window_ms: i64,
    doc: Doc,
    start: u64,
) -> Result<Option<Tail>, Error> {
    let mut r = Reader::new(path, name, 0, window_ms)?;
    let list = match doc {
        Doc::List => List::Objects,
        Doc::Answer => {
            // The first table's columns, from the head of the file.
            let Some(cols) = first_columns(&mut r)? else {
                return Ok(None);
            };
            List::Arrays(cols)
        }
        Doc::Other => return Ok(None),
    };
    r.s.seek(start);
    let end = r.rows(&list, &mut None)?;
    Ok(Some(Tail {
        rows: r.loc.line,
        end: match end {
            End::Closed => Some(r.s.pos()),
            End::Broken => None,
        },
        acc: r.acc,
    }))
}

/// The columns of the first table of a query API answer (when they come before its rows).
fn first_columns(r: &mut Reader<'_>) -> Result<Option<Vec<String>>, Error> {
    let head = r.s.eat(b'{')?
        && r.s.key()?.as_deref() == Some("tables")
        && r.s.eat(b'[')?
        && r.s.eat(b'{')?;
    if !head {
        return Ok(None);
    }
    loop {
        match r.s.key()?.as_deref() {
            Some("columns") => return Ok(r.s.value()?.ok().map(|v| column_names(&v))),
            Some(_) => {
                if r.s.value()?.is_err() || !r.s.eat(b',')? {
                    return Ok(None);
                }
            }
            None => return Ok(None),
        }
    }
}

/// Reads a JSON document of `size` bytes.
pub(crate) fn read_document(
    path: &Path,
    name: &str,
    size: u64,
    window_ms: i64,
) -> Result<Acc, Error> {
    let split = size >= PARALLEL_MIN_BYTES && super::split::threads() > 1;
    Ok(read_split(path, name, window_ms, split.then_some(size / 2))?.0)
}

/// Reads a JSON document, a second thread from the first likely row boundary after `split`;
/// also says whether the second thread's rows were taken.
fn read_split(
    path: &Path,
    name: &str,
    window_ms: i64,
    split: Option<u64>,
) -> Result<(Acc, bool), Error> {
    let mut r = Reader::new(path, name, 0, window_ms)?;
    r.s.more()?;
    let doc = doc_kind(&r.s.buf[..r.s.hi]);
    if doc == Doc::Other {
        return Ok((read_whole(r)?, false));
    }
    let guess = match split {
        Some(at) => guess_boundary(path, at, doc)?,
        None => None,
    };
    std::thread::scope(|sc| {
        let mut handoff = guess.map(|start| Handoff {
            start,
            thread: sc.spawn(move || tail(path, name, window_ms, doc, start)),
        });
        let end = match doc {
            Doc::List => {
                r.s.eat(b'[')?;
                r.rows(&List::Objects, &mut handoff)?
            }
            _ => {
                r.s.eat(b'{')?;
                r.answer(&mut handoff)?
            }
        };
        if let End::Closed = end {
            r.trailing()?;
        }
        Ok((r.acc, guess.is_some() && r.took))
    })
}

/// A document that is neither a list nor a query API answer: parsed whole (a single object).
fn read_whole(mut r: Reader<'_>) -> Result<Acc, Error> {
    let v = match r.s.value()? {
        Ok(v) => v,
        Err((text, why)) => {
            r.fault(&text, &why);
            return Ok(r.acc);
        }
    };
    r.loc.line = 1;
    r.acc.stats.lines += 1;
    match v {
        Value::Object(m) => row_object(&mut r.acc, &m, &r.loc),
        other => r
            .acc
            .stats
            .unparseable_at(&r.loc, &other.to_string(), "not an object or a list"),
    }
    r.trailing()?;
    Ok(r.acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQ: &str = r#"{"kind":"req","ts":"2026-06-12T14:18:2X.123Z","run_id":"r","code":200,"dur_ms":1.5,"ok":true,"revision":"a"}"#;

    fn line(i: usize) -> String {
        let l = REQ.replace('X', &(i % 10).to_string());
        if i % 7 == 3 {
            // a failure, with a `],[` and a `},{` inside the escaped line to mislead the guess
            l.replace(r#""ok":true"#, r#""ok":false,"err_msg":"x},{y],[\"z""#)
        } else {
            l
        }
    }

    fn az(n: usize) -> String {
        let rows: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    "  {{\n    \"Log_s\": {},\n    \"TableName\": \"PrimaryResult\",\n    \"TimeGenerated\": \"2026-06-12T14:18:20Z\"\n  }}",
                    serde_json::to_string(&line(i)).unwrap()
                )
            })
            .collect();
        format!("[\n{}\n]\n", rows.join(",\n"))
    }

    fn api(n: usize) -> String {
        let rows: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    r#"["2026-06-12T14:18:20Z",{}]"#,
                    serde_json::to_string(&line(i)).unwrap()
                )
            })
            .collect();
        format!(
            r#"{{"tables":[{{"name":"PrimaryResult","columns":[{{"name":"TimeGenerated","type":"datetime"}},{{"name":"Log_s","type":"string"}}],"rows":[{}]}},{{"name":"second","columns":[{{"name":"Log_s","type":"string"}}],"rows":[[{}]]}}]}}"#,
            rows.join(","),
            serde_json::to_string(&line(0)).unwrap()
        )
    }

    fn counts(a: &Acc) -> (u64, u64, u64, u64) {
        let (c, e) = a
            .runs
            .iter()
            .flat_map(|r| r.reqs.values())
            .fold((0, 0), |x, w| (x.0 + w.count, x.1 + w.err));
        (a.stats.lines, c, e, a.stats.unparseable)
    }

    fn read(text: &str, split: Option<u64>) -> (Acc, bool) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("doc.json");
        std::fs::write(&path, text).unwrap();
        read_split(&path, "doc", 10_000, split).unwrap()
    }

    #[test]
    fn a_split_document_reads_like_a_whole_one() {
        for (text, rows) in [(az(3000), 3000), (api(3000), 3001)] {
            let (whole, _) = read(&text, None);
            assert_eq!(counts(&whole), (rows, rows, 3000 / 7 + 1, 0));
            let mut taken = 0;
            // every cut: mid-row, mid-string (on a misleading `},{`), between rows
            for k in 1..40 {
                let at = text.len() as u64 * k / 40;
                let (split, took) = read(&text, Some(at));
                assert_eq!(counts(&split), counts(&whole), "cut at {at}");
                taken += usize::from(took);
            }
            assert!(taken > 30, "most cuts hand over: {taken}");
        }
    }

    #[test]
    fn a_broken_document_is_read_up_to_the_fault_and_the_fault_is_quoted() {
        let text = az(100);
        let cut = text.len() / 2;
        let broken = format!("{}@@{}", &text[..cut], &text[cut..]);
        for split in [None, Some(10)] {
            let (a, _) = read(&broken, split);
            let (lines, reqs, _, bad) = counts(&a);
            assert_eq!(bad, 1, "{split:?}");
            assert!(
                reqs > 30 && reqs < 100,
                "rows before the fault are read: {reqs}"
            );
            assert_eq!(lines, reqs + 1);
            assert!(a.stats.quoted[0].1.contains("@@"), "{:?}", a.stats.quoted);
        }
        let (a, _) = read("[1, {\"a\": 2}]", None);
        assert_eq!(a.stats.unparseable, 2);
        assert!(a.stats.quoted[0].1.contains("row is not an object"));
    }
}
