//! Scrubbing of evidence pulled from Azure: exported evidence has its subscription ids, tenant
//! ids, e-mails and client IPs scrubbed.
//!
//! A [`Scrubber`] rewrites every string of a Log Analytics row (the columns and the JSON lines
//! inside `Log_s`, textually) before it is written into an evidence pack:
//!
//! - subscription ids become [`SUBSCRIPTION`] (`00000000-0000-0000-0000-000000000000`, so a
//!   resource id keeps its shape): any GUID after `/subscriptions/`, and wherever it appears, a
//!   subscription id the scrubber was told about;
//! - tenant ids become [`TENANT`]: the values of the columns and keys named like a tenant
//!   (`TenantId`, `tenantId`, `tenant_id`, `tid`), the GUID after `login.microsoftonline.com/`,
//!   and a tenant id the scrubber was told about. (Log Analytics' own `TenantId` column is the
//!   workspace id; it goes too.)
//! - e-mail addresses become [`EMAIL`];
//! - IPv4 and IPv6 addresses become [`IP`] (a port after an IPv4 address is kept:
//!   `<ip>:8080`).
//!
//! What the analysis joins on is untouched: app, revision, replica and job names, run ids,
//! timestamps and the kinds and numbers of our own lines (none of them is a GUID after
//! `/subscriptions/`, an address or an e-mail). Placeholders are fixed strings, so scrubbing is
//! stable: the same input always gives the same output, and a scrubbed row scrubs to itself.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4};

use serde_json::{Map, Value};

/// What a subscription id becomes (GUID-shaped, so resource ids still parse).
pub const SUBSCRIPTION: &str = "00000000-0000-0000-0000-000000000000";
/// What a tenant id becomes.
pub const TENANT: &str = "<tenant>";
/// What an e-mail address becomes.
pub const EMAIL: &str = "<email>";
/// What an IP address becomes.
pub const IP: &str = "<ip>";

/// Column and object keys whose whole value is a tenant id.
const TENANT_KEYS: [&str; 5] = ["TenantId", "tenantId", "tenant_id", "tid", "AADTenantId"];
/// Column and object keys whose whole value is a subscription id.
const SUBSCRIPTION_KEYS: [&str; 4] = [
    "SubscriptionId",
    "_SubscriptionId",
    "subscriptionId",
    "subscription_id",
];

/// Scrubs identifying values out of evidence; see the module docs for the rules.
#[derive(Clone, Debug, Default)]
pub struct Scrubber {
    /// Known values and their placeholders (lower-cased GUIDs), replaced wherever they appear.
    known: Vec<(String, &'static str)>,
}

impl Scrubber {
    /// A scrubber that also replaces these exact ids wherever they appear (any case). Empty
    /// values are ignored.
    pub fn new(subscription_id: Option<&str>, tenant_id: Option<&str>) -> Scrubber {
        let mut known = Vec::new();
        for (v, placeholder) in [(subscription_id, SUBSCRIPTION), (tenant_id, TENANT)] {
            if let Some(v) = v.map(str::trim).filter(|v| !v.is_empty()) {
                known.push((v.to_ascii_lowercase(), placeholder));
            }
        }
        Scrubber { known }
    }

