//! Arrival-rate profiles: when the i-th request of an open-model scenario is due.
//!
//! A profile is a list of segments, each with a length and a rate that moves linearly from `r0`
//! to `r1` (constant when they are equal, a pause when both are 0). The i-th arrival is at the
//! instant `t` where the cumulative count `N(t) = ∫ rate` reaches `i`, computed in closed form from
//! the run's start, so the schedule never drifts: for a constant rate it is exactly
//! `start + i / rate`.

use std::time::Duration;

/// One piece of a profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    /// Length in seconds.
    pub secs: f64,
    /// Rate (requests per second) at the start and at the end of the segment.
    pub r0: f64,
    pub r1: f64,
    /// Staircase step number (1-based) this segment is, if any.
    pub step: Option<u32>,
}

impl Segment {
    fn count(&self) -> f64 {
        (self.r0 + self.r1) / 2.0 * self.secs
    }

    /// Seconds into the segment at which `m` arrivals (counted from its start) have accrued.
    fn time_of(&self, m: f64) -> f64 {
        if m <= 0.0 {
            return 0.0;
        }
        let a = (self.r1 - self.r0) / (2.0 * self.secs);
        // a x² + r0 x − m = 0, in the form that is stable for a → 0 and either sign of a.
        let disc = (self.r0 * self.r0 + 4.0 * a * m).max(0.0);
        2.0 * m / (self.r0 + disc.sqrt())
    }

    fn rate_at(&self, x: f64) -> f64 {
        self.r0 + (self.r1 - self.r0) * (x / self.secs).clamp(0.0, 1.0)
    }
}

/// A whole arrival-rate profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub segments: Vec<Segment>,
}

impl Profile {
    /// A constant rate for `secs` seconds.
    pub fn constant(rate: f64, secs: f64) -> Self {
        Profile {
            segments: vec![Segment {
                secs,
                r0: rate,
                r1: rate,
                step: None,
            }],
        }
    }

    /// k6-style ramping stages: each `(length, target)` ramps linearly from the previous target
    /// (the first from `start_rate`).
    pub fn stages(start_rate: f64, stages: &[(Duration, f64)]) -> Self {
        let mut prev = start_rate;
        let segments = stages
            .iter()
            .map(|(d, target)| {
                let s = Segment {
                    secs: d.as_secs_f64(),
                    r0: prev,
                    r1: *target,
                    step: None,
                };
                prev = *target;
                s
            })
            .collect();
        Profile { segments }
    }

    /// A staircase: each rate held for `step`, with a `pause` (no requests) between steps.
    pub fn staircase(rates: &[f64], step: Duration, pause: Duration) -> Self {
        let mut segments = Vec::new();
        for (i, r) in rates.iter().enumerate() {
            if i > 0 && !pause.is_zero() {
                segments.push(Segment {
                    secs: pause.as_secs_f64(),
                    r0: 0.0,
                    r1: 0.0,
                    step: None,
                });
            }
            segments.push(Segment {
                secs: step.as_secs_f64(),
                r0: *r,
                r1: *r,
                step: Some(u32::try_from(i + 1).unwrap_or(u32::MAX)),
            });
        }
        Profile { segments }
    }

    /// Total length in seconds.
    pub fn secs(&self) -> f64 {
        self.segments.iter().map(|s| s.secs).sum()
    }

    /// The highest rate anywhere in the profile.
    pub fn peak_rate(&self) -> f64 {
        self.segments
            .iter()
            .map(|s| s.r0.max(s.r1))
            .fold(0.0, f64::max)
    }

    /// The rate (and staircase step) at `secs` into the profile; 0 past its end.
    pub fn rate_at(&self, secs: f64) -> (f64, Option<u32>) {
        let mut off = 0.0;
        for s in &self.segments {
            if secs < off + s.secs {
                return (s.rate_at(secs - off), s.step);
            }
            off += s.secs;
        }
        (0.0, None)
    }

    /// How many requests are due in the first `secs` seconds (the integral of the rate).
    pub fn count_until(&self, secs: f64) -> f64 {
        let mut off = 0.0;
        let mut n = 0.0;
        for s in &self.segments {
            if secs >= off + s.secs {
                n += s.count();
            } else {
                let x = (secs - off).max(0.0);
                n += s.r0 * x + (s.r1 - s.r0) * x * x / (2.0 * s.secs);
                break;
            }
            off += s.secs;
        }
        n
    }

    /// An iterator over arrival offsets from the start, in order.
    pub fn arrivals(&self) -> Arrivals<'_> {
        Arrivals {
            profile: self,
            seg: 0,
            seg_off: 0.0,
            seg_cum: 0.0,
            i: 0,
        }
    }
}

/// Arrival offsets of a [`Profile`]: `(offset, staircase step)`.
pub struct Arrivals<'a> {
    profile: &'a Profile,
    seg: usize,
    seg_off: f64,
    seg_cum: f64,
    i: u64,
}

impl Iterator for Arrivals<'_> {
    type Item = (Duration, Option<u32>);

    fn next(&mut self) -> Option<Self::Item> {
        let n = self.i as f64;
        loop {
            let s = self.profile.segments.get(self.seg)?;
            let m = n - self.seg_cum;
            // A tiny tolerance so float error never pushes an arrival into the wrong segment.
            if m < s.count() - 1e-9 {
                let x = s.time_of(m);
                self.i += 1;
                return Some((Duration::from_secs_f64(self.seg_off + x), s.step));
            }
            self.seg_cum += s.count();
            self.seg_off += s.secs;
            self.seg += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_rate_is_exactly_i_over_rate() {
        let p = Profile::constant(2000.0, 3.0);
        let v: Vec<_> = p.arrivals().collect();
        assert_eq!(v.len(), 6000);
        for (i, (t, _)) in v.iter().enumerate().step_by(997) {
            let want = i as f64 / 2000.0;
            assert!((t.as_secs_f64() - want).abs() < 1e-9, "{i}: {t:?}");
        }
    }

    #[test]
    fn ramp_from_zero_accrues_the_triangle_area() {
        // 0 -> 100 over 10 s is 500 requests; then 10 s at 100 is 1000 more.
        let p = Profile::stages(
            0.0,
            &[
                (Duration::from_secs(10), 100.0),
                (Duration::from_secs(10), 100.0),
            ],
        );
        let v: Vec<_> = p.arrivals().map(|(t, _)| t.as_secs_f64()).collect();
        assert_eq!(v.len(), 1500);
        assert!(v.windows(2).all(|w| w[0] <= w[1]));
        // Half the ramp's requests (250) are due by t = sqrt(2 * 250 / 10) = 7.07 s.
        assert!((v[250] - 50f64.sqrt()).abs() < 1e-6, "{}", v[250]);
        assert!((v[500] - 10.0).abs() < 1e-6);
    }

    #[test]
    fn staircase_pauses_have_no_arrivals_and_steps_are_numbered() {
        let p = Profile::staircase(
            &[10.0, 20.0],
            Duration::from_secs(1),
            Duration::from_secs(2),
        );
        let v: Vec<_> = p.arrivals().collect();
        assert_eq!(v.len(), 30);
        assert!(
            v[..10]
                .iter()
                .all(|(t, s)| *s == Some(1) && t.as_secs_f64() < 1.0)
        );
        assert!(
            v[10..]
                .iter()
                .all(|(t, s)| *s == Some(2) && t.as_secs_f64() >= 3.0)
        );
        assert_eq!(p.secs(), 4.0);
        assert_eq!(p.rate_at(1.5), (0.0, None));
        assert_eq!(p.rate_at(3.5), (20.0, Some(2)));
    }
}
