//! One HTTP/1.1 exchange: write a GET, read its response to the end, say whether the
//! connection can carry another.
//!
//! loadgen's requests are all the same GET, so the request bytes are computed once per target
//! (with or without `Connection: close`) and written as they are. The response head is parsed by
//! `httparse` (the parser hyper itself uses) and the body framed as RFC 9112 section 6.3 says:
//! interim 1xx responses are skipped, 204 and 304 have no body, then `Transfer-Encoding:
//! chunked`, then `Content-Length`, else the body runs until the server closes. Reading stops as
//! soon as the response is complete. Doing this here rather than through hyper's client, whose
//! request handle talks to a separate connection task over a channel, more than halved loadgen's
//! user-space work per request (docs/BENCHMARKS.md): one task writes and reads, and nothing is
//! allocated but the read buffer.

use std::mem::MaybeUninit;

use http::header::HeaderValue;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Headers parsed at most (hyper's default).
const MAX_HEADERS: usize = 100;
/// The largest response head accepted.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Read buffer: one read holds a small response whole.
const BUF_BYTES: usize = 4096;

/// Why an exchange got no complete response.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// Writing the request failed: the server cannot have acted on it.
    #[error("sending the request: {0}")]
    NotSent(std::io::Error),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The server closed the connection before the response was complete.
    #[error("connection closed {0}")]
    Closed(&'static str),
    #[error("malformed response: {0}")]
    Malformed(String),
}

impl ExchangeError {
    /// The error class, as for hyper's errors: `reset`, `timeout`, `protocol`, ...
    pub fn class(&self) -> &'static str {
        match self {
            ExchangeError::NotSent(e) | ExchangeError::Io(e) => classify(e),
            ExchangeError::Closed(_) => "reset",
            ExchangeError::Malformed(_) => "protocol",
        }
    }
}

/// Classifies an I/O error of an exchange on an established connection by the first
/// `std::io::Error` in its chain: `reset`, `timeout`, `connect` or `other`.
pub fn classify(e: &(dyn std::error::Error + 'static)) -> &'static str {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(x) = cur {
        if let Some(io) = x.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            match io.kind() {
                ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => return "reset",
                TimedOut => return "timeout",
                ConnectionRefused | AddrNotAvailable | NotConnected | HostUnreachable
                | NetworkUnreachable => return "connect",
                _ => {}
            }
        }
        cur = x.source();
    }
    "other"
}

/// What loadgen keeps of a complete response.
#[derive(Debug, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    pub revision: Option<HeaderValue>,
    pub replica: Option<HeaderValue>,
    /// Every `Set-Cookie` header, when [`Wanted::set_cookie`] asked for them.
    pub set_cookies: Vec<HeaderValue>,
    /// The connection can carry another request: HTTP/1.1 without `Connection: close`, a body
    /// with a known end, and nothing after it.
    pub reusable: bool,
}

/// The attribution headers to keep, lower-case (as `HeaderName::as_str` gives them).
pub struct Wanted<'a> {
    pub revision: &'a str,
    pub replica: &'a str,
    /// Keep the `Set-Cookie` headers (virtual clients with cookie jars).
    pub set_cookie: bool,
}

/// How the body of a response ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Empty,
    Length(u64),
    Chunked,
    UntilClose,
}

/// Writes `request` (a whole HTTP/1.1 request) and reads the response to its end.
pub async fn exchange<S>(
    io: &mut S,
    request: &[u8],
    wanted: &Wanted<'_>,
) -> Result<Head, ExchangeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    io.write_all(request)
        .await
        .map_err(ExchangeError::NotSent)?;
    // A no-op for TCP; TLS may hold the last record until flushed.
    io.flush().await.map_err(ExchangeError::NotSent)?;
    let mut buf: Vec<u8> = Vec::with_capacity(BUF_BYTES);
    let (mut head, framing, head_len) = loop {
        if let Some((head, framing, n)) = parse_head(&buf, wanted)? {
            if (100..200).contains(&head.status) {
                // An interim response (100 Continue, 103 Early Hints): the final one follows.
                buf.drain(..n);
                continue;
            }
            break (head, framing, n);
        }
        if buf.len() >= MAX_HEAD_BYTES {
            return Err(ExchangeError::Malformed(format!(
                "response head larger than {MAX_HEAD_BYTES} bytes"
            )));
        }
        if fill(io, &mut buf).await? == 0 {
            return Err(ExchangeError::Closed(if buf.is_empty() {
                "before the response"
            } else {
                "in the middle of the response head"
            }));
        }
    };
    let clean_end = read_body(io, &mut buf, head_len, framing).await?;
    head.reusable &= clean_end;
    Ok(head)
}

