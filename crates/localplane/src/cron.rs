//! Five-field cron expressions (minute hour day-of-month month day-of-week, UTC), as Container
//! Apps jobs' `scheduleTriggerConfig.cronExpression` takes them.

use chrono::{DateTime, Datelike, Duration, Timelike, Utc};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cron {
    minutes: Vec<bool>,
    hours: Vec<bool>,
    dom: Vec<bool>,
    months: Vec<bool>,
    dow: Vec<bool>,
    dom_any: bool,
    dow_any: bool,
}

/// A cron expression that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    #[error("expected 5 fields (minute hour day month weekday), got {0}")]
    Fields(usize),
    #[error("bad step in '{0}'")]
    Step(String),
    #[error("bad value '{0}'")]
    Value(String),
    #[error("'{part}' is outside {min}-{max}")]
    Range { part: String, min: u32, max: u32 },
}

fn field(s: &str, min: u32, max: u32) -> Result<(Vec<bool>, bool), CronError> {
    let mut set = vec![false; (max + 1) as usize];
    let any = s == "*" || s == "?";
    for part in s.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, st)) => (
                r,
                st.parse::<u32>()
                    .ok()
                    .filter(|x| *x > 0)
                    .ok_or_else(|| CronError::Step(part.to_owned()))?,
            ),
            None => (part, 1),
        };
        let (lo, hi) = if range == "*" || range == "?" {
            (min, max)
        } else if let Some((a, b)) = range.split_once('-') {
            let a = a
                .parse::<u32>()
                .map_err(|_| CronError::Value(a.to_owned()))?;
            let b = b
                .parse::<u32>()
                .map_err(|_| CronError::Value(b.to_owned()))?;
            (a, b)
        } else {
            let a = range
                .parse::<u32>()
                .map_err(|_| CronError::Value(range.to_owned()))?;
            (a, if part.contains('/') { max } else { a })
        };
        if lo < min || hi > max || lo > hi {
            return Err(CronError::Range {
                part: part.to_owned(),
                min,
                max,
            });
        }
        let mut v = lo;
        while v <= hi {
            set[v as usize] = true;
            v += step;
        }
    }
    Ok((set, any))
}

impl Cron {
    pub fn parse(expr: &str) -> Result<Cron, CronError> {
        let f: Vec<&str> = expr.split_whitespace().collect();
        if f.len() != 5 {
            return Err(CronError::Fields(f.len()));
        }
        let (minutes, _) = field(f[0], 0, 59)?;
        let (hours, _) = field(f[1], 0, 23)?;
        let (dom, dom_any) = field(f[2], 1, 31)?;
        let (months, _) = field(f[3], 1, 12)?;
        let (mut dow, dow_any) = field(f[4], 0, 7)?;
        if dow[7] {
            dow[0] = true;
        }
        Ok(Cron {
            minutes,
            hours,
            dom,
            months,
            dow,
            dom_any,
            dow_any,
        })
    }

    fn matches(&self, t: DateTime<Utc>) -> bool {
        let dom_ok = self.dom[t.day() as usize];
        let dow_ok = self.dow[t.weekday().num_days_from_sunday() as usize];
        let day_ok = match (self.dom_any, self.dow_any) {
            (true, true) => true,
            (true, false) => dow_ok,
            (false, true) => dom_ok,
            (false, false) => dom_ok || dow_ok,
        };
        self.minutes[t.minute() as usize]
            && self.hours[t.hour() as usize]
            && self.months[t.month() as usize]
            && day_ok
    }

    /// The first whole minute strictly after `after` that matches (searched up to 4 years).
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let start = after.with_second(0)?.with_nanosecond(0)? + Duration::minutes(1);
        let mut t = start;
        for _ in 0..(4 * 366 * 24 * 60) {
            if self.matches(t) {
                return Some(t);
            }
            t += Duration::minutes(1);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn every_five_minutes() {
        let c = Cron::parse("*/5 * * * *").unwrap();
        let t = Utc.with_ymd_and_hms(2026, 1, 1, 10, 2, 30).unwrap();
        assert_eq!(
            c.next_after(t).unwrap(),
            Utc.with_ymd_and_hms(2026, 1, 1, 10, 5, 0).unwrap()
        );
    }

    #[test]
    fn weekday_and_ranges() {
        let c = Cron::parse("30 9 * * 1-5").unwrap();
        // 2026-01-03 is a Saturday.
        let t = Utc.with_ymd_and_hms(2026, 1, 3, 12, 0, 0).unwrap();
        assert_eq!(
            c.next_after(t).unwrap(),
            Utc.with_ymd_and_hms(2026, 1, 5, 9, 30, 0).unwrap()
        );
    }

    #[test]
    fn rejects_garbage() {
        assert!(Cron::parse("* * *").is_err());
        assert!(Cron::parse("61 * * * *").is_err());
        assert!(Cron::parse("*/0 * * * *").is_err());
        assert!(Cron::parse("a * * * *").is_err());
    }
}
