//! How strong a run's evidence is: exact (Clopper–Pearson) 95 % intervals on the error rates
//! the report states ([`ErrorRate`]), and what the lab's rule cannot see ([`Blindness`]): the
//! outages and partial failures too short or too thin to put K consecutive windows above the
//! threshold.
//!
//! A `held` verdict with 0 errors in 34,000 requests excludes error rates above about 0.011 %,
//! not every error; a rule of 3 consecutive 10 s windows above 0.5 % never sees an outage of
//! 10 s. Both are stated beside the verdict so a reader does not take `held` for "no
//! client-visible burst".
//!
//! The interval is the exact binomial one: the lower bound is the error probability under
//! which seeing at least the observed errors has probability 2.5 %, the upper bound the one
//! under which seeing at most them has 2.5 % (the `beta` quantiles of Clopper and Pearson,
//! 1934), computed here from the regularised incomplete beta function.

use serde::Serialize;

use crate::judge::rule::{BucketRow, Rule};

/// The intervals' confidence level.
pub const CONFIDENCE: f64 = 0.95;

/// How the intervals are computed, as the report names it.
pub const METHOD: &str = "Clopper-Pearson exact binomial, two-sided 95 %";

/// An error count over a request count, with its exact 95 % interval (percentages).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ErrorRate {
    pub errors: u64,
    pub requests: u64,
    pub pct: f64,
    /// Lower bound of the 95 % interval, percent.
    pub lo_pct: f64,
    /// Upper bound of the 95 % interval, percent: the highest error rate this count does not
    /// exclude.
    pub hi_pct: f64,
}

impl ErrorRate {
    /// `None` without requests (no rate to bound); errors above requests are counted as
    /// requests (a malformed pack must not make the interval meaningless).
    pub fn new(errors: u64, requests: u64) -> Option<ErrorRate> {
        if requests == 0 {
            return None;
        }
        let errors = errors.min(requests);
        let (lo, hi) = clopper_pearson(errors, requests, CONFIDENCE);
        Some(ErrorRate {
            errors,
            requests,
            pct: 100.0 * errors as f64 / requests as f64,
            lo_pct: 100.0 * lo,
            hi_pct: 100.0 * hi,
        })
    }

    /// `0.000 % (95 % CI 0.000–0.011 %)`, with enough digits that the upper bound of a large
    /// clean count does not print as 0.
    pub fn text(&self) -> String {
        format!(
            "{} % (95 % CI {}–{} %)",
            pct_text(self.pct),
            pct_text(self.lo_pct),
            pct_text(self.hi_pct)
        )
    }
}

/// The steady request rate of `rows` (windows of `rule`'s length): the median window's requests
/// per second, counting only windows with requests, so a run's partial first and last windows
/// and gap-filled empty ones do not pull it down; `None` without requests.
pub fn steady_rate_rps<'a>(rows: impl Iterator<Item = &'a BucketRow>, rule: &Rule) -> Option<f64> {
    let mut counts: Vec<u64> = rows.map(|r| r.count).filter(|&c| c > 0).collect();
    if counts.is_empty() || rule.window_s == 0 {
        return None;
    }
    counts.sort_unstable();
    Some(counts[counts.len() / 2] as f64 / rule.window_s as f64)
}

/// A percentage with three decimals, or with two significant digits below 0.001 (but not 0).
pub fn pct_text(p: f64) -> String {
    if p == 0.0 || p >= 0.001 {
        format!("{p:.3}")
    } else {
        format!("{p:.2e}")
    }
}

/// The exact two-sided interval for `k` successes in `n` trials at `confidence`, as
/// probabilities. `k <= n` and `n > 0` are the caller's (`ErrorRate::new` ensures them).
pub fn clopper_pearson(k: u64, n: u64, confidence: f64) -> (f64, f64) {
    let tail = (1.0 - confidence) / 2.0;
    let (kf, nf) = (k as f64, n as f64);
    // Closed forms at the ends (the beta quantile of a = 1 or b = 1), which also keep the
    // largest counts exact.
    let lo = if k == 0 {
        0.0
    } else if k == n {
        (tail.ln() / nf).exp()
    } else {
        beta_quantile(kf, nf - kf + 1.0, tail)
    };
    let hi = if k == n {
        1.0
    } else if k == 0 {
        -(tail.ln() / nf).exp_m1()
    } else {
        beta_quantile(kf + 1.0, nf - kf, 1.0 - tail)
    };
    (lo, hi)
}

