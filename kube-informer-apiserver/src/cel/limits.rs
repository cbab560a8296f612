//! cel-go's parser limits, as kube-apiserver keeps them (k8s.io/apiserver's CEL environments set none of their own,
//! so cel-go's `NewParser` defaults hold): an expression of more than 100,000 code points, more than 250 nested
//! `expr` rules (brackets, calls, ternary branches: its recursion listener) or more than 250 nested operations
//! (binary operators, ternaries, field selections, member calls and indexes: its visitor) is refused with cel-go's
//! message and no source position:
//!
//! ```text
//! ERROR: <input>:-1:0: expression code point size exceeds limit: size: 100001, limit 100000
//! ERROR: <input>:-1:0: expression recursion limit exceeded: 250
//! ERROR: <input>:-1:0: max recursion depth exceeded
//! ```
//!
//! [`measure`] finds both depths from the tokens alone, with an explicit stack instead of recursion, before the
//! `cel` crate's parser (which recurses through a dozen grammar rules per nesting level and through every chained
//! operation) sees the text: no expression reaches a parser, checker or interpreter deeper than these limits.

/// cel-go's default `MaxRecursionDepth`.
pub(crate) const MAX_RECURSION_DEPTH: u32 = 250;
/// cel-go's default `ExpressionSizeCodePointLimit`.
pub(crate) const EXPRESSION_SIZE_CODE_POINT_LIMIT: usize = 100_000;

/// How deep an expression nests, as cel-go's parser counts it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Depth {
    /// The deepest nesting of `expr` rules: the whole expression is 1, and each bracketed sub-expression (a
    /// parenthesis, a list element, a map key or value, a call argument, an index) and each ternary's `else` branch
    /// one more.
    pub(crate) nesting: u32,
    /// The most operations on one path from the root: binary operators but `&&` and `||`, ternaries, field
    /// selections, member calls and indexes (cel-go's visitor counts these).
    pub(crate) operations: u32,
}

/// Why an expression is refused before parsing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Exceeded {
    /// More code points than the limit (the count).
    Size(usize),
    /// `expr` rules nested deeper than the limit (cel-go's recursion listener).
    Nesting(u32),
    /// Operations nested deeper than the limit (cel-go's visitor).
    Operations,
}

impl Exceeded {
    /// cel-go's message (reported at no location).
    pub(crate) fn message(&self) -> String {
        match self {
            Exceeded::Size(n) => {
                format!("expression code point size exceeds limit: size: {n}, limit {EXPRESSION_SIZE_CODE_POINT_LIMIT}")
            }
            Exceeded::Nesting(max) => format!("expression recursion limit exceeded: {max}"),
            Exceeded::Operations => "max recursion depth exceeded".to_owned(),
        }
    }

    /// The issue as cel-go renders one without a location.
    pub(crate) fn issue(&self) -> String {
        format!("ERROR: <input>:-1:0: {}", self.message())
    }
}

/// A token, as far as nesting is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    /// A literal.
    Atom,
    /// An identifier (or reserved word other than `in`).
    Ident,
    Open(Bracket),
    Close(Bracket),
    Dot,
    Comma,
    Question,
    Colon,
    /// `!` or `-` before an operand.
    Prefix,
    /// `-` (a prefix where an operand is expected, else a binary operator).
    Minus,
    /// A binary operator and its precedence (`||` 1, `&&` 2, relations 3, `+ -` 4, `* / %` 5).
    Binary(u8),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bracket {
    Paren,
    Square,
    Brace,
}

