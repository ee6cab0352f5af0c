//! Reading: what the analysis takes in. The inputs in any mix of shapes ([`input`]) folded into
//! per-run windows and event streams ([`model`], [`clients`]), the lab file as the run used it
//! ([`lab`], with its evidence cap, [`evidence`]), `runs.json` ([`runs`]) and the platform's
//! wordings in its system rows ([`wording`]). Nothing here judges or renders.

pub mod clients;
pub mod evidence;
pub mod input;
pub mod lab;
pub mod model;
pub mod runs;
pub mod wording;
