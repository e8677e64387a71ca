//! A small reader for Python literals (`ast.literal_eval` of dicts, lists, strings, numbers,
//! `True`/`False`/`None`): the CLI sends `/labels`, `/node_labels` and `/node_taints` patch
//! values as Python-literal strings such as `"{'a': 'b'}"`.

use serde_json::{Map, Number, Value};

/// Parses a Python literal into JSON, or `None` when it is not one.
pub fn parse(src: &str) -> Option<Value> {
    let mut p = Parser {
        s: src.as_bytes(),
        i: 0,
        depth: 0,
    };
    let v = p.value()?;
    p.ws();
    (p.i == p.s.len()).then_some(v)
}

/// Why `ast.literal_eval` refuses `src`, in Python's words where they can be told without
/// Python's parser: an unclosed or unmatched bracket, an unterminated string, else a syntax
/// error; text that is valid Python but no literal (a name, a call) is `malformed node or
/// string` (Python adds the node's repr with its memory address, which cannot be matched).
pub fn refusal(src: &str) -> String {
    let mut stack: Vec<char> = Vec::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in src.chars() {
        if let Some(q) = quote {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                c if c == q => quote = None,
                _ => {}
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '{' | '[' | '(' => stack.push(c),
            '}' | ']' | ')' => {
                let open = match c {
                    '}' => '{',
                    ']' => '[',
                    _ => '(',
                };
                match stack.pop() {
                    Some(o) if o == open => {}
                    Some(o) => {
                        return format!(
                            "closing parenthesis '{c}' does not match opening parenthesis '{o}' (<unknown>, line 1)"
                        )
                    }
                    None => return format!("unmatched '{c}' (<unknown>, line 1)"),
                }
            }
            _ => {}
        }
    }
    if quote.is_some() {
        return "unterminated string literal (detected at line 1) (<unknown>, line 1)".into();
    }
    if let Some(o) = stack.last() {
        return format!("'{o}' was never closed (<unknown>, line 1)");
    }
    let t = src.trim();
    if !t.is_empty() && t.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return "malformed node or string on line 1".into();
    }
    "invalid syntax (<unknown>, line 1)".into()
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

const MAX_DEPTH: usize = 32;

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Option<Value> {
        self.ws();
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        let v = match self.peek()? {
            b'{' => self.dict(),
            b'[' => self.seq(b'[', b']'),
            b'(' => self.seq(b'(', b')'),
            b'\'' | b'"' => self.string().map(Value::String),
            _ => self.atom(),
        };
        self.depth -= 1;
        v
    }

    fn dict(&mut self) -> Option<Value> {
        self.i += 1;
        let mut m = Map::new();
        loop {
            if self.eat(b'}') {
                return Some(Value::Object(m));
            }
            let k = match self.value()? {
                Value::String(s) => s,
                other => other.to_string(),
            };
            if !self.eat(b':') {
                return None;
            }
            let v = self.value()?;
            m.insert(k, v);
            if !self.eat(b',') {
                return self.eat(b'}').then_some(Value::Object(m));
            }
        }
    }

    fn seq(&mut self, open: u8, close: u8) -> Option<Value> {
        debug_assert_eq!(self.peek(), Some(open));
        self.i += 1;
        let mut v = Vec::new();
        loop {
            if self.eat(close) {
                return Some(Value::Array(v));
            }
            v.push(self.value()?);
            if !self.eat(b',') {
                return self.eat(close).then_some(Value::Array(v));
            }
        }
    }

    fn string(&mut self) -> Option<String> {
        let quote = self.peek()?;
        self.i += 1;
        let mut out = Vec::new();
        while let Some(c) = self.peek() {
            self.i += 1;
            if c == quote {
                return String::from_utf8(out).ok();
            }
            if c == b'\\' {
                let e = self.peek()?;
                self.i += 1;
                out.push(match e {
                    b'n' => b'\n',
                    b't' => b'\t',
                    b'r' => b'\r',
                    other => other,
                });
            } else {
                out.push(c);
            }
        }
        None
    }

    fn atom(&mut self) -> Option<Value> {
        let start = self.i;
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_alphanumeric()
                || matches!(self.s[self.i], b'.' | b'-' | b'+' | b'_'))
        {
            self.i += 1;
        }
        let word = std::str::from_utf8(&self.s[start..self.i]).ok()?;
        match word {
            "True" => Some(Value::Bool(true)),
            "False" => Some(Value::Bool(false)),
            "None" => Some(Value::Null),
            _ => {
                if let Ok(n) = word.parse::<i64>() {
                    Some(Value::Number(n.into()))
                } else {
                    word.parse::<f64>()
                        .ok()
                        .and_then(Number::from_f64)
                        .map(Value::Number)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_read_as_pythons() {
        assert_eq!(
            refusal("{'a': "),
            "'{' was never closed (<unknown>, line 1)"
        );
        assert_eq!(
            refusal("{'a': 1]"),
            "closing parenthesis ']' does not match opening parenthesis '{' (<unknown>, line 1)"
        );
        assert_eq!(
            refusal("'abc"),
            "unterminated string literal (detected at line 1) (<unknown>, line 1)"
        );
        assert_eq!(refusal("abc"), "malformed node or string on line 1");
        assert_eq!(refusal("{'a': : 1}"), "invalid syntax (<unknown>, line 1)");
    }
    use serde_json::json;

    #[test]
    fn reads_what_the_cli_sends() {
        assert_eq!(parse("{'a': 'b', 'n': 1}"), Some(json!({"a": "b", "n": 1})));
        assert_eq!(
            parse("[{'key': 'k', 'value': '', 'effect': 'NoSchedule'}]"),
            Some(json!([{"key": "k", "value": "", "effect": "NoSchedule"}]))
        );
        assert_eq!(parse("{}"), Some(json!({})));
        assert_eq!(parse("True"), Some(json!(true)));
    }

    #[test]
    fn refuses_what_is_not_a_literal() {
        assert_eq!(parse("{'a': }"), None);
        assert_eq!(parse("__import__('os')"), None);
        assert_eq!(parse(&"[".repeat(100)), None);
    }
}