/// CEL's lexer, reduced to what nesting needs: strings, bytes and comments skipped as the grammar delimits them.
struct Lexer<'a> {
    s: &'a [u8],
    at: usize,
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> u8 {
        self.s.get(self.at + ahead).copied().unwrap_or(0)
    }

    /// Skips a string whose opening quote is at `self.at` (`raw`: no escapes).
    fn string(&mut self, raw: bool) {
        let q = self.peek(0);
        let triple = self.peek(1) == q && self.peek(2) == q;
        self.at += if triple { 3 } else { 1 };
        while self.at < self.s.len() {
            let c = self.s[self.at];
            if c == b'\\' && !raw {
                self.at += 2;
                continue;
            }
            if triple {
                if c == q && self.peek(1) == q && self.peek(2) == q {
                    self.at += 3;
                    return;
                }
            } else if c == q {
                self.at += 1;
                return;
            } else if c == b'\n' || c == b'\r' {
                // Unterminated: the parser reports it.
                return;
            }
            self.at += 1;
        }
    }

    fn token(&mut self) -> Option<Token> {
        loop {
            let c = self.peek(0);
            match c {
                0 if self.at >= self.s.len() => return None,
                b' ' | b'\t' | b'\r' | b'\n' | 0x0c => self.at += 1,
                b'/' if self.peek(1) == b'/' => {
                    while self.at < self.s.len() && self.s[self.at] != b'\n' {
                        self.at += 1;
                    }
                }
                _ => break,
            }
        }
        let c = self.peek(0);
        let two = [c, self.peek(1)];
        let token = match c {
            b'"' | b'\'' => {
                self.string(false);
                return Some(Token::Atom);
            }
            b'r' | b'R' | b'b' | b'B' if matches!(self.peek(1), b'"' | b'\'') => {
                self.at += 1;
                self.string(matches!(c, b'r' | b'R'));
                return Some(Token::Atom);
            }
            b'r' | b'R' | b'b' | b'B'
                if matches!(
                    (c, self.peek(1)),
                    (b'b' | b'B', b'r' | b'R') | (b'r' | b'R', b'b' | b'B')
                ) && matches!(self.peek(2), b'"' | b'\'') =>
            {
                self.at += 2;
                self.string(true);
                return Some(Token::Atom);
            }
            b'0'..=b'9' => {
                self.number();
                return Some(Token::Atom);
            }
            b'.' if self.peek(1).is_ascii_digit() => {
                self.number();
                return Some(Token::Atom);
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let start = self.at;
                while matches!(self.peek(0), b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_') {
                    self.at += 1;
                }
                return Some(match &self.s[start..self.at] {
                    b"in" => Token::Binary(3),
                    b"true" | b"false" | b"null" => Token::Atom,
                    _ => Token::Ident,
                });
            }
            b'`' => {
                // An escaped identifier (a field name): up to the closing backquote.
                self.at += 1;
                while self.at < self.s.len() && !matches!(self.s[self.at], b'`' | b'\n') {
                    self.at += 1;
                }
                self.at += 1;
                return Some(Token::Ident);
            }
            _ => match two {
                [b'|', b'|'] => Token::Binary(1),
                [b'&', b'&'] => Token::Binary(2),
                [b'=', b'='] | [b'!', b'='] | [b'<', b'='] | [b'>', b'='] => Token::Binary(3),
                _ => {
                    self.at += 1;
                    return Some(match c {
                        b'<' | b'>' => Token::Binary(3),
                        b'+' => Token::Binary(4),
                        b'*' | b'/' | b'%' => Token::Binary(5),
                        b'-' => Token::Minus,
                        b'!' => Token::Prefix,
                        b'(' => Token::Open(Bracket::Paren),
                        b'[' => Token::Open(Bracket::Square),
                        b'{' => Token::Open(Bracket::Brace),
                        b')' => Token::Close(Bracket::Paren),
                        b']' => Token::Close(Bracket::Square),
                        b'}' => Token::Close(Bracket::Brace),
                        b'.' => Token::Dot,
                        b',' => Token::Comma,
                        b'?' => Token::Question,
                        b':' => Token::Colon,
                        // Anything else is a syntax error the parser reports; it nests nothing.
                        _ => Token::Atom,
                    });
                }
            },
        };
        self.at += 2;
        Some(token)
    }

    /// A number: digits, hex, a fraction, an exponent, a `u` suffix.
    fn number(&mut self) {
        if self.peek(0) == b'0' && matches!(self.peek(1), b'x' | b'X') {
            self.at += 2;
            while self.peek(0).is_ascii_hexdigit() {
                self.at += 1;
            }
        } else {
            while self.peek(0).is_ascii_digit() {
                self.at += 1;
            }
            if self.peek(0) == b'.' && self.peek(1).is_ascii_digit() {
                self.at += 1;
                while self.peek(0).is_ascii_digit() {
                    self.at += 1;
                }
            }
            if matches!(self.peek(0), b'e' | b'E') {
                let sign = usize::from(matches!(self.peek(1), b'+' | b'-'));
                if self.peek(1 + sign).is_ascii_digit() {
                    self.at += 1 + sign;
                    while self.peek(0).is_ascii_digit() {
                        self.at += 1;
                    }
                }
            }
        }
        if matches!(self.peek(0), b'u' | b'U') {
            self.at += 1;
        }
    }
}

