//! Label, field and shard selectors: parse, print and match as Kubernetes defines them.
//!
//! Label selectors follow apimachinery's `labels.Parse`: requirements separated by commas, each one of
//! `key`, `!key`, `key=value`, `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key>N`, `key<N`.
//! Keys are qualified names (`[prefix/]name`), values are label values (≤ 63 characters, alphanumeric at both ends,
//! `-`, `_`, `.` inside, or empty). Requirements print sorted by key, set values sorted, as the API server prints them.
//!
//! Field selectors follow `fields.ParseSelector`: `field=value`, `field==value`, `field!=value`, separated by commas,
//! with `\` escaping `,`, `=`, `!` and `\` in values.
//!
//! ```
//! use std::collections::BTreeMap;
//! use kube_informer::selector::Selector;
//!
//! let sel: Selector = "tier in (front, back), app=web, !canary".parse().unwrap();
//! assert_eq!(sel.to_string(), "app=web,!canary,tier in (back,front)");
//! let labels = BTreeMap::from([("app".to_string(), "web".to_string()), ("tier".into(), "front".into())]);
//! assert!(sel.matches(&labels));
//! assert!("app notin (web)".parse::<Selector>().unwrap().matches(&BTreeMap::new()));
//! assert!("app in (web".parse::<Selector>().is_err());
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::object::StrMap;

mod shard;
pub use shard::{HASH_SPACE_END, ShardField, ShardRange, ShardSelector};

/// A parsed label selector: a conjunction of [`Requirement`]s, sorted by key. The empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Selector {
    /// Invariant: sorted by key (stable, so requirements on one key keep their written order).
    requirements: Vec<Requirement>,
}

/// One requirement of a label selector.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    operator: Operator,
    /// Invariant: sorted and deduplicated; exactly one value for `=`, `==`, `!=`, `>`, `<`; non-empty for `in` and
    /// `notin`; empty for `exists` and `!exists`.
    values: Vec<String>,
}

/// The operator of a [`Requirement`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `key=value`
    Equals,
    /// `key==value`
    DoubleEquals,
    /// `key!=value`: also matches objects without the key.
    NotEquals,
    /// `key in (a,b)`
    In,
    /// `key notin (a,b)`: also matches objects without the key.
    NotIn,
    /// `key`
    Exists,
    /// `!key`
    DoesNotExist,
    /// `key>N` (integers)
    GreaterThan,
    /// `key<N` (integers)
    LessThan,
}

impl Selector {
    /// The selector that matches everything.
    pub fn everything() -> Self {
        Selector::default()
    }

    /// A selector requiring each `key=value` of the map (a `matchLabels`).
    ///
    /// # Errors
    /// When a key or value is not a valid label key or value.
    pub fn from_map(labels: &(impl StrMap + ?Sized)) -> Result<Self, Error> {
        let mut reqs = Vec::with_capacity(labels.len());
        for (k, v) in labels.iter() {
            reqs.push(Requirement::new(k, Operator::Equals, [v])?);
        }
        Ok(Selector::from_requirements(reqs))
    }

    /// A selector from a Kubernetes `LabelSelector` (`matchLabels` and `matchExpressions`).
    ///
    /// # Errors
    /// On an unknown operator, or invalid keys or values.
    pub fn from_label_selector(ls: &LabelSelector) -> Result<Self, Error> {
        let mut reqs = Vec::new();
        for (k, v) in &ls.match_labels {
            reqs.push(Requirement::new(k, Operator::Equals, [v.as_str()])?);
        }
        for e in &ls.match_expressions {
            let op = match e.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    return Err(Error::InvalidInput(format!(
                        "{other:?} is not a valid label selector operator"
                    )));
                }
            };
            reqs.push(Requirement::new(&e.key, op, e.values.iter().map(String::as_str))?);
        }
        Ok(Selector::from_requirements(reqs))
    }

    /// A selector from requirements (sorted by key here).
    pub fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Selector { requirements }
    }

    /// True when this selector has no requirement (matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// True when every requirement matches `labels` (a [`StringMap`](crate::object::StringMap), a `BTreeMap`, or
    /// what [`MetaAccessor::labels`](crate::object::MetaAccessor::labels) returns).
    pub fn matches(&self, labels: &(impl StrMap + ?Sized)) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }
}

