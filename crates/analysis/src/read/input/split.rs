//! Reading a line-shaped file with every core: the file is cut at newlines into one range per
//! core, each range is streamed through a fixed buffer by its own thread into its own
//! accumulator, and the accumulators are merged in file order (line numbers of later ranges are
//! shifted, so quotes point at the right line). Memory is a buffer per thread, whatever the
//! number of lines.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::line::{Scratch, outer_line};
use crate::Error;
use crate::read::model::{Acc, Loc};

/// Files at least this large are cut into one range per core.
pub const PARALLEL_MIN_BYTES: u64 = 1 << 20;

/// Bytes read at a time per thread.
const BUF: usize = 1 << 20;

/// How many threads read one file: the cores there are, at most 8.
pub(crate) fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// Reads at most `buf.len()` bytes at `at`, fewer only at the end of the file.
pub(crate) fn read_at(f: &mut File, path: &Path, at: u64, buf: &mut [u8]) -> Result<usize, Error> {
    f.seek(SeekFrom::Start(at))
        .map_err(|e| Error::io(path, e))?;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(r) => n += r,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    Ok(n)
}

/// The first offset after `at` that starts a line (just after a newline), `size` if none.
fn line_start_after(f: &mut File, path: &Path, at: u64, size: u64) -> Result<u64, Error> {
    let mut buf = vec![0u8; 64 << 10];
    let mut pos = at;
    while pos < size {
        let n = read_at(f, path, pos, &mut buf)?;
        if n == 0 {
            break;
        }
        if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
            return Ok(pos + i as u64 + 1);
        }
        pos += n as u64;
    }
    Ok(size)
}

/// Reads a line-shaped file of `size` bytes, in parallel when it is large enough.
pub(crate) fn read_lines_file(
    path: &Path,
    name: &str,
    size: u64,
    window_ms: i64,
) -> Result<Acc, Error> {
    let n = if size >= PARALLEL_MIN_BYTES {
        threads()
    } else {
        1
    };
    read_lines_split(path, name, size, window_ms, n)
}

/// Reads a line-shaped file cut into `n` ranges at newlines, one thread each.
pub(crate) fn read_lines_split(
    path: &Path,
    name: &str,
    size: u64,
    window_ms: i64,
    n: usize,
) -> Result<Acc, Error> {
    let mut cuts = vec![0u64];
    if n > 1 {
        let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
        for k in 1..n as u64 {
            let at = line_start_after(&mut f, path, size * k / n as u64, size)?;
            if at > *cuts.last().unwrap_or(&0) && at < size {
                cuts.push(at);
            }
        }
    }
    cuts.push(size);
    let ranges: Vec<(u64, u64)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
    let results: Vec<Result<Acc, Error>> = if ranges.len() == 1 {
        vec![read_lines(path, name, 0, size, window_ms)]
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = ranges
                .iter()
                .map(|&(a, b)| s.spawn(move || read_lines(path, name, a, b, window_ms)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::Internal("reader thread panicked".to_owned()))
                    })
                })
                .collect()
        })
    };
    let mut out: Option<Acc> = None;
    for r in results {
        let mut r = r?;
        match out.as_mut() {
            None => out = Some(r),
            Some(a) => {
                r.stats.shift_lines(a.stats.lines);
                a.merge(r);
            }
        }
    }
    Ok(out.unwrap_or_else(|| Acc::new(window_ms)))
}

/// Streams the lines in `[from, to)` of a file (line numbers counted from `from`).
pub(crate) fn read_lines(
    path: &Path,
    name: &str,
    from: u64,
    to: u64,
    window_ms: i64,
) -> Result<Acc, Error> {
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut acc = Acc::new(window_ms);
    let mut sc = Scratch::default();
    let mut loc = Loc {
        file: name.to_owned(),
        line: 0,
    };
    let mut buf = vec![0u8; BUF];
    // `buf[..have]` holds unread bytes; `pos` is the file offset of `buf[have]`.
    let mut have = 0usize;
    let mut pos = from;
    loop {
        if have == buf.len() {
            // One line longer than the buffer: grow it.
            buf.resize(buf.len() * 2, 0);
        }
        let want = ((to - pos) as usize).min(buf.len() - have);
        let n = if want == 0 {
            0
        } else {
            read_at(&mut f, path, pos, &mut buf[have..have + want])?
        };
        pos += n as u64;
        let end = have + n;
        let at_end = n == 0 || pos >= to;
        let mut start = 0;
        while let Some(i) = memchr::memchr(b'\n', &buf[start..end]) {
            loc.line += 1;
            acc.stats.lines += 1;
            outer_line(&mut acc, &mut sc, &buf[start..start + i], &loc);
            start += i + 1;
        }
        if at_end {
            if start < end {
                loc.line += 1;
                acc.stats.lines += 1;
                outer_line(&mut acc, &mut sc, &buf[start..end], &loc);
            }
            break;
        }
        buf.copy_within(start..end, 0);
        have = end - start;
    }
    Ok(acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n_reader_threads_count_like_one_and_keep_line_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.ndjson");
        let mut text = String::new();
        for i in 0..2000 {
            if i == 1500 {
                text.push_str("garbage\n");
            }
            let ok = i % 100 != 0;
            text.push_str(&format!(
                r#"{{"kind":"req","ts":"2026-06-12T14:18:{:02}.000Z","run_id":"r","scenario":"main","scheduled_ts":"2026-06-12T14:18:00.000Z","code":200,"dur_ms":{}.5,"ok":{ok},"revision":"a"}}"#,
                i % 60,
                i % 50
            ));
            text.push('\n');
        }
        // no newline at the end of the file
        text.pop();
        std::fs::write(&path, &text).unwrap();
        let size = text.len() as u64;
        let sum = |a: &Acc| {
            a.runs[0]
                .reqs
                .values()
                .map(|w| (w.count, w.err, w.hist.len()))
                .fold((0, 0, 0), |x, y| (x.0 + y.0, x.1 + y.1, x.2 + y.2))
        };
        let one = read_lines(&path, "f", 0, size, 10_000).unwrap();
        assert_eq!(sum(&one), (2000, 20, 2000));
        assert_eq!(one.stats.quoted[0].0.line, 1501);
        for n in [2, 3, 7] {
            let many = read_lines_split(&path, "f", size, 10_000, n).unwrap();
            assert_eq!(sum(&many), sum(&one), "{n} threads");
            assert_eq!(many.stats.lines, 2001);
            assert_eq!(
                many.stats.quoted[0].0.line, 1501,
                "line number across the cuts ({n} threads)"
            );
        }
    }

    #[test]
    fn a_line_longer_than_the_buffer_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long.ndjson");
        let long = format!("{{\"kind\":\"x\",\"pad\":\"{}\"}}", "a".repeat(3 * BUF));
        std::fs::write(&path, format!("{long}\n{long}\n")).unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        let a = read_lines(&path, "f", 0, size, 10_000).unwrap();
        assert_eq!(a.stats.lines, 2);
        assert_eq!(a.stats.unknown_kind.get("x"), Some(&2));
    }
}
