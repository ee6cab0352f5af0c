//! Fast timestamp parsing: RFC 3339 (any fraction length, `Z` or offset) to epoch milliseconds.
//!
//! The hot path (`2026-06-12T14:18:20.123Z`, what every probelab line carries) is parsed by hand;
//! anything unusual falls back to chrono through [`logline::Timestamp`].

use logline::Timestamp;

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn digits(b: &[u8]) -> Option<i64> {
    let mut v = 0i64;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i64::from(c - b'0');
    }
    Some(v)
}

fn fast(s: &[u8]) -> Option<i64> {
    if s.len() < 20 || s[4] != b'-' || s[7] != b'-' || !(s[10] == b'T' || s[10] == b' ') {
        return None;
    }
    if s[13] != b':' || s[16] != b':' {
        return None;
    }
    let (y, mo, d) = (digits(&s[0..4])?, digits(&s[5..7])?, digits(&s[8..10])?);
    let (h, mi, se) = (
        digits(&s[11..13])?,
        digits(&s[14..16])?,
        digits(&s[17..19])?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut i = 19;
    let mut ms = 0i64;
    if s[i] == b'.' {
        i += 1;
        let start = i;
        while i < s.len() && s[i].is_ascii_digit() {
            i += 1;
        }
        let frac = &s[start..i];
        if frac.is_empty() {
            return None;
        }
        let mut scale = 100;
        for &c in frac.iter().take(3) {
            ms += i64::from(c - b'0') * scale;
            scale /= 10;
        }
    }
    let rest = &s[i..];
    let offset_min = match rest {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), hh @ ..] if hh.len() == 5 && hh[2] == b':' => {
            let v = digits(&hh[0..2])? * 60 + digits(&hh[3..5])?;
            if *sign == b'+' { v } else { -v }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    Some(((days * 86_400 + h * 3_600 + mi * 60 + se) - offset_min * 60) * 1_000 + ms)
}

/// Epoch milliseconds of an RFC 3339 timestamp, or `None` when it is not one.
pub fn parse_ms(s: &str) -> Option<i64> {
    let s = s.trim();
    fast(s.as_bytes()).or_else(|| s.parse::<Timestamp>().ok().map(|t| t.epoch_ms()))
}

/// RFC 3339 with milliseconds (`2026-06-12T14:18:20.000Z`).
pub fn iso_ms(ms: i64) -> String {
    Timestamp::from_epoch_ms(ms).to_rfc3339_ms()
}

/// RFC 3339 with whole seconds (`2026-06-12T14:18:20Z`), the original lab's `bucket_start_iso`.
pub fn iso_s(ms: i64) -> String {
    Timestamp::from_epoch_ms(ms).to_rfc3339_s()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_path_agrees_with_chrono() {
        for s in [
            "2026-06-12T14:18:20.123Z",
            "2026-06-20T21:35:20.0000000Z",
            "2026-06-12T14:18:20Z",
            "2024-02-29T23:59:59.999+02:00",
            "1969-12-31T23:59:59.5Z",
        ] {
            let want = s.parse::<Timestamp>().unwrap().epoch_ms();
            assert_eq!(fast(s.as_bytes()), Some(want), "{s}");
        }
    }

    #[test]
    fn rejects_garbage() {
        assert_eq!(parse_ms("yesterday"), None);
        assert_eq!(parse_ms("2026-13-01T00:00:00Z"), None);
    }
}
