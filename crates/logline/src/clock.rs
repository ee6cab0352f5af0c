//! Timestamps and wall-clock aligned windows.
//!
//! Every line carries `ts` as RFC 3339 UTC with exactly three fractional digits
//! (`2026-06-12T14:18:20.123Z`). Windows (buckets) are aligned to multiples of their length since
//! the Unix epoch, as the original lab's KQL `bin(TimeGenerated, 10s)` aligns them.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A UTC instant, serialised as RFC 3339 with milliseconds and a `Z` suffix.
///
/// Parsing accepts any RFC 3339 form (offsets, 0 to 9 fractional digits, as Log Analytics
/// exports with 7) and normalises to UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub DateTime<Utc>);

impl Timestamp {
    /// The current wall-clock time.
    pub fn now() -> Self {
        Timestamp(Utc::now())
    }

    /// The instant `ms` milliseconds after the Unix epoch.
    pub fn from_epoch_ms(ms: i64) -> Self {
        Timestamp(
            Utc.timestamp_millis_opt(ms)
                .single()
                .unwrap_or(DateTime::UNIX_EPOCH),
        )
    }

    /// Converts a [`SystemTime`] (saturating at the epoch).
    pub fn from_system_time(t: SystemTime) -> Self {
        let ms = t
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        Self::from_epoch_ms(ms)
    }

    /// Milliseconds since the Unix epoch.
    pub fn epoch_ms(&self) -> i64 {
        self.0.timestamp_millis()
    }

    /// Whole seconds since the Unix epoch (rounded down).
    pub fn epoch_s(&self) -> i64 {
        self.0.timestamp()
    }

    /// The RFC 3339 form with milliseconds, e.g. `2026-06-12T14:18:20.000Z`.
    pub fn to_rfc3339_ms(&self) -> String {
        self.0.to_rfc3339_opts(SecondsFormat::Millis, true)
    }

    /// The RFC 3339 form with whole seconds, e.g. `2026-06-12T14:18:20Z` (the original lab's
    /// `bucket_start_iso`).
    pub fn to_rfc3339_s(&self) -> String {
        self.0.to_rfc3339_opts(SecondsFormat::Secs, true)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339_ms())
    }
}

/// Why a timestamp did not parse.
#[derive(Debug, thiserror::Error)]
#[error("not an RFC 3339 timestamp: {input:?} ({error})")]
pub struct TimestampError {
    input: String,
    error: chrono::ParseError,
}

impl FromStr for Timestamp {
    type Err = TimestampError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DateTime::parse_from_rfc3339(s.trim())
            .map(|t| Timestamp(t.with_timezone(&Utc)))
            .map_err(|source| TimestampError {
                input: s.to_owned(),
                error: source,
            })
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_rfc3339_ms())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The start (ms since epoch) of the window of length `window_ms` that holds `epoch_ms`.
///
/// Windows are aligned to multiples of their length since the epoch; instants before the epoch
/// round towards negative infinity, so every instant has exactly one window.
pub fn window_start_ms(epoch_ms: i64, window_ms: i64) -> i64 {
    assert!(window_ms > 0, "window length must be positive");
    epoch_ms.div_euclid(window_ms) * window_ms
}

/// How long from `now_ms` until the next window boundary (strictly after `now_ms`).
pub fn until_next_boundary(now_ms: i64, window_ms: i64) -> Duration {
    let next = window_start_ms(now_ms, window_ms) + window_ms;
    Duration::from_millis(u64::try_from(next - now_ms).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_with_exactly_three_fraction_digits_and_z() {
        let t = Timestamp::from_epoch_ms(1_781_273_900_007);
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            "\"2026-06-12T14:18:20.007Z\""
        );
    }

    #[test]
    fn parses_log_analytics_seven_digit_fractions_and_offsets() {
        let a: Timestamp = "2026-06-20T21:35:20.0000000Z".parse().unwrap();
        let b: Timestamp = "2026-06-20T23:35:20+02:00".parse().unwrap();
        assert_eq!(a, b);
        assert_eq!(a.to_rfc3339_s(), "2026-06-20T21:35:20Z");
    }

    #[test]
    fn rejects_non_timestamps_with_the_input_in_the_message() {
        let err = "yesterday".parse::<Timestamp>().unwrap_err();
        assert!(err.to_string().contains("yesterday"));
    }

    #[test]
    fn windows_align_to_multiples_of_their_length() {
        assert_eq!(
            window_start_ms(1_781_273_909_999, 10_000),
            1_781_273_900_000
        );
        assert_eq!(
            window_start_ms(1_781_273_910_000, 10_000),
            1_781_273_910_000
        );
        assert_eq!(window_start_ms(-1, 10_000), -10_000);
        assert_eq!(
            until_next_boundary(1_781_273_909_000, 10_000),
            Duration::from_secs(1)
        );
        assert_eq!(
            until_next_boundary(1_781_273_910_000, 10_000),
            Duration::from_secs(10)
        );
    }
}
