//! The parser adapter: the `cel` crate's ANTLR parser (the maintained successor of
//! `cel-parser`), with cel-go's macros registered on it, turned into our AST.
//!
//! Everything the rest of the crate knows about the `cel` crate is in this file.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cel::common::ast as cast;
use cel::common::ast::operators;
use cel::parser::{Macro, MacroExprHelper, ParseError};

use super::ast::{
    Comprehension, Expr, ExprId, ExprKind, Literal, MapEntry, ParsedExpr, StructField,
};
use super::decls::Version;

/// cel-go's default parser limits (`parser/options.go`); Kubernetes keeps the defaults.
pub const MAX_RECURSION_DEPTH: usize = 250;
pub const EXPRESSION_SIZE_CODE_POINT_LIMIT: usize = 100_000;
/// Parsing runs on a stack this large when the source is long enough to nest deeply.
const BIG_STACK: usize = 512 << 20;
const INLINE_PARSE_LIMIT: usize = 256;
const INLINE_DEPTH_LIMIT: usize = 4;

/// A parse failure, formatted as cel-go formats it (`ERROR: <input>:L:C: msg` + snippet lines).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxErrors(pub String);

/// The parser options of a compile environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ParserOptions {
    pub optional_syntax: bool,
    pub two_var_comprehensions: bool,
    pub lists_sort_by: bool,
    /// Backtick-quoted field names (`` self.`a-b` ``): cel-go's parser default from v0.28
    /// ([`super::minor::Minor::ident_escape_syntax`]), a syntax error before.
    pub ident_escape_syntax: bool,
}

impl ParserOptions {
    /// The options of an environment at compatibility version `v`, in a cel-go whose parser
    /// reads no backtick-quoted names (before v0.28; [`ParserOptions::for_minor`] for a minor's).
    pub fn for_version(v: Version) -> Self {
        ParserOptions {
            optional_syntax: v >= Version::new(1, 28),
            two_var_comprehensions: v >= Version::new(1, 32),
            lists_sort_by: v >= Version::new(1, 34),
            ident_escape_syntax: false,
        }
    }

    /// The options of `minor`'s environment at compatibility version `v`.
    pub fn for_minor(minor: &super::minor::Minor, v: Version) -> Self {
        ParserOptions {
            ident_escape_syntax: minor.ident_escape_syntax,
            ..ParserOptions::for_version(v)
        }
    }

    /// These options with every gated macro and syntax on (the two-variable comprehensions,
    /// `sortBy`, backtick-quoted names): the parse [`parse_noting_gated_macros`] can tell holds
    /// for every options.
    pub fn with_every_macro(self) -> Self {
        ParserOptions {
            optional_syntax: self.optional_syntax,
            two_var_comprehensions: true,
            lists_sort_by: true,
            ident_escape_syntax: true,
        }
    }
}

/// Parses `source` into our AST, charging the work budget for it.
pub fn parse(source: &str, opts: ParserOptions) -> Result<ParsedExpr, SyntaxErrors> {
    crate::budget::charge(source.len() as u64);
    parse_uncharged(source, opts)
}

/// [`parse`] without the charge, for a caller that charges every parse it is asked for,
/// done or found in a cache (`Env`'s: so that what an estimate is charged does not depend on
/// what was parsed before it).
pub(crate) fn parse_uncharged(
    source: &str,
    opts: ParserOptions,
) -> Result<ParsedExpr, SyntaxErrors> {
    let code_points = source.chars().count();
    if code_points > EXPRESSION_SIZE_CODE_POINT_LIMIT {
        return Err(SyntaxErrors(format!(
            "ERROR: <input>:-1:0: expression code point size exceeds limit: size: {code_points}, limit {EXPRESSION_SIZE_CODE_POINT_LIMIT}"
        )));
    }
    on_parse_stack(source, || parse_inner(source, opts))
}

/// `parse` of `source` unless its nesting is too deep. The generated parser recurses about ten
/// frames per nesting level, and a debug build's frames are large: anything but a short, flat
/// expression parses on a stack of its own (reserved, not committed, memory).
fn on_parse_stack(
    source: &str,
    parse: impl FnOnce() -> Result<ParsedExpr, SyntaxErrors>,
) -> Result<ParsedExpr, SyntaxErrors> {
    let depth = nesting_depth(source);
    if depth > MAX_RECURSION_DEPTH {
        return Err(recursion_error());
    }
    if source.len() <= INLINE_PARSE_LIMIT && depth <= INLINE_DEPTH_LIMIT {
        parse()
    } else {
        stacker::grow(BIG_STACK, parse)
    }
}

/// Parses `source` with `opts`, and says whether the result holds for every parser options
/// with the same `optional_syntax`: true unless the parse met a call of a macro that only some
/// options have (the two-variable comprehensions, `sortBy`), or the text has a backtick (a
/// quoted name, [`ParserOptions::ident_escape_syntax`]). Those are the only differences
/// between options of the same `optional_syntax`: every other call parses the same with each,
/// and a call that matches one of those macros invokes it (even one the macro declines or
/// fails), which is what is watched. Charges nothing (see [`parse_uncharged`]).
pub(crate) fn parse_noting_gated_macros(
    source: &str,
    opts: ParserOptions,
) -> (Result<ParsedExpr, SyntaxErrors>, bool) {
    GATED_MACRO_MET.with(|c| c.set(false));
    let parsed = parse_uncharged(source, opts);
    // A backtick anywhere (in a literal too: an over-approximation) may be a quoted name,
    // which only some options read.
    let quoted_name = source.contains('`');
    (
        parsed,
        !GATED_MACRO_MET.with(|c| c.replace(false)) && !quoted_name,
    )
}

/// Notes that a parse met a macro some parser options do not have.
fn met_gated_macro() {
    GATED_MACRO_MET.with(|c| c.set(true));
}

fn recursion_error() -> SyntaxErrors {
    SyntaxErrors(format!(
        "ERROR: <input>:-1:0: expression recursion limit exceeded: {MAX_RECURSION_DEPTH}"
    ))
}

