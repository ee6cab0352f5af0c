//! Reading a `localplane.*` knob tag that names one of a few options (`allReplicas` or
//! `firstReplica`, ...): the option, its default when the tag is absent, or the 400 that names
//! the options. A bottom module: it imports nothing of this crate but the error type, so the
//! model, the scaler and the job model can all use it.

use crate::error::ArmError;

/// The option knob tag `tag` names (`get` reads a tag's value; absent: the first of `options`,
/// never empty, the default); another value is a 400 naming the options.
pub fn choice<'a, T: Copy>(
    get: impl Fn(&str) -> Option<&'a str>,
    tag: &str,
    options: &[(&str, T)],
) -> Result<T, ArmError> {
    let Some(v) = get(tag) else {
        return Ok(options[0].1);
    };
    options
        .iter()
        .find(|(name, _)| *name == v)
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
            ArmError::bad_request(
                "InvalidRequestContent",
                format!("tag '{tag}' must be {}, got '{v}'", names.join(" or ")),
            )
        })
}