impl Requirement {
    /// A validated requirement.
    ///
    /// # Errors
    /// When the key is not a qualified name, a value is not a valid label value, or the number of values does not
    /// fit the operator.
    pub fn new<'a>(key: &str, operator: Operator, values: impl IntoIterator<Item = &'a str>) -> Result<Self, Error> {
        validate_key(key)?;
        let mut vals: Vec<String> = Vec::new();
        for v in values {
            validate_value(v)?;
            vals.push(v.to_owned());
        }
        vals.sort();
        vals.dedup();
        match operator {
            Operator::In | Operator::NotIn if vals.is_empty() => {
                return Err(invalid("for 'in', 'notin' operators, values set can't be empty"));
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals if vals.len() != 1 => {
                return Err(invalid("exact-match compatibility requires one single value"));
            }
            Operator::Exists | Operator::DoesNotExist if !vals.is_empty() => {
                return Err(invalid("values set must be empty for exists and does not exist"));
            }
            Operator::GreaterThan | Operator::LessThan => {
                if vals.len() != 1 {
                    return Err(invalid("for 'Gt', 'Lt' operators, exactly one value is required"));
                }
                if vals[0].parse::<i64>().is_err() {
                    return Err(invalid(format!(
                        "for 'Gt', 'Lt' operators, the value must be an integer, not {:?}",
                        vals[0]
                    )));
                }
            }
            _ => {}
        }
        Ok(Requirement {
            key: key.to_owned(),
            operator,
            values: vals,
        })
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, sorted.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// True when `labels` satisfy this requirement.
    pub fn matches(&self, labels: &(impl StrMap + ?Sized)) -> bool {
        let got = labels.get(&self.key);
        let listed = |v: &str| self.values.binary_search_by(|x| x.as_str().cmp(v)).is_ok();
        match self.operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In => got.is_some_and(listed),
            Operator::NotEquals | Operator::NotIn => got.is_none_or(|v| !listed(v)),
            Operator::Exists => got.is_some(),
            Operator::DoesNotExist => got.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(have), Ok(want)) = (got.and_then(|v| v.parse::<i64>().ok()), self.values[0].parse::<i64>())
                else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = &self.key;
        let one = || self.values.first().map(String::as_str).unwrap_or("");
        match self.operator {
            Operator::Equals => write!(f, "{k}={}", one()),
            Operator::DoubleEquals => write!(f, "{k}=={}", one()),
            Operator::NotEquals => write!(f, "{k}!={}", one()),
            Operator::GreaterThan => write!(f, "{k}>{}", one()),
            Operator::LessThan => write!(f, "{k}<{}", one()),
            Operator::Exists => write!(f, "{k}"),
            Operator::DoesNotExist => write!(f, "!{k}"),
            Operator::In | Operator::NotIn => {
                let op = if self.operator == Operator::In { "in" } else { "notin" };
                write!(f, "{k} {op} ({})", self.values.join(","))
            }
        }
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl FromStr for Selector {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        Parser {
            lexer: Lexer { input: s, pos: 0 },
        }
        .parse()
    }
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::InvalidInput(msg.into())
}

/// `[prefix/]name`: prefix a DNS subdomain of at most 253 characters, name at most 63 characters.
fn validate_key(key: &str) -> Result<(), Error> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        let ok = !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.bytes()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            });
        if !ok {
            return Err(invalid(format!(
                "invalid label key {key:?}: prefix part must be a lowercase RFC 1123 subdomain"
            )));
        }
    }
    if name.is_empty() || !is_label_value(name) {
        return Err(invalid(format!(
            "invalid label key {key:?}: name part must be 1-63 alphanumeric characters, '-', '_' or '.', starting \
             and ending with an alphanumeric character"
        )));
    }
    Ok(())
}

fn validate_value(v: &str) -> Result<(), Error> {
    if v.is_empty() || is_label_value(v) {
        Ok(())
    } else {
        Err(invalid(format!(
            "invalid label value {v:?}: must be at most 63 alphanumeric characters, '-', '_' or '.', starting and \
             ending with an alphanumeric character"
        )))
    }
}

