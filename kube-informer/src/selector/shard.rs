//! Shard selectors (`shardSelector`, KEP-5866 "Server-side Sharded List and Watch", gate `ShardedListAndWatch`).
//!
//! A shard selector names a metadata field and one or more ranges of the 64-bit FNV-1a hash of that field's string;
//! an object is in the shard when its hash falls in any range, each range `[start, end)`. The wire form is the one
//! kube-apiserver parses (a CEL expression it walks without evaluating, `k8s.io/apiserver/pkg/sharding`):
//!
//! ```text
//! shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
//! shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000') || shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')
//! ```
//!
//! Bounds are `'0x'` and exactly 16 lowercase hex digits, or `'0x10000000000000000'` (2⁶⁴) as the exclusive end of
//! the last range; every range of one selector hashes the same field (`object.metadata.uid` or
//! `object.metadata.namespace`). Printing gives the canonical form back, so a selector parsed from the canonical form
//! prints as it was written — what kube-apiserver echoes in a list's `metadata.shardInfo.selector`.
//!
//! ```
//! use kube_informer::selector::{ShardField, ShardSelector};
//!
//! let half: ShardSelector = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')".parse().unwrap();
//! assert_eq!(half, ShardSelector::split(ShardField::Uid, 2, 0).unwrap());
//! assert!(half.contains(0x7fff_ffff_ffff_ffff) && !half.contains(0x8000_0000_0000_0000));
//! let last = ShardSelector::split(ShardField::Uid, 2, 1).unwrap();
//! assert_eq!(
//!     last.to_string(),
//!     "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
//! );
//! // Every hash falls in exactly one of n splits.
//! let h = ShardSelector::hash("3c1c2f5e-8d4a-4f0e-9a52-6f0d3f1e2b7a");
//! assert_eq!((0..3).filter(|i| ShardSelector::split(ShardField::Uid, 3, *i).unwrap().contains(h)).count(), 1);
//! assert!("shardRange(object.metadata.uid, '0x0', '0x8000000000000000')".parse::<ShardSelector>().is_err());
//! ```

use std::fmt;
use std::str::FromStr;

use crate::error::Error;
use crate::object::MetaAccessor;

/// 2⁶⁴: the exclusive end of the hash space.
pub const HASH_SPACE_END: u128 = 1 << 64;

/// The metadata field a shard selector hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShardField {
    /// `object.metadata.uid`: spreads objects evenly; what a sharded controller uses.
    Uid,
    /// `object.metadata.namespace`: keeps a namespace's objects together (cluster-scoped objects hash `""`).
    Namespace,
}

impl ShardField {
    /// The field path as the selector writes it.
    pub fn path(self) -> &'static str {
        match self {
            ShardField::Uid => "object.metadata.uid",
            ShardField::Namespace => "object.metadata.namespace",
        }
    }

    /// The field's value in `meta` (`""` when absent, as kube-apiserver reads an unset field).
    pub fn value(self, meta: &(impl MetaAccessor + ?Sized)) -> &str {
        match self {
            ShardField::Uid => meta.uid().unwrap_or(""),
            ShardField::Namespace => meta.namespace().unwrap_or(""),
        }
    }
}

/// One range `[start, end)` of the hash space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ShardRange {
    start: u64,
    /// Invariant: `start < end <= 2⁶⁴`.
    end: u128,
}

impl ShardRange {
    /// `[start, end)`; `end` may be [`HASH_SPACE_END`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] unless `start < end <= 2⁶⁴`.
    pub fn new(start: u64, end: u128) -> Result<Self, Error> {
        if end > HASH_SPACE_END {
            return Err(invalid(format!(
                "shard range end {end:#x} is beyond 0x10000000000000000"
            )));
        }
        if u128::from(start) >= end {
            return Err(invalid(format!(
                "shard range start {} must be less than end {}",
                hex_start(start),
                hex_end(end)
            )));
        }
        Ok(ShardRange { start, end })
    }

