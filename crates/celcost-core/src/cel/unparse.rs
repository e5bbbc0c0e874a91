//! CEL text from an unexpanded AST (`crate::cel::parse::parse_unexpanded`): what a rewritten
//! rule is shown as. Parentheses only where precedence needs them; strings in single quotes.
//! The text is parsed, compiled and evaluated again before it is offered, so a mistake here
//! can drop a rewrite but never show a wrong one.

use crate::cel::ast::{Expr, ExprKind, Literal};

/// Precedence levels, loosest first.
const COND: u8 = 1;
const OR: u8 = 2;
const AND: u8 = 3;
const REL: u8 = 4;
const ADD: u8 = 5;
const MUL: u8 = 6;
const UNARY: u8 = 7;
const MEMBER: u8 = 8;

fn binary(f: &str) -> Option<(&'static str, u8)> {
    Some(match f {
        "_||_" => ("||", OR),
        "_&&_" => ("&&", AND),
        "_==_" => ("==", REL),
        "_!=_" => ("!=", REL),
        "_<_" => ("<", REL),
        "_<=_" => ("<=", REL),
        "_>_" => (">", REL),
        "_>=_" => (">=", REL),
        "@in" => ("in", REL),
        "_+_" => ("+", ADD),
        "_-_" => ("-", ADD),
        "_*_" => ("*", MUL),
        "_/_" => ("/", MUL),
        "_%_" => ("%", MUL),
        _ => return None,
    })
}

fn precedence(e: &Expr) -> u8 {
    match &e.kind {
        ExprKind::Call { function, args, .. } => {
            if function == "_?_:_" && args.len() == 3 {
                COND
            } else if let (Some((_, p)), 2) = (binary(function), args.len()) {
                p
            } else if matches!(function.as_str(), "!_" | "-_") && args.len() == 1 {
                UNARY
            } else {
                MEMBER
            }
        }
        ExprKind::Literal(Literal::Int(i)) if *i < 0 => UNARY,
        ExprKind::Literal(Literal::Double(d)) if d.is_sign_negative() => UNARY,
        _ => MEMBER,
    }
}

/// The CEL text of `e`; `None` for what has no source form here (comprehensions, non-finite
/// doubles).
pub fn unparse(e: &Expr) -> Option<String> {
    let mut out = String::new();
    write(e, &mut out)?;
    Some(out)
}

fn wrap(e: &Expr, parens: bool, out: &mut String) -> Option<()> {
    if parens {
        out.push('(');
        write(e, out)?;
        out.push(')');
        Some(())
    } else {
        write(e, out)
    }
}

fn write(e: &Expr, out: &mut String) -> Option<()> {
    crate::budget::charge(1);
    match &e.kind {
        ExprKind::Literal(l) => literal(l, out)?,
        ExprKind::Ident(n) => out.push_str(n),
        ExprKind::Select {
            operand,
            field,
            test_only,
        } => {
            if *test_only {
                out.push_str("has(");
            }
            wrap(operand, precedence(operand) < MEMBER, out)?;
            out.push('.');
            // A name that is no identifier was quoted (`` self.`a-b` ``, cel-go v0.28+).
            let plain = field.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && field.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if plain {
                out.push_str(field);
            } else {
                out.push('`');
                out.push_str(field);
                out.push('`');
            }
            if *test_only {
                out.push(')');
            }
        }
        ExprKind::Call {
            function,
            target,
            args,
        } => call(function, target.as_deref(), args, out)?,
        ExprKind::List {
            elements,
            optional_indices,
        } => delimited('[', elements, ']', out, |i, el, out| {
            optional_mark(optional_indices.contains(&i), out);
            write(el, out)
        })?,
        ExprKind::Map { entries } => delimited('{', entries, '}', out, |_, en, out| {
            optional_mark(en.optional, out);
            write(&en.key, out)?;
            out.push_str(": ");
            write(&en.value, out)
        })?,
        ExprKind::Struct { type_name, fields } => {
            out.push_str(type_name);
            delimited('{', fields, '}', out, |_, f, out| {
                optional_mark(f.optional, out);
                out.push_str(&f.name);
                out.push_str(": ");
                write(&f.value, out)
            })?;
        }
        ExprKind::Comprehension(_) => return None,
    }
    Some(())
}

