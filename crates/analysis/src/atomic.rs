//! Writing one file atomically (a temp file beside it, then a rename), so a reader never sees
//! a half-written file: the pack's files, `runs.json`, a campaign's report. A bottom module: it
//! imports nothing of this crate but the error type.

use std::io::Write;
use std::path::Path;

use crate::Error;

/// Writes `bytes` to `path` atomically: a temp file beside it, then a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp.{}", std::process::id()));
    let mut f = std::fs::File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
    f.write_all(bytes).map_err(|e| Error::io(&tmp, e))?;
    f.sync_all().map_err(|e| Error::io(&tmp, e))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}
