//! Value parsers shared by every binary's configuration.
//!
//! Every probelab binary takes its configuration from flags and from environment variables (clap
//! `env`), keeping the original labs' variable names. These parsers make the same text mean the
//! same thing everywhere; plug them into clap with `value_parser = logline::config::parse_duration`.

use std::time::Duration;

/// A configuration value that could not be understood.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    #[error(
        "{input:?} is not a duration: use a number with a unit, e.g. 250ms, 10s, 2m, 1h, 1m30s (a bare number means seconds)"
    )]
    Duration { input: String },
    #[error("{input:?} is not a boolean: use true/false, yes/no, on/off or 1/0")]
    Bool { input: String },
    #[error("{input:?} is not KEY=VALUE")]
    KeyValue { input: String },
    #[error("{input:?} is not a number between {min} and {max}")]
    Range { input: String, min: f64, max: f64 },
}

/// Parses a duration: `250ms`, `10s`, `1.5s`, `2m`, `1h`, `1m30s`, or a bare number of seconds.
///
/// Units: `ms`, `s`, `m`, `h`. Negative, empty and non-finite values are rejected.
pub fn parse_duration(input: &str) -> Result<Duration, ConfigError> {
    let err = || ConfigError::Duration {
        input: input.to_owned(),
    };
    let s = input.trim();
    if s.is_empty() {
        return Err(err());
    }
    if let Ok(secs) = s.parse::<f64>() {
        return secs_to_duration(secs).ok_or_else(err);
    }
    let mut total = Duration::ZERO;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(err)?;
        if num_len == 0 {
            return Err(err());
        }
        let value: f64 = rest[..num_len].parse().map_err(|_| err())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(err()),
        };
        rest = &rest[unit_len..];
        total += secs_to_duration(value * factor).ok_or_else(err)?;
    }
    Ok(total)
}

fn secs_to_duration(secs: f64) -> Option<Duration> {
    (secs.is_finite() && (0.0..1e12).contains(&secs)).then(|| Duration::from_secs_f64(secs))
}

/// Parses a boolean the way shell users write them: `true/false`, `yes/no`, `on/off`, `1/0`
/// (case-insensitive).
pub fn parse_bool(input: &str) -> Result<bool, ConfigError> {
    match input.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Ok(true),
        "false" | "no" | "off" | "0" => Ok(false),
        _ => Err(ConfigError::Bool {
            input: input.to_owned(),
        }),
    }
}

/// Parses `KEY=VALUE` (the value may be empty and may contain `=`).
pub fn parse_key_value(input: &str) -> Result<(String, String), ConfigError> {
    match input.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.to_owned())),
        _ => Err(ConfigError::KeyValue {
            input: input.to_owned(),
        }),
    }
}

/// Parses a fraction in `0.0..=1.0` (e.g. a failure rate).
pub fn parse_fraction(input: &str) -> Result<f64, ConfigError> {
    let err = || ConfigError::Range {
        input: input.to_owned(),
        min: 0.0,
        max: 1.0,
    };
    let v: f64 = input.trim().parse().map_err(|_| err())?;
    (0.0..=1.0).contains(&v).then_some(v).ok_or_else(err)
}

/// The machine's host name (`/proc/sys/kernel/hostname`, then `$HOSTNAME`), or `unknown`.
///
/// Inside a container this is the container's short id, the fallback replica identity.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "unknown".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_every_unit() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration(" 0 "), Ok(Duration::ZERO));
    }

    #[test]
    fn bad_durations_are_rejected_with_a_hint() {
        for bad in [
            "", "s", "-1s", "-3", "10x", "ten", "1..2s", "NaN", "inf", "10 s",
        ] {
            let err = parse_duration(bad).unwrap_err();
            assert!(err.to_string().contains("e.g. 250ms"), "{bad}: {err}");
        }
    }

    #[test]
    fn booleans_as_shell_users_write_them() {
        for t in ["true", "TRUE", "yes", "on", "1"] {
            assert_eq!(parse_bool(t), Ok(true));
        }
        for f in ["false", "No", "off", "0"] {
            assert_eq!(parse_bool(f), Ok(false));
        }
        assert!(parse_bool("maybe").is_err());
    }

    #[test]
    fn key_values_keep_equals_signs_in_the_value() {
        assert_eq!(parse_key_value("A=b=c"), Ok(("A".into(), "b=c".into())));
        assert_eq!(parse_key_value("A="), Ok(("A".into(), String::new())));
        assert!(parse_key_value("=x").is_err());
        assert!(parse_key_value("novalue").is_err());
    }

    #[test]
    fn fractions_stay_between_zero_and_one() {
        assert_eq!(parse_fraction("0.5"), Ok(0.5));
        assert!(parse_fraction("1.5").is_err());
        assert!(parse_fraction("-0.1").is_err());
        assert!(parse_fraction("half").is_err());
    }
}
