//! JSON-patch requests as Magnum's `JsonPatchType` validates them and `apply_jsonpatch`
//! applies them to a resource's dictionary.

use axum::body::Bytes;
use serde_json::{Map, Value};

use super::body::{py_repr, py_str, py_type};
use crate::error::{ApiError, ApiResult};

/// Paths no resource lets a patch touch.
pub const BASE_INTERNAL: [&str; 7] = [
    "/created_at",
    "/id",
    "/links",
    "/updated_at",
    "/uuid",
    "/project_id",
    "/user_id",
];

#[derive(Clone, Debug, PartialEq)]
pub struct PatchOp {
    pub op: String,
    pub path: String,
    pub value: Option<Value>,
    /// Whether the client sent a `value` key (Magnum quotes it, `None` included).
    value_sent: bool,
}

impl PatchOp {
    /// The top-level attribute the op touches (`/labels/x` → `labels`).
    pub fn attr(&self) -> &str {
        self.path
            .trim_start_matches('/')
            .split('/')
            .next()
            .unwrap_or_default()
    }

    /// The operation as a `replace` of its path with `value` (how Magnum rewrites a
    /// federation's join and unjoin).
    pub fn replaced_with(&self, value: Value) -> PatchOp {
        PatchOp {
            op: "replace".into(),
            path: self.path.clone(),
            value: Some(value),
            value_sent: true,
        }
    }

    /// As Magnum quotes an operation (`JsonPatchType.as_dict()`): `path`, `op`, then `value`
    /// when it was sent, whatever the client's key order.
    fn py(&self) -> String {
        let mut items = vec![
            format!("'path': {}", py_repr(&Value::String(self.path.clone()))),
            format!("'op': {}", py_repr(&Value::String(self.op.clone()))),
        ];
        if self.value_sent {
            items.push(format!(
                "'value': {}",
                self.value.as_ref().map_or_else(|| "None".into(), py_repr)
            ));
        }
        format!("{{{}}}", items.join(", "))
    }
}

/// Python's rendering of the whole patch, as `PatchError` quotes it.
pub fn py_patch(ops: &[PatchOp]) -> String {
    format!(
        "[{}]",
        ops.iter().map(PatchOp::py).collect::<Vec<_>>().join(", ")
    )
}

fn path_ok(path: &str) -> bool {
    // ^(/[\w-]+)+$
    path.starts_with('/')
        && path[1..].split('/').all(|seg| {
            !seg.is_empty()
                && seg
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        })
}