/// The `p` quantile of Beta(a, b): bisection on the regularised incomplete beta, which is
/// increasing in x; 100 halvings of [0, 1] reach the last bit of an f64.
fn beta_quantile(a: f64, b: f64, p: f64) -> f64 {
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if inc_beta(a, b, mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The regularised incomplete beta function I_x(a, b), from its continued fraction (evaluated
/// by the modified Lentz method) on the side of x where it converges fast, and the symmetry
/// I_x(a, b) = 1 - I_{1-x}(b, a) on the other.
fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = a * x.ln() + b * (1.0 - x).ln() - ln_beta(a, b);
    if x < (a + 1.0) / (a + b + 2.0) {
        (ln_front.exp() * beta_fraction(a, b, x) / a).clamp(0.0, 1.0)
    } else {
        (1.0 - ln_front.exp() * beta_fraction(b, a, 1.0 - x) / b).clamp(0.0, 1.0)
    }
}

/// The continued fraction of I_x(a, b) (Abramowitz and Stegun 26.5.8).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const EPS: f64 = 1e-15;
    let nonzero = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / nonzero(1.0 - (a + b) * x / (a + 1.0));
    let mut f = d;
    for m in 1..100_000 {
        let m = f64::from(m);
        // The even step d_{2m}, then the odd step d_{2m+1}.
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 / nonzero(1.0 + even * d);
        c = nonzero(1.0 + even / c);
        f *= d * c;
        let odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 / nonzero(1.0 + odd * d);
        c = nonzero(1.0 + odd / c);
        let step = d * c;
        f *= step;
        if (step - 1.0).abs() < EPS {
            break;
        }
    }
    f
}

/// ln B(a, b).
fn ln_beta(a: f64, b: f64) -> f64 {
    ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b)
}

/// ln Γ(x) for x > 0: the Lanczos approximation (g = 7, nine coefficients), relative error
/// about 1e-15.
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 - x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = C[0];
    for (i, c) in C.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// What a rule of K consecutive W-second windows above T % cannot see, at a steady request
/// rate R, counted in requests as the rule counts them. A window holds `n = R × W` requests and
/// is above the threshold with `e = ⌊n × T / 100⌋ + 1` errors or more. An outage (`m`
/// consecutive requests failing) is
/// - never caught when `m <= (K - 2) n + 2e - 1` (`e - 1` for K = 1): placed at its best, it
///   cannot give K windows `e` errors each;
/// - caught or missed, depending on where it falls against the window boundaries, up to
///   `(K - 1) n + 2e - 2`;
/// - always caught from `(K - 1) n + 2e - 1` on: placed at its worst (`e - 1` errors in its
///   first window), it still fills K - 1 windows and gives the next one `e`.
///
/// At 200 RPS with the original rule: 2,021 requests (10.105 s) never, 4,021 (20.105 s) always.
/// A partial failure of a share `f` of the requests, evenly spread, needs `e / f` requests of a
/// window: over the rule's own span of K windows it is always caught above `f = 2e / n` (about
/// twice the threshold), and never at `f <= T / 100`, however long.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Blindness {
    pub window_s: f64,
    pub consecutive: u32,
    pub threshold_pct: f64,
    /// The judged runs' steady rate (requests per second: the median window's).
    pub rate_rps: f64,
    /// Requests in one window at that rate (`n`).
    pub window_requests: u64,
    /// The fewest errors that put a window above the threshold (`e`); `None`: no window can be.
    pub bad_window_errors: Option<u64>,
    /// The longest outage never caught (`None`: the rule can catch nothing).
    pub never_caught_up_to: Option<Outage>,
    /// The shortest outage always caught.
    pub always_caught_from: Option<Outage>,
    /// A partial failure lasting the rule's span (K windows) is always caught above this share
    /// of requests, percent.
    pub partial_always_caught_above_pct: Option<f64>,
    /// The rule's span, seconds (K windows).
    pub partial_span_s: f64,
    /// A partial failure of at most this share of requests is never caught, percent.
    pub partial_never_caught_up_to_pct: f64,
}

/// An outage: consecutive failed requests, and how long they take at the rate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Outage {
    pub requests: u64,
    pub seconds: f64,
}

impl Blindness {
    /// The limits of `rule` at `rate_rps` (requests per second, > 0).
    pub fn of(rule: &Rule, rate_rps: f64) -> Blindness {
        let w = rule.window_s as f64;
        let k = u64::from(rule.consecutive.max(1));
        let t = rule.threshold_pct;
        let n = ((rate_rps * w).round() as u64).max(1);
        // The fewest errors whose share of n is strictly above t %.
        let e = (n as f64 * t / 100.0).floor() as u64 + 1;
        let catchable = e <= n;
        let outage = |m: u64| Outage {
            requests: m,
            seconds: m as f64 / rate_rps,
        };
        let never = if k == 1 {
            e - 1
        } else {
            (k - 2) * n + 2 * e - 1
        };
        let always = (k - 1) * n + 2 * e - 1;
        let partial = 100.0 * 2.0 * e as f64 / n as f64;
        Blindness {
            window_s: w,
            consecutive: k as u32,
            threshold_pct: t,
            rate_rps,
            window_requests: n,
            bad_window_errors: catchable.then_some(e),
            never_caught_up_to: catchable.then(|| outage(never)),
            always_caught_from: catchable.then(|| outage(always)),
            partial_always_caught_above_pct: (catchable && partial < 100.0).then_some(partial),
            partial_span_s: k as f64 * w,
            partial_never_caught_up_to_pct: t.min(100.0),
        }
    }

