//! The catalog: costly patterns seen in real CRDs (`../shared/corpus`), each with the cheaper
//! form it is rewritten to and why the two say the same. The argument is in the doc comment of
//! each pattern; every rewrite is still checked on generated values before it is offered
//! (`super::check`), and estimated at the rule's node (`super::site`).
//!
//! Patterns work on the rule as written (macros not expanded, `celcost_core::cel::parse::parse_unexpanded`)
//! and rewrite every place they match.
//!
//! Considered and left out, because the estimator says they save nothing: `has(x.f) ? P : true`
//! → `!has(x.f) || P` (a conditional costs its condition plus its costlier branch, an `||` its
//! two sides: the same), and hoisting a long path repeated inside a comprehension (CEL has no
//! `let` in the Kubernetes environment, and a field selection costs 1 wherever it is).

use std::collections::BTreeSet;

use celcost_core::cel::ast::build::{call, int, node, string};
use celcost_core::cel::ast::{Expr, ExprKind, Literal};
use celcost_core::schema::Schema;
use celcost_core::schema::decltype::escape;

/// A pattern of the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pattern {
    pub name: &'static str,
    /// The equivalence argument, in one line.
    pub argument: &'static str,
}

/// An expression pattern's rewrite of one node (`None` where the pattern does not match it).
type Transform = fn(&Expr) -> Option<Expr>;

