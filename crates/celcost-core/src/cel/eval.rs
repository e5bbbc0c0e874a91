//! Evaluating CEL with the `cel` crate's interpreter, macros expanded as cel-go expands them
//! (the expansions of [`super::parse`]), on plain values ([`Val`]).
//!
//! It is how `crate::rewrite` checks that a rewritten rule gives what the original gives on
//! generated values, and how the rules on a CRD's defaults are evaluated
//! (`crate::crd::validate`). Only the functions of [`FAITHFUL_FUNCTIONS`] are trusted to behave
//! as cel-go's (a caller checks an expression with [`Interpreter::supports`] first); an error
//! naming a function or overload the interpreter lacks is [`Outcome::Unsupported`], never a
//! result. `matches` uses Go's regular expressions ([`crate::goregexp`]), as the API server
//! does; `format` is cel-go's ([`format`]), and the Kubernetes URL library Go's `net/url`'s
//! ([`urls`]), each `Unsupported` where celcost does not follow them.
//!
//! Like `parse.rs`, this file is the only one that knows the `cel` crate's evaluation API.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::{Mutex, OnceLock};

use cel::objects::{Key, Map};
use cel::{Context, ExecutionError, Value};

use super::ast::build::{call, ident, int, list};
use super::ast::{Expr, ExprKind};
use super::parse::{ParserOptions, interpreter_env, parse_unexpanded};

pub mod format;
pub mod library;
pub mod urls;

/// A value as the interpreter sees it: what a schema node's JSON becomes in CEL (objects are
/// maps of their CEL-escaped field names).
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    String(String),
    Bytes(Vec<u8>),
    List(Vec<Val>),
    /// Entries in insertion order (keys are unique); compared as a set of entries.
    Map(Vec<(Val, Val)>),
    /// An optional value (`optional.of(v)`, `optional.none()`), as an input.
    Optional(Option<Box<Val>>),
    /// A URL of the Kubernetes URL library (`url(s)`): never an input.
    Url(Arc<urls::Url>),
    /// A value of a type only [`library`] evaluates (durations, timestamps, types, and the
    /// Kubernetes quantities, IPs, CIDRs, semvers and named formats): the `cel` crate's
    /// interpreter never sees one.
    Ext(Arc<library::Ext>),
    /// A result of another type (a type, an optional, ...), by its debug text.
    Other(String),
}

impl Val {
    /// Equality as CEL compares values of the same types (maps ignore entry order).
    pub fn same(&self, other: &Val) -> bool {
        match (self, other) {
            (Val::List(a), Val::List(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same(y))
            }
            (Val::Map(a), Val::Map(b)) => {
                a.len() == b.len()
                    && a.iter().all(|(k, v)| {
                        b.iter()
                            .find(|(k2, _)| k2.same(k))
                            .is_some_and(|(_, v2)| v2.same(v))
                    })
            }
            (Val::Double(a), Val::Double(b)) => a == b || (a.is_nan() && b.is_nan()),
            (Val::Ext(a), Val::Ext(b)) => library::ext_equal(a, b) == Some(true),
            _ => self == other,
        }
    }

