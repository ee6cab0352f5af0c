//! A table of the evidence pack: named columns and rows of JSON values, written as `.json` (an
//! object with `columns` and `rows` as objects) and `.tsv`, and rendered into report.md.

use serde_json::{Map, Value, json};

/// One output table.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// File stem under `tables/`, e.g. `q1-per-run-summary`.
    pub name: String,
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

impl Table {
    pub fn new(name: &str, title: &str, columns: &[&str]) -> Self {
        Table {
            name: name.to_owned(),
            title: title.to_owned(),
            columns: columns.iter().map(|c| (*c).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row; it must have one value per column.
    pub fn push(&mut self, row: Vec<Value>) {
        debug_assert_eq!(row.len(), self.columns.len(), "table {}", self.name);
        self.rows.push(row);
    }

    /// The value of `column` in row `i`.
    pub fn get(&self, i: usize, column: &str) -> Option<&Value> {
        let c = self.columns.iter().position(|x| x == column)?;
        self.rows.get(i)?.get(c)
    }

    /// `{"table", "title", "columns", "rows": [{column: value}]}`.
    pub fn to_json(&self) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                let m: Map<String, Value> = self
                    .columns
                    .iter()
                    .cloned()
                    .zip(r.iter().cloned())
                    .collect();
                Value::Object(m)
            })
            .collect();
        json!({"table": self.name, "title": self.title, "columns": self.columns, "rows": rows})
    }

    /// Tab-separated, header first; nulls empty, nested values as compact JSON.
    pub fn to_tsv(&self) -> String {
        let mut out = self.columns.join("\t");
        out.push('\n');
        for r in &self.rows {
            let cells: Vec<String> = r.iter().map(cell).collect();
            out.push_str(&cells.join("\t"));
            out.push('\n');
        }
        out
    }

    /// A Markdown table of the first `max_rows` rows (with a note when cut).
    pub fn to_markdown(&self, max_rows: usize) -> String {
        let mut out = String::new();
        if self.rows.is_empty() {
            out.push_str("_(no rows)_\n");
            return out;
        }
        out.push_str(&format!("| {} |\n", self.columns.join(" | ")));
        out.push_str(&format!("|{}\n", "---|".repeat(self.columns.len())));
        for r in self.rows.iter().take(max_rows) {
            let cells: Vec<String> = r.iter().map(|v| cell(v).replace('|', "\\|")).collect();
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
        if self.rows.len() > max_rows {
            out.push_str(&format!(
                "\n_{} of {} rows shown; all in `tables/{}.tsv`._\n",
                max_rows,
                self.rows.len(),
                self.name
            ));
        }
        out
    }
}

/// A value as a TSV / Markdown cell.
pub fn cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.replace(['\t', '\n', '\r'], " "),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => other.to_string(),
    }
}

/// A float rounded to 3 decimals as a JSON number (null when absent or not finite).
pub fn num(x: Option<f64>) -> Value {
    match x {
        Some(v) if v.is_finite() => json!((v * 1000.0).round() / 1000.0),
        _ => Value::Null,
    }
}

/// A percentage over a whole run or phase, rounded to 6 decimals (1 error in 289,932 requests
/// is 0.000345 %, which 3 decimals would show as 0).
pub fn pct(x: f64) -> Value {
    if x.is_finite() {
        json!((x * 1e6).round() / 1e6)
    } else {
        Value::Null
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsv_and_json_carry_the_same_rows() {
        let mut t = Table::new("t", "T", &["a", "b"]);
        t.push(vec![json!("x\ty"), json!(1.5)]);
        t.push(vec![Value::Null, json!({"k": 1})]);
        assert_eq!(t.to_tsv(), "a\tb\nx y\t1.5\n\t{\"k\":1}\n");
        assert_eq!(t.to_json()["rows"][0]["b"], json!(1.5));
        assert!(t.to_markdown(1).contains("1 of 2 rows"));
    }
}