/// Defines each pattern as a constant, and from the same list, in its order, [`CATALOG`] and
/// [`EXPRESSION_PATTERNS`]: the patterns with a [`Transform`], which rewrite a node (the others
/// change the schema: [`uniqueness_shape`]).
macro_rules! patterns {
    ($($(#[$doc:meta])* $konst:ident = $name:literal, $argument:literal $(, $transform:ident)?;)*) => {
        $($(#[$doc])* pub const $konst: Pattern = Pattern { name: $name, argument: $argument };)*
        /// Every pattern, in the order they are tried.
        pub const CATALOG: &[Pattern] = &[$($konst),*];
        /// The expression patterns and their rewrites of one node.
        pub const EXPRESSION_PATTERNS: &[(Pattern, Transform)] = &[$($(($konst, $transform),)?)*];
    };
}

patterns! {
    /// `X.filter(v, p).size() > 0` → `X.exists(v, p)`, and `… == 0` → `!X.exists(v, p)` (also
    /// `!= 0`, `>= 1`, `<= 0`, `< 1`, and `size(X.filter(v, p))`).
    ///
    /// Equivalence: the filtered list is non-empty exactly when some element satisfies `p`. They
    /// differ only in errors: `filter` fails when `p` fails on any element, `exists` is true when
    /// `p` holds on another (cel-go's `||` absorbs the error). So the rewrite is equivalent where
    /// `p` cannot fail — which the check decides on generated values, absent fields included.
    /// Cheaper: no list is built (`exists` costs `p` and an `||` per element, `filter` `p`, a
    /// one-element list and a concatenation).
    FILTER_SIZE_TO_EXISTS = "filter-size-to-exists",
        "a filtered list is non-empty iff some element passes the filter (same where the filter cannot fail)",
        filter_size_to_exists;

    /// `X.filter(v, p).size() == 1` → `X.exists_one(v, p)`.
    ///
    /// Equivalence: `exists_one` counts the elements satisfying `p` and compares the count with 1,
    /// which is what the size of the filtered list is compared with. Errors are the same: both
    /// visit every element and fail when `p` fails on any (neither absorbs errors). Cheaper: a
    /// counter instead of a list.
    FILTER_SIZE_TO_EXISTS_ONE = "filter-size-to-exists-one",
        "exists_one counts the elements that pass, as the filtered list's size does; both fail when the filter fails",
        filter_size_to_exists_one;

    /// `X.filter(v, p).size() <= 1` → `!X.exists(v, p) || X.exists_one(v, p)` (also `< 2`).
    ///
    /// Equivalence: at most one element satisfies `p` iff none does or exactly one does. Errors:
    /// when `p` fails on an element, `filter` fails; `exists` is then an error or true, so the
    /// left side is an error or false, and `exists_one` fails: the rewrite fails too. Cheaper
    /// although it walks the list twice: no list is built.
    FILTER_SIZE_AT_MOST_ONE = "filter-size-at-most-one",
        "at most one passes iff none passes or exactly one does; a failing filter fails both",
        filter_size_at_most_one;

    /// `R.map(v, f).exists(w, p)` → `R.exists(v, p[w := f])` (also `all`, `exists_one`), and
    /// `x in R.map(v, f)` → `R.exists(v, f == x)`.
    ///
    /// Equivalence: the mapped list's elements are the `f` of the range's, so quantifying over
    /// them is quantifying over `f(v)`; `in` is `exists` with `==`. Errors: `map` fails when `f`
    /// fails on any element, `exists` may absorb it: equivalent where `f` cannot fail, as the
    /// check decides. Applied only where no variable would be captured. Cheaper: no list is built.
    MAP_THEN_QUANTIFIER = "map-then-quantifier",
        "quantifying over a mapped list is quantifying over the mapped values (same where the map cannot fail)",
        map_then_quantifier;

    /// `s.matches('^(a|b|c)$')` → `s in ['a', 'b', 'c']`; with alternatives that are not literal,
    /// `s in ['a', 'b'] || s.matches('^(?:rest)$')`.
    ///
    /// Equivalence: a Go regular expression anchored at both ends (`^`, and `$` which in Go is
    /// the end of the text, not before a final newline) whose alternatives are literal strings
    /// matches exactly those strings; the remaining alternatives keep matching what they matched.
    /// Cheaper: a regex costs the string's length times the pattern's; `in` compares with a few
    /// literals.
    REGEX_ALTERNATIVES_TO_IN = "regex-alternatives-to-in",
        "an anchored regex of literal alternatives matches exactly those strings",
        regex_alternatives_to_in;

    /// `m.all(k, !(k in ['a', 'b']))` → `!('a' in m) && !('b' in m)` (also `k != 'a' && …`, and
    /// `m.exists(k, k in [...])` → `'a' in m || …`).
    ///
    /// Equivalence: "no key of `m` is one of the literals" is "none of the literals is a key of
    /// `m`" (for a list, its elements). Neither form can fail: `in` and `==` compare values of any
    /// type. Cheaper: a map lookup per literal instead of a walk over every key of a map whose
    /// size only the request size bounds.
    KEYS_NOT_IN_LITERALS = "keys-not-in-literals-to-lookups",
        "no key is one of the literals iff none of the literals is a key",
        keys_not_in_literals;

    /// `[e1, e2, e3].filter(x, x == true).size()` → `(e1 ? 1 : 0) + (e2 ? 1 : 0) + (e3 ? 1 : 0)`
    /// (also `filter(x, x)`): counting the true ones of a few conditions (`has(…)` in
    /// exactly-one-of checks).
    ///
    /// Equivalence: the filtered list holds one element per true condition. Errors: the list
    /// literal fails when a condition fails, as the conditional does; a condition that is no
    /// boolean gives `false` in `x == true` but an error in `?:`, which the check rules out.
    /// Cheaper: no list is built and walked.
    BOOL_LIST_COUNT = "bool-list-count-to-sum",
        "the filtered list has one element per true condition; both fail when a condition fails",
        bool_list_count;

    /// A uniqueness rule — `self.all(a, self.exists_one(b, a.k == b.k))`,
    /// `self.all(a, self.filter(b, a.k == b.k).size() == 1)`,
    /// `size(self.filter(a, size(self.filter(b, a == b)) > 1)) == 0`, ... — on a list whose items
    /// can be keyed: replaced by `x-kubernetes-list-type: map` with `x-kubernetes-list-map-keys`
    /// (or `set` for scalar items and whole-item equality), which the API server enforces itself
    /// at no CEL cost.
    ///
    /// Equivalence: a list map rejects two items with equal keys (a set, two equal items), and
    /// the rule is checked to be true exactly on the generated lists without such duplicates
    /// (map keys must be required or defaulted and scalar, so every item has them). The keys are
    /// the fields the rule compares between its two iteration variables; only string, integer and
    /// boolean keys (a `number` 1 and 1.0 are equal in CEL, not in the API server's check).
    UNIQUENESS_TO_LIST_TYPE = "uniqueness-to-list-type",
        "the API server rejects duplicate keys of a list map (duplicate items of a set) itself, which is all the rule checks";

    /// As [`UNIQUENESS_TO_LIST_TYPE`], on a list that is already a list map (or set) whose keys
    /// imply the rule: the rule can go, the schema stays.
    UNIQUENESS_ALREADY_ENFORCED = "uniqueness-already-enforced",
        "the list's own x-kubernetes-list-type already rejects what the rule rejects";
}

// ---------------------------------------------------------------------------------------------
// Building and reading expressions.

fn not(e: Expr) -> Expr {
    call("!_", None, vec![e])
}

fn ident_name(e: &Expr) -> Option<&str> {
    match &e.kind {
        ExprKind::Ident(n) => Some(n),
        _ => None,
    }
}

fn int_literal(e: &Expr) -> Option<i64> {
    match &e.kind {
        ExprKind::Literal(Literal::Int(i)) => Some(*i),
        _ => None,
    }
}

/// A call `target.f(args)` of a one-variable macro: (range, variable, body).
fn macro_call<'e>(e: &'e Expr, name: &str) -> Option<(&'e Expr, &'e str, &'e Expr)> {
    match &e.kind {
        ExprKind::Call {
            function,
            target: Some(t),
            args,
        } if function == name && args.len() == 2 => Some((t, ident_name(&args[0])?, &args[1])),
        _ => None,
    }
}

/// The arguments of a global call `name(args)` (an operator: `_==_`, `@in`, `!_`, ...).
fn global_args<'e>(e: &'e Expr, name: &str) -> Option<&'e [Expr]> {
    match &e.kind {
        ExprKind::Call {
            function,
            target: None,
            args,
        } if function == name => Some(args),
        _ => None,
    }
}

/// A comprehension macro's call `range.m(v, ...)` (`all`, `exists`, `exists_one`, `map`,
/// `filter`): (range, the variable it binds).
fn macro_binding(e: &Expr) -> Option<(&Expr, &str)> {
    match &e.kind {
        ExprKind::Call {
            function,
            target: Some(t),
            args,
        } if matches!(
            function.as_str(),
            "all" | "exists" | "exists_one" | "map" | "filter"
        ) =>
        {
            Some((t, args.first().and_then(ident_name)?))
        }
        _ => None,
    }
}

/// Folds `parts` with a binary operator, left to right.
fn fold(op: &str, parts: Vec<Expr>) -> Option<Expr> {
    let mut it = parts.into_iter();
    let first = it.next()?;
    Some(it.fold(first, |acc, p| call(op, None, vec![acc, p])))
}

/// Rewrites every sub-expression `f` matches, innermost first; the number of rewrites.
pub fn rewrite_everywhere(e: &Expr, f: Transform) -> (Expr, usize) {
    rewrite_with(e, &f)
}

/// As [`rewrite_everywhere`], with any function.
fn rewrite_with(e: &Expr, f: &dyn Fn(&Expr) -> Option<Expr>) -> (Expr, usize) {
    fn go(e: &Expr, f: &dyn Fn(&Expr) -> Option<Expr>, n: &mut usize) -> Expr {
        celcost_core::budget::charge(1);
        let e = e.map_children(&mut |x| go(x, f, n));
        match f(&e) {
            Some(r) => {
                *n += 1;
                r
            }
            None => e,
        }
    }
    let mut n = 0;
    let out = go(e, f, &mut n);
    (out, n)
}

/// The identifiers the macros of `e` bind.
fn binders(e: &Expr) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    e.walk(&mut |x| {
        if let Some((_, v)) = macro_binding(x) {
            out.insert(v.to_string());
        }
    });
    out
}