    /// A map's value at a string key.
    pub fn get(&self, key: &str) -> Option<&Val> {
        match self {
            Val::Map(entries) => entries
                .iter()
                .find(|(k, _)| matches!(k, Val::String(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// Whether the value holds one of [`Val::Ext`] (which only [`library`] evaluates).
    pub fn holds_ext(&self) -> bool {
        match self {
            Val::Ext(_) => true,
            Val::List(l) => l.iter().any(Val::holds_ext),
            Val::Map(m) => m.iter().any(|(k, v)| k.holds_ext() || v.holds_ext()),
            Val::Optional(Some(v)) => v.holds_ext(),
            _ => false,
        }
    }

    /// Nodes in the value (for bounding work).
    pub fn weight(&self) -> usize {
        match self {
            Val::List(l) => 1 + l.iter().map(Val::weight).sum::<usize>(),
            Val::Map(m) => {
                1 + m
                    .iter()
                    .map(|(k, v)| k.weight() + v.weight())
                    .sum::<usize>()
            }
            Val::String(s) => 1 + s.len() / 16,
            _ => 1,
        }
    }
}

/// What an evaluation gave.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Value(Val),
    /// An evaluation error (errors are compared as "both failed").
    Error(EvalError),
    /// The interpreter cannot say what cel-go would: a function or overload it lacks.
    Unsupported(String),
}

/// Functions and operators whose `cel` crate implementation follows cel-go's for the values
/// [`Val`] holds (cel-go's names; macros are expanded before evaluation, so `all`, `exists`,
/// `exists_one`, `map` and `filter` are comprehensions over these).
pub const FAITHFUL_FUNCTIONS: &[&str] = &[
    "_&&_",
    "_||_",
    "!_",
    "-_",
    "_?_:_",
    "_==_",
    "_!=_",
    "_<_",
    "_<=_",
    "_>_",
    "_>=_",
    "_+_",
    "_-_",
    "_*_",
    "_/_",
    "_%_",
    "_[_]",
    "@in",
    "@not_strictly_false",
    "_?._",
    "_[?_]",
    "has",
    "all",
    "exists",
    "exists_one",
    "map",
    "filter",
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "int",
    "uint",
    "double",
    "string",
    "bool",
    "split",
    "lowerAscii",
    "upperAscii",
    "orValue",
    "hasValue",
    "value",
    "optional.of",
    "optional.none",
    "isIP",
    "format",
    FORMAT,
    "celcostString",
    "celcostBool",
    "celcostUint",
    "celcostDouble",
    "url",
    "isURL",
    "getScheme",
    "getHost",
    "getHostname",
    "getPort",
    "getEscapedPath",
    "getQuery",
    ENTRIES,
    LIST_ENTRIES,
    MAP_OF,
    MERGE_MAPS,
];

/// The helpers [`lower_for_interpreter`] calls (registered in each [`Session`]; no
/// expression that compiles upstream names them). `celcostEntries(x)`: the `[key, value]`
/// (maps) or `[index, element]` (lists) pairs of `x`, in its iteration order.
const ENTRIES: &str = "celcostEntries";
/// `celcostEntries` of a list (or of a map of at most one entry) only: over a larger map,
/// cel-go's order is Go's map order (the API server's `unstructuredMap.Iterator` ranges over a
/// Go map), which nobody can follow, so a list made in that order is no certain result.
const LIST_ENTRIES: &str = "celcostListEntries";
/// The map of a list of `[key, value]` pairs (keys distinct).
const MAP_OF: &str = "celcostMapOf";
/// The entries of a list of maps inserted in order into an empty map, as cel-go's
/// `cel.@mapInsert(map, map)` does (`insert failed: key k already exists`).
const MERGE_MAPS: &str = "celcostMergeMaps";
/// `<string>.format(<list>)` as cel-go evaluates it ([`format`]): the interpreter's own `format`
/// is no cel-go's, so [`lower_for_interpreter`] calls this instead.
const FORMAT: &str = "celcostFormat";
/// cel-go's conversions where the interpreter's differ (`string(1e6)` is `1e+06`, `uint('+5')`,
/// `bool('T')`, `double('1e400')`): [`lower_for_interpreter`] calls these instead.
const CONVERSIONS: &[(&str, &str)] = &[
    ("string", "celcostString"),
    ("bool", "celcostBool"),
    ("uint", "celcostUint"),
    ("double", "celcostDouble"),
];

/// The helper of a conversion the interpreter does not do as cel-go.
fn conversion(function: &str) -> Option<&'static str> {
    CONVERSIONS
        .iter()
        .find(|(f, _)| *f == function)
        .map(|(_, h)| *h)
}

/// The variable an entry of `celcostEntries` is bound to.
const ENTRY_VAR: &str = "celcostEntry";

/// A compiled expression.
pub struct Program {
    program: cel::Program,
}

/// Texts kept prepared for evaluation ([`Interpreter::prepare`]) before the cache is cleared:
/// enough for the rules every default of a large CRD runs, across the estimates of its copies
/// and minors; few enough to be a small part of the operator's memory (at 1,024 the fleet
/// benchmark's peak was 202.6 MiB, over its 200).
const PREPARED_CACHE_LIMIT: usize = 256;

/// What preparing a text for evaluation gives ([`Interpreter::prepare`]).
#[derive(Clone)]
pub enum Prepared {
    /// The text does not parse: cel-go's words.
    Unparsed(String),
    /// It parses: its program, or why it is not evaluated (its lowering fails, it calls a
    /// function the interpreter does not follow cel-go on, or the `cel` crate refuses it).
    Parsed(Result<Arc<Program>, String>),
}

/// Prepared texts by parser options and source, for every interpreter of the process, with the
/// work steps each preparation took (a text prepared again is charged them, so the budgets and
/// their outputs are as without the cache). Parsing a rule twice (ours, then the `cel`
/// crate's) was most of an estimate of a CRD whose defaults run many rules, and a suggestion's
/// verifications estimate the same CRD again and again.
type PreparedCache = HashMap<(ParserOptions, String), (Prepared, u64)>;

fn prepared_cache() -> &'static Mutex<PreparedCache> {
    static CACHE: OnceLock<Mutex<PreparedCache>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Empties the cache of prepared texts (with [`crate::cel::env::clear_parse_cache`]).
pub(crate) fn clear_prepared_cache() {
    prepared_cache()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clear();
}

/// The interpreter of one parser configuration.
pub struct Interpreter {
    env: Arc<cel::Env>,
    opts: ParserOptions,
}

impl Interpreter {
    pub fn new(opts: ParserOptions) -> Self {
        Interpreter {
            opts,
            env: Arc::new(interpreter_env(opts)),
        }
    }

    /// [`Interpreter::supports`], and also `type(x)` compared (`==`, `!=`) with the name of a
    /// type a [`Val`] holds (`type(self) == int`): the interpreter's types of those values and
    /// their names are cel-go's. Not `map`: an object is a map here, an object type in cel-go
    /// (either way it is no `int`, `string`, ...).
    pub fn supports_with_type_tests(e: &Expr) -> bool {
        const NAMES: &[&str] = &[
            "int",
            "uint",
            "double",
            "bool",
            "string",
            "bytes",
            "list",
            "null_type",
        ];
        let mut tests = std::collections::HashSet::new();
        e.walk(&mut |x| {
            if let ExprKind::Call { function, args, .. } = &x.kind
                && matches!(function.as_str(), "_==_" | "_!=_")
                && args.len() == 2
            {
                for (a, b) in [(&args[0], &args[1]), (&args[1], &args[0])] {
                    if let (
                        ExprKind::Call {
                            function: f,
                            target: None,
                            args: ta,
                        },
                        ExprKind::Ident(n),
                    ) = (&a.kind, &b.kind)
                        && f == "type"
                        && ta.len() == 1
                        && NAMES.contains(&n.as_str())
                    {
                        tests.insert(a.id);
                    }
                }
            }
        });
        Self::supports_except(e, &tests)
    }

    /// Whether every function an expression (as parsed by `parse_unexpanded`) calls is one the
    /// interpreter evaluates as cel-go does.
    pub fn supports(e: &Expr) -> bool {
        Self::supports_except(e, &std::collections::HashSet::new())
    }

    /// [`Interpreter::supports`], the calls `allowed` (by id) aside.
    fn supports_except(e: &Expr, allowed: &std::collections::HashSet<u32>) -> bool {
        let mut ok = true;
        e.walk(&mut |x| {
            if let ExprKind::Call { function, args, .. } = &x.kind {
                if !FAITHFUL_FUNCTIONS.contains(&function.as_str()) && !allowed.contains(&x.id) {
                    ok = false;
                }
                // The interpreter binds one iteration variable: no two-variable forms.
                if matches!(function.as_str(), "all" | "exists" | "exists_one") && args.len() != 2 {
                    ok = false;
                }
            }
            if let ExprKind::Struct { .. } | ExprKind::Comprehension(_) = &x.kind {
                ok = false;
            }
        });
        ok
    }

    /// `source` parsed as written, lowered ([`lower_for_interpreter`]), checked to call only
    /// what the interpreter follows cel-go on ([`Interpreter::supports_with_type_tests`]) and
    /// compiled; kept for the next estimate that evaluates the same text.
    pub fn prepare(&self, source: &str) -> Prepared {
        let key = (self.opts, source.to_string());
        let cache = || prepared_cache().lock().unwrap_or_else(|p| p.into_inner());
        if let Some((prepared, steps)) = cache().get(&key) {
            let prepared = prepared.clone();
            crate::budget::charge(*steps);
            return prepared;
        }
        // Kept only where the steps it takes are counted (within a budget).
        if !crate::budget::active() {
            return self.prepare_anew(source);
        }
        let (prepared, steps) = crate::budget::counted(|| self.prepare_anew(source));
        let mut cache = cache();
        if cache.len() >= PREPARED_CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(key, (prepared.clone(), steps));
        prepared
    }

    fn prepare_anew(&self, source: &str) -> Prepared {
        let parsed = match parse_unexpanded(source, self.opts) {
            Ok(p) => p,
            Err(e) => return Prepared::Unparsed(e.0),
        };
        let lowered = match lower_for_interpreter(&parsed.expr) {
            Ok(l) => l,
            Err(e) => return Prepared::Parsed(Err(e)),
        };
        let expr = lowered.as_ref().unwrap_or(&parsed.expr);
        if !Self::supports_with_type_tests(expr) {
            return Prepared::Parsed(Err(
                "it calls functions the interpreter does not follow cel-go on".into(),
            ));
        }
        let program = match &lowered {
            Some(_) => self.compile_expr(&parsed.expr),
            None => self.compile(source),
        };
        Prepared::Parsed(program.map(Arc::new))
    }

    /// `e` (as parsed by `parse_unexpanded`) compiled for evaluation, lowered first
    /// ([`lower_for_interpreter`]).
    pub fn compile_expr(&self, e: &Expr) -> Result<Program, String> {
        let lowered = lower_for_interpreter(e)?;
        let e = lowered.as_ref().unwrap_or(e);
        let source = super::unparse::unparse(e).ok_or("an expression celcost cannot print")?;
        self.compile_lowered(&source)
    }

    /// `source` compiled for evaluation; when it may call `format` or a conversion, parsed and
    /// lowered first ([`Interpreter::compile_expr`]), so that cel-go's run, not the
    /// interpreter's.
    pub fn compile(&self, source: &str) -> Result<Program, String> {
        if ["format", "string", "bool", "uint", "double"]
            .iter()
            .any(|f| source.contains(f))
        {
            let parsed = parse_unexpanded(source, self.opts).map_err(|e| e.0)?;
            return self.compile_expr(&parsed.expr);
        }
        self.compile_lowered(source)
    }

    fn compile_lowered(&self, source: &str) -> Result<Program, String> {
        self.env
            .compile(source)
            .map(|program| Program { program })
            .map_err(|e| e.to_string())
    }

    /// Evaluates `p` with the variables bound.
    pub fn eval(&self, p: &Program, vars: &[(&str, &Val)]) -> Outcome {
        self.session()
            .eval_all(&[p], vars)
            .pop()
            .unwrap_or(Outcome::Unsupported(String::new()))
    }

    /// A context to evaluate in many times (the variables bound anew each time).
    pub fn session(&self) -> Session {
        let mut ctx = Context::with_env(self.env.clone());
        let _ = ctx.add_function(
            "matches",
            |cel::extractors::This(s): cel::extractors::This<Arc<String>>,
             re: Arc<String>|
             -> Result<bool, ExecutionError> {
                crate::goregexp::is_match(&re, &s)
                    .map_err(|e| ExecutionError::function_error("matches", e))
            },
        );
        let _ = ctx.add_function("isIP", |s: Arc<String>| is_ip(&s));
        let unfollowable = Arc::new(Flag::default());
        add_url_library(&mut ctx, &unfollowable);
        add_conversions(&mut ctx, &unfollowable);
        let flag = unfollowable.clone();
        let _ = ctx.add_function(FORMAT, move |f: Arc<String>, args: Value| {
            let Value::List(args) = args else {
                return self::unfollowable(&flag, FORMAT);
            };
            let args: Vec<Val> = args.iter().map(from_cel).collect();
            match format::format(&f, &args) {
                Ok(s) => Ok(Value::String(Arc::new(s))),
                Err(format::FormatError::Go(e)) => Err(ExecutionError::function_error(FORMAT, e)),
                Err(format::FormatError::Unworded) => {
                    Err(ExecutionError::function_error(FORMAT, UNWORDED))
                }
                Err(format::FormatError::NotFollowed) => self::unfollowable(&flag, FORMAT),
            }
        });
        let flag = unfollowable.clone();
        let _ = ctx.add_function(ENTRIES, move |x: Value| entries(x, true, &flag));
        let flag = unfollowable.clone();
        let _ = ctx.add_function(LIST_ENTRIES, move |x: Value| entries(x, false, &flag));
        let flag = unfollowable.clone();
        let _ = ctx.add_function(MAP_OF, move |x: Value| map_of(x, &flag));
        let flag = unfollowable.clone();
        let _ = ctx.add_function(MERGE_MAPS, move |x: Value| merge_maps(x, &flag));
        Session { ctx, unfollowable }
    }
}

/// The Kubernetes library's `isIP` (`k8s.io/apiserver/pkg/cel/library/ip.go`: `isIP` →
/// `parseIPAddr`): Go's `netip.ParseAddr` succeeds, with no zone and no IPv4-mapped IPv6
/// address. Rust's parser accepts what `netip.ParseAddr` accepts without a zone: four decimal
/// octets up to 255 with no leading zero; up to eight groups of one to four hex digits, one
/// `::` standing for at least one zero group, an IPv4 tail in the last 32 bits.
pub(crate) fn is_ip(s: &str) -> bool {
    match s.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => true,
        Ok(std::net::IpAddr::V6(a)) => a.to_ipv4_mapped().is_none(),
        Err(_) => false,
    }
}

/// The text of an error that cel-go gives for certain, in words celcost does not reproduce.
const UNWORDED: &str = "an error celcost does not word as cel-go does";

/// A URL of the Kubernetes URL library (`kubernetes.URL`). Its equality is cel-go's comparison
/// of `URL.String()`, which celcost does not follow: comparing one sets the flag.
#[derive(Debug)]
struct UrlValue {
    url: Arc<urls::Url>,
    unfollowable: Arc<Flag>,
}

impl PartialEq for UrlValue {
    fn eq(&self, _: &Self) -> bool {
        self.unfollowable
            .set("a comparison of URLs (cel-go compares `URL.String()`)");
        false
    }
}

impl Eq for UrlValue {}

impl cel::objects::Opaque for UrlValue {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.URL"
    }
}

/// cel-go's `string`, `bool`, `uint` and `double` of the values the interpreter holds
/// (`ConvertToType` of `common/types`, v0.17.8 to v0.26.0 alike): `string` of a double is Go's
/// `%g`; strings convert as Go's `strconv.ParseBool`, `ParseUint` (base 10, no sign) and
/// `ParseFloat` (decimal; hexadecimal not followed), their failures `type conversion error from
/// 'string' to '<type>'`; a double out of a uint's range and a negative int are `unsigned
/// integer overflow`; bytes that are no UTF-8, `invalid UTF-8 in bytes, cannot convert to
/// string`.
fn add_conversions(ctx: &mut Context<'static, 'static>, flag: &Arc<Flag>) {
    let from_string = |to: &str| format!("type conversion error from 'string' to '{to}'");
    let f = flag.clone();
    let _ = ctx.add_function("celcostString", move |v: Value| {
        let err = |m: &str| Err(ExecutionError::function_error("celcostString", m));
        Ok(Value::String(Arc::new(match v {
            Value::String(s) => return Ok(Value::String(s)),
            Value::Int(i) => i.to_string(),
            Value::UInt(u) => u.to_string(),
            Value::Float(d) => super::gofmt::go_float(d),
            Value::Bool(b) => b.to_string(),
            Value::Bytes(b) => match std::str::from_utf8(&b) {
                Ok(s) => s.to_string(),
                Err(_) => return err("invalid UTF-8 in bytes, cannot convert to string"),
            },
            _ => return self::unfollowable(&f, "celcostString"),
        })))
    });
    let f = flag.clone();
    let _ = ctx.add_function("celcostBool", move |v: Value| match v {
        Value::Bool(b) => Ok(Value::Bool(b)),
        Value::String(s) => match s.as_str() {
            "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(Value::Bool(true)),
            "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(Value::Bool(false)),
            _ => Err(ExecutionError::function_error(
                "celcostBool",
                from_string("bool"),
            )),
        },
        _ => self::unfollowable(&f, "celcostBool"),
    });
    let f = flag.clone();
    let _ = ctx.add_function("celcostUint", move |v: Value| {
        let overflow = || {
            Err(ExecutionError::function_error(
                "celcostUint",
                "unsigned integer overflow",
            ))
        };
        match v {
            Value::UInt(u) => Ok(Value::UInt(u)),
            Value::Int(i) => u64::try_from(i).map_or_else(|_| overflow(), |u| Ok(Value::UInt(u))),
            // `doubleToUint64Checked`: [0, 2^64), truncated.
            Value::Float(d) if (0.0..18_446_744_073_709_551_616.0).contains(&d) => {
                Ok(Value::UInt(d as u64))
            }
            Value::Float(_) => overflow(),
            Value::String(s) if !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()) => s
                .parse::<u64>()
                .map(Value::UInt)
                .map_err(|_| ExecutionError::function_error("celcostUint", from_string("uint"))),
            Value::String(_) => Err(ExecutionError::function_error(
                "celcostUint",
                from_string("uint"),
            )),
            _ => self::unfollowable(&f, "celcostUint"),
        }
    });
    let f = flag.clone();
    let _ = ctx.add_function("celcostDouble", move |v: Value| match v {
        Value::Float(d) => Ok(Value::Float(d)),
        Value::Int(i) => Ok(Value::Float(i as f64)),
        Value::UInt(u) => Ok(Value::Float(u as f64)),
        Value::String(s) => match go_parse_float(&s) {
            Some(Ok(d)) => Ok(Value::Float(d)),
            Some(Err(())) => Err(ExecutionError::function_error(
                "celcostDouble",
                from_string("double"),
            )),
            None => self::unfollowable(&f, "celcostDouble"),
        },
        _ => self::unfollowable(&f, "celcostDouble"),
    });
}

