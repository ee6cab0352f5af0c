//! Judging: what the analysis concludes from what it read. The binding rule and the tables it
//! drives ([`rule`]), each fired event checked ([`events`]), the platform's tables Q3, Q4 and Q7
//! and the error forensics ([`platform`]), an observation lab's checks ([`checks`], with the
//! jobs' executions and replicas: [`job_executions`], [`job_replicas`]), how strong the evidence
//! is ([`strength`]), the gates and the verdict ([`verdict`]), and the timeline's series as data
//! ([`timeline_series`]). Nothing here writes a file.

pub mod checks;
pub mod events;
pub mod job_executions;
pub mod job_replicas;
pub mod platform;
pub mod rule;
pub mod strength;
pub mod timeline_series;
pub mod verdict;
