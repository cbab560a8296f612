//! The JSONPath dialect of Kubernetes (client-go's `util/jsonpath`) as far as a printer column needs it: what a
//! CRD's `additionalPrinterColumns[].jsonPath` may say, evaluated to its first match.
//!
//! Supported: `.field` (a `\.` inside a name is a literal dot), `['field']` / `["field"]`, `[n]` (negative from the
//! end), `[start:end]`, `[*]` / `.*`, `..field` (recursive descent) and filters `[?(@.path)]`,
//! `[?(@.path OP literal)]` with `==`, `!=`, `<`, `<=`, `>`, `>=` and a string, number or boolean literal. A
//! leading `$` and surrounding `{…}` are accepted.

use std::cmp::Ordering;

use serde_json::Value;

/// A parsed path. Compares equal by its text.
#[derive(Clone, Debug)]
pub(crate) struct JsonPath {
    text: String,
    steps: Vec<Step>,
}

impl PartialEq for JsonPath {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for JsonPath {}

#[derive(Clone, Debug, PartialEq)]
enum Step {
    Field(String),
    /// `..name`: every `name` field at any depth.
    Descend(String),
    Index(i64),
    Slice(Option<i64>, Option<i64>),
    All,
    Filter(Filter),
}

#[derive(Clone, Debug, PartialEq)]
struct Filter {
    /// The path below `@`.
    path: Vec<Step>,
    /// `None`: the path exists (and is not null or false).
    compare: Option<(Op, Value)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl JsonPath {
    /// Parses `text`; the error says what is wrong and where.
    pub(crate) fn parse(text: &str) -> Result<JsonPath, String> {
        let inner = text.trim();
        let inner = inner
            .strip_prefix('{')
            .and_then(|s| s.strip_suffix('}'))
            .unwrap_or(inner);
        let inner = inner.strip_prefix('$').unwrap_or(inner);
        let mut p = Parser {
            s: inner.as_bytes(),
            at: 0,
            depth: 0,
        };
        let steps = p.steps(false).map_err(|e| format!("invalid JSONPath {text:?}: {e}"))?;
        Ok(JsonPath {
            text: text.to_owned(),
            steps,
        })
    }

    /// The path as written.
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// The first value the path finds in `root`.
    pub(crate) fn first<'v>(&self, root: &'v Value) -> Option<&'v Value> {
        eval(&self.steps, root).into_iter().next()
    }
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
    /// Filters open around the current position (bounded: a path comes from a client).
    depth: usize,
}

