//! Each house rule can fail: a small tree that keeps every rule is clean, and planting one
//! violation in it makes exactly that rule report it.

use std::fs;
use std::path::Path;

use tidy::{Rule, Violation};

const ROOT: &str = r#"[workspace]
members = ["crates/*"]

[workspace.dependencies]
# local crates; the allowed direction:
#   app      -> core            (the binary)
#   core     -> (nothing local) (tests only: testkit)
#   testkit  -> (nothing local)
# Images (app) never depend on testkit at run time.
core = { path = "crates/core" }

[workspace.lints.rust]
unsafe_code = "deny"
"#;

fn manifest(name: &str, deps: &str, dev: &str) -> String {
    format!(
        "[package]\nname = \"{name}\"\n\n[dependencies]\n{deps}\n[dev-dependencies]\n{dev}\n\
         [lints]\nworkspace = true\n"
    )
}

/// A tree that keeps every rule: `app` (binary, uses anyhow in main), `core` (library with a
/// Docker test through the gate), `testkit` (the gate, which reads the skip switch).
fn clean_tree(root: &Path) {
    let files: &[(&str, String)] = &[
        ("Cargo.toml", ROOT.to_string()),
        (
            "crates/app/Cargo.toml",
            manifest("app", "core.workspace = true\nanyhow = \"1\"\n", ""),
        ),
        (
            "crates/app/src/main.rs",
            "//! The binary.\nfn main() -> anyhow::Result<()> { Ok(()) }\n".into(),
        ),
        (
            "crates/core/Cargo.toml",
            manifest(
                "core",
                "thiserror = \"2\"\n",
                "testkit = { path = \"../testkit\" }\n",
            ),
        ),
        (
            "crates/core/src/lib.rs",
            "//! The library.\n// unsafe and anyhow in a comment are fine.\n\
             pub fn f() -> Result<u8, Error> { Ok(1) }\n\
             pub fn s() -> &'static str { \"Result<u8, String> unsafe\" }\n\
             #[cfg(test)]\nmod tests {\n    fn t() -> Result<(), String> { Ok(()) }\n}\n"
                .into(),
        ),
        (
            "crates/core/tests/engine.rs",
            "//! A Docker test.\nmod common;\n#[tokio::test]\nasync fn t() {\n    \
             let Some(_d) = common::gate().await else { return };\n    \
             std::process::Command::new(\"docker\");\n}\n"
                .into(),
        ),
        (
            "crates/core/tests/common/mod.rs",
            "//! Shared.\npub async fn gate() -> Option<()> { testkit::require_docker().await }\n"
                .into(),
        ),
        ("crates/testkit/Cargo.toml", manifest("testkit", "", "")),
        (
            "crates/testkit/src/lib.rs",
            "//! The gate.\npub async fn require_docker() -> Option<()> {\n    \
             std::env::var(\"PROBELAB_SKIP_DOCKER\").ok().map(|_| ())\n}\n"
                .into(),
        ),
    ];
    for (path, text) in files {
        write(root, path, text);
    }
    write(
        root,
        "docs/ARCHITECTURE.md",
        &architecture(&tidy::Rule::ALL),
    );
    write(root, "README.md", "# The project\n");
}

/// An ARCHITECTURE.md whose tidy table lists `rules`.
fn architecture(rules: &[Rule]) -> String {
    let rows: String = rules
        .iter()
        .map(|r| format!("| `{}` | it breaks |\n", r.name()))
        .collect();
    format!(
        "# Architecture\n\n## Tidy rules\n\n| Rule | Fails when |\n|---|---|\n{rows}\n## After\n"
    )
}

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

fn edit(root: &Path, path: &str, from: &str, to: &str) {
    let text = fs::read_to_string(root.join(path)).expect("read");
    assert!(text.contains(from), "{path} has no {from:?}");
    write(root, path, &text.replacen(from, to, 1));
}

fn check(root: &Path) -> Vec<Violation> {
    tidy::check(root).expect("the tree reads")
}

