//! The rule set: registered defaults, operator overrides and enforcement.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_yaml_ng::Value as Yaml;

use super::defaults::{self, RuleDefault, ScopeType};
use super::rules::{self, Check, EvalContext, RuleSource};
use super::{Credentials, DenyReason, PolicyDenied, PolicyError, Target};

/// The rule used for actions and `rule:` references that name no rule, when it exists
/// (oslo.policy's `policy_default_rule`).
pub const DEFAULT_RULE: &str = "default";

/// The rule Magnum evaluates to decide whether a request context is an admin one.
const CONTEXT_IS_ADMIN: &str = "context_is_admin";

/// A set of named rules: registered defaults plus operator overrides. Immutable while
/// enforcing, so it can be shared behind an `Arc`.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    entries: Vec<Entry>,
    index: HashMap<String, usize>,
}

#[derive(Clone, Debug)]
struct Entry {
    name: String,
    registered: Option<&'static RuleDefault>,
    text: String,
    check: Check,
    overridden: bool,
    valid: bool,
}

/// One rule as currently in force, for listing and sample generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EffectiveRule<'a> {
    pub name: &'a str,
    /// The rule string in force (the override if there is one).
    pub rule: &'a str,
    /// From the registered default; empty for unregistered rules.
    pub scope_types: &'static [ScopeType],
    /// From the registered default; empty for unregistered rules and base rules.
    pub description: &'static str,
    /// The registered default rule string; `None` for rules only an override defines.
    pub default_rule: Option<&'static str>,
    /// Whether an override replaced or added this rule.
    pub overridden: bool,
    /// Whether the rule string parsed (an unparsable rule always denies).
    pub valid: bool,
}

impl RuleSource for Policy {
    fn rule(&self, name: &str) -> Option<&Check> {
        self.entry(name).map(|e| &e.check)
    }
}

impl Policy {
    /// A policy with the given registered rules and no overrides.
    pub fn new(registered: impl IntoIterator<Item = &'static RuleDefault>) -> Self {
        let mut policy = Self::default();
        for default in registered {
            let parsed = parse_logged(default.name, default.check_str);
            policy.put(default.name, default.check_str.to_owned(), parsed, false);
            if let Some(entry) = policy.entry_mut(default.name) {
                entry.registered = Some(default);
            }
        }
        policy
    }

    /// Magnum's registered rules ([`defaults::magnum`]).
    pub fn magnum_defaults() -> Self {
        Self::new(defaults::magnum())
    }

    /// Magnum's defaults with the overrides from the `policy.yaml`/`policy.json` at `path`.
    pub fn with_overrides_file(path: impl AsRef<Path>) -> Result<Self, PolicyError> {
        let mut policy = Self::magnum_defaults();
        policy.load_overrides_file(path)?;
        Ok(policy)
    }