/// Every identifier `e` mentions (bound or not: a conservative stand-in for its free ones).
fn idents(e: &Expr) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    e.walk(&mut |x| {
        if let ExprKind::Ident(n) = &x.kind {
            out.insert(n.clone());
        }
    });
    out
}

/// `e` with every identifier `name` replaced by `by` (the caller has ruled out capture).
fn substitute(e: &Expr, name: &str, by: &Expr) -> Expr {
    rewrite_with(e, &|x: &Expr| match &x.kind {
        ExprKind::Ident(n) if n == name => Some(by.clone()),
        _ => None,
    })
    .0
}

// ---------------------------------------------------------------------------------------------
// Counting filtered lists.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Count {
    Any,
    None,
    One,
    AtMostOne,
}

/// `size(F)` or `F.size()`: F.
fn size_of(e: &Expr) -> Option<&Expr> {
    match &e.kind {
        ExprKind::Call {
            function,
            target: None,
            args,
        } if function == "size" && args.len() == 1 => Some(&args[0]),
        ExprKind::Call {
            function,
            target: Some(t),
            args,
        } if function == "size" && args.is_empty() => Some(t),
        _ => None,
    }
}

/// `size(R.filter(v, p)) OP n` (either way round) as a count class: (class, R, v, p).
fn filter_count(e: &Expr) -> Option<(Count, &Expr, &str, &Expr)> {
    let ExprKind::Call {
        function,
        target: None,
        args,
    } = &e.kind
    else {
        return None;
    };
    if args.len() != 2 {
        return None;
    }
    let flip = |op: &str| -> Option<&'static str> {
        Some(match op {
            "_==_" => "_==_",
            "_!=_" => "_!=_",
            "_<_" => "_>_",
            "_<=_" => "_>=_",
            "_>_" => "_<_",
            "_>=_" => "_<=_",
            _ => return None,
        })
    };
    let (op, counted, n) = if let (Some(f), Some(n)) = (size_of(&args[0]), int_literal(&args[1])) {
        (flip(flip(function)?)?, f, n)
    } else if let (Some(n), Some(f)) = (int_literal(&args[0]), size_of(&args[1])) {
        (flip(function)?, f, n)
    } else {
        return None;
    };
    let (range, v, p) = macro_call(counted, "filter")?;
    let class = match (op, n) {
        ("_>_", 0) | ("_!=_", 0) | ("_>=_", 1) => Count::Any,
        ("_==_", 0) | ("_<=_", 0) | ("_<_", 1) => Count::None,
        ("_==_", 1) => Count::One,
        ("_<=_", 1) | ("_<_", 2) => Count::AtMostOne,
        _ => return None,
    };
    Some((class, range, v, p))
}

