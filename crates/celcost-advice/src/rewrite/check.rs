//! The equivalence check: a rewrite is offered only when it gives what the original gives —
//! the same value, or an error for both — on every value generated from the node's schema
//! (and `oldSelf`, for transition rules), evaluated with the `cel` crate's interpreter.

use celcost_core::cel::ast::{Expr, ExprKind, Literal};
use celcost_core::cel::eval::{Interpreter, Outcome, Program, Session, Val};
use celcost_core::schema::Schema;
use celcost_core::schema::decltype::DeclType;

use super::generate::{Generator, Limits, Pools};

/// The result of a check.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Same results on this many generated values.
    Equivalent { cases: u64 },
    /// A generated value where they differ.
    Different { case: String },
    /// The check could not be made (a function the interpreter lacks, a type without
    /// generated values, too few cases the original evaluates without error).
    Unknown(String),
}

/// What a check evaluates on: the node's schema and type, and the rule's variables.
pub struct Subject<'a> {
    pub interpreter: &'a Interpreter,
    pub schema: &'a Schema,
    pub decl: &'a DeclType,
    pub uses_old_self: bool,
    pub cases: usize,
    pub seed: u64,
}

/// Literals of the expressions, and the deepest nesting of comprehensions in them.
pub fn harvest(exprs: &[&Expr]) -> (Pools, usize) {
    let mut pools = Pools::default();
    let mut depth = 0;
    for e in exprs {
        e.walk(&mut |x| {
            let (list, item): (&mut Vec<String>, String) = match &x.kind {
                ExprKind::Literal(Literal::String(s)) => (&mut pools.strings, s.clone()),
                ExprKind::Select { field, .. } => (&mut pools.fields, field.clone()),
                ExprKind::Call { function, args, .. } if function == "_?._" && args.len() == 2 => {
                    match &args[1].kind {
                        ExprKind::Literal(Literal::String(f)) => (&mut pools.fields, f.clone()),
                        _ => return,
                    }
                }
                ExprKind::Literal(Literal::Int(i)) => {
                    if !pools.ints.contains(i) && pools.ints.len() < 64 {
                        pools.ints.push(*i);
                    }
                    return;
                }
                ExprKind::Literal(Literal::Double(d)) => {
                    if pools.doubles.len() < 64 {
                        pools.doubles.push(*d);
                    }
                    return;
                }
                _ => return,
            };
            if !list.contains(&item) && list.len() < 64 {
                list.push(item);
            }
        });
        depth = depth.max(nesting(e));
    }
    (pools, depth)
}

const MACROS: &[&str] = &["all", "exists", "exists_one", "map", "filter"];

/// The deepest nesting of comprehension macros.
pub fn nesting(e: &Expr) -> usize {
    fn go(e: &Expr) -> usize {
        let mut own = 0;
        let mut inner = 0;
        if let ExprKind::Call {
            function, target, ..
        } = &e.kind
            && target.is_some()
            && MACROS.contains(&function.as_str())
        {
            own = 1;
        }
        let mut children: Vec<&Expr> = Vec::new();
        match &e.kind {
            ExprKind::Select { operand, .. } => children.push(operand),
            ExprKind::Call { target, args, .. } => {
                children.extend(target.as_deref());
                children.extend(args.iter());
            }
            ExprKind::List { elements, .. } => children.extend(elements.iter()),
            ExprKind::Map { entries } => {
                for en in entries {
                    children.push(&en.key);
                    children.push(&en.value);
                }
            }
            ExprKind::Struct { fields, .. } => children.extend(fields.iter().map(|f| &f.value)),
            ExprKind::Literal(_) | ExprKind::Ident(_) | ExprKind::Comprehension(_) => {}
        }
        for c in children {
            inner = inner.max(go(c));
        }
        own + inner
    }
    go(e)
}

fn limits_for(nesting: usize) -> Limits {
    Limits {
        max_len: match nesting {
            0..=2 => 5,
            3 => 4,
            4 => 3,
            _ => 2,
        },
        ..Limits::default()
    }
}

/// Runs `step` on each generated `self` (and `oldSelf`).
fn each_case(
    subject: &Subject<'_>,
    pools: &Pools,
    nesting: usize,
    mut step: impl FnMut(&[(&str, &Val)]) -> Result<(), Verdict>,
) -> Result<(), Verdict> {
    let limits = limits_for(nesting);
    let mut g = Generator::new(subject.seed, pools, limits);
    let mut g_old = Generator::new(subject.seed ^ 0x9e37_79b9_7f4a_7c15, pools, limits);
    for case in 0..subject.cases {
        let v = g
            .value(case, Some(subject.schema), subject.decl)
            .map_err(|e| Verdict::Unknown(e.0))?;
        if subject.uses_old_self {
            let old = if case % 3 == 0 {
                v.clone()
            } else {
                g_old
                    .value(case + 1, Some(subject.schema), subject.decl)
                    .map_err(|e| Verdict::Unknown(e.0))?
            };
            step(&[("self", &v), ("oldSelf", &old)])?;
        } else {
            step(&[("self", &v)])?;
        }
    }
    Ok(())
}

