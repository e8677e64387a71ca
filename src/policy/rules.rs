//! Parser and evaluator for the oslo.policy rule language.
//!
//! The grammar is the one oslo.policy's text parser accepts:
//!
//! * `@` always passes, `!` never passes, and an empty rule string passes.
//! * `role:<name>` passes if the credentials hold that role (case-insensitive).
//! * `rule:<name>` evaluates another named rule.
//! * `<key>:<value>` is a generic check. `<value>` may contain `%(field)s`, taken from the
//!   target. `<key>` is either a literal (`True`, `False`, `None`, an integer or a quoted
//!   string), compared with the value, or a dotted path into the credentials.
//! * `not`, `and`, `or` (any case) and parentheses, with `not` binding tighter than `and`,
//!   and `and` tighter than `or`.
//!
//! A rule that does not parse evaluates to "never" (see [`parse_or_never`]), as in oslo.

use std::fmt;
use std::iter::Peekable;
use std::vec::IntoIter;

use serde_json::{Map, Value};

/// How many `rule:` references may be followed in one evaluation before it is abandoned as
/// a loop. Exceeding it makes the whole evaluation deny.
pub const MAX_RULE_DEPTH: usize = 32;

/// How deeply parentheses and `not` may nest in a single rule string.
pub const MAX_NESTING: usize = 64;

/// A parsed rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// `@` or the empty rule.
    Always,
    /// `!`, and any rule that failed to parse.
    Never,
    /// `role:<template>`.
    Role(String),
    /// `rule:<name>`.
    Rule(String),
    /// `<kind>:<template>`.
    Generic { kind: String, matcher: String },
    /// `not <check>`.
    Not(Box<Check>),
    /// All of the checks.
    And(Vec<Check>),
    /// Any of the checks.
    Or(Vec<Check>),
}

/// Why a rule string could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("rule string is blank")]
    Blank,
    #[error("unexpected end of rule")]
    UnexpectedEnd,
    #[error("unexpected {0} in rule")]
    UnexpectedToken(String),
    #[error("rule nests parentheses or `not` deeper than {MAX_NESTING} levels")]
    TooDeep,
}

/// Named rules that a `rule:` check can refer to.
pub trait RuleSource {
    /// The parsed rule called `name`, if any.
    fn rule(&self, name: &str) -> Option<&Check>;
}

/// The inputs of one evaluation.
pub struct EvalContext<'a> {
    /// Attributes of the object acted on; substituted into `%(field)s`.
    pub target: &'a Map<String, Value>,
    /// Attributes of the caller; generic checks look their left side up here, and role
    /// checks read the `roles` array.
    pub creds: &'a Map<String, Value>,
    /// Where `rule:` references are resolved.
    pub rules: &'a dyn RuleSource,
}

/// Marker for an evaluation that followed too many `rule:` references.
#[derive(Debug)]
struct DepthExceeded;

impl Check {
    /// Evaluates the rule. A rule loop (more than [`MAX_RULE_DEPTH`] nested `rule:`
    /// references) logs a warning and yields `false`.
    pub fn evaluate(&self, ctx: &EvalContext<'_>) -> bool {
        match self.eval(ctx, 0) {
            Ok(verdict) => verdict,
            Err(DepthExceeded) => {
                tracing::warn!(
                    rule = %self,
                    "policy rule references nest deeper than {MAX_RULE_DEPTH}; \
                     probably a rule loop, denying"
                );
                false
            }
        }
    }

    fn eval(&self, ctx: &EvalContext<'_>, depth: usize) -> Result<bool, DepthExceeded> {
        Ok(match self {
            Check::Always => true,
            Check::Never => false,
            Check::Not(inner) => !inner.eval(ctx, depth)?,
            Check::And(items) => {
                for item in items {
                    if !item.eval(ctx, depth)? {
                        return Ok(false);
                    }
                }
                true
            }
            Check::Or(items) => {
                for item in items {
                    if item.eval(ctx, depth)? {
                        return Ok(true);
                    }
                }
                false
            }
            Check::Rule(name) => {
                if depth >= MAX_RULE_DEPTH {
                    return Err(DepthExceeded);
                }
                match ctx.rules.rule(name) {
                    Some(rule) => rule.eval(ctx, depth + 1)?,
                    None => {
                        tracing::debug!(rule = %name, "policy refers to an undefined rule");
                        false
                    }
                }
            }
            Check::Role(template) => match substitute(template, ctx.target) {
                Some(wanted) => has_role(ctx.creds, &wanted),
                None => false,
            },
            Check::Generic { kind, matcher } => match substitute(matcher, ctx.target) {
                Some(wanted) => match literal(kind) {
                    Some(lit) => lit == wanted,
                    None => {
                        let path: Vec<&str> = kind.split('.').collect();
                        find_in_map(ctx.creds, &path, &wanted)
                    }
                },
                None => false,
            },
        })
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn join(f: &mut fmt::Formatter<'_>, items: &[Check], sep: &str) -> fmt::Result {
            f.write_str("(")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(sep)?;
                }
                write!(f, "{item}")?;
            }
            f.write_str(")")
        }
        match self {
            Check::Always => f.write_str("@"),
            Check::Never => f.write_str("!"),
            Check::Role(m) => write!(f, "role:{m}"),
            Check::Rule(m) => write!(f, "rule:{m}"),
            Check::Generic { kind, matcher } => write!(f, "{kind}:{matcher}"),
            Check::Not(inner) => write!(f, "not {inner}"),
            Check::And(items) => join(f, items, " and "),
            Check::Or(items) => join(f, items, " or "),
        }
    }
}