/// Plants one violation in a clean tree; every violation found is of `rule`, and there is one.
fn planted(rule: Rule, plant: impl FnOnce(&Path)) -> Vec<Violation> {
    let dir = tempfile::tempdir().expect("tempdir");
    clean_tree(dir.path());
    plant(dir.path());
    let found = check(dir.path());
    assert!(
        !found.is_empty(),
        "planting a {rule:?} violation was not noticed"
    );
    assert!(
        found.iter().all(|v| v.rule == rule),
        "expected only {rule:?}: {found:#?}"
    );
    found
}

#[test]
fn the_clean_tree_is_clean() {
    let dir = tempfile::tempdir().expect("tempdir");
    clean_tree(dir.path());
    assert_eq!(check(dir.path()), Vec::<Violation>::new());
}

#[test]
fn a_dependency_the_block_does_not_list_fails() {
    let found = planted(Rule::DependencyDirection, |root| {
        edit(
            root,
            "crates/core/Cargo.toml",
            "thiserror",
            "app = { path = \"../app\" }\nthiserror",
        );
    });
    assert!(
        found[0]
            .message
            .contains("declares run-time dependencies app"),
        "{found:?}"
    );
}

#[test]
fn a_dependency_the_block_lists_but_no_manifest_declares_fails() {
    let found = planted(Rule::DependencyDirection, |root| {
        edit(
            root,
            "Cargo.toml",
            "app      -> core",
            "app      -> core, testkit",
        );
    });
    assert!(
        found.iter().any(|v| v.message.contains("testkit")),
        "{found:?}"
    );
}

#[test]
fn a_tests_only_dependency_must_be_listed_as_such() {
    planted(Rule::DependencyDirection, |root| {
        edit(root, "Cargo.toml", "(tests only: testkit)", "");
    });
}

#[test]
fn a_crate_without_a_line_fails() {
    let found = planted(Rule::DependencyDirection, |root| {
        write(root, "crates/extra/Cargo.toml", &manifest("extra", "", ""));
        write(root, "crates/extra/src/lib.rs", "//! Extra.\n");
    });
    assert!(
        found[0].message.contains("no line for `extra`"),
        "{found:?}"
    );
}

#[test]
fn an_image_reaching_an_excluded_crate_fails() {
    planted(Rule::DependencyDirection, |root| {
        edit(
            root,
            "Cargo.toml",
            "never depend on testkit",
            "never depend on core",
        );
    });
}

#[test]
fn anyhow_in_a_library_fails() {
    let found = planted(Rule::Anyhow, |root| {
        edit(
            root,
            "crates/core/src/lib.rs",
            "Result<u8, Error>",
            "anyhow::Result<u8>",
        );
    });
    assert_eq!((found.len(), found[0].line), (1, 3), "{found:?}");
}

#[test]
fn anyhow_declared_where_no_binary_uses_it_fails() {
    planted(Rule::Anyhow, |root| {
        edit(
            root,
            "crates/core/Cargo.toml",
            "thiserror",
            "anyhow = \"1\"\nthiserror",
        );
    });
}

#[test]
fn a_string_error_in_a_library_fails() {
    let found = planted(Rule::StringError, |root| {
        edit(
            root,
            "crates/core/src/lib.rs",
            "Result<u8, Error>",
            "Result<u8,\n    String>",
        );
    });
    assert_eq!((found.len(), found[0].line), (1, 3), "{found:?}");
}

#[test]
fn unsafe_outside_the_allowance_fails() {
    planted(Rule::Unsafe, |root| {
        edit(
            root,
            "crates/core/tests/engine.rs",
            "async fn t() {",
            "async fn t() {\n    unsafe {}",
        );
    });
    planted(Rule::Unsafe, |root| {
        edit(
            root,
            "crates/app/src/main.rs",
            "fn main",
            "#[allow(unsafe_code)]\nfn main",
        );
    });
}

#[test]
fn a_crate_that_does_not_inherit_the_unsafe_lint_fails() {
    planted(Rule::Unsafe, |root| {
        edit(
            root,
            "crates/core/Cargo.toml",
            "workspace = true",
            "workspace = false",
        );
    });
    planted(Rule::Unsafe, |root| {
        edit(
            root,
            "Cargo.toml",
            "unsafe_code = \"deny\"",
            "unsafe_code = \"warn\"",
        );
    });
}

