//! Tests of the policy set: Magnum's defaults, overrides, scope and sample output.

use std::io::Write as _;

use super::{
    defaults, Credentials, DenyReason, Policy, PolicyDenied, PolicyError, ScopeType, Target,
};

fn user(project: &str, user: &str, roles: &[&str]) -> Credentials {
    Credentials {
        user_id: Some(user.into()),
        project_id: Some(project.into()),
        domain_id: Some("default".into()),
        project_domain_id: Some("default".into()),
        roles: roles.iter().map(|r| (*r).to_owned()).collect(),
        system_scope: None,
        domain_scope: None,
        is_admin: false,
    }
}

/// What Magnum does when it builds a request context: `is_admin` from `context_is_admin`.
fn ctx(policy: &Policy, mut creds: Credentials) -> Credentials {
    creds.is_admin = policy.is_admin(&creds);
    creds
}

fn demo_cluster() -> Target {
    Target::for_project("demo", "demo-user")
}

#[test]
fn magnum_defaults_register_all_66_rules_with_unique_names() {
    let policy = Policy::magnum_defaults();
    assert_eq!(policy.effective_rules().count(), 66);
    assert_eq!(defaults::magnum().count(), 66);
    assert!(policy.effective_rules().all(|r| r.valid && !r.overridden));
    for name in [
        "context_is_admin",
        "admin_or_project_member_user_or_cluster_user",
        "cluster:resize",
        "cluster:upgrade_all_projects",
        "nodegroup:get_one_all_projects",
        "clustertemplate:publish",
        "certificate:rotate_ca",
        "credential:rotate",
        "federation:update",
        "magnum-service:get_all",
        "quota:get",
        "stats:get_all",
    ] {
        assert!(policy.contains(name), "{name} missing");
    }
}

#[test]
fn magnum_defaults_carry_scope_types_and_descriptions() {
    let policy = Policy::magnum_defaults();
    let resize = policy.get("cluster:resize").expect("registered");
    assert_eq!(
        resize.rule,
        "rule:admin_or_project_member_deny_cluster_user"
    );
    assert_eq!(resize.scope_types, &[ScopeType::Project]);
    assert_eq!(resize.description, "Resize an existing cluster.");
    let all = policy
        .get("cluster:get_all_all_projects")
        .expect("registered");
    assert!(all.scope_types.is_empty());
    assert_eq!(
        policy.get("context_is_admin").expect("base").rule,
        "role:admin"
    );
}

#[test]
fn member_of_project_can_resize_own_cluster() {
    let policy = Policy::magnum_defaults();
    let member = ctx(&policy, user("demo", "demo-user", &["member", "reader"]));
    assert_eq!(
        policy.enforce("cluster:resize", &demo_cluster(), &member),
        Ok(())
    );
}

#[test]
fn reader_cannot_resize_and_gets_magnums_403_message() {
    let policy = Policy::magnum_defaults();
    let reader = ctx(&policy, user("demo", "reader-user", &["reader"]));
    let err = policy
        .enforce("cluster:resize", &demo_cluster(), &reader)
        .expect_err("reader must not resize");
    assert_eq!(
        err,
        PolicyDenied {
            action: "cluster:resize".into(),
            reason: DenyReason::NotAuthorized
        }
    );
    assert_eq!(
        err.to_string(),
        "Policy doesn't allow cluster:resize to be performed."
    );
}

#[test]
fn reader_can_get_cluster() {
    let policy = Policy::magnum_defaults();
    let reader = ctx(&policy, user("demo", "reader-user", &["reader"]));
    assert!(policy.is_allowed("cluster:get", &demo_cluster(), &reader));
    assert!(policy.is_allowed(
        "cluster:get_all",
        &Target::for_credentials(&reader),
        &reader
    ));
}

#[test]
fn member_without_implied_reader_role_cannot_list() {
    // Observed on real Magnum with synthetic X-Roles: member alone fails reader rules.
    let policy = Policy::magnum_defaults();
    let member = ctx(&policy, user("demo", "demo-user", &["member"]));
    assert!(!policy.is_allowed(
        "cluster:get_all",
        &Target::for_credentials(&member),
        &member
    ));
}

#[test]
fn member_of_other_project_cannot_resize_the_cluster() {
    let policy = Policy::magnum_defaults();
    let alt = ctx(&policy, user("alt", "alt-user", &["member", "reader"]));
    assert!(!policy.is_allowed("cluster:resize", &demo_cluster(), &alt));
    assert!(!policy.is_allowed("cluster:get", &demo_cluster(), &alt));
}

