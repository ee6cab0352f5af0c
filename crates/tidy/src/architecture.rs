//! [`Rule::ArchitectureTable`]: the table of tidy rules in docs/ARCHITECTURE.md (its section
//! [`HEADING`]) names exactly the rules of [`Rule::ALL`], so the document cannot describe a rule
//! that does not exist or miss one that does.
//!
//! A row is a table line whose first cell is one backquoted name (`` | `ModuleDoc` | ... ``).

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::{Rule, Violation, Workspace};

/// Where the document is, relative to the workspace root.
pub const DOCUMENT: &str = "docs/ARCHITECTURE.md";
/// The heading of the section that holds the table.
pub const HEADING: &str = "## Tidy rules";

/// A violation for each rule missing from the table, each row naming no rule, and a missing
/// document or section.
pub fn check(ws: &Workspace) -> Vec<Violation> {
    let violation = |line: usize, message: String| Violation {
        rule: Rule::ArchitectureTable,
        path: PathBuf::from(DOCUMENT),
        line,
        message,
    };
    let Some(text) = &ws.architecture else {
        return vec![violation(0, "the document is missing".into())];
    };
    let Some(rows) = table_rows(text) else {
        return vec![violation(0, format!("no `{HEADING}` section"))];
    };
    let known: BTreeSet<&str> = Rule::ALL.iter().map(|r| r.name()).collect();
    let mut out = Vec::new();
    let mut listed = BTreeSet::new();
    for (line, name) in &rows {
        if !known.contains(name.as_str()) {
            out.push(violation(
                *line,
                format!("the table lists `{name}`, which is not a tidy rule"),
            ));
        } else if !listed.insert(name.clone()) {
            out.push(violation(*line, format!("the table lists `{name}` twice")));
        }
    }
    for name in known.iter().filter(|n| !listed.contains(**n)) {
        out.push(violation(
            0,
            format!("the `{HEADING}` table does not list the rule `{name}`"),
        ));
    }
    out
}

/// (1-based line, rule name) of each row of the section's table; `None` without the section.
pub fn table_rows(text: &str) -> Option<Vec<(usize, String)>> {
    let mut lines = text.lines().enumerate();
    lines.find(|(_, l)| l.trim_end() == HEADING)?;
    let rows = lines
        .take_while(|(_, l)| !l.starts_with("## "))
        .filter_map(|(i, l)| {
            let cell = l.strip_prefix('|')?.split('|').next()?.trim();
            let name = cell.strip_prefix('`')?.strip_suffix('`')?;
            (!name.is_empty() && !name.contains('`')).then(|| (i + 1, name.to_string()))
        })
        .collect();
    Some(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_read_from_the_section_only() {
        let text = "# A\n| `Outside` | x |\n## Tidy rules\n\n| Rule | Fails when |\n|---|---|\n\
                    | `ModuleDoc` | no doc |\n| plain | not a row |\n## Next\n| `After` | x |\n";
        assert_eq!(table_rows(text), Some(vec![(7, "ModuleDoc".to_string())]));
        assert_eq!(table_rows("# No section\n"), None);
    }

    #[test]
    fn every_rule_has_a_distinct_name() {
        let names: BTreeSet<&str> = Rule::ALL.iter().map(|r| r.name()).collect();
        assert_eq!(names.len(), Rule::ALL.len());
    }
}