#[test]
fn a_docker_test_without_the_gate_fails() {
    let found = planted(Rule::DockerGate, |root| {
        edit(
            root,
            "crates/core/tests/common/mod.rs",
            "testkit::require_docker().await",
            "Some(())",
        );
    });
    assert!(
        found[0].message.contains("Command::new(\"docker\")"),
        "{found:?}"
    );
}

#[test]
fn a_gate_of_its_own_fails() {
    planted(Rule::DockerGate, |root| {
        edit(
            root,
            "crates/core/tests/common/mod.rs",
            "testkit::require_docker().await",
            "{ let _ = std::env::var(\"PROBELAB_SKIP_DOCKER\"); testkit::require_docker().await }",
        );
    });
}

#[test]
fn a_module_without_its_doc_line_fails() {
    let found = planted(Rule::ModuleDoc, |root| {
        edit(
            root,
            "crates/core/tests/common/mod.rs",
            "//! Shared.\n",
            "// Shared.\n",
        );
    });
    assert_eq!(found.len(), 1, "{found:?}");
}

#[test]
fn a_cause_printed_twice_fails() {
    let found = planted(Rule::ErrorContext, |root| {
        edit(
            root,
            "crates/core/src/lib.rs",
            "pub fn f()",
            "#[derive(Debug, thiserror::Error)]\npub enum Error {\n    \
             #[error(\"{path}: {source}\")]\n    Io { path: String, source: std::io::Error },\n}\n\
             pub fn f()",
        );
    });
    assert_eq!(found.len(), 1, "{found:?}");
}

/// Plants something in a clean tree that keeps every rule; the tree stays clean.
fn kept(plant: impl FnOnce(&Path)) {
    let dir = tempfile::tempdir().expect("tempdir");
    clean_tree(dir.path());
    plant(dir.path());
    assert_eq!(check(dir.path()), Vec::<Violation>::new());
}

/// Declares modules `a` and `b` in core's library with these texts.
fn two_modules(root: &Path, a: &str, b: &str) {
    edit(
        root,
        "crates/core/src/lib.rs",
        "pub fn f()",
        "pub mod a;\npub mod b;\npub fn f()",
    );
    write(root, "crates/core/src/a.rs", a);
    write(root, "crates/core/src/b/mod.rs", "//! B.\npub mod inner;\n");
    write(root, "crates/core/src/b/inner.rs", b);
}

#[test]
fn a_module_cycle_fails() {
    let found = planted(Rule::ModuleCycle, |root| {
        two_modules(
            root,
            "//! A.\nuse crate::b::inner::B;\npub struct A(pub B);\n",
            "//! B, inside.\npub struct B;\npub fn a() -> crate::a::A {\n    crate::a::A(B)\n}\n",
        );
    });
    assert_eq!(found.len(), 1, "{found:?}");
    let v = &found[0];
    assert_eq!(
        (v.path.to_str(), v.line),
        (Some("crates/core/src/a.rs"), 2),
        "{v:?}"
    );
    assert!(
        v.message.contains(
            "a -> b -> a (a -> b at crates/core/src/a.rs:2, b -> a at crates/core/src/b/inner.rs:3)"
        ),
        "{v:?}"
    );
}

#[test]
fn a_module_named_only_in_comments_strings_and_tests_is_no_cycle() {
    kept(|root| {
        two_modules(
            root,
            "//! A.\nuse crate::b::inner::B;\npub struct A(pub B);\n",
            "//! B, inside; see [`crate::a::A`].\npub struct B;\n\
             // crate::a::A would make a cycle.\n\
             pub fn name() -> &'static str { \"crate::a::A\" }\n\
             #[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n",
        );
    });
}

/// Declares module `p` in core's library, with children `x` and `y` of these texts.
fn nested_modules(root: &Path, parent: &str, x: &str, y: &str) {
    edit(
        root,
        "crates/core/src/lib.rs",
        "pub fn f()",
        "pub mod p;\npub fn f()",
    );
    write(root, "crates/core/src/p/mod.rs", parent);
    write(root, "crates/core/src/p/x.rs", x);
    write(root, "crates/core/src/p/y.rs", y);
}

