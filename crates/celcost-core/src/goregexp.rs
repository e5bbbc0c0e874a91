//! Go regular expressions (`regexp` / `regexp/syntax`, RE2 syntax with Perl extensions), as the
//! API server compiles a schema's `pattern`: the parse errors with Go's exact texts, and
//! matching (through an equivalent `regex` crate expression).
//!
//! The parser follows `regexp/syntax.parse` token by token. It keeps only the repetition tree
//! that the "invalid repeat count" check needs. Not reproduced: the "expression too large" and
//! "expression nests too deeply" limits (only reached by patterns of many kilobytes).

mod longest;

pub use longest::longest_match;

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write as _;

/// A Go `regexp/syntax` parse error (`*syntax.Error`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GoRegexpError {
    code: &'static str,
    expr: String,
}

impl std::fmt::Display for GoRegexpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error parsing regexp: {}: `{}`", self.code, self.expr)
    }
}

const ERR_INVALID_CHAR_RANGE: &str = "invalid character class range";
const ERR_INVALID_ESCAPE: &str = "invalid escape sequence";
const ERR_INVALID_NAMED_CAPTURE: &str = "invalid named capture";
const ERR_INVALID_PERL_OP: &str = "invalid or unsupported Perl syntax";
const ERR_INVALID_REPEAT_OP: &str = "invalid nested repetition operator";
const ERR_INVALID_REPEAT_SIZE: &str = "invalid repeat count";
const ERR_MISSING_BRACKET: &str = "missing closing ]";
const ERR_MISSING_PAREN: &str = "missing closing )";
const ERR_MISSING_REPEAT_ARGUMENT: &str = "missing argument to repetition operator";
const ERR_TRAILING_BACKSLASH: &str = "trailing backslash at end of expression";
const ERR_UNEXPECTED_PAREN: &str = "unexpected )";

fn err(code: &'static str, expr: &str) -> GoRegexpError {
    GoRegexpError {
        code,
        expr: expr.to_string(),
    }
}

/// `regexp.Compile(pattern)`'s error, if any.
pub fn check(pattern: &str) -> Result<(), GoRegexpError> {
    Parser::parse(pattern).map(|_| ())
}

/// `regexp.MatchString(pattern, s)`.
pub fn is_match(pattern: &str, s: &str) -> Result<bool, GoRegexpError> {
    thread_local! {
        /// Compiled patterns: the same patterns come back for every default in a schema.
        static CACHE: RefCell<HashMap<String, Option<regex::Regex>>> = RefCell::new(HashMap::new());
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if !cache.contains_key(pattern) {
            if cache.len() >= 256 {
                cache.clear();
            }
            let re = compile(pattern)?;
            cache.insert(pattern.to_string(), re);
        }
        // A Go-valid pattern the regex crate cannot build (e.g. a Unicode script newer than its
        // tables) matches nothing rather than failing the validation run.
        Ok(cache[pattern].as_ref().is_some_and(|re| re.is_match(s)))
    })
}

/// `regexp.Compile(pattern)` as an equivalent `regex::Regex` (`None` if the regex crate
/// cannot build it).
pub fn compile(pattern: &str) -> Result<Option<regex::Regex>, GoRegexpError> {
    let translated = Parser::parse(pattern)?;
    Ok(regex::RegexBuilder::new(&translated)
        .size_limit(1 << 28)
        .build()
        .ok())
}

/// One entry of the parse stack.
#[derive(Clone, Copy)]
enum Item {
    /// An expression: an index into the repetition tree, and where its translation starts.
    Node {
        id: usize,
        start: usize,
    },
    /// `(` (capturing or not), and where its translation starts.
    LeftParen {
        start: usize,
    },
    VerticalBar,
}

/// A node of the repetition tree.
struct Node {
    /// `{min,max}` repetitions.
    range: Option<(i32, i32)>,
    /// Any repetition (`*`, `+`, `?`, `{…}`).
    repetition: bool,
    subs: Vec<usize>,
}

struct Parser<'a> {
    whole: &'a str,
    stack: Vec<Item>,
    nodes: Vec<Node>,
    /// The equivalent `regex` crate expression.
    out: String,
    /// Flag groups (`(?i)`) not written yet: in Go a repetition right after one applies to the
    /// expression before it, so they are written after such repetitions.
    pending_flags: String,
}

