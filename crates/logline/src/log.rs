//! One JSON object per line on stdout, for event lines and tracing diagnostics alike.
//!
//! Container Apps ships every stdout line to `ContainerAppConsoleLogs_CL.Log_s`; KQL then reads
//! it with `parse_json(Log_s)`. So every line we print is a complete JSON object: no ANSI colour,
//! no logfmt wrapper, no multi-line output, and never two writers interleaving inside a line
//! (each line goes out in one `write_all` under the stdout lock).
//!
//! Human progress belongs on stderr, and only when stderr is a terminal: see
//! [`stderr_is_terminal`].

use std::io::{IsTerminal, Write};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;

use crate::Timestamp;
use crate::line::{Line, LogLine};

/// Prints one line on stdout. Write errors (a closed pipe) are ignored: losing the reader must
/// not stop the program under test.
pub fn emit(line: impl Into<Line>) {
    let _ = emit_to(&mut std::io::stdout().lock(), &line.into());
}

/// Writes one line (JSON plus `\n`) to `w` in a single `write_all`.
pub fn emit_to(w: &mut impl Write, line: &Line) -> std::io::Result<()> {
    let mut buf = line.to_json().into_bytes();
    buf.push(b'\n');
    w.write_all(&buf)?;
    w.flush()
}

/// True when stderr is a terminal, i.e. when a person is watching and progress is welcome.
pub fn stderr_is_terminal() -> bool {
    std::io::stderr().is_terminal()
}

/// Installs the global tracing subscriber: every `tracing` event becomes a `kind: "log"` line
/// on stdout. The level filter comes from `RUST_LOG` (default `info`; see [`filter_from_env`]).
///
/// Calling it twice is harmless (the second call does nothing), so tests may call it freely.
pub fn init(component: &'static str) {
    let filter = filter_from_env("info");
    let _ = tracing_subscriber::registry()
        .with(JsonLinesLayer { component })
        .with(filter)
        .try_init();
}

/// The level filter `RUST_LOG` asks for, or `default` when it is unset or not a list of
/// `level` and `target=level` directives (e.g. `debug` or `info,azure_core=warn`). These are
/// `tracing_subscriber`'s `Targets`: the span and field filters of its `EnvFilter` are not
/// understood (such a value falls back to `default`), which keeps the regex engine EnvFilter
/// needs out of every binary. `default` must itself be such a list.
pub fn filter_from_env(default: &str) -> Targets {
    parse_filter(std::env::var("RUST_LOG").ok().as_deref(), default)
}

fn parse_filter(value: Option<&str>, default: &str) -> Targets {
    value
        .and_then(|v| v.parse().ok())
        .or_else(|| default.parse().ok())
        .unwrap_or_else(|| Targets::new().with_default(tracing::Level::INFO))
}

/// A tracing layer that writes each event as a [`LogLine`] on stdout.
pub struct JsonLinesLayer {
    component: &'static str,
}

impl JsonLinesLayer {
    /// A layer tagging each line with `component`.
    pub fn new(component: &'static str) -> Self {
        JsonLinesLayer { component }
    }

    /// Turns a tracing event into the line it is printed as.
    pub fn to_line(&self, event: &Event<'_>) -> LogLine {
        let mut visitor = FieldVisitor::default();
        event.record(&mut visitor);
        let meta = event.metadata();
        LogLine {
            ts: Timestamp::now(),
            level: meta.level().to_string(),
            component: Some(self.component.to_owned()),
            target: Some(meta.target().to_owned()),
            msg: visitor.message.unwrap_or_default(),
            fields: visitor.fields,
        }
    }
}

impl<S: Subscriber> Layer<S> for JsonLinesLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        emit(self.to_line(event));
    }
}

#[derive(Default)]
struct FieldVisitor {
    message: Option<String>,
    fields: serde_json::Map<String, serde_json::Value>,
}

impl FieldVisitor {
    fn put(&mut self, field: &Field, value: serde_json::Value) {
        if field.name() == "message" {
            self.message = Some(match value {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            });
        } else {
            self.fields.insert(field.name().to_owned(), value);
        }
    }
}

impl Visit for FieldVisitor {
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, serde_json::json!(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, value.into());
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, value.into());
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        // The whole chain, so "connect failed" carries its cause.
        let mut text = value.to_string();
        let mut source = value.source();
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        self.put(field, text.into());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.put(field, format!("{value:?}").into());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A layer that records the lines it would print, for assertions.
    struct Capture(JsonLinesLayer, Arc<Mutex<Vec<String>>>);

    impl<S: Subscriber> Layer<S> for Capture {
        fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
            let mut out = Vec::new();
            emit_to(&mut out, &self.0.to_line(event).into()).unwrap();
            self.1.lock().unwrap().push(String::from_utf8(out).unwrap());
        }
    }

    #[test]
    fn tracing_events_become_single_json_lines_with_fields() {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry()
            .with(Capture(JsonLinesLayer::new("test"), lines.clone()));
        tracing::subscriber::with_default(subscriber, || {
            let err = std::io::Error::other("boom");
            tracing::warn!(
                port = 8080u64,
                ok = true,
                error = &err as &dyn std::error::Error,
                "bind\nfailed"
            );
        });
        let lines = lines.lock().unwrap();
        assert_eq!(lines.len(), 1);
        let line = &lines[0];
        assert!(
            line.ends_with('\n') && line.matches('\n').count() == 1,
            "{line:?}"
        );
        assert!(!line.contains('\u{1b}'), "no ANSI: {line:?}");
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["kind"], "log");
        assert_eq!(v["level"], "WARN");
        assert_eq!(v["component"], "test");
        assert_eq!(v["msg"], "bind\nfailed");
        assert_eq!(v["fields"]["port"], 8080);
        assert_eq!(v["fields"]["ok"], true);
        assert_eq!(v["fields"]["error"], "boom");
        let ts = v["ts"].as_str().unwrap();
        assert!(ts.len() == 24 && ts.ends_with('Z'), "{ts}");
    }

    #[test]
    fn rust_log_sets_levels_per_target_and_a_value_it_cannot_read_falls_back() {
        use tracing::Level;
        let default = "info,azure_core=warn";
        let unset = parse_filter(None, default);
        assert!(unset.would_enable("sampler", &Level::INFO));
        assert!(!unset.would_enable("sampler", &Level::DEBUG));
        assert!(!unset.would_enable("azure_core::http", &Level::INFO));
        assert!(unset.would_enable("azure_core::http", &Level::WARN));

        let debug = parse_filter(Some("debug"), default);
        assert!(debug.would_enable("azure_core", &Level::DEBUG));
        assert!(!debug.would_enable("azure_core", &Level::TRACE));

        let per_target = parse_filter(Some("warn,subject=trace"), default);
        assert!(per_target.would_enable("subject::capacity", &Level::TRACE));
        assert!(!per_target.would_enable("loadgen", &Level::INFO));

        // EnvFilter's span syntax is not understood: the default applies, not "nothing".
        let span = parse_filter(Some("[request{id=1}]=debug"), default);
        assert!(span.would_enable("sampler", &Level::INFO));
        assert!(!span.would_enable("sampler", &Level::DEBUG));
    }
}