fn is_label_value(v: &str) -> bool {
    let b = v.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

#[derive(Debug, PartialEq, Eq)]
enum Token<'a> {
    Identifier(&'a str),
    Not,
    Equals,
    DoubleEquals,
    NotEquals,
    Greater,
    Less,
    In,
    NotIn,
    Open,
    Close,
    Comma,
    End,
}

struct Lexer<'a> {
    input: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn is_special(c: u8) -> bool {
        matches!(c, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
    }

    /// Returns the next token and the byte offset where it starts.
    fn next(&mut self) -> (Token<'a>, usize) {
        let b = self.input.as_bytes();
        while self.pos < b.len() && b[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
        let start = self.pos;
        let Some(&c) = b.get(self.pos) else {
            return (Token::End, start);
        };
        let two = b.get(self.pos + 1).copied();
        let (tok, len) = match (c, two) {
            (b'!', Some(b'=')) => (Token::NotEquals, 2),
            (b'=', Some(b'=')) => (Token::DoubleEquals, 2),
            (b'!', _) => (Token::Not, 1),
            (b'=', _) => (Token::Equals, 1),
            (b'>', _) => (Token::Greater, 1),
            (b'<', _) => (Token::Less, 1),
            (b'(', _) => (Token::Open, 1),
            (b')', _) => (Token::Close, 1),
            (b',', _) => (Token::Comma, 1),
            _ => {
                let mut end = self.pos;
                while end < b.len() && !b[end].is_ascii_whitespace() && !Self::is_special(b[end]) {
                    end += 1;
                }
                let word = &self.input[self.pos..end];
                self.pos = end;
                let tok = match word {
                    "in" => Token::In,
                    "notin" => Token::NotIn,
                    w => Token::Identifier(w),
                };
                return (tok, start);
            }
        };
        self.pos += len;
        (tok, start)
    }

    fn peek(&mut self) -> Token<'a> {
        let save = self.pos;
        let (t, _) = self.next();
        self.pos = save;
        t
    }
}

struct Parser<'a> {
    lexer: Lexer<'a>,
}

impl<'a> Parser<'a> {
    fn err(&self, at: usize, what: &str) -> Error {
        invalid(format!(
            "unable to parse label selector {:?}: {what} at position {at}",
            self.lexer.input
        ))
    }

    fn parse(mut self) -> Result<Selector, Error> {
        let mut reqs = Vec::new();
        if self.lexer.peek() == Token::End {
            return Ok(Selector::everything());
        }
        loop {
            reqs.push(self.requirement()?);
            match self.lexer.next() {
                (Token::End, _) => break,
                (Token::Comma, at) => {
                    if matches!(self.lexer.peek(), Token::End | Token::Comma) {
                        return Err(self.err(at, "expected a requirement after ','"));
                    }
                }
                (t, at) => return Err(self.err(at, &format!("found {t:?}, expected ',' or end of selector"))),
            }
        }
        Ok(Selector::from_requirements(reqs))
    }

    fn requirement(&mut self) -> Result<Requirement, Error> {
        let (tok, at) = self.lexer.next();
        let (key, negated) = match tok {
            Token::Not => match self.lexer.next() {
                (Token::Identifier(k), _) => (k, true),
                (Token::In, _) => ("in", true),
                (Token::NotIn, _) => ("notin", true),
                (t, at) => return Err(self.err(at, &format!("found {t:?}, expected a key after '!'"))),
            },
            Token::Identifier(k) => (k, false),
            // As in apimachinery, `in` and `notin` are ordinary words where a key or value is expected.
            Token::In => ("in", false),
            Token::NotIn => ("notin", false),
            t => return Err(self.err(at, &format!("found {t:?}, expected a key"))),
        };
        if negated {
            if !matches!(self.lexer.peek(), Token::End | Token::Comma) {
                let (t, at) = self.lexer.next();
                return Err(self.err(at, &format!("found {t:?}, expected ',' or end after '!{key}'")));
            }
            return Requirement::new(key, Operator::DoesNotExist, []);
        }
        let (tok, at) = self.lexer.next();
        let op = match tok {
            Token::End | Token::Comma => {
                // Put the separator back for the caller.
                self.lexer.pos = at;
                return Requirement::new(key, Operator::Exists, []);
            }
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::NotEquals => Operator::NotEquals,
            Token::Greater => Operator::GreaterThan,
            Token::Less => Operator::LessThan,
            Token::In => Operator::In,
            Token::NotIn => Operator::NotIn,
            t => return Err(self.err(at, &format!("found {t:?}, expected an operator"))),
        };
        let values = if matches!(op, Operator::In | Operator::NotIn) {
            self.set()?
        } else {
            match self.lexer.peek() {
                // `key=` means "value is empty".
                Token::End | Token::Comma => vec![""],
                _ => match self.lexer.next() {
                    (Token::Identifier(v), _) => vec![v],
                    (Token::In, _) => vec!["in"],
                    (Token::NotIn, _) => vec!["notin"],
                    (t, at) => return Err(self.err(at, &format!("found {t:?}, expected a value"))),
                },
            }
        };
        Requirement::new(key, op, values)
    }