fn quantifier(name: &str, range: &Expr, v: &str, p: &Expr) -> Expr {
    call(
        name,
        Some(range.clone()),
        vec![node(ExprKind::Ident(v.to_string())), p.clone()],
    )
}

fn filter_size_to_exists(e: &Expr) -> Option<Expr> {
    match filter_count(e)? {
        (Count::Any, r, v, p) => Some(quantifier("exists", r, v, p)),
        (Count::None, r, v, p) => Some(not(quantifier("exists", r, v, p))),
        _ => None,
    }
}

fn filter_size_to_exists_one(e: &Expr) -> Option<Expr> {
    match filter_count(e)? {
        (Count::One, r, v, p) => Some(quantifier("exists_one", r, v, p)),
        _ => None,
    }
}

fn filter_size_at_most_one(e: &Expr) -> Option<Expr> {
    match filter_count(e)? {
        (Count::AtMostOne, r, v, p) => Some(call(
            "_||_",
            None,
            vec![
                not(quantifier("exists", r, v, p)),
                quantifier("exists_one", r, v, p),
            ],
        )),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Quantifying over a mapped list.

fn map_then_quantifier(e: &Expr) -> Option<Expr> {
    // x in R.map(v, f)
    if let Some([x, mapped]) = global_args(e, "@in")
        && let Some((range, v, f)) = macro_call(mapped, "map")
    {
        if idents(x).contains(v) || binders(x).contains(v) {
            return None;
        }
        return Some(quantifier(
            "exists",
            range,
            v,
            &call("_==_", None, vec![f.clone(), x.clone()]),
        ));
    }
    for q in ["all", "exists", "exists_one"] {
        let Some((mapped, w, p)) = macro_call(e, q) else {
            continue;
        };
        let Some((range, v, f)) = macro_call(mapped, "map") else {
            continue;
        };
        let bound = binders(p);
        let mut outer = idents(f);
        outer.insert(v.to_string());
        outer.insert(w.to_string());
        if bound.iter().any(|b| outer.contains(b)) || (v != w && idents(p).contains(v)) {
            return None;
        }
        return Some(quantifier(q, range, v, &substitute(p, w, f)));
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Regular expressions of literal alternatives.

/// The top-level alternatives of a regular expression (`None` when brackets do not balance).
fn split_alternatives(re: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0i32;
    let mut in_class = false;
    let mut chars = re.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                cur.push(c);
                cur.push(chars.next()?);
                continue;
            }
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' if !in_class => depth += 1,
            ')' if !in_class => depth -= 1,
            '|' if !in_class && depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        if depth < 0 {
            return None;
        }
        cur.push(c);
    }
    if depth != 0 || in_class {
        return None;
    }
    out.push(cur);
    Some(out)
}

/// The string an alternative matches when it is a literal (escaped punctuation allowed).
fn literal_of(alt: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = alt.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let n = chars.next()?;
                if n.is_ascii_punctuation() {
                    out.push(n);
                } else {
                    return None;
                }
            }
            '.' | '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|' | '^' | '$' => {
                return None;
            }
            c => out.push(c),
        }
    }
    Some(out)
}

/// Whether the text ends with an unescaped `$`.
fn ends_with_anchor(s: &str) -> bool {
    let Some(body) = s.strip_suffix('$') else {
        return false;
    };
    let backslashes = body.chars().rev().take_while(|&c| c == '\\').count();
    backslashes % 2 == 0
}

/// `(literals, remaining alternatives)` of an anchored regular expression.
fn regex_literals(re: &str) -> Option<(Vec<String>, Vec<String>)> {
    if re.contains("(?") && !re.contains("(?:") {
        // Flags (`(?i)`, ...) change what literals match.
        return None;
    }
    if re.contains("(?i") || re.contains("(?s") || re.contains("(?m") || re.contains("(?U") {
        return None;
    }
    // `^a$|^b$`: each alternative anchored.
    let top = split_alternatives(re)?;
    let alternatives: Vec<String> = if top.len() > 1
        && top
            .iter()
            .all(|a| a.starts_with('^') && ends_with_anchor(a))
    {
        top.iter().map(|a| a[1..a.len() - 1].to_string()).collect()
    } else if top.len() > 1 {
        // `^a|b$` is `(^a)|(b$)`: neither alternative anchored at both ends.
        return None;
    } else {
        let inner = re.strip_prefix('^')?;
        if !ends_with_anchor(inner) {
            return None;
        }
        let inner = &inner[..inner.len() - 1];
        let group = inner
            .strip_prefix("(?:")
            .or_else(|| inner.strip_prefix('('))
            .and_then(|g| g.strip_suffix(')'));
        // The group must span the whole expression: `(a)|(b)` is not one group (`a)|(b` does
        // not balance).
        let body = match group {
            Some(g) if split_alternatives(g).is_some() => g,
            _ => inner,
        };
        split_alternatives(body)?
    };
    let mut literals = Vec::new();
    let mut rest = Vec::new();
    for a in alternatives {
        match literal_of(&a) {
            Some(l) => literals.push(l),
            None => rest.push(a),
        }
    }
    Some((literals, rest))
}

