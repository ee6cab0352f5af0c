//! [`Rule::LayerOrder`]: in a crate split into layers, a layer never names one above it. The
//! layers are sibling modules of the crate's root, listed bottom first in [`LAYERS`]; a module
//! of one may use the layers before it, never those after (analysis: `read` never names `judge`
//! or `render`, `judge` never names `render`). Edges are [`crate::cycles::module_graph`]'s
//! (`crate::`, `super::` and `self::` paths outside test code), so a doc link does not count.
//! A listed layer that is not a module of its crate is a violation too, so the list cannot go
//! stale.

use crate::cycles::{module_graph, module_path};
use crate::{Rule, Violation, Workspace};

/// Each layered crate and its layers, bottom first.
pub const LAYERS: &[(&str, &[&str])] = &[("analysis", &["read", "judge", "render"])];

/// A violation for each use of a higher layer by a lower one, and for each listed layer the
/// crate does not have.
pub fn check(ws: &Workspace) -> Vec<Violation> {
    let mut out = Vec::new();
    for (name, order) in LAYERS {
        let Some(krate) = ws.crate_named(name) else {
            continue;
        };
        for layer in *order {
            let present = krate
                .files
                .iter()
                .any(|f| module_path(&f.in_crate).as_deref() == Some(*layer));
            if !present {
                out.push(Violation {
                    rule: Rule::LayerOrder,
                    path: krate.dir.join("src"),
                    line: 0,
                    message: format!(
                        "tidy::layers::LAYERS lists the layer `{layer}`, which is not a module \
                         of {name}"
                    ),
                });
            }
        }
        let graph = module_graph(krate);
        for (i, lower) in order.iter().enumerate() {
            let Some(uses) = graph.get(*lower) else {
                continue;
            };
            for higher in &order[i + 1..] {
                if let Some(edge) = uses.get(*higher) {
                    out.push(Violation {
                        rule: Rule::LayerOrder,
                        path: edge.path.clone(),
                        line: edge.line,
                        message: format!(
                            "`{name}::{lower}` names `{name}::{higher}`, a layer above it \
                             (layers bottom first: {}); move what both need down",
                            order.join(", ")
                        ),
                    });
                }
            }
        }
    }
    out
}