    /// `( v1, v2, … )`; empty entries are empty values; `()` is an empty set (refused by `Requirement::new`).
    fn set(&mut self) -> Result<Vec<&'a str>, Error> {
        let (t, at) = self.lexer.next();
        if t != Token::Open {
            return Err(self.err(at, &format!("found {t:?}, expected '('")));
        }
        let mut values = Vec::new();
        if self.lexer.peek() == Token::Close {
            // As apimachinery's parseValues: `()` is the set holding the empty value, which is also how that set
            // prints, so every selector prints to text that parses back to it.
            self.lexer.next();
            return Ok(vec![""]);
        }
        loop {
            let v = match self.lexer.peek() {
                Token::Comma | Token::Close => "",
                _ => match self.lexer.next() {
                    (Token::Identifier(v), _) => v,
                    (Token::In, _) => "in",
                    (Token::NotIn, _) => "notin",
                    (t, at) => return Err(self.err(at, &format!("found {t:?}, expected a value"))),
                },
            };
            values.push(v);
            match self.lexer.next() {
                (Token::Comma, _) => continue,
                (Token::Close, _) => break,
                (t, at) => return Err(self.err(at, &format!("found {t:?}, expected ',' or ')'"))),
            }
        }
        Ok(values)
    }
}

/// A Kubernetes `LabelSelector` object (`spec.selector` of workloads).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Exact key/value pairs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// Set-based requirements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One `matchExpressions` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelSelectorRequirement {
    /// Label key.
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    /// Values for `In` and `NotIn`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// A parsed field selector: `field=value`, `field==value`, `field!=value` terms joined by commas.
///
/// ```
/// use kube_informer::selector::FieldSelector;
///
/// let fs: FieldSelector = "metadata.namespace!=kube-system,metadata.name=a\\,b".parse().unwrap();
/// assert!(fs.matches(|f| match f { "metadata.name" => Some("a,b"), "metadata.namespace" => Some("default"), _ => None }));
/// assert_eq!(fs.to_string(), "metadata.name=a\\,b,metadata.namespace!=kube-system");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FieldSelector {
    /// Invariant: sorted by field.
    terms: Vec<FieldTerm>,
}

/// One term of a [`FieldSelector`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldTerm {
    /// The field path (`metadata.name`).
    pub field: String,
    /// True for `!=`.
    pub negated: bool,
    /// The value (unescaped).
    pub value: String,
}

impl FieldSelector {
    /// The terms, sorted by field.
    pub fn terms(&self) -> &[FieldTerm] {
        &self.terms
    }

    /// True when there are no terms.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// True when every term holds; `get` returns a field's value (`None` reads as empty, as the API server does).
    pub fn matches<'v>(&self, get: impl Fn(&str) -> Option<&'v str>) -> bool {
        self.terms
            .iter()
            .all(|t| (get(&t.field).unwrap_or("") == t.value) != t.negated)
    }
}