    /// Applies the overrides in the file at `path`. Returns how many rules it set.
    pub fn load_overrides_file(&mut self, path: impl AsRef<Path>) -> Result<usize, PolicyError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Io {
            path: path.to_owned(),
            source,
        })?;
        self.apply_overrides(&text)
            .map_err(|source| PolicyError::File {
                path: path.to_owned(),
                source: Box::new(source),
            })
    }

    /// Applies a YAML (or JSON) mapping of rule name to rule string. Values may also use
    /// the legacy list-of-lists syntax. Unknown names are added. An empty document sets
    /// nothing. On error nothing is changed. Returns how many rules it set.
    ///
    /// A rule string that does not parse is not an error: it is stored, logged, and
    /// always denies (as in oslo.policy).
    pub fn apply_overrides(&mut self, text: &str) -> Result<usize, PolicyError> {
        let doc: Yaml = serde_yaml_ng::from_str(text)?;
        let mapping = match doc {
            Yaml::Null => return Ok(0),
            Yaml::Mapping(m) => m,
            _ => return Err(PolicyError::NotAMapping),
        };
        let mut parsed = Vec::with_capacity(mapping.len());
        for (key, value) in mapping {
            let Yaml::String(name) = key else {
                return Err(PolicyError::NonStringName);
            };
            let (text, parsed_rule) = match value {
                Yaml::String(s) => {
                    let parsed = parse_logged(&name, &s);
                    (s, parsed)
                }
                Yaml::Sequence(seq) => match legacy_list(&seq) {
                    Some(list) => {
                        let text = serde_json::to_string(&list).unwrap_or_default();
                        (text, (rules::parse_legacy_list(&list), true))
                    }
                    None => return Err(PolicyError::InvalidRuleValue { name }),
                },
                _ => return Err(PolicyError::InvalidRuleValue { name }),
            };
            parsed.push((name, text, parsed_rule));
        }
        let count = parsed.len();
        for (name, text, parsed) in parsed {
            self.put(&name, text, parsed, true);
        }
        Ok(count)
    }

    /// Replaces or adds one rule, as an override would.
    pub fn set_rule(&mut self, name: &str, rule: &str) {
        let parsed = parse_logged(name, rule);
        self.put(name, rule.to_owned(), parsed, true);
    }

    fn put(&mut self, name: &str, text: String, parsed: (Check, bool), overridden: bool) {
        let (check, valid) = parsed;
        match self.entry_mut(name) {
            Some(entry) => {
                entry.text = text;
                entry.check = check;
                entry.overridden = overridden;
                entry.valid = valid;
            }
            None => {
                self.index.insert(name.to_owned(), self.entries.len());
                self.entries.push(Entry {
                    name: name.to_owned(),
                    registered: None,
                    text,
                    check,
                    overridden,
                    valid,
                });
            }
        }
    }

    fn entry_mut(&mut self, name: &str) -> Option<&mut Entry> {
        let &i = self.index.get(name)?;
        self.entries.get_mut(i)
    }

    /// The rule called `name`, or the `default` rule when there is none of that name.
    fn entry(&self, name: &str) -> Option<&Entry> {
        self.index
            .get(name)
            .or_else(|| self.index.get(DEFAULT_RULE))
            .and_then(|&i| self.entries.get(i))
    }

    /// Checks whether `creds` may perform `action` on `target`.
    ///
    /// Denies when the action's registered `scope_types` do not include the token's scope,
    /// when its rule evaluates to false, and when no rule of that name (nor a `default`
    /// rule) exists.
    pub fn enforce(
        &self,
        action: &str,
        target: &Target,
        creds: &Credentials,
    ) -> Result<(), PolicyDenied> {
        let deny = |reason| {
            tracing::debug!(%action, ?reason, "policy denied");
            Err(PolicyDenied {
                action: action.to_owned(),
                reason,
            })
        };
        let Some(entry) = self.entry(action) else {
            tracing::warn!(%action, "policy check for an action with no rule; denying");
            return deny(DenyReason::NotRegistered);
        };
        if let Some(registered) = entry.registered.filter(|_| entry.name == action) {
            let scope = creds.token_scope();
            if !registered.scope_types.is_empty() && !registered.scope_types.contains(&scope) {
                return deny(DenyReason::InvalidScope);
            }
        }
        let creds_map = creds.to_policy_values();
        let ctx = EvalContext {
            target: target.as_map(),
            creds: &creds_map,
            rules: self,
        };
        if entry.check.evaluate(&ctx) {
            Ok(())
        } else {
            deny(DenyReason::NotAuthorized)
        }
    }

    /// [`Policy::enforce`] as a boolean.
    pub fn is_allowed(&self, action: &str, target: &Target, creds: &Credentials) -> bool {
        self.enforce(action, target, creds).is_ok()
    }

    /// Evaluates `context_is_admin` against an empty target, which is how Magnum decides
    /// the request context's `is_admin` (default: `role:admin`).
    pub fn is_admin(&self, creds: &Credentials) -> bool {
        self.is_allowed(CONTEXT_IS_ADMIN, &Target::new(), creds)
    }

    /// Whether a rule called `name` exists (registered or added by an override).
    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// The rule called `name` as currently in force.
    pub fn get(&self, name: &str) -> Option<EffectiveRule<'_>> {
        self.index
            .get(name)
            .and_then(|&i| self.entries.get(i))
            .map(Entry::effective)
    }

    /// Every rule, registered ones first in registration order, then added ones in the
    /// order they were added.
    pub fn effective_rules(&self) -> impl Iterator<Item = EffectiveRule<'_>> {
        self.entries.iter().map(Entry::effective)
    }

    /// A commented-out `policy.yaml` listing the registered defaults, in the format of
    /// `oslopolicy-sample-generator` (overrides are not reflected).
    pub fn sample_yaml(&self) -> String {
        let mut out = String::new();
        for default in self.entries.iter().filter_map(|e| e.registered) {
            write_wrapped_comment(&mut out, default.description);
            for op in default.operations {
                let _ = writeln!(out, "# {}  {}", op.method, op.path);
            }
            if !default.scope_types.is_empty() {
                let scopes: Vec<&str> = default.scope_types.iter().map(|s| s.as_str()).collect();
                let _ = writeln!(out, "# Intended scope(s): {}", scopes.join(", "));
            }
            let _ = writeln!(
                out,
                "#{}: {}\n",
                quote(default.name),
                quote(default.check_str)
            );
        }
        out
    }

    /// An uncommented `policy.yaml` of every rule in force, like
    /// `oslopolicy-policy-generator`.
    pub fn effective_yaml(&self) -> String {
        let mut out = String::new();
        for rule in self.effective_rules() {
            let _ = writeln!(out, "{}: {}", quote(rule.name), quote(rule.rule));
        }
        out
    }
}

impl Entry {
    fn effective(&self) -> EffectiveRule<'_> {
        EffectiveRule {
            name: &self.name,
            rule: &self.text,
            scope_types: self.registered.map_or(&[], |d| d.scope_types),
            description: self.registered.map_or("", |d| d.description),
            default_rule: self.registered.map(|d| d.check_str),
            overridden: self.overridden,
            valid: self.valid,
        }
    }
}

/// Parses a rule string; on error logs a warning and yields an always-denying rule.
fn parse_logged(name: &str, text: &str) -> (Check, bool) {
    match rules::parse(text) {
        Ok(check) => (check, true),
        Err(err) => {
            tracing::warn!(rule = %name, text = %text, error = %err, "cannot parse policy rule; it will always deny");
            (Check::Never, false)
        }
    }
}

/// Writes `text` as `# ` comment lines wrapped at 70 columns, like the sample generator.
fn write_wrapped_comment(out: &mut String, text: &str) {
    const WIDTH: usize = 70;
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && 2 + line.len() + 1 + word.len() > WIDTH {
            let _ = writeln!(out, "# {line}");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        let _ = writeln!(out, "# {line}");
    }
}

/// A YAML double-quoted scalar (JSON string syntax is valid YAML).
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// Reads the legacy list-of-lists syntax: each element a string or a list of strings.
fn legacy_list(seq: &[Yaml]) -> Option<Vec<Vec<String>>> {
    seq.iter()
        .map(|item| match item {
            Yaml::String(s) => Some(vec![s.clone()]),
            Yaml::Sequence(inner) => inner
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => None,
        })
        .collect()
}