impl Iterator for Lexer<'_> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        self.token()
    }
}

type Tokens<'a> = std::iter::Peekable<Lexer<'a>>;

/// An operator waiting for its right operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pending {
    /// A binary operator of this precedence; `counted` unless `&&` or `||`.
    Binary { precedence: u8, counted: bool },
    /// `cond ?`, waiting for its `then` branch.
    Then,
    /// `cond ? then :`, waiting for its `else` branch (a nested `expr`).
    Else,
}

/// What a bracket holds, and what its content becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Holder {
    /// The whole expression.
    Top,
    /// `( e )`: the operand is `e`.
    Group,
    /// A list, map or message literal, or a global call's arguments: the deepest element.
    Elements,
    /// A member call's arguments or an index: one operation over the target and the deepest element.
    Operation { target: u32 },
}

/// One bracket level being read.
struct Frame {
    holder: Holder,
    /// Operand depths (operations below each).
    operands: Vec<u32>,
    pending: Vec<Pending>,
    /// The deepest element finished so far (elements are separated by `,` and `:`).
    elements: u32,
    /// `else` branches open in this frame (each a nested `expr`).
    elses: u32,
}

impl Frame {
    fn new(holder: Holder) -> Frame {
        Frame {
            holder,
            operands: Vec::new(),
            pending: Vec::new(),
            elements: 0,
            elses: 0,
        }
    }

    /// Applies pending operators binding tighter than `precedence` (0: all of them but `?`).
    fn reduce(&mut self, precedence: u8) {
        while let Some(&Pending::Binary { precedence: p, counted }) = self.pending.last() {
            if p < precedence {
                break;
            }
            self.pending.pop();
            let right = self.operands.pop().unwrap_or(0);
            let left = self.operands.pop().unwrap_or(0);
            self.operands.push(left.max(right).saturating_add(u32::from(counted)));
        }
    }

    /// Applies every pending operator, ternaries included: the element's depth.
    fn finish_element(&mut self) {
        loop {
            self.reduce(0);
            match self.pending.pop() {
                Some(Pending::Else) => {
                    let otherwise = self.operands.pop().unwrap_or(0);
                    let then = self.operands.pop().unwrap_or(0);
                    let cond = self.operands.pop().unwrap_or(0);
                    self.operands.push(cond.max(then).max(otherwise).saturating_add(1));
                }
                // An unfinished ternary: a syntax error the parser reports.
                Some(Pending::Then) => {}
                Some(Pending::Binary { .. }) => unreachable!("reduce(0) applies every binary operator"),
                None => break,
            }
        }
        let deepest = self.operands.drain(..).max().unwrap_or(0);
        self.elements = self.elements.max(deepest);
        self.elses = 0;
    }
}

/// Measures `source` against cel-go's limits (`max` for both depths; kube-apiserver's is
/// [`MAX_RECURSION_DEPTH`]). Malformed text is measured as far as it goes: the parser reports its syntax errors.
pub(crate) fn measure(source: &str, max: u32) -> Result<Depth, Exceeded> {
    let size = source.chars().count();
    if size > EXPRESSION_SIZE_CODE_POINT_LIMIT {
        return Err(Exceeded::Size(size));
    }
    let mut tokens = Lexer {
        s: source.as_bytes(),
        at: 0,
    }
    .peekable();
    let mut m = Measure {
        frames: vec![Frame::new(Holder::Top)],
        depth: Depth::default(),
        nesting: 1,
        want_operand: true,
        chain: None,
        max,
    };
    while let Some(token) = tokens.next() {
        if m.want_operand {
            m.operand(token, &mut tokens)?;
        } else {
            m.operator(token, &mut tokens);
        }
        m.check()?;
    }
    m.end_chain();
    // Whatever is left unclosed (a syntax error) is measured as if closed.
    while m.frames.len() > 1 {
        m.close();
    }
    m.finish_element();
    let deepest = m.frame().elements;
    m.depth.operations = m.depth.operations.max(deepest);
    m.check()?;
    Ok(m.depth)
}