/// Bracket nesting depth, outside string literals: a cheap bound checked before parsing so
/// that absurd nesting never reaches the recursive parser.
fn nesting_depth(source: &str) -> usize {
    let b = source.as_bytes();
    let mut depth = 0usize;
    let mut max = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'(' | b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            q @ (b'"' | b'\'') => {
                let triple = i + 2 < b.len() && b[i + 1] == q && b[i + 2] == q;
                let raw = i > 0 && (b[i - 1] == b'r' || b[i - 1] == b'R');
                if triple {
                    i += 3;
                    while i + 2 < b.len() && !(b[i] == q && b[i + 1] == q && b[i + 2] == q) {
                        if b[i] == b'\\' && !raw {
                            i += 1;
                        }
                        i += 1;
                    }
                    i += 2;
                } else {
                    i += 1;
                    while i < b.len() && b[i] != q && b[i] != b'\n' {
                        if b[i] == b'\\' && !raw {
                            i += 1;
                        }
                        i += 1;
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    max
}

/// An estimate of cel-go's recursion measure (the deepest nesting of one grammar rule): nested
/// sub-expressions, and chains of the left-recursive rules (member selection and calls,
/// arithmetic, relations).
fn rule_depth(e: &Expr) -> usize {
    fn go(e: &Expr, member: usize, calc: usize, rel: usize, nest: usize, max: &mut usize) {
        *max = (*max).max(member).max(calc).max(rel).max(nest);
        match &e.kind {
            ExprKind::Select { operand, .. } => go(operand, member + 1, 0, 0, nest, max),
            ExprKind::Call {
                function,
                target,
                args,
            } => {
                let f = function.as_str();
                let (is_calc, is_rel) = match f {
                    "_+_" | "_-_" | "_*_" | "_/_" | "_%_" => (true, false),
                    "_<_" | "_<=_" | "_>_" | "_>=_" | "_==_" | "_!=_" | "@in" => (false, true),
                    _ => (false, false),
                };
                if is_calc || is_rel {
                    if let Some(l) = args.first() {
                        go(
                            l,
                            0,
                            if is_calc { calc + 1 } else { 0 },
                            if is_rel { rel + 1 } else { 0 },
                            nest,
                            max,
                        );
                    }
                    for a in args.iter().skip(1) {
                        go(a, 0, 0, 0, nest, max);
                    }
                } else if let Some(t) = target {
                    go(t, member + 1, 0, 0, nest, max);
                    for a in args {
                        go(a, 0, 0, 0, nest + 1, max);
                    }
                } else {
                    for a in args {
                        go(a, 0, 0, 0, nest + 1, max);
                    }
                }
            }
            ExprKind::List { elements, .. } => {
                elements.iter().for_each(|a| go(a, 0, 0, 0, nest + 1, max))
            }
            ExprKind::Map { entries } => entries.iter().for_each(|en| {
                go(&en.key, 0, 0, 0, nest + 1, max);
                go(&en.value, 0, 0, 0, nest + 1, max);
            }),
            ExprKind::Struct { fields, .. } => fields
                .iter()
                .for_each(|f| go(&f.value, 0, 0, 0, nest + 1, max)),
            ExprKind::Comprehension(c) => {
                go(&c.iter_range, member + 1, 0, 0, nest, max);
                go(&c.loop_step, 0, 0, 0, nest + 1, max);
                go(&c.result, 0, 0, 0, nest + 1, max);
            }
            ExprKind::Literal(_) | ExprKind::Ident(_) => {}
        }
    }
    let mut max = 0;
    go(e, 1, 1, 1, 1, &mut max);
    max
}

fn parse_inner(source: &str, opts: ParserOptions) -> Result<ParsedExpr, SyntaxErrors> {
    parse_with_env(source, opts, &env_for(opts))
}

/// Parses `source` as written, without expanding macros: `x.filter(v, p)` stays a call of
/// `filter`, `has(a.b)` a call of `has`. The surface form a rewrite of a rule's text works on
/// (`crate::rewrite`); the same limits as [`parse`] apply.
pub fn parse_unexpanded(source: &str, opts: ParserOptions) -> Result<ParsedExpr, SyntaxErrors> {
    crate::budget::charge(source.len() as u64);
    if source.chars().count() > EXPRESSION_SIZE_CODE_POINT_LIMIT {
        return Err(SyntaxErrors(
            "ERROR: <input>:-1:0: expression code point size exceeds limit".into(),
        ));
    }
    on_parse_stack(source, || {
        parse_with_env(source, opts, &cel::Env::default())
    })
}

/// The `cel` crate's interpreter environment for evaluating rules: its standard library and
/// strings extension, with cel-go's macro expansions (the ones [`parse`] uses), and map literals
/// that keep the last of repeated keys as cel-go does. For `crate::cel::eval` only.
pub(crate) fn interpreter_env(opts: ParserOptions) -> cel::Env {
    let mut env = add_macros(cel::Env::default().with_stdlib(), opts);
    let _ = env.add_extension(cel::extensions::strings);
    env.set_error_on_duplicate_map_keys(false);
    env
}

fn parse_with_env(
    source: &str,
    opts: ParserOptions,
    env: &cel::Env,
) -> Result<ParsedExpr, SyntaxErrors> {
    let parser = env
        .parser()
        .enable_optional_syntax(opts.optional_syntax)
        .enable_ident_escape_syntax(opts.ident_escape_syntax)
        .max_recursion_depth(u16::MAX);
    COPIES.with(|c| c.borrow_mut().clear());
    let parsed = parser.parse_with_source_info(source);
    let copies = COPIES.with(|c| std::mem::take(&mut *c.borrow_mut()));
    match parsed {
        Ok((expr, info)) => {
            let byte_to_cp = ByteToCodePoint::new(source);
            let mut conv = Converter {
                offsets: HashMap::new(),
                info: &info,
                byte_to_cp: &byte_to_cp,
                source,
                next: 1,
                ids: HashMap::new(),
                copies: &copies,
            };
            let e = conv.expr(expr);
            if rule_depth(&e) > MAX_RECURSION_DEPTH {
                // Dropped here, on the parser's (large) stack.
                drop(e);
                return Err(recursion_error());
            }
            let max_id = conv.next;
            let mut offsets = vec![0u32; max_id as usize];
            for (id, off) in conv.offsets {
                offsets[id as usize] = off;
            }
            Ok(ParsedExpr {
                expr: e,
                source: source.to_string(),
                offsets,
                max_id,
            })
        }
        Err(errs) => Err(SyntaxErrors(format_parse_errors(source, &errs.errors))),
    }
}

/// cel-go `common.Error.ToDisplayString` for every error, joined by newlines.
fn format_parse_errors(source: &str, errors: &[ParseError]) -> String {
    let mut out = Vec::new();
    // The cel crate adds its own "Incomplete ..." errors for nodes the syntax errors left
    // unfinished; cel-go reports only the syntax errors.
    let syntax = errors.iter().any(|e| e.msg.starts_with("Syntax error"));
    let kept: Vec<&ParseError> = errors
        .iter()
        .filter(|e| !(syntax && e.msg.starts_with("Incomplete ")))
        .collect();
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(source.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let located: Vec<(usize, String)> = kept
        .iter()
        .map(|e| {
            let line_start = usize::try_from(e.pos.0 - 1)
                .ok()
                .and_then(|l| line_starts.get(l).copied())
                .unwrap_or(0);
            let col = usize::try_from(e.pos.1 - 1).unwrap_or(0);
            (line_start + col, cel_go_message(&e.msg))
        })
        .collect();
    let messages = super::expecting::corrected(source, &located);
    for (e, msg) in kept.iter().zip(messages) {
        // The cel crate reports 1-based lines and 1-based columns counted in bytes; cel-go
        // reports 0-based columns in code points (displayed + 1).
        let (line, col_bytes) = (e.pos.0, e.pos.1);
        if line <= 0 {
            out.push(format!("ERROR: <input>:-1:0: {msg}"));
            continue;
        }
        let line_text = source.split('\n').nth((line - 1) as usize).unwrap_or("");
        let col_byte = (col_bytes - 1).max(0) as usize;
        let col = line_text
            .char_indices()
            .take_while(|(i, _)| *i < col_byte)
            .count();
        out.push(display_error(source, line as usize, col, &msg));
    }
    out.join("\n")
}

/// The cel crate's words for a few parse errors, in cel-go's (`parser/unescape.go`,
/// `parser/parser.go`).
fn cel_go_message(msg: &str) -> String {
    if msg.starts_with("Recursion limit of ") {
        return format!("expression recursion limit exceeded: {MAX_RECURSION_DEPTH}");
    }
    if let Some(detail) = msg
        .strip_prefix("invalid string literal: ")
        .or_else(|| msg.strip_prefix("invalid bytes literal: "))
    {
        return if detail.starts_with("InvalidUnicode") {
            "invalid unicode code point".into()
        } else if detail.contains("Octal") || detail.contains("escape: \"\\\\0") {
            "unable to unescape octal sequence in string".into()
        } else if detail.contains("MissingOpeningQuote")
            || detail.contains("LoneSlash")
            || detail.contains("TrailingBackslash")
        {
            "unable to unescape string, found '\\' as last character".into()
        } else {
            "unable to unescape string".into()
        };
    }
    if let Some((head, set)) = msg.split_once(" expecting {") {
        // ANTLR's Go runtime syncs past the optional operator loops and reports the token that
        // closes the context (`<EOF>`, `':'`, ...); the Rust runtime lists the operators that
        // could continue the expression as well.
        const CONTINUATIONS: [&str; 17] = [
            "'=='", "'!='", "'in'", "'<'", "'<='", "'>='", "'>'", "'&&'", "'||'", "'['", "'.'",
            "'-'", "'?'", "'+'", "'*'", "'/'", "'%'",
        ];
        let items: Vec<&str> = set.trim_end_matches('}').split(", ").collect();
        if items.contains(&"'=='") && items.contains(&"'&&'") {
            let rest: Vec<&str> = items
                .into_iter()
                .filter(|t| !CONTINUATIONS.contains(t))
                .collect();
            return match rest.as_slice() {
                [one] => format!("{head} expecting {one}"),
                [] => msg.to_string(),
                many => format!("{head} expecting {{{}}}", many.join(", ")),
            };
        }
    }
    msg.to_string()
}

/// cel-go's error display: `ERROR: <input>:L:C: msg`, then ` | line` and ` | ...^`.
pub fn display_error(source: &str, line: usize, col: usize, msg: &str) -> String {
    let mut s = format!("ERROR: <input>:{}:{}: {}", line, col + 1, msg);
    if let Some(snippet) = source.split('\n').nth(line.wrapping_sub(1))
        && snippet.len() <= 16384
    {
        let snippet = snippet.replace('\t', " ");
        s.push_str("\n | ");
        s.push_str(&snippet);
        s.push_str("\n | ");
        let mut chars = snippet.chars();
        for _ in 0..col {
            match chars.next() {
                Some(c) if c.len_utf8() > 1 => s.push('\u{ff0e}'),
                Some(_) => s.push('.'),
                None => break,
            }
        }
        match chars.next() {
            Some(c) if c.len_utf8() > 1 => s.push('\u{ff3e}'),
            _ => s.push('^'),
        }
    }
    s
}

struct ByteToCodePoint {
    /// code-point index of each byte offset that starts a char
    table: Vec<u32>,
}

impl ByteToCodePoint {
    fn new(s: &str) -> Self {
        let mut table = vec![0u32; s.len() + 1];
        let mut cp = 0u32;
        let mut last = 0;
        for (i, _) in s.char_indices() {
            for t in table.iter_mut().take(i + 1).skip(last) {
                *t = cp;
            }
            cp += 1;
            last = i + 1;
        }
        for t in table.iter_mut().skip(last) {
            *t = cp;
        }
        ByteToCodePoint { table }
    }
    fn get(&self, byte: u32) -> u32 {
        self.table
            .get(byte as usize)
            .copied()
            .unwrap_or_else(|| *self.table.last().unwrap_or(&0))
    }
}

thread_local! {
    /// Whether the running parse met a macro that only some parser options have
    /// ([`parse_noting_gated_macros`]).
    static GATED_MACRO_MET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The nodes a macro expansion copied ([`copy`]), by the copy's id: cel-go's `Copy` places a
    /// copy where its original is in the source, the `cel` crate's helper where the macro is.
    static COPIES: std::cell::RefCell<HashMap<u64, u64>> = std::cell::RefCell::new(HashMap::new());
}

/// Renumbers the `cel` crate's ids densely and converts its AST into ours.
struct Converter<'a> {
    offsets: HashMap<ExprId, u32>,
    info: &'a cast::SourceInfo,
    byte_to_cp: &'a ByteToCodePoint,
    source: &'a str,
    next: ExprId,
    ids: HashMap<u64, ExprId>,
    /// See [`COPIES`].
    copies: &'a HashMap<u64, u64>,
}

impl Converter<'_> {
    fn id(&mut self, old: u64) -> ExprId {
        if let Some(&id) = self.ids.get(&old) {
            // The same node reachable twice (macros may reuse one): give the copy its own id.
            let _ = id;
        }
        let id = self.next;
        self.next += 1;
        self.ids.insert(old, id);
        // A copy of a copy is a copy of the first (each is recorded with the id it copied,
        // which is older: the chain ends).
        let mut at = old;
        while let Some(&orig) = self.copies.get(&at) {
            at = orig;
        }
        let off = self
            .info
            .offset_for(at)
            .map(|(s, _)| self.byte_to_cp.get(s))
            .unwrap_or(0);
        self.offsets.insert(id, off);
        id
    }

    /// A map's or a struct's entries, each given its id and then `convert`ed (an entry of the
    /// other kind, which the parser does not make, is left out).
    fn entries<T>(
        &mut self,
        entries: Vec<cast::IdedEntryExpr>,
        mut convert: impl FnMut(&mut Self, ExprId, cast::EntryExpr) -> Option<T>,
    ) -> Vec<T> {
        entries
            .into_iter()
            .filter_map(|en| {
                let id = self.id(en.id);
                convert(self, id, en.expr)
            })
            .collect()
    }

    fn expr(&mut self, e: cast::IdedExpr) -> Expr {
        let id = self.id(e.id);
        // A negative number literal (`-1`): cel-go's `VisitInt`/`VisitDouble` make it of the
        // whole `sign? NUM` rule, which starts at the sign; the crate's starts at the digits.
        if let cast::Expr::Literal(cast::LiteralValue::Int(_) | cast::LiteralValue::Double(_)) =
            &e.expr
            && let Some((start, _)) = self.info.offset_for(e.id)
            && let Some(before) = self.source.get(..start as usize)
            && let Some(minus) = before.trim_end().strip_suffix('-')
        {
            let negative = match &e.expr {
                cast::Expr::Literal(cast::LiteralValue::Int(i)) => *i.inner() < 0,
                cast::Expr::Literal(cast::LiteralValue::Double(d)) => d.inner().is_sign_negative(),
                _ => false,
            };
            if negative {
                self.offsets
                    .insert(id, self.byte_to_cp.get(minus.len() as u32));
            }
        }
        let kind = match e.expr {
            cast::Expr::Unspecified => ExprKind::Literal(Literal::Null),
            cast::Expr::Literal(l) => ExprKind::Literal(match l {
                cast::LiteralValue::Boolean(b) => Literal::Bool(*b.inner()),
                cast::LiteralValue::Bytes(b) => Literal::Bytes(b.inner().to_vec()),
                cast::LiteralValue::Double(d) => Literal::Double(*d.inner()),
                cast::LiteralValue::Int(i) => Literal::Int(*i.inner()),
                cast::LiteralValue::Null => Literal::Null,
                cast::LiteralValue::String(s) => Literal::String(s.inner().to_string()),
                cast::LiteralValue::UInt(u) => Literal::Uint(*u.inner()),
            }),
            cast::Expr::Ident(n) => ExprKind::Ident(n),
            cast::Expr::Select(s) => ExprKind::Select {
                operand: Box::new(self.expr(*s.operand)),
                field: s.field,
                test_only: s.test,
            },
            cast::Expr::Call(c) => {
                let target = c.target.map(|t| Box::new(self.expr(*t)));
                let args = c.args.into_iter().map(|a| self.expr(a)).collect();
                ExprKind::Call {
                    function: c.func_name,
                    target,
                    args,
                }
            }
            cast::Expr::List(l) => ExprKind::List {
                elements: l.elements.into_iter().map(|a| self.expr(a)).collect(),
                optional_indices: l.optional_indices,
            },
            cast::Expr::Map(m) => ExprKind::Map {
                entries: self.entries(m.entries, |conv, id, en| match en {
                    cast::EntryExpr::MapEntry(me) => Some(MapEntry {
                        id,
                        key: conv.expr(me.key),
                        value: conv.expr(me.value),
                        optional: me.optional,
                    }),
                    cast::EntryExpr::StructField(_) => None,
                }),
            },
            cast::Expr::Struct(s) => ExprKind::Struct {
                type_name: s.type_name,
                fields: self.entries(s.entries, |conv, id, en| match en {
                    cast::EntryExpr::StructField(f) => Some(StructField {
                        id,
                        name: f.field,
                        value: conv.expr(f.value),
                        optional: f.optional,
                    }),
                    cast::EntryExpr::MapEntry(_) => None,
                }),
            },
            cast::Expr::Comprehension(c) => {
                let c = *c;
                ExprKind::Comprehension(Box::new(Comprehension {
                    iter_range: self.expr(c.iter_range),
                    iter_var: c.iter_var,
                    iter_var2: c.iter_var2,
                    accu_var: c.accu_var,
                    accu_init: self.expr(c.accu_init),
                    loop_cond: self.expr(c.loop_cond),
                    loop_step: self.expr(c.loop_step),
                    result: self.expr(c.result),
                }))
            }
        };
        Expr { id, kind }
    }
}

// ---------------------------------------------------------------------------------------------
// Macros, as cel-go expands them (parser/macro.go, ext/comprehensions.go, cel/library.go
// optMap/optFlatMap, ext/lists.go sortBy). The accumulator is cel-go's hidden `@result`.

const ACCU: &str = "@result";
const LEGACY_ACCU: &str = "__result__";

fn env_for(opts: ParserOptions) -> Arc<cel::Env> {
    static ENVS: OnceLock<Mutex<HashMap<ParserOptions, Arc<cel::Env>>>> = OnceLock::new();
    let m = ENVS.get_or_init(Default::default);
    let mut g = m.lock().unwrap_or_else(|p| p.into_inner());
    g.entry(opts)
        .or_insert_with(|| Arc::new(build_env(opts)))
        .clone()
}

fn build_env(opts: ParserOptions) -> cel::Env {
    add_macros(cel::Env::default(), opts)
}

/// One macro's expansion (cel-go's `MacroExpander`).
#[derive(Clone, Copy)]
enum Expansion {
    Quantifier(Quant),
    Map,
    Filter,
    Transform(Transform),
    OptMap { flat: bool },
    SortBy,
}

impl Expansion {
    fn expand(
        self,
        h: &mut MacroExprHelper,
        t: &mut Option<cast::IdedExpr>,
        args: &mut Vec<cast::IdedExpr>,
    ) -> MacroResult {
        match self {
            Expansion::Quantifier(q) => quantifier(q, h, t, args),
            Expansion::Map => map_macro(h, t, args),
            Expansion::Filter => filter_macro(h, t, args),
            Expansion::Transform(k) => transform(k, h, t, args),
            Expansion::OptMap { flat } => opt_map(flat, h, t, args),
            Expansion::SortBy => sort_by(h, t, args),
        }
    }
}

/// cel-go's macros on `env` (a macro `env` already has stays).
fn add_macros(mut env: cel::Env, opts: ParserOptions) -> cel::Env {
    // The receiver macros each option brings: name, argument count, expansion.
    let base: &[(&str, usize, Expansion)] = &[
        ("all", 2, Expansion::Quantifier(Quant::All)),
        ("exists", 2, Expansion::Quantifier(Quant::Exists)),
        ("exists_one", 2, Expansion::Quantifier(Quant::ExistsOne)),
        // The one-variable `existsOne` spelling is not a macro of the Kubernetes environment
        // (only `exists_one` is); the two-variable library adds a three-argument `existsOne`.
        ("map", 2, Expansion::Map),
        ("map", 3, Expansion::Map),
        ("filter", 2, Expansion::Filter),
    ];
    let two_var: &[(&str, usize, Expansion)] = &[
        ("all", 3, Expansion::Quantifier(Quant::All)),
        ("exists", 3, Expansion::Quantifier(Quant::Exists)),
        ("existsOne", 3, Expansion::Quantifier(Quant::ExistsOne)),
        ("exists_one", 3, Expansion::Quantifier(Quant::ExistsOne)),
        ("transformList", 3, Expansion::Transform(Transform::List)),
        ("transformList", 4, Expansion::Transform(Transform::List)),
        ("transformMap", 3, Expansion::Transform(Transform::Map)),
        ("transformMap", 4, Expansion::Transform(Transform::Map)),
        (
            "transformMapEntry",
            3,
            Expansion::Transform(Transform::MapEntry),
        ),
        (
            "transformMapEntry",
            4,
            Expansion::Transform(Transform::MapEntry),
        ),
    ];
    let optional: &[(&str, usize, Expansion)] = &[
        ("optMap", 2, Expansion::OptMap { flat: false }),
        ("optFlatMap", 2, Expansion::OptMap { flat: true }),
    ];
    let sort: &[(&str, usize, Expansion)] = &[("sortBy", 2, Expansion::SortBy)];
    let _ = env.add_macro(Macro::global("has", 1, has));
    // A gated macro's use is noted (`met_gated_macro`): it needs a library some minors lack.
    for (group, on, gated) in [
        (base, true, false),
        (two_var, opts.two_var_comprehensions, true),
        (optional, opts.optional_syntax, false),
        (sort, opts.lists_sort_by, true),
    ] {
        for &(name, args, expansion) in group.iter().filter(|_| on) {
            let _ = env.add_macro(Macro::receiver(name, args, move |h, t, a| {
                if gated {
                    met_gated_macro();
                }
                expansion.expand(h, t, a)
            }));
        }
    }
    env
}

type MacroResult = Result<Option<cast::IdedExpr>, ParseError>;

fn lit_bool(h: &mut MacroExprHelper, b: bool) -> cast::IdedExpr {
    h.next_expr(cast::Expr::Literal(cast::LiteralValue::Boolean(b.into())))
}
fn lit_int(h: &mut MacroExprHelper, i: i64) -> cast::IdedExpr {
    h.next_expr(cast::Expr::Literal(cast::LiteralValue::Int(i.into())))
}
fn ident(h: &mut MacroExprHelper, n: &str) -> cast::IdedExpr {
    h.next_expr(cast::Expr::Ident(n.to_string()))
}
fn call(h: &mut MacroExprHelper, f: &str, args: Vec<cast::IdedExpr>) -> cast::IdedExpr {
    h.next_expr(cast::Expr::Call(cast::CallExpr {
        func_name: f.to_string(),
        target: None,
        args,
    }))
}
fn member_call(
    h: &mut MacroExprHelper,
    f: &str,
    target: cast::IdedExpr,
    args: Vec<cast::IdedExpr>,
) -> cast::IdedExpr {
    h.next_expr(cast::Expr::Call(cast::CallExpr {
        func_name: f.to_string(),
        target: Some(Box::new(target)),
        args,
    }))
}
fn list(h: &mut MacroExprHelper, elems: Vec<cast::IdedExpr>) -> cast::IdedExpr {
    h.next_expr(cast::Expr::List(cast::ListExpr::new(elems)))
}
fn empty_map(h: &mut MacroExprHelper) -> cast::IdedExpr {
    h.next_expr(cast::Expr::Map(cast::MapExpr { entries: vec![] }))
}

/// A comprehension over `range` (its variables `v1`, `v2`) into the accumulator `@result`, from
/// its initial value, condition, step and result (`parts`).
fn accumulating(
    range: cast::IdedExpr,
    v1: String,
    v2: Option<String>,
    parts: (
        cast::IdedExpr,
        cast::IdedExpr,
        cast::IdedExpr,
        cast::IdedExpr,
    ),
) -> cast::ComprehensionExpr {
    let (accu_init, loop_cond, loop_step, result) = parts;
    cast::ComprehensionExpr {
        iter_range: range,
        iter_var: v1,
        iter_var2: v2,
        accu_var: ACCU.to_string(),
        accu_init,
        loop_cond,
        loop_step,
        result,
    }
}

/// A comprehension node made of `c`'s parts.
fn comprehension(h: &mut MacroExprHelper, c: cast::ComprehensionExpr) -> cast::IdedExpr {
    h.next_expr(cast::Expr::Comprehension(Box::new(c)))
}

/// A deep copy with fresh ids (cel-go `ExprHelper.Copy`), each node placed in the source where
/// its original is (see [`COPIES`]).
fn copy(h: &mut MacroExprHelper, e: &cast::IdedExpr) -> cast::IdedExpr {
    let c = copy_nodes(h, e);
    COPIES.with(|m| m.borrow_mut().insert(c.id, e.id));
    c
}

fn entry_id(h: &mut MacroExprHelper, original: u64) -> u64 {
    let id = h.next_expr(cast::Expr::Unspecified).id;
    COPIES.with(|m| m.borrow_mut().insert(id, original));
    id
}

fn copy_nodes(h: &mut MacroExprHelper, e: &cast::IdedExpr) -> cast::IdedExpr {
    let kind = match &e.expr {
        cast::Expr::Select(s) => cast::Expr::Select(cast::SelectExpr {
            operand: Box::new(copy(h, &s.operand)),
            field: s.field.clone(),
            test: s.test,
        }),
        cast::Expr::Call(c) => cast::Expr::Call(cast::CallExpr {
            func_name: c.func_name.clone(),
            target: c.target.as_ref().map(|t| Box::new(copy(h, t))),
            args: c.args.iter().map(|a| copy(h, a)).collect(),
        }),
        cast::Expr::List(l) => cast::Expr::List(cast::ListExpr::new_with_optionals(
            l.elements.iter().map(|a| copy(h, a)).collect(),
            l.optional_indices.clone(),
        )),
        cast::Expr::Map(m) => cast::Expr::Map(cast::MapExpr {
            entries: copy_entries(h, &m.entries),
        }),
        cast::Expr::Struct(s) => cast::Expr::Struct(cast::StructExpr {
            type_name: s.type_name.clone(),
            entries: copy_entries(h, &s.entries),
        }),
        cast::Expr::Comprehension(c) => {
            cast::Expr::Comprehension(Box::new(cast::ComprehensionExpr {
                iter_range: copy(h, &c.iter_range),
                iter_var: c.iter_var.clone(),
                iter_var2: c.iter_var2.clone(),
                accu_var: c.accu_var.clone(),
                accu_init: copy(h, &c.accu_init),
                loop_cond: copy(h, &c.loop_cond),
                loop_step: copy(h, &c.loop_step),
                result: copy(h, &c.result),
            }))
        }
        other => other.clone(),
    };
    h.next_expr(kind)
}

/// [`copy_nodes`] of a map's or a struct's entries.
fn copy_entries(
    h: &mut MacroExprHelper,
    entries: &[cast::IdedEntryExpr],
) -> Vec<cast::IdedEntryExpr> {
    entries
        .iter()
        .map(|en| cast::IdedEntryExpr {
            id: entry_id(h, en.id),
            expr: match &en.expr {
                cast::EntryExpr::MapEntry(me) => cast::EntryExpr::MapEntry(cast::MapEntryExpr {
                    key: copy(h, &me.key),
                    value: copy(h, &me.value),
                    optional: me.optional,
                }),
                cast::EntryExpr::StructField(f) => {
                    cast::EntryExpr::StructField(cast::StructFieldExpr {
                        field: f.field.clone(),
                        value: copy(h, &f.value),
                        optional: f.optional,
                    })
                }
            },
        })
        .collect()
}

fn has(
    h: &mut MacroExprHelper,
    _t: &mut Option<cast::IdedExpr>,
    args: &mut Vec<cast::IdedExpr>,
) -> MacroResult {
    let arg = args.remove(0);
    match arg.expr {
        cast::Expr::Select(mut s) => {
            s.test = true;
            Ok(Some(h.next_expr(cast::Expr::Select(s))))
        }
        _ => Err(h.new_error(arg.id, "invalid argument to has() macro")),
    }
}

fn iter_ident(h: &MacroExprHelper, e: &cast::IdedExpr, msg: &str) -> Result<String, ParseError> {
    match &e.expr {
        cast::Expr::Ident(n) => {
            if n == ACCU || n == LEGACY_ACCU {
                Err(h.new_error(e.id, "iteration variable overwrites accumulator variable"))
            } else {
                Ok(n.clone())
            }
        }
        _ => Err(h.new_error(e.id, msg)),
    }
}

#[derive(Clone, Copy)]
enum Quant {
    All,
    Exists,
    ExistsOne,
}

fn quant_parts(
    q: Quant,
    h: &mut MacroExprHelper,
    pred: cast::IdedExpr,
) -> (
    cast::IdedExpr,
    cast::IdedExpr,
    cast::IdedExpr,
    cast::IdedExpr,
) {
    match q {
        Quant::All => {
            let init = lit_bool(h, true);
            let a = ident(h, ACCU);
            let cond = call(h, operators::NOT_STRICTLY_FALSE, vec![a]);
            let a = ident(h, ACCU);
            let step = call(h, operators::LOGICAL_AND, vec![a, pred]);
            let result = ident(h, ACCU);
            (init, cond, step, result)
        }
        Quant::Exists => {
            let init = lit_bool(h, false);
            let a = ident(h, ACCU);
            let not = call(h, operators::LOGICAL_NOT, vec![a]);
            let cond = call(h, operators::NOT_STRICTLY_FALSE, vec![not]);
            let a = ident(h, ACCU);
            let step = call(h, operators::LOGICAL_OR, vec![a, pred]);
            let result = ident(h, ACCU);
            (init, cond, step, result)
        }
        Quant::ExistsOne => {
            let init = lit_int(h, 0);
            let cond = lit_bool(h, true);
            let a = ident(h, ACCU);
            let one = lit_int(h, 1);
            let add = call(h, operators::ADD, vec![a, one]);
            let a = ident(h, ACCU);
            let step = call(h, operators::CONDITIONAL, vec![pred, add, a]);
            let a = ident(h, ACCU);
            let one = lit_int(h, 1);
            let result = call(h, operators::EQUALS, vec![a, one]);
            (init, cond, step, result)
        }
    }
}

/// `all`, `exists`, `exists_one` over one variable (`args`: variable, predicate) or two
/// (`args`: variables, predicate).
fn quantifier(
    q: Quant,
    h: &mut MacroExprHelper,
    t: &mut Option<cast::IdedExpr>,
    args: &mut Vec<cast::IdedExpr>,
) -> MacroResult {
    let (v1, v2) = if args.len() == 3 {
        let (v1, v2) = iter_vars(h, &args[0], &args[1])?;
        (v1, Some(v2))
    } else {
        (
            iter_ident(h, &args[0], "argument must be a simple name")?,
            None,
        )
    };
    let pred = args.pop().unwrap();
    args.clear();
    let (init, cond, step, result) = quant_parts(q, h, pred);
    let range = t.take().unwrap();
    Ok(Some(comprehension(
        h,
        accumulating(range, v1, v2, (init, cond, step, result)),
    )))
}

fn iter_vars(
    h: &MacroExprHelper,
    a0: &cast::IdedExpr,
    a1: &cast::IdedExpr,
) -> Result<(String, String), ParseError> {
    let v1 = match &a0.expr {
        cast::Expr::Ident(n) => n.clone(),
        _ => return Err(h.new_error(a0.id, "argument must be a simple name")),
    };
    let v2 = match &a1.expr {
        cast::Expr::Ident(n) => n.clone(),
        _ => return Err(h.new_error(a1.id, "argument must be a simple name")),
    };
    if v1 == v2 {
        return Err(h.new_error(a1.id, format!("duplicate variable name: {v1}")));
    }
    if v1 == ACCU || v1 == LEGACY_ACCU {
        return Err(h.new_error(a0.id, "iteration variable overwrites accumulator variable"));
    }
    if v2 == ACCU || v2 == LEGACY_ACCU {
        return Err(h.new_error(a1.id, "iteration variable overwrites accumulator variable"));
    }
    Ok((v1, v2))
}

fn map_macro(
    h: &mut MacroExprHelper,
    t: &mut Option<cast::IdedExpr>,
    args: &mut Vec<cast::IdedExpr>,
) -> MacroResult {
    let v = iter_ident(h, &args[0], "argument is not an identifier")?;
    let f = args.pop().unwrap();
    let filter = if args.len() == 2 { args.pop() } else { None };
    args.clear();
    let range = t.take().unwrap();
    Ok(Some(collect(
        h,
        Transform::List,
        range,
        (v, None),
        filter,
        f,
    )))
}

/// `filter` is `map` with a condition whose element is the variable itself.
fn filter_macro(
    h: &mut MacroExprHelper,
    t: &mut Option<cast::IdedExpr>,
    args: &mut Vec<cast::IdedExpr>,
) -> MacroResult {
    let v = iter_ident(h, &args[0], "argument is not an identifier")?;
    let p = args.pop().unwrap();
    let var = args.pop().unwrap();
    let range = t.take().unwrap();
    Ok(Some(collect(
        h,
        Transform::List,
        range,
        (v, None),
        Some(p),
        var,
    )))
}

/// What [`collect`] builds: a list of `f` (`map`, `filter`, `transformList`), a map of each key
/// to `f` (`transformMap`), or a map of `f`'s entries (`transformMapEntry`).
#[derive(Clone, Copy)]
enum Transform {
    List,
    Map,
    MapEntry,
}

fn transform(
    k: Transform,
    h: &mut MacroExprHelper,
    t: &mut Option<cast::IdedExpr>,
    args: &mut Vec<cast::IdedExpr>,
) -> MacroResult {
    let (v1, v2) = iter_vars(h, &args[0], &args[1])?;
    let f = args.pop().unwrap();
    let filter = if args.len() == 3 { args.pop() } else { None };
    args.clear();
    let range = t.take().unwrap();
    Ok(Some(collect(h, k, range, (v1, Some(v2)), filter, f)))
}

/// `f` of each element of `range` (variables `v1`, `v2`) collected into a list or a map, only
/// where `filter` holds if there is one: the comprehension of `map`, `filter`, `sortBy`'s keys
/// and the `transform` macros.
fn collect(
    h: &mut MacroExprHelper,
    k: Transform,
    range: cast::IdedExpr,
    (v1, v2): (String, Option<String>),
    filter: Option<cast::IdedExpr>,
    f: cast::IdedExpr,
) -> cast::IdedExpr {
    let init = match k {
        Transform::List => list(h, vec![]),
        _ => empty_map(h),
    };
    let cond = lit_bool(h, true);
    let a = ident(h, ACCU);
    let mut step = match k {
        Transform::List => {
            let l = list(h, vec![f]);
            call(h, operators::ADD, vec![a, l])
        }
        Transform::Map => {
            let k1 = ident(h, &v1);
            call(h, "cel.@mapInsert", vec![a, k1, f])
        }
        Transform::MapEntry => call(h, "cel.@mapInsert", vec![a, f]),
    };
    if let Some(p) = filter {
        let a = ident(h, ACCU);
        step = call(h, operators::CONDITIONAL, vec![p, step, a]);
    }
    let result = ident(h, ACCU);
    comprehension(h, accumulating(range, v1, v2, (init, cond, step, result)))
}

fn opt_map(
    flat: bool,
    h: &mut MacroExprHelper,
    t: &mut Option<cast::IdedExpr>,
    args: &mut Vec<cast::IdedExpr>,
) -> MacroResult {
    let var = match &args[0].expr {
        cast::Expr::Ident(n) => n.clone(),
        _ => {
            let m = if flat {
                "optFlatMap() variable name must be a simple identifier"
            } else {
                "optMap() variable name must be a simple identifier"
            };
            return Err(h.new_error(args[0].id, m));
        }
    };
    let f = args.pop().unwrap();
    args.clear();
    let target = t.take().unwrap();
    let target_copy = copy(h, &target);
    let has_value = member_call(h, "hasValue", target, vec![]);
    let empty = list(h, vec![]);
    let value = member_call(h, "value", target_copy, vec![]);
    let cond = lit_bool(h, false);
    let step = ident(h, &var);
    let bind = comprehension(
        h,
        cast::ComprehensionExpr {
            iter_range: empty,
            iter_var: "#unused".into(),
            iter_var2: None,
            accu_var: var.to_string(),
            accu_init: value,
            loop_cond: cond,
            loop_step: step,
            result: f,
        },
    );
    let then = if flat {
        bind
    } else {
        call(h, "optional.of", vec![bind])
    };
    let none = call(h, "optional.none", vec![]);
    Ok(Some(call(
        h,
        operators::CONDITIONAL,
        vec![has_value, then, none],
    )))
}

fn sort_by(
    h: &mut MacroExprHelper,
    t: &mut Option<cast::IdedExpr>,
    args: &mut Vec<cast::IdedExpr>,
) -> MacroResult {
    const INPUT: &str = "@__sortBy_input__";
    let target_ok = matches!(
        t.as_ref().map(|e| &e.expr),
        Some(
            cast::Expr::List(_)
                | cast::Expr::Select(_)
                | cast::Expr::Ident(_)
                | cast::Expr::Comprehension(_)
                | cast::Expr::Call(_)
        )
    );
    if !target_ok {
        let id = t.as_ref().map(|e| e.id).unwrap_or(0);
        return Err(h.new_error(id, "sortBy can only be applied to a list, identifier, comprehension, call or select expression"));
    }
    let var_ident = ident(h, INPUT);
    let v = match &args[0].expr {
        cast::Expr::Ident(n) if n == ACCU || n == LEGACY_ACCU => {
            return Err(h.new_error(
                args[0].id,
                "iteration variable overwrites accumulator variable",
            ));
        }
        cast::Expr::Ident(n) => n.clone(),
        _ => return Err(h.new_error(args[0].id, "argument is not an identifier")),
    };
    let f = args.pop().unwrap();
    args.clear();
    let range = copy(h, &var_ident);
    let map_compr = collect(h, Transform::List, range, (v, None), None, f);
    let recv = copy(h, &var_ident);
    let call_expr = member_call(h, "@sortByAssociatedKeys", recv, vec![map_compr]);
    let target = t.take().unwrap();
    let empty = list(h, vec![]);
    let cond = lit_bool(h, false);
    Ok(Some(comprehension(
        h,
        cast::ComprehensionExpr {
            iter_range: empty,
            iter_var: "#unused".into(),
            iter_var2: None,
            accu_var: INPUT.to_string(),
            accu_init: target,
            loop_cond: cond,
            loop_step: var_ident,
            result: call_expr,
        },
    )))
}

/// Whether a CEL text may use the optional syntax, the one thing a parser with it on reads
/// otherwise than one with it off: a `?` where the grammar takes one only with it (after `.`,
/// `[`, `{`, or `,` in a literal; `(` and the start of a text too, where both refuse it, so
/// that their errors are the other's check), blanks and comments between (a literal reads as a
/// blank: over-approximates). A text whose literals cannot be told apart may. `code` is the
/// text's [`code_outside_literals`].
pub(crate) fn may_use_optional_syntax(text: &str, code: Option<&str>) -> bool {
    if !text.contains('?') {
        return false;
    }
    let Some(code) = code else {
        return true;
    };
    code.match_indices('?').any(|(i, _)| {
        code[..i]
            .trim_end()
            .chars()
            .next_back()
            .is_none_or(|c| matches!(c, '.' | '[' | '{' | ',' | '('))
    })
}

/// `s` with every string or bytes literal and comment replaced by a space (cel-go's lexer: `'…'`,
/// `"…"`, triple-quoted forms, the `r`/`b` prefixes, escapes outside raw literals, `//` to the
/// end of the line), or `None` where that cannot be told.
pub(crate) fn code_outside_literals(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                out.push(' ');
            }
            q @ (b'\'' | b'"') => {
                let prefix_len = out
                    .chars()
                    .rev()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .map(char::len_utf8)
                    .sum::<usize>();
                let raw = match &out[out.len() - prefix_len..] {
                    "" | "b" | "B" => false,
                    "r" | "R" | "br" | "bR" | "Br" | "BR" => true,
                    _ => return None,
                };
                let triple = b[i..].starts_with(&[q, q, q]);
                i += if triple { 3 } else { 1 };
                loop {
                    match b.get(i)? {
                        &c if c == q && (!triple || b[i..].starts_with(&[q, q, q])) => {
                            i += if triple { 3 } else { 1 };
                            break;
                        }
                        b'\n' | b'\r' if !triple => return None,
                        b'\\' if !raw => i += 2,
                        _ => i += 1,
                    }
                }
                out.push(' ');
            }
            _ => {
                // A character boundary: literals and comments end on ASCII bytes.
                let c = s.get(i..)?.chars().next()?;
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<ParsedExpr, SyntaxErrors> {
        parse(s, ParserOptions::for_version(Version::new(1, 35)))
    }

    #[test]
    fn syntax_errors_read_like_cel_go() {
        let e = p("self.all(x,").unwrap_err();
        assert_eq!(
            e.0,
            "ERROR: <input>:1:12: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | self.all(x,\n | ...........^"
        );
    }

    /// A token that does not fit where a construct must close: cel-go names what the construct
    /// in progress expects (checked against a v1.36.2 API server).
    #[test]
    fn mismatched_input_names_the_construct_in_progress() {
        let first_error = |s: &str| p(s).unwrap_err().0.lines().next().unwrap().to_string();
        for (src, want) in [
            (
                "true ? has(object.a) ? true : false : true",
                "ERROR: <input>:1:22: Syntax error: mismatched input '?' expecting ':'",
            ),
            (
                "true ? x[0] ? 1 : 2 : 3",
                "ERROR: <input>:1:13: Syntax error: mismatched input '?' expecting ':'",
            ),
            (
                "g(1, f(y) z w)",
                "ERROR: <input>:1:11: Syntax error: mismatched input 'z' expecting ')'",
            ),
            (
                "x[f(y) z y]",
                "ERROR: <input>:1:8: Syntax error: mismatched input 'z' expecting ']'",
            ),
            (
                "(x) z y",
                "ERROR: <input>:1:5: Syntax error: mismatched input 'z' expecting <EOF>",
            ),
            (
                "[f(y) z y] == []",
                "ERROR: <input>:1:7: Syntax error: mismatched input 'z' expecting {']', ','}",
            ),
        ] {
            assert_eq!(first_error(src), want, "{src}");
        }
        // After a recovered error (a missing `:` taken as there), the next one follows on.
        let e = p("true ? f(x) z y : 1").unwrap_err().0;
        assert!(
            e.contains("ERROR: <input>:1:15: Syntax error: mismatched input 'y' expecting <EOF>"),
            "{e}"
        );
    }

    /// A macro's copy of its receiver (`optMap`) is placed where the receiver is, as cel-go's
    /// `Copy` places it: errors in it point there.
    #[test]
    fn copies_keep_their_original_place() {
        let e = p("a.?b.optMap(v, v.size()).orValue(0) <= 1000").unwrap();
        let mut receivers = Vec::new();
        e.expr.walk(&mut |n| {
            if matches!(&n.kind, ExprKind::Ident(i) if i == "a") {
                receivers.push(e.location(n.id));
            }
        });
        assert_eq!(receivers, [(1, 0), (1, 0)]);
    }

    #[test]
    fn syntax_errors_name_what_cel_go_names() {
        let e = p("a b c").unwrap_err();
        assert!(
            e.0.starts_with(
                "ERROR: <input>:1:3: Syntax error: mismatched input 'b' expecting <EOF>\n"
            ),
            "{}",
            e.0
        );
        let e = p("1 ? 2").unwrap_err();
        assert_eq!(
            e.0,
            "ERROR: <input>:1:6: Syntax error: mismatched input '<EOF>' expecting ':'\n | 1 ? 2\n | .....^"
        );
        let e = p("'\\uD800' == ''").unwrap_err();
        assert!(
            e.0.starts_with("ERROR: <input>:1:1: invalid unicode code point"),
            "{}",
            e.0
        );
        let e = p("b'\\u0041' == b'A'").unwrap_err();
        assert!(
            e.0.starts_with("ERROR: <input>:1:1: unable to unescape string"),
            "{}",
            e.0
        );
    }

    #[test]
    fn macros_expand_to_comprehensions() {
        let e = p("self.all(x, x > 0)").unwrap();
        assert!(matches!(e.expr.kind, ExprKind::Comprehension(_)));
        assert!(
            p("self.l.existsOne(x, x)").is_ok_and(|e| matches!(e.expr.kind, ExprKind::Call { .. }))
        );
        let e = p("self.all(k, v, v > 0)").unwrap();
        match e.expr.kind {
            ExprKind::Comprehension(c) => assert_eq!(c.iter_var2.as_deref(), Some("v")),
            _ => panic!(),
        }
        let e = p("self.transformMap(k, v, v + 1)").unwrap();
        assert!(matches!(e.expr.kind, ExprKind::Comprehension(_)));
        let e = p("optional.of(1).optMap(x, x + 1)").unwrap();
        assert!(matches!(e.expr.kind, ExprKind::Call { .. }));
    }

    #[test]
    fn ids_are_dense_and_unique() {
        let e = p("self.l.filter(x, x.a).map(y, y.b).exists(z, z == 'a')").unwrap();
        let mut ids = Vec::new();
        e.expr.walk(&mut |n| ids.push(n.id));
        let n = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n);
        assert!(ids.iter().all(|&i| i > 0 && i < e.max_id));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "(".repeat(100_001);
        assert!(
            p(&deep)
                .unwrap_err()
                .0
                .contains("expression code point size exceeds limit")
        );
        let deep = format!("{}1{}", "(".repeat(300), ")".repeat(300));
        assert!(p(&deep).unwrap_err().0.contains("recursion limit exceeded"));
        let chain = format!("a{}", ".b".repeat(5000));
        assert!(
            p(&chain)
                .unwrap_err()
                .0
                .contains("recursion limit exceeded")
        );
        let sum = format!("1{}", " + 1".repeat(5000));
        assert!(p(&sum).unwrap_err().0.contains("recursion limit exceeded"));
        let ok = format!("a{}", " || a".repeat(5000));
        assert!(p(&ok).is_ok());
    }
}
