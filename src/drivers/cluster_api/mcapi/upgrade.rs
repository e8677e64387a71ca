//! An upgrade of a Cluster on magnum-cluster-api's class. mcapi's `upgrade_cluster` moves
//! every nodegroup to the new template's image and renders the whole topology again; what
//! an upgrade must change of it is the version and the image: `imageUUID` and
//! `hardwareDiskBus`, the cluster's and those of every worker entry that overrides them.
//! This patch changes those and nothing else, each guarded by a test of the name at its
//! index (what the template changes besides is refused at the API, `Allows::validate_upgrade`).

use json_patch::jsonptr;
use json_patch::{Patch, PatchOperation, ReplaceOperation, TestOperation};
use serde_json::{json, Value};

#[cfg(test)]
use super::cluster::is_mcapi;

/// The new template's image, as mcapi looks it up in Glance.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NewImage {
    pub id: String,
    pub hw_disk_bus: Option<String>,
}

/// The variables an upgrade rewrites.
const IMAGE_VARIABLES: [&str; 2] = ["imageUUID", "hardwareDiskBus"];

fn pointer(p: &str) -> jsonptr::PointerBuf {
    jsonptr::PointerBuf::parse(p).unwrap_or_default()
}

/// The value an image variable takes.
fn value_of(name: &str, image: &NewImage) -> Value {
    match name {
        "imageUUID" => json!(image.id),
        _ => json!(image.hw_disk_bus.clone().unwrap_or_default()),
    }
}

/// Test and replace of each image variable in the list at `base` (`[{name, value}]`).
fn replace_in(list: Option<&Value>, base: &str, image: &NewImage, ops: &mut Vec<PatchOperation>) {
    let Some(items) = list.and_then(Value::as_array) else {
        return;
    };
    for (i, item) in items.iter().enumerate() {
        let Some(name) = item["name"]
            .as_str()
            .filter(|n| IMAGE_VARIABLES.contains(n))
        else {
            continue;
        };
        let value = value_of(name, image);
        if item.get("value") == Some(&value) {
            continue;
        }
        ops.push(PatchOperation::Test(TestOperation {
            path: pointer(&format!("{base}/{i}/name")),
            value: json!(name),
        }));
        ops.push(PatchOperation::Replace(ReplaceOperation {
            path: pointer(&format!("{base}/{i}/value")),
            value,
        }));
    }
}

/// Where a Cluster of `api_version` names its class.
fn class_path(api_version: &str) -> &'static str {
    if api_version == "v1beta1" {
        "/spec/topology/class"
    } else {
        "/spec/topology/classRef/name"
    }
}

/// The JSON patch of an upgrade to `version` on `image` (and `class`, when the template
/// names one) of `cluster`, read in `api_version`.
pub fn upgrade_patch(
    cluster: &Value,
    api_version: &str,
    version: &str,
    class: Option<&str>,
    image: &NewImage,
) -> Patch {
    let mut ops = vec![PatchOperation::Replace(ReplaceOperation {
        path: pointer("/spec/topology/version"),
        value: json!(version),
    })];
    if let Some(c) = class {
        ops.push(PatchOperation::Replace(ReplaceOperation {
            path: pointer(class_path(api_version)),
            value: json!(c),
        }));
    }
    replace_in(
        cluster.pointer("/spec/topology/variables"),
        "/spec/topology/variables",
        image,
        &mut ops,
    );
    let mds = cluster
        .pointer("/spec/topology/workers/machineDeployments")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (j, md) in mds.iter().enumerate() {
        let base = format!("/spec/topology/workers/machineDeployments/{j}/variables/overrides");
        let before = ops.len();
        replace_in(md.pointer("/variables/overrides"), &base, image, &mut ops);
        if ops.len() > before {
            // The entry is still the one read (the worker list may have moved since).
            ops.insert(
                before,
                PatchOperation::Test(TestOperation {
                    path: pointer(&format!(
                        "/spec/topology/workers/machineDeployments/{j}/name"
                    )),
                    value: md["name"].clone(),
                }),
            );
        }
    }
    Patch(ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster() -> Value {
        json!({"spec": {"topology": {
            "classRef": {"name": "magnum-v0.38.2"},
            "version": "v1.33.5",
            "variables": [
                {"name": "flavor", "value": "m1.small"},
                {"name": "imageUUID", "value": "old-image"},
                {"name": "hardwareDiskBus", "value": ""},
            ],
            "workers": {"machineDeployments": [
                {"name": "default-worker", "class": "default-worker", "variables": {"overrides": [
                    {"name": "flavor", "value": "m1.small"},
                    {"name": "imageUUID", "value": "old-image"},
                    {"name": "hardwareDiskBus", "value": ""},
                ]}},
                {"name": "plain", "class": "default-worker"},
            ]},
        }}})
    }

    #[test]
    fn an_upgrade_changes_the_version_and_the_images_only() {
        let c = cluster();
        assert!(is_mcapi(&c));
        let image = NewImage {
            id: "new-image".into(),
            hw_disk_bus: Some("scsi".into()),
        };
        let patch = upgrade_patch(&c, "v1beta2", "v1.34.1", None, &image);
        let mut upgraded = c.clone();
        json_patch::patch(&mut upgraded, &patch).expect("applies");
        let mut expected = c;
        let t = &mut expected["spec"]["topology"];
        t["version"] = json!("v1.34.1");
        t["variables"][1]["value"] = json!("new-image");
        t["variables"][2]["value"] = json!("scsi");
        let o = &mut t["workers"]["machineDeployments"][0]["variables"]["overrides"];
        o[1]["value"] = json!("new-image");
        o[2]["value"] = json!("scsi");
        assert_eq!(upgraded, expected);
    }

    #[test]
    fn a_moved_worker_list_fails_the_patch_instead_of_changing_another_entry() {
        let c = cluster();
        let patch = upgrade_patch(
            &c,
            "v1beta2",
            "v1.34.1",
            None,
            &NewImage {
                id: "new".into(),
                hw_disk_bus: None,
            },
        );
        let mut moved = c.clone();
        let mds = moved["spec"]["topology"]["workers"]["machineDeployments"]
            .as_array_mut()
            .expect("list");
        mds.swap(0, 1);
        assert!(json_patch::patch(&mut moved, &patch).is_err());
    }

    #[test]
    fn a_class_the_template_names_goes_where_the_version_read_keeps_it() {
        let image = NewImage::default();
        for (version, path) in [
            ("v1beta2", "/spec/topology/classRef/name"),
            ("v1beta1", "/spec/topology/class"),
        ] {
            let patch = upgrade_patch(
                &json!({}),
                version,
                "v1.34.1",
                Some("magnum-v0.39.0"),
                &image,
            );
            let to_class = patch
                .0
                .iter()
                .any(|op| matches!(op, PatchOperation::Replace(r) if r.path.as_str() == path));
            assert!(to_class, "{version}: {patch:?}");
        }
    }

    #[test]
    fn a_plain_cluster_is_not_mcapis() {
        assert!(!is_mcapi(
            &json!({"spec": {"topology": {"variables": [{"name": "x"}]}}})
        ));
        assert!(!is_mcapi(&json!({})));
    }
}