/// Go's `strconv.ParseFloat(s, 64)`: `Some(Ok(x))`, `Some(Err(()))` where it fails (a syntax
/// error, or a finite number out of range), `None` for hexadecimal numbers (not followed).
/// It accepts `[+-]` digits with an optional `.` (at least one digit) and an optional exponent,
/// and, in any case, `[+-]inf`, `[+-]infinity` and `nan`; Rust's parser rounds the same way.
pub(crate) fn go_parse_float(s: &str) -> Option<Result<f64, ()>> {
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    if unsigned.eq_ignore_ascii_case("inf") || unsigned.eq_ignore_ascii_case("infinity") {
        return Some(Ok(if s.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        }));
    }
    if s.eq_ignore_ascii_case("nan") {
        return Some(Ok(f64::NAN));
    }
    let b = unsigned.as_bytes();
    if b.len() >= 2 && b[0] == b'0' && matches!(b[1], b'x' | b'X') {
        return None;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    let mut i = 0;
    let mut n = digits(&mut i);
    if i < b.len() && b[i] == b'.' {
        i += 1;
        n += digits(&mut i);
    }
    let mut ok = n > 0;
    if ok && i < b.len() && matches!(b[i], b'e' | b'E') {
        i += 1;
        if i < b.len() && matches!(b[i], b'+' | b'-') {
            i += 1;
        }
        ok = digits(&mut i) > 0;
    }
    if !ok || i != b.len() {
        return Some(Err(()));
    }
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() => Some(Ok(x)),
        _ => Some(Err(())),
    }
}

