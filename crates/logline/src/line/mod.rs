//! The JSON line kinds: the contract between our images, the log tables and the analysis.
//!
//! Every line is one JSON object with `kind`, `ts` (RFC 3339 UTC, milliseconds) and, where it
//! applies, `run_id` and `perturbation_id`. Field names follow the original labs so their KQL keeps
//! working on our output (minus the logfmt unwrap). One module per producer:
//! [`loadgen`] (`meta`, `bucket`, `req`, `step`, `client`, `summary`), [`sampler`] (`RevisionStateSample`,
//! `ReplicaInventorySample`, `JobExecutionSample`, `PerturbationWindowMarker`, `SamplerError`), [`subject`]
//! (`subject`, with the event name in `event`) and [`diag`] (`log`, tracing diagnostics).
//!
//! Unknown fields are ignored when reading, so older readers accept newer lines; optional fields
//! are omitted when absent rather than written as `null`.

pub mod diag;
pub mod loadgen;
pub mod sampler;
pub mod subject;

use serde::{Deserialize, Serialize};

pub use diag::LogLine;
pub use loadgen::{Bucket, ClientChange, Meta, MetaPhase, Req, Step, Summary};
pub use sampler::{
    ContainerSample, JobExecutionSample, MarkerPhase, PerturbationWindowMarker,
    ReplicaInventorySample, RevisionStateSample, SamplerError,
};
pub use subject::{SubjectEvent, SubjectLine};

/// Any line a probelab image prints, tagged by `kind`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum Line {
    #[serde(rename = "meta")]
    Meta(Meta),
    #[serde(rename = "bucket")]
    Bucket(Bucket),
    #[serde(rename = "req")]
    Req(Req),
    #[serde(rename = "step")]
    Step(Step),
    #[serde(rename = "client")]
    Client(ClientChange),
    #[serde(rename = "summary")]
    Summary(Summary),
    RevisionStateSample(RevisionStateSample),
    ReplicaInventorySample(ReplicaInventorySample),
    JobExecutionSample(JobExecutionSample),
    PerturbationWindowMarker(PerturbationWindowMarker),
    SamplerError(SamplerError),
    #[serde(rename = "subject")]
    Subject(SubjectLine),
    #[serde(rename = "log")]
    Log(LogLine),
}

impl Line {
    /// The `kind` string this line is written with.
    pub fn kind(&self) -> &'static str {
        match self {
            Line::Meta(_) => "meta",
            Line::Bucket(_) => "bucket",
            Line::Req(_) => "req",
            Line::Step(_) => "step",
            Line::Client(_) => "client",
            Line::Summary(_) => "summary",
            Line::RevisionStateSample(_) => "RevisionStateSample",
            Line::ReplicaInventorySample(_) => "ReplicaInventorySample",
            Line::JobExecutionSample(_) => "JobExecutionSample",
            Line::PerturbationWindowMarker(_) => "PerturbationWindowMarker",
            Line::SamplerError(_) => "SamplerError",
            Line::Subject(_) => "subject",
            Line::Log(_) => "log",
        }
    }

    /// Serialises to one line of JSON (no trailing newline).
    pub fn to_json(&self) -> String {
        // Serialising these types cannot fail: every map key is a string and every float is
        // written by serde_json (non-finite floats become null).
        serde_json::to_string(self).unwrap_or_else(|e| {
            format!(r#"{{"kind":"log","level":"ERROR","msg":"unserialisable line: {e}"}}"#)
        })
    }

    /// Parses one line of JSON.
    pub fn from_json(s: &str) -> Result<Line, serde_json::Error> {
        serde_json::from_str(s)
    }
}

macro_rules! impl_from_for_line {
    ($($ty:ident => $variant:ident),* $(,)?) => {
        $(impl From<$ty> for Line {
            fn from(v: $ty) -> Line { Line::$variant(v) }
        })*
    };
}

impl_from_for_line!(
    Meta => Meta,
    Bucket => Bucket,
    Req => Req,
    Step => Step,
    ClientChange => Client,
    Summary => Summary,
    RevisionStateSample => RevisionStateSample,
    ReplicaInventorySample => ReplicaInventorySample,
    JobExecutionSample => JobExecutionSample,
    PerturbationWindowMarker => PerturbationWindowMarker,
    SamplerError => SamplerError,
    SubjectLine => Subject,
    LogLine => Log,
);

/// `err / count` as a percentage, 0 for an empty window (the original lab's `err_pct`).
pub fn err_pct(err: u64, count: u64) -> f64 {
    if count == 0 {
        0.0
    } else {
        err as f64 * 100.0 / count as f64
    }
}

#[cfg(test)]
mod tests;