fn regex_alternatives_to_in(e: &Expr) -> Option<Expr> {
    let (subject, pattern) = match &e.kind {
        ExprKind::Call {
            function,
            target: Some(t),
            args,
        } if function == "matches" && args.len() == 1 => (&**t, &args[0]),
        ExprKind::Call {
            function,
            target: None,
            args,
        } if function == "matches" && args.len() == 2 => (&args[0], &args[1]),
        _ => return None,
    };
    let ExprKind::Literal(Literal::String(re)) = &pattern.kind else {
        return None;
    };
    celcost_core::goregexp::check(re).ok()?;
    let (literals, rest) = regex_literals(re)?;
    if literals.is_empty() || literals.len() > 64 {
        return None;
    }
    let membership = if literals.len() == 1 {
        call("_==_", None, vec![subject.clone(), string(&literals[0])])
    } else {
        call(
            "@in",
            None,
            vec![
                subject.clone(),
                node(ExprKind::List {
                    elements: literals.iter().map(|l| string(l)).collect(),
                    optional_indices: vec![],
                }),
            ],
        )
    };
    if rest.is_empty() {
        return Some(membership);
    }
    let rest_re = format!("^(?:{})$", rest.join("|"));
    celcost_core::goregexp::check(&rest_re).ok()?;
    Some(call(
        "_||_",
        None,
        vec![
            membership,
            call("matches", Some(subject.clone()), vec![string(&rest_re)]),
        ],
    ))
}

// ---------------------------------------------------------------------------------------------
// Keys against literals.

/// The literals of a list literal of literals.
fn literal_list(e: &Expr) -> Option<Vec<Expr>> {
    match &e.kind {
        ExprKind::List {
            elements,
            optional_indices,
        } if optional_indices.is_empty()
            && !elements.is_empty()
            && elements.len() <= 16
            && elements
                .iter()
                .all(|x| matches!(x.kind, ExprKind::Literal(_))) =>
        {
            Some(elements.clone())
        }
        _ => None,
    }
}

/// `k OP lit` or `lit OP k`: the literal.
fn compared_literal<'e>(e: &'e Expr, op: &str, k: &str) -> Option<&'e Expr> {
    let [a, b] = global_args(e, op)? else {
        return None;
    };
    let literal = |x: &Expr| matches!(x.kind, ExprKind::Literal(_));
    if ident_name(a) == Some(k) && literal(b) {
        Some(b)
    } else if ident_name(b) == Some(k) && literal(a) {
        Some(a)
    } else {
        None
    }
}

/// The terms of a chain of `op` (`a && b && c`).
fn chain<'e>(e: &'e Expr, op: &str, out: &mut Vec<&'e Expr>) {
    match global_args(e, op) {
        Some([a, b]) => {
            chain(a, op, out);
            chain(b, op, out);
        }
        _ => out.push(e),
    }
}

/// The literals `body` tests `k` against: `k in [..]` / `k == a || k == b` (`negated`: `!(k in
/// [..])` / `k != a && k != b`).
fn tested_literals(body: &Expr, k: &str, negated: bool) -> Option<Vec<Expr>> {
    let inner = if negated {
        match global_args(body, "!_") {
            Some([x]) => Some(x),
            _ => None,
        }
    } else {
        Some(body)
    };
    if let Some([key, list]) = inner.and_then(|i| global_args(i, "@in"))
        && ident_name(key) == Some(k)
    {
        return literal_list(list);
    }
    let (op, cmp) = if negated {
        ("_&&_", "_!=_")
    } else {
        ("_||_", "_==_")
    };
    let mut terms = Vec::new();
    chain(body, op, &mut terms);
    if terms.len() > 16 {
        return None;
    }
    terms
        .iter()
        .map(|t| compared_literal(t, cmp, k).cloned())
        .collect()
}

