//! A new cluster's labels and what is read from them: the merge of `ClustersController._post`
//! with magnum-rs's size bound, and the default worker's `min_node_count` label.

use serde_json::{Map, Value};

use crate::api::body::{py_int, py_str, INT_COLUMN_MAX};
use crate::api::bounds::{echo, FieldBounds};
use crate::error::{ApiError, ApiResult};

/// The label the conductor copies into the default worker (`_get_nodegroup_object`).
const MIN_NODE_COUNT: &str = "min_node_count";

/// The cluster's labels as `_post` makes them: the template's when the body has none (or an
/// empty dict), else the body's, laid over the template's with `merge_labels`. Labels the
/// body contributed are bounded by `[api] max_labels_size` after the merge too; the
/// template's, copied unchanged, are not refused (they were bounded when stored).
pub(super) fn cluster_labels(
    template: Option<&Map<String, Value>>,
    body: Option<Map<String, Value>>,
    merge: bool,
    bounds: FieldBounds,
) -> ApiResult<Map<String, Value>> {
    let from_body = body.as_ref().is_some_and(|l| !l.is_empty());
    let labels = merged_labels(template, body.as_ref(), merge);
    if from_body {
        bounds.labels(&labels)?;
    }
    Ok(labels)
}

/// The merge of [`cluster_labels`] alone, unbounded (what Magnum's checks before the
/// bound read).
pub(super) fn merged_labels(
    template: Option<&Map<String, Value>>,
    body: Option<&Map<String, Value>>,
    merge: bool,
) -> Map<String, Value> {
    let template = template.cloned().unwrap_or_default();
    match body {
        Some(l) if !l.is_empty() => {
            if merge {
                let mut merged = template;
                merged.extend(l.clone());
                merged
            } else {
                l.clone()
            }
        }
        _ => template,
    }
}

/// The default worker's `min_node_count`: the `min_node_count` label, 0 without one.
///
/// Magnum's conductor assigns the label to the nodegroup's `IntegerField` (Python's `int()`
/// of the text) after answering 202: text that is no integer raises there, leaving the
/// cluster `CREATE_IN_PROGRESS` without its worker; a value beyond the 32-bit column fails
/// the insert the same way (a non-strict MySQL saturates it); a negative one is stored,
/// though the `NodeGroup` API type refuses it. magnum-rs refuses all three at once with the
/// `NodeGroup` type's texts, so nothing is written (docs/compatibility.md,
/// `diff:min-node-count-label`).
pub(super) fn worker_min_node_count(labels: &Map<String, Value>) -> ApiResult<i64> {
    let Some(v) = labels.get(MIN_NODE_COUNT) else {
        return Ok(0);
    };
    // Labels are stored as text (`DictOfStringsField`); a JSON number was converted already.
    let text = match v {
        Value::String(s) => s.clone(),
        other => py_str(other),
    };
    let shown = echo(text.clone());
    let refuse = |reason: String| Err(ApiError::invalid_input(MIN_NODE_COUNT, &shown, reason));
    match py_int(&text) {
        None => refuse(format!("invalid literal for int() with base 10: '{shown}'")),
        Some(n) if n < 0 => refuse("Value should be greater or equal to 0".into()),
        Some(n) if n > INT_COLUMN_MAX => refuse(format!(
            "Value should be lower or equal to {INT_COLUMN_MAX}"
        )),
        Some(n) => Ok(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    fn min(v: Value) -> Result<i64, String> {
        worker_min_node_count(&labels(json!({ "min_node_count": v }))).map_err(|e| e.to_string())
    }

    #[test]
    fn python_int_reads_what_int_reads() {
        assert_eq!(py_int(" 3\n"), Some(3));
        assert_eq!(py_int("+3"), Some(3));
        assert_eq!(py_int("-0"), Some(0));
        assert_eq!(py_int("1_000"), Some(1000));
        assert_eq!(py_int("99999999999999999999999"), Some(i64::MAX));
        for bad in ["", "abc", "3.0", "1__0", "_1", "1_", "0x10", "- 3", "True"] {
            assert_eq!(py_int(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_worker_minimum_is_the_label_within_the_nodegroup_types_range() {
        assert_eq!(worker_min_node_count(&Map::new()).ok(), Some(0));
        assert_eq!(min(json!("2")), Ok(2));
        assert_eq!(min(json!("2147483647")), Ok(2_147_483_647));
        assert_eq!(
            min(json!("2147483648")),
            Err(
                "Invalid input for field/attribute min_node_count. Value: '2147483648'. Value \
                 should be lower or equal to 2147483647"
                    .into()
            )
        );
        assert_eq!(
            min(json!("-1")),
            Err(
                "Invalid input for field/attribute min_node_count. Value: '-1'. Value should \
                 be greater or equal to 0"
                    .into()
            )
        );
        assert_eq!(
            min(json!("two")),
            Err(
                "Invalid input for field/attribute min_node_count. Value: 'two'. invalid \
                 literal for int() with base 10: 'two'"
                    .into()
            )
        );
    }

    #[test]
    fn body_labels_are_bounded_after_the_merge_and_template_labels_alone_are_not() {
        let bounds = FieldBounds {
            labels: 30,
            other: 30,
        };
        let template = labels(json!({"kube_tag": "v1.30.4"}));
        let body = labels(json!({"a": "b"}));
        let merged = cluster_labels(Some(&template), Some(body.clone()), true, bounds);
        assert_eq!(
            merged.ok(),
            Some(labels(json!({"kube_tag": "v1.30.4", "a": "b"})))
        );
        let small = FieldBounds {
            labels: 22,
            ..bounds
        };
        assert!(cluster_labels(Some(&template), Some(body.clone()), true, small).is_err());
        assert!(cluster_labels(Some(&template), Some(body), false, small).is_ok());
        let tiny = FieldBounds {
            labels: 2,
            ..bounds
        };
        assert_eq!(
            cluster_labels(Some(&template), None, true, tiny).ok(),
            Some(template.clone()),
            "the template's labels, copied, are not refused"
        );
    }
}