/// The state of [`measure`].
struct Measure {
    /// The brackets open, the whole expression first (never closed).
    frames: Vec<Frame>,
    depth: Depth,
    /// `expr` rules open around the current token: one per frame and per `else` branch open.
    nesting: u32,
    /// True where an operand is expected (a prefix `-`, a grouping `(`, a list `[`, a map `{`).
    want_operand: bool,
    /// The operand on top is a name (`a.b.c`) whose selections are not counted yet: followed by `{` it is a
    /// message type's name, not selections. The selections so far.
    chain: Option<u32>,
    max: u32,
}

impl Measure {
    fn frame(&mut self) -> &mut Frame {
        let last = self.frames.len() - 1;
        &mut self.frames[last]
    }

    /// The deepest operation seen so far is the operand on top (every other one is at most as deep).
    fn check(&mut self) -> Result<(), Exceeded> {
        if self.chain.is_none()
            && let Some(&top) = self.frames.last().and_then(|f| f.operands.last())
        {
            self.depth.operations = self.depth.operations.max(top);
        }
        if self.depth.operations > self.max {
            return Err(Exceeded::Operations);
        }
        Ok(())
    }

    /// An operand starts an `expr` wherever one was expected: cel-go's listener counts it there.
    fn start_operand(&mut self) -> Result<(), Exceeded> {
        self.depth.nesting = self.depth.nesting.max(self.nesting);
        if self.nesting > self.max {
            return Err(Exceeded::Nesting(self.max));
        }
        Ok(())
    }

    fn open(&mut self, holder: Holder) {
        self.frames.push(Frame::new(holder));
        self.nesting += 1;
        self.want_operand = true;
    }

    /// A name's selections are selections after all.
    fn end_chain(&mut self) {
        if let Some(selections) = self.chain.take()
            && let Some(top) = self.frame().operands.last_mut()
        {
            *top = top.saturating_add(selections);
        }
    }

    fn operand(&mut self, token: Token, tokens: &mut Tokens<'_>) -> Result<(), Exceeded> {
        match token {
            Token::Atom => {
                self.start_operand()?;
                self.frame().operands.push(0);
                self.want_operand = false;
            }
            Token::Ident => {
                self.start_operand()?;
                if tokens.peek() == Some(&Token::Open(Bracket::Paren)) {
                    tokens.next();
                    self.open(Holder::Elements);
                } else {
                    self.frame().operands.push(0);
                    self.want_operand = false;
                    self.chain = Some(0);
                }
            }
            Token::Open(b) => {
                self.start_operand()?;
                self.open(if b == Bracket::Paren {
                    Holder::Group
                } else {
                    Holder::Elements
                });
            }
            // A closing bracket right after `(`, `[`, `{` or `,`: an empty call, list or map, or a trailing comma.
            Token::Close(_) => self.close(),
            // Prefixes, a leading `.` of a qualified name, an optional element's `?`: nothing nests. The rest are
            // syntax errors the parser reports.
            Token::Prefix
            | Token::Minus
            | Token::Dot
            | Token::Question
            | Token::Comma
            | Token::Colon
            | Token::Binary(_) => {}
        }
        Ok(())
    }