impl<'a> Parser<'a> {
    fn parse(s: &'a str) -> Result<String, GoRegexpError> {
        let mut p = Parser {
            whole: s,
            stack: Vec::new(),
            nodes: Vec::new(),
            out: String::with_capacity(s.len() + 8),
            pending_flags: String::new(),
        };
        let mut t = s;
        let mut last_repeat: &str = "";
        while !t.is_empty() {
            let mut repeat: &str = "";
            let c = t.as_bytes()[0];
            match c {
                b'(' => {
                    if t.len() >= 2 && t.as_bytes()[1] == b'?' {
                        t = p.parse_perl_flags(t)?;
                    } else {
                        p.left_paren("(");
                        t = &t[1..];
                    }
                }
                b'|' => {
                    p.concat();
                    if !p.swap_vertical_bar() {
                        p.stack.push(Item::VerticalBar);
                    }
                    p.emit("|");
                    t = &t[1..];
                }
                b')' => {
                    p.parse_right_paren()?;
                    t = &t[1..];
                }
                b'^' | b'$' | b'.' => {
                    p.leaf(&t[..1]);
                    t = &t[1..];
                }
                b'[' => t = p.parse_class(t)?,
                b'*' | b'+' | b'?' => {
                    let before = t;
                    let after = p.repeat(None, before, &t[1..], last_repeat)?;
                    repeat = before;
                    t = after;
                }
                b'{' => match parse_repeat(t) {
                    None => {
                        p.literal('{');
                        t = &t[1..];
                    }
                    Some((min, max, after)) => {
                        let before = t;
                        if !(0..=1000).contains(&min) || max > 1000 || (max >= 0 && min > max) {
                            return Err(err(
                                ERR_INVALID_REPEAT_SIZE,
                                &before[..before.len() - after.len()],
                            ));
                        }
                        let after = p.repeat(Some((min, max)), before, after, last_repeat)?;
                        repeat = before;
                        t = after;
                    }
                },
                b'\\' => t = p.parse_backslash(t)?,
                _ => {
                    let ch = t.chars().next().unwrap_or_default();
                    p.literal(ch);
                    t = &t[ch.len_utf8()..];
                }
            }
            last_repeat = repeat;
        }
        p.concat();
        if p.swap_vertical_bar() {
            p.stack.pop();
        }
        p.alternate();
        if p.stack.len() != 1 {
            return Err(err(ERR_MISSING_PAREN, s));
        }
        p.emit("");
        Ok(p.out)
    }

    /// Writes translated text (after any pending flag groups).
    fn emit(&mut self, text: &str) {
        if !self.pending_flags.is_empty() {
            self.out.push_str(&self.pending_flags);
            self.pending_flags.clear();
        }
        self.out.push_str(text);
    }

    fn new_node(&mut self, range: Option<(i32, i32)>, repetition: bool, subs: Vec<usize>) -> usize {
        self.nodes.push(Node {
            range,
            repetition,
            subs,
        });
        self.nodes.len() - 1
    }

    /// Pushes an expression without subexpressions, translated as `text`.
    fn leaf(&mut self, text: &str) {
        self.emit("");
        let start = self.out.len();
        self.out.push_str(text);
        let id = self.new_node(None, false, Vec::new());
        self.stack.push(Item::Node { id, start });
    }

    fn literal(&mut self, c: char) {
        let mut text = String::new();
        push_literal(&mut text, c);
        self.leaf(&text);
    }

    /// Pushes a `(`, translated as `text`.
    fn left_paren(&mut self, text: &str) {
        self.emit("");
        self.stack.push(Item::LeftParen {
            start: self.out.len(),
        });
        self.out.push_str(text);
    }