#[test]
fn admin_passes_all_projects_rules_and_member_does_not() {
    let policy = Policy::magnum_defaults();
    let admin = ctx(
        &policy,
        user("admin", "admin", &["admin", "member", "reader"]),
    );
    let member = ctx(&policy, user("demo", "demo-user", &["member", "reader"]));
    assert!(admin.is_admin);
    assert!(!member.is_admin);
    let none = Target::new();
    assert!(policy.is_allowed("cluster:get_all_all_projects", &none, &admin));
    assert!(!policy.is_allowed("cluster:get_all_all_projects", &none, &member));
    // Admin of another project also passes project rules on demo's cluster.
    assert!(policy.is_allowed("cluster:resize", &demo_cluster(), &admin));
}

#[test]
fn is_admin_evaluates_context_is_admin_case_insensitively() {
    let policy = Policy::magnum_defaults();
    assert!(policy.is_admin(&user("p", "u", &["Admin"])));
    assert!(!policy.is_admin(&user("p", "u", &["member"])));
}

#[test]
fn health_status_update_needs_member_and_same_user() {
    let policy = Policy::magnum_defaults();
    let member = ctx(&policy, user("demo", "demo-user", &["member"]));
    assert!(policy.is_allowed("cluster:update_health_status", &demo_cluster(), &member));
    let other = ctx(&policy, user("demo", "someone-else", &["member"]));
    assert!(!policy.is_allowed("cluster:update_health_status", &demo_cluster(), &other));
}

#[test]
fn system_scoped_token_is_denied_on_project_scoped_rule() {
    let policy = Policy::magnum_defaults();
    let mut sys_admin = user("demo", "admin", &["admin", "member", "reader"]);
    sys_admin.system_scope = Some("all".into());
    let sys_admin = ctx(&policy, sys_admin);
    let err = policy
        .enforce("cluster:get", &demo_cluster(), &sys_admin)
        .expect_err("scope mismatch");
    assert_eq!(err.reason, DenyReason::InvalidScope);
    assert_eq!(
        err.to_string(),
        "Policy doesn't allow cluster:get to be performed."
    );
    // Rules without scope_types still apply to system-scoped tokens.
    assert!(policy.is_allowed("cluster:get_all_all_projects", &Target::new(), &sys_admin));
    assert!(sys_admin.is_admin);
}

#[test]
fn scope_types_survive_an_override() {
    let mut policy = Policy::magnum_defaults();
    policy.set_rule("cluster:get", "@");
    let mut sys = user("demo", "admin", &["admin"]);
    sys.system_scope = Some("all".into());
    assert!(!policy.is_allowed("cluster:get", &demo_cluster(), &sys));
}

#[test]
fn yaml_override_lets_a_reader_resize() {
    let mut policy = Policy::magnum_defaults();
    let reader = ctx(&policy, user("demo", "reader-user", &["reader"]));
    assert!(!policy.is_allowed("cluster:resize", &demo_cluster(), &reader));
    let n = policy
        .apply_overrides("\"cluster:resize\": \"role:reader\"\n")
        .expect("valid yaml");
    assert_eq!(n, 1);
    assert!(policy.is_allowed("cluster:resize", &demo_cluster(), &reader));
    let rule = policy.get("cluster:resize").expect("registered");
    assert!(rule.overridden);
    assert_eq!(rule.rule, "role:reader");
    assert_eq!(
        rule.default_rule,
        Some("rule:admin_or_project_member_deny_cluster_user")
    );
}

#[test]
fn overriding_a_base_rule_changes_every_rule_that_refers_to_it() {
    let mut policy = Policy::magnum_defaults();
    policy
        .apply_overrides("context_is_admin: role:cloud-admin")
        .expect("valid yaml");
    assert!(!policy.is_admin(&user("p", "u", &["admin"])));
    assert!(policy.is_admin(&user("p", "u", &["cloud-admin"])));
}

