//! Virtual clients (`--clients N`): the main scenario's arrivals are spread over N clients in
//! turn (arrival `i` belongs to client `i mod N`), and each client keeps its own cookie jar, as
//! a browser keeps a site's cookies. A response's `Set-Cookie` headers update its client's jar;
//! the client's later requests carry the jar as one `Cookie` header. A platform's affinity
//! cookie (Container Apps' `stickySessions`) therefore pins each client to a replica, as it pins
//! a user.
//!
//! Each client also remembers the replica (the replica header) of its last response that named
//! one. A response from another replica, or one that sets a cookie, is a [`Change`], printed as
//! a `client` line: the first pins the client, a later one moved it or renewed its cookie.
//!
//! The jar follows RFC 6265 §5.2 for what matters against one host: the `name=value` pair
//! before the first `;` (trimmed; a pair without `=` or with an empty name is ignored), and
//! removal by `Max-Age` of zero or less or an `Expires` date in the past. `Domain`, `Path`,
//! `Secure` and `HttpOnly` are not applied: every request of a run goes to one host and path.
//! Requests of a client that are in flight together carry the jar as it was when each was sent.
//! The clients share the scenario's connections: affinity by cookie does not depend on them.

use std::sync::Mutex;
use std::time::SystemTime;

use http::header::HeaderValue;

use crate::stats::header_text;

/// The most virtual clients a run may have.
pub const MAX_CLIENTS: usize = 10_000;

/// The virtual clients of one scenario.
pub struct Clients {
    slots: Vec<Mutex<Client>>,
}

#[derive(Default)]
struct Client {
    /// Cookies by name, in the order they were first set.
    jar: Vec<(String, String)>,
    /// The replica of the last response that named one.
    replica: Option<String>,
}

/// What one response changed for its client.
#[derive(Debug, PartialEq, Eq)]
pub struct Change {
    pub client: u32,
    pub previous_replica: Option<String>,
    pub replica: Option<String>,
    /// The cookies the response set, `name=value` (removals too, with their empty value).
    pub set_cookie: Vec<String>,
}

/// One `Set-Cookie` header, reduced to what the jar keeps.
#[derive(Debug, PartialEq, Eq)]
struct SetCookie {
    name: String,
    value: String,
    /// `Max-Age` ≤ 0 or an `Expires` in the past: the cookie is removed.
    expired: bool,
}

impl Clients {
    /// `n` clients with empty jars (`n` ≥ 1, checked by the configuration).
    pub fn new(n: usize) -> Clients {
        Clients {
            slots: (0..n.max(1)).map(|_| Mutex::default()).collect(),
        }
    }

    /// The client of the `i`th arrival (0-based).
    pub fn of_arrival(&self, i: u64) -> usize {
        (i % self.slots.len() as u64) as usize
    }

    /// The `Cookie` header value client `c` sends now, if its jar holds any cookie.
    pub fn cookie(&self, c: usize) -> Option<String> {
        let slot = self.slots.get(c)?.lock().ok()?;
        if slot.jar.is_empty() {
            return None;
        }
        Some(
            slot.jar
                .iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect::<Vec<_>>()
                .join("; "),
        )
    }

    /// Applies a response of client `c`: its `Set-Cookie` headers to the jar, its replica to
    /// the client's; the change, when there is one to report.
    pub fn observe(
        &self,
        c: usize,
        replica: Option<&HeaderValue>,
        set_cookies: &[HeaderValue],
    ) -> Option<Change> {
        let mut slot = self.slots.get(c)?.lock().ok()?;
        let now = SystemTime::now();
        let mut set = Vec::new();
        for h in set_cookies {
            let Some(sc) = parse_set_cookie(h.as_bytes(), now) else {
                continue;
            };
            set.push(format!("{}={}", sc.name, sc.value));
            let at = slot.jar.iter().position(|(n, _)| *n == sc.name);
            match (at, sc.expired) {
                (Some(i), true) => {
                    slot.jar.remove(i);
                }
                (None, true) => {}
                (Some(i), false) => slot.jar[i].1 = sc.value,
                (None, false) => slot.jar.push((sc.name, sc.value)),
            }
        }
        let replica = replica.map(header_text);
        let previous = slot.replica.clone();
        let moved = replica.is_some() && replica != previous;
        if replica.is_some() {
            slot.replica.clone_from(&replica);
        }
        (moved || !set.is_empty()).then(|| Change {
            client: u32::try_from(c).unwrap_or(u32::MAX),
            previous_replica: previous,
            replica: replica.or(slot.replica.clone()),
            set_cookie: set,
        })
    }
}

