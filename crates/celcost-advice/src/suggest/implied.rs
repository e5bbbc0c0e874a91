//! The bound a node's own validation already implies: the most characters (items, properties)
//! a value can have and still be accepted by the API server today. A schema bound at or above
//! it refuses nothing the schema accepts — a *safe* suggestion.
//!
//! Sources, each read as the API server enforces it:
//!
//! - a `pattern`, or a rule `self.matches(RE)` / `matches(self, RE)`, whose expression's
//!   longest match is finite ([`celcost_core::goregexp::longest_match`]: anchored at both ends on
//!   every way through it);
//! - `enum`: the longest value;
//! - `format`, where kube-openapi's check bounds the length: `uuid` (and `uuid3`/`4`/`5`: 36),
//!   `ipv6` (45: `net.ParseIP`, at most four hex digits a group and no zone), `hostname` (255),
//!   and from compatibility version 1.34 `k8s-short-name` (63) and `k8s-long-name` (253).
//!   Not `ipv4` or `cidr`: kube-openapi checks them with `netutils.ParseIPSloppy` /
//!   `ParseCIDRSloppy`, which take any number of leading zeros; not `date-time` (any number of
//!   fraction digits) — and `date`, `date-time` and `duration` are not strings in CEL anyway;
//! - a rule `!format.<name>().validate(self).hasValue()` of the Kubernetes format library:
//!   `dns1123Label`, `dns1035Label`, `labelValue` and their `…Prefix` forms 63,
//!   `dns1123Subdomain` (and `…Prefix`) 253, `qualifiedName` 317 (a 253-character prefix, `/`,
//!   a 63-character name), `uuid` 36;
//! - a rule `size(self) <= N` (`< N`, `N >= size(self)`, `self.size() <= N`): N, for strings,
//!   lists and maps alike;
//! - the same forms inside a list's rule `self.all(x, …)` for its items;
//! - `allOf` entries' `maxLength` / `maxItems` / `maxProperties`, `pattern` and `enum`.
//!
//! A rule counts when it *is* such a form, or a conjunction (`&&`) with one: any other shape
//! (`has(…) && …` on another field, an `||`) may accept more, and is not read.

use serde_json::Value;

use super::{Keyword, Node, Step, node};
use celcost_core::cel::ast::{Expr, ExprKind, Literal};
use celcost_core::cel::minor::Minor;
use celcost_core::cel::parse::{ParserOptions, parse_unexpanded};
use celcost_core::cel::version::Version;
use celcost_core::schema::Schema;

/// A bound the node's validation implies, and what implies it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Implied {
    pub value: i64,
    /// `its rule's regex `…` accepts at most 28 characters`.
    pub why: String,
}

impl Implied {
    /// The value a suggestion writes: the implied length itself when it is a length people know
    /// (63, 253), else the next power of two — a round figure a reviewer reads as deliberate
    /// and that still refuses nothing.
    pub(super) fn round(&self) -> i64 {
        let v = self.value.max(1);
        if matches!(v, 63 | 253) {
            return v;
        }
        match u64::try_from(v)
            .ok()
            .and_then(u64::checked_next_power_of_two)
        {
            Some(p) => i64::try_from(p).unwrap_or(v),
            None => v,
        }
    }
}

/// Characters of a CEL string literal or JSON string.
fn chars(s: &str) -> i64 {
    s.chars().count() as i64
}