    /// `parser.repeat`: applies a repetition to the top of the stack; `range` is `None` for
    /// `*`, `+` and `?`. Returns the rest after the operator (and a non-greedy `?`).
    fn repeat(
        &mut self,
        range: Option<(i32, i32)>,
        before: &'a str,
        mut after: &'a str,
        last_repeat: &'a str,
    ) -> Result<&'a str, GoRegexpError> {
        if after.starts_with('?') {
            after = &after[1..];
        }
        if !last_repeat.is_empty() {
            return Err(err(
                ERR_INVALID_REPEAT_OP,
                &last_repeat[..last_repeat.len() - after.len()],
            ));
        }
        let operator = &before[..before.len() - after.len()];
        let Some(Item::Node { id: sub, start }) = self.stack.pop() else {
            return Err(err(ERR_MISSING_REPEAT_ARGUMENT, operator));
        };
        let id = self.new_node(range, true, vec![sub]);
        self.stack.push(Item::Node { id, start });
        if let Some((min, max)) = range
            && (min >= 2 || max >= 2)
            && !self.repeat_is_valid(id, 1000)
        {
            return Err(err(ERR_INVALID_REPEAT_SIZE, operator));
        }
        // A repetition of a repetition (a flag group was between them) needs a group in the
        // regex crate's syntax.
        if self.nodes[sub].repetition {
            self.out.insert_str(start, "(?:");
            self.out.push(')');
        }
        self.out.push_str(operator);
        Ok(after)
    }

    /// `repeatIsValid`: nested counted repetitions may not multiply beyond `n`.
    fn repeat_is_valid(&self, re: usize, mut n: i32) -> bool {
        if let Some((min, max)) = self.nodes[re].range {
            let mut m = max;
            if m == 0 {
                return true;
            }
            if m < 0 {
                m = min;
            }
            if m > n {
                return false;
            }
            if m > 0 {
                n /= m;
            }
        }
        self.nodes[re]
            .subs
            .iter()
            .all(|&s| self.repeat_is_valid(s, n))
    }

    /// The expressions above the topmost `(` or `|`, and where the first one starts.
    fn take_operands(&mut self) -> (Vec<usize>, usize) {
        let mut i = self.stack.len();
        while i > 0 && matches!(self.stack[i - 1], Item::Node { .. }) {
            i -= 1;
        }
        let mut start = self.out.len();
        let subs = self
            .stack
            .drain(i..)
            .filter_map(|it| match it {
                Item::Node { id, start: s } => {
                    start = start.min(s);
                    Some(id)
                }
                _ => None,
            })
            .collect();
        (subs, start)
    }

    /// `concat` and `alternate`: the operands above the topmost marker become one expression.
    fn collapse(&mut self) {
        let (subs, start) = self.take_operands();
        let id = self.new_node(None, false, subs);
        self.stack.push(Item::Node { id, start });
    }

    fn concat(&mut self) {
        self.collapse();
    }

    fn alternate(&mut self) {
        self.collapse();
    }

    /// `swapVerticalBar`: moves the expression on top below a `|` marker beneath it.
    fn swap_vertical_bar(&mut self) -> bool {
        let n = self.stack.len();
        if n >= 2 && matches!(self.stack[n - 2], Item::VerticalBar) {
            self.stack.swap(n - 1, n - 2);
            return true;
        }
        false
    }

    /// `parseRightParen`.
    fn parse_right_paren(&mut self) -> Result<(), GoRegexpError> {
        self.concat();
        if self.swap_vertical_bar() {
            self.stack.pop();
        }
        self.alternate();
        let n = self.stack.len();
        if n < 2 {
            return Err(err(ERR_UNEXPECTED_PAREN, self.whole));
        }
        let re1 = self.stack.pop();
        let Some(Item::LeftParen { start }) = self.stack.pop() else {
            return Err(err(ERR_UNEXPECTED_PAREN, self.whole));
        };
        self.emit(")");
        if let Some(Item::Node { id: sub, .. }) = re1 {
            let id = self.new_node(None, false, vec![sub]);
            self.stack.push(Item::Node { id, start });
        }
        Ok(())
    }

    /// `parsePerlFlags`: `(?P<name>`, `(?<name>`, `(?flags)`, `(?flags:`.
    fn parse_perl_flags(&mut self, s: &'a str) -> Result<&'a str, GoRegexpError> {
        let b = s.as_bytes();
        let starts_with_p = s.len() > 4 && b[2] == b'P' && b[3] == b'<';
        let starts_with_name = s.len() > 3 && b[2] == b'<';
        if starts_with_p || starts_with_name {
            let expr_start = if starts_with_name { 3 } else { 4 };
            let Some(end) = s.find('>') else {
                return Err(err(ERR_INVALID_NAMED_CAPTURE, s));
            };
            let capture = &s[..end + 1];
            let name = &s[expr_start.min(end)..end];
            if name.is_empty() || !name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric()) {
                return Err(err(ERR_INVALID_NAMED_CAPTURE, capture));
            }
            // Names do not matter for matching.
            self.left_paren("(");
            return Ok(&s[end + 1..]);
        }
        let mut t = &s[2..];
        let mut negated = false;
        let mut saw_flag = false;
        while let Some(c) = t.chars().next() {
            t = &t[c.len_utf8()..];
            match c {
                'i' | 'm' | 's' | 'U' => saw_flag = true,
                '-' => {
                    if negated {
                        break;
                    }
                    negated = true;
                    saw_flag = false;
                }
                ':' | ')' => {
                    if negated && !saw_flag {
                        break;
                    }
                    // The same flag syntax in the `regex` crate, which has no empty `(?)`.
                    let group = &s[..s.len() - t.len()];
                    if c == ':' {
                        self.left_paren(group);
                    } else if group != "(?)" {
                        self.pending_flags.push_str(group);
                    }
                    return Ok(t);
                }
                _ => break,
            }
        }
        Err(err(ERR_INVALID_PERL_OP, &s[..s.len() - t.len()]))
    }

    /// A `\` outside a class: assertions, `\Q…\E`, `\p{…}`, Perl classes, escapes.
    fn parse_backslash(&mut self, t: &'a str) -> Result<&'a str, GoRegexpError> {
        let b = t.as_bytes();
        if b.len() >= 2 {
            match b[1] {
                b'A' | b'z' => {
                    self.leaf(&t[..2]);
                    return Ok(&t[2..]);
                }
                b'b' | b'B' => {
                    self.leaf(&format!("(?-u:{})", &t[..2]));
                    return Ok(&t[2..]);
                }
                b'C' => return Err(err(ERR_INVALID_ESCAPE, &t[..2])),
                b'Q' => {
                    let rest = &t[2..];
                    let (lit, after) = match rest.find("\\E") {
                        Some(i) => (&rest[..i], &rest[i + 2..]),
                        None => (rest, ""),
                    };
                    for c in lit.chars() {
                        self.literal(c);
                    }
                    return Ok(after);
                }
                b'p' | b'P' => {
                    let (class, rest) = parse_unicode_class(t)?;
                    self.leaf(&class);
                    return Ok(rest);
                }
                _ => {}
            }
            if let Some(class) = t.get(..2).and_then(perl_class) {
                self.leaf(&format!("[{class}]"));
                return Ok(&t[2..]);
            }
        }
        let (c, rest) = parse_escape(t)?;
        self.literal(c);
        Ok(rest)
    }

    /// `parseClass`: `[…]`.
    fn parse_class(&mut self, s: &'a str) -> Result<&'a str, GoRegexpError> {
        let mut t = &s[1..];
        let mut class = String::from("[");
        if t.starts_with('^') {
            class.push('^');
            t = &t[1..];
        }
        let mut first = true;
        while t.is_empty() || !t.starts_with(']') || first {
            first = false;
            if t.len() > 2
                && t.starts_with("[:")
                && let Some((name, rest)) = parse_named_class(t)?
            {
                class.push_str(name);
                t = rest;
                continue;
            }
            if t.len() >= 2 && t.starts_with('\\') && matches!(t.as_bytes()[1], b'p' | b'P') {
                let (c, rest) = parse_unicode_class(t)?;
                class.push_str(&c);
                t = rest;
                continue;
            }
            if t.len() >= 2
                && t.starts_with('\\')
                && let Some(c) = t.get(..2).and_then(perl_class)
            {
                let _ = write!(class, "[{c}]");
                t = &t[2..];
                continue;
            }
            let rng = t;
            let (lo, rest) = parse_class_char(t, s)?;
            t = rest;
            let mut hi = lo;
            if t.len() >= 2 && t.starts_with('-') && !t[1..].starts_with(']') {
                let (h, rest) = parse_class_char(&t[1..], s)?;
                t = rest;
                hi = h;
                if hi < lo {
                    return Err(err(ERR_INVALID_CHAR_RANGE, &rng[..rng.len() - t.len()]));
                }
            }
            let _ = write!(class, "\\x{{{:x}}}-\\x{{{:x}}}", lo as u32, hi as u32);
        }
        class.push(']');
        self.leaf(&class);
        Ok(&t[1..])
    }
}

/// Pushes a literal character in `regex` crate syntax.
fn push_literal(out: &mut String, c: char) {
    if c.is_ascii_alphanumeric() || c == '_' || (!c.is_ascii() && !c.is_whitespace()) {
        out.push(c);
    } else {
        let _ = write!(out, "\\x{{{:x}}}", c as u32);
    }
}

/// `parseRepeat`: `{min}`, `{min,}` (max -1) or `{min,max}`; a too big number gives min -1.
fn parse_repeat(s: &str) -> Option<(i32, i32, &str)> {
    let s = s.strip_prefix('{')?;
    let (mut min, s) = parse_int(s)?;
    let max;
    let mut s = s;
    if s.is_empty() {
        return None;
    }
    if !s.starts_with(',') {
        max = min;
    } else {
        s = &s[1..];
        if s.is_empty() {
            return None;
        }
        if s.starts_with('}') {
            max = -1;
        } else {
            let (m, rest) = parse_int(s)?;
            max = m;
            s = rest;
            if max < 0 {
                min = -1;
            }
        }
    }
    let rest = s.strip_prefix('}')?;
    Some((min, max.max(-1), rest))
}

/// `parseInt`: decimal digits without leading zeros; -1 when too big.
fn parse_int(s: &str) -> Option<(i32, &str)> {
    let b = s.as_bytes();
    if b.is_empty() || !b[0].is_ascii_digit() {
        return None;
    }
    if b.len() >= 2 && b[0] == b'0' && b[1].is_ascii_digit() {
        return None;
    }
    let len = b.iter().take_while(|c| c.is_ascii_digit()).count();
    let mut n: i64 = 0;
    for &d in &b[..len] {
        if n >= 100_000_000 {
            n = -1;
            break;
        }
        n = n * 10 + i64::from(d - b'0');
    }
    Some((n as i32, &s[len..]))
}

/// `parseEscape`: a single-character escape.
fn parse_escape(s: &str) -> Result<(char, &str), GoRegexpError> {
    let mut t = &s[1..];
    let Some(c) = t.chars().next() else {
        return Err(err(ERR_TRAILING_BACKSLASH, ""));
    };
    t = &t[c.len_utf8()..];
    let fail = |t: &str| err(ERR_INVALID_ESCAPE, &s[..s.len() - t.len()]);
    match c {
        '1'..='7' if !t.starts_with(|d: char| ('0'..='7').contains(&d)) => Err(fail(t)),
        '0'..='7' => {
            let mut r = c as u32 - '0' as u32;
            for _ in 1..3 {
                match t.as_bytes().first() {
                    Some(d @ b'0'..=b'7') => {
                        r = r * 8 + u32::from(d - b'0');
                        t = &t[1..];
                    }
                    _ => break,
                }
            }
            Ok((char::from_u32(r).unwrap_or('\u{FFFD}'), t))
        }
        'x' => {
            let Some(c) = t.chars().next() else {
                return Err(fail(t));
            };
            t = &t[c.len_utf8()..];
            if c == '{' {
                let mut nhex = 0;
                let mut r: u32 = 0;
                loop {
                    let Some(c) = t.chars().next() else {
                        return Err(fail(t));
                    };
                    t = &t[c.len_utf8()..];
                    if c == '}' {
                        break;
                    }
                    let Some(v) = c.to_digit(16) else {
                        return Err(fail(t));
                    };
                    r = r * 16 + v;
                    if r > 0x10FFFF {
                        return Err(fail(t));
                    }
                    nhex += 1;
                }
                if nhex == 0 {
                    return Err(fail(t));
                }
                return Ok((char::from_u32(r).unwrap_or('\u{FFFD}'), t));
            }
            let x = c.to_digit(16);
            let Some(c2) = t.chars().next() else {
                return Err(fail(t));
            };
            t = &t[c2.len_utf8()..];
            match (x, c2.to_digit(16)) {
                (Some(x), Some(y)) => Ok((char::from_u32(x * 16 + y).unwrap_or('\u{FFFD}'), t)),
                _ => Err(fail(t)),
            }
        }
        'a' => Ok(('\u{7}', t)),
        'f' => Ok(('\u{c}', t)),
        'n' => Ok(('\n', t)),
        'r' => Ok(('\r', t)),
        't' => Ok(('\t', t)),
        'v' => Ok(('\u{b}', t)),
        c if c.is_ascii() && !c.is_ascii_alphanumeric() => Ok((c, t)),
        _ => Err(fail(t)),
    }
}

/// `parseClassChar`: one (possibly escaped) character inside `[…]`.
fn parse_class_char<'s>(s: &'s str, whole_class: &str) -> Result<(char, &'s str), GoRegexpError> {
    match s.chars().next() {
        None => Err(err(ERR_MISSING_BRACKET, whole_class)),
        Some('\\') => parse_escape(s),
        Some(c) => Ok((c, &s[c.len_utf8()..])),
    }
}

