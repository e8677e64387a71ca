//! Tests of the rule language: parsing and evaluation.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::rules::{self, parse, parse_legacy_list, substitute, Check, EvalContext, RuleSource};
use super::{Credentials, ParseError};

struct Named(HashMap<String, Check>);

impl RuleSource for Named {
    fn rule(&self, name: &str) -> Option<&Check> {
        self.0.get(name)
    }
}

fn named(rules: &[(&str, &str)]) -> Named {
    Named(
        rules
            .iter()
            .map(|(n, r)| ((*n).to_owned(), parse(r).expect("test rule parses")))
            .collect(),
    )
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn creds(roles: &[&str]) -> Map<String, Value> {
    Credentials {
        user_id: Some("u1".into()),
        project_id: Some("p1".into()),
        domain_id: Some("default".into()),
        roles: roles.iter().map(|r| (*r).to_owned()).collect(),
        ..Credentials::default()
    }
    .to_policy_values()
}

fn eval_with(rule: &str, target: Value, creds: &Map<String, Value>, named: &Named) -> bool {
    let check = parse(rule).expect("rule parses");
    let target = obj(target);
    check.evaluate(&EvalContext {
        target: &target,
        creds,
        rules: named,
    })
}

fn eval(rule: &str, target: Value, roles: &[&str]) -> bool {
    eval_with(rule, target, &creds(roles), &named(&[]))
}

#[test]
fn at_always_passes_and_bang_never_passes() {
    assert!(eval("@", json!({}), &[]));
    assert!(!eval("!", json!({}), &["admin"]));
}

#[test]
fn empty_rule_always_passes_but_blank_rule_is_a_parse_error() {
    assert_eq!(parse(""), Ok(Check::Always));
    assert_eq!(parse("   "), Err(ParseError::Blank));
}

#[test]
fn and_binds_tighter_than_or() {
    // true or (false and false) = true; (true or false) and false would be false.
    assert!(eval("@ or ! and !", json!({}), &[]));
    // (false and true) or true
    assert!(eval("! and @ or @", json!({}), &[]));
    assert_eq!(
        parse("role:a or role:b and role:c").expect("parses"),
        Check::Or(vec![
            Check::Role("a".into()),
            Check::And(vec![Check::Role("b".into()), Check::Role("c".into())]),
        ])
    );
}

#[test]
fn parentheses_override_precedence() {
    assert!(!eval("(@ or !) and !", json!({}), &[]));
    assert!(eval("((@))", json!({}), &[]));
    assert!(eval("( @ )", json!({}), &[]));
}

#[test]
fn not_binds_tighter_than_and() {
    // (not true) and true = false; not (true and true) would also be false, so use or:
    // (not false) or false = true.
    assert!(eval("not ! or !", json!({}), &[]));
    assert!(!eval("not @ and @", json!({}), &[]));
    assert!(eval("not (@ and !)", json!({}), &[]));
    assert!(eval("not not @", json!({}), &[]));
}

#[test]
fn operators_are_case_insensitive() {
    assert!(eval("NOT ! AND @ Or !", json!({}), &[]));
}

#[test]
fn role_match_is_case_insensitive() {
    assert!(eval("role:Member", json!({}), &["member"]));
    assert!(eval("role:reader", json!({}), &["READER"]));
    assert!(!eval("role:admin", json!({}), &["member", "reader"]));
}

#[test]
fn role_name_can_come_from_the_target() {
    assert!(eval(
        "role:%(needed)s",
        json!({"needed": "member"}),
        &["member"]
    ));
    assert!(!eval("role:%(needed)s", json!({}), &["member"]));
}

#[test]
fn target_substitution_compares_with_credentials() {
    assert!(eval(
        "project_id:%(project_id)s",
        json!({"project_id": "p1"}),
        &[]
    ));
    assert!(!eval(
        "project_id:%(project_id)s",
        json!({"project_id": "p2"}),
        &[]
    ));
    assert!(eval(
        "user_id:%(owner)s and project_id:p1",
        json!({"owner": "u1"}),
        &[]
    ));
}

#[test]
fn missing_target_key_fails_the_check() {
    assert!(!eval("project_id:%(project_id)s", json!({}), &[]));
    assert!(!eval(
        "project_id:%(project_id)s",
        json!({"project_id": null}),
        &[]
    ));
    // ... but only that check: the rest of the rule still counts.
    assert!(eval("project_id:%(project_id)s or @", json!({}), &[]));
}

#[test]
fn missing_credential_never_matches() {
    let no_project = Credentials::default().to_policy_values();
    let target = json!({"project_id": "None"});
    assert!(!eval_with(
        "project_id:%(project_id)s",
        target,
        &no_project,
        &named(&[])
    ));
}

#[test]
fn is_admin_true_checks_the_credential_flag() {
    let mut admin = Credentials {
        is_admin: true,
        ..Credentials::default()
    };
    let none = named(&[]);
    assert!(eval_with(
        "is_admin:True",
        json!({}),
        &admin.to_policy_values(),
        &none
    ));
    admin.is_admin = false;
    assert!(!eval_with(
        "is_admin:True",
        json!({}),
        &admin.to_policy_values(),
        &none
    ));
    assert!(eval_with(
        "is_admin:False",
        json!({}),
        &admin.to_policy_values(),
        &none
    ));
}

#[test]
fn literal_left_side_compares_with_the_substituted_value() {
    assert!(eval("True:%(enabled)s", json!({"enabled": true}), &[]));
    assert!(!eval("True:%(enabled)s", json!({"enabled": false}), &[]));
    assert!(eval(
        "'Member':%(role.name)s",
        json!({"role.name": "Member"}),
        &[]
    ));
    assert!(eval("\"x\":%(v)s", json!({"v": "x"}), &[]));
    assert!(eval("5:%(n)s", json!({"n": 5}), &[]));
}

#[test]
fn dotted_path_reaches_into_credentials_and_lists() {
    let c =
        obj(json!({"token": {"user": {"id": "u1"}}, "groups": [{"name": "ops"}, {"name": "dev"}]}));
    let none = named(&[]);
    assert!(eval_with("token.user.id:u1", json!({}), &c, &none));
    assert!(!eval_with("token.user.id:u2", json!({}), &c, &none));
    assert!(eval_with("groups.name:dev", json!({}), &c, &none));
    assert!(!eval_with("token.nope:x", json!({}), &c, &none));
    assert!(eval("roles:member", json!({}), &["member"]));
}

#[test]
fn percent_escapes_and_unsupported_formats() {
    let t = obj(json!({"a": "x"}));
    assert_eq!(substitute("100%%", &t).as_deref(), Some("100%"));
    assert_eq!(substitute("%(a)s-%(a)s", &t).as_deref(), Some("x-x"));
    assert_eq!(substitute("%(a)d", &t), None);
    assert_eq!(substitute("50%", &t), None);
    assert_eq!(substitute("%(a", &t), None);
}

#[test]
fn rule_reference_evaluates_the_named_rule() {
    let rules = named(&[
        ("is_member", "role:member"),
        ("owner", "project_id:%(project_id)s"),
    ]);
    let c = creds(&["member"]);
    let target = json!({"project_id": "p1"});
    assert!(eval_with(
        "rule:is_member and rule:owner",
        target.clone(),
        &c,
        &rules
    ));
    assert!(!eval_with("rule:undefined or !", target, &c, &rules));
}

#[test]
fn rule_loop_is_cut_off_and_denies_instead_of_overflowing() {
    let rules = named(&[
        ("a", "rule:b"),
        ("b", "rule:a"),
        ("self", "@ and rule:self"),
    ]);
    let c = creds(&[]);
    assert!(!eval_with("rule:a", json!({}), &c, &rules));
    // Even under `not`, a loop denies the whole evaluation.
    assert!(!eval_with("not rule:self", json!({}), &c, &rules));
}

#[test]
fn deep_but_finite_rule_chain_is_followed() {
    let names: Vec<String> = (0..rules::MAX_RULE_DEPTH)
        .map(|i| format!("r{i}"))
        .collect();
    let mut defs: Vec<(String, String)> = names
        .windows(2)
        .map(|w| (w[0].clone(), format!("rule:{}", w[1])))
        .collect();
    defs.push((names[names.len() - 1].clone(), "@".into()));
    let pairs: Vec<(&str, &str)> = defs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    assert!(eval_with("rule:r0", json!({}), &creds(&[]), &named(&pairs)));
}

#[test]
fn malformed_rules_are_parse_errors() {
    for bad in [
        "(role:a",
        "role:a)",
        "role:a and",
        "or role:a",
        "role:a role:b",
        "not",
        "'quoted'",
        "()",
    ] {
        assert!(parse(bad).is_err(), "{bad:?} should not parse");
    }
}

#[test]
fn unparsable_rule_becomes_never() {
    assert_eq!(rules::parse_or_never("x", "role:a and"), Check::Never);
}

#[test]
fn check_without_kind_is_never_but_the_rule_still_parses() {
    assert_eq!(parse("nokind").expect("parses"), Check::Never);
    assert!(eval("nokind or @", json!({}), &[]));
}

#[test]
fn absurd_nesting_is_a_parse_error_not_a_stack_overflow() {
    let deep = format!("{}@{}", "(".repeat(10_000), ")".repeat(10_000));
    assert_eq!(parse(&deep), Err(ParseError::TooDeep));
    let nots = format!("{}@", "not ".repeat(10_000));
    assert_eq!(parse(&nots), Err(ParseError::TooDeep));
}

#[test]
fn parentheses_inside_a_check_stay_in_the_check() {
    assert_eq!(
        parse("(project_id:%(project_id)s)").expect("parses"),
        Check::Generic {
            kind: "project_id".into(),
            matcher: "%(project_id)s".into()
        }
    );
}

#[test]
fn legacy_list_syntax_ors_lists_of_anded_checks() {
    let list = vec![
        vec!["role:admin".to_owned()],
        vec![
            "role:member".to_owned(),
            "project_id:%(project_id)s".to_owned(),
        ],
    ];
    let check = parse_legacy_list(&list);
    let none = named(&[]);
    let eval_list = |roles: &[&str], project: &str| {
        let target = obj(json!({ "project_id": project }));
        check.evaluate(&EvalContext {
            target: &target,
            creds: &creds(roles),
            rules: &none,
        })
    };
    assert!(eval_list(&["admin"], "other"));
    assert!(eval_list(&["member"], "p1"));
    assert!(!eval_list(&["member"], "other"));
    assert_eq!(parse_legacy_list(&[]), Check::Always);
    assert_eq!(parse_legacy_list(&[vec![]]), Check::Never);
}

#[test]
fn display_renders_a_parseable_equivalent() {
    let check = parse("not role:a and (rule:b or x:%(y)s)").expect("parses");
    let text = check.to_string();
    assert_eq!(text, "(not role:a and (rule:b or x:%(y)s))");
    assert_eq!(parse(&text).expect("reparses"), check);
}
