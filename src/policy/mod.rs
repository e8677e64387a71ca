//! An oslo.policy-compatible policy engine carrying Magnum's default rules.
//!
//! * [`Policy::magnum_defaults`] registers Magnum's rules ([`defaults::magnum`]).
//! * [`Policy::apply_overrides`] / [`Policy::with_overrides_file`] read an operator's
//!   `policy.yaml` (or JSON) that replaces single rules or adds new ones.
//! * [`Policy::enforce`] checks an action against a [`Target`] and [`Credentials`], with
//!   oslo's `enforce_scope=True` behaviour: a rule registered with `scope_types` denies a
//!   token of another scope.
//!
//! Differences from oslo.policy, all of them failing closed:
//!
//! * A missing value never matches. oslo turns Python `None` into the string `"None"`, so
//!   `project_id:%(project_id)s` passed for an unscoped token against a target whose
//!   `project_id` was also `None`; here absent credentials and null target fields do not
//!   match anything.
//! * A rule loop (or more than [`rules::MAX_RULE_DEPTH`] nested `rule:` references) denies,
//!   where oslo overflowed Python's recursion limit.
//! * `http:`/`https:` remote checks are not supported and deny.
//! * `%` formats other than `%(name)s` and `%%` deny instead of raising.
//!
//! As in oslo, an action or `rule:` reference that names no rule falls back to a rule
//! called `default` when one exists (oslo's `policy_default_rule`); Magnum registers none.

pub mod defaults;
mod enforcer;
pub mod rules;

#[cfg(test)]
mod tests_engine;
#[cfg(test)]
mod tests_rules;

use std::path::PathBuf;

use serde_json::{Map, Value};

pub use defaults::{Operation, RuleDefault, ScopeType};
pub use enforcer::{EffectiveRule, Policy, DEFAULT_RULE};
pub use rules::{Check, ParseError};

/// Who is making the request, as keystonemiddleware describes them.
///
/// Generic checks find these by name: `user_id`, `project_id`, `domain_id` (also as
/// `user_domain_id`), `project_domain_id`, `system_scope` (also as `system`), `roles` and
/// `is_admin`. There is no token in here, so `Debug` is safe to log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Credentials {
    pub user_id: Option<String>,
    pub project_id: Option<String>,
    /// The user's domain.
    pub domain_id: Option<String>,
    pub project_domain_id: Option<String>,
    pub roles: Vec<String>,
    /// `Some("all")` for a system-scoped token.
    pub system_scope: Option<String>,
    /// The domain id of a domain-scoped token.
    pub domain_scope: Option<String>,
    /// Magnum sets this from [`Policy::is_admin`] when it builds the request context.
    pub is_admin: bool,
}

impl Credentials {
    /// The scope of the token these credentials came from: `System` when `system_scope` is
    /// set, `Domain` for a domain-scoped token, otherwise `Project`.
    pub fn token_scope(&self) -> ScopeType {
        match (self.system_scope.as_deref(), self.domain_scope.as_deref()) {
            (Some(s), _) if !s.is_empty() => ScopeType::System,
            (_, Some(d)) if !d.is_empty() => ScopeType::Domain,
            _ => ScopeType::Project,
        }
    }

    /// The credentials as the key/value map generic checks look into.
    pub fn to_policy_values(&self) -> Map<String, Value> {
        let mut map = Map::new();
        let mut put = |key: &str, value: &Option<String>| {
            if let Some(v) = value {
                map.insert(key.to_owned(), Value::String(v.clone()));
            }
        };
        put("user_id", &self.user_id);
        put("project_id", &self.project_id);
        put("domain_id", &self.domain_id);
        put("user_domain_id", &self.domain_id);
        put("project_domain_id", &self.project_domain_id);
        put("system_scope", &self.system_scope);
        put("system", &self.system_scope);
        map.insert(
            "roles".to_owned(),
            Value::Array(self.roles.iter().cloned().map(Value::String).collect()),
        );
        map.insert("is_admin".to_owned(), Value::Bool(self.is_admin));
        map
    }
}

/// Attributes of the object acted on, substituted into `%(field)s` in rules.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Target {
    fields: Map<String, Value>,
}

impl Target {
    /// An empty target: every `%(field)s` check fails.
    pub fn new() -> Self {
        Self::default()
    }

    /// `{"project_id": .., "user_id": ..}`, the target Magnum builds from a resource.
    pub fn for_project(project_id: impl Into<String>, user_id: impl Into<String>) -> Self {
        Self::new()
            .with("project_id", project_id.into())
            .with("user_id", user_id.into())
    }

    /// Magnum's target when a call passes none: the caller's own project and user, so
    /// `project_id:%(project_id)s` holds for any project-scoped caller. Absent ids are
    /// left out, so checks on them fail.
    pub fn for_credentials(creds: &Credentials) -> Self {
        let mut target = Self::new();
        if let Some(p) = &creds.project_id {
            target.insert("project_id", p.clone());
        }
        if let Some(u) = &creds.user_id {
            target.insert("user_id", u.clone());
        }
        target
    }

    /// Adds or replaces a field (builder form).
    pub fn with(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.insert(key, value);
        self
    }

    /// Adds or replaces a field.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<Value>) {
        self.fields.insert(key.into(), value.into());
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }

    pub fn as_map(&self) -> &Map<String, Value> {
        &self.fields
    }
}

impl From<Map<String, Value>> for Target {
    fn from(fields: Map<String, Value>) -> Self {
        Self { fields }
    }
}

/// Errors loading policy overrides.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("cannot read policy file {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("policy file {path}: {source}")]
    File {
        path: PathBuf,
        #[source]
        source: Box<PolicyError>,
    },
    #[error("policy overrides are not valid YAML or JSON: {0}")]
    Syntax(#[from] serde_yaml_ng::Error),
    #[error("policy overrides must be a mapping of rule name to rule string")]
    NotAMapping,
    #[error("policy overrides contain a rule name that is not a string")]
    NonStringName,
    #[error("policy rule {name:?} must be a rule string or a list of lists of check strings")]
    InvalidRuleValue { name: String },
}

/// Why an action was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DenyReason {
    /// The rule evaluated to false.
    NotAuthorized,
    /// The token's scope is not among the rule's `scope_types`.
    InvalidScope,
    /// No rule of that name exists (and no `default` rule either).
    NotRegistered,
}

/// A refused action. `Display` is Magnum's 403 message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Policy doesn't allow {action} to be performed.")]
pub struct PolicyDenied {
    pub action: String,
    pub reason: DenyReason,
}