/// Parses and validates the patch document: type checks, then the internal and
/// non-removable attribute rules.
pub fn parse(bytes: &Bytes, internal: &[&str], non_removable: &[&str]) -> ApiResult<Vec<PatchOp>> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::MissingArgument("patch".into()));
    }
    let v: Value = serde_json::from_slice(bytes).map_err(|_| ApiError::MalformedJson)?;
    let Value::Array(items) = v else {
        return Err(ApiError::invalid_input(
            "patch",
            py_str(&v),
            format!("Value not a valid list: {}", py_str(&v)),
        ));
    };
    let mut ops = Vec::with_capacity(items.len());
    for item in items {
        let Value::Object(m) = item else {
            return Err(ApiError::invalid_input(
                "patch",
                py_str(&item),
                "Value not a valid dict",
            ));
        };
        if let Some(k) = m
            .keys()
            .find(|k| !matches!(k.as_str(), "op" | "path" | "value"))
        {
            return Err(ApiError::UnknownAttribute {
                argname: "patch".into(),
                attrs: k.clone(),
            });
        }
        let path = match m.get("path") {
            Some(Value::String(p)) => p.clone(),
            Some(other) => {
                return Err(ApiError::invalid_input(
                    "path",
                    py_str(other),
                    "Value should be a string",
                ))
            }
            None => {
                return Err(ApiError::invalid_input(
                    "path",
                    "None",
                    "Mandatory field missing.",
                ))
            }
        };
        if !path_ok(&path) {
            return Err(ApiError::invalid_input(
                "path",
                &path,
                "Value should match the pattern ^(/[\\w-]+)+$",
            ));
        }
        let op = match m.get("op") {
            Some(Value::String(o)) if matches!(o.as_str(), "add" | "replace" | "remove") => {
                o.clone()
            }
            Some(other) => {
                return Err(ApiError::invalid_input(
                    "op",
                    py_str(other),
                    "Value should be one of: add, replace, remove",
                ))
            }
            None => {
                return Err(ApiError::invalid_input(
                    "op",
                    "None",
                    "Mandatory field missing.",
                ))
            }
        };
        let value = match m.get("value") {
            None | Some(Value::Null) => None,
            Some(v @ Value::String(_)) => Some(v.clone()),
            Some(v @ Value::Number(n)) if n.is_i64() || n.is_u64() => Some(v.clone()),
            // `MultiType(text, int)` checks `isinstance(value, int)`, which Python's bools
            // pass: `"value": true` is accepted here and judged by the patched field's type.
            Some(v @ Value::Bool(_)) => Some(v.clone()),
            Some(other) => {
                return Err(ApiError::invalid_input(
                    "value",
                    py_str(other),
                    format!(
                        "Wrong type. Expected '(<class 'str'>, <class 'int'>)', got '<class '{}'>'",
                        py_type(other)
                    ),
                ))
            }
        };
        if internal.contains(&path.as_str()) {
            return Err(ApiError::InvalidParameterValue(format!(
                "'{path}' is an internal attribute and can not be updated"
            )));
        }
        if op == "remove" && non_removable.contains(&path.as_str()) {
            return Err(ApiError::InvalidParameterValue(format!(
                "'{path}' is a mandatory attribute and can not be removed"
            )));
        }
        if op != "remove" && value.is_none() {
            return Err(ApiError::InvalidParameterValue(
                "'add' and 'replace' operations needs value".into(),
            ));
        }
        let value_sent = m.contains_key("value");
        ops.push(PatchOp {
            op,
            path,
            value,
            value_sent,
        });
    }
    Ok(ops)
}

/// Applies validated ops to a resource dictionary (`apply_jsonpatch`): root-level `add` only
/// onto an existing null attribute; errors of the patch library become `PatchError`.
pub fn apply(doc: &mut Map<String, Value>, ops: &[PatchOp]) -> ApiResult<()> {
    let converted = literal_values(ops)?;
    let ops = converted.as_slice();
    for p in ops {
        let segments: Vec<&str> = p.path.trim_start_matches('/').split('/').collect();
        if p.op == "add" && segments.len() == 1 {
            match doc.get(segments[0]) {
                None => {
                    return Err(ApiError::InvalidParameterValue(format!(
                        "Adding a new attribute {} to the root of the resource is not allowed.",
                        p.path
                    )))
                }
                Some(v) if !v.is_null() => {
                    return Err(ApiError::InvalidParameterValue(format!(
                        "The attribute {} has existed, please use 'replace' operation instead.",
                        p.path
                    )))
                }
                Some(_) => {}
            }
        }
    }
    for p in ops {
        apply_one(doc, p).map_err(|reason| ApiError::PatchError {
            patch: py_patch(ops),
            reason,
        })?;
    }
    Ok(())
}

/// `apply_jsonpatch` reads the string value of a `replace` of these paths as a Python
/// literal (`ast.literal_eval`), and refuses the patch when it is none.
const LITERAL_PATHS: [&str; 4] = [
    "/labels",
    "/health_status_reason",
    "/node_labels",
    "/node_taints",
];