/// Parses a rule string. The empty string is [`Check::Always`].
pub fn parse(rule: &str) -> Result<Check, ParseError> {
    if rule.is_empty() {
        return Ok(Check::Always);
    }
    let mut tokens = tokenize(rule).into_iter().peekable();
    if tokens.peek().is_none() {
        return Err(ParseError::Blank);
    }
    let check = parse_or(&mut tokens, 0)?;
    match tokens.next() {
        None => Ok(check),
        Some(tok) => Err(ParseError::UnexpectedToken(tok.describe())),
    }
}

/// Parses a rule string; on error, logs a warning naming `name` and returns
/// [`Check::Never`] (oslo.policy's behaviour).
pub fn parse_or_never(name: &str, rule: &str) -> Check {
    parse(rule).unwrap_or_else(|err| {
        tracing::warn!(rule = %name, text = %rule, error = %err, "cannot parse policy rule; it will always deny");
        Check::Never
    })
}

/// Builds a check from the legacy list-of-lists syntax: the outer list is OR-ed, each
/// inner list AND-ed, and each string is a single check (no `and`/`or`/`not`).
/// An empty outer list always passes; a list with only empty inner lists never does.
pub fn parse_legacy_list(rule: &[Vec<String>]) -> Check {
    if rule.is_empty() {
        return Check::Always;
    }
    let mut alternatives: Vec<Check> = rule
        .iter()
        .filter(|inner| !inner.is_empty())
        .map(|inner| {
            let mut all: Vec<Check> = inner.iter().map(|s| parse_single(s)).collect();
            if all.len() == 1 {
                all.remove(0)
            } else {
                Check::And(all)
            }
        })
        .collect();
    match alternatives.len() {
        0 => Check::Never,
        1 => alternatives.remove(0),
        _ => Check::Or(alternatives),
    }
}

enum Token {
    LParen,
    RParen,
    And,
    Or,
    Not,
    /// A bare quoted string: valid as a token, but no grammar rule accepts it.
    Quoted(String),
    Check(Check),
}

impl Token {
    fn describe(&self) -> String {
        match self {
            Token::LParen => "`(`".to_owned(),
            Token::RParen => "`)`".to_owned(),
            Token::And => "`and`".to_owned(),
            Token::Or => "`or`".to_owned(),
            Token::Not => "`not`".to_owned(),
            Token::Quoted(s) => format!("quoted string {s:?}"),
            Token::Check(c) => format!("check `{c}`"),
        }
    }
}

/// Splits on whitespace; leading `(` and trailing `)` of each word are separate tokens
/// (parentheses inside a word, as in `%(project_id)s`, stay in the check).
fn tokenize(rule: &str) -> Vec<Token> {
    let mut out = Vec::new();
    for word in rule.split_whitespace() {
        let rest = word.trim_start_matches('(');
        out.extend((0..word.len() - rest.len()).map(|_| Token::LParen));
        if rest.is_empty() {
            continue;
        }
        let core = rest.trim_end_matches(')');
        let closing = rest.len() - core.len();
        if core.eq_ignore_ascii_case("and") {
            out.push(Token::And);
        } else if core.eq_ignore_ascii_case("or") {
            out.push(Token::Or);
        } else if core.eq_ignore_ascii_case("not") {
            out.push(Token::Not);
        } else if !core.is_empty() {
            match strip_quotes(rest) {
                Some(inner) => out.push(Token::Quoted(inner.to_owned())),
                None => out.push(Token::Check(parse_single(core))),
            }
        }
        out.extend((0..closing).map(|_| Token::RParen));
    }
    out
}

/// Parses one check word (no operators).
fn parse_single(word: &str) -> Check {
    match word {
        "!" => return Check::Never,
        "@" => return Check::Always,
        _ => {}
    }
    let Some((kind, matcher)) = word.split_once(':') else {
        tracing::warn!(check = %word, "policy check has no `kind:` prefix; it will always deny");
        return Check::Never;
    };
    match kind {
        "rule" => Check::Rule(matcher.to_owned()),
        "role" => Check::Role(matcher.to_owned()),
        "http" | "https" => {
            tracing::warn!(check = %word, "remote http(s) policy checks are not supported; denying");
            Check::Never
        }
        _ => Check::Generic {
            kind: kind.to_owned(),
            matcher: matcher.to_owned(),
        },
    }
}