    fn operator(&mut self, token: Token, tokens: &mut Tokens<'_>) {
        if !matches!(token, Token::Dot | Token::Open(Bracket::Brace)) {
            self.end_chain();
        }
        match token {
            Token::Binary(p) => self.binary(p, p >= 3),
            Token::Minus => self.binary(4, true),
            Token::Question => {
                let frame = self.frame();
                frame.reduce(1);
                frame.pending.push(Pending::Then);
                self.want_operand = true;
            }
            Token::Colon => {
                let frame = self.frame();
                frame.reduce(1);
                if frame.pending.last() == Some(&Pending::Then) {
                    frame.pending.pop();
                    frame.pending.push(Pending::Else);
                    frame.elses += 1;
                    self.nesting += 1;
                } else {
                    // A map entry's or a message field's `:`.
                    self.finish_element();
                }
                self.want_operand = true;
            }
            Token::Comma => {
                self.finish_element();
                self.want_operand = true;
            }
            Token::Dot => {
                // `.field`, `.?field`, `.method(args)`, or the next part of a message type's name.
                let optional = tokens.peek() == Some(&Token::Question);
                if optional {
                    tokens.next();
                }
                if tokens.peek() == Some(&Token::Ident) {
                    tokens.next();
                }
                if tokens.peek() == Some(&Token::Open(Bracket::Paren)) {
                    tokens.next();
                    self.end_chain();
                    let target = self.frame().operands.pop().unwrap_or(0);
                    self.open(Holder::Operation { target });
                } else if let (Some(selections), false) = (self.chain.as_mut(), optional) {
                    *selections += 1;
                } else {
                    self.end_chain();
                    if let Some(top) = self.frame().operands.last_mut() {
                        *top = top.saturating_add(1);
                    }
                }
            }
            Token::Open(Bracket::Square) => {
                if tokens.peek() == Some(&Token::Question) {
                    tokens.next();
                }
                let target = self.frame().operands.pop().unwrap_or(0);
                self.open(Holder::Operation { target });
            }
            Token::Open(Bracket::Brace) => {
                // A message literal: its type's name counts for nothing.
                self.chain = None;
                self.frame().operands.pop();
                self.open(Holder::Elements);
            }
            Token::Close(_) => self.close(),
            // Two operands in a row: a syntax error; the second one is measured as a group.
            Token::Open(Bracket::Paren) => self.open(Holder::Group),
            Token::Atom | Token::Ident | Token::Prefix => {}
        }
    }

    fn binary(&mut self, precedence: u8, counted: bool) {
        let frame = self.frame();
        frame.reduce(precedence);
        frame.pending.push(Pending::Binary { precedence, counted });
        self.want_operand = true;
    }

    /// Ends an element of the innermost frame (at `,`, a map's `:`, or its closing bracket).
    fn finish_element(&mut self) {
        let frame = self.frame();
        let elses = frame.elses;
        frame.finish_element();
        self.nesting = self.nesting.saturating_sub(elses);
    }