/// The Kubernetes URL library (`library/urls.go`, [`urls`]).
fn add_url_library(ctx: &mut Context<'static, 'static>, flag: &Arc<Flag>) {
    let f = flag.clone();
    let _ = ctx.add_function("url", move |s: Arc<String>| match urls::url(&s) {
        Ok(Ok(url)) => Ok(Value::Opaque(Arc::new(UrlValue {
            url: Arc::new(url),
            unfollowable: f.clone(),
        }))),
        Ok(Err(e)) => Err(ExecutionError::function_error(
            "url",
            e.as_deref().unwrap_or(UNWORDED),
        )),
        Err(urls::NotFollowed) => unfollowable(&f, "url"),
    });
    let f = flag.clone();
    let _ = ctx.add_function("isURL", move |s: Arc<String>| match urls::is_url(&s) {
        Ok(b) => Ok(Value::Bool(b)),
        Err(urls::NotFollowed) => unfollowable(&f, "isURL"),
    });
    type Accessor = fn(&urls::Url) -> Result<String, urls::NotFollowed>;
    let accessors: [(&str, Accessor); 5] = [
        ("getScheme", |u| Ok(u.scheme())),
        ("getHost", urls::Url::host),
        ("getHostname", urls::Url::hostname),
        ("getPort", urls::Url::port),
        ("getEscapedPath", urls::Url::escaped_path),
    ];
    for (name, get) in accessors {
        let f = flag.clone();
        let _ = ctx.add_function(
            name,
            move |cel::extractors::This(v): cel::extractors::This<Value>| match url_of(&v).map(get)
            {
                Some(Ok(s)) => Ok(Value::String(Arc::new(s))),
                _ => unfollowable(&f, name),
            },
        );
    }
    let f = flag.clone();
    let _ = ctx.add_function(
        "getQuery",
        move |cel::extractors::This(v): cel::extractors::This<Value>| {
            let Some(Ok(query)) = url_of(&v).map(urls::Url::query) else {
                return unfollowable(&f, "getQuery");
            };
            let map = query
                .into_iter()
                .map(|(k, vs)| {
                    let vs = vs.into_iter().map(|v| Value::String(Arc::new(v))).collect();
                    (Key::String(Arc::new(k)), Value::List(Arc::new(vs)))
                })
                .collect();
            Ok(Value::Map(Map { map: Arc::new(map) }))
        },
    );
}

fn url_of(v: &Value) -> Option<&urls::Url> {
    match v {
        Value::Opaque(o) => o.downcast_ref::<UrlValue>().map(|u| &*u.url),
        _ => None,
    }
}

/// An evaluation error of the interpreter: the `cel` crate's text, and cel-go's words for it.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalError {
    /// The `cel` crate's message (for a note where cel-go's words are unknown).
    pub text: String,
    pub go: GoError,
}