#[test]
fn a_cycle_of_nested_modules_through_super_paths_fails() {
    let found = planted(Rule::ModuleCycle, |root| {
        nested_modules(
            root,
            "//! P.\npub mod x;\npub mod y;\n",
            "//! X.\nuse super::y::Y;\npub struct X(pub Y);\n",
            "//! Y.\npub struct Y;\npub fn x() -> super::x::X {\n    super::x::X(Y)\n}\n",
        );
    });
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].message.contains(
            "p::x -> p::y -> p::x (p::x -> p::y at crates/core/src/p/x.rs:2, p::y -> p::x at \
             crates/core/src/p/y.rs:3)"
        ),
        "{found:?}"
    );
}

#[test]
fn a_module_using_its_parent_or_its_children_is_no_cycle() {
    kept(|root| {
        nested_modules(
            root,
            "//! P.\npub mod x;\npub mod y;\npub use x::X;\npub struct Shared;\n\
             pub fn make() -> self::y::Y {\n    y::Y\n}\n",
            "//! X.\nuse super::Shared;\npub struct X(pub Shared);\n",
            "//! Y.\nuse crate::p::x::X;\npub struct Y;\npub fn x() -> X {\n    X(super::Shared)\n}\n",
        );
    });
}

/// A function `name` of `lines` lines, from its `fn` line to its closing brace.
fn function(name: &str, lines: usize) -> String {
    let body = "    let _ = 1;\n".repeat(lines - 2);
    format!("pub fn {name}() {{\n{body}}}\n")
}

#[test]
fn a_long_function_fails() {
    let found = planted(Rule::LongFunction, |root| {
        let text = format!("//! Long.\n/// Does a lot.\n{}", function("long", 101));
        edit(
            root,
            "crates/core/src/lib.rs",
            "pub fn f()",
            "pub mod long;\npub fn f()",
        );
        write(root, "crates/core/src/long.rs", &text);
    });
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].line, 3, "{found:?}");
    assert!(
        found[0].message.contains("fn `long` is 101 lines long"),
        "{found:?}"
    );
}

#[test]
fn a_long_function_that_says_why_or_is_a_test_is_kept() {
    kept(|root| {
        let text = format!(
            "//! Long.\n// Long on purpose: one table, read top to bottom.\n/// Does a lot.\n\
             #[allow(clippy::too_many_lines)]\n{}{}#[tokio::test]\n{}\
             #[cfg(test)]\nmod tests {{\n{}}}\n",
            function("long", 101),
            function("at_the_limit", 100),
            function("a_test", 120),
            function("in_tests", 150)
        );
        edit(
            root,
            "crates/core/src/lib.rs",
            "pub fn f()",
            "pub mod long;\n#[cfg(test)]\nmod long_tests;\npub fn f()",
        );
        write(root, "crates/core/src/long.rs", &text);
        write(
            root,
            "crates/core/src/long_tests.rs",
            &format!("//! Tests in a file.\n{}", function("in_a_test_file", 150)),
        );
        write(
            root,
            "crates/core/tests/long.rs",
            &format!("//! A test target.\n{}", function("long_target", 150)),
        );
    });
}

/// A module of `lines` lines: its doc line, then one-line functions.
fn module(doc: &str, lines: usize) -> String {
    let body: String = (1..lines)
        .map(|i| format!("pub fn f{i}() {{}}\n"))
        .collect();
    format!("{doc}\n{body}")
}

fn plant_module(root: &Path, text: &str) {
    edit(
        root,
        "crates/core/src/lib.rs",
        "pub fn f()",
        "pub mod big;\npub fn f()",
    );
    write(root, "crates/core/src/big.rs", text);
}

#[test]
fn a_module_over_800_lines_fails() {
    let found = planted(Rule::LongModule, |root| {
        plant_module(root, &module("//! Big.", 801));
    });
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].path.ends_with("big.rs"), "{found:?}");
    assert!(found[0].message.contains("801 lines"), "{found:?}");
}

