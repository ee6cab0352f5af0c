//! [`Rule::LongModule`]: a module file has at most [`LIMIT`] lines outside its test code, unless
//! its `//!` doc says why it reads best whole, in a line starting [`EXEMPTION`].
//!
//! Only `src/` is read. Test code is not counted: the inline `#[cfg(test)]` items
//! ([`crate::source::test_ranges`]) and the files of a `#[cfg(test)] mod x;`
//! ([`crate::source::test_code_files`]), which are skipped whole.

use crate::source::{non_test_files, test_ranges};
use crate::tree::SourceFile;
use crate::{Rule, Violation, Workspace};

/// The most lines a module may have outside its test code without saying why.
pub const LIMIT: usize = 800;
/// How the `//!` line that says why a module is long starts (after `//!` and spaces).
pub const EXEMPTION: &str = "Long on purpose:";

/// Every module file over [`LIMIT`] lines of non-test code without an [`EXEMPTION`] line.
pub fn check(ws: &Workspace) -> Vec<Violation> {
    let mut out = Vec::new();
    for krate in &ws.crates {
        for file in non_test_files(krate) {
            let lines = non_test_lines(file);
            if lines <= LIMIT || excused(&file.text) {
                continue;
            }
            out.push(Violation {
                rule: Rule::LongModule,
                path: file.path.clone(),
                line: 0,
                message: format!(
                    "{lines} lines outside test code (over {LIMIT}): split the module along its \
                     jobs, or say why it reads best whole in a `//! {EXEMPTION}` line of its doc"
                ),
            });
        }
    }
    out
}

/// The file's lines minus those inside its inline `#[cfg(test)]` items.
pub fn non_test_lines(file: &SourceFile) -> usize {
    let total = file.text.lines().count();
    let in_tests: usize = test_ranges(&file.code)
        .iter()
        .map(|r| file.code[r.clone()].matches('\n').count() + 1)
        .sum();
    total.saturating_sub(in_tests)
}

/// Whether the leading `//!` block has a line that starts with [`EXEMPTION`].
fn excused(text: &str) -> bool {
    text.lines()
        .map_while(|l| l.trim_start().strip_prefix("//!"))
        .any(|doc| doc.trim_start().starts_with(EXEMPTION))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_leading_doc_line_excuses() {
        assert!(excused(
            "//! What it is.\n//! Long on purpose: one state machine.\nfn f() {}\n"
        ));
        assert!(!excused(
            "//! What it is.\n// Long on purpose: not in the doc.\n"
        ));
        assert!(!excused(
            "//! What it is.\nfn f() {}\n//! Long on purpose: too late.\n"
        ));
    }
}
