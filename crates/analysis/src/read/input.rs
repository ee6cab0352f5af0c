//! Readers: auto-detect each input's shape and fold its records into an [`Acc`].
//!
//! Shapes, mixable in one call:
//! - NDJSON `ContainerAppConsoleLogs_CL` / `ContainerAppSystemLogs_CL` rows (`Log_s` holds the
//!   printed line, itself one of ours or a legacy k6 logfmt line);
//! - raw stdout of our images, or other clients' `req` lines (one JSON object per line, any key
//!   order and whitespace, `scheduled_ts` optional);
//! - legacy k6 logfmt lines (`time="..." level=info msg="{\"kind\":\"bucket\",...}"`);
//! - a Log Analytics query API result (`{"tables":[{"columns":[...],"rows":[...]}]}`) or an
//!   `az monitor log-analytics query` list of row objects (values often strings), including
//!   already-aggregated bucket tables (a bucket start plus total/ok/err per run_id).
//!
//! One reason to change per module: [`walk`] finds the files, [`sniff`] tells lines from
//! documents, [`split`] cuts a line-shaped file across the cores, [`document`] streams a JSON
//! document's rows, [`logfmt`] reads k6 lines, [`scan`] is the field-targeted JSON scanner,
//! [`line`] decides what a record is (fast paths first, serde for the rest), [`fold`] adds it to
//! the accumulator. Memory is flat in the number of lines for every shape (only a buffer per
//! thread, and aggregates bounded by the run's duration). Nothing unparseable is fatal: it is
//! counted and the first few are quoted with file:line (row number in a document).

mod document;
mod fold;
mod line;
mod logfmt;
mod scan;
mod sniff;
mod split;
mod walk;

use std::path::{Path, PathBuf};

pub use logfmt::logfmt_msg;
pub use sniff::{Shape, sniff};
pub use split::PARALLEL_MIN_BYTES;
pub use walk::collect;

use crate::Error;
use crate::read::model::Acc;

/// Reads every input into one accumulator binned into `window_ms` windows.
pub fn read_all(files: &[PathBuf], window_ms: i64) -> Result<Acc, Error> {
    let mut acc = Acc::new(window_ms);
    for f in files {
        let one = read_file(f, window_ms)?;
        acc.merge(one);
    }
    acc.finish();
    Ok(acc)
}

/// Reads one file into its own accumulator.
pub fn read_file(path: &Path, window_ms: i64) -> Result<Acc, Error> {
    let name = path.display().to_string();
    let shape = sniff(path)?;
    let size = std::fs::metadata(path)
        .map_err(|e| Error::io(path, e))?
        .len();
    let mut acc = match shape {
        Shape::Document => document::read_document(path, &name, size, window_ms)?,
        Shape::Lines => split::read_lines_file(path, &name, size, window_ms)?,
    };
    let what = match shape {
        Shape::Document => "json-document",
        Shape::Lines => "lines",
    };
    acc.stats.files.insert(0, (name, what.to_owned()));
    Ok(acc)
}
