//! Edits of a container app's template that the operations and the runner share: an env var
//! set on a container, a fresh revision suffix.

use crate::ArmError;
use crate::models::Template;

/// Sets `name=value` on the container named `container` (or the first one).
pub fn set_env_in_template(
    template: &mut Template,
    container: Option<&str>,
    name: &str,
    value: &str,
) -> Result<bool, ArmError> {
    let target = match container {
        Some(c) => template
            .containers
            .iter_mut()
            .find(|x| x.name.as_deref() == Some(c)),
        None => template.containers.first_mut(),
    };
    let target = target.ok_or_else(|| {
        ArmError::Invalid(format!(
            "no container {} in the template",
            container.unwrap_or("(first)")
        ))
    })?;
    Ok(target.set_env(name, value))
}

/// A fresh `revisionSuffix`: `r` plus the current time in milliseconds, base 36 (lowercase
/// letters and digits, starts with a letter, short enough for ARM's limits).
pub fn fresh_revision_suffix() -> String {
    let mut n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    while n > 0 {
        out.push(digits[(n % 36) as usize]);
        n /= 36;
    }
    out.push(b'r');
    out.reverse();
    String::from_utf8(out).unwrap_or_else(|_| "r0".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_suffixes_start_with_a_letter_and_are_lowercase() {
        let s = fresh_revision_suffix();
        assert!(s.starts_with('r') && s.len() < 12, "{s}");
        assert!(
            s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        );
    }
}