    /// The whole hash space.
    pub fn everything() -> Self {
        ShardRange {
            start: 0,
            end: HASH_SPACE_END,
        }
    }

    /// The inclusive start.
    pub fn start(self) -> u64 {
        self.start
    }

    /// The exclusive end (up to 2⁶⁴).
    pub fn end(self) -> u128 {
        self.end
    }

    /// True when `hash` is in `[start, end)`.
    pub fn contains(self, hash: u64) -> bool {
        hash >= self.start && u128::from(hash) < self.end
    }
}

/// A parsed shard selector: a field and the ranges of its hash that are in the shard (a union).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShardSelector {
    field: ShardField,
    /// Invariant: not empty; in the order written (printing gives the same order back).
    ranges: Vec<ShardRange>,
}

impl ShardSelector {
    /// A selector of the given ranges of `field`'s hash.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] when `ranges` is empty (kube-apiserver refuses an empty selector: omit it instead).
    pub fn new(field: ShardField, ranges: Vec<ShardRange>) -> Result<Self, Error> {
        if ranges.is_empty() {
            return Err(invalid(EMPTY));
        }
        Ok(ShardSelector { field, ranges })
    }

    /// Part `index` of `count` equal parts of the hash space (`[⌊i·2⁶⁴/n⌋, ⌊(i+1)·2⁶⁴/n⌋)`): the parts are disjoint and
    /// cover every hash.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] when `count` is 0 or `index >= count`.
    pub fn split(field: ShardField, count: u32, index: u32) -> Result<Self, Error> {
        Self::slots(field, count, [index])
    }

    /// The union of the given parts (`slots`) of `count` equal parts, adjacent parts merged into one range: the
    /// selector of a replica that owns these slots. Duplicates are ignored.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] when `count` is 0, a slot is `>= count`, or no slot is given.
    pub fn slots(field: ShardField, count: u32, slots: impl IntoIterator<Item = u32>) -> Result<Self, Error> {
        if count == 0 {
            return Err(invalid("a shard split needs at least one part"));
        }
        let mut owned: Vec<u32> = slots.into_iter().collect();
        if let Some(bad) = owned.iter().find(|s| **s >= count) {
            return Err(invalid(format!("shard slot {bad} is not below the slot count {count}")));
        }
        owned.sort_unstable();
        owned.dedup();
        let bound = |i: u32| (u128::from(i) * HASH_SPACE_END) / u128::from(count);
        let mut ranges: Vec<ShardRange> = Vec::new();
        for slot in owned {
            let (start, end) = (bound(slot), bound(slot + 1));
            match ranges.last_mut() {
                Some(last) if last.end == start => last.end = end,
                // `start < 2⁶⁴` because slot < count.
                _ => ranges.push(ShardRange {
                    start: u64::try_from(start).unwrap_or(u64::MAX),
                    end,
                }),
            }
        }
        Self::new(field, ranges)
    }

    /// Which of `count` equal parts (as [`split`](Self::split) and [`slots`](Self::slots) cut them) `hash` falls
    /// in: the slot a sharded controller maps a key's object to. `None` when `count` is 0.
    pub fn slot_of(hash: u64, count: u32) -> Option<u32> {
        // The largest i with ⌊i·2⁶⁴/n⌋ ≤ h, that is i < (h+1)·n/2⁶⁴: ⌊((h+1)·n − 1) / 2⁶⁴⌋.
        let n = u128::from(count);
        let slot = ((u128::from(hash) + 1) * n).checked_sub(1)? >> 64;
        u32::try_from(slot).ok()
    }

    /// The field hashed.
    pub fn field(&self) -> ShardField {
        self.field
    }

    /// The ranges, as written.
    pub fn ranges(&self) -> &[ShardRange] {
        &self.ranges
    }

