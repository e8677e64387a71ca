//! Request bodies checked the way WSME checks Magnum's API types: unknown attributes,
//! read-only attributes, type conversion and constraints, each with Magnum's text.

use axum::body::Bytes;
use serde_json::{Map, Value};

use crate::error::{ApiError, ApiResult};

/// Python's `str()` of a JSON value, as WSME echoes it in `Value: '…'`.
pub fn py_str(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(a) => format!("[{}]", a.iter().map(py_repr).collect::<Vec<_>>().join(", ")),
        Value::Object(m) => py_dict(m),
    }
}

/// Python's `int(text)` in base 10: surrounding whitespace, a sign, digits with single
/// underscores between them. A number beyond 64 bits saturates (the caller's range check
/// refuses it as too large rather than as no number).
pub fn py_int(text: &str) -> Option<i64> {
    let t = text.trim();
    let (negative, digits) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let well_formed = digits
        .split('_')
        .all(|run| !run.is_empty() && run.bytes().all(|b| b.is_ascii_digit()));
    if !well_formed {
        return None;
    }
    let plain: String = digits.chars().filter(|c| *c != '_').collect();
    let n = plain.parse::<i64>().unwrap_or(i64::MAX);
    Some(if negative { -n } else { n })
}

/// Python's `str()` of a dict.
pub fn py_dict(m: &Map<String, Value>) -> String {
    format!(
        "{{{}}}",
        m.iter()
            .map(|(k, v)| format!("'{k}': {}", py_repr(v)))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Python's `repr()` of a JSON value.
pub fn py_repr(v: &Value) -> String {
    match v {
        Value::String(s) => py_str_repr(s),
        other => py_str(other),
    }
}

/// Python's `repr()` of a string: single quotes, or double quotes when the text holds a
/// single quote and no double one; backslashes and control characters escaped.
pub fn py_str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// `POST` on a member URL (`/v1/clusters/{x}`): pecan passes the path segment as the body
/// argument, and WSME fails to build the type from a string.
pub fn member_post_error(argname: &str, type_name: &str, ident: &str) -> ApiError {
    ApiError::invalid_input(
        argname,
        ident,
        format!(
            "unable to convert to {type_name}. Error: {type_name}.__init__() takes 1 positional \
             argument but 2 were given"
        ),
    )
}

/// A JSON object body being validated.
pub struct Body {
    argname: &'static str,
    map: Map<String, Value>,
    /// A resource dictionary after a JSON patch (`Type(**patched)`: WSME's `validate` only,
    /// no `fromjson` conversion) rather than a request body.
    patched: bool,
}

impl Body {
    /// Parses `bytes` as the object argument `argname`, refusing unknown and read-only
    /// attributes.
    pub fn parse(
        bytes: &Bytes,
        argname: &'static str,
        allowed: &[&str],
        read_only: &[&str],
    ) -> ApiResult<Body> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(ApiError::MissingArgument(argname.into()));
        }
        let value: Value = serde_json::from_slice(bytes).map_err(|_| ApiError::MalformedJson)?;
        let Value::Object(map) = value else {
            return Err(ApiError::invalid_input(
                argname,
                py_str(&value),
                "Value not a valid dict",
            ));
        };
        let mut unknown: Vec<&str> = map
            .keys()
            .map(String::as_str)
            .filter(|k| !allowed.contains(k) && !read_only.contains(k))
            .collect();
        if !unknown.is_empty() {
            unknown.sort_unstable();
            return Err(ApiError::UnknownAttribute {
                argname: argname.into(),
                attrs: unknown.join(", "),
            });
        }
        for ro in read_only {
            if let Some(v) = map.get(*ro) {
                return Err(ApiError::invalid_input(
                    *ro,
                    py_str(v),
                    "Cannot set read only field.",
                ));
            }
        }
        Ok(Body {
            argname,
            map,
            patched: false,
        })
    }

    /// Validates an already-built dictionary (a resource after a JSON patch).
    pub fn from_map(argname: &'static str, map: Map<String, Value>) -> Body {
        Body {
            argname,
            map,
            patched: true,
        }
    }

    pub fn argname(&self) -> &'static str {
        self.argname
    }

    pub fn raw(&self) -> &Map<String, Value> {
        &self.map
    }

    /// Present and not null.
    pub fn has(&self, name: &str) -> bool {
        self.map.get(name).is_some_and(|v| !v.is_null())
    }

    fn get(&self, name: &str) -> Option<&Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    pub fn mandatory(&self, name: &str) -> ApiResult<()> {
        if self.has(name) {
            Ok(())
        } else {
            Err(ApiError::invalid_input(
                name,
                "None",
                "Mandatory field missing.",
            ))
        }
    }

    /// An integer attribute with an optional lower bound.
    pub fn int(&self, name: &str, min: Option<i64>) -> ApiResult<Option<i64>> {
        let Some(v) = self.get(name) else {
            return Ok(None);
        };
        let n = match v {
            Value::Number(_) | Value::Bool(_) => to_int(name, v)?,
            // `IntegerType.validate` compares the unconverted value with its minimum.
            _ if self.patched => {
                return Err(ApiError::invalid_input(
                    name,
                    py_str(v),
                    format!(
                        "'<' not supported between instances of '{}' and 'int'",
                        py_type(v)
                    ),
                ))
            }
            // `IntegerType.frombasetype` (`int(value)`) fails inside `fromjson` of the whole
            // body: WSME names the argument and echoes the body.
            Value::String(s) => s.trim().parse::<i64>().map_err(|_| {
                self.argument_error(format!("invalid literal for int() with base 10: '{s}'"))
            })?,
            other => {
                return Err(self.argument_error(format!(
                    "int() argument must be a string, a bytes-like object or a real number, \
                     not '{}'",
                    py_type(other)
                )))
            }
        };
        if let Some(min) = min {
            if n < min {
                return Err(ApiError::invalid_input(
                    name,
                    py_str(v),
                    format!("Value should be greater or equal to {min}"),
                ));
            }
        }
        // Magnum's integer columns are 32-bit: a larger value is a database error there
        // (a 500), or a saturated number in a non-strict MySQL. Refused here, in WSME's words
        // for an `IntegerType` maximum (docs/compatibility.md, `diff:integer-range`).
        if n > INT_COLUMN_MAX {
            return Err(ApiError::invalid_input(
                name,
                py_str(v),
                format!("Value should be lower or equal to {INT_COLUMN_MAX}"),
            ));
        }
        Ok(Some(n))
    }

    /// WSME's `InvalidInput` for the whole body argument (`Value: '<the body as a dict>'`).
    fn argument_error(&self, reason: String) -> ApiError {
        ApiError::invalid_input(
            self.argname,
            py_str(&Value::Object(self.map.clone())),
            reason,
        )
    }

    /// A string attribute with length bounds and an optional pattern check.
    pub fn string(&self, name: &str, min_len: usize, max_len: usize) -> ApiResult<Option<String>> {
        let Some(v) = self.get(name) else {
            return Ok(None);
        };
        // WSME's `StringType.validate`: no conversion of other JSON types.
        let s = match v {
            Value::String(s) => s.clone(),
            other => {
                return Err(ApiError::invalid_input(
                    name,
                    py_str(other),
                    "Value should be string",
                ))
            }
        };
        let len = s.chars().count();
        if len < min_len {
            return Err(ApiError::invalid_input(
                name,
                &s,
                format!("Value should have a minimum character requirement of {min_len}"),
            ));
        }
        if len > max_len {
            return Err(ApiError::invalid_input(
                name,
                &s,
                format!("Value should have a maximum character requirement of {max_len}"),
            ));
        }
        Ok(Some(s))
    }

    /// A `wtypes.text` attribute (no length constraints; WSME's builtin type check).
    pub fn text(&self, name: &str) -> ApiResult<Option<String>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(ApiError::invalid_input(
                name,
                py_str(other),
                format!(
                    "Wrong type. Expected '<class 'str'>', got '<class '{}'>'",
                    py_type(other)
                ),
            )),
        }
    }

    /// `dict_fromjson` refusing a non-dict: WSME reports it against the whole body.
    fn not_a_dict(&self, v: &Value) -> ApiError {
        ApiError::invalid_input(
            self.argname,
            py_str(&Value::Object(self.map.clone())),
            format!("Value not a valid dict: {}", py_str(v)),
        )
    }

    /// A `types.uuid` attribute: its validator raises `InvalidUUID` unwrapped by WSME.
    pub fn uuid(&self, name: &str) -> ApiResult<Option<String>> {
        let Some(v) = self.get(name) else {
            return Ok(None);
        };
        let s = match v {
            Value::String(s) => s.clone(),
            other => py_str(other),
        };
        if !super::query::is_uuid_like(&s) {
            return Err(ApiError::InvalidUuid(s));
        }
        Ok(Some(s))
    }

    /// A boolean attribute (strict `bool_from_string`).
    pub fn boolean(&self, name: &str) -> ApiResult<Option<bool>> {
        let Some(v) = self.get(name) else {
            return Ok(None);
        };
        // `types.BooleanType` raises `exception.Invalid(e)`, which WSME passes through
        // without the "Invalid input for field/attribute" frame.
        let subject = match v {
            Value::Bool(b) => return Ok(Some(*b)),
            Value::String(s) => s.clone(),
            other => py_str(other),
        };
        bool_from_string(&subject)
            .map(Some)
            .map_err(ApiError::InvalidParameterValue)
    }

    /// A dict of str → (str|int|bool|float), stored by Magnum as strings.
    pub fn labels(&self, name: &str) -> ApiResult<Option<Map<String, Value>>> {
        self.multi_type_dict(name, false)
    }

    /// The same type for a dict the API ignores (`labels_added`, …): WSME lets a `None`
    /// value through there.
    pub fn label_values(&self, name: &str) -> ApiResult<Option<Map<String, Value>>> {
        self.multi_type_dict(name, true)
    }

    fn multi_type_dict(&self, name: &str, nulls: bool) -> ApiResult<Option<Map<String, Value>>> {
        let Some(v) = self.get(name) else {
            return Ok(None);
        };
        let Value::Object(m) = v else {
            return Err(self.not_a_dict(v));
        };
        let mut out = Map::new();
        for (k, val) in m {
            let s = match val {
                Value::String(s) => s.clone(),
                Value::Bool(_) | Value::Number(_) => py_str(val),
                Value::Null if nulls => continue,
                other => {
                    return Err(ApiError::invalid_input(
                        name,
                        py_str(v),
                        format!("Wrong type. Expected '(<class 'str'>, <class 'int'>, <class 'bool'>, <class 'float'>)', got '<class '{}'>'", py_type(other)),
                    ))
                }
            };
            out.insert(k.clone(), Value::String(s));
        }
        Ok(Some(out))
    }

    /// A `wtypes.Enum(wtypes.text, …)` attribute. Magnum lists the values from a Python set,
    /// in an order that changes with the process's hash seed; here in `values`' order.
    pub fn one_of(&self, name: &str, values: &[&str]) -> ApiResult<Option<String>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) if values.contains(&s.as_str()) => Ok(Some(s.clone())),
            Some(other) => Err(ApiError::invalid_input(
                name,
                py_str(other),
                format!("Value should be one of: {}", values.join(", ")),
            )),
        }
    }

    /// A `wtypes.DictType(wtypes.text, wtypes.text)` attribute.
    pub fn text_dict(&self, name: &str) -> ApiResult<Option<Map<String, Value>>> {
        let Some(v) = self.get(name) else {
            return Ok(None);
        };
        let Value::Object(m) = v else {
            return Err(self.not_a_dict(v));
        };
        if let Some(bad) = m.values().find(|v| !v.is_string() && !v.is_null()) {
            return Err(ApiError::invalid_input(
                name,
                py_str(v),
                format!(
                    "Wrong type. Expected '<class 'str'>', got '<class '{}'>'",
                    py_type(bad)
                ),
            ));
        }
        Ok(Some(m.clone()))
    }

    /// Any JSON object (for dicts validated elsewhere).
    pub fn object(&self, name: &str) -> ApiResult<Option<Map<String, Value>>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m.clone())),
            Some(v) => Err(self.not_a_dict(v)),
        }
    }

    /// Any JSON list.
    pub fn list(&self, name: &str) -> ApiResult<Option<Vec<Value>>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a.clone())),
            Some(v) => Err(ApiError::invalid_input(
                self.argname,
                py_str(&Value::Object(self.map.clone())),
                format!("Value not a valid list: {}", py_str(v)),
            )),
        }
    }
}