    /// Whether an outage of `m` consecutive failed requests is never, sometimes or always
    /// caught.
    pub fn outage(&self, m: u64) -> Visibility {
        match (self.never_caught_up_to, self.always_caught_from) {
            (Some(n), _) if m <= n.requests => Visibility::Never,
            (Some(_), Some(a)) if m >= a.requests => Visibility::Always,
            (Some(_), _) => Visibility::DependsOnPlacement,
            (None, _) => Visibility::Never,
        }
    }

    /// The sentence printed beside the verdict.
    pub fn sentence(&self) -> String {
        let w = trim(self.window_s);
        match (self.never_caught_up_to, self.always_caught_from) {
            (Some(n), Some(a)) => {
                let partial = match self.partial_always_caught_above_pct {
                    Some(p) => format!(
                        "a partial failure is caught for sure only when more than {} % of requests fail for {} s, and never at {} % or less, however long",
                        trim(p),
                        trim(self.partial_span_s),
                        trim(self.partial_never_caught_up_to_pct)
                    ),
                    None => format!(
                        "a partial failure of {} % of requests or less is never caught",
                        trim(self.partial_never_caught_up_to_pct)
                    ),
                };
                format!(
                    "At {:.0} RPS this rule cannot see an outage (every request failing) of {} requests or fewer ({} s); one of up to {} requests ({} s) is caught or missed depending on where it falls against the {w} s windows; one of {} requests ({} s) or more is always caught; {partial}.",
                    self.rate_rps,
                    n.requests,
                    trim(n.seconds),
                    a.requests - 1,
                    trim((a.requests - 1) as f64 / self.rate_rps),
                    a.requests,
                    trim(a.seconds),
                )
            }
            _ => format!(
                "This rule cannot see any failure: a window must have more than {} % errors, which no window can.",
                trim(self.threshold_pct)
            ),
        }
    }
}

/// Whether the rule sees an outage of a given length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Visibility {
    Never,
    DependsOnPlacement,
    Always,
}