    /// 64-bit FNV-1a of `value`'s bytes: the hash kube-apiserver computes of the field's string.
    pub fn hash(value: &str) -> u64 {
        const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
        const PRIME: u64 = 0x0000_0100_0000_01b3;
        value
            .bytes()
            .fold(OFFSET, |h, b| (h ^ u64::from(b)).wrapping_mul(PRIME))
    }

    /// True when `hash` is in any of the ranges.
    pub fn contains(&self, hash: u64) -> bool {
        self.ranges.iter().any(|r| r.contains(hash))
    }

    /// True when a field value hashes into the shard.
    pub fn matches_value(&self, value: &str) -> bool {
        self.contains(Self::hash(value))
    }

    /// True when the object with this metadata is in the shard.
    pub fn matches(&self, meta: &(impl MetaAccessor + ?Sized)) -> bool {
        self.matches_value(self.field.value(meta))
    }
}

const EMPTY: &str = "empty shard selector is not allowed; omit the parameter for unfiltered lists";

fn invalid(msg: impl Into<String>) -> Error {
    Error::InvalidInput(msg.into())
}

fn hex_start(v: u64) -> String {
    format!("0x{v:016x}")
}

fn hex_end(v: u128) -> String {
    if v == HASH_SPACE_END {
        "0x10000000000000000".to_owned()
    } else {
        format!("0x{v:016x}")
    }
}

impl fmt::Display for ShardSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(" || ")?;
            }
            write!(
                f,
                "shardRange({}, '{}', '{}')",
                self.field.path(),
                hex_start(r.start),
                hex_end(r.end)
            )?;
        }
        Ok(())
    }
}

impl FromStr for ShardSelector {
    type Err = Error;

    /// Parses as kube-apiserver does: only `shardRange(field, 'start', 'end')` calls joined by `||` (parentheses
    /// allowed), bounds of 16 lowercase hex digits after `0x` (or 2⁶⁴), `start < end`, one field throughout. The error
    /// messages are kube-apiserver's.
    fn from_str(s: &str) -> Result<Self, Error> {
        let s = s.trim();
        if s.is_empty() {
            return Err(invalid(EMPTY));
        }
        let tokens = lex(s)?;
        let mut p = Parser {
            tokens,
            pos: 0,
            nesting: 0,
        };
        let expr = p.or_expr()?;
        if let Some(t) = p.tokens.get(p.pos) {
            return Err(syntax(&format!("mismatched input '{}'", t.text())));
        }
        let mut calls = Vec::new();
        walk(&expr, &mut calls)?;
        let mut field = None;
        let mut ranges = Vec::with_capacity(calls.len());
        for (f, r) in calls {
            match field {
                None => field = Some(f),
                Some(first) if first != f => {
                    return Err(invalid(format!(
                        "all shard ranges must use the same field, got {:?} and {:?}",
                        first.path(),
                        f.path()
                    )));
                }
                Some(_) => {}
            }
            ranges.push(r);
        }
        Self::new(field.unwrap_or(ShardField::Uid), ranges)
    }
}

// ---- the CEL subset: lexer, parser, walk ----

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    Str(String),
    Int(String),
    /// Punctuation and operators: `( ) , . || && == != < <= > >= + - * / % ! ? : [ ] { }`.
    Punct(&'static str),
}

impl Token {
    fn text(&self) -> String {
        match self {
            Token::Ident(s) | Token::Int(s) => s.clone(),
            Token::Str(s) => format!("'{s}'"),
            Token::Punct(p) => (*p).to_owned(),
        }
    }
}

fn syntax(detail: &str) -> Error {
    invalid(format!("CEL parse error: Syntax error: {detail}"))
}

const PUNCT: [&str; 24] = [
    "||", "&&", "==", "!=", "<=", ">=", "(", ")", ",", ".", "<", ">", "+", "-", "*", "/", "%", "!", "?", ":", "[", "]",
    "{", "}",
];