#[test]
fn json_overrides_and_unknown_names_are_accepted() {
    let mut policy = Policy::magnum_defaults();
    let n = policy
        .apply_overrides(r#"{"my:rule": "role:ops", "cluster:get": "!"}"#)
        .expect("json is yaml");
    assert_eq!(n, 2);
    let ops = user("demo", "u", &["ops", "reader"]);
    assert!(policy.is_allowed("my:rule", &Target::new(), &ops));
    assert!(!policy.is_allowed("cluster:get", &demo_cluster(), &ops));
    let added = policy.get("my:rule").expect("added");
    assert!(added.overridden && added.default_rule.is_none() && added.scope_types.is_empty());
}

#[test]
fn legacy_list_override_is_accepted() {
    let mut policy = Policy::magnum_defaults();
    policy
        .apply_overrides("\"cluster:resize\": [[\"role:ops\"], [\"role:admin\"]]")
        .expect("list syntax");
    assert!(policy.is_allowed("cluster:resize", &demo_cluster(), &user("x", "u", &["ops"])));
}

#[test]
fn unparsable_override_file_is_an_error_and_changes_nothing() {
    let mut policy = Policy::magnum_defaults();
    for bad in [
        "cluster:resize: [unclosed",
        "- just\n- a list",
        "\"cluster:resize\": 5",
        "\"cluster:resize\":",
        "1: role:admin",
        "{\"cluster:get\": \"@\", \"cluster:resize\": true}",
    ] {
        assert!(
            policy.apply_overrides(bad).is_err(),
            "{bad:?} should be rejected"
        );
    }
    assert!(policy.effective_rules().all(|r| !r.overridden));
}

#[test]
fn unparsable_rule_string_denies_but_is_not_a_file_error() {
    let mut policy = Policy::magnum_defaults();
    policy
        .apply_overrides("\"cluster:get\": \"role:reader and\"")
        .expect("the file itself is fine");
    let reader = user("demo", "u", &["reader"]);
    assert!(!policy.is_allowed("cluster:get", &demo_cluster(), &reader));
    assert!(!policy.get("cluster:get").expect("registered").valid);
}

#[test]
fn empty_or_comment_only_override_file_sets_nothing() {
    let mut policy = Policy::magnum_defaults();
    assert_eq!(policy.apply_overrides("").expect("empty"), 0);
    assert_eq!(policy.apply_overrides("# nothing\n").expect("comments"), 0);
}

#[test]
fn override_file_is_read_from_disk() {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    writeln!(file, "\"cluster:resize\": \"role:reader\"").expect("write");
    let policy = Policy::with_overrides_file(file.path()).expect("loads");
    let reader = user("demo", "u", &["reader"]);
    assert!(policy.is_allowed("cluster:resize", &demo_cluster(), &reader));

    let missing = Policy::with_overrides_file("/nonexistent/policy.yaml");
    assert!(matches!(missing, Err(PolicyError::Io { .. })));
}

#[test]
fn unregistered_action_is_denied() {
    let policy = Policy::magnum_defaults();
    let admin = ctx(&policy, user("admin", "admin", &["admin"]));
    let err = policy
        .enforce("cluster:frobnicate", &Target::new(), &admin)
        .expect_err("unknown action");
    assert_eq!(err.reason, DenyReason::NotRegistered);
}

#[test]
fn default_rule_covers_unknown_actions_and_references() {
    let mut policy = Policy::magnum_defaults();
    policy.set_rule("default", "role:admin");
    policy.set_rule("uses_missing", "rule:nowhere");
    let admin = user("p", "u", &["admin"]);
    assert!(policy.is_allowed("cluster:frobnicate", &Target::new(), &admin));
    assert!(policy.is_allowed("uses_missing", &Target::new(), &admin));
    assert!(!policy.is_allowed("cluster:frobnicate", &Target::new(), &user("p", "u", &[])));
}

#[test]
fn rule_loop_in_overrides_denies() {
    let mut policy = Policy::magnum_defaults();
    policy
        .apply_overrides(
            "context_is_admin: rule:admin_or_owner\nadmin_or_owner: rule:context_is_admin",
        )
        .expect("valid yaml");
    let admin = user("p", "u", &["admin"]);
    assert!(!policy.is_admin(&admin));
    assert!(!policy.is_allowed("cluster:get_all_all_projects", &Target::new(), &admin));
}

#[test]
fn sample_yaml_looks_like_oslopolicy_sample_generator_and_loads_as_no_overrides() {
    let policy = Policy::magnum_defaults();
    let sample = policy.sample_yaml();
    assert!(sample.starts_with("#\"context_is_admin\": \"role:admin\"\n\n"));
    assert!(sample.contains(
        "# Resize an existing cluster.\n\
         # POST  /v1/clusters/{cluster_ident}/actions/resize\n\
         # Intended scope(s): project\n\
         #\"cluster:resize\": \"rule:admin_or_project_member_deny_cluster_user\"\n\n"
    ));
    // Descriptions wrap at 70 columns as textwrap does.
    assert!(sample.contains(
        "# Publish or hide an existing cluster template (set public or hidden\n\
         # flags).\n# POST  /v1/clustertemplates\n# PATCH  /v1/clustertemplates\n"
    ));
    assert!(sample
        .lines()
        .all(|l| l.len() <= 70 || !l.starts_with("# ")));
    let mut reloaded = Policy::magnum_defaults();
    assert_eq!(reloaded.apply_overrides(&sample).expect("sample parses"), 0);
}

#[test]
fn effective_yaml_round_trips_overrides() {
    let mut policy = Policy::magnum_defaults();
    policy.set_rule("cluster:resize", "role:reader or \"quoted\"");
    policy.set_rule("extra", "@");
    let yaml = policy.effective_yaml();
    let mut reloaded = Policy::magnum_defaults();
    assert_eq!(reloaded.apply_overrides(&yaml).expect("parses"), 67);
    let rule = reloaded.get("cluster:resize").expect("registered");
    assert_eq!(rule.rule, "role:reader or \"quoted\"");
    assert!(reloaded.contains("extra"));
}