fn compile(i: &Interpreter, src: &str) -> Result<Program, Verdict> {
    i.compile(src)
        .map_err(|e| Verdict::Unknown(format!("the interpreter does not parse it: {e}")))
}

/// Evaluates the programs (of `src_len` bytes together) on the variables.
fn eval(
    session: &mut Session,
    programs: &[&Program],
    src_len: usize,
    vars: &[(&str, &Val)],
) -> Result<Vec<Outcome>, Verdict> {
    let weight: usize = vars.iter().map(|(_, v)| v.weight()).sum();
    celcost_core::budget::charge((weight * src_len.max(1) / 16) as u64 + 1);
    let out = session.eval_all(programs, vars);
    if let Some(Outcome::Unsupported(e)) = out.iter().find(|o| matches!(o, Outcome::Unsupported(_)))
    {
        return Err(Verdict::Unknown(e.clone()));
    }
    Ok(out)
}

fn describe(vars: &[(&str, &Val)]) -> String {
    let mut s = String::new();
    for (n, v) in vars {
        s.push_str(&format!("{n} = {v:?}; "));
    }
    s.chars().take(400).collect()
}

fn same(a: &Outcome, b: &Outcome) -> bool {
    match (a, b) {
        (Outcome::Value(x), Outcome::Value(y)) => x.same(y),
        (Outcome::Error(_), Outcome::Error(_)) => true,
        _ => false,
    }
}

/// Whether `rewritten` gives what `original` gives on every generated value.
pub fn same_results(
    subject: &Subject<'_>,
    original: (&str, &Expr),
    rewritten: (&str, &Expr),
) -> Verdict {
    let (pools, depth) = harvest(&[original.1, rewritten.1]);
    let i = subject.interpreter;
    let run = || -> Result<u64, Verdict> {
        let a = compile(i, original.0)?;
        let b = compile(i, rewritten.0)?;
        let mut valued = 0u64;
        let mut cases = 0u64;
        let mut session = i.session();
        each_case(subject, &pools, depth, |vars| {
            let mut out = eval(
                &mut session,
                &[&a, &b],
                original.0.len() + rewritten.0.len(),
                vars,
            )?;
            let (Some(y), Some(x)) = (out.pop(), out.pop()) else {
                return Err(Verdict::Unknown("no result".into()));
            };
            if !same(&x, &y) {
                return Err(Verdict::Different {
                    case: format!("{}→ {x:?} vs {y:?}", describe(vars)),
                });
            }
            cases += 1;
            if matches!(x, Outcome::Value(_)) {
                valued += 1;
            }
            Ok(())
        })?;
        if valued * 4 < cases {
            return Err(Verdict::Unknown(format!(
                "the rule evaluates without error on only {valued} of {cases} generated values"
            )));
        }
        Ok(cases)
    };
    match run() {
        Ok(cases) => Verdict::Equivalent { cases },
        Err(v) => v,
    }
}

/// Whether `rule` is true exactly where `oracle` says, on every generated value (and never
/// fails). Unless `always_true` (the oracle is `true` everywhere: the rule is checked to be
/// redundant), some value must make the oracle say no, or the check has not seen the rule at
/// work.
pub fn same_as_oracle(
    subject: &Subject<'_>,
    rule: (&str, &Expr),
    oracle: &dyn Fn(&Val) -> bool,
    always_true: bool,
) -> Verdict {
    let (pools, depth) = harvest(&[rule.1]);
    let i = subject.interpreter;
    let run = || -> Result<(u64, u64), Verdict> {
        let p = compile(i, rule.0)?;
        let (mut cases, mut falses) = (0u64, 0u64);
        let mut session = i.session();
        each_case(subject, &pools, depth, |vars| {
            let x = eval(&mut session, &[&p], rule.0.len(), vars)?
                .pop()
                .unwrap_or(Outcome::Unsupported(String::new()));
            let want = oracle(vars[0].1);
            if x != Outcome::Value(Val::Bool(want)) {
                return Err(Verdict::Different {
                    case: format!("{}→ {x:?}, expected {want}", describe(vars)),
                });
            }
            cases += 1;
            if !want {
                falses += 1;
            }
            Ok(())
        })?;
        Ok((cases, falses))
    };
    match run() {
        Ok((_, 0)) if !always_true => {
            Verdict::Unknown("no generated value breaks the property".into())
        }
        Ok((cases, _)) => Verdict::Equivalent { cases },
        Err(v) => v,
    }
}