    /// Closes the innermost frame (a stray closing bracket at the top closes nothing), giving its parent the
    /// operand it makes.
    fn close(&mut self) {
        if self.frames.len() < 2 {
            return;
        }
        self.end_chain();
        self.finish_element();
        let Some(frame) = self.frames.pop() else {
            return;
        };
        self.nesting = self.nesting.saturating_sub(1);
        let value = match frame.holder {
            Holder::Top | Holder::Group | Holder::Elements => frame.elements,
            Holder::Operation { target } => target.max(frame.elements).saturating_add(1),
        };
        self.frame().operands.push(value);
        self.want_operand = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(s: &str) -> Depth {
        measure(s, u32::MAX).unwrap_or_else(|e| panic!("{s}: {e:?}"))
    }

    #[test]
    fn depths_follow_cel_go_counting() {
        let cases: &[(&str, u32, u32)] = &[
            ("1", 1, 0),
            ("a", 1, 0),
            ("a.b.c", 1, 2),
            ("a.b.c.d()", 1, 3),
            ("a.b.c.d(1)", 2, 3),
            ("((((1))))", 5, 0),
            ("[[[1]]]", 4, 0),
            ("1 + 2 + 3", 1, 2),
            ("1 + 2 * 3", 1, 2),
            ("1 * 2 + 3 * 4 + 5", 1, 3),
            ("a && b && c || d", 1, 0),
            ("a < b && c < d", 1, 1),
            ("a ? b : c", 2, 1),
            ("a ? b : c ? d : e", 3, 2),
            ("f(g(h(1)))", 4, 0),
            ("f(a.b, c + d)", 2, 1),
            ("x.f(a.b.c)", 2, 3),
            ("a[1][2][3]", 2, 3),
            ("a[b[c[1]]]", 4, 3),
            ("{'a': {'b': 1}}", 3, 0),
            ("-a.b", 1, 1),
            ("!!!a", 1, 0),
            ("a.b.C{f: 1 + 2}", 2, 1),
            ("[1, 2, 3].all(x, x > 0)", 2, 2),
            ("'((((' + \"[[\" + r'{{' + b'))'", 1, 3),
            ("'''a\n(b''' == 1 // (((", 1, 1),
            ("a.?b.c", 1, 2),
            ("a[?0]", 2, 1),
            ("1.5e-3 + .5 + 0x1Fu", 1, 2),
        ];
        for &(s, nesting, operations) in cases {
            assert_eq!(measured(s), Depth { nesting, operations }, "{s}");
        }
    }

    /// cel-go's parser tests for its limits (`parser_test.go`, with `MaxRecursionDepth(32)`).
    #[test]
    fn cel_go_limit_cases() {
        let refused: &[(String, Exceeded)] = &[
            (
                format!("{}'not fine'{}", "[".repeat(32), "]".repeat(32)),
                Exceeded::Nesting(32),
            ),
            (
                (1..=34).map(|i| i.to_string()).collect::<Vec<_>>().join(" + "),
                Exceeded::Operations,
            ),
            (
                "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.A.B.C.D.E.F.G.H".to_owned(),
                Exceeded::Operations,
            ),
            (
                format!("a{}", (1..=33).map(|i| format!("[{i}]")).collect::<String>()),
                Exceeded::Operations,
            ),
            (
                format!(
                    "a < {}",
                    (1..=33).map(|i| i.to_string()).collect::<Vec<_>>().join(" < ")
                ),
                Exceeded::Operations,
            ),
            (
                vec![format!("a{}", (1..=20).map(|i| format!("[{i}]")).collect::<String>()); 14].join(" !=\n"),
                Exceeded::Operations,
            ),
        ];
        for (s, want) in refused {
            assert_eq!(measure(s, 32).as_ref(), Err(want), "{s}");
        }
        // One fewer of each is fine.
        for s in [
            format!("{}'fine'{}", "[".repeat(31), "]".repeat(31)),
            (1..=33).map(|i| i.to_string()).collect::<Vec<_>>().join(" + "),
            format!("a{}", (1..=32).map(|i| format!("[{i}]")).collect::<String>()),
        ] {
            assert!(measure(&s, 32).is_ok(), "{s}");
        }
    }

    #[test]
    fn the_code_point_limit_counts_characters_not_bytes() {
        let ok = "'é'".to_owned() + &" ".repeat(EXPRESSION_SIZE_CODE_POINT_LIMIT - 3);
        assert!(ok.len() > EXPRESSION_SIZE_CODE_POINT_LIMIT);
        assert!(measure(&ok, MAX_RECURSION_DEPTH).is_ok());
        let over = ok + " ";
        let e = measure(&over, MAX_RECURSION_DEPTH).unwrap_err();
        assert_eq!(e, Exceeded::Size(EXPRESSION_SIZE_CODE_POINT_LIMIT + 1));
        assert_eq!(
            e.issue(),
            "ERROR: <input>:-1:0: expression code point size exceeds limit: size: 100001, limit 100000"
        );
    }

    #[test]
    fn ten_times_past_the_limits_is_measured_without_recursion() {
        let n = 10 * MAX_RECURSION_DEPTH as usize;
        let deep = [
            format!("{}1{}", "(".repeat(n), ")".repeat(n)),
            format!("{} > 0", vec!["1"; n].join(" + ")),
            format!("{}1", "true ? 1 : ".repeat(n)),
            format!("a{}", ".b".repeat(n)),
            "[".repeat(n),
            // Prefixes nest nothing: `(ops+='-')+ member` is one rule.
            format!("{}1", "-".repeat(n)),
        ];
        // On a small stack: the measure itself holds no recursion.
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || {
                for s in &deep[..4] {
                    assert!(measure(s, MAX_RECURSION_DEPTH).is_err(), "{}", &s[..20]);
                }
                assert_eq!(
                    measure(&deep[4], MAX_RECURSION_DEPTH),
                    Err(Exceeded::Nesting(MAX_RECURSION_DEPTH))
                );
                assert_eq!(
                    measure(&deep[5], MAX_RECURSION_DEPTH),
                    Ok(Depth {
                        nesting: 1,
                        operations: 0
                    })
                );
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