#[test]
fn a_module_at_800_lines_its_tests_aside_or_saying_why_is_kept() {
    kept(|root| {
        let tests: String = (0..300).map(|i| format!("    fn t{i}() {{}}\n")).collect();
        let text = format!(
            "{}#[cfg(test)]\nmod tests {{\n{tests}}}\n",
            module("//! Big.", 800)
        );
        plant_module(root, &text);
        write(
            root,
            "crates/core/src/other.rs",
            &module(
                "//! Other.\n//! Long on purpose: one table read top to bottom.",
                900,
            ),
        );
        edit(
            root,
            "crates/core/src/lib.rs",
            "pub mod big;",
            "pub mod big;\npub mod other;",
        );
    });
}

#[test]
fn a_doc_line_saying_why_further_down_does_not_excuse_a_long_module() {
    planted(Rule::LongModule, |root| {
        plant_module(
            root,
            &format!(
                "{}//! Long on purpose: too late.\n",
                module("//! Big.", 801)
            ),
        );
    });
}

#[test]
fn an_architecture_table_missing_a_rule_fails() {
    let found = planted(Rule::ArchitectureTable, |root| {
        let fewer: Vec<Rule> = Rule::ALL
            .into_iter()
            .filter(|r| *r != Rule::ModuleDoc)
            .collect();
        write(root, "docs/ARCHITECTURE.md", &architecture(&fewer));
    });
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].message.contains("`ModuleDoc`"), "{found:?}");
}

#[test]
fn an_architecture_table_naming_no_rule_or_a_rule_twice_fails() {
    let found = planted(Rule::ArchitectureTable, |root| {
        let text = architecture(&Rule::ALL).replace(
            "## After",
            "| `NoSuchRule` | never |\n| `Anyhow` | again |\n\n## After",
        );
        write(root, "docs/ARCHITECTURE.md", &text);
    });
    let messages: Vec<&str> = found.iter().map(|v| v.message.as_str()).collect();
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(messages[0].contains("`NoSuchRule`") || messages[1].contains("`NoSuchRule`"));
    assert!(
        messages.iter().any(|m| m.contains("`Anyhow` twice")),
        "{messages:?}"
    );
}

#[test]
fn a_tree_without_architecture_md_fails() {
    planted(Rule::ArchitectureTable, |root| {
        fs::remove_file(root.join("docs/ARCHITECTURE.md")).expect("remove");
    });
}

#[test]
fn a_readme_one_character_over_its_limit_fails_and_one_at_it_passes() {
    let at = format!("# Long\n{}", "é".repeat(15_000 - 7));
    assert_eq!(at.chars().count(), 15_000);
    let dir = tempfile::tempdir().expect("tempdir");
    clean_tree(dir.path());
    write(dir.path(), "README.md", &at);
    assert_eq!(check(dir.path()), vec![], "15,000 characters are allowed");
    let found = planted(Rule::DocumentLength, |root| {
        write(root, "README.md", &format!("{at}x"));
    });
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].message.contains("15001 characters"), "{found:?}");
}

#[test]
fn an_architecture_document_over_its_limit_fails() {
    let found = planted(Rule::DocumentLength, |root| {
        let text = fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("read");
        let filler = "A paragraph of notes.\n".repeat(30_000 / 22 + 1);
        write(root, "docs/ARCHITECTURE.md", &format!("{text}\n{filler}"));
    });
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].path, Path::new("docs/ARCHITECTURE.md"));
}

#[test]
fn a_tree_without_a_readme_fails() {
    planted(Rule::DocumentLength, |root| {
        fs::remove_file(root.join("README.md")).expect("remove");
    });
}

/// Plants crate `analysis` with the modules `layers` (each with one function `f`): `read`'s
/// body is `read_uses`, `judge` calls `read`, `render` calls both.
fn plant_layers(root: &Path, read_uses: &str, layers: &[&str]) {
    edit(
        root,
        "Cargo.toml",
        "#   testkit  -> (nothing local)",
        "#   testkit  -> (nothing local)\n#   analysis -> (nothing local)",
    );
    write(
        root,
        "crates/analysis/Cargo.toml",
        &manifest("analysis", "", ""),
    );
    let mods: String = layers.iter().map(|l| format!("pub mod {l};\n")).collect();
    write(
        root,
        "crates/analysis/src/lib.rs",
        &format!("//! The library.\n{mods}"),
    );
    for layer in layers {
        let body = match *layer {
            "read" => format!("pub fn f() {{ {read_uses} }}\n"),
            "judge" => "pub fn f() { crate::read::f(); }\n".to_owned(),
            _ => "pub fn f() { crate::judge::f(); crate::read::f(); }\n".to_owned(),
        };
        write(
            root,
            &format!("crates/analysis/src/{layer}.rs"),
            &format!("//! A layer.\n{body}"),
        );
    }
}