fn call(function: &str, target: Option<&Expr>, args: &[Expr], out: &mut String) -> Option<()> {
    if target.is_none() {
        if function == "_?_:_" && args.len() == 3 {
            // cond ? a : b — the condition and the true branch are conditional-or expressions.
            wrap(&args[0], precedence(&args[0]) <= COND, out)?;
            out.push_str(" ? ");
            wrap(&args[1], precedence(&args[1]) <= COND, out)?;
            out.push_str(" : ");
            return write(&args[2], out);
        }
        if let (Some((op, p)), 2) = (binary(function), args.len()) {
            // Left-associative; `||` and `&&` chains need no parentheses at all.
            let assoc = matches!(p, OR | AND);
            let same = |a: &Expr| matches!(&a.kind, ExprKind::Call { function: f, target: None, args } if f == function && args.len() == 2);
            let lp = precedence(&args[0]);
            wrap(&args[0], lp < p && !(assoc && same(&args[0])), out)?;
            out.push(' ');
            out.push_str(op);
            out.push(' ');
            let rp = precedence(&args[1]);
            return wrap(&args[1], rp <= p && !(assoc && same(&args[1])), out);
        }
        if matches!(function, "!_" | "-_") && args.len() == 1 {
            out.push_str(if function == "!_" { "!" } else { "-" });
            let a = &args[0];
            return wrap(a, precedence(a) < MEMBER, out);
        }
        if matches!(function, "_[_]" | "_[?_]") && args.len() == 2 {
            wrap(&args[0], precedence(&args[0]) < MEMBER, out)?;
            out.push_str(if function == "_[_]" { "[" } else { "[?" });
            write(&args[1], out)?;
            out.push(']');
            return Some(());
        }
        if function == "_?._" && args.len() == 2 {
            let ExprKind::Literal(Literal::String(field)) = &args[1].kind else {
                return None;
            };
            wrap(&args[0], precedence(&args[0]) < MEMBER, out)?;
            out.push_str(".?");
            out.push_str(field);
            return Some(());
        }
        if function.starts_with('_') || function.starts_with('@') || function.starts_with('!') {
            // An operator with an unexpected arity.
            return None;
        }
    }
    if let Some(t) = target {
        wrap(t, precedence(t) < MEMBER, out)?;
        out.push('.');
    }
    out.push_str(function);
    delimited('(', args, ')', out, |_, a, out| write(a, out))
}

/// `items` between `open` and `close`, separated by commas, each written by `item` (with its
/// index).
fn delimited<T>(
    open: char,
    items: &[T],
    close: char,
    out: &mut String,
    mut item: impl FnMut(usize, &T, &mut String) -> Option<()>,
) -> Option<()> {
    out.push(open);
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        item(i, x, out)?;
    }
    out.push(close);
    Some(())
}

/// The `?` before an optional element or entry.
fn optional_mark(optional: bool, out: &mut String) {
    if optional {
        out.push('?');
    }
}

fn literal(l: &Literal, out: &mut String) -> Option<()> {
    match l {
        Literal::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Literal::Int(i) => out.push_str(&i.to_string()),
        Literal::Uint(u) => {
            out.push_str(&u.to_string());
            out.push('u');
        }
        Literal::Double(d) => {
            if !d.is_finite() {
                return None;
            }
            let s = format!("{d:?}");
            out.push_str(&s);
            if !s.contains(['.', 'e', 'E']) {
                out.push_str(".0");
            }
        }
        Literal::String(s) => {
            out.push('\'');
            for c in s.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '\'' => out.push_str("\\'"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                        out.push_str(&format!("\\u{:04x}", c as u32))
                    }
                    c => out.push(c),
                }
            }
            out.push('\'');
        }
        Literal::Bytes(b) => {
            out.push_str("b'");
            for &x in b {
                if x.is_ascii_alphanumeric() || b" -_./:".contains(&x) {
                    out.push(x as char);
                } else {
                    out.push_str(&format!("\\x{x:02x}"));
                }
            }
            out.push('\'');
        }
        Literal::Null => out.push_str("null"),
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::decls::Version;
    use crate::cel::parse::{ParserOptions, parse_unexpanded};

    fn round(src: &str) -> String {
        let opts = ParserOptions::for_version(Version::new(1, 36));
        let e = parse_unexpanded(src, opts).expect("parses").expr;
        let text = unparse(&e).expect("unparses");
        // The text parses back to the same tree.
        let again = parse_unexpanded(&text, opts).expect("reparses").expr;
        assert_eq!(
            unparse(&again).as_deref(),
            Some(text.as_str()),
            "{src} → {text}"
        );
        text
    }

    #[test]
    fn quoted_names_stay_quoted() {
        let opts = ParserOptions {
            ident_escape_syntax: true,
            ..ParserOptions::for_version(Version::new(1, 36))
        };
        for src in ["self.`a-b` == 1", "has(self.`x.y`)", "self.a.`b/c`.d"] {
            let e = parse_unexpanded(src, opts).expect("parses").expr;
            assert_eq!(unparse(&e).as_deref(), Some(src));
        }
    }

    #[test]
    fn round_trips() {
        assert_eq!(
            round("self.filter(x, x.a == 'b').size() <= 1"),
            "self.filter(x, x.a == 'b').size() <= 1"
        );
        assert_eq!(
            round("has(self.a) ? self.a : true"),
            "has(self.a) ? self.a : true"
        );
        assert_eq!(round("!(a || b) && c"), "!(a || b) && c");
        assert_eq!(round("a - (b - c)"), "a - (b - c)");
        assert_eq!(round("(a ? b : c) ? d : e"), "(a ? b : c) ? d : e");
        assert_eq!(round("a || b || c || d"), "a || b || c || d");
        assert_eq!(
            round(r#"x.matches("^a'b\\.c$")"#),
            r"x.matches('^a\'b\\.c$')"
        );
        assert_eq!(
            round("self.?a.orValue(1u) + [?x, 2.5][0]"),
            "self.?a.orValue(1u) + [?x, 2.5][0]"
        );
        assert_eq!(round("{'a': -1, ?'b': 1e+30}"), "{'a': -1, ?'b': 1e30}");
        assert_eq!(round("(-1).foo()"), "(-1).foo()");
        assert_eq!(
            round("self.__namespace__ in ['a']"),
            "self.__namespace__ in ['a']"
        );
    }
}