/// Most filters nested in one another.
const MAX_DEPTH: usize = 16;

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn skip_spaces(&mut self) {
        while self.peek() == Some(b' ') {
            self.at += 1;
        }
    }

    /// Steps until the end, or (`in_filter`) until an operator or `)`.
    fn steps(&mut self, in_filter: bool) -> Result<Vec<Step>, String> {
        let mut steps = Vec::new();
        loop {
            match self.peek() {
                None => break,
                Some(b' ' | b')' | b'=' | b'!' | b'<' | b'>') if in_filter => break,
                Some(b'.') => {
                    self.at += 1;
                    if self.eat(b'.') {
                        let name = self.name();
                        if name.is_empty() {
                            return Err(format!("a name must follow '..' at {}", self.at));
                        }
                        steps.push(Step::Descend(name));
                    } else if self.eat(b'*') {
                        steps.push(Step::All);
                    } else {
                        let name = self.name();
                        // A lone trailing "." (the path ".") names the root.
                        if !name.is_empty() {
                            steps.push(Step::Field(name));
                        } else if self.peek().is_some() && self.peek() != Some(b'[') {
                            return Err(format!("unexpected {:?} at {}", self.peek().map(char::from), self.at));
                        }
                    }
                }
                Some(b'[') => {
                    self.at += 1;
                    steps.push(self.bracket()?);
                }
                Some(c) => return Err(format!("unexpected {:?} at {}", char::from(c), self.at)),
            }
        }
        Ok(steps)
    }

    /// A field name after `.`: up to an unescaped `.` or `[` (or, in a filter, a space, operator or `)`).
    fn name(&mut self) -> String {
        let mut out = Vec::new();
        while let Some(c) = self.peek() {
            match c {
                b'\\' if self.s.get(self.at + 1).is_some() => {
                    out.push(self.s[self.at + 1]);
                    self.at += 2;
                }
                b'.' | b'[' | b' ' | b')' | b'=' | b'!' | b'<' | b'>' => break,
                _ => {
                    out.push(c);
                    self.at += 1;
                }
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    fn quoted(&mut self) -> Result<String, String> {
        let quote = self.peek().ok_or("unterminated string")?;
        self.at += 1;
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None => return Err("unterminated string".into()),
                Some(b'\\') if self.s.get(self.at + 1).is_some() => {
                    out.push(self.s[self.at + 1]);
                    self.at += 2;
                }
                Some(c) if c == quote => {
                    self.at += 1;
                    return Ok(String::from_utf8_lossy(&out).into_owned());
                }
                Some(c) => {
                    out.push(c);
                    self.at += 1;
                }
            }
        }
    }

    fn number(&mut self) -> Option<i64> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        std::str::from_utf8(&self.s[start..self.at]).ok()?.parse().ok()
    }

    /// What follows `[`, through `]`.
    fn bracket(&mut self) -> Result<Step, String> {
        self.skip_spaces();
        let step = match self.peek() {
            Some(b'\'' | b'"') => Step::Field(self.quoted()?),
            Some(b'*') => {
                self.at += 1;
                Step::All
            }
            Some(b'?') => {
                self.at += 1;
                if !self.eat(b'(') {
                    return Err(format!("'(' must follow '?' at {}", self.at));
                }
                self.skip_spaces();
                if !self.eat(b'@') {
                    return Err(format!("a filter starts with '@' at {}", self.at));
                }
                if self.depth >= MAX_DEPTH {
                    return Err(format!("filters nested more than {MAX_DEPTH} deep at {}", self.at));
                }
                self.depth += 1;
                let path = self.steps(true);
                self.depth -= 1;
                let path = path?;
                self.skip_spaces();
                let compare = if self.peek() == Some(b')') {
                    None
                } else {
                    let op = self.op()?;
                    self.skip_spaces();
                    Some((op, self.literal()?))
                };
                self.skip_spaces();
                if !self.eat(b')') {
                    return Err(format!("')' expected at {}", self.at));
                }
                Step::Filter(Filter { path, compare })
            }
            _ => {
                let start = if self.peek() == Some(b':') { None } else { self.number() };
                self.skip_spaces();
                if self.eat(b':') {
                    self.skip_spaces();
                    let end = if self.peek() == Some(b']') { None } else { self.number() };
                    Step::Slice(start, end)
                } else {
                    Step::Index(start.ok_or_else(|| format!("an index, name, '*' or filter expected at {}", self.at))?)
                }
            }
        };
        self.skip_spaces();
        if !self.eat(b']') {
            return Err(format!("']' expected at {}", self.at));
        }
        Ok(step)
    }

    fn op(&mut self) -> Result<Op, String> {
        let two = self.s.get(self.at..self.at + 2).unwrap_or_default();
        let (op, len) = match two {
            b"==" => (Op::Eq, 2),
            b"!=" => (Op::Ne, 2),
            b"<=" => (Op::Le, 2),
            b">=" => (Op::Ge, 2),
            [b'<', ..] => (Op::Lt, 1),
            [b'>', ..] => (Op::Gt, 1),
            _ => return Err(format!("a comparison expected at {}", self.at)),
        };
        self.at += len;
        Ok(op)
    }

    fn literal(&mut self) -> Result<Value, String> {
        match self.peek() {
            Some(b'\'' | b'"') => Ok(Value::String(self.quoted()?)),
            _ => {
                let start = self.at;
                while self.peek().is_some_and(|c| c != b')' && c != b' ') {
                    self.at += 1;
                }
                let word = std::str::from_utf8(&self.s[start..self.at]).unwrap_or("");
                match word {
                    "true" => Ok(Value::Bool(true)),
                    "false" => Ok(Value::Bool(false)),
                    _ => serde_json::from_str::<serde_json::Number>(word)
                        .map(Value::Number)
                        .map_err(|_| format!("a literal expected at {start}")),
                }
            }
        }
    }
}

