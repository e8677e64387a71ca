//! The nodegroup checks of `magnum/api/controllers/v1/nodegroup.py`, named as Magnum names
//! them, plus the driver's autoscaling capability (magnum-rs).

use serde_json::Value;

use crate::drivers::Driver;
use crate::error::{ApiError, ApiResult};
use crate::model::{NodeGroup, ROLE_MASTER};

/// `_VALID_TAINT_EFFECTS`.
const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
/// `_VALID_TAINT_FIELDS`.
const TAINT_FIELDS: [&str; 3] = ["key", "value", "effect"];
/// `_KUBELET_ALLOWED_LABEL_NAMESPACES`.
const KUBELET_ALLOWED_NAMESPACES: [&str; 2] = ["kubelet.kubernetes.io", "node.kubernetes.io"];
/// `_KUBELET_ALLOWED_LABELS`.
const KUBELET_ALLOWED_LABELS: [&str; 12] = [
    "beta.kubernetes.io/arch",
    "beta.kubernetes.io/instance-type",
    "beta.kubernetes.io/os",
    "failure-domain.beta.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "kubernetes.io/arch",
    "kubernetes.io/hostname",
    "kubernetes.io/os",
    "node.kubernetes.io/instance-type",
    "node.kubernetes.io/windows-build",
    "topology.kubernetes.io/region",
    "topology.kubernetes.io/zone",
];

/// What is being validated: a nodegroup to create, or an existing one patched.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Validating {
    Create,
    Update,
}

/// `_validate_node_count`, `_validate_node_attrs_role`, `_validate_node_labels`,
/// `_validate_node_taints`, then (on create, as Magnum's `post` does next) the refusal of
/// master nodegroups, then the driver's autoscaling capability.
pub(super) fn validate_nodegroup(
    ng: &NodeGroup,
    template_driver: Option<&dyn Driver>,
    validating: Validating,
) -> ApiResult<()> {
    validate_node_count(ng)?;
    validate_node_attrs_role(ng)?;
    validate_node_labels(ng)?;
    validate_node_taints(ng)?;
    if validating == Validating::Create && ng.role.as_deref() == Some(ROLE_MASTER) {
        return Err(ApiError::CreateMasterNodeGroup);
    }
    if let Some(driver) = template_driver {
        validate_autoscaling(ng, driver)?;
    }
    Ok(())
}

/// `NodeGroupInvalidInput` for an attribute of `ng`.
fn invalid(ng: &NodeGroup, attr: &str, expl: String) -> ApiError {
    ApiError::NodeGroupInvalidInput {
        attr: attr.into(),
        nodegroup: ng.name.clone(),
        expl,
    }
}

/// `_validate_node_count`: min ≤ node_count ≤ max (a zero max means none).
fn validate_node_count(ng: &NodeGroup) -> ApiResult<()> {
    if let Some(max) = ng.max_node_count.filter(|m| *m != 0) {
        if max < ng.min_node_count {
            return Err(invalid(
                ng,
                "max_node_count",
                format!(
                    "min_node_count ({}) should be less or equal to max_node_count ({max})",
                    ng.min_node_count
                ),
            ));
        }
        if ng.node_count > max {
            return Err(invalid(
                ng,
                "max_node_count",
                format!(
                    "node_count ({}) should be less or equal to max_node_count ({max})",
                    ng.node_count
                ),
            ));
        }
    }
    if ng.min_node_count > ng.node_count {
        return Err(invalid(
            ng,
            "min_node_count",
            format!(
                "min_node_count ({}) should be less or equal to node_count ({})",
                ng.min_node_count, ng.node_count
            ),
        ));
    }
    Ok(())
}

/// `_validate_node_attrs_role`: no node labels or taints on a master nodegroup.
fn validate_node_attrs_role(ng: &NodeGroup) -> ApiResult<()> {
    if ng.role.as_deref() != Some(ROLE_MASTER) {
        return Ok(());
    }
    if ng.node_labels.as_ref().is_some_and(|m| !m.is_empty()) {
        return Err(invalid(
            ng,
            "node_labels",
            "node_labels may not be set on master nodegroups".into(),
        ));
    }
    if ng.node_taints.as_ref().is_some_and(|t| !t.is_empty()) {
        return Err(invalid(
            ng,
            "node_taints",
            "node_taints may not be set on master nodegroups".into(),
        ));
    }
    Ok(())
}

