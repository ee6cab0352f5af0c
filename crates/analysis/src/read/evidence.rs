//! Evidence levels of the original write-ups, and the cap a lab file puts on attributions.
//!
//! [Measured] and [Observed] are facts read from the pack (numbers computed from it, events seen
//! in its logs). [Correlated] < [Inferred] < [Strongly Suggested] grade attributions (why
//! something happened); the lab's `evidence_cap` bounds them, so the rollout lab's "platform
//! cause" can never read stronger than [Strongly Suggested].

use serde::Serialize;

/// An evidence level; the derived order is weakest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Level {
    Correlated,
    Inferred,
    StronglySuggested,
    Observed,
    Measured,
}

impl Level {
    /// The tag as the write-ups print it, e.g. `[Strongly Suggested]`.
    pub fn tag(self) -> &'static str {
        match self {
            Level::Correlated => "[Correlated]",
            Level::Inferred => "[Inferred]",
            Level::StronglySuggested => "[Strongly Suggested]",
            Level::Observed => "[Observed]",
            Level::Measured => "[Measured]",
        }
    }

    /// Parses `Strongly Suggested`, `[strongly-suggested]`, `StronglySuggested`, ...
    pub fn parse(s: &str) -> Option<Level> {
        let norm: String = s
            .chars()
            .filter(|c| c.is_ascii_alphabetic())
            .map(|c| c.to_ascii_lowercase())
            .collect();
        Some(match norm.as_str() {
            "correlated" => Level::Correlated,
            "inferred" => Level::Inferred,
            "stronglysuggested" => Level::StronglySuggested,
            "observed" => Level::Observed,
            "measured" => Level::Measured,
            _ => return None,
        })
    }

    /// An attribution's level, never stronger than the cap.
    pub fn capped(self, cap: Option<Level>) -> Level {
        match cap {
            Some(c) if c < self => c,
            _ => self,
        }
    }
}

/// One statement of the report with its evidence level.
#[derive(Clone, Debug, Serialize)]
pub struct Statement {
    pub level: Level,
    pub text: String,
}

impl Statement {
    pub fn new(level: Level, text: impl Into<String>) -> Self {
        Statement {
            level,
            text: text.into(),
        }
    }

    /// An attribution (why), capped by the lab.
    pub fn attribution(level: Level, cap: Option<Level>, text: impl Into<String>) -> Self {
        Statement::new(level.capped(cap), text)
    }

    pub fn render(&self) -> String {
        format!("{} {}", self.level.tag(), self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_bounds_attributions_only_downwards() {
        let cap = Some(Level::StronglySuggested);
        assert_eq!(Level::Measured.capped(cap), Level::StronglySuggested);
        assert_eq!(Level::Correlated.capped(cap), Level::Correlated);
        assert_eq!(Level::Inferred.capped(None), Level::Inferred);
        assert_eq!(
            Level::parse("[Strongly Suggested]"),
            Some(Level::StronglySuggested)
        );
    }
}
