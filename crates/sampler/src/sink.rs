//! Where lines go: stdout in the binaries, memory in tests.

use std::sync::Mutex;

use logline::line::Line;

/// A destination for JSON lines.
pub trait Sink: Send + Sync {
    fn emit(&self, line: Line);
}

/// stdout, one JSON object per line (`logline::log::emit`).
#[derive(Debug, Default, Clone, Copy)]
pub struct Stdout;

impl Sink for Stdout {
    fn emit(&self, line: Line) {
        logline::log::emit(line);
    }
}

/// Collects lines in memory (tests).
#[derive(Debug, Default)]
pub struct Memory(Mutex<Vec<Line>>);

impl Memory {
    /// The lines so far.
    pub fn lines(&self) -> Vec<Line> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Sink for Memory {
    fn emit(&self, line: Line) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(line);
    }
}