impl EvalError {
    fn of(e: &ExecutionError) -> Self {
        EvalError {
            text: e.to_string(),
            go: cel_go_error(e),
        }
    }
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// How cel-go words an evaluation error of the interpreter.
#[derive(Clone, Debug, PartialEq)]
pub enum GoError {
    /// In cel-go's words.
    Worded(String),
    /// cel-go fails too, in words celcost does not reproduce.
    Unworded,
    /// celcost cannot say what cel-go gives.
    Unknown,
}

/// cel-go's words for the evaluation errors of the interpreter that it words alike (`no such
/// key: a`, `division by zero`, `modulus by zero`, `index out of bounds: 1`, `integer
/// overflow`, `unsigned integer overflow`, `optional.none() dereference`, `type conversion error
/// from 'string' to 'int'`, `insert failed: key k already exists`) and those of the functions
/// celcost implements as cel-go does (`format`, `url`), told by the error's kind.
fn cel_go_error(e: &ExecutionError) -> GoError {
    use GoError::*;
    const OURS: [&str; 7] = [
        MERGE_MAPS,
        FORMAT,
        "url",
        "celcostString",
        "celcostBool",
        "celcostUint",
        "celcostDouble",
    ];
    match e {
        ExecutionError::FunctionError { function, message } => {
            let f = function.as_str();
            if OURS.contains(&f) {
                return if message == UNWORDED {
                    Unworded
                } else {
                    Worded(message.clone())
                };
            }
            match (f, message.as_str()) {
                // `int(uint)` over MaxInt64, `int(double)` out of (MinInt64, MaxInt64).
                ("int", "integer overflow") => Worded("integer overflow".into()),
                // `uint(int)` negative, `uint(double)` out of [0, MaxUint64).
                ("uint", "unsigned integer overflow") => Worded("unsigned integer overflow".into()),
                ("value", "optional.none() dereference") => {
                    Worded("optional.none() dereference".into())
                }
                // A string the crate does not parse as a number, Go's `strconv.ParseInt` (base
                // 10) and `ParseUint` do not either (they accept no more than Rust's parsers,
                // `ParseUint` less).
                ("int" | "uint", m) if m.starts_with("string parse error: ") => {
                    Worded(format!("type conversion error from 'string' to '{f}'"))
                }
                _ => Unknown,
            }
        }
        ExecutionError::NoSuchKey(k) => Worded(format!("no such key: {k}")),
        ExecutionError::DivisionByZero(_) => Worded("division by zero".into()),
        ExecutionError::RemainderByZero(_) => Worded("modulus by zero".into()),
        // The crate's checked integer arithmetic (`+ - * / %`, `MinInt64 / -1` and `% -1`
        // included) fails where cel-go's `addInt64Checked` and the others do.
        ExecutionError::Overflow(_, Value::Int(_), _) => Worded("integer overflow".into()),
        ExecutionError::Overflow(_, Value::UInt(_), _) => {
            Worded("unsigned integer overflow".into())
        }
        ExecutionError::IndexOutOfBounds(Value::Int(i)) => {
            Worded(format!("index out of bounds: {i}"))
        }
        _ => Unknown,
    }
}

fn key_value(k: &Key) -> Value {
    match k {
        Key::Int(i) => Value::Int(*i),
        Key::Uint(u) => Value::UInt(*u),
        Key::Bool(b) => Value::Bool(*b),
        Key::String(s) => Value::String(s.clone()),
    }
}

/// Set by a function that met a case celcost does not follow: the evaluation is
/// [`Outcome::Unsupported`], for the reason set first.
#[derive(Debug, Default)]
struct Flag(Mutex<Option<&'static str>>);

impl Flag {
    fn set(&self, why: &'static str) {
        if let Ok(mut w) = self.0.lock() {
            w.get_or_insert(why);
        }
    }

    fn take(&self) -> Option<&'static str> {
        self.0.lock().ok().and_then(|mut w| w.take())
    }
}

/// A case celcost does not follow (the flag makes the evaluation [`Outcome::Unsupported`]),
/// as a value that is no list or map for the helpers of the lowering.
fn unfollowable(flag: &Flag, what: &str) -> Result<Value, ExecutionError> {
    flag.set(match what {
        FORMAT => "`format` where celcost does not follow cel-go (`%e`, a value it does not hold as cel-go)",
        "url" | "isURL" | "getScheme" | "getHost" | "getHostname" | "getPort" | "getEscapedPath"
        | "getQuery" => {
            "a URL that Go's net/url versions parse differently, or that unescapes to no UTF-8"
        }
        "celcostString" | "celcostBool" | "celcostUint" | "celcostDouble" => {
            "a conversion celcost does not follow (a hexadecimal number, a value of another type)"
        }
        _ => "a two-variable comprehension celcost does not follow here",
    });
    Err(ExecutionError::function_error(what, "not followed"))
}

/// `celcostEntries` / `celcostListEntries`.
fn entries(x: Value, maps: bool, flag: &Flag) -> Result<Value, ExecutionError> {
    crate::budget::charge(1);
    let pair = |k: Value, v: Value| Value::List(Arc::new(vec![k, v]));
    match x {
        Value::List(l) => Ok(Value::List(Arc::new(
            l.iter()
                .enumerate()
                .map(|(i, v)| pair(Value::Int(i as i64), v.clone()))
                .collect(),
        ))),
        Value::Map(m) if maps || m.map.len() <= 1 => Ok(Value::List(Arc::new(
            m.map
                .iter()
                .map(|(k, v)| pair(key_value(k), v.clone()))
                .collect(),
        ))),
        _ => unfollowable(flag, ENTRIES),
    }
}

fn map_key(v: &Value) -> Option<Key> {
    Some(match v {
        Value::Int(i) => Key::Int(*i),
        Value::UInt(u) => Key::Uint(*u),
        Value::Bool(b) => Key::Bool(*b),
        Value::String(s) => Key::String(s.clone()),
        _ => return None,
    })
}

/// `celcostMapOf`: the keys are distinct (a list's indices, a map's keys).
fn map_of(x: Value, flag: &Flag) -> Result<Value, ExecutionError> {
    let Value::List(pairs) = x else {
        return unfollowable(flag, MAP_OF);
    };
    let mut map = std::collections::HashMap::new();
    for p in pairs.iter() {
        crate::budget::charge(1);
        let Value::List(kv) = p else {
            return unfollowable(flag, MAP_OF);
        };
        let (Some(k), Some(v)) = (kv.first().and_then(map_key), kv.get(1)) else {
            return unfollowable(flag, MAP_OF);
        };
        map.insert(k, v.clone());
    }
    Ok(Value::Map(Map { map: Arc::new(map) }))
}

/// `celcostMergeMaps`: each map's entries inserted in turn, as `transformMapEntry`'s steps
/// `cel.@mapInsert(accu, map)` do (cel-go `ext/comprehensions.go`, `types.InsertMapKeyValue`):
/// a key already there is the error `insert failed: key <k> already exists`. Followed only with
/// keys of one type (cel-go's keys compare across numeric types) and, at a repeated key, an
/// inserted map of one entry (the order of a larger one is Go's map order).
fn merge_maps(x: Value, flag: &Flag) -> Result<Value, ExecutionError> {
    let Value::List(maps) = x else {
        return unfollowable(flag, MERGE_MAPS);
    };
    let mut out: std::collections::HashMap<Key, Value> = std::collections::HashMap::new();
    let mut kind: Option<std::mem::Discriminant<Key>> = None;
    for m in maps.iter() {
        let Value::Map(m) = m else {
            return unfollowable(flag, MERGE_MAPS);
        };
        for (k, v) in m.map.iter() {
            crate::budget::charge(1);
            if *kind.get_or_insert(std::mem::discriminant(k)) != std::mem::discriminant(k) {
                return unfollowable(flag, MERGE_MAPS);
            }
            if out.contains_key(k) {
                if m.map.len() != 1 {
                    return unfollowable(flag, MERGE_MAPS);
                }
                let shown = match k {
                    Key::Int(i) => i.to_string(),
                    Key::Uint(u) => u.to_string(),
                    Key::Bool(b) => b.to_string(),
                    Key::String(s) => s.to_string(),
                };
                return Err(ExecutionError::function_error(
                    MERGE_MAPS,
                    format!("insert failed: key {shown} already exists"),
                ));
            }
            out.insert(k.clone(), v.clone());
        }
    }
    Ok(Value::Map(Map { map: Arc::new(out) }))
}

/// An evaluation context of an [`Interpreter`].
pub struct Session {
    ctx: Context<'static, 'static>,
    /// Set by a helper of the lowering that met a case celcost does not follow.
    unfollowable: Arc<Flag>,
}

impl Session {
    /// Evaluates each program with the same variables (converted once).
    pub fn eval_all(&mut self, programs: &[&Program], vars: &[(&str, &Val)]) -> Vec<Outcome> {
        for (name, v) in vars {
            self.ctx.add_variable_from_value(*name, to_cel(v));
        }
        let ctx = &self.ctx;
        let flag = &self.unfollowable;
        programs
            .iter()
            .map(|p| match (p.program.execute(ctx), flag.take()) {
                (_, Some(why)) => Outcome::Unsupported(why.into()),
                (Ok(v), None) => Outcome::Value(from_cel(&v)),
                (
                    Err(
                        e @ (ExecutionError::UndeclaredReference(_)
                        | ExecutionError::NoSuchOverload(_)
                        | ExecutionError::NotSupportedAsMethod { .. }
                        | ExecutionError::InvalidArgumentCount { .. }
                        | ExecutionError::MissingArgumentOrTarget),
                    ),
                    None,
                ) => Outcome::Unsupported(e.to_string()),
                (Err(e), None) => Outcome::Error(EvalError::of(&e)),
            })
            .collect()
    }
}

/// `e` (as parsed by `parse_unexpanded`) as the interpreter evaluates it: each `t.format(l)`
/// a call of cel-go's `format` (`celcostFormat(t, l)`), and each two-variable comprehension (cel-go
/// `ext/comprehensions.go`: `all`, `exists`, `existsOne`/`exists_one`, `transformList`,
/// `transformMap`, `transformMapEntry`; the first variable is a list's index or a map's key,
/// the second the element or value) written with the one-variable macros the interpreter
/// evaluates, over the pairs `celcostEntries(t)` gives, each pair `e` binding the two
/// variables as `[e[0]].map(i, [e[1]].map(v, body)[0])[0]` (the body evaluated once, its
/// value or error unchanged):
/// - `t.all(i, v, p)` → `celcostEntries(t).all(e, bind(p))`, and so `exists`; `existsOne` →
///   `exists_one`: the same accumulators, conditions and steps as cel-go's macros;
/// - `t.transformList(i, v, [f,] x)` → `celcostListEntries(t).map(e, [bind(f),] bind(x))`
///   (`f ? accu + [x] : accu`, as cel-go's step);
/// - `t.transformMap(i, v, [f,] x)` → `celcostMapOf(celcostEntries(t).map(e, [bind(f),]
///   [e[0], bind(x)]))`; `transformMapEntry` → `celcostMergeMaps(… bind(x) …)`.
///
/// `Ok(None)` when there is nothing to lower; `Err` when `e` names the helpers.
pub fn lower_for_interpreter(e: &Expr) -> Result<Option<Expr>, String> {
    let mut reserved = false;
    e.walk(&mut |x| match &x.kind {
        ExprKind::Ident(n) | ExprKind::Call { function: n, .. } if n.starts_with("celcost") => {
            reserved = true
        }
        _ => {}
    });
    if reserved {
        return Err("it names celcost's own helpers".into());
    }
    let mut found = false;
    let out = lower(e, &mut found);
    Ok(found.then_some(out))
}

fn at(x: Expr, i: i64) -> Expr {
    call("_[_]", None, vec![x, int(i)])
}

/// `[e[0]].map(i, [e[1]].map(v, body)[0])[0]`.
fn bind(i: &Expr, v: &Expr, body: Expr) -> Expr {
    let entry = ident(ENTRY_VAR);
    let inner = at(
        call(
            "map",
            Some(list(vec![at(entry.clone(), 1)])),
            vec![v.clone(), body],
        ),
        0,
    );
    at(
        call(
            "map",
            Some(list(vec![at(entry, 0)])),
            vec![i.clone(), inner],
        ),
        0,
    )
}

fn lower(e: &Expr, found: &mut bool) -> Expr {
    crate::budget::charge(1);
    let kind = match &e.kind {
        ExprKind::Call {
            function,
            target: Some(t),
            args,
        } if function == "format" && args.len() == 1 => {
            *found = true;
            ExprKind::Call {
                function: FORMAT.to_string(),
                target: None,
                args: vec![lower(t, found), lower(&args[0], found)],
            }
        }
        ExprKind::Call {
            function,
            target: None,
            args,
        } if args.len() == 1 && conversion(function).is_some() => {
            *found = true;
            ExprKind::Call {
                function: conversion(function).unwrap_or_default().to_string(),
                target: None,
                args: vec![lower(&args[0], found)],
            }
        }
        ExprKind::Call {
            function,
            target: Some(t),
            args,
        } if matches!(
            (function.as_str(), args.len()),
            ("all" | "exists" | "existsOne" | "exists_one", 3)
                | (
                    "transformList" | "transformMap" | "transformMapEntry",
                    3 | 4
                )
        ) && matches!(&args[0].kind, ExprKind::Ident(_))
            && matches!(&args[1].kind, ExprKind::Ident(_)) =>
        {
            *found = true;
            let t = lower(t, found);
            let (i, v) = (&args[0], &args[1]);
            let mut rest: Vec<Expr> = args[2..]
                .iter()
                .map(|a| bind(i, v, lower(a, found)))
                .collect();
            let over = |helper: &str| call(helper, None, vec![t.clone()]);
            let var = ident(ENTRY_VAR);
            return match function.as_str() {
                "all" | "exists" => call(function, Some(over(ENTRIES)), vec![var, rest.remove(0)]),
                "existsOne" | "exists_one" => {
                    call("exists_one", Some(over(ENTRIES)), vec![var, rest.remove(0)])
                }
                "transformList" => {
                    rest.insert(0, var);
                    call("map", Some(over(LIST_ENTRIES)), rest)
                }
                "transformMap" => {
                    let x = rest.pop().unwrap_or_else(|| ident(ENTRY_VAR));
                    rest.push(list(vec![at(ident(ENTRY_VAR), 0), x]));
                    rest.insert(0, var);
                    call(MAP_OF, None, vec![call("map", Some(over(ENTRIES)), rest)])
                }
                _ => {
                    rest.insert(0, var);
                    call(
                        MERGE_MAPS,
                        None,
                        vec![call("map", Some(over(ENTRIES)), rest)],
                    )
                }
            };
        }
        _ => return e.map_children(&mut |x| lower(x, found)),
    };
    Expr { id: e.id, kind }
}

fn to_cel(v: &Val) -> Value {
    match v {
        Val::Null | Val::Url(_) | Val::Ext(_) | Val::Other(_) => Value::Null,
        Val::Optional(v) => Value::Opaque(Arc::new(match v {
            Some(v) => cel::objects::OptionalValue::of(to_cel(v)),
            None => cel::objects::OptionalValue::none(),
        })),
        Val::Bool(b) => Value::Bool(*b),
        Val::Int(i) => Value::Int(*i),
        Val::Uint(u) => Value::UInt(*u),
        Val::Double(d) => Value::Float(*d),
        Val::String(s) => Value::String(Arc::new(s.clone())),
        Val::Bytes(b) => Value::Bytes(Arc::new(b.clone())),
        Val::List(l) => Value::List(Arc::new(l.iter().map(to_cel).collect())),
        Val::Map(m) => {
            let mut map = std::collections::HashMap::new();
            for (k, v) in m {
                let key = match k {
                    Val::String(s) => Key::String(Arc::new(s.clone())),
                    Val::Int(i) => Key::Int(*i),
                    Val::Uint(u) => Key::Uint(*u),
                    Val::Bool(b) => Key::Bool(*b),
                    _ => continue,
                };
                map.insert(key, to_cel(v));
            }
            Value::Map(Map { map: Arc::new(map) })
        }
    }
}

fn from_cel(v: &Value) -> Val {
    match v {
        Value::Null => Val::Null,
        Value::Bool(b) => Val::Bool(*b),
        Value::Int(i) => Val::Int(*i),
        Value::UInt(u) => Val::Uint(*u),
        Value::Float(d) => Val::Double(*d),
        Value::String(s) => Val::String(s.to_string()),
        Value::Bytes(b) => Val::Bytes(b.to_vec()),
        Value::List(l) => Val::List(l.iter().map(from_cel).collect()),
        Value::Map(m) => Val::Map(
            m.map
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        Key::String(s) => Val::String(s.to_string()),
                        Key::Int(i) => Val::Int(*i),
                        Key::Uint(u) => Val::Uint(*u),
                        Key::Bool(b) => Val::Bool(*b),
                    };
                    (key, from_cel(v))
                })
                .collect(),
        ),
        Value::Opaque(o) if o.downcast_ref::<UrlValue>().is_some() => o
            .downcast_ref::<UrlValue>()
            .map_or(Val::Null, |u| Val::Url(u.url.clone())),
        other => Val::Other(format!("{other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::decls::Version;

    fn run(src: &str, vars: &[(&str, &Val)]) -> Outcome {
        let i = Interpreter::new(ParserOptions::for_version(Version::new(1, 36)));
        let p = i.compile(src).expect("compiles");
        i.eval(&p, vars)
    }

    fn s(x: &str) -> Val {
        Val::String(x.into())
    }

    #[test]
    fn macros_and_errors_as_cel_go() {
        let list = Val::List(vec![
            Val::Map(vec![(s("a"), s("x"))]),
            Val::Map(vec![]),
            Val::Map(vec![(s("a"), s("y"))]),
        ]);
        // `exists` absorbs an element's error when another is true, `filter` does not.
        assert_eq!(
            run("self.exists(e, e.a == 'y')", &[("self", &list)]),
            Outcome::Value(Val::Bool(true))
        );
        assert!(matches!(
            run("self.filter(e, e.a == 'y').size() > 0", &[("self", &list)]),
            Outcome::Error(_)
        ));
        assert!(matches!(
            run("self.exists_one(e, e.a == 'y')", &[("self", &list)]),
            Outcome::Error(_)
        ));
        assert_eq!(
            run("self.all(e, has(e.a))", &[("self", &list)]),
            Outcome::Value(Val::Bool(false))
        );
        // Go regular expressions: `$` is the end of the text, `\d` ASCII only.
        assert_eq!(
            run("'a\\n'.matches('^a$')", &[]),
            Outcome::Value(Val::Bool(false))
        );
        assert_eq!(
            run("'\u{0663}'.matches('^\\\\d$')", &[]),
            Outcome::Value(Val::Bool(false))
        );
        assert!(matches!(
            run("isQuantity('x')", &[]),
            Outcome::Unsupported(_)
        ));
    }

    /// The Kubernetes URL library: apiextensions-apiserver's `TestValidationExpressions` "URL
    /// parsing" (`schema/cel/validation_test.go`, 1.36), every rule true; errors as the API
    /// server words them; comparing URLs (cel-go compares `URL.String()`) not followed.
    #[test]
    fn url_library_as_kubernetes() {
        let obj = Val::Map(vec![(
            s("url"),
            s("https://user:pass@kubernetes.io:80/docs/home?k1=a&k2=b&k2=c#anchor"),
        )]);
        for rule in [
            "url('/path').getScheme() == ''",
            "url('https://example.com/').getScheme() == 'https'",
            "url('https://example.com:80/').getHost() == 'example.com:80'",
            "url('https://example.com/').getHost() == 'example.com'",
            "url('https://[::1]:80/').getHost() == '[::1]:80'",
            "url('https://[::1]/').getHost() == '[::1]'",
            "url('/path').getHost() == ''",
            "url('https://example.com:80/').getHostname() == 'example.com'",
            "url('https://127.0.0.1/').getHostname() == '127.0.0.1'",
            "url('https://[::1]/').getHostname() == '::1'",
            "url('/path').getHostname() == ''",
            "url('https://example.com:80/').getPort() == '80'",
            "url('https://example.com/').getPort() == ''",
            "url('/path').getPort() == ''",
            "url('https://example.com/path').getEscapedPath() == '/path'",
            "url('https://example.com/with space/').getEscapedPath() == '/with%20space/'",
            "url('https://example.com').getEscapedPath() == ''",
            "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == { 'k1': ['a'], 'k2': ['b', 'c']}",
            "url('https://example.com/path?key with spaces=value with spaces').getQuery() == { 'key with spaces': ['value with spaces']}",
            "url('https://example.com/path?').getQuery() == {}",
            "url('https://example.com/path').getQuery() == {}",
            "url(self.url).getScheme() == 'https'",
            "url(self.url).getHost() == 'kubernetes.io:80'",
            "url(self.url).getHostname() == 'kubernetes.io'",
            "url(self.url).getPort() == '80'",
            "url(self.url).getEscapedPath() == '/docs/home'",
            "url(self.url).getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}",
            "isURL('https://user:pass@example.com:80/path?query=val#fragment')",
            "isURL('/path') == true",
            "isURL('https://a:b:c/') == false",
            "isURL('../relative-path') == false",
        ] {
            assert_eq!(
                run(rule, &[("self", &obj)]),
                Outcome::Value(Val::Bool(true)),
                "{rule}"
            );
        }
        let Outcome::Error(e) = run("url(self).getQuery().size() <= 3", &[("self", &s("a"))])
        else {
            panic!()
        };
        assert_eq!(
            e.go,
            GoError::Worded(
                "URL parse error during conversion from string: parse \"a\": invalid URI for request"
                    .into()
            )
        );
        // Both Go versions fail, in other words.
        let Outcome::Error(e) = run("url('https://a:b:c/').getHost() == ''", &[]) else {
            panic!()
        };
        assert_eq!(e.go, GoError::Unworded);
        for unfollowed in [
            "url('https://a/') == url('https://a/')",
            "url('https://a/') in [url('https://a/')]",
            "url('http://a:1:2/').getHost() == ''",
            "self.getHost() == ''",
        ] {
            assert!(
                matches!(
                    run(unfollowed, &[("self", &s("x"))]),
                    Outcome::Unsupported(_)
                ),
                "{unfollowed}"
            );
        }
    }

    /// cel-go's conversions (`common/types` `ConvertToType`), where the interpreter's own differ:
    /// `string` of a double as Go's `%g`, strings as Go's `strconv` parses them.
    #[test]
    fn conversions_as_cel_go() {
        for (src, want) in [
            ("string(1e6)", s("1e+06")),
            ("string(123456789.0)", s("1.23456789e+08")),
            ("string(0.1)", s("0.1")),
            ("string(1e-7)", s("1e-07")),
            ("string(-0.0)", s("-0")),
            ("string(1.0/0.0)", s("+Inf")),
            ("string(b'abc')", s("abc")),
            ("string(7u)", s("7")),
            ("string(-7)", s("-7")),
            ("string(true)", s("true")),
            ("bool('T')", Val::Bool(true)),
            ("bool('F')", Val::Bool(false)),
            ("bool('True')", Val::Bool(true)),
            ("uint('18446744073709551615')", Val::Uint(u64::MAX)),
            ("uint(-0.0)", Val::Uint(0)),
            ("uint(2.9)", Val::Uint(2)),
            ("double('Infinity') > 0.0", Val::Bool(true)),
            ("double('-inf') < 0.0", Val::Bool(true)),
            ("double('.5')", Val::Double(0.5)),
            ("double('5.')", Val::Double(5.0)),
            ("double('1E3')", Val::Double(1000.0)),
            ("double(3)", Val::Double(3.0)),
            ("double('NaN') != double('NaN')", Val::Bool(true)),
            ("'%s'.format([string(1e6)])", s("1e+06")),
        ] {
            assert_eq!(run(src, &[]), Outcome::Value(want), "{src}");
        }
        for (src, want) in [
            (
                "bool('yes')",
                "type conversion error from 'string' to 'bool'",
            ),
            (
                "uint('+5')",
                "type conversion error from 'string' to 'uint'",
            ),
            (
                "uint('1e3')",
                "type conversion error from 'string' to 'uint'",
            ),
            (
                "uint('18446744073709551616')",
                "type conversion error from 'string' to 'uint'",
            ),
            ("uint(-1)", "unsigned integer overflow"),
            ("uint(1.8446744073709552e19)", "unsigned integer overflow"),
            ("uint(double('NaN'))", "unsigned integer overflow"),
            (
                "double('1e400')",
                "type conversion error from 'string' to 'double'",
            ),
            (
                "double('+nan')",
                "type conversion error from 'string' to 'double'",
            ),
            (
                "double('1_0')",
                "type conversion error from 'string' to 'double'",
            ),
            (
                "double(' 5')",
                "type conversion error from 'string' to 'double'",
            ),
            (
                "double('infin')",
                "type conversion error from 'string' to 'double'",
            ),
            (
                "double('1e')",
                "type conversion error from 'string' to 'double'",
            ),
            (
                "double('.')",
                "type conversion error from 'string' to 'double'",
            ),
            (
                "string(b'\\xff')",
                "invalid UTF-8 in bytes, cannot convert to string",
            ),
        ] {
            let Outcome::Error(e) = run(src, &[]) else {
                panic!("{src}: {:?}", run(src, &[]))
            };
            assert_eq!(e.go, GoError::Worded(want.into()), "{src}");
        }
        assert!(matches!(
            run("double('0x1p-2')", &[]),
            Outcome::Unsupported(_)
        ));
        // `type(x) == string` is no conversion.
        assert_eq!(
            run("type(self) == string", &[("self", &s("x"))]),
            Outcome::Value(Val::Bool(true))
        );
    }

    /// The interpreter's errors that cel-go words alike, in cel-go's words.
    #[test]
    fn errors_in_cel_go_words() {
        for (src, want) in [
            ("9223372036854775807 + 1 > 0", "integer overflow"),
            ("-9223372036854775807 - 2 > 0", "integer overflow"),
            ("(-9223372036854775807 - 1) / -1 > 0", "integer overflow"),
            ("(-9223372036854775807 - 1) % -1 > 0", "integer overflow"),
            ("0u - 1u > 0u", "unsigned integer overflow"),
            ("int(18446744073709551615u) > 0", "integer overflow"),
            ("int(1e19) > 0", "integer overflow"),
            ("uint(-1) > 0u", "unsigned integer overflow"),
            ("uint(-1.0) > 0u", "unsigned integer overflow"),
            (
                "int('1x') > 0",
                "type conversion error from 'string' to 'int'",
            ),
            (
                "uint('-1') > 0u",
                "type conversion error from 'string' to 'uint'",
            ),
            ("optional.none().value() > 0", "optional.none() dereference"),
            ("1 / 0 > 0", "division by zero"),
            ("1 % 0 > 0", "modulus by zero"),
            ("[1][2] > 0", "index out of bounds: 2"),
            ("{'a': 1}['b'] > 0", "no such key: b"),
        ] {
            let Outcome::Error(e) = run(src, &[]) else {
                panic!("{src}")
            };
            assert_eq!(e.go, GoError::Worded(want.into()), "{src}");
        }
    }

    /// `isIP` as the API server's `parseIPAddr` (Go `netip.ParseAddr`, no zone, no IPv4-mapped
    /// IPv6): leading zeros in an octet, zones, brackets and `::ffff:a.b.c.d` are not IPs.
    #[test]
    fn is_ip_as_netip() {
        for (ip, want) in [
            ("10.0.0.1", true),
            ("0.0.0.0", true),
            ("::", true),
            ("fd00::1:2", true),
            ("::1.2.3.4", true),
            ("1:2:3:4:5:6:7::", true),
            ("010.0.0.1", false),
            ("1.2.3.256", false),
            ("1.2.3", false),
            ("::ffff:1.2.3.4", false),
            ("fe80::1%eth0", false),
            ("[::1]", false),
            ("1::2::3", false),
            ("00000::1", false),
            ("", false),
        ] {
            let v = Val::String(ip.into());
            assert_eq!(
                run("isIP(self)", &[("self", &v)]),
                Outcome::Value(Val::Bool(want)),
                "{ip}"
            );
        }
    }

    #[test]
    fn optionals_and_strings() {
        let v = Val::Map(vec![(s("a"), Val::Int(3))]);
        assert_eq!(
            run("self.?a.orValue(0) + self.?b.orValue(1)", &[("self", &v)]),
            Outcome::Value(Val::Int(4))
        );
        assert_eq!(
            run("'a/b/..'.split('/').exists(s, s == '..')", &[]),
            Outcome::Value(Val::Bool(true))
        );
    }
}

#[cfg(test)]
mod type_tests {
    use super::*;
    use crate::cel::decls::Version;
    use crate::cel::parse::parse_unexpanded;

    /// `type(x) == int` and the like evaluate as cel-go's, and only those uses of `type` count.
    #[test]
    fn type_tests_of_held_values() {
        let opts = ParserOptions::for_version(Version::new(1, 36));
        let i = Interpreter::new(opts);
        let supported = |src: &str| {
            Interpreter::supports_with_type_tests(&parse_unexpanded(src, opts).unwrap().expr)
        };
        assert!(supported(
            "type(self) == int ? self > 0 : self.endsWith('%')"
        ));
        assert!(supported("string != type(self)"));
        assert!(!supported("type(self) == type(1)"));
        assert!(!supported("type(self) == google.protobuf.Duration"));
        assert!(!supported("type(self) == map"));
        assert!(!Interpreter::supports(
            &parse_unexpanded("type(self) == int", opts).unwrap().expr
        ));
        for (v, int) in [(Val::Int(5), true), (Val::String("5%".into()), false)] {
            let p = i.compile("type(self) == int").unwrap();
            assert_eq!(i.eval(&p, &[("self", &v)]), Outcome::Value(Val::Bool(int)));
            let p = i.compile("type(self) != string").unwrap();
            assert_eq!(i.eval(&p, &[("self", &v)]), Outcome::Value(Val::Bool(int)));
        }
    }
}

#[cfg(test)]
mod two_variable_tests {
    use super::*;
    use crate::cel::decls::Version;
    use crate::cel::parse::parse_unexpanded;

    fn run(src: &str, vars: &[(&str, &Val)]) -> Outcome {
        let opts = ParserOptions::for_version(Version::new(1, 36));
        let i = Interpreter::new(opts);
        let e = parse_unexpanded(src, opts).expect("parses").expr;
        let lowered = lower_for_interpreter(&e)
            .expect("lowers")
            .expect("has a two-variable comprehension");
        assert!(Interpreter::supports(&lowered), "{src}");
        let p = i.compile_expr(&e).expect("compiles");
        i.eval(&p, vars)
    }

    fn int(i: i64) -> Val {
        Val::Int(i)
    }

    fn s(x: &str) -> Val {
        Val::String(x.into())
    }

    /// cel-go `ext/comprehensions.go` (`quantifierAll`, `quantifierExists`,
    /// `quantifierExistsOne`): over a list the first variable is the index, the second the
    /// element; `all`/`exists` absorb an element's error when another element decides.
    #[test]
    fn quantifiers_over_lists_bind_the_index_first() {
        let l = Val::List(vec![s("a"), s("b")]);
        let yes = Outcome::Value(Val::Bool(true));
        let no = Outcome::Value(Val::Bool(false));
        assert_eq!(
            run(
                "self.all(i, v, i == 0 ? v == 'a' : v == 'b')",
                &[("self", &l)]
            ),
            yes
        );
        assert_eq!(run("self.all(i, v, v == 'a')", &[("self", &l)]), no);
        assert_eq!(
            run("self.exists(i, v, i == 1 && v == 'b')", &[("self", &l)]),
            yes
        );
        assert_eq!(run("self.existsOne(i, v, i >= 0)", &[("self", &l)]), no);
        assert_eq!(run("self.exists_one(i, v, i > 0)", &[("self", &l)]), yes);
        let n = Val::List(vec![int(0), int(1)]);
        // exists: the error of element 0 is absorbed by the true of element 1.
        assert_eq!(run("self.exists(i, v, 10 / v > 5)", &[("self", &n)]), yes);
        // all: element 0's error stays (nothing false after it): the rule's error.
        assert!(matches!(
            run("self.all(i, v, 10 / v > 5)", &[("self", &n)]),
            Outcome::Error(e) if e.text.starts_with("Division by zero")
        ));
        // Nested, the inner one over an element.
        let nested = Val::List(vec![
            Val::List(vec![int(0)]),
            Val::List(vec![int(1), int(1)]),
        ]);
        assert_eq!(
            run(
                "self.all(i, row, row.all(j, x, x == (i == 0 ? 0 : 1)))",
                &[("self", &nested)]
            ),
            yes
        );
    }

    /// `transformList` (`accu + [x]`, with a filter `f ? accu + [x] : accu`), `transformMap`
    /// (`cel.@mapInsert(accu, i, x)`), `transformMapEntry` (`cel.@mapInsert(accu, x)`, a
    /// repeated key `insert failed: key <k> already exists`, `types.InsertMapKeyValue`).
    #[test]
    fn transforms_over_lists() {
        let l = Val::List(vec![int(1), int(2), int(3)]);
        assert_eq!(
            run("self.transformList(i, v, i * v)", &[("self", &l)]),
            Outcome::Value(Val::List(vec![int(0), int(2), int(6)]))
        );
        assert_eq!(
            run("self.transformList(i, v, v > 1, i)", &[("self", &l)]),
            Outcome::Value(Val::List(vec![int(1), int(2)]))
        );
        let got = run("self.transformMap(i, v, v * 10)", &[("self", &l)]);
        let want = Val::Map(vec![
            (int(0), int(10)),
            (int(1), int(20)),
            (int(2), int(30)),
        ]);
        assert!(
            matches!(&got, Outcome::Value(m) if m.same(&want)),
            "{got:?}"
        );
        let got = run("self.transformMap(i, v, v != 2, v)", &[("self", &l)]);
        let want = Val::Map(vec![(int(0), int(1)), (int(2), int(3))]);
        assert!(
            matches!(&got, Outcome::Value(m) if m.same(&want)),
            "{got:?}"
        );
        let names = Val::List(vec![s("a"), s("b"), s("a")]);
        assert!(matches!(
            run("self.transformMapEntry(i, v, {v: i}).size() == 2", &[("self", &names)]),
            Outcome::Error(e) if e.text.ends_with("insert failed: key a already exists")
        ));
        // Over a map, transformList's order is Go's map order: not followed (but one entry has
        // one order).
        let m = Val::Map(vec![(s("x"), int(1)), (s("y"), int(2))]);
        assert!(matches!(
            run("self.transformList(k, v, v)[0] == 1", &[("self", &m)]),
            Outcome::Unsupported(_)
        ));
        let one = Val::Map(vec![(s("x"), int(1))]);
        assert_eq!(
            run(
                "self.transformList(k, v, k + string(v)) == ['x1']",
                &[("self", &one)]
            ),
            Outcome::Value(Val::Bool(true))
        );
        assert_eq!(
            run(
                "self.transformMap(k, v, v + 1) == {'x': 2, 'y': 3}",
                &[("self", &m)]
            ),
            Outcome::Value(Val::Bool(true))
        );
        assert_eq!(
            run(
                "self.all(k, v, k == 'x' ? v == 1 : v == 2)",
                &[("self", &m)]
            ),
            Outcome::Value(Val::Bool(true))
        );
    }

    #[test]
    fn the_helpers_are_not_for_expressions() {
        let opts = ParserOptions::for_version(Version::new(1, 36));
        for src in [
            "celcostEntries(self).size() == 0",
            "self.all(celcostEntry, v, true)",
        ] {
            let e = parse_unexpanded(src, opts).unwrap().expr;
            assert!(lower_for_interpreter(&e).is_err(), "{src}");
        }
        let e = parse_unexpanded("self.all(x, x > 0)", opts).unwrap().expr;
        assert_eq!(lower_for_interpreter(&e), Ok(None));
    }
}

#[cfg(test)]
mod prepared_tests {
    use super::*;
    use crate::budget::{self, Limits};
    use crate::cel::decls::Version;

    /// What preparing `src` and evaluating it on `self` gives, as text.
    fn prepared_outcome(i: &Interpreter, src: &str, this: &Val) -> String {
        match i.prepare(src) {
            Prepared::Unparsed(e) => format!("unparsed: {e}"),
            Prepared::Parsed(Err(e)) => format!("not evaluated: {e}"),
            Prepared::Parsed(Ok(p)) => format!("{:?}", i.eval(&p, &[("self", this)])),
        }
    }

    /// A text prepared again comes from the cache, evaluates as it did the first time and is
    /// charged the steps its first preparation took (so that budgets stop where they would
    /// without the cache); outside a budget nothing is kept.
    #[test]
    fn a_text_prepared_again_is_charged_as_the_first_time() {
        let opts = ParserOptions::for_version(Version::new(1, 36));
        let i = Interpreter::new(opts);
        let this = Val::List(vec![Val::String("ab".into()), Val::String("abc".into())]);
        let limits = Limits {
            steps: 1_000_000,
            bytes: usize::MAX,
        };
        let texts = [
            "self.all(x, x.size() < 7) && 'prepared once' != ''",
            "self.all(i, x, i >= 0 && x != 'prepared twice')",
            "self.exists(x, x == 'prepared thrice'",
            "self.exists(x, x.matchesNothing('prepared four times'))",
        ];
        for src in texts {
            let key = (opts, src.to_string());
            let cached = || prepared_cache().lock().unwrap().contains_key(&key);
            assert!(!cached(), "{src}");
            let _ = prepared_outcome(&i, src, &this);
            assert!(!cached(), "kept outside a budget: {src}");
            let (first, used_first) =
                budget::run_measured(limits, || prepared_outcome(&i, src, &this));
            assert!(cached(), "{src}");
            let (again, used_again) =
                budget::run_measured(limits, || prepared_outcome(&i, src, &this));
            assert_eq!(first.unwrap(), again.unwrap(), "{src}");
            assert_eq!(used_first.steps, used_again.steps, "{src}");
            assert!(used_first.steps >= src.len() as u64, "{src}");
        }
    }
}
