//! What stops a run (a failed action or job never does: those are recorded in `runs.json`).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Lab(#[from] lab::LabError),
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error(transparent)]
    Arm(#[from] arm::ArmError),
    /// localplane's own message (transparent: `{:#}` would print it twice otherwise).
    #[error(transparent)]
    Localplane(#[from] localplane::Error),
    /// The cause is in the message, so it is no `#[source]` (a chain would print it twice);
    /// `From` is written out below for the same reason.
    #[error("analysis: {0}")]
    Analysis(analysis::Error),
    /// Something did not happen in time (an app never ready, a job never finished).
    #[error("timeout: {0}")]
    Timeout(String),
    /// Missing or invalid settings (environment variables, flags).
    #[error("{0}")]
    Config(String),
    /// Docker or an image the run needs is not there.
    #[error("{0}")]
    Prerequisite(String),
    /// A job could not be started or its lock could not be taken.
    #[error("job {job}: {msg}")]
    Job { job: String, msg: String },
    /// Ctrl-C (the partial pack is kept, marked incomplete).
    #[error("interrupted")]
    Interrupted,
}

impl From<analysis::Error> for RunError {
    fn from(e: analysis::Error) -> RunError {
        RunError::Analysis(e)
    }
}

impl RunError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> RunError {
        RunError::Io {
            path: path.into(),
            error: source,
        }
    }
}