fn eval<'v>(steps: &[Step], root: &'v Value) -> Vec<&'v Value> {
    let mut current = vec![root];
    for step in steps {
        let mut next = Vec::new();
        for v in current {
            apply(step, v, &mut next);
        }
        current = next;
    }
    current
}

fn apply<'v>(step: &Step, v: &'v Value, out: &mut Vec<&'v Value>) {
    match (step, v) {
        (Step::Field(name), Value::Object(m)) => out.extend(m.get(name)),
        (Step::Descend(name), _) => descend(name, v, out),
        (Step::Index(i), Value::Array(a)) => out.extend(resolve(*i, a.len()).and_then(|i| a.get(i))),
        (Step::Slice(start, end), Value::Array(a)) => {
            let len = a.len();
            let from = start.map_or(Some(0), |s| resolve_bound(s, len)).unwrap_or(0);
            let to = end.map_or(Some(len), |e| resolve_bound(e, len)).unwrap_or(len);
            if from < to {
                out.extend(&a[from..to]);
            }
        }
        (Step::All, Value::Array(a)) => out.extend(a),
        (Step::All, Value::Object(m)) => out.extend(m.values()),
        (Step::Filter(f), Value::Array(a)) => out.extend(a.iter().filter(|e| f.keeps(e))),
        (Step::Filter(f), Value::Object(m)) => out.extend(m.values().filter(|e| f.keeps(e))),
        _ => {}
    }
}