/// A number of seconds or percent without trailing zeros: `10.1`, `20`, `0.5`.
fn trim(x: f64) -> String {
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// P(X <= k) for X ~ Binomial(n, p), summed in log space (independent of the beta code).
    fn binom_cdf(k: u64, n: u64, p: f64) -> f64 {
        let mut ln_c = 0.0_f64; // ln C(n, 0)
        let mut total = 0.0;
        for i in 0..=k {
            if i > 0 {
                ln_c += ((n - i + 1) as f64).ln() - (i as f64).ln();
            }
            total += (ln_c + i as f64 * p.ln() + (n - i) as f64 * (1.0 - p).ln()).exp();
        }
        total
    }

    #[test]
    fn the_bounds_leave_two_and_a_half_percent_in_each_tail() {
        for (k, n) in [
            (1, 10),
            (5, 100),
            (3, 2000),
            (37, 400),
            (99, 100),
            (12, 34_000),
        ] {
            let (lo, hi) = clopper_pearson(k, n, CONFIDENCE);
            let share = k as f64 / n as f64;
            assert!(lo < share && share < hi, "{k}/{n}");
            // At the upper bound, k or fewer errors has probability 2.5 %; at the lower, k or more.
            let at_hi = binom_cdf(k, n, hi);
            let at_lo = 1.0 - binom_cdf(k - 1, n, lo);
            assert!(
                (at_hi - 0.025).abs() < 1e-9,
                "{k}/{n}: P(X<=k | hi) = {at_hi}"
            );
            assert!(
                (at_lo - 0.025).abs() < 1e-9,
                "{k}/{n}: P(X>=k | lo) = {at_lo}"
            );
        }
    }

    #[test]
    fn a_clean_count_excludes_rates_above_the_rule_of_three_ish_bound() {
        // 0 of 34,000: the exact upper bound is 1 - 0.025^(1/n), about 0.0109 %.
        let r = ErrorRate::new(0, 34_000).unwrap();
        assert_eq!((r.pct, r.lo_pct), (0.0, 0.0));
        assert!((r.hi_pct - 0.010_849).abs() < 1e-5, "{}", r.hi_pct);
        // Per event, 2,000 requests: about 0.18 %.
        let e = ErrorRate::new(0, 2_000).unwrap();
        assert!((e.hi_pct - 0.184_274).abs() < 1e-5, "{}", e.hi_pct);
        assert_eq!(e.text(), "0.000 % (95 % CI 0.000–0.184 %)");
        // All failed: the mirror image.
        let all = ErrorRate::new(2_000, 2_000).unwrap();
        assert!((all.lo_pct - (100.0 - e.hi_pct)).abs() < 1e-9);
        assert_eq!(all.hi_pct, 100.0);
        assert_eq!(ErrorRate::new(3, 0), None);
    }

    #[test]
    fn the_interval_matches_published_values() {
        // 5 errors in 100: the beta quantiles computed independently with mpmath's `betainc`
        // at 30 digits and bisection: 0.0164318791820521... and 0.1128349111054627....
        let (lo, hi) = clopper_pearson(5, 100, 0.95);
        assert!((lo - 0.016_431_879_182_052).abs() < 1e-12, "{lo}");
        assert!((hi - 0.112_834_911_105_463).abs() < 1e-12, "{hi}");
    }

    #[test]
    fn the_beta_quantile_matches_kusto_beta_inv() {
        // Learn, "beta_inv()" (Kusto): beta_inv(0.1, 10, 20) = 0.226415022388749, the function
        // the KQL twin of Q6 uses for the same interval.
        let x = beta_quantile(10.0, 20.0, 0.1);
        assert!((x - 0.226_415_022_388_749).abs() < 1e-12, "{x}");
    }

    #[test]
    fn ln_gamma_matches_factorials() {
        let mut f = 1.0_f64;
        for n in 1..30_u32 {
            f *= f64::from(n);
            let got = ln_gamma(f64::from(n) + 1.0);
            assert!((got - f.ln()).abs() < 1e-12 * f.ln().max(1.0), "{n}");
        }
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-13);
    }

    #[test]
    fn the_original_rule_is_blind_to_2021_requests_and_sure_from_4021_at_200_rps() {
        let b = Blindness::of(&Rule::default(), 200.0);
        assert_eq!((b.window_requests, b.bad_window_errors), (2_000, Some(11)));
        assert_eq!(b.never_caught_up_to.unwrap().requests, 2_021);
        assert_eq!(b.always_caught_from.unwrap().requests, 4_021);
        assert_eq!(b.outage(1_600), Visibility::Never);
        assert_eq!(b.outage(2_021), Visibility::Never);
        assert_eq!(b.outage(2_022), Visibility::DependsOnPlacement);
        assert_eq!(b.outage(4_020), Visibility::DependsOnPlacement);
        assert_eq!(b.outage(4_021), Visibility::Always);
        assert_eq!(b.partial_always_caught_above_pct, Some(1.1));
        assert_eq!(
            b.sentence(),
            "At 200 RPS this rule cannot see an outage (every request failing) of 2021 requests or fewer (10.105 s); one of up to 4020 requests (20.1 s) is caught or missed depending on where it falls against the 10 s windows; one of 4021 requests (20.105 s) or more is always caught; a partial failure is caught for sure only when more than 1.1 % of requests fail for 30 s, and never at 0.5 % or less, however long."
        );
    }

    #[test]
    fn at_a_low_rate_one_error_is_a_bad_window() {
        // 10 requests a window: 1 error is 10 % > 0.5 %, so 3 windows need 1 + 10 + 1.
        let b = Blindness::of(&Rule::default(), 1.0);
        assert_eq!(b.bad_window_errors, Some(1));
        assert_eq!(b.never_caught_up_to.unwrap().requests, 11);
        assert_eq!(b.always_caught_from.unwrap().requests, 21);
        assert_eq!(b.partial_always_caught_above_pct, Some(20.0));
    }

    #[test]
    fn a_rule_of_one_window_and_a_rule_of_nothing() {
        let one = Rule {
            consecutive: 1,
            ..Rule::default()
        };
        let b = Blindness::of(&one, 100.0);
        // 1,000 requests a window, 6 errors put it above 0.5 %: 5 never, 11 always (5 + 6).
        assert_eq!(b.never_caught_up_to.unwrap().requests, 5);
        assert_eq!(b.always_caught_from.unwrap().requests, 11);
        let none = Rule {
            threshold_pct: 100.0,
            ..Rule::default()
        };
        let b = Blindness::of(&none, 100.0);
        assert_eq!(b.outage(1_000_000), Visibility::Never);
        assert!(
            b.sentence().contains("cannot see any failure"),
            "{}",
            b.sentence()
        );
    }

    #[test]
    fn small_percentages_keep_two_significant_digits() {
        assert_eq!(pct_text(0.0), "0.000");
        assert_eq!(pct_text(0.0109), "0.011");
        assert_eq!(pct_text(0.000_123), "1.23e-4");
    }
}