fn keys_not_in_literals(e: &Expr) -> Option<Expr> {
    for (q, negated) in [("all", true), ("exists", false)] {
        let Some((m, k, body)) = macro_call(e, q) else {
            continue;
        };
        if idents(m).contains(k) {
            return None;
        }
        let lits = tested_literals(body, k, negated)?;
        let tests: Vec<Expr> = lits
            .into_iter()
            .map(|l| {
                let t = call("@in", None, vec![l, m.clone()]);
                if negated { not(t) } else { t }
            })
            .collect();
        return fold(if negated { "_&&_" } else { "_||_" }, tests);
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Counting true conditions.

fn bool_list_count(e: &Expr) -> Option<Expr> {
    let counted = size_of(e)?;
    let (range, x, p) = macro_call(counted, "filter")?;
    let ExprKind::List {
        elements,
        optional_indices,
    } = &range.kind
    else {
        return None;
    };
    if !optional_indices.is_empty() || elements.is_empty() || elements.len() > 16 {
        return None;
    }
    let is_true = |t: &Expr| matches!(t.kind, ExprKind::Literal(Literal::Bool(true)));
    let identity = ident_name(p) == Some(x)
        || matches!(global_args(p, "_==_"), Some([a, b])
            if (ident_name(a) == Some(x) && is_true(b)) || (ident_name(b) == Some(x) && is_true(a)));
    if !identity {
        return None;
    }
    let terms: Vec<Expr> = elements
        .iter()
        .map(|c| call("_?_:_", None, vec![c.clone(), int(1), int(0)]))
        .collect();
    fold("_+_", terms)
}

// ---------------------------------------------------------------------------------------------
// Uniqueness.

/// What a uniqueness rule compares between two items.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UniqueBy {
    /// Fields (CEL-escaped names, in the order the rule compares them).
    Fields(Vec<String>),
    /// Whole items.
    Items,
}

/// The items' comparison of a rule that looks like a uniqueness check over `self`: equalities
/// between two different iteration variables ranging over `self`, on the same field or on the
/// whole item. Whether the rule *is* the uniqueness check is the check's to decide.
pub fn uniqueness_shape(e: &Expr) -> Option<UniqueBy> {
    let mut over_self: BTreeSet<String> = BTreeSet::new();
    let mut other_ranges = false;
    e.walk(&mut |x| {
        if let Some((t, v)) = macro_binding(x) {
            if ident_name(t) == Some("self") {
                over_self.insert(v.to_string());
            } else {
                other_ranges = true;
            }
        }
    });
    if other_ranges || over_self.len() < 2 || idents(e).contains("oldSelf") {
        return None;
    }
    let mut fields: Vec<String> = Vec::new();
    let mut whole = false;
    let mut ok = true;
    e.walk(&mut |x| {
        let Some([left, right]) = global_args(x, "_==_") else {
            return;
        };
        let side = |a: &Expr| -> Option<(String, Option<String>)> {
            match &a.kind {
                ExprKind::Ident(n) if over_self.contains(n) => Some((n.clone(), None)),
                ExprKind::Select {
                    operand,
                    field,
                    test_only: false,
                } => {
                    let n = ident_name(operand)?;
                    over_self
                        .contains(n)
                        .then(|| (n.to_string(), Some(field.clone())))
                }
                _ => None,
            }
        };
        match (side(left), side(right)) {
            (Some((a, fa)), Some((b, fb))) if a != b => match (fa, fb) {
                (None, None) => whole = true,
                (Some(fa), Some(fb)) if fa == fb => {
                    if !fields.contains(&fa) {
                        fields.push(fa);
                    }
                }
                _ => ok = false,
            },
            _ => {}
        }
    });
    match (ok, whole, fields.is_empty()) {
        (true, true, true) => Some(UniqueBy::Items),
        (true, false, false) => Some(UniqueBy::Fields(fields)),
        _ => None,
    }
}

/// A schema change that makes a uniqueness rule unnecessary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListChange {
    /// `x-kubernetes-list-type: map` with these keys (property names); the previous list type
    /// and keys, if any.
    Map {
        keys: Vec<String>,
        was: Option<(String, Vec<String>)>,
    },
    /// `x-kubernetes-list-type: set`; the previous list type, if any.
    Set { was: Option<String> },
    /// Nothing: the list type already rejects what the rule rejects.
    AlreadyEnforced,
}