/// Go's Perl classes (ASCII), as `regex` class contents.
fn perl_class(esc: &str) -> Option<&'static str> {
    Some(match esc {
        "\\d" => "0-9",
        "\\D" => "^0-9",
        "\\s" => "\\t\\n\\x0C\\r ",
        "\\S" => "^\\t\\n\\x0C\\r ",
        "\\w" => "0-9A-Za-z_",
        "\\W" => "^0-9A-Za-z_",
        _ => return None,
    })
}

/// `parseNamedClass`: `[:alpha:]` and friends; `Ok(None)` when `s` is not one.
fn parse_named_class(s: &str) -> Result<Option<(&str, &str)>, GoRegexpError> {
    let Some(i) = s[2..].find(":]") else {
        return Ok(None);
    };
    let name = &s[..i + 4];
    const POSIX: [&str; 14] = [
        "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct",
        "space", "upper", "word", "xdigit",
    ];
    let inner = &name[2..name.len() - 2];
    let base = inner.strip_prefix('^').unwrap_or(inner);
    if !POSIX.contains(&base) {
        return Err(err(ERR_INVALID_CHAR_RANGE, name));
    }
    Ok(Some((name, &s[i + 4..])))
}

/// `parseUnicodeClass`: `\pL`, `\p{Greek}`, `\P{^Lu}`; returns the `regex` syntax.
fn parse_unicode_class(s: &str) -> Result<(String, &str), GoRegexpError> {
    let mut negated = s.as_bytes()[1] == b'P';
    let t = &s[2..];
    let Some(c) = t.chars().next() else {
        // Go reads an empty rune here and looks up the name "".
        return Err(err(ERR_INVALID_CHAR_RANGE, s));
    };
    let (seq, mut name, rest) = if c != '{' {
        let end = 2 + c.len_utf8();
        (&s[..end], &s[2..end], &s[end..])
    } else {
        let Some(end) = s.find('}') else {
            return Err(err(ERR_INVALID_CHAR_RANGE, s));
        };
        (&s[..end + 1], &s[3..end], &s[end + 1..])
    };
    if let Some(n) = name.strip_prefix('^') {
        negated = !negated;
        name = n;
    }
    if !is_unicode_class_name(name) {
        return Err(err(ERR_INVALID_CHAR_RANGE, seq));
    }
    let p = if negated { 'P' } else { 'p' };
    Ok((format!("\\{p}{{{name}}}"), rest))
}