fn lex(s: &str) -> Result<Vec<Token>, Error> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Token::Ident(s[start..i].to_owned()));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                i += 1;
            }
            out.push(Token::Int(s[start..i].to_owned()));
        } else if c == b'\'' || c == b'"' {
            let quote = c;
            let mut value = String::new();
            let mut j = i + 1;
            let mut closed = false;
            let chars = s[j..].char_indices();
            let mut escaped = false;
            for (off, ch) in chars {
                if escaped {
                    value.push(match ch {
                        'n' => '\n',
                        't' => '\t',
                        other => other,
                    });
                    escaped = false;
                } else if ch == '\\' {
                    escaped = true;
                } else if ch as u32 == u32::from(quote) {
                    j += off + 1;
                    closed = true;
                    break;
                } else if ch == '\n' {
                    break;
                } else {
                    value.push(ch);
                }
            }
            if !closed {
                return Err(syntax("token recognition error: unterminated string literal"));
            }
            out.push(Token::Str(value));
            i = j;
        } else if let Some(p) = PUNCT.iter().find(|p| s[i..].starts_with(**p)) {
            out.push(Token::Punct(p));
            i += p.len();
        } else {
            let ch = s[i..].chars().next().unwrap_or('?');
            return Err(syntax(&format!("token recognition error at: '{ch}'")));
        }
    }
    Ok(out)
}

/// The expression shapes the walk distinguishes (cel-go's `ast.ExprKind`).
#[derive(Debug)]
enum Expr {
    Call(String, Vec<Expr>),
    Ident(String),
    Select(Box<Expr>, String),
    Str(String),
    Int,
    List,
}

impl Expr {
    fn kind(&self) -> &'static str {
        match self {
            Expr::Call(..) => "CallKind",
            Expr::Ident(_) => "IdentKind",
            Expr::Select(..) => "SelectKind",
            Expr::Str(_) | Expr::Int => "LiteralKind",
            Expr::List => "ListKind",
        }
    }
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    /// Sub-expressions open (parentheses, call arguments): cel-go's parser refuses more than
    /// [`MAX_RECURSION_DEPTH`], and so does this one, so that a selector of any shape is parsed without unbounded
    /// recursion (it arrives in a query string a server reads).
    nesting: u32,
}

/// cel-go's default parser limit, on nested sub-expressions and on chained operations alike.
const MAX_RECURSION_DEPTH: u32 = 250;