fn literal_values(ops: &[PatchOp]) -> ApiResult<Vec<PatchOp>> {
    let mut out = ops.to_vec();
    for i in 0..out.len() {
        let p = &out[i];
        if p.op != "replace" || !LITERAL_PATHS.contains(&p.path.as_str()) {
            continue;
        }
        let Some(Value::String(src)) = &p.value else {
            continue;
        };
        match super::pyliteral::parse(src) {
            Some(v) => out[i].value = Some(v),
            None => {
                return Err(ApiError::PatchError {
                    // Magnum quotes the patch as it stands: earlier values already read.
                    patch: py_patch(&out),
                    reason: super::pyliteral::refusal(src),
                });
            }
        }
    }
    Ok(out)
}

fn apply_one(doc: &mut Map<String, Value>, p: &PatchOp) -> Result<(), String> {
    let segments: Vec<&str> = p.path.trim_start_matches('/').split('/').collect();
    let (last, parents) = segments.split_last().ok_or("empty path")?;
    let mut target = doc;
    for seg in parents {
        target = match target.get_mut(*seg) {
            Some(Value::Object(m)) => m,
            _ => return Err(format!("can't resolve path '{}'", p.path)),
        };
    }
    let value = p.value.clone().unwrap_or(Value::Null);
    match p.op.as_str() {
        "add" => {
            target.insert((*last).to_string(), value);
        }
        "replace" => {
            if !target.contains_key(*last) {
                return Err(format!("can't replace a non-existent object '{last}'"));
            }
            target.insert((*last).to_string(), value);
        }
        _ => {
            if target.remove(*last).is_none() {
                return Err(format!("can't remove a non-existent object '{last}'"));
            }
            if parents.is_empty() {
                // Removing a root attribute resets it to unset (None) in Magnum's object.
                target.insert((*last).to_string(), Value::Null);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ops(s: &str) -> ApiResult<Vec<PatchOp>> {
        parse(
            &Bytes::from(s.to_string()),
            &["/uuid", "/node_count"],
            &["/cluster_template_id"],
        )
    }

    #[test]
    fn internal_attributes_cannot_be_updated() {
        let e = ops(r#"[{"op":"replace","path":"/node_count","value":3}]"#)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("'/node_count' is an internal attribute and can not be updated")
        );
    }

    #[test]
    fn replace_needs_a_value() {
        let e = ops(r#"[{"op":"replace","path":"/max_node_count","value":null}]"#)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("'add' and 'replace' operations needs value")
        );
    }

    #[test]
    fn objects_are_the_wrong_type() {
        let e = ops(r#"[{"op":"replace","path":"/node_labels","value":{"a":"b"}}]"#)
            .err()
            .map(|e| e.to_string());
        assert!(e.unwrap_or_default().ends_with(
            "Wrong type. Expected '(<class 'str'>, <class 'int'>)', got '<class 'dict'>'"
        ));
    }

    #[test]
    fn booleans_are_accepted_like_python_ints() {
        let parsed = ops(r#"[{"op":"replace","path":"/public","value":true}]"#)
            .ok()
            .unwrap_or_default();
        assert_eq!(parsed.len(), 1);
        assert_eq!(parsed[0].value, Some(json!(true)));
    }

    #[test]
    fn floats_are_the_wrong_type() {
        let e = ops(r#"[{"op":"replace","path":"/name","value":1.5}]"#)
            .err()
            .map(|e| e.to_string());
        assert!(e.unwrap_or_default().ends_with(
            "Wrong type. Expected '(<class 'str'>, <class 'int'>)', got '<class 'float'>'"
        ));
    }

    #[test]
    fn add_to_root_only_onto_null() {
        let mut doc = json!({"a": 1, "b": null})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let add_new = ops(r#"[{"op":"add","path":"/c","value":1}]"#).unwrap_or_default();
        assert!(apply(&mut doc, &add_new).is_err());
        let add_b = ops(r#"[{"op":"add","path":"/b","value":2}]"#).unwrap_or_default();
        assert!(apply(&mut doc, &add_b).is_ok());
        assert_eq!(doc.get("b"), Some(&json!(2)));
    }
}
