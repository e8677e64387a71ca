//! The template checks of `magnum/api/validation.py` (the `Validator` of Kubernetes and the
//! `_enforce_*` helpers behind the controller's decorators) and `utils.validate_dns`, named
//! as Magnum names them.

use crate::error::{ApiError, ApiResult};
use crate::model::ClusterTemplate;

/// `K8sValidator.supported_network_drivers`.
const NETWORK_DRIVERS: [&str; 3] = ["flannel", "calico", "cilium"];
/// `[cluster_template] kubernetes_default_network_driver`.
pub(super) const DEFAULT_NETWORK_DRIVER: &str = "flannel";
/// `K8sValidator.supported_volume_driver`.
const VOLUME_DRIVERS: [&str; 1] = ["cinder"];
/// `Validator.supported_server_types`.
const SERVER_TYPES: [&str; 2] = ["vm", "bm"];

/// `DNSListType` (`magnum.common.utils.validate_dns`): one IPv4 address or a comma-separated
/// list of them, each in dotted-quad form (spaces around an entry are ignored).
pub(super) fn validate_dns(dns: &str) -> ApiResult<()> {
    let valid = dns
        .split(',')
        .all(|d| d.trim().parse::<std::net::Ipv4Addr>().is_ok());
    if valid {
        Ok(())
    } else {
        Err(ApiError::InvalidParameterValue(format!(
            "Expected a single dns address or comma separated dns list, but received {dns}."
        )))
    }
}

/// `_enforce_volume_storage_size`: devicemapper needs a docker volume of at least 3 GB (the
/// cluster's, else the template's).
pub fn enforce_volume_storage_size(
    t: &ClusterTemplate,
    cluster_volume_size: Option<i64>,
) -> ApiResult<()> {
    let storage = t.docker_storage_driver.as_deref().unwrap_or_default();
    if storage != "devicemapper" {
        return Ok(());
    }
    let size = cluster_volume_size
        .filter(|v| *v != 0)
        .or(t.docker_volume_size.filter(|v| *v != 0));
    match size {
        Some(v) if v >= 3 => Ok(()),
        _ => Err(ApiError::InvalidParameterValue(format!(
            "docker volume size {} GB is not valid, expecting minimum value 3GB for {storage} storage driver.",
            size.map_or_else(|| "None".to_string(), |v| v.to_string())
        ))),
    }
}

/// The `Validator` checks that `post` and `patch` run, in Magnum's order: server type,
/// network driver, volume driver (each first finds the COE's validator), with
/// `[cluster_template] kubernetes_allowed_network_drivers`.
pub(super) fn validate_drivers(
    t: &ClusterTemplate,
    allowed_network_drivers: &[String],
) -> ApiResult<()> {
    enforce_server_type(t)?;
    enforce_network_driver_types(t, allowed_network_drivers)?;
    enforce_volume_driver_types(t)
}

/// `_enforce_server_type`.
fn enforce_server_type(t: &ClusterTemplate) -> ApiResult<()> {
    get_coe_validator(t.coe.as_deref())?;
    validate_server_type(t.server_type.as_deref().unwrap_or("vm"))
}

/// `_enforce_network_driver_types`: validates the default when none is named (storing it is
/// the caller's business).
fn enforce_network_driver_types(t: &ClusterTemplate, allowed: &[String]) -> ApiResult<()> {
    get_coe_validator(t.coe.as_deref())?;
    validate_network_driver(
        t.network_driver
            .as_deref()
            .unwrap_or(DEFAULT_NETWORK_DRIVER),
        allowed,
    )
}

/// `_enforce_volume_driver_types`: nothing to check without a volume driver.
fn enforce_volume_driver_types(t: &ClusterTemplate) -> ApiResult<()> {
    get_coe_validator(t.coe.as_deref())?;
    match &t.volume_driver {
        Some(vd) => validate_volume_driver(vd),
        None => Ok(()),
    }
}

/// `Validator.get_coe_validator`: only Kubernetes has one. WSME drops the Enum's
/// `mandatory`, so a missing coe gets this far.
fn get_coe_validator(coe: Option<&str>) -> ApiResult<()> {
    if coe != Some("kubernetes") {
        return Err(ApiError::InvalidParameterValue(format!(
            "Requested COE type {} is not supported.",
            // WSME's `Unset` sentinel, as Magnum prints it.
            coe.unwrap_or("Unset")
        )));
    }
    Ok(())
}

/// `Validator.validate_server_type`.
fn validate_server_type(server_type: &str) -> ApiResult<()> {
    if !SERVER_TYPES.contains(&server_type) {
        return Err(ApiError::InvalidParameterValue(format!(
            "Server type {server_type} is not supported, expecting a vm/bm/unspecified server type."
        )));
    }
    Ok(())
}

/// `Validator.validate_network_driver`: `_validate_network_driver_supported`, then
/// `_validate_network_driver_allowed`.
fn validate_network_driver(driver: &str, allowed: &[String]) -> ApiResult<()> {
    if !NETWORK_DRIVERS.contains(&driver) {
        return Err(ApiError::InvalidParameterValue(format!(
            "Network driver type {driver} is not supported, expecting a flannel/calico/cilium/unspecified network driver."
        )));
    }
    if !allowed.iter().any(|a| a == "all" || a == driver) {
        // Magnum's text ends with a space.
        return Err(ApiError::InvalidParameterValue(format!(
            "Network driver type {driver} is not allowed, expecting a {}/unspecified network driver. ",
            allowed.join("/")
        )));
    }
    Ok(())
}

/// `Validator.validate_volume_driver` (`_validate_volume_driver_supported`).
fn validate_volume_driver(driver: &str) -> ApiResult<()> {
    if !VOLUME_DRIVERS.contains(&driver) {
        return Err(ApiError::InvalidParameterValue(format!(
            "Volume driver type {driver} is not supported, expecting a cinder/unspecified volume driver."
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(coe: Option<&str>) -> ClusterTemplate {
        ClusterTemplate {
            coe: coe.map(str::to_string),
            ..ClusterTemplate::default()
        }
    }

    #[test]
    fn the_coe_is_checked_before_the_drivers() {
        let t = ClusterTemplate {
            network_driver: Some("weave".into()),
            ..template(None)
        };
        assert_eq!(
            validate_drivers(&t, &["all".into()])
                .err()
                .map(|e| e.to_string()),
            Some("Requested COE type Unset is not supported.".into())
        );
    }

    #[test]
    fn a_missing_network_driver_is_checked_as_the_default() {
        let t = template(Some("kubernetes"));
        assert!(validate_drivers(&t, &["all".into()]).is_ok());
        assert_eq!(
            validate_drivers(&t, &["calico".into()])
                .err()
                .map(|e| e.to_string()),
            Some(
                "Network driver type flannel is not allowed, expecting a calico/unspecified \
                 network driver. "
                    .into()
            )
        );
    }
}