fn descend<'v>(name: &str, v: &'v Value, out: &mut Vec<&'v Value>) {
    match v {
        Value::Object(m) => {
            out.extend(m.get(name));
            for child in m.values() {
                descend(name, child, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|child| descend(name, child, out)),
        _ => {}
    }
}

/// An index from the front (or, negative, from the back) within `len`.
fn resolve(i: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let i = if i < 0 { len + i } else { i };
    (0..len).contains(&i).then_some(i as usize)
}

/// A slice bound, clamped to `0..=len`.
fn resolve_bound(i: i64, len: usize) -> Option<usize> {
    let n = i64::try_from(len).ok()?;
    let i = if i < 0 { n + i } else { i };
    Some(i.clamp(0, n) as usize)
}

impl Filter {
    fn keeps(&self, element: &Value) -> bool {
        let found = eval(&self.path, element).into_iter().next();
        match (&self.compare, found) {
            (None, Some(v)) => !matches!(v, Value::Null | Value::Bool(false)),
            (None, None) => false,
            (Some((op, _)), None) => *op == Op::Ne,
            (Some((op, literal)), Some(v)) => {
                let ord = match (v, literal) {
                    (Value::Number(a), Value::Number(b)) => a.as_f64().partial_cmp(&b.as_f64()),
                    (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
                    (a, b) if a == b => Some(Ordering::Equal),
                    _ => None,
                };
                match (op, ord) {
                    (Op::Eq, o) => o == Some(Ordering::Equal),
                    (Op::Ne, o) => o != Some(Ordering::Equal),
                    (Op::Lt, Some(o)) => o == Ordering::Less,
                    (Op::Le, Some(o)) => o != Ordering::Greater,
                    (Op::Gt, Some(o)) => o == Ordering::Greater,
                    (Op::Ge, Some(o)) => o != Ordering::Less,
                    (_, None) => false,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn first(path: &str, v: &Value) -> Option<Value> {
        JsonPath::parse(path).unwrap().first(v).cloned()
    }

    #[test]
    fn fields_indexes_and_wildcards() {
        let v = json!({
            "metadata": {"name": "w", "labels": {"app.kubernetes.io/name": "x"}},
            "spec": {"replicas": 3, "ports": [{"port": 80}, {"port": 443}]},
        });
        assert_eq!(first(".spec.replicas", &v), Some(json!(3)));
        assert_eq!(first("{.spec.replicas}", &v), Some(json!(3)));
        assert_eq!(first("$.spec.replicas", &v), Some(json!(3)));
        assert_eq!(first(".spec.ports[1].port", &v), Some(json!(443)));
        assert_eq!(first(".spec.ports[-1].port", &v), Some(json!(443)));
        assert_eq!(first(".spec.ports[*].port", &v), Some(json!(80)));
        assert_eq!(first(".spec.ports[1:].port", &v), Some(json!(443)));
        assert_eq!(first(".spec['replicas']", &v), Some(json!(3)));
        assert_eq!(
            first(r".metadata.labels.app\.kubernetes\.io/name", &v),
            Some(json!("x"))
        );
        assert_eq!(
            first(".metadata.labels['app.kubernetes.io/name']", &v),
            Some(json!("x"))
        );
        assert_eq!(first("..port", &v), Some(json!(80)));
        assert_eq!(first(".spec.*", &v), Some(json!([{"port": 80}, {"port": 443}])));
        assert_eq!(first(".", &v), Some(v.clone()));
        assert_eq!(first(".spec.missing", &v), None);
        assert_eq!(first(".spec.ports[5]", &v), None);
        assert_eq!(first(".spec.replicas.deeper", &v), None);
    }

    #[test]
    fn filters_pick_elements() {
        let v = json!({"status": {"conditions": [
            {"type": "Progressing", "status": "True", "n": 1},
            {"type": "Ready", "status": "False", "n": 2},
        ]}});
        assert_eq!(
            first(".status.conditions[?(@.type==\"Ready\")].status", &v),
            Some(json!("False"))
        );
        assert_eq!(
            first(".status.conditions[?(@.type == 'Ready')].status", &v),
            Some(json!("False"))
        );
        assert_eq!(first(".status.conditions[?(@.n > 1)].type", &v), Some(json!("Ready")));
        assert_eq!(
            first(".status.conditions[?(@.n <= 1)].type", &v),
            Some(json!("Progressing"))
        );
        assert_eq!(
            first(".status.conditions[?(@.type != 'Ready')].type", &v),
            Some(json!("Progressing"))
        );
        assert_eq!(first(".status.conditions[?(@.n)].type", &v), Some(json!("Progressing")));
        assert_eq!(first(".status.conditions[?(@.x)].type", &v), None);
    }

    #[test]
    fn malformed_paths_are_refused() {
        for bad in [
            ".spec[",
            ".spec[?(@.a == )]",
            ".spec[x]",
            "spec",
            ".spec['a",
            ".a..",
            ".spec[?@.a]",
        ] {
            assert!(JsonPath::parse(bad).is_err(), "{bad}");
        }
        // Deeply nested filters are refused, not recursed into.
        let deep = format!(".a{}.b{}", "[?(@".repeat(10_000), ")]".repeat(10_000));
        assert!(JsonPath::parse(&deep).unwrap_err().contains("nested"));
        let ok = format!(".a{}.b{}", "[?(@".repeat(3), ")]".repeat(3));
        assert!(JsonPath::parse(&ok).is_ok(), "{ok}");
        assert_eq!(JsonPath::parse(".a").unwrap(), JsonPath::parse(".a").unwrap());
        assert_ne!(JsonPath::parse(".a").unwrap(), JsonPath::parse(".b").unwrap());
    }
}