/// The tighter of two.
fn tighter(a: Option<Implied>, b: Option<Implied>) -> Option<Implied> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.value < a.value { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// What a regular expression implies (`what` names where it is).
fn of_regex(re: &str, what: &str) -> Option<Implied> {
    let n = celcost_core::goregexp::longest_match(re)?;
    Some(Implied {
        value: i64::try_from(n).ok()?,
        why: format!("{what} `{}` accepts at most {n} characters", shorten(re)),
    })
}

fn shorten(s: &str) -> String {
    if s.chars().count() <= 60 {
        s.to_string()
    } else {
        let head: String = s.chars().take(57).collect();
        format!("{head}...")
    }
}

/// The length a `format` bounds, at the minor's compatibility version.
fn of_format(format: &str, minor: &Minor) -> Option<Implied> {
    let names = minor.compatibility >= Version::new(1, 34);
    let n = match format {
        "uuid" | "uuid3" | "uuid4" | "uuid5" => 36,
        "ipv6" => 45,
        "hostname" => 255,
        "k8s-short-name" if names => 63,
        "k8s-long-name" if names => 253,
        _ => return None,
    };
    Some(Implied {
        value: n,
        why: format!("its format {format} allows at most {n} characters"),
    })
}

/// The longest value of an enum of strings.
fn of_enum(values: &[Value]) -> Option<Implied> {
    if values.is_empty() {
        return None;
    }
    let mut longest = 0;
    for v in values {
        longest = longest.max(chars(v.as_str()?));
    }
    Some(Implied {
        value: longest,
        why: format!("its enum's longest value has {longest} characters"),
    })
}

/// The length a format library name bounds (`format.dns1123Label()`).
fn format_library(name: &str) -> Option<i64> {
    Some(match name {
        "dns1123Label" | "dns1123LabelPrefix" | "dns1035Label" | "dns1035LabelPrefix"
        | "labelValue" => 63,
        "dns1123Subdomain" | "dns1123SubdomainPrefix" => 253,
        "qualifiedName" => 317,
        "uuid" => 36,
        _ => return None,
    })
}

fn is_ident(e: &Expr, name: &str) -> bool {
    matches!(&e.kind, ExprKind::Ident(n) if n == name)
}

fn int_literal(e: &Expr) -> Option<i64> {
    match &e.kind {
        ExprKind::Literal(Literal::Int(i)) => Some(*i),
        ExprKind::Literal(Literal::Uint(u)) => i64::try_from(*u).ok(),
        _ => None,
    }
}

/// `size(v)` / `v.size()`.
fn is_size_of(e: &Expr, v: &str) -> bool {
    match &e.kind {
        ExprKind::Call {
            function,
            target,
            args,
        } if function == "size" => match (target, args.as_slice()) {
            (None, [a]) => is_ident(a, v),
            (Some(t), []) => is_ident(t, v),
            _ => false,
        },
        _ => false,
    }
}

/// What one conjunct of a rule over `v` (`self`, or an `all` variable) implies for `k`.
fn of_form(e: &Expr, v: &str, k: Keyword) -> Option<Implied> {
    let (function, target, args) = e.as_call()?;
    match (function, target, args) {
        ("_&&_", None, [a, b]) => tighter(of_form(a, v, k), of_form(b, v, k)),
        ("matches", Some(t), [re]) | ("matches", None, [t, re])
            if k == Keyword::MaxLength && is_ident(t, v) =>
        {
            match &re.kind {
                ExprKind::Literal(Literal::String(re)) => of_regex(re, "its rule's regex"),
                _ => None,
            }
        }
        ("_<=_" | "_<_", None, [a, b]) | ("_>=_" | "_>_", None, [b, a]) if is_size_of(a, v) => {
            let n = int_literal(b)?;
            let strict = matches!(function, "_<_" | "_>_");
            let value = if strict { n.checked_sub(1)? } else { n };
            (value >= 0).then(|| Implied {
                value,
                why: format!(
                    "its rule caps size({v}) at {value} {}",
                    match k {
                        Keyword::MaxLength => "characters",
                        Keyword::MaxItems => "items",
                        Keyword::MaxProperties => "properties",
                    }
                ),
            })
        }
        ("!_", None, [inner]) if k == Keyword::MaxLength => {
            // !format.NAME().validate(v).hasValue()
            let ("hasValue", Some(t), []) = inner.as_call()? else {
                return None;
            };
            let ("validate", Some(f), [arg]) = t.as_call()? else {
                return None;
            };
            let (name, Some(lib), []) = f.as_call()? else {
                return None;
            };
            if !is_ident(arg, v) || !is_ident(lib, "format") {
                return None;
            }
            let n = format_library(name)?;
            Some(Implied {
                value: n,
                why: format!("its rule's format.{name}() allows at most {n} characters"),
            })
        }
        _ => None,
    }
}

/// A rule's text, read as written (macros not expanded).
fn parsed(rule: &str) -> Option<Expr> {
    let opts = ParserOptions::for_version(Version::new(1, 36)).with_every_macro();
    parse_unexpanded(rule, opts).ok().map(|p| p.expr)
}

/// What a rule's text implies for `k`: of the rule over `self` (`all`: of its `self.all(x, …)`
/// for a list's items). The same rules come back for every finding that reads their node, so
/// the answers are kept (per thread, a bounded number), not the parse.
fn of_rule(rule: &str, k: Keyword, all: bool) -> Option<Implied> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    type Key = (String, Keyword, bool);
    thread_local! {
        static MEMO: RefCell<HashMap<Key, Option<Implied>>> = RefCell::new(HashMap::new());
    }
    let key = (rule.to_string(), k, all);
    if let Some(hit) = MEMO.with(|m| m.borrow().get(&key).cloned()) {
        return hit;
    }
    let answer = parsed(rule).and_then(|e| {
        if all {
            of_all(&e, k)
        } else {
            of_form(&e, "self", k)
        }
    });
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= 4096 {
            m.clear();
        }
        m.insert(key, answer.clone());
    });
    answer
}