/// `canonicalName`: leading capital, the rest lower case, no `_`, `-` or spaces.
fn canonical_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut first = true;
    for c in name.chars() {
        match c {
            '_' | '-' | ' ' => {}
            c if first => {
                out.push(c.to_ascii_uppercase());
                first = false;
            }
            c => out.push(c.to_ascii_lowercase()),
        }
    }
    out
}

/// Whether `unicodeTable(name)` finds a table.
fn is_unicode_class_name(name: &str) -> bool {
    let name = canonical_name(name);
    if matches!(name.as_str(), "Any" | "Assigned" | "Ascii" | "Lc") {
        return true;
    }
    CATEGORIES.split(' ').any(|c| c == name)
        || SCRIPTS.split(' ').any(|c| c == name)
        || CATEGORY_ALIASES
            .split(' ')
            .any(|c| canonical_name(c) == name)
}

/// Go's `unicode.Categories` keys (Unicode 15.0.0).
const CATEGORIES: &str = "C Cc Cf Cn Co Cs L LC Ll Lm Lo Lt Lu M Mc Me Mn N Nd Nl No P Pc Pd Pe Pf Pi Po Ps S Sc Sk \
     Sm So Z Zl Zp Zs";
/// Go's `unicode.Scripts` keys.
const SCRIPTS: &str = "Adlam Ahom Anatolian_Hieroglyphs Arabic Armenian Avestan Balinese Bamum Bassa_Vah Batak \
     Bengali Bhaiksuki Bopomofo Brahmi Braille Buginese Buhid Canadian_Aboriginal Carian \
     Caucasian_Albanian Chakma Cham Cherokee Chorasmian Common Coptic Cuneiform Cypriot \
     Cypro_Minoan Cyrillic Deseret Devanagari Dives_Akuru Dogra Duployan Egyptian_Hieroglyphs \
     Elbasan Elymaic Ethiopic Georgian Glagolitic Gothic Grantha Greek Gujarati Gunjala_Gondi \
     Gurmukhi Han Hangul Hanifi_Rohingya Hanunoo Hatran Hebrew Hiragana Imperial_Aramaic \
     Inherited Inscriptional_Pahlavi Inscriptional_Parthian Javanese Kaithi Kannada Katakana \
     Kawi Kayah_Li Kharoshthi Khitan_Small_Script Khmer Khojki Khudawadi Lao Latin Lepcha Limbu \
     Linear_A Linear_B Lisu Lycian Lydian Mahajani Makasar Malayalam Mandaic Manichaean Marchen \
     Masaram_Gondi Medefaidrin Meetei_Mayek Mende_Kikakui Meroitic_Cursive Meroitic_Hieroglyphs \
     Miao Modi Mongolian Mro Multani Myanmar Nabataean Nag_Mundari Nandinagari New_Tai_Lue Newa \
     Nko Nushu Nyiakeng_Puachue_Hmong Ogham Ol_Chiki Old_Hungarian Old_Italic Old_North_Arabian \
     Old_Permic Old_Persian Old_Sogdian Old_South_Arabian Old_Turkic Old_Uyghur Oriya Osage \
     Osmanya Pahawh_Hmong Palmyrene Pau_Cin_Hau Phags_Pa Phoenician Psalter_Pahlavi Rejang \
     Runic Samaritan Saurashtra Sharada Shavian Siddham SignWriting Sinhala Sogdian \
     Sora_Sompeng Soyombo Sundanese Syloti_Nagri Syriac Tagalog Tagbanwa Tai_Le Tai_Tham \
     Tai_Viet Takri Tamil Tangsa Tangut Telugu Thaana Thai Tibetan Tifinagh Tirhuta Toto \
     Ugaritic Vai Vithkuqi Wancho Warang_Citi Yezidi Yi Zanabazar_Square";