impl ListChange {
    /// What to change, in words, for the report.
    pub fn describe(&self, path: &str) -> Option<String> {
        let was = |t: &Option<String>| match t {
            Some(t) => format!(" (was {t})"),
            None => String::new(),
        };
        match self {
            ListChange::Map { keys, was: prev } => {
                let prev_text = match prev {
                    Some((t, k)) if !k.is_empty() => {
                        format!(
                            " (was {t} with keys [{}]: the merge key of server-side apply changes)",
                            k.join(", ")
                        )
                    }
                    Some((t, _)) => format!(
                        " (was {t}: server-side apply merges the list by key instead of replacing it)"
                    ),
                    None => {
                        " (server-side apply merges the list by key instead of replacing it)".into()
                    }
                };
                Some(format!(
                    "set x-kubernetes-list-type: map and x-kubernetes-list-map-keys: [{}] on {path}{prev_text}, and remove this rule: the API server rejects duplicate keys itself",
                    keys.join(", ")
                ))
            }
            ListChange::Set { was: prev } => Some(format!(
                "set x-kubernetes-list-type: set on {path}{}, and remove this rule: the API server rejects duplicate items itself",
                was(prev)
            )),
            ListChange::AlreadyEnforced => Some(format!(
                "remove this rule: the x-kubernetes-list-type of {path} already rejects duplicates"
            )),
        }
    }
}

fn key_scalar(p: &Schema) -> bool {
    matches!(p.type_.as_str(), "string" | "integer" | "boolean")
        && !p.x_int_or_string
        && !p.nullable
        && (p.type_ != "string"
            || !matches!(
                p.format.as_str(),
                "byte" | "duration" | "date" | "date-time"
            ))
}

/// Whether a schema has a `number`, or a list typed `set` or `map`, at or below it (where CEL
/// equality and the API server's duplicate check part ways).
fn has_loose_equality(s: &Schema) -> bool {
    s.type_ == "number"
        || matches!(s.x_list_type.as_deref(), Some("set" | "map"))
        || s.x_int_or_string
        || s.x_preserve_unknown_fields == Some(true)
        || s.properties.values().any(has_loose_equality)
        || s.items.as_deref().is_some_and(has_loose_equality)
        || s.additional_properties_schema()
            .is_some_and(has_loose_equality)
}