/// The `name=value` and expiry of a `Set-Cookie` value (RFC 6265 §5.2), `None` when it sets
/// nothing (no `=`, an empty name, not text).
fn parse_set_cookie(v: &[u8], now: SystemTime) -> Option<SetCookie> {
    let s = std::str::from_utf8(v).ok()?;
    let mut parts = s.split(';');
    let (name, value) = parts.next()?.split_once('=')?;
    let name = name.trim();
    if name.is_empty() {
        return None;
    }
    let mut expired = false;
    let mut max_age_seen = false;
    for attr in parts {
        let (k, val) = attr.split_once('=').unwrap_or((attr, ""));
        let (k, val) = (k.trim(), val.trim());
        if k.eq_ignore_ascii_case("max-age") {
            // Max-Age wins over Expires (§5.3 step 3); a value that is not a number is ignored.
            if let Ok(secs) = val.parse::<i64>() {
                max_age_seen = true;
                expired = secs <= 0;
            }
        } else if k.eq_ignore_ascii_case("expires")
            && !max_age_seen
            && let Ok(t) = httpdate::parse_http_date(val)
        {
            expired = t <= now;
        }
    }
    Some(SetCookie {
        name: name.to_owned(),
        value: value.trim().to_owned(),
        expired,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn hv(s: &'static str) -> HeaderValue {
        HeaderValue::from_static(s)
    }

    fn parse(s: &str) -> Option<SetCookie> {
        parse_set_cookie(
            s.as_bytes(),
            SystemTime::UNIX_EPOCH + Duration::from_secs(1e9 as u64),
        )
    }

    #[test]
    fn set_cookie_keeps_the_pair_and_drops_the_attributes() {
        let c = parse(" aff = r1 ; Path=/; HttpOnly").unwrap();
        assert_eq!(
            (c.name.as_str(), c.value.as_str(), c.expired),
            ("aff", "r1", false)
        );
        assert_eq!(parse("noequals; Path=/"), None);
        assert_eq!(parse("=v"), None);
        assert_eq!(parse("a=").map(|c| c.value), Some(String::new()));
    }

    #[test]
    fn max_age_zero_or_a_past_expires_removes_and_max_age_wins() {
        assert!(parse("a=1; Max-Age=0").unwrap().expired);
        assert!(parse("a=1; max-age=-5").unwrap().expired);
        assert!(!parse("a=1; Max-Age=60").unwrap().expired);
        // 1994 is before the test's "now" (2001), 2037 after it.
        assert!(
            parse("a=1; Expires=Sun, 06 Nov 1994 08:49:37 GMT")
                .unwrap()
                .expired
        );
        assert!(
            !parse("a=1; Expires=Fri, 01 Jan 2037 00:00:00 GMT")
                .unwrap()
                .expired
        );
        assert!(
            !parse("a=1; Max-Age=60; Expires=Sun, 06 Nov 1994 08:49:37 GMT")
                .unwrap()
                .expired
        );
        assert!(!parse("a=1; Max-Age=soon").unwrap().expired);
    }

    #[test]
    fn arrivals_go_to_the_clients_in_turn() {
        let c = Clients::new(3);
        let got: Vec<usize> = (0..7).map(|i| c.of_arrival(i)).collect();
        assert_eq!(got, [0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn a_client_is_pinned_then_reported_only_when_it_moves_or_gets_a_cookie() {
        let c = Clients::new(2);
        assert_eq!(c.cookie(0), None);
        let first = c
            .observe(0, Some(&hv("r1")), &[hv("aff=r1; Path=/")])
            .unwrap();
        assert_eq!(first.previous_replica, None);
        assert_eq!(first.replica.as_deref(), Some("r1"));
        assert_eq!(first.set_cookie, ["aff=r1"]);
        assert_eq!(c.cookie(0).as_deref(), Some("aff=r1"));
        // The other client's jar is its own.
        assert_eq!(c.cookie(1), None);
        // Same replica, no cookie: nothing to report.
        assert_eq!(c.observe(0, Some(&hv("r1")), &[]), None);
        // An answer naming no replica (the ingress's own 503) changes nothing.
        assert_eq!(c.observe(0, None, &[]), None);
        let moved = c.observe(0, Some(&hv("r2")), &[hv("aff=r2")]).unwrap();
        assert_eq!(moved.previous_replica.as_deref(), Some("r1"));
        assert_eq!(moved.replica.as_deref(), Some("r2"));
        assert_eq!(c.cookie(0).as_deref(), Some("aff=r2"));
        // A second cookie joins the jar; a removal leaves it.
        c.observe(0, Some(&hv("r2")), &[hv("other=x")]).unwrap();
        assert_eq!(c.cookie(0).as_deref(), Some("aff=r2; other=x"));
        c.observe(0, Some(&hv("r2")), &[hv("aff=; Max-Age=0")])
            .unwrap();
        assert_eq!(c.cookie(0).as_deref(), Some("other=x"));
    }
}