/// `_is_restricted_kubernetes_label`: a key in the `kubernetes.io`/`k8s.io` namespaces.
fn is_restricted_kubernetes_label(key: &str) -> bool {
    let Some((prefix, _)) = key.split_once('/') else {
        // The default namespace, which the kubelet is free to set.
        return false;
    };
    prefix == "kubernetes.io"
        || prefix == "k8s.io"
        || prefix.ends_with(".kubernetes.io")
        || prefix.ends_with(".k8s.io")
}

/// `_validate_node_labels`: the kubelet refuses labels in its restricted namespaces unless
/// allowed by prefix or by name.
fn validate_node_labels(ng: &NodeGroup) -> ApiResult<()> {
    for key in ng.node_labels.iter().flat_map(|m| m.keys()) {
        if !is_restricted_kubernetes_label(key) {
            continue;
        }
        let prefix = key.split_once('/').map_or(key.as_str(), |(p, _)| p);
        if KUBELET_ALLOWED_NAMESPACES.contains(&prefix)
            || KUBELET_ALLOWED_LABELS.contains(&key.as_str())
        {
            continue;
        }
        return Err(invalid(
            ng,
            "node_labels",
            format!(
                "node label '{key}' is in a restricted Kubernetes namespace; the kubelet will refuse to start. \
                 Labels in the kubernetes.io/ and k8s.io/ namespaces must use one of the allowed prefixes ({}) \
                 or be one of the allowed labels ({}).",
                KUBELET_ALLOWED_NAMESPACES.join(", "),
                KUBELET_ALLOWED_LABELS.join(", ")
            ),
        ));
    }
    Ok(())
}

/// `_validate_node_taints`: objects with a key, a known effect and an optional value.
fn validate_node_taints(ng: &NodeGroup) -> ApiResult<()> {
    for (i, taint) in ng.node_taints.iter().flatten().enumerate() {
        let Value::Object(t) = taint else {
            return Err(invalid(
                ng,
                "node_taints",
                format!("node_taints[{i}] must be an object with key, effect and optional value"),
            ));
        };
        let mut unknown: Vec<&str> = t
            .keys()
            .map(String::as_str)
            .filter(|k| !TAINT_FIELDS.contains(k))
            .collect();
        if !unknown.is_empty() {
            unknown.sort_unstable();
            return Err(invalid(
                ng,
                "node_taints",
                format!(
                    "node_taints[{i}] contains unrecognised field(s) {}; allowed fields are {}",
                    unknown.join(", "),
                    TAINT_FIELDS.join(", ")
                ),
            ));
        }
        if t.get("key")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(invalid(
                ng,
                "node_taints",
                format!("node_taints[{i}].key is required"),
            ));
        }
        if !t
            .get("effect")
            .and_then(Value::as_str)
            .is_some_and(|e| TAINT_EFFECTS.contains(&e))
        {
            return Err(invalid(
                ng,
                "node_taints",
                format!(
                    "node_taints[{i}].effect must be one of {}",
                    TAINT_EFFECTS.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// magnum-rs: autoscaling bounds only where the cluster's driver can autoscale the
/// nodegroup's role.
fn validate_autoscaling(ng: &NodeGroup, driver: &dyn Driver) -> ApiResult<()> {
    let bounds_set = ng.min_node_count != 0 || ng.max_node_count.is_some_and(|m| m != 0);
    if bounds_set && !driver.supports_autoscaling(ng) {
        return Err(invalid(
            ng,
            if ng.min_node_count != 0 { "min_node_count" } else { "max_node_count" },
            format!(
                "the {} driver cannot autoscale {} nodegroups, so min_node_count and max_node_count cannot be set on them",
                driver.name(),
                ng.role.as_deref().unwrap_or("worker")
            ),
        ));
    }
    Ok(())
}
