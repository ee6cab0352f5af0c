//! The workspace's binaries as cargo leaves them for tests: `target/<profile>/`, found from the
//! running test binary (`target/<profile>/deps/<test>-<hash>`).

use std::path::PathBuf;

/// `target/<profile>/`, after checking that every binary in `required` is there.
///
/// # Panics
/// When the test binary is not where cargo puts one, or a required binary is missing, with the
/// command that builds it (nextest and `cargo test --workspace` build every binary of the
/// workspace first; `cargo test -p <crate>` builds only that crate's).
pub fn dir(required: &[&str]) -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("the test binary's own path: {e}"));
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .unwrap_or_else(|| panic!("{} does not live in target/<profile>/deps", exe.display()))
        .to_path_buf();
    for bin in required {
        let path = dir.join(bin);
        assert!(
            path.is_file(),
            "{} is missing: build the workspace's binaries first (`cargo build --workspace \
             --bins`; nextest and `cargo test --workspace` build them, `cargo test -p <crate>` \
             does not)",
            path.display()
        );
    }
    dir
}
