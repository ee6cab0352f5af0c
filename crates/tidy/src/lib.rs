//! tidy: the house rules of the workspace, checked over its source tree (in the manner of
//! rust-analyzer's `xtask/src/tidy.rs`). `tests/workspace.rs` runs [`check`] on this repository,
//! so `cargo test` fails when a rule is broken; `tests/planted.rs` plants each violation in a
//! temporary tree to show every rule can fail.
//!
//! The rules, and the claim of docs/ARCHITECTURE.md each one enforces:
//! - [`Rule::DependencyDirection`] ([`deps`]): the `# local crates` block of the root
//!   Cargo.toml is what the crates' manifests declare, testkit is never a run-time dependency,
//!   and the image crates never reach the crates the block's `# Images` line excludes.
//! - [`Rule::Anyhow`] ([`source`]): `anyhow` only in a binary (`src/main.rs`, `src/bin/`, or a
//!   crate without a library), and a manifest declares it only where a binary uses it.
//! - [`Rule::StringError`] ([`source`]): no `Result<_, String>` in a library's non-test code.
//! - [`Rule::Unsafe`] ([`source`]): `unsafe` only in the allowances of [`source::UNSAFE_ALLOWED`],
//!   with the workspace lint `unsafe_code = "deny"` on and every crate inheriting it.
//! - [`Rule::DockerGate`] ([`docker`]): every test target that touches Docker reaches
//!   `testkit::docker::require_docker`, and only testkit reads `PROBELAB_SKIP_DOCKER`.
//! - [`Rule::ModuleDoc`] ([`source`]): every `.rs` file of a crate starts with a `//!` line.
//! - [`Rule::ErrorContext`] ([`errors`]): a thiserror message never prints the field that is
//!   also the error's source (the cause would print twice in labctl's `{e:#}` chain).
//! - [`Rule::ModuleCycle`] ([`cycles`]): no cycle between sibling modules of a crate's `src/`,
//!   at any depth (edges are `crate::`, `super::` and `self::` paths outside test code); small
//!   modules with one direction.
//! - [`Rule::LongFunction`] ([`long_fns`]): no function outside test code over 100 lines
//!   unless a `// Long on purpose:` comment above it says why.
//! - [`Rule::LongModule`] ([`long_modules`]): no module over 800 lines outside its test code
//!   unless a `//! Long on purpose:` line of its doc says why.
//! - [`Rule::ArchitectureTable`] ([`architecture`]): docs/ARCHITECTURE.md's table of these
//!   rules names exactly [`Rule::ALL`].
//! - [`Rule::LayerOrder`] ([`layers`]): in a crate split into layers (analysis: `read`,
//!   `judge`, `render`), no layer names one above it.
//! - [`Rule::DocumentLength`] ([`documents`]): README.md and docs/ARCHITECTURE.md stay within
//!   their lengths (15,000 and 30,000 characters).
//! - [`Rule::NextestAlone`] ([`nextest`]): `.config/nextest.toml`'s one override that takes
//!   every test thread and `scripts/test.sh`'s `alone` phase name the same tests.

pub mod architecture;
pub mod cycles;
pub mod deps;
pub mod docker;
pub mod documents;
pub mod errors;
pub mod layers;
pub mod lexer;
pub mod long_fns;
pub mod long_modules;
pub mod nextest;
pub mod source;
pub mod tree;

use std::fmt;
use std::path::{Path, PathBuf};

pub use tree::{Crate, Workspace};

/// Which house rule a violation breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rule {
    DependencyDirection,
    Anyhow,
    StringError,
    Unsafe,
    DockerGate,
    ModuleDoc,
    ErrorContext,
    ModuleCycle,
    LayerOrder,
    LongFunction,
    LongModule,
    ArchitectureTable,
    DocumentLength,
    NextestAlone,
}

impl Rule {
    /// Every rule, in the order docs/ARCHITECTURE.md's table lists them. [`Rule::name`]'s
    /// exhaustive match is what a new rule must be added to first.
    pub const ALL: [Rule; 14] = [
        Rule::DependencyDirection,
        Rule::Anyhow,
        Rule::StringError,
        Rule::Unsafe,
        Rule::DockerGate,
        Rule::ModuleDoc,
        Rule::ErrorContext,
        Rule::ModuleCycle,
        Rule::LayerOrder,
        Rule::LongFunction,
        Rule::LongModule,
        Rule::ArchitectureTable,
        Rule::DocumentLength,
        Rule::NextestAlone,
    ];

    /// The rule's name as reports and docs/ARCHITECTURE.md print it.
    pub fn name(self) -> &'static str {
        match self {
            Rule::DependencyDirection => "DependencyDirection",
            Rule::Anyhow => "Anyhow",
            Rule::StringError => "StringError",
            Rule::Unsafe => "Unsafe",
            Rule::DockerGate => "DockerGate",
            Rule::ModuleDoc => "ModuleDoc",
            Rule::ErrorContext => "ErrorContext",
            Rule::ModuleCycle => "ModuleCycle",
            Rule::LayerOrder => "LayerOrder",
            Rule::LongFunction => "LongFunction",
            Rule::LongModule => "LongModule",
            Rule::ArchitectureTable => "ArchitectureTable",
            Rule::DocumentLength => "DocumentLength",
            Rule::NextestAlone => "NextestAlone",
        }
    }
}

/// One broken rule, at a place in the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub rule: Rule,
    /// Relative to the workspace root.
    pub path: PathBuf,
    /// 1-based; 0 when the violation is about the file as a whole.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(f, "{}: ", self.path.display())?,
            n => write!(f, "{}:{n}: ", self.path.display())?,
        }
        write!(f, "[{}] {}", self.rule.name(), self.message)
    }
}

/// Why the tree could not be read (a rule violation is not an error: see [`check`]).
#[derive(Debug, thiserror::Error)]
pub enum TidyError {
    #[error("reading {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("parsing {path}")]
    Manifest {
        path: PathBuf,
        #[source]
        source: toml::de::Error,
    },
}

/// Every violation of every rule in the workspace at `root`, sorted by path and line.
pub fn check(root: &Path) -> Result<Vec<Violation>, TidyError> {
    let ws = Workspace::load(root)?;
    let mut found = Vec::new();
    found.extend(deps::check(&ws));
    found.extend(source::check(&ws));
    found.extend(docker::check(&ws));
    found.extend(errors::check(&ws));
    found.extend(cycles::check(&ws));
    found.extend(layers::check(&ws));
    found.extend(long_fns::check(&ws));
    found.extend(long_modules::check(&ws));
    found.extend(architecture::check(&ws));
    found.extend(documents::check(&ws));
    found.extend(nextest::check(&ws));
    found.sort_by(|a, b| (&a.path, a.line, a.rule).cmp(&(&b.path, b.line, b.rule)));
    Ok(found)
}