impl FromStr for FieldSelector {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let mut terms = Vec::new();
        for part in split_unescaped(s, b',') {
            let part = part.trim();
            if part.is_empty() {
                if s.trim().is_empty() {
                    continue;
                }
                return Err(invalid(format!("invalid field selector {s:?}: empty term")));
            }
            // As apimachinery's `splitTerm`: the first operator in the term splits it (the field part has no
            // escapes), `!=` and `==` winning over `=` at the same position.
            let Some((i, op)) = (0..part.len()).find_map(|i| {
                ["!=", "==", "="]
                    .into_iter()
                    .find(|op| part.as_bytes()[i..].starts_with(op.as_bytes()))
                    .map(|op| (i, op))
            }) else {
                return Err(invalid(format!(
                    "invalid field selector {s:?}: {part:?} has no operator ('=', '==' or '!=')"
                )));
            };
            let (field, negated, raw) = (&part[..i], op == "!=", &part[i + op.len()..]);
            let field = field.trim();
            if field.is_empty() {
                return Err(invalid(format!("invalid field selector {s:?}: empty field name")));
            }
            if field.ends_with('!') {
                // `a! =b` would print as `a!=b`, a different selector; field names cannot be escaped.
                return Err(invalid(format!(
                    "invalid field selector {s:?}: field name {field:?} ends with '!'"
                )));
            }
            terms.push(FieldTerm {
                field: field.to_owned(),
                negated,
                value: unescape(raw.trim()).map_err(|m| invalid(format!("invalid field selector {s:?}: {m}")))?,
            });
        }
        terms.sort_by(|a, b| a.field.cmp(&b.field));
        Ok(FieldSelector { terms })
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(&t.field)?;
            f.write_str(if t.negated { "!=" } else { "=" })?;
            for c in t.value.chars() {
                if matches!(c, '\\' | ',' | '=' | '!') {
                    f.write_str("\\")?;
                }
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

fn split_unescaped(s: &str, sep: u8) -> Vec<&str> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < b.len() {
        if b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == sep {
            out.push(&s[start..i]);
            start = i + 1;
        }
        i += 1;
    }
    out.push(&s[start.min(s.len())..]);
    out
}

fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(e @ ('\\' | ',' | '=' | '!')) => out.push(e),
                Some(e) => return Err(format!("invalid escape sequence '\\{e}'")),
                None => return Err("trailing backslash".into()),
            }
        } else if matches!(c, ',' | '=' | '!') {
            return Err(format!("unescaped '{c}' in value {s:?}"));
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    // Cases ported from apimachinery's labels/selector_test.go (TestSelectorParse, TestSelectorMatches,
    // TestLexerSequence): inputs and expected outcomes.
    #[test]
    fn parses_and_prints_like_apimachinery() {
        for (input, printed) in [
            ("", ""),
            ("x=a", "x=a"),
            ("y==b", "y==b"),
            ("x=a,y!=b", "x=a,y!=b"),
            ("x=,z= ", "x=,z="),
            ("x= ,z= ", "x=,z="),
            ("!x", "!x"),
            ("x>1", "x>1"),
            ("x<7", "x<7"),
            ("x in (a,b), y notin (c)", "x in (a,b),y notin (c)"),
            ("x in (b,a,a)", "x in (a,b)"),
            ("x in (,a)", "x in (,a)"),
            ("w, x", "w,x"),
            ("z, !y, x=1", "x=1,!y,z"),
            ("example.com/app=web", "example.com/app=web"),
            ("  app  =  web  ", "app=web"),
        ] {
            let s: Selector = input.parse().unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(s.to_string(), printed, "{input:?}");
            // Printing and parsing again is stable.
            assert_eq!(s.to_string().parse::<Selector>().unwrap(), s);
        }
    }

    #[test]
    fn rejects_bad_syntax_with_distinct_messages() {
        for input in [
            "x=a||y=b",
            "x==a==b",
            "!x=a",
            "x<a",
            "x>1.5",
            "x in (a",
            "x in a",
            ",x=a",
            "x=a,",
            "x=a,,y=b",
            "x=(a)",
            "-x=a",
            "x=-a",
            "UPPER.example.com/x=a",
            "a/b/c=d",
            &format!("x={}", "a".repeat(64)),
            "(x)",
            "x y",
        ] {
            assert!(input.parse::<Selector>().is_err(), "{input:?} should fail");
        }
    }

    #[test]
    fn matches_like_apimachinery() {
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], bool);
        let cases: &[Case<'_>] = &[
            ("", &[("x", "y")], true),
            ("x=y", &[("x", "y")], true),
            ("x=y,z=w", &[("x", "y"), ("z", "w")], true),
            ("x!=y,z!=w", &[("x", "z"), ("z", "a")], true),
            ("notin=in", &[("notin", "in")], true),
            ("x", &[("x", "z")], true),
            ("!x", &[("y", "z")], true),
            ("x>1", &[("x", "2")], true),
            ("x<1", &[("x", "0")], true),
            ("x=z", &[], false),
            ("x=y", &[("x", "z")], false),
            ("x=y,z=w", &[("x", "w"), ("z", "w")], false),
            ("x!=y,z!=w", &[("x", "z"), ("z", "w")], false),
            ("x", &[("y", "z")], false),
            ("!x", &[("x", "z")], false),
            ("x>1", &[("x", "0")], false),
            ("x<1", &[("x", "2")], false),
            ("x>1", &[("x", "abc")], false),
            ("x in (a,b)", &[("x", "b")], true),
            ("x notin (a,b)", &[("x", "c")], true),
            ("x notin (a,b)", &[], true),
            ("x in (a,b)", &[], false),
            ("x=", &[("x", "")], true),
        ];
        for (sel, ls, want) in cases {
            let s: Selector = sel.parse().unwrap();
            assert_eq!(s.matches(&labels(ls)), *want, "{sel:?} on {ls:?}");
        }
    }

    #[test]
    fn builds_from_label_selector_objects() {
        let ls: LabelSelector = serde_json::from_str(
            r#"{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"In","values":["a","b"]},{"key":"canary","operator":"DoesNotExist"}]}"#,
        )
        .unwrap();
        let s = Selector::from_label_selector(&ls).unwrap();
        assert_eq!(
            s.to_string(),
            "app=web,!canary,tier in (a,b)".parse::<Selector>().unwrap().to_string()
        );
        let bad = LabelSelector {
            match_expressions: vec![LabelSelectorRequirement {
                key: "a".into(),
                operator: "Near".into(),
                values: vec![],
            }],
            ..Default::default()
        };
        assert!(Selector::from_label_selector(&bad).is_err());
        let m = Selector::from_map(&labels(&[("a", "1"), ("b", "2")])).unwrap();
        assert!(m.matches(&labels(&[("a", "1"), ("b", "2"), ("c", "3")])));
        assert!(!m.matches(&labels(&[("a", "1")])));
    }

    #[test]
    fn field_selectors_parse_escape_and_match() {
        let fs: FieldSelector = "metadata.name==web, metadata.namespace!=kube-system".parse().unwrap();
        assert_eq!(fs.to_string(), "metadata.name=web,metadata.namespace!=kube-system");
        assert!(fs.matches(|f| (f == "metadata.name").then_some("web")));
        assert!(!fs.matches(|f| Some(if f == "metadata.name" { "web" } else { "kube-system" })));
        assert!("".parse::<FieldSelector>().unwrap().is_empty());
        for bad in ["metadata.name", "=x", "a=b,,c=d", "a=b\\", "a=b\\x", "a=b=c"] {
            assert!(bad.parse::<FieldSelector>().is_err(), "{bad:?}");
        }
        let esc: FieldSelector = "a=x\\=y\\\\".parse().unwrap();
        assert_eq!(esc.terms()[0].value, "x=y\\");
        assert_eq!(esc.to_string().parse::<FieldSelector>().unwrap(), esc);
    }

    #[test]
    fn an_empty_set_is_the_set_of_the_empty_value() {
        // apimachinery reads `()` as {""}; found by the label_selector fuzz target: `( ,)` parsed and printed as
        // `()`, which did not parse.
        for text in ["x in ()", "x in ( ,)", "x in (,)"] {
            let sel: Selector = text.parse().unwrap();
            assert_eq!(sel.requirements()[0].values(), [""], "{text}");
            assert_eq!(sel.to_string(), "x in ()");
            assert_eq!(sel.to_string().parse::<Selector>().unwrap(), sel);
        }
        let sel: Selector = "x notin ()".parse().unwrap();
        assert!(sel.matches(&BTreeMap::from([("x".to_string(), "a".to_string())])));
        assert!(!sel.matches(&BTreeMap::from([("x".to_string(), String::new())])));
    }

    #[test]
    fn field_selectors_split_at_the_first_operator() {
        // apimachinery's splitTerm: the field part has no escapes; the first operator (by position) splits the term.
        let fs: FieldSelector = "a!b==c".parse().unwrap();
        assert_eq!(
            (fs.terms()[0].field.as_str(), fs.terms()[0].value.as_str()),
            ("a!b", "c")
        );
        let fs: FieldSelector = r"a=\=\=c".parse().unwrap();
        assert_eq!(
            (fs.terms()[0].field.as_str(), fs.terms()[0].value.as_str()),
            ("a", "==c")
        );
        assert_eq!(fs.to_string().parse::<FieldSelector>().unwrap(), fs);
        // Found by the label_selector fuzz target: `==` further right used to win, leaving `=` in the field.
        for bad in ["a=b==", "x!=y=z", "a\\=b=c", "!  =", "a! =b"] {
            assert!(bad.parse::<FieldSelector>().is_err(), "{bad:?}");
        }
    }
}