fn too_deep(nested: bool) -> Error {
    invalid(if nested {
        format!("CEL parse error: expression recursion limit exceeded: {MAX_RECURSION_DEPTH}")
    } else {
        "CEL parse error: max recursion depth exceeded".to_owned()
    })
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn eat(&mut self, p: &str) -> bool {
        if matches!(self.peek(), Some(Token::Punct(q)) if *q == p) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, p: &str) -> Result<(), Error> {
        if self.eat(p) {
            return Ok(());
        }
        Err(match self.peek() {
            Some(t) => syntax(&format!("mismatched input '{}' expecting '{p}'", t.text())),
            None => syntax(&format!("mismatched input '<EOF>' expecting '{p}'")),
        })
    }

    /// A sub-expression, one level deeper.
    fn nested(&mut self) -> Result<Expr, Error> {
        if self.nesting >= MAX_RECURSION_DEPTH {
            return Err(too_deep(true));
        }
        self.nesting += 1;
        let e = self.or_expr();
        self.nesting -= 1;
        e
    }

    /// `a || b || c` as one call of every operand (cel-go balances the chain; either way it nests nothing).
    fn or_expr(&mut self) -> Result<Expr, Error> {
        let mut operands = vec![self.and_expr()?];
        while self.eat("||") {
            operands.push(self.and_expr()?);
        }
        Ok(if operands.len() == 1 {
            operands.remove(0)
        } else {
            Expr::Call("_||_".into(), operands)
        })
    }

    fn and_expr(&mut self) -> Result<Expr, Error> {
        let mut operands = vec![self.rel_expr()?];
        while self.eat("&&") {
            operands.push(self.rel_expr()?);
        }
        Ok(if operands.len() == 1 {
            operands.remove(0)
        } else {
            Expr::Call("_&&_".into(), operands)
        })
    }

    fn rel_expr(&mut self) -> Result<Expr, Error> {
        let mut left = self.unary()?;
        let mut chained = 0;
        while let Some(Token::Punct(op)) = self.peek() {
            let op = *op;
            if !["==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%"].contains(&op) {
                break;
            }
            chained += 1;
            if chained > MAX_RECURSION_DEPTH {
                return Err(too_deep(false));
            }
            self.pos += 1;
            let right = self.unary()?;
            left = Expr::Call(format!("_{op}_"), vec![left, right]);
        }
        Ok(left)
    }

    /// Prefix `!` and `-`, any number of them: an even number cancels out, as cel-go reads them.
    fn unary(&mut self) -> Result<Expr, Error> {
        let (mut not, mut neg) = (0usize, 0usize);
        loop {
            if self.eat("!") {
                not += 1;
            } else if self.eat("-") {
                neg += 1;
            } else {
                break;
            }
        }
        let mut e = self.postfix()?;
        if neg % 2 == 1 {
            e = Expr::Call("-_".into(), vec![e]);
        }
        if not % 2 == 1 {
            e = Expr::Call("!_".into(), vec![e]);
        }
        Ok(e)
    }

    fn postfix(&mut self) -> Result<Expr, Error> {
        let mut e = self.primary()?;
        let mut chained = 0;
        loop {
            chained += 1;
            if chained > MAX_RECURSION_DEPTH {
                return Err(too_deep(false));
            }
            if self.eat(".") {
                match self.peek().cloned() {
                    Some(Token::Ident(name)) => {
                        self.pos += 1;
                        if self.eat("(") {
                            let mut args = vec![e];
                            args.extend(self.args()?);
                            e = Expr::Call(name, args);
                        } else {
                            e = Expr::Select(Box::new(e), name);
                        }
                    }
                    Some(t) => return Err(syntax(&format!("mismatched input '{}' expecting IDENTIFIER", t.text()))),
                    None => return Err(syntax("mismatched input '<EOF>' expecting IDENTIFIER")),
                }
            } else {
                return Ok(e);
            }
        }
    }

    fn args(&mut self) -> Result<Vec<Expr>, Error> {
        let mut args = Vec::new();
        if self.eat(")") {
            return Ok(args);
        }
        loop {
            args.push(self.nested()?);
            if self.eat(")") {
                return Ok(args);
            }
            self.expect(",")?;
        }
    }

    fn primary(&mut self) -> Result<Expr, Error> {
        match self.peek().cloned() {
            Some(Token::Ident(name)) => {
                self.pos += 1;
                if self.eat("(") {
                    Ok(Expr::Call(name, self.args()?))
                } else {
                    Ok(Expr::Ident(name))
                }
            }
            Some(Token::Str(s)) => {
                self.pos += 1;
                Ok(Expr::Str(s))
            }
            Some(Token::Int(_)) => {
                self.pos += 1;
                Ok(Expr::Int)
            }
            Some(Token::Punct("(")) => {
                self.pos += 1;
                let e = self.nested()?;
                self.expect(")")?;
                Ok(e)
            }
            Some(Token::Punct("[")) => {
                self.pos += 1;
                while !self.eat("]") {
                    if self.peek().is_none() {
                        return Err(syntax("mismatched input '<EOF>' expecting ']'"));
                    }
                    self.pos += 1;
                }
                Ok(Expr::List)
            }
            Some(t) => Err(syntax(&format!("extraneous input '{}'", t.text()))),
            None => Err(syntax("mismatched input '<EOF>'")),
        }
    }
}