/// Appends what one read gives; 0 at end of stream.
async fn fill<S: AsyncRead + Unpin>(io: &mut S, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    if buf.capacity() - buf.len() < BUF_BYTES / 4 {
        buf.reserve(BUF_BYTES);
    }
    io.read_buf(buf).await
}

/// The head at the start of `buf` with its length and the body's framing, or `None` while
/// incomplete.
fn parse_head(
    buf: &[u8],
    wanted: &Wanted<'_>,
) -> Result<Option<(Head, Framing, usize)>, ExchangeError> {
    if buf.is_empty() {
        return Ok(None);
    }
    // Uninitialised slots: httparse fills only as many as the response has.
    let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut []);
    let n = match httparse::ParserConfig::default()
        .parse_response_with_uninit_headers(&mut resp, buf, &mut slots)
    {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(ExchangeError::Malformed(e.to_string())),
    };
    let status = resp.code.unwrap_or(0);
    if status == 101 {
        return Err(ExchangeError::Malformed(
            "101 Switching Protocols to a request that asked for no upgrade".into(),
        ));
    }
    let mut head = Head {
        status,
        revision: None,
        replica: None,
        set_cookies: Vec::new(),
        reusable: resp.version == Some(1),
    };
    let mut length: Option<u64> = None;
    let mut transfer_encoding: Option<bool> = None; // Some(chunked is the final coding)
    for h in resp.headers.iter() {
        let name = h.name;
        if name.eq_ignore_ascii_case(wanted.revision) {
            head.revision = header_value(h.value);
        } else if name.eq_ignore_ascii_case(wanted.replica) {
            head.replica = header_value(h.value);
        } else if wanted.set_cookie && name.eq_ignore_ascii_case("set-cookie") {
            head.set_cookies.extend(header_value(h.value));
        } else if name.eq_ignore_ascii_case("content-length") {
            let v = content_length(h.value)?;
            if length.is_some_and(|l| l != v) {
                return Err(ExchangeError::Malformed(
                    "conflicting Content-Length headers".into(),
                ));
            }
            length = Some(v);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            // The last coding of the last Transfer-Encoding header decides.
            let last = h.value.rsplit(|b| *b == b',').next().unwrap_or_default();
            transfer_encoding = Some(last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if name.eq_ignore_ascii_case("connection")
            && h.value
                .split(|b| *b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"))
        {
            head.reusable = false;
        }
    }
    let framing = match (status, transfer_encoding, length) {
        (204 | 304, _, _) | (100..=199, _, _) => Framing::Empty,
        (_, Some(true), _) => Framing::Chunked,
        (_, Some(false), _) => Framing::UntilClose,
        (_, None, Some(0)) => Framing::Empty,
        (_, None, Some(l)) => Framing::Length(l),
        (_, None, None) => Framing::UntilClose,
    };
    if framing == Framing::UntilClose {
        head.reusable = false;
    }
    Ok(Some((head, framing, n)))
}

fn header_value(v: &[u8]) -> Option<HeaderValue> {
    HeaderValue::from_bytes(v).ok()
}

fn content_length(v: &[u8]) -> Result<u64, ExchangeError> {
    let bad = || {
        ExchangeError::Malformed(format!(
            "bad Content-Length {:?}",
            String::from_utf8_lossy(v)
        ))
    };
    let v = v.trim_ascii();
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    std::str::from_utf8(v)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(bad)
}

/// Reads (and discards) the body; `buf[head_len..]` is what already arrived of it. True when
/// nothing followed the body (the connection holds no stray bytes).
async fn read_body<S: AsyncRead + Unpin>(
    io: &mut S,
    buf: &mut Vec<u8>,
    head_len: usize,
    framing: Framing,
) -> Result<bool, ExchangeError> {
    let mut chunked = ChunkedBody::default();
    let mut left = match framing {
        Framing::Empty => return Ok(buf.len() == head_len),
        Framing::Length(l) => l,
        Framing::Chunked | Framing::UntilClose => u64::MAX,
    };
    let mut start = head_len;
    loop {
        let data = buf.get(start..).unwrap_or_default();
        match framing {
            Framing::Length(_) => {
                let got = data.len() as u64;
                if got >= left {
                    return Ok(got == left);
                }
                left -= got;
            }
            Framing::Chunked => {
                if let Some(used) = chunked.feed(data)? {
                    return Ok(used == data.len());
                }
            }
            Framing::UntilClose | Framing::Empty => {}
        }
        buf.clear();
        start = 0;
        if fill(io, buf).await? == 0 {
            return match framing {
                Framing::UntilClose => Ok(false),
                _ => Err(ExchangeError::Closed("in the middle of the body")),
            };
        }
    }
}

/// Where a chunked body's decoder stands (RFC 9112 section 7.1).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Reading a chunk size: the value so far and whether a digit was seen.
    #[default]
    SizeStart,
    Size(u64),
    /// After `;`: a chunk extension, skipped to the end of the line.
    Extension(u64),
    SizeLf(u64),
    Data(u64),
    DataCr,
    DataLf,
    /// At the start of a trailer line (after the last chunk).
    TrailerStart,
    Trailer,
    EndLf,
    Done,
}

#[derive(Default)]
struct ChunkedBody {
    state: Chunk,
}

impl ChunkedBody {
    /// Consumes `data`; once the last chunk and the trailers have ended, how many bytes of
    /// `data` that took (the rest is not part of the body).
    fn feed(&mut self, data: &[u8]) -> Result<Option<usize>, ExchangeError> {
        let bad = |what: &str| ExchangeError::Malformed(format!("chunked body: {what}"));
        let mut i = 0;
        while i < data.len() {
            if self.state == Chunk::Done {
                return Ok(Some(i));
            }
            if let Chunk::Data(n) = self.state {
                let take = usize::try_from(n).unwrap_or(usize::MAX).min(data.len() - i);
                i += take;
                let n = n - take as u64;
                self.state = if n == 0 {
                    Chunk::DataCr
                } else {
                    Chunk::Data(n)
                };
                continue;
            }
            let b = data[i];
            i += 1;
            self.state = match (self.state, b) {
                (Chunk::SizeStart, b) => Chunk::Size(hex(b).ok_or_else(|| bad("no chunk size"))?),
                (Chunk::Size(v), b';') | (Chunk::Extension(v), b';') => Chunk::Extension(v),
                (Chunk::Size(v), b'\r') | (Chunk::Extension(v), b'\r') => Chunk::SizeLf(v),
                (Chunk::Size(v), b'\n')
                | (Chunk::Extension(v), b'\n')
                | (Chunk::SizeLf(v), b'\n') => {
                    if v == 0 {
                        Chunk::TrailerStart
                    } else {
                        Chunk::Data(v)
                    }
                }
                (Chunk::Size(v), b' ' | b'\t') => Chunk::Extension(v),
                (Chunk::Size(v), b) => {
                    let d = hex(b).ok_or_else(|| bad("bad chunk size"))?;
                    Chunk::Size(
                        v.checked_mul(16)
                            .and_then(|v| v.checked_add(d))
                            .ok_or_else(|| bad("chunk size overflows"))?,
                    )
                }
                (Chunk::Extension(v), _) => Chunk::Extension(v),
                (Chunk::SizeLf(_), _) => return Err(bad("CR without LF after a chunk size")),
                (Chunk::DataCr, b'\r') => Chunk::DataLf,
                (Chunk::DataCr, b'\n') | (Chunk::DataLf, b'\n') => Chunk::SizeStart,
                (Chunk::DataCr | Chunk::DataLf, _) => {
                    return Err(bad("chunk data longer than its size"));
                }
                (Chunk::TrailerStart, b'\r') => Chunk::EndLf,
                (Chunk::TrailerStart, b'\n') | (Chunk::EndLf, b'\n') => Chunk::Done,
                (Chunk::EndLf, _) => return Err(bad("CR without LF at the end")),
                (Chunk::Trailer, b'\n') => Chunk::TrailerStart,
                (Chunk::TrailerStart | Chunk::Trailer, _) => Chunk::Trailer,
                (Chunk::Data(_) | Chunk::Done, _) => self.state,
            };
        }
        Ok((self.state == Chunk::Done).then_some(i))
    }
}

fn hex(b: u8) -> Option<u64> {
    char::from(b).to_digit(16).map(u64::from)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// What the scripted server does once its reply is all read.
    #[derive(Clone, Copy, PartialEq)]
    enum End {
        /// Closes the connection (end of stream).
        Close,
        /// Keeps it open and sends nothing more: reading on would never finish.
        Hang,
        /// Resets it.
        Reset,
    }

    /// A connection whose server side answers with `reply`, at most `step` bytes per read.
    struct Scripted {
        reply: Vec<u8>,
        pos: usize,
        step: usize,
        end: End,
        written: Vec<u8>,
    }

    fn server(reply: &[u8], step: usize, end: End) -> Scripted {
        Scripted {
            reply: reply.to_vec(),
            pos: 0,
            step,
            end,
            written: Vec::new(),
        }
    }

    impl AsyncRead for Scripted {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            let pos = self.pos;
            let end = (pos + self.step)
                .min(self.reply.len())
                .min(pos + buf.remaining());
            if pos == end {
                return match self.end {
                    End::Close => Poll::Ready(Ok(())),
                    End::Hang => Poll::Pending,
                    End::Reset => Poll::Ready(Err(std::io::ErrorKind::ConnectionReset.into())),
                };
            }
            buf.put_slice(&self.reply[pos..end]);
            self.pos = end;
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncWrite for Scripted {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            b: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            self.written.extend_from_slice(b);
            Poll::Ready(Ok(b.len()))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    const WANTED: Wanted<'static> = Wanted {
        revision: "x-revision",
        replica: "x-replica",
        set_cookie: false,
    };

    /// The exchange with `reply` cut into reads of every size from 1 byte to all of it, the
    /// server doing `end` afterwards: the result must not depend on where reads split the
    /// response. An exchange still reading after a second is reported as `hung`.
    async fn every_split(reply: &[u8], end: End) -> Result<Head, String> {
        let mut first: Option<Result<Head, String>> = None;
        for step in 1..=reply.len().max(1) {
            let mut io = server(reply, step, end);
            let r = tokio::time::timeout(
                std::time::Duration::from_secs(1),
                exchange(&mut io, b"GET / HTTP/1.1\r\n\r\n", &WANTED),
            )
            .await
            .map_err(|_| "hung".to_owned())
            .and_then(|r| r.map_err(|e| format!("{}: {e}", e.class())));
            assert_eq!(io.written, b"GET / HTTP/1.1\r\n\r\n");
            match &first {
                None => first = Some(r),
                Some(f) => assert_eq!(&r, f, "reads of {step} bytes"),
            }
        }
        first.unwrap()
    }

    fn ok(status: u16, rev: Option<&'static str>, reusable: bool) -> Result<Head, String> {
        Ok(Head {
            status,
            revision: rev.map(HeaderValue::from_static),
            replica: None,
            set_cookies: Vec::new(),
            reusable,
        })
    }

    #[tokio::test]
    async fn set_cookie_headers_are_kept_only_when_asked_for() {
        let reply = b"HTTP/1.1 200 OK\r\nSet-Cookie: a=1; Path=/\r\nset-cookie: b=2\r\nContent-Length: 0\r\n\r\n";
        let wanted = Wanted {
            set_cookie: true,
            ..WANTED
        };
        let mut io = server(reply, reply.len(), End::Hang);
        let head = exchange(&mut io, b"GET / HTTP/1.1\r\n\r\n", &wanted)
            .await
            .unwrap();
        assert_eq!(head.set_cookies, ["a=1; Path=/", "b=2"]);
        let mut io = server(reply, reply.len(), End::Hang);
        let head = exchange(&mut io, b"GET / HTTP/1.1\r\n\r\n", &WANTED)
            .await
            .unwrap();
        assert!(head.set_cookies.is_empty());
    }

    #[tokio::test]
    async fn content_length_body_ends_the_exchange_without_waiting_for_the_close() {
        let mut reply =
            b"HTTP/1.1 200 OK\r\nX-Revision: rev-a\r\nContent-Length: 3\r\n\r\nok\n".to_vec();
        assert_eq!(
            every_split(&reply, End::Hang).await,
            ok(200, Some("rev-a"), true)
        );
        // Bytes after the body are left unread, and when they came with it the connection is
        // not reused (when they come later, the pool's idle check sees them).
        reply.extend_from_slice(b"garbage");
        let mut io = server(&reply, reply.len(), End::Hang);
        let r = exchange(&mut io, b"GET /\r\n\r\n", &WANTED).await;
        assert_eq!(r.map_err(|e| e.to_string()), ok(200, Some("rev-a"), false));
    }

    #[tokio::test]
    async fn attribution_headers_are_matched_without_regard_to_case() {
        let reply =
            b"HTTP/1.1 503 Service Unavailable\r\nx-REPLICA: r-1\r\ncontent-length: 0\r\n\r\n";
        let head = every_split(reply, End::Hang).await.unwrap();
        assert_eq!(head.status, 503);
        assert_eq!(head.replica, Some(HeaderValue::from_static("r-1")));
    }

    #[tokio::test]
    async fn chunked_body_with_extensions_and_trailers_is_read_to_its_end() {
        let reply = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n\
            5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n";
        assert_eq!(every_split(reply, End::Hang).await, ok(200, None, true));
    }

    #[tokio::test]
    async fn a_body_without_length_runs_until_the_server_closes() {
        let reply = b"HTTP/1.1 200 OK\r\nServer: old\r\n\r\nall of this is body";
        assert_eq!(every_split(reply, End::Close).await, ok(200, None, false));
        // While the server keeps the connection open the body may go on.
        let mut io = server(reply, 64, End::Hang);
        let wait = std::time::Duration::from_millis(100);
        let r = tokio::time::timeout(wait, exchange(&mut io, b"GET /\r\n\r\n", &WANTED)).await;
        assert!(r.is_err(), "finished before the server closed: {r:?}");
    }

    #[tokio::test]
    async fn interim_responses_are_skipped_and_204_has_no_body() {
        let reply =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nX-Revision: b\r\n\r\n";
        assert_eq!(
            every_split(reply, End::Hang).await,
            ok(204, Some("b"), true)
        );
    }

    #[tokio::test]
    async fn connection_close_and_http_1_0_end_the_connection_after_the_response() {
        let reply =
            b"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 2\r\n\r\nok";
        assert_eq!(every_split(reply, End::Hang).await, ok(200, None, false));
        let reply = b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok";
        assert_eq!(every_split(reply, End::Hang).await, ok(200, None, false));
    }

    #[tokio::test]
    async fn a_close_before_the_response_is_complete_is_a_reset() {
        for (reply, what) in [
            (&b""[..], "before the response"),
            (
                b"HTTP/1.1 200 OK\r\nContent-Le",
                "in the middle of the response head",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
                "in the middle of the body",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
                "in the middle of the body",
            ),
        ] {
            let e = every_split(reply, End::Close).await.unwrap_err();
            assert_eq!(e, format!("reset: connection closed {what}"));
        }
    }

    #[tokio::test]
    async fn a_reset_while_reading_is_classified_reset() {
        let mut io = server(
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab",
            64,
            End::Reset,
        );
        let e = exchange(&mut io, b"GET /\r\n\r\n", &WANTED)
            .await
            .unwrap_err();
        assert_eq!(e.class(), "reset");
    }

    #[tokio::test]
    async fn malformed_responses_are_protocol_errors() {
        for reply in [
            &b"SSH-2.0-OpenSSH_9.2\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nab",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
            b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
        ] {
            // Each is refused from what arrived, without waiting for more.
            let e = every_split(reply, End::Hang).await.unwrap_err();
            assert!(e.starts_with("protocol: malformed response"), "{e}");
        }
    }

    #[tokio::test]
    async fn an_endless_head_is_refused_at_the_limit() {
        let mut reply = b"HTTP/1.1 200 OK\r\n".to_vec();
        while reply.len() <= MAX_HEAD_BYTES {
            reply.extend_from_slice(b"X-Filler: ");
            reply.extend_from_slice(&[b'a'; 2000]);
            reply.extend_from_slice(b"\r\n");
        }
        let mut io = server(&reply, 4096, End::Hang);
        let e = exchange(&mut io, b"GET /\r\n\r\n", &WANTED)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("larger than"), "{e}");
    }
}