/// What the node's own schema (and its `allOf`) implies for `k`.
fn of_schema(s: &Schema, k: Keyword, minor: &Minor, depth: usize) -> Option<Implied> {
    let mut best = None;
    match k {
        Keyword::MaxLength => {
            if s.type_ != "string" && !s.type_.is_empty() {
                return None;
            }
            if !s.pattern.is_empty() {
                best = tighter(best, of_regex(&s.pattern, "its pattern"));
            }
            best = tighter(best, of_enum(&s.enum_values));
            best = tighter(best, of_format(&s.format, minor));
        }
        Keyword::MaxItems | Keyword::MaxProperties => {}
    }
    if depth > 0 {
        for a in &s.all_of {
            best = tighter(best, of_schema(a, k, minor, depth - 1));
            if let Some(v) = k.get(a) {
                best = tighter(
                    best,
                    Some(Implied {
                        value: v,
                        why: format!("its allOf sets {}: {v}", k.name()),
                    }),
                );
            }
        }
    }
    best
}

/// The bound the validation of the node at `path` implies for `k`, if any.
pub(super) fn implied_bound(
    root: &Schema,
    path: &[Step],
    k: Keyword,
    minor: &Minor,
) -> Option<Implied> {
    let s = node(root, path)?;
    if s.x_int_or_string {
        return None;
    }
    let mut best = of_schema(s, k, minor, 4);
    for r in &s.x_validations {
        best = tighter(best, of_rule(&r.rule, k, false));
    }
    // A list's `self.all(x, …)` rules, for its items.
    if let Some((Step::Items, parent_path)) = path.split_last() {
        let parent = node(root, parent_path)?;
        debug_assert!(Node::child(parent, &Step::Items).is_some());
        for r in &parent.x_validations {
            best = tighter(best, of_rule(&r.rule, k, true));
        }
    }
    best.filter(|i| i.value >= 0)
}

