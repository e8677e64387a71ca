//! magnum-cluster-api 0.38.2 ("mcapi"): the Cluster its driver creates for a Magnum cluster
//! on its own ClusterClass (`magnum-v0.38.2`), rebuilt from the same Magnum rows by the same
//! rules, so that magnum-rs creates the clusters mcapi creates and takes over those it runs.
//! `labels` reads labels as mcapi reads them; `variables` gives the class's 39 variables,
//! `machine_deployment` a nodegroup's worker entry and `cluster` the object around them.
//! What mcapi looks up in the cloud comes in as facts; nothing here calls anything.
//! `v1beta2` turns mcapi's v1beta1 objects into the version magnum-rs writes.

pub mod cluster;
pub mod labels;
pub mod machine_deployment;
pub mod upgrade;
pub mod v1beta2;
pub mod variables;
