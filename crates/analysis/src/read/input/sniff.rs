//! What a file is, from its first bytes: lines (NDJSON rows, raw stdout, k6 logfmt) or one JSON
//! document (an `az` list, a query API answer).

use std::fs::File;
use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value};

use crate::Error;

/// What a file looked like on its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One record per line (NDJSON rows, raw stdout, k6 logfmt).
    Lines,
    /// One JSON document (query API result or az list).
    Document,
}

/// The shape of the file at `path`.
pub fn sniff(path: &Path) -> Result<Shape, Error> {
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut head = vec![0u8; 64 << 10];
    let mut n = 0;
    loop {
        let r = f.read(&mut head[n..]).map_err(|e| Error::io(path, e))?;
        if r == 0 {
            break;
        }
        n += r;
        if n == head.len() {
            break;
        }
    }
    Ok(shape_of(&head[..n]))
}

fn shape_of(head: &[u8]) -> Shape {
    let Some(start) = head.iter().position(|b| !b.is_ascii_whitespace()) else {
        return Shape::Lines;
    };
    match head[start] {
        b'[' => Shape::Document,
        b'{' => {
            // NDJSON when the first line is a complete object that is not a query API result.
            let line_end = memchr::memchr(b'\n', &head[start..]).map_or(head.len(), |i| start + i);
            match serde_json::from_slice::<Map<String, Value>>(&head[start..line_end]) {
                Ok(obj) if !obj.contains_key("tables") => Shape::Lines,
                _ => Shape::Document,
            }
        }
        _ => Shape::Lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_lines_from_documents() {
        assert_eq!(
            shape_of(b"{\"kind\":\"req\"}\n{\"kind\":\"req\"}\n"),
            Shape::Lines
        );
        assert_eq!(shape_of(b"time=\"x\" level=info msg=\"y\"\n"), Shape::Lines);
        assert_eq!(shape_of(b""), Shape::Lines);
        assert_eq!(
            shape_of(b"  [\n  {\n    \"Log_s\": \"x\"\n  }\n]\n"),
            Shape::Document
        );
        assert_eq!(
            shape_of(b"{\"tables\":[{\"name\":\"PrimaryResult\""),
            Shape::Document
        );
        assert_eq!(shape_of(b"{\n  \"a\": 1\n}\n"), Shape::Document);
    }
}
