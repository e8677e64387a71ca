//! Size bounds on what a request can store in a column Magnum leaves unbounded.
//!
//! Magnum keeps labels, node labels and taints, health reasons and a federation's properties
//! and members as JSON in TEXT columns and bounds none of them, so one client could make every
//! later answer that shows them as large as it liked (issue 28: 1.9 MB of labels on each of 8
//! clusters took 8 parallel detail lists from 148 MB to 735 MB of RSS). Each such value is
//! measured as the store writes it (its compact JSON) against `[api] max_labels_size` or
//! `[api] max_field_size`, and a larger one is refused with 400 in WSME's words before
//! anything is written (docs/compatibility.md, `diff:field-size-limit`).
//!
//! A few text attributes that WSME does not bound land in Magnum's `VARCHAR(255)` columns,
//! where a longer value is a database error (a 500) or silently cut; they are refused at the
//! column's width instead (`diff:column-width`).
//!
//! Only what a request adds is bounded: a PATCH that leaves a stored value as it is, or a
//! cluster that copies its template's labels unchanged, is not refused for an old value.

use std::io;

use serde::Serialize;
use serde_json::{Map, Value};

use super::body::{py_dict, py_str};
use crate::config::ApiConfig;
use crate::error::{ApiError, ApiResult};

/// The width of Magnum's `VARCHAR(255)` columns, in characters (as MySQL counts them).
pub const COLUMN_WIDTH: usize = 255;

/// Characters of a refused value that its error echoes; the rest is cut to `...`, so that a
/// refusal is never as large as what it refuses.
const ECHO_CHARS: usize = 100;

/// The `[api]` size bounds in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldBounds {
    /// `[api] max_labels_size`: a `labels` dict.
    pub labels: usize,
    /// `[api] max_field_size`: every other free-form dict or list.
    pub other: usize,
}

impl FieldBounds {
    pub fn new(api: &ApiConfig) -> Self {
        FieldBounds {
            labels: api.max_labels_size,
            other: api.max_field_size,
        }
    }

    /// A `labels` dict about to be stored.
    pub fn labels(&self, labels: &Map<String, Value>) -> ApiResult<()> {
        within("labels", labels, self.labels, || py_dict(labels))
    }

    /// Another free-form dict about to be stored, `name` being its attribute.
    pub fn dict(&self, name: &str, dict: &Map<String, Value>) -> ApiResult<()> {
        within(name, dict, self.other, || py_dict(dict))
    }

    /// A free-form list about to be stored.
    pub fn list(&self, name: &str, list: &[Value]) -> ApiResult<()> {
        within(name, list, self.other, || {
            py_str(&Value::Array(list.to_vec()))
        })
    }

    /// A list of strings about to be stored.
    pub fn strings(&self, name: &str, list: &[String]) -> ApiResult<()> {
        within(name, list, self.other, || {
            py_str(&Value::Array(
                list.iter().map(|s| Value::String(s.clone())).collect(),
            ))
        })
    }
}

/// A text attribute stored in one of Magnum's `VARCHAR(255)` columns that WSME does not
/// bound: refused above the column's width, in WSME's words for a `StringType` maximum.
pub fn column_width(name: &str, value: &str) -> ApiResult<()> {
    if value.chars().count() <= COLUMN_WIDTH {
        return Ok(());
    }
    Err(ApiError::invalid_input(
        name,
        echo(value.to_string()),
        format!("Value should have a maximum character requirement of {COLUMN_WIDTH}"),
    ))
}

/// Refuses `value` when its compact JSON is longer than `max` bytes; `repr` renders it (only
/// then) for the error's echo.
fn within<T: Serialize + ?Sized>(
    name: &str,
    value: &T,
    max: usize,
    repr: impl FnOnce() -> String,
) -> ApiResult<()> {
    let size = json_len(value);
    if size <= max {
        return Ok(());
    }
    Err(ApiError::invalid_input(
        name,
        echo(repr()),
        format!("Value should be at most {max} bytes long as JSON, not {size}"),
    ))
}

/// The length of `value`'s compact JSON (what the store writes), counted without building
/// it. A value that cannot be serialized counts as too large.
fn json_len<T: Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

/// The first [`ECHO_CHARS`] characters of `s`, then `...` when there were more: how a refused
/// value is echoed.
pub fn echo(s: String) -> String {
    match s.char_indices().nth(ECHO_CHARS) {
        Some((cut, _)) => format!("{}...", &s[..cut]),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const BOUNDS: FieldBounds = FieldBounds {
        labels: 40,
        other: 20,
    };

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn the_size_is_the_compact_json_the_store_writes() {
        let v = json!({"kube_tag": "v1.30.4", "q": "a\"b\u{1}é", "n": ["x", 1]});
        let stored = serde_json::to_string(&v).expect("serializes");
        assert_eq!(json_len(&v), stored.len());
        assert_eq!(json_len(&json!({"kube_tag": "v1.30.4"})), 22);
    }

    #[test]
    fn labels_at_the_bound_pass_and_one_byte_more_is_refused_with_a_short_echo() {
        // {"big":"…"} is 10 bytes around the value.
        let at = map(json!({"big": "x".repeat(30)}));
        assert_eq!(BOUNDS.labels(&at).ok(), Some(()));
        let over = map(json!({"big": "x".repeat(31 + 200)}));
        let e = BOUNDS.labels(&over).err().map(|e| e.to_string());
        let expected = format!(
            "Invalid input for field/attribute labels. Value: '{{'big': '{}...'. Value should be \
             at most 40 bytes long as JSON, not 241",
            "x".repeat(ECHO_CHARS - 9)
        );
        assert_eq!(e, Some(expected));
    }

    #[test]
    fn other_fields_use_their_own_bound_and_name() {
        let taints = vec![json!({"key": "k", "effect": "NoSchedule"})];
        let e = BOUNDS
            .list("node_taints", &taints)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some(
                "Invalid input for field/attribute node_taints. Value: '[{'key': 'k', 'effect': \
                 'NoSchedule'}]'. Value should be at most 20 bytes long as JSON, not 35"
            )
        );
        assert!(BOUNDS.strings("nodes_to_remove", &["n-1".into()]).is_ok());
        assert!(BOUNDS
            .dict("properties", &map(json!({"dns-zone": "example.com."})))
            .is_err());
    }

    #[test]
    fn column_widths_count_characters_not_bytes() {
        assert!(column_width("discovery_url", &"é".repeat(COLUMN_WIDTH)).is_ok());
        let e = column_width("discovery_url", &"é".repeat(COLUMN_WIDTH + 1))
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e,
            Some(format!(
                "Invalid input for field/attribute discovery_url. Value: '{}...'. Value should \
                 have a maximum character requirement of 255",
                "é".repeat(ECHO_CHARS)
            ))
        );
    }
}