/// Go's `unicode.CategoryAliases` keys.
const CATEGORY_ALIASES: &str = "Cased_Letter Close_Punctuation Combining_Mark Connector_Punctuation Control \
     Currency_Symbol Dash_Punctuation Decimal_Number Enclosing_Mark Final_Punctuation Format \
     Initial_Punctuation Letter Letter_Number Line_Separator Lowercase_Letter Mark Math_Symbol \
     Modifier_Letter Modifier_Symbol Nonspacing_Mark Number Open_Punctuation Other Other_Letter \
     Other_Number Other_Punctuation Other_Symbol Paragraph_Separator Private_Use Punctuation \
     Separator Space_Separator Spacing_Mark Surrogate Symbol Titlecase_Letter Unassigned \
     Uppercase_Letter cntrl digit punct";

#[cfg(test)]
mod tests {
    use super::*;

    fn error(p: &str) -> String {
        check(p).unwrap_err().to_string()
    }

    #[test]
    fn parse_errors_are_gos() {
        // Texts from Go's regexp.Compile (Go 1.26).
        let cases = [
            ("(", "error parsing regexp: missing closing ): `(`"),
            ("a)", "error parsing regexp: unexpected ): `a)`"),
            ("[a-", "error parsing regexp: missing closing ]: `[a-`"),
            (
                "[z-a]",
                "error parsing regexp: invalid character class range: `z-a`",
            ),
            (
                "a**",
                "error parsing regexp: invalid nested repetition operator: `**`",
            ),
            (
                "a{2}{3}",
                "error parsing regexp: invalid nested repetition operator: `{2}{3}`",
            ),
            (
                "*a",
                "error parsing regexp: missing argument to repetition operator: `*`",
            ),
            (
                "x{1001}",
                "error parsing regexp: invalid repeat count: `{1001}`",
            ),
            (
                "(a{10}){101}",
                "error parsing regexp: invalid repeat count: `{101}`",
            ),
            (
                "\\q",
                "error parsing regexp: invalid escape sequence: `\\q`",
            ),
            (
                "\\1",
                "error parsing regexp: invalid escape sequence: `\\1`",
            ),
            (
                "a\\",
                "error parsing regexp: trailing backslash at end of expression: ``",
            ),
            (
                "(?=x)",
                "error parsing regexp: invalid or unsupported Perl syntax: `(?=`",
            ),
            (
                "(?P<a-b>x)",
                "error parsing regexp: invalid named capture: `(?P<a-b>`",
            ),
            (
                "\\p{Foo}",
                "error parsing regexp: invalid character class range: `\\p{Foo}`",
            ),
            (
                "[[:foo:]]",
                "error parsing regexp: invalid character class range: `[:foo:]`",
            ),
        ];
        for (p, want) in cases {
            assert_eq!(error(p), want, "{p}");
        }
        // Escaped multi-byte characters are errors, not panics.
        assert_eq!(
            error("\\é"),
            "error parsing regexp: invalid escape sequence: `\\é`"
        );
        assert_eq!(
            error("[\\é]"),
            "error parsing regexp: invalid escape sequence: `\\é`"
        );
        for ok in [
            "^[a-z]+$",
            "(?i)\\pL{2,4}[[:alpha:]]",
            "(a{2}){3}",
            "\\Qa.b\\E",
            "(?P<n>a)|(?<m>b)",
            "x{,3}",
        ] {
            assert!(check(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn matching_is_gos() {
        // Perl classes are ASCII in Go, and `$` is the end of the text.
        assert_eq!(is_match("^\\d+$", "١٢"), Ok(false));
        assert_eq!(is_match("^\\w+$", "é"), Ok(false));
        assert_eq!(is_match("\\bfoo\\b", "éfooé"), Ok(true));
        assert_eq!(is_match("^a$", "a\n"), Ok(false));
        assert_eq!(is_match("x{,3}", "x{,3}"), Ok(true));
        assert_eq!(is_match("(?i)K", "\u{212a}"), Ok(true));
        // A repetition right after a flag group applies to what precedes the group.
        assert_eq!(is_match("^a(?i)+$", "aa"), Ok(true));
        assert_eq!(is_match("^a(?i)+$", "aA"), Ok(false));
        assert_eq!(is_match("^a{2}(?i)*$", "aaaa"), Ok(true));
    }

    #[test]
    fn arbitrary_patterns_do_not_panic() {
        const ATOMS: [&str; 24] = [
            "a", "é", "(", ")", "[", "]", "{", "}", "*", "+", "?", "|", "\\", "-", ":", "^", "$",
            "\\p", "(?", "i", "P<", ">", "1", ",",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            let mut p = String::new();
            for _ in 0..(seed % 7 + 1) {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                p.push_str(ATOMS[(seed >> 33) as usize % ATOMS.len()]);
            }
            if check(&p).is_ok() {
                let _ = is_match(&p, "aé");
            }
        }
    }
}
