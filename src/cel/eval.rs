//! Evaluating CEL with the `cel` crate's interpreter, macros expanded as cel-go expands them
//! (the expansions of [`super::parse`]), on plain values ([`Val`]).
//!
//! This is no Kubernetes runtime: it is how `crate::rewrite` checks that a rewritten rule gives
//! what the original gives on generated values. Only the functions of [`FAITHFUL_FUNCTIONS`]
//! are trusted to behave as cel-go's (a caller checks an expression with [`Interpreter::supports`]
//! first); an error naming a function or overload the interpreter lacks is
//! [`Outcome::Unsupported`], never a result. `matches` uses Go's regular expressions
//! ([`crate::goregexp`]), as the API server does.
//!
//! Like `parse.rs`, this file is the only one that knows the `cel` crate's evaluation API.

use std::sync::Arc;

use cel::objects::{Key, Map};
use cel::{Context, ExecutionError, Value};

use super::ast::{Expr, ExprKind};
use super::parse::{ParserOptions, interpreter_env};

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
    /// An evaluation error (its text; errors are compared as "both failed").
    Error(String),
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
];

/// A compiled expression.
pub struct Program {
    program: cel::Program,
}

/// The interpreter of one parser configuration.
pub struct Interpreter {
    env: Arc<cel::Env>,
}

impl Interpreter {
    pub fn new(opts: ParserOptions) -> Self {
        Interpreter {
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

    pub fn compile(&self, source: &str) -> Result<Program, String> {
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
        Session { ctx }
    }
}

/// An evaluation context of an [`Interpreter`].
pub struct Session {
    ctx: Context<'static, 'static>,
}

impl Session {
    /// Evaluates each program with the same variables (converted once).
    pub fn eval_all(&mut self, programs: &[&Program], vars: &[(&str, &Val)]) -> Vec<Outcome> {
        for (name, v) in vars {
            self.ctx.add_variable_from_value(*name, to_cel(v));
        }
        let ctx = &self.ctx;
        programs
            .iter()
            .map(|p| match p.program.execute(ctx) {
                Ok(v) => Outcome::Value(from_cel(&v)),
                Err(
                    e @ (ExecutionError::UndeclaredReference(_)
                    | ExecutionError::NoSuchOverload(_)
                    | ExecutionError::NotSupportedAsMethod { .. }
                    | ExecutionError::InvalidArgumentCount { .. }
                    | ExecutionError::MissingArgumentOrTarget),
                ) => Outcome::Unsupported(e.to_string()),
                Err(e) => Outcome::Error(e.to_string()),
            })
            .collect()
    }
}

fn to_cel(v: &Val) -> Value {
    match v {
        Val::Null | Val::Other(_) => Value::Null,
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
        assert!(matches!(run("isURL('x')", &[]), Outcome::Unsupported(_)));
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
