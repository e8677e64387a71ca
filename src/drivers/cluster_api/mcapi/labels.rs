//! A cluster's or nodegroup's labels read as magnum-cluster-api reads them: a missing label
//! takes its default, a text label is taken as is, and booleans and integers are parsed
//! strictly, as oslo.utils' `bool_from_string(strict=True)` and `validate_integer` parse
//! them (`utils.get_cluster_label_as_bool`, `get_cluster_label_as_int`): a bad value is an
//! error, never a default.

use serde_json::{Map, Value};

/// The strings oslo.utils accepts as booleans, sorted as its error text lists them.
const TRUE_STRINGS: [&str; 6] = ["1", "t", "true", "on", "y", "yes"];
const FALSE_STRINGS: [&str; 6] = ["0", "f", "false", "off", "n", "no"];

/// Why a label cannot be read as magnum-cluster-api reads it (oslo.utils' texts).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    #[error(
        "Unrecognized value '{0}', acceptable values are: '0', '1', 'f', 'false', 'n', 'no', \
         'off', 'on', 't', 'true', 'y', 'yes'"
    )]
    NotBoolean(String),
    #[error("{0} must be an integer")]
    NotInteger(String),
}

/// Labels, possibly none.
#[derive(Clone, Copy, Debug)]
pub struct Labels<'a>(Option<&'a Map<String, Value>>);

impl<'a> Labels<'a> {
    pub fn of(labels: Option<&'a Map<String, Value>>) -> Self {
        Labels(labels)
    }

    fn raw(&self, key: &str) -> Option<&'a Value> {
        self.0?.get(key).filter(|v| !v.is_null())
    }

    /// The label as text (Python's `str()` of a number or boolean label), if set.
    pub fn text(&self, key: &str) -> Option<String> {
        self.raw(key).map(python_str)
    }

    /// `labels.get(key, default)`.
    pub fn text_or(&self, key: &str, default: &str) -> String {
        self.text(key).unwrap_or_else(|| default.to_string())
    }

    /// `get_cluster_label_as_bool(cluster, key, default)`.
    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool, LabelError> {
        match self.raw(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => bool_from_string(&python_str(v)),
        }
    }

    /// `get_cluster_label_as_int(cluster, key, default)`.
    pub fn int_or(&self, key: &str, default: i64) -> Result<i64, LabelError> {
        match self.raw(key) {
            None => Ok(default),
            Some(v) => validate_integer(&python_str(v), key),
        }
    }
}

/// What Python's `str()` gives for a JSON label value.
fn python_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        other => other.to_string(),
    }
}

/// oslo.utils' `bool_from_string(subject, strict=True)`.
pub fn bool_from_string(subject: &str) -> Result<bool, LabelError> {
    let lowered = subject.trim().to_lowercase();
    if TRUE_STRINGS.contains(&lowered.as_str()) {
        Ok(true)
    } else if FALSE_STRINGS.contains(&lowered.as_str()) {
        Ok(false)
    } else {
        Err(LabelError::NotBoolean(subject.to_string()))
    }
}

/// oslo.utils' `validate_integer(value, name)`: Python's `int(str(value))`, which takes
/// surrounding whitespace, a sign, and single underscores between digits.
pub fn validate_integer(value: &str, name: &str) -> Result<i64, LabelError> {
    let bad = || LabelError::NotInteger(name.to_string());
    let t = value.trim();
    let (negative, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let well_formed = !digits.is_empty()
        && !digits.starts_with('_')
        && !digits.ends_with('_')
        && !digits.contains("__")
        && digits.chars().all(|c| c.is_ascii_digit() || c == '_');
    if !well_formed {
        return Err(bad());
    }
    let magnitude: i64 = digits.replace('_', "").parse().map_err(|_| bad())?;
    Ok(if negative { -magnitude } else { magnitude })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn booleans_are_read_as_oslo_reads_them_strictly() {
        for yes in ["1", "t", "TRUE", " yes ", "On", "y"] {
            assert_eq!(bool_from_string(yes), Ok(true), "{yes}");
        }
        for no in ["0", "f", "False", "off", "N", "no"] {
            assert_eq!(bool_from_string(no), Ok(false), "{no}");
        }
        assert_eq!(
            bool_from_string("maybe").unwrap_err().to_string(),
            "Unrecognized value 'maybe', acceptable values are: '0', '1', 'f', 'false', 'n', \
             'no', 'off', 'on', 't', 'true', 'y', 'yes'"
        );
        let l = labels(json!({"a": true, "b": 1, "c": "no", "d": 2}));
        let l = Labels::of(Some(&l));
        assert_eq!(l.bool_or("a", false), Ok(true));
        assert_eq!(l.bool_or("b", false), Ok(true), "str(1) is '1'");
        assert_eq!(l.bool_or("c", true), Ok(false));
        assert!(l.bool_or("d", true).is_err(), "'2' is no boolean");
        assert_eq!(l.bool_or("missing", true), Ok(true));
    }

    #[test]
    fn integers_are_read_as_pythons_int_of_str_reads_them() {
        for (text, n) in [
            ("5", 5),
            (" 42 ", 42),
            ("+7", 7),
            ("-3", -3),
            ("1_000", 1000),
        ] {
            assert_eq!(validate_integer(text, "k"), Ok(n), "{text}");
        }
        for bad in ["", "5.0", "1__0", "_1", "1_", "ten", "0x10", "True", "--1"] {
            assert_eq!(
                validate_integer(bad, "boot_volume_size"),
                Err(LabelError::NotInteger("boot_volume_size".into())),
                "{bad:?}"
            );
        }
        assert_eq!(
            LabelError::NotInteger("etcd_volume_size".into()).to_string(),
            "etcd_volume_size must be an integer"
        );
        let l = labels(json!({"n": 10, "s": "20", "b": true}));
        let l = Labels::of(Some(&l));
        assert_eq!(l.int_or("n", 0), Ok(10));
        assert_eq!(l.int_or("s", 0), Ok(20));
        assert!(l.int_or("b", 0).is_err(), "int('True') fails");
        assert_eq!(l.int_or("missing", 3), Ok(3));
        assert_eq!(Labels::of(None).int_or("x", 9), Ok(9));
    }

    #[test]
    fn text_labels_are_taken_as_python_prints_them() {
        let l = labels(json!({"s": "v1.30.4", "n": 3, "b": false}));
        let l = Labels::of(Some(&l));
        assert_eq!(l.text_or("s", "d"), "v1.30.4");
        assert_eq!(l.text_or("n", "d"), "3");
        assert_eq!(l.text_or("b", "d"), "False");
        assert_eq!(l.text_or("missing", "d"), "d");
    }
}
