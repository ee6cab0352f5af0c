//! The tidy test proper: this repository keeps every house rule (see the `tidy` crate docs
//! for the rules and the docs/ARCHITECTURE.md claims they enforce).

use std::path::Path;

#[test]
fn the_workspace_keeps_the_house_rules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let found: Vec<tidy::Violation> = tidy::check(&root)
        .unwrap_or_else(|e| panic!("tidy could not read the tree: {e:?}"))
        .into_iter()
        .collect();
    let listing: Vec<String> = found.iter().map(|v| format!("  {v}")).collect();
    assert!(
        found.is_empty(),
        "{} house rule violation(s):\n{}",
        found.len(),
        listing.join("\n")
    );
}