/// oslo's `strutils.bool_from_string(subject, strict=True)`; the error is its message.
pub fn bool_from_string(subject: &str) -> Result<bool, String> {
    match subject.trim().to_lowercase().as_str() {
        "1" | "t" | "true" | "on" | "y" | "yes" => Ok(true),
        "0" | "f" | "false" | "off" | "n" | "no" => Ok(false),
        _ => Err(format!(
            "Unrecognized value '{subject}', acceptable values are: '0', '1', 'f', 'false', \
             'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'"
        )),
    }
}

/// The largest value of Magnum's `Integer` columns (MySQL `INT`, 32-bit signed).
pub const INT_COLUMN_MAX: i64 = i32::MAX as i64;

/// Python's `int(value)` of a JSON number or boolean. Numbers beyond 64 bits saturate; the
/// callers' range check refuses them.
pub fn to_int(name: &str, v: &Value) -> ApiResult<i64> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f.trunc() as i64))
            .ok_or_else(|| ApiError::invalid_input(name, n.to_string(), "Value out of range")),
        Value::Bool(b) => Ok(i64::from(*b)),
        Value::String(s) => s.trim().parse::<i64>().map_err(|_| {
            ApiError::invalid_input(
                name,
                s,
                format!("unable to convert to int. Error: invalid literal for int() with base 10: '{s}'"),
            )
        }),
        other => Err(ApiError::invalid_input(
            name,
            py_str(other),
            format!(
                "unable to convert to int. Error: int() argument must be a string, a bytes-like \
                 object or a real number, not '{}'",
                py_type(other)
            ),
        )),
    }
}