    /// Scrubs every string in a JSON value (object keys are kept; values of tenant- and
    /// subscription-id keys are replaced whole).
    pub fn value(&self, v: &mut Value) {
        match v {
            Value::String(s) => {
                let t = self.text(s);
                if t != *s {
                    *s = t;
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.value(x)),
            Value::Object(m) => self.object(m),
            _ => {}
        }
    }

    fn object(&self, m: &mut Map<String, Value>) {
        for (k, x) in m.iter_mut() {
            let whole = if TENANT_KEYS.contains(&k.as_str()) {
                Some(TENANT)
            } else if SUBSCRIPTION_KEYS.contains(&k.as_str()) {
                Some(SUBSCRIPTION)
            } else {
                None
            };
            match (whole, &x) {
                (Some(p), Value::String(s)) if !s.is_empty() => *x = Value::String(p.into()),
                _ => self.value(x),
            }
        }
    }

    /// Scrubs a text (a column value, or a whole line of JSON or logfmt).
    pub fn text(&self, s: &str) -> String {
        let mut out = self.replace_known(s);
        out = replace_guid_after(&out, "/subscriptions/", SUBSCRIPTION);
        out = replace_guid_after(&out, "login.microsoftonline.com/", TENANT);
        out = replace_tenant_fields(&out);
        out = mask_emails(&out);
        mask_ips(&out)
    }

    fn replace_known(&self, s: &str) -> String {
        let mut out = s.to_owned();
        for (v, placeholder) in &self.known {
            if out.to_ascii_lowercase().contains(v.as_str()) {
                out = replace_ignore_ascii_case(&out, v, placeholder);
            }
        }
        out
    }
}

/// `needle` is lower case ASCII (ids are).
fn replace_ignore_ascii_case(s: &str, needle: &str, with: &str) -> String {
    let lower = s.to_ascii_lowercase();
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for (i, _) in lower.match_indices(needle) {
        out.push_str(&s[last..i]);
        out.push_str(with);
        last = i + needle.len();
    }
    out.push_str(&s[last..]);
    out
}

fn is_guid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Replaces a GUID right after `prefix` (case-insensitive) with `with`.
fn replace_guid_after(s: &str, prefix: &str, with: &str) -> String {
    let lower = s.to_ascii_lowercase();
    if !lower.contains(prefix) {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for (i, _) in lower.match_indices(prefix) {
        let start = i + prefix.len();
        if start < last {
            continue;
        }
        if let Some(id) = s.get(start..start + 36).filter(|id| is_guid(id)) {
            out.push_str(&s[last..start]);
            out.push_str(if id == with { id } else { with });
            last = start + 36;
        }
    }
    out.push_str(&s[last..]);
    out
}

/// `"tenantId":"<guid>"`-style fields inside a text (JSON lines within `Log_s`), and
/// `tenant=<guid>` / `tenantId=<guid>` (logfmt, URLs).
fn replace_tenant_fields(s: &str) -> String {
    let lower = s.to_ascii_lowercase();
    if !lower.contains("tenant") && !lower.contains("tid") {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < s.len() {
        // A GUID preceded by a tenant-ish key and a separator (`":"`, `=`, `: `).
        if let Some(id) = s.get(i..i + 36).filter(|id| is_guid(id)) {
            let before = &lower[..i];
            let key_end = before.trim_end_matches(['"', ':', '=', ' ', '\'']);
            let key_end = key_end.trim_end_matches(['"', '\'']);
            let key = key_end
                .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .next()
                .unwrap_or("");
            let tenantish = matches!(
                key,
                "tenantid" | "tenant_id" | "tenant" | "tid" | "aadtenantid"
            );
            let bounded = i == 0 || !bytes[i - 1].is_ascii_hexdigit();
            if tenantish && bounded && key_end.len() < before.len() && id != TENANT {
                out.push_str(&s[last..i]);
                out.push_str(TENANT);
                last = i + 36;
                i += 36;
                continue;
            }
        }
        i += s[i..].chars().next().map_or(1, char::len_utf8);
    }
    out.push_str(&s[last..]);
    out
}

fn is_email_local(c: char) -> bool {
    c.is_ascii_alphanumeric() || "._%+-".contains(c)
}

fn is_email_domain(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '.' || c == '-'
}

/// `local@domain.tld` → [`EMAIL`]. An `@` without a dotted domain (`image@sha256:...`,
/// `user@host`) is left alone.
fn mask_emails(s: &str) -> String {
    if !s.contains('@') {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for (at, _) in s.match_indices('@') {
        if at < last {
            continue;
        }
        let local_start = s[..at]
            .char_indices()
            .rev()
            .take_while(|(_, c)| is_email_local(*c))
            .last()
            .map_or(at, |(i, _)| i);
        let rest = &s[at + 1..];
        let domain_len = rest
            .char_indices()
            .take_while(|(_, c)| is_email_domain(*c))
            .last()
            .map_or(0, |(i, c)| i + c.len_utf8());
        let domain = rest[..domain_len].trim_end_matches(['.', '-']);
        let tld = domain.rsplit('.').next().unwrap_or("");
        let ok = local_start < at
            && domain.contains('.')
            && tld.len() >= 2
            && tld.chars().all(|c| c.is_ascii_alphabetic())
            && local_start >= last;
        if ok {
            out.push_str(&s[last..local_start]);
            out.push_str(EMAIL);
            last = at + 1 + domain.len();
        }
    }
    out.push_str(&s[last..]);
    out
}

fn in_ip_run(c: char) -> bool {
    c.is_ascii_hexdigit() || c == ':' || c == '.'
}

/// IPv4 (with an optional `:port`, kept) and IPv6 addresses → [`IP`]. A candidate is a maximal
/// run of hex digits, `.` and `:` not touching a letter, digit or `_` on either side, parsed by
/// the standard library; so timestamps (`14:06:20.123` follows a `T`), versions (`1.2.3`) and
/// Rust paths (`arm::client`) stay.
fn mask_ips(s: &str) -> String {
    if !s.contains('.') && !s.contains(':') {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    let mut iter = s.char_indices().peekable();
    let word = |c: char| c.is_alphanumeric() || c == '_';
    while let Some((start, c)) = iter.next() {
        if !in_ip_run(c) {
            continue;
        }
        let mut end = start + c.len_utf8();
        while let Some(&(j, d)) = iter.peek() {
            if in_ip_run(d) {
                end = j + d.len_utf8();
                iter.next();
            } else {
                break;
            }
        }
        let before_ok = s[..start].chars().next_back().is_none_or(|b| !word(b));
        let after_ok = s[end..].chars().next().is_none_or(|a| !word(a));
        if !(before_ok && after_ok) {
            continue;
        }
        // Sentence punctuation after an address is not part of it.
        let run = s[start..end].trim_end_matches(['.', ':']);
        let run_end = start + run.len();
        let masked = if run.parse::<Ipv4Addr>().is_ok() {
            Some(IP.to_owned())
        } else if let Ok(sa) = run.parse::<SocketAddrV4>() {
            Some(format!("{IP}:{}", sa.port()))
        } else if run.matches(':').count() >= 2
            && run.chars().any(|c| c.is_ascii_hexdigit())
            && run.parse::<Ipv6Addr>().is_ok()
        {
            Some(IP.to_owned())
        } else {
            None
        };
        if let Some(m) = masked {
            out.push_str(&s[last..start]);
            out.push_str(&m);
            last = run_end;
        }
    }
    out.push_str(&s[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SUB: &str = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
    const TEN: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";

    #[test]
    fn resource_ids_lose_the_subscription_but_keep_their_shape_and_names() {
        let s = Scrubber::default();
        let id = format!(
            "/subscriptions/{}/resourceGroups/probelab-rg/providers/Microsoft.App/containerApps/subject",
            SUB.to_uppercase()
        );
        assert_eq!(
            s.text(&id),
            "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/probelab-rg/providers/Microsoft.App/containerApps/subject"
        );
        // Stable: scrubbing twice changes nothing more.
        assert_eq!(s.text(&s.text(&id)), s.text(&id));
    }

    #[test]
    fn known_ids_go_wherever_they_appear_and_tenant_fields_go_whole() {
        let s = Scrubber::new(Some(SUB), Some(TEN));
        assert_eq!(
            s.text(&format!("sub={SUB} other {}", TEN.to_uppercase())),
            format!("sub={SUBSCRIPTION} other {TENANT}")
        );
        // Without being told, a tenant id is still found by its key.
        let s = Scrubber::default();
        let line = format!(r#"{{"kind":"sample","tenantId":"{TEN}","n":1}}"#);
        assert_eq!(
            s.text(&line),
            r#"{"kind":"sample","tenantId":"<tenant>","n":1}"#
        );
        assert_eq!(
            s.text(&format!("https://login.microsoftonline.com/{TEN}/oauth2")),
            "https://login.microsoftonline.com/<tenant>/oauth2"
        );
        // A GUID that is neither (an execution or operation id) stays.
        let op = "9a1b2c3d-0000-4000-8000-123456789abc";
        assert_eq!(
            s.text(&format!("operation {op}")),
            format!("operation {op}")
        );
    }

    #[test]
    fn emails_are_masked_but_image_digests_and_user_at_host_are_not() {
        let s = Scrubber::default();
        assert_eq!(
            s.text("deployed by First.Last+lab@contoso.example.com."),
            "deployed by <email>."
        );
        for keep in [
            "probelab/subject@sha256:0123abcd",
            "root@buildhost",
            "a @ b.com",
        ] {
            assert_eq!(s.text(keep), keep);
        }
    }

    #[test]
    fn client_ips_are_masked_and_ports_timestamps_versions_and_paths_kept() {
        let s = Scrubber::default();
        assert_eq!(
            s.text(
                "request from 203.0.113.7 to 10.60.0.12:8080, then 2001:db8::1 and [fe80::1]:80."
            ),
            "request from <ip> to <ip>:8080, then <ip> and [<ip>]:80."
        );
        assert_eq!(s.text("::ffff:192.0.2.1 done"), "<ip> done");
        for keep in [
            "2026-11-30T14:06:20.123Z",
            "at 14:06:20 local",
            "version 1.2.3 of 0.21",
            "arm::client::retry after 0.5 s",
            "deadbeef:cafe",
            "ratio 3.14159",
            "probelab/subject:dev",
            "subject--0000001-5c8b7d9f4-x2x9z",
        ] {
            assert_eq!(s.text(keep), keep, "{keep}");
        }
    }

    #[test]
    fn a_log_analytics_row_is_scrubbed_column_by_column_and_inside_log_s() {
        let s = Scrubber::default();
        let mut row = json!({
            "TenantId": "0b5f1a2e-1111-2222-3333-444455556666",
            "_SubscriptionId": SUB,
            "_ResourceId": format!("/subscriptions/{SUB}/resourcegroups/rg/providers/microsoft.app/containerapps/subject"),
            "ContainerAppName_s": "subject",
            "RevisionName_s": "subject--0000001",
            "ReplicaName_s": "subject--0000001-5c8b7d9f4-x2x9z",
            "Log_s": format!(r#"{{"kind":"sample","app_id":"/subscriptions/{SUB}/resourceGroups/rg","client":"198.51.100.23","by":"op@example.com"}}"#),
            "Count": 3,
        });
        s.value(&mut row);
        assert_eq!(row["TenantId"], TENANT);
        assert_eq!(row["_SubscriptionId"], SUBSCRIPTION);
        assert!(
            row["_ResourceId"]
                .as_str()
                .unwrap()
                .starts_with(&format!("/subscriptions/{SUBSCRIPTION}/"))
        );
        // What the analysis joins on is untouched.
        assert_eq!(row["ContainerAppName_s"], "subject");
        assert_eq!(row["RevisionName_s"], "subject--0000001");
        assert_eq!(row["ReplicaName_s"], "subject--0000001-5c8b7d9f4-x2x9z");
        assert_eq!(row["Count"], 3);
        let log: Value = serde_json::from_str(row["Log_s"].as_str().unwrap()).unwrap();
        assert_eq!(log["kind"], "sample");
        assert_eq!(log["client"], IP);
        assert_eq!(log["by"], EMAIL);
        assert_eq!(
            log["app_id"],
            format!("/subscriptions/{SUBSCRIPTION}/resourceGroups/rg")
        );
        let text = row.to_string();
        assert!(
            !text.contains(SUB) && !text.contains("198.51.100.23"),
            "{text}"
        );
    }

    /// The analysis reads a scrubbed pack as it reads the original: the fixture packs of the
    /// analysis crate, given Azure's identifying columns, analysed before and after scrubbing.
    #[test]
    fn the_analysis_gives_the_same_tables_and_verdict_on_scrubbed_logs() {
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../analysis/tests/fixtures");
        for pack in ["rollout-pack", "observation-pack"] {
            let src = fixtures.join(pack);
            let tmp = tempfile::tempdir().unwrap();
            let mut results = Vec::new();
            for scrub in [false, true] {
                let dir = tmp.path().join(if scrub { "scrubbed" } else { "original" });
                std::fs::create_dir_all(dir.join("logs")).unwrap();
                for extra in ["lab.toml", "runs.json"] {
                    if src.join(extra).is_file() {
                        std::fs::copy(src.join(extra), dir.join(extra)).unwrap();
                    }
                }
                for entry in std::fs::read_dir(src.join("logs")).unwrap() {
                    let path = entry.unwrap().path();
                    let mut out = String::new();
                    for line in std::fs::read_to_string(&path).unwrap().lines() {
                        let mut v: Value = match serde_json::from_str(line) {
                            Ok(v) => v,
                            Err(_) => {
                                out.push_str(line);
                                out.push('\n');
                                continue;
                            }
                        };
                        if let Some(m) = v
                            .as_object_mut()
                            .filter(|m| m.contains_key("TimeGenerated"))
                        {
                            m.insert("TenantId".into(), json!(TEN));
                            m.insert(
                                "_ResourceId".into(),
                                json!(format!("/subscriptions/{SUB}/resourceGroups/rg")),
                            );
                        }
                        if scrub {
                            Scrubber::new(Some(SUB), Some(TEN)).value(&mut v);
                        }
                        out.push_str(&v.to_string());
                        out.push('\n');
                    }
                    std::fs::write(dir.join("logs").join(path.file_name().unwrap()), out).unwrap();
                }
                let lab = dir.join("lab.toml");
                let opts = analysis::Options {
                    lab: lab.is_file().then_some(lab),
                    ..analysis::Options::default()
                };
                let a = analysis::analyze(std::slice::from_ref(&dir), &opts).unwrap();
                if scrub {
                    let text: String = std::fs::read_dir(dir.join("logs"))
                        .unwrap()
                        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
                        .collect();
                    assert!(!text.contains(SUB) && !text.contains(TEN), "{pack}");
                }
                results.push((a.tables, format!("{:?}", a.verdict)));
            }
            assert!(!results[0].0.is_empty(), "{pack}: no tables");
            assert_eq!(results[0].1, results[1].1, "{pack}: verdict");
            assert!(results[0].0 == results[1].0, "{pack}: tables differ");
        }
    }
}