/// kube-apiserver's `walkExpr`: the root is a `shardRange()` call or `||` of such.
fn walk(e: &Expr, out: &mut Vec<(ShardField, ShardRange)>) -> Result<(), Error> {
    match e {
        Expr::Call(f, args) if f == "_||_" => args.iter().try_for_each(|a| walk(a, out)),
        Expr::Call(f, args) if f == "shardRange" => {
            out.push(shard_range_call(args)?);
            Ok(())
        }
        Expr::Call(f, _) => Err(invalid(format!(
            "unsupported function {f:?}; only shardRange() and || are allowed"
        ))),
        other => Err(invalid(format!(
            "unexpected expression kind {}; expected shardRange() call or || operator",
            other.kind()
        ))),
    }
}

fn shard_range_call(args: &[Expr]) -> Result<(ShardField, ShardRange), Error> {
    if args.len() != 3 {
        return Err(invalid(format!(
            "shardRange() requires exactly 3 arguments, got {}",
            args.len()
        )));
    }
    let path = field_path(&args[0]).map_err(|m| invalid(format!("shardRange() first argument: {m}")))?;
    let field = match path.as_str() {
        "object.metadata.uid" => ShardField::Uid,
        "object.metadata.namespace" => ShardField::Namespace,
        _ => {
            return Err(invalid(format!(
                "unsupported field path {path:?}; supported: object.metadata.uid, object.metadata.namespace"
            )));
        }
    };
    let start = hex_literal(&args[1], "hexStart")?;
    let end = hex_literal(&args[2], "hexEnd")?;
    if start >= end {
        return Err(invalid(format!(
            "shard range start {} must be less than end {}",
            hex_end(start),
            hex_end(end)
        )));
    }
    let start = u64::try_from(start).map_err(|_| invalid("shard range start must be below 0x10000000000000000"))?;
    Ok((field, ShardRange { start, end }))
}

fn field_path(e: &Expr) -> Result<String, String> {
    match e {
        Expr::Ident(name) => Ok(name.clone()),
        Expr::Select(operand, name) => Ok(format!("{}.{name}", field_path(operand)?)),
        other => Err(format!(
            "expected field path (e.g. object.metadata.uid), got expression kind {}",
            other.kind()
        )),
    }
}

fn hex_literal(e: &Expr, name: &str) -> Result<u128, Error> {
    let s = match e {
        Expr::Str(s) => s,
        Expr::Int => return Err(invalid(format!("{name} must be a string literal, got int64"))),
        other => {
            return Err(invalid(format!(
                "{name} must be a string literal (e.g. '0xff'), got expression kind {}",
                other.kind()
            )));
        }
    };
    let Some(hex) = s.strip_prefix("0x") else {
        return Err(invalid(format!("{name} must have '0x' prefix, got {s:?}")));
    };
    if hex.is_empty() {
        return Err(invalid(format!("{name}: hex value is required after '0x'")));
    }
    if hex.len() > 17 {
        return Err(invalid(format!(
            "{name}: hex value too long ({} chars, max 17): {hex:?}",
            hex.len()
        )));
    }
    if let Some(c) = hex.chars().find(|c| !matches!(c, '0'..='9' | 'a'..='f')) {
        return Err(invalid(format!(
            "{name}: invalid hex character {:?} in {s:?}",
            c.to_string()
        )));
    }
    if hex.len() == 17 {
        if s != "0x10000000000000000" {
            return Err(invalid(format!(
                "{name}: 17-digit hex value must be '0x10000000000000000' (2^64), got {s:?}"
            )));
        }
        return Ok(HASH_SPACE_END);
    }
    if hex.len() != 16 {
        let padded = format!("0x{hex:0>16}");
        return Err(invalid(format!(
            "{name} must be a 0x-prefixed 16-digit hex value, got {s:?} (did you mean {padded:?}?)"
        )));
    }
    u128::from_str_radix(hex, 16).map_err(|_| invalid(format!("{name}: invalid hex value {s:?}")))
}

#[cfg(test)]
#[path = "shard_tests.rs"]
mod tests;
