//! The same run in every input shape the analysis reads (our loadgen's lines, another client's
//! lines, k6 logfmt, console rows, an `az` list, a query API answer) gives identical Q1/Q2 tables,
//! read whole or cut across threads.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use analysis::{Options, analyze};
use serde_json::Value;

#[path = "support/gen_shapes.rs"]
mod gen_shapes;

/// Half an hour at 10 RPS (18,000 requests), failures one in 25 around each revision switch.
fn write(dir: &std::path::Path, shape: &str) -> PathBuf {
    let path = dir.join(format!("{shape}.log"));
    let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    gen_shapes::write(&mut w, 0.5, 10, 25, shape).unwrap();
    drop(w);
    path
}

fn tables(path: &std::path::Path) -> (Vec<Vec<Value>>, Vec<Vec<Value>>, Value) {
    let a = analyze(&[path.to_path_buf()], &Options::default()).unwrap();
    let s = a.stats();
    assert_eq!(s.unparseable, 0, "{}: {:?}", path.display(), s.quoted);
    assert_eq!(s.foreign, 0, "{}: {:?}", path.display(), s.foreign_quoted);
    assert_eq!(s.lines, 18_000, "{}", path.display());
    let q1 = a.table("q1-").unwrap().rows.clone();
    let q2 = a.table("q2-").unwrap().rows.clone();
    let failed: Vec<Value> = a
        .acc
        .failed
        .iter()
        .map(|f| {
            serde_json::json!([
                f.ts_ms,
                f.code,
                f.err_class,
                f.revision,
                f.replica,
                f.dur_ms
            ])
        })
        .collect();
    (q1, q2, Value::Array(failed))
}

#[test]
fn every_shape_gives_the_same_q1_and_q2() {
    let dir = tempfile::tempdir().unwrap();
    let base = tables(&write(dir.path(), "loadgen"));
    let q1 = &base.0;
    assert_eq!(q1.len(), 1);
    // requests, ok, err
    assert_eq!(q1[0][4], 18_000);
    let err = q1[0][6].as_u64().unwrap();
    assert!(err > 5, "the run has failures to compare: {err}");
    assert!(base.1.len() >= 180, "one Q2 row per 10 s window");
    for shape in gen_shapes::SHAPES.iter().filter(|s| **s != "loadgen") {
        let path = write(dir.path(), shape);
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(
            size > analysis::read::input::PARALLEL_MIN_BYTES,
            "{shape}: large enough to be cut across threads"
        );
        let got = tables(&path);
        assert_eq!(got.0, base.0, "{shape}: Q1");
        assert_eq!(got.1, base.1, "{shape}: Q2");
        assert_eq!(got.2, base.2, "{shape}: failed requests");
    }
}
