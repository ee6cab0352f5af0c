//! Planted packs for the check tests: a pack directory written from lines, a runs.json and a
//! lab file, analysed as `labctl analyze` would; and a check gate's status by name.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::Path;

use analysis::judge::verdict::Status;
use analysis::{Analysis, Options, analyze, find_lab};

/// Epoch ms as RFC 3339 with milliseconds, as our lines write `ts`.
pub use analysis::ts::iso_ms;

/// Writes `logs` (file name under `logs/` → its lines), `runs` as runs.json and `lab` as
/// lab.toml into `dir/pack`, and analyses the pack with its lab file.
pub fn analyze_pack(
    dir: &Path,
    logs: &[(&str, Vec<String>)],
    runs: &serde_json::Value,
    lab: &str,
) -> Analysis {
    let pack = dir.join("pack");
    std::fs::create_dir_all(pack.join("logs")).unwrap();
    for (name, lines) in logs {
        std::fs::write(pack.join("logs").join(name), lines.join("\n") + "\n").unwrap();
    }
    std::fs::write(pack.join("runs.json"), runs.to_string()).unwrap();
    std::fs::write(pack.join("lab.toml"), testkit::pack::complete_lab(lab)).unwrap();
    let opts = Options {
        lab: find_lab(None, Some(&pack)),
        ..Options::default()
    };
    analyze(std::slice::from_ref(&pack), &opts).unwrap()
}

/// The status of check `name`'s gate (printed with its detail, for a failing test's log).
pub fn status(a: &Analysis, name: &str) -> Status {
    let g = a
        .gates
        .iter()
        .find(|g| g.name == format!("check:{name}"))
        .unwrap_or_else(|| panic!("no gate {name}: {:#?}", a.gates));
    eprintln!("{name}: {:?} {}", g.status, g.detail);
    g.status
}
