//! Retention of inactive revisions: `configuration.maxInactiveRevisions` checked on PUT/PATCH and
//! the choice of which inactive revisions the controller purges ([`crate::plane`] applies it).
//!
//! Learn ("Revisions", <https://learn.microsoft.com/azure/container-apps/revisions>): "By
//! default, you have access to 100 inactive revisions"; the backend reports 100 when the field is
//! unset (Azure/azure-cli-extensions#7336). Inactive revisions beyond the limit are purged, the
//! oldest (by creation) first, in both revision modes. A revision is purged only once it is
//! inactive, none of its replicas is still running or stopping, and no `revisionName` traffic
//! rule names it; the latest revision and single mode's serving one are never purged. A kept
//! (pinned) inactive revision still counts toward the limit.
//!
//! The REST spec (`ContainerApps.json`, `Configuration.maxInactiveRevisions`) is an `int32` with
//! no documented range; 0..=100 is our guess (the range the Terraform azurerm provider accepts,
//! `validation.IntBetween(0, 100)`), so a negative value or one above 100 is a 400.

use serde_json::Value;

use crate::error::ArmError;

/// Inactive revisions kept when `maxInactiveRevisions` is unset (Learn, "Revisions").
pub const DEFAULT_MAX_INACTIVE: u64 = 100;
/// The largest `maxInactiveRevisions` accepted (a guess: see the module doc).
pub const MAX_MAX_INACTIVE: u64 = 100;

/// The error code of an out-of-range `maxInactiveRevisions` (a guess: see docs/FIDELITY.md).
pub const INVALID_MAX_INACTIVE: &str = "ContainerAppInvalidMaxInactiveRevisions";

/// Checks the raw `properties.configuration.maxInactiveRevisions` before the body is read as the
/// wire model, so a negative, fractional or too large value is this 400 rather than a type error.
pub fn check_raw(props: &Value) -> Result<(), ArmError> {
    match props.pointer("/configuration/maxInactiveRevisions") {
        None | Some(Value::Null) => Ok(()),
        Some(v) if v.as_u64().is_some_and(|n| n <= MAX_MAX_INACTIVE) => Ok(()),
        Some(v) => Err(ArmError::bad_request(
            INVALID_MAX_INACTIVE,
            format!(
                "configuration.maxInactiveRevisions '{v}' is invalid: it must be an integer between 0 and {MAX_MAX_INACTIVE}."
            ),
        )),
    }
}

/// The limit an app's stored `properties` give: `maxInactiveRevisions`, else the default.
pub fn limit(props: &Value) -> usize {
    let n = props
        .pointer("/configuration/maxInactiveRevisions")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_MAX_INACTIVE);
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// What [`select`] needs to know of one revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    pub inactive: bool,
    /// Never purged: the latest revision, single mode's serving one, or one a `revisionName`
    /// traffic rule names.
    pub pinned: bool,
    /// A replica of it is still running or stopping.
    pub live: bool,
}

/// The indices into `revs` (oldest first) to purge now under limit `max`: the oldest unpinned
/// inactive revisions beyond the limit, those among them whose replicas have all stopped (the
/// others wait for a later pass, so a younger revision is never purged in place of an older
/// one that is still stopping).
pub fn select(revs: &[Candidate], max: usize) -> Vec<usize> {
    let inactive = revs.iter().filter(|r| r.inactive).count();
    let excess = inactive.saturating_sub(max);
    revs.iter()
        .enumerate()
        .filter(|(_, r)| r.inactive && !r.pinned)
        .take(excess)
        .filter(|(_, r)| !r.live)
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ACTIVE: Candidate = Candidate {
        inactive: false,
        pinned: false,
        live: true,
    };
    const GONE: Candidate = Candidate {
        inactive: true,
        pinned: false,
        live: false,
    };
    const STOPPING: Candidate = Candidate {
        inactive: true,
        pinned: false,
        live: true,
    };
    const PINNED: Candidate = Candidate {
        inactive: true,
        pinned: true,
        live: false,
    };

    #[test]
    fn the_oldest_beyond_the_limit_go() {
        let revs = [GONE, GONE, GONE, ACTIVE];
        assert_eq!(select(&revs, 1), vec![0, 1]);
        assert_eq!(select(&revs, 0), vec![0, 1, 2]);
        assert!(select(&revs, 3).is_empty());
        assert!(select(&revs, 100).is_empty());
    }

    #[test]
    fn a_stopping_revision_waits_and_holds_back_younger_ones() {
        // The oldest is still stopping: nothing younger goes in its place.
        assert!(select(&[STOPPING, GONE, ACTIVE], 1).is_empty());
        assert_eq!(select(&[STOPPING, GONE, GONE, ACTIVE], 1), vec![1]);
    }

    #[test]
    fn pinned_revisions_count_but_stay() {
        assert_eq!(select(&[PINNED, GONE, GONE, ACTIVE], 1), vec![1, 2]);
        assert!(select(&[PINNED, PINNED, ACTIVE], 0).is_empty());
    }

    #[test]
    fn the_raw_value_is_checked_and_defaults_to_100() {
        for ok in [json!(0), json!(1), json!(100), Value::Null] {
            let props = json!({"configuration": {"maxInactiveRevisions": ok}});
            assert!(check_raw(&props).is_ok(), "{ok}");
        }
        for bad in [json!(-1), json!(101), json!(1.5), json!("5")] {
            let props = json!({"configuration": {"maxInactiveRevisions": bad}});
            let e = check_raw(&props).unwrap_err();
            assert_eq!(
                (e.status.as_u16(), e.code.as_str()),
                (400, INVALID_MAX_INACTIVE)
            );
        }
        assert_eq!(limit(&json!({})), 100);
        assert_eq!(
            limit(&json!({"configuration": {"maxInactiveRevisions": 0}})),
            0
        );
    }
}