type Tokens = Peekable<IntoIter<Token>>;

fn parse_or(tokens: &mut Tokens, nesting: usize) -> Result<Check, ParseError> {
    let mut items = vec![parse_and(tokens, nesting)?];
    while matches!(tokens.peek(), Some(Token::Or)) {
        tokens.next();
        items.push(parse_and(tokens, nesting)?);
    }
    Ok(collapse(items, Check::Or))
}

fn parse_and(tokens: &mut Tokens, nesting: usize) -> Result<Check, ParseError> {
    let mut items = vec![parse_unary(tokens, nesting)?];
    while matches!(tokens.peek(), Some(Token::And)) {
        tokens.next();
        items.push(parse_unary(tokens, nesting)?);
    }
    Ok(collapse(items, Check::And))
}

fn parse_unary(tokens: &mut Tokens, nesting: usize) -> Result<Check, ParseError> {
    if nesting >= MAX_NESTING {
        return Err(ParseError::TooDeep);
    }
    match tokens.next() {
        None => Err(ParseError::UnexpectedEnd),
        Some(Token::Not) => Ok(Check::Not(Box::new(parse_unary(tokens, nesting + 1)?))),
        Some(Token::LParen) => {
            let inner = parse_or(tokens, nesting + 1)?;
            match tokens.next() {
                Some(Token::RParen) => Ok(inner),
                Some(other) => Err(ParseError::UnexpectedToken(other.describe())),
                None => Err(ParseError::UnexpectedEnd),
            }
        }
        Some(Token::Check(check)) => Ok(check),
        Some(other) => Err(ParseError::UnexpectedToken(other.describe())),
    }
}

fn collapse(mut items: Vec<Check>, build: fn(Vec<Check>) -> Check) -> Check {
    if items.len() == 1 {
        items.remove(0)
    } else {
        build(items)
    }
}

fn strip_quotes(s: &str) -> Option<&str> {
    let quote = s.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    if s.len() >= 2 && s.ends_with(quote) {
        Some(&s[1..s.len() - 1])
    } else {
        None
    }
}

/// The string form of a generic check's left side when it is a literal (what Python's
/// `str(ast.literal_eval(kind))` gives), or `None` when it is a credential path.
fn literal(kind: &str) -> Option<String> {
    match kind {
        "True" | "False" | "None" => return Some(kind.to_owned()),
        _ => {}
    }
    if let Some(inner) = strip_quotes(kind) {
        let quote = &kind[..1];
        if !inner.contains(quote) && !inner.contains('\\') {
            return Some(inner.to_owned());
        }
        return None;
    }
    let digits = kind.strip_prefix(['-', '+']).unwrap_or(kind);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return kind.parse::<i128>().ok().map(|n| n.to_string());
    }
    None
}

/// Python's `str()` of a JSON scalar; `None` for null, arrays and objects (which never
/// match: see the module documentation of `policy`).
fn scalar_str(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(true) => Some("True".to_owned()),
        Value::Bool(false) => Some("False".to_owned()),
        Value::Number(n) => Some(n.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// Expands `%(key)s` from `target` and `%%` to `%`, as Python's `template % target`.
/// Returns `None` when a key is missing or null, or the template uses any other `%` form.
pub fn substitute(template: &str, target: &Map<String, Value>) -> Option<String> {
    if !template.contains('%') {
        return Some(template.to_owned());
    }
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(pos) = rest.find('%') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('%') {
            out.push('%');
            rest = tail;
        } else if let Some(named) = after.strip_prefix('(') {
            let close = named.find(')')?;
            let key = &named[..close];
            rest = named[close + 1..].strip_prefix('s')?;
            out.push_str(&scalar_str(target.get(key)?)?);
        } else {
            return None;
        }
    }
    out.push_str(rest);
    Some(out)
}

fn has_role(creds: &Map<String, Value>, wanted: &str) -> bool {
    let wanted = wanted.to_lowercase();
    match creds.get("roles") {
        Some(Value::Array(roles)) => roles
            .iter()
            .filter_map(Value::as_str)
            .any(|r| r.to_lowercase() == wanted),
        _ => false,
    }
}

fn find_in_map(map: &Map<String, Value>, path: &[&str], wanted: &str) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return false;
    };
    match map.get(*first) {
        Some(Value::Array(items)) => items.iter().any(|v| find_in_value(v, rest, wanted)),
        Some(value) => find_in_value(value, rest, wanted),
        None => false,
    }
}

fn find_in_value(value: &Value, path: &[&str], wanted: &str) -> bool {
    if path.is_empty() {
        return scalar_str(value).is_some_and(|s| s == wanted);
    }
    match value {
        Value::Object(map) => find_in_map(map, path, wanted),
        _ => false,
    }
}