#[test]
fn layers_that_use_only_those_below_them_pass() {
    let dir = tempfile::tempdir().expect("tempdir");
    clean_tree(dir.path());
    // A doc link to a higher layer is no use of it.
    plant_layers(
        dir.path(),
        "/// [`crate::render::f`]\n    let _ = 1;",
        &["read", "judge", "render"],
    );
    assert_eq!(check(dir.path()), vec![]);
}

#[test]
fn a_lower_layer_naming_a_higher_one_fails() {
    // `read` naming `render`, and `render` not naming `read` back: no cycle, only the layer
    // order broken.
    let found = planted(Rule::LayerOrder, |root| {
        plant_layers(
            root,
            "let _ = crate::render::f;",
            &["read", "judge", "render"],
        );
        write(
            root,
            "crates/analysis/src/render.rs",
            "//! A layer.\npub fn f() { crate::judge::f(); }\n",
        );
        write(
            root,
            "crates/analysis/src/judge.rs",
            "//! A layer.\npub fn f() {}\n",
        );
    });
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].path, Path::new("crates/analysis/src/read.rs"));
    assert!(found[0].message.contains("`analysis::render`"), "{found:?}");
}

#[test]
fn a_listed_layer_the_crate_lacks_fails() {
    let found = planted(Rule::LayerOrder, |root| {
        plant_layers(root, "let _ = 1;", &["read", "judge"]);
    });
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].message.contains("`render`"), "{found:?}");
}

const NEXTEST: &str = r#"[profile.default]
test-threads = 4

[[profile.default.overrides]]
filter = 'binary(latency) | (package(core) & test(/^cadence/))'
threads-required = "num-test-threads"
priority = 100

[[profile.default.overrides]]
filter = 'all()'
test-group = 'light'
"#;

const TEST_SH: &str = "#!/usr/bin/env bash\n\
ALONE='binary(latency) | (package(core) &  test(/^cadence/))'\n\
cargo nextest run -E \"$ALONE\"\n";

#[test]
fn the_alone_filter_in_nextest_toml_and_test_sh_agree_or_it_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    clean_tree(dir.path());
    write(dir.path(), ".config/nextest.toml", NEXTEST);
    write(dir.path(), "scripts/test.sh", TEST_SH);
    assert_eq!(
        check(dir.path()),
        vec![],
        "the same filter, wrapped differently"
    );
    // A test added to the config's ALONE list only.
    let found = planted(Rule::NextestAlone, |root| {
        write(
            root,
            ".config/nextest.toml",
            &NEXTEST.replace("binary(latency) |", "binary(latency) | binary(rollout) |"),
        );
        write(root, "scripts/test.sh", TEST_SH);
    });
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].path, Path::new("scripts/test.sh"));
    assert!(found[0].message.contains("binary(rollout)"), "{found:?}");
    // The script without the line.
    planted(Rule::NextestAlone, |root| {
        write(root, ".config/nextest.toml", NEXTEST);
        write(root, "scripts/test.sh", "cargo nextest run\n");
    });
    // Two overrides taking every thread: the script cannot repeat one filter.
    let two = format!(
        "{NEXTEST}\n[[profile.default.overrides]]\nfilter = 'binary(other)'\n\
         threads-required = \"num-test-threads\"\n"
    );
    let found = planted(Rule::NextestAlone, |root| {
        write(root, ".config/nextest.toml", &two);
        write(root, "scripts/test.sh", TEST_SH);
    });
    assert!(found[0].message.contains("2 overrides"), "{found:?}");
    // The script names an ALONE filter the config has no override for.
    planted(Rule::NextestAlone, |root| {
        write(
            root,
            ".config/nextest.toml",
            "[profile.default]\ntest-threads = 4\n",
        );
        write(root, "scripts/test.sh", TEST_SH);
    });
}