/// The list-type change that enforces `by` on the list `node`, if one can.
pub fn list_change(node: &Schema, by: &UniqueBy) -> Option<ListChange> {
    if node.type_ != "array" {
        return None;
    }
    let items = node.items.as_deref()?;
    if items.nullable {
        return None;
    }
    let current = node.x_list_type.as_deref();
    match by {
        UniqueBy::Fields(fields) => {
            if items.type_ != "object" || items.additional_properties.is_some() {
                return None;
            }
            let mut keys = Vec::new();
            for f in fields {
                let (name, p) = items
                    .properties
                    .iter()
                    .find(|(n, _)| escape(n).as_deref() == Some(f.as_str()))?;
                let keyed = items.required.contains(name) || p.default.is_some();
                if !keyed || !key_scalar(p) {
                    return None;
                }
                keys.push(name.clone());
            }
            match current {
                None | Some("atomic") => Some(ListChange::Map {
                    keys,
                    was: current.map(|c| (c.to_string(), vec![])),
                }),
                Some("map") => {
                    let existing = &node.x_list_map_keys;
                    if !existing.is_empty() && existing.iter().all(|k| keys.contains(k)) {
                        Some(ListChange::AlreadyEnforced)
                    } else {
                        Some(ListChange::Map {
                            keys,
                            was: Some(("map".into(), existing.clone())),
                        })
                    }
                }
                _ => None,
            }
        }
        UniqueBy::Items => {
            let scalar = key_scalar(items);
            let atomic_object = items.type_ == "object"
                && items.x_map_type.as_deref() == Some("atomic")
                && !has_loose_equality(items);
            match current {
                Some("set") => Some(ListChange::AlreadyEnforced),
                // Equal items have equal keys.
                Some("map") if !node.x_list_map_keys.is_empty() => {
                    Some(ListChange::AlreadyEnforced)
                }
                None | Some("atomic") if scalar || atomic_object => Some(ListChange::Set {
                    was: current.map(str::to_string),
                }),
                _ => None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rewrite::unparse::unparse;
    use celcost_core::cel::decls::Version;
    use celcost_core::cel::parse::{ParserOptions, parse_unexpanded};

    fn apply(t: Transform, src: &str) -> Option<String> {
        let e = parse_unexpanded(src, ParserOptions::for_version(Version::new(1, 36)))
            .expect("parses")
            .expr;
        let (out, n) = rewrite_everywhere(&e, t);
        (n > 0).then(|| unparse(&out).expect("unparses"))
    }

    #[test]
    fn filter_counts() {
        assert_eq!(
            apply(
                filter_size_to_exists,
                "self.filter(x, x.a == 'b').size() > 0"
            )
            .as_deref(),
            Some("self.exists(x, x.a == 'b')")
        );
        assert_eq!(
            apply(
                filter_size_to_exists,
                "0 == size(self.split('/').filter(s, s == '..'))"
            )
            .as_deref(),
            Some("!self.split('/').exists(s, s == '..')")
        );
        assert_eq!(
            apply(
                filter_size_to_exists_one,
                "self.all(e, self.filter(f, f.k == e.k).size() == 1)"
            )
            .as_deref(),
            Some("self.all(e, self.exists_one(f, f.k == e.k))")
        );
        assert_eq!(
            apply(
                filter_size_at_most_one,
                "self.filter(f, f.t == 'A').size() <= 1"
            )
            .as_deref(),
            Some("!self.exists(f, f.t == 'A') || self.exists_one(f, f.t == 'A')")
        );
        assert_eq!(
            apply(
                filter_size_to_exists,
                "self.filter(f, f.t == 'A').size() > 1"
            ),
            None
        );
    }

    #[test]
    fn mapped_quantifiers() {
        assert_eq!(
            apply(map_then_quantifier, "self.s in self.l.map(x, x.name)").as_deref(),
            Some("self.l.exists(x, x.name == self.s)")
        );
        assert_eq!(
            apply(
                map_then_quantifier,
                "self.l.map(x, x.n).all(y, y > 0 && y < 9)"
            )
            .as_deref(),
            Some("self.l.all(x, x.n > 0 && x.n < 9)")
        );
        // Capture: `x` of the body is another variable.
        assert_eq!(
            apply(map_then_quantifier, "self.l.map(x, x.n).all(y, y > x)"),
            None
        );
        assert_eq!(apply(map_then_quantifier, "x in self.l.map(x, x.n)"), None);
    }

    #[test]
    fn regexes() {
        assert_eq!(
            apply(regex_alternatives_to_in, "self.matches('^(a|b\\\\.c|d)$')").as_deref(),
            Some("self in ['a', 'b.c', 'd']")
        );
        assert_eq!(
            apply(regex_alternatives_to_in, "self.matches('^a$|^b$')").as_deref(),
            Some("self in ['a', 'b']")
        );
        assert_eq!(
            apply(
                regex_alternatives_to_in,
                "self.matches('^(Linux|[0-9]{4})$')"
            )
            .as_deref(),
            Some("self == 'Linux' || self.matches('^(?:[0-9]{4})$')")
        );
        assert_eq!(
            apply(regex_alternatives_to_in, "self.matches('^(a|b)')"),
            None
        );
        assert_eq!(
            apply(regex_alternatives_to_in, "self.matches('(?i)^(a|b)$')"),
            None
        );
        assert_eq!(
            apply(regex_alternatives_to_in, "self.matches('^(a)|(b)$')"),
            None
        );
        assert_eq!(
            apply(regex_alternatives_to_in, "self.matches('^a|b$')"),
            None
        );
        assert_eq!(
            apply(regex_alternatives_to_in, "self.matches('^a$|b')"),
            None
        );
        assert_eq!(
            apply(regex_alternatives_to_in, "self.matches('^(a|b)\\\\$')"),
            None
        );
    }

    #[test]
    fn keys_and_literals() {
        assert_eq!(
            apply(keys_not_in_literals, "self.all(x, !(x in ['cpu', 'pods']))").as_deref(),
            Some("!('cpu' in self) && !('pods' in self)")
        );
        assert_eq!(
            apply(
                keys_not_in_literals,
                "self.m.exists(k, k == 'a' || 'b' == k)"
            )
            .as_deref(),
            Some("'a' in self.m || 'b' in self.m")
        );
        assert_eq!(
            apply(keys_not_in_literals, "self.all(x, !(x in self.l))"),
            None
        );
    }

    #[test]
    fn bool_counts() {
        assert_eq!(
            apply(
                bool_list_count,
                "[has(self.a), has(self.b)].filter(x, x == true).size() == 1"
            )
            .as_deref(),
            Some("(has(self.a) ? 1 : 0) + (has(self.b) ? 1 : 0) == 1")
        );
        assert_eq!(
            apply(bool_list_count, "[1, 2].filter(x, x > 1).size() == 1"),
            None
        );
    }

    #[test]
    fn uniqueness_shapes() {
        let shape = |src: &str| {
            uniqueness_shape(
                &parse_unexpanded(src, ParserOptions::for_version(Version::new(1, 36)))
                    .expect("parses")
                    .expr,
            )
        };
        assert_eq!(
            shape("self.all(x, self.exists_one(y, x.name == y.name))"),
            Some(UniqueBy::Fields(vec!["name".into()]))
        );
        assert_eq!(
            shape("self.all(e, self.filter(f, f.a == e.a && f.b == e.b).size() == 1)"),
            Some(UniqueBy::Fields(vec!["a".into(), "b".into()]))
        );
        assert_eq!(
            shape("size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0"),
            Some(UniqueBy::Items)
        );
        assert_eq!(shape("self.all(x, x.a == 'b')"), None);
        assert_eq!(shape("self.all(x, self.exists_one(y, x.a == y.b))"), None);
    }
}