/// Python's type name of a JSON value.
pub fn py_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// Magnum's name pattern `^[a-zA-Z][a-zA-Z0-9_.-]*$`.
pub fn check_name_pattern(field: &str, name: &str) -> ApiResult<()> {
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid_input(
            field,
            name,
            "Value should match the pattern ^[a-zA-Z][a-zA-Z0-9_.-]*$",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(s: &str) -> ApiResult<Body> {
        Body::parse(
            &Bytes::from(s.to_string()),
            "cluster_resize_req",
            &["node_count", "nodes_to_remove", "nodegroup"],
            &[],
        )
    }

    #[test]
    fn unknown_attributes_are_named() {
        let e = body(r#"{"node_count": 1, "zzz": 1}"#)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("Unknown attribute for argument cluster_resize_req: zzz")
        );
    }

    #[test]
    fn numeric_strings_convert_to_int() {
        let b = body(r#"{"node_count": "2"}"#).expect("parses");
        assert_eq!(b.int("node_count", Some(0)).ok().flatten(), Some(2));
    }

    #[test]
    fn a_non_numeric_count_fails_for_the_whole_body_as_wsme_reports_it() {
        let b = body(r#"{"node_count": "abc"}"#).expect("parses");
        let e = b.int("node_count", Some(0)).err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("Invalid input for field/attribute cluster_resize_req. Value: '{'node_count': 'abc'}'. invalid literal for int() with base 10: 'abc'")
        );
    }

    #[test]
    fn a_patched_string_count_fails_the_minimum_comparison() {
        let mut map = Map::new();
        map.insert("node_count".into(), Value::String("3".into()));
        let b = Body::from_map("cluster", map);
        let e = b.int("node_count", Some(0)).err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("Invalid input for field/attribute node_count. Value: '3'. '<' not supported between instances of 'str' and 'int'")
        );
    }

    #[test]
    fn negative_counts_fail_the_minimum() {
        let b = body(r#"{"node_count": -1}"#).expect("parses");
        let e = b.int("node_count", Some(0)).err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("Invalid input for field/attribute node_count. Value: '-1'. Value should be greater or equal to 0")
        );
    }

    #[test]
    fn malformed_json_and_empty_body() {
        assert!(matches!(body("{"), Err(ApiError::MalformedJson)));
        assert!(matches!(body(""), Err(ApiError::MissingArgument(_))));
    }
}
