//! Normalising only what must differ between two servers on identical data: generated
//! uuids, timestamps, request ids and the host in links.

use std::collections::BTreeSet;

use serde_json::Value;

/// The uuids both servers share (those of the seeded rows); any other uuid is generated.
pub struct Known(pub BTreeSet<String>);

const TIME_KEYS: &[&str] = &["created_at", "updated_at"];

pub fn json(v: &mut Value, known: &Known) {
    match v {
        Value::String(s) => *s = text(s, known),
        Value::Array(a) => a.iter_mut().for_each(|x| json(x, known)),
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if TIME_KEYS.contains(&k.as_str()) {
                    if let Value::String(s) = x {
                        *s = mask_digits(s);
                        continue;
                    }
                }
                json(x, known);
            }
        }
        _ => {}
    }
}

/// Free text (CLI output, header values): host:port of loopback URLs, generated uuids,
/// timestamps.
pub fn text(s: &str, known: &Known) -> String {
    let s = hosts(s);
    let s = uuids(&s, known);
    enum_order(&timestamps(&s))
}

/// WSME's `Enum` keeps its values in a Python set, so Magnum lists them in the process's
/// hash order (`Value should be one of: remove, add, replace`): compare them sorted.
fn enum_order(s: &str) -> String {
    const LEAD: &str = "Value should be one of: ";
    let Some(i) = s.find(LEAD) else {
        return s.to_string();
    };
    let start = i + LEAD.len();
    let end = s[start..].find(['"', '\n']).map_or(s.len(), |e| start + e);
    let mut items: Vec<&str> = s[start..end].split(", ").collect();
    items.sort_unstable();
    format!("{}{}{}", &s[..start], items.join(", "), &s[end..])
}

fn mask_digits(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_digit() { '0' } else { c })
        .collect()
}

/// `http://127.0.0.1:1234/...` (and any other `http://host[:port]`) becomes `http://HOST/...`.
fn hosts(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("http://") {
        out.push_str(&rest[..i]);
        out.push_str("http://HOST");
        let after = &rest[i + 7..];
        let end = after
            .find(|c: char| c == '/' || c.is_whitespace() || c == '"' || c == '\'' || c == ',')
            .unwrap_or(after.len());
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

fn is_uuid(b: &[u8]) -> bool {
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

fn uuids(s: &str, known: &Known) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut last = 0;
    while i + 36 <= b.len() {
        if is_uuid(&b[i..i + 36]) {
            let u = &s[i..i + 36];
            if !known.0.contains(u) {
                out.push_str(&s[last..i]);
                out.push_str("<uuid>");
                last = i + 36;
            }
            i += 36;
        } else {
            i += 1;
        }
    }
    out.push_str(&s[last..]);
    out
}

/// `dddd-dd-dd[T ]dd:dd:dd` (with optional fraction) has its digits replaced by 0.
fn timestamps(s: &str) -> String {
    const SHAPE: &[u8] = b"0000-00-00?00:00:00";
    let b = s.as_bytes();
    let mut out: Vec<u8> = b.to_vec();
    let mut i = 0;
    while i + SHAPE.len() <= b.len() {
        let matches = SHAPE.iter().zip(&b[i..]).all(|(p, c)| match p {
            b'0' => c.is_ascii_digit(),
            b'?' => *c == b'T' || *c == b' ',
            _ => p == c,
        });
        if matches {
            let mut j = i;
            while j < b.len() && (j < i + SHAPE.len() || b[j].is_ascii_digit() || b[j] == b'.') {
                if b[j].is_ascii_digit() {
                    out[j] = b'0';
                }
                j += 1;
            }
            i = j;
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_uuids_hosts_and_times_are_masked_and_known_uuids_kept() {
        let known = Known(["a1a1a1a1-0000-4000-8000-000000000001".to_string()].into());
        let s = "http://127.0.0.1:19631/v1/clusters/a1a1a1a1-0000-4000-8000-000000000001 \
                 0b3c7f2e-6a51-4d7e-9f0a-1c2d3e4f5a6c 2026-12-02T19:33:00.123+00:00";
        assert_eq!(
            text(s, &known),
            "http://HOST/v1/clusters/a1a1a1a1-0000-4000-8000-000000000001 <uuid> \
             0000-00-00T00:00:00.000+00:00"
        );
    }
}