/// `self.all(x, F(x))` (or a conjunction with one): what F implies for `x`.
fn of_all(e: &Expr, k: Keyword) -> Option<Implied> {
    match e.as_call()? {
        ("_&&_", None, [a, b]) => tighter(of_all(a, k), of_all(b, k)),
        ("all", Some(t), [var, body]) if is_ident(t, "self") => {
            let ExprKind::Ident(v) = &var.kind else {
                return None;
            };
            of_form(body, v, k).map(|i| Implied {
                value: i.value,
                why: i.why.replacen("its rule", "its list's rule", 1),
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use celcost_core::cel::minor::{Distribution, Minor};
    use serde_json::json;

    fn minor(n: u32) -> &'static Minor {
        Minor::of_distribution(Version::new(1, n), Distribution::Kubernetes).unwrap()
    }

    fn of(schema: Value, path: &[Step], k: Keyword, n: u32) -> Option<i64> {
        let s = Schema::from_json(&schema, "t").unwrap();
        implied_bound(&s, path, k, minor(n)).map(|i| i.value)
    }

    fn string_with(extra: Value) -> Value {
        let mut s = json!({"type": "string"});
        s.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        s
    }

    fn rule(r: &str) -> Value {
        json!({"x-kubernetes-validations": [{"rule": r}]})
    }

    #[test]
    fn a_rules_regex_implies_its_longest_match() {
        let re = "^([0-9]{1,5}(h|m|s|ms)){1,4}$";
        for r in [
            format!("matches(self, '{re}')"),
            format!("self.matches('{re}')"),
            format!("self.matches('{re}') && duration(self) >= duration('1ms')"),
        ] {
            assert_eq!(
                of(string_with(rule(&r)), &[], Keyword::MaxLength, 37),
                Some(28),
                "{r}"
            );
        }
        // Not anchored, or not the whole rule: nothing implied.
        for r in [
            "self.matches('^[a-z]+')".to_string(),
            format!("self.matches('{re}') || self == ''"),
            format!("self.x.matches('{re}')"),
        ] {
            assert_eq!(
                of(string_with(rule(&r)), &[], Keyword::MaxLength, 37),
                None,
                "{r}"
            );
        }
        let i = implied_bound(
            &Schema::from_json(&string_with(rule(&format!("matches(self, '{re}')"))), "t").unwrap(),
            &[],
            Keyword::MaxLength,
            minor(37),
        )
        .unwrap();
        assert_eq!(i.round(), 32);
        assert!(i.why.contains("at most 28 characters"), "{}", i.why);
    }

    #[test]
    fn a_pattern_and_allof_imply_their_bounds() {
        let s = string_with(json!({"pattern": "^[a-z]{1,10}$"}));
        assert_eq!(of(s, &[], Keyword::MaxLength, 36), Some(10));
        let s = string_with(json!({"allOf": [{"maxLength": 12}, {"pattern": "^a{1,20}$"}]}));
        assert_eq!(of(s, &[], Keyword::MaxLength, 36), Some(12));
        let s = string_with(json!({"pattern": "[a-z]{1,10}"}));
        assert_eq!(of(s, &[], Keyword::MaxLength, 36), None);
    }

    #[test]
    fn an_enum_implies_its_longest_value() {
        let s = string_with(json!({"enum": ["Allow", "Deny", "Élan-vital"]}));
        assert_eq!(of(s, &[], Keyword::MaxLength, 36), Some(10));
        let s = json!({"type": "integer", "enum": [1, 2]});
        assert_eq!(of(s, &[], Keyword::MaxLength, 36), None);
    }

    #[test]
    fn formats_with_a_bounded_syntax_imply_their_length() {
        let f = |format: &str, n: u32| {
            of(
                string_with(json!({"format": format})),
                &[],
                Keyword::MaxLength,
                n,
            )
        };
        assert_eq!(f("uuid", 36), Some(36));
        assert_eq!(f("uuid4", 36), Some(36));
        assert_eq!(f("ipv6", 36), Some(45));
        assert_eq!(f("hostname", 36), Some(255));
        // Sloppy parsing takes any number of leading zeros.
        assert_eq!(f("ipv4", 36), None);
        assert_eq!(f("cidr", 36), None);
        assert_eq!(f("email", 36), None);
        // The Kubernetes name formats are checked from compatibility version 1.34 (1.35).
        assert_eq!(f("k8s-short-name", 35), Some(63));
        assert_eq!(f("k8s-long-name", 37), Some(253));
        assert_eq!(f("k8s-short-name", 34), None);
    }

    #[test]
    fn kubernetes_name_rules_imply_63_and_253() {
        let f = |r: &str| of(string_with(rule(r)), &[], Keyword::MaxLength, 36);
        assert_eq!(
            f("!format.dns1123Label().validate(self).hasValue()"),
            Some(63)
        );
        assert_eq!(
            f("!format.dns1123Subdomain().validate(self).hasValue()"),
            Some(253)
        );
        assert_eq!(
            f("!format.qualifiedName().validate(self).hasValue()"),
            Some(317)
        );
        assert_eq!(f("format.dns1123Label().validate(self).hasValue()"), None);
        let i = Implied {
            value: 63,
            why: String::new(),
        };
        assert_eq!(i.round(), 63);
    }

    #[test]
    fn size_rules_imply_their_limit_for_strings_lists_and_maps() {
        let f = |s: Value, k| of(s, &[], k, 36);
        assert_eq!(
            f(string_with(rule("size(self) <= 40")), Keyword::MaxLength),
            Some(40)
        );
        assert_eq!(
            f(string_with(rule("self.size() < 40")), Keyword::MaxLength),
            Some(39)
        );
        assert_eq!(
            f(string_with(rule("40 >= size(self)")), Keyword::MaxLength),
            Some(40)
        );
        let list = json!({"type": "array", "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "size(self) <= 16"}]});
        assert_eq!(f(list, Keyword::MaxItems), Some(16));
        let map = json!({"type": "object", "additionalProperties": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "size(self) < 9"}]});
        assert_eq!(f(map, Keyword::MaxProperties), Some(8));
        assert_eq!(
            f(string_with(rule("size(self) >= 40")), Keyword::MaxLength),
            None
        );
    }

    #[test]
    fn a_lists_all_rule_implies_a_bound_for_its_items() {
        let list = json!({"type": "array", "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "self.all(h, h.matches('^[a-z]{1,8}$'))"}]});
        assert_eq!(of(list, &[Step::Items], Keyword::MaxLength, 36), Some(8));
    }
}
