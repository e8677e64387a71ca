//! The committed `etc/policy.yaml.sample` is what `magnum-rs policy-sample` prints now.

use std::process::Command;

#[test]
fn committed_policy_sample_matches_the_generator() {
    let out = Command::new(env!("CARGO_BIN_EXE_magnum-rs"))
        .arg("policy-sample")
        .output()
        .expect("run magnum-rs policy-sample");
    assert!(out.status.success(), "policy-sample failed: {out:?}");
    let generated = String::from_utf8(out.stdout).expect("utf-8");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/etc/policy.yaml.sample");
    let committed = std::fs::read_to_string(path).expect("etc/policy.yaml.sample");
    assert!(
        generated == committed,
        "etc/policy.yaml.sample is stale: regenerate it with \
         `cargo run -- policy-sample > etc/policy.yaml.sample`"
    );
}
