//! The functions of the Kubernetes CEL environment on plain values ([`Val`]), as cel-go and
//! `k8s.io/apiserver/pkg/cel/library` evaluate them: what [`crate::cel::runtime_cost`]'s
//! evaluator calls for every function it does not evaluate itself (operators, qualifiers,
//! comprehensions). It is how the rules on a CRD's defaults are evaluated (`crate::crd::validate`)
//! when the `cel` crate's interpreter does not follow cel-go on them.
//!
//! Restated from (the versions the minors link, [`Lib`]):
//! - cel-go `common/types` (conversions, durations, timestamps), `common/stdlib/standard.go`,
//!   `ext/strings.go`, `ext/sets.go`, `ext/lists.go`, `cel/library.go` (optional values),
//!   `ext/comprehensions.go` (`cel.@mapInsert`);
//! - `k8s.io/apiserver/pkg/cel/library`: `lists.go`, `regex.go`, `quantity.go` (over
//!   `k8s.io/apimachinery/pkg/api/resource`), `ip.go`, `cidr.go` (Go's `net/netip`),
//!   `semverlib.go` (`github.com/blang/semver/v4`), `format.go` (apimachinery's name
//!   validations), and `urls.go` ([`super::urls`]);
//! - the error texts of each, as the API server reports an evaluation error (`<error>
//!   evaluating rule: <rule>`).
//!
//! Each function gives a value, a cel-go error (its text when celcost is certain of it,
//! [`Failure::unworded`] when it is only certain that cel-go fails), or [`NotFollowed`]: what
//! celcost does not reproduce (time zones by name, Go's exact parse errors of some malformed IPs,
//! `findAll` with empty matches, …), which the caller reports as a rule it could not evaluate.

use std::cmp::Ordering;
use std::net::IpAddr;
use std::sync::Arc;

use num_bigint::BigInt;
use num_traits::{Signed, ToPrimitive, Zero};

use super::{Val, format, urls};
use crate::cel::gofmt::{go_float, go_quote};

/// A cel-go evaluation error: its text, or `None` where celcost knows cel-go fails but not in
/// which words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure(pub Option<String>);

impl Failure {
    pub fn new(m: impl Into<String>) -> Failure {
        Failure(Some(m.into()))
    }

    pub fn unworded() -> Failure {
        Failure(None)
    }
}

/// What celcost does not follow cel-go (or the Kubernetes libraries) on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotFollowed;

/// A value or a cel-go error; `Err(NotFollowed)` where celcost does not follow it.
pub type Called = Result<Result<Val, Failure>, NotFollowed>;

/// The versions a minor links, where the libraries' behaviour changed between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lib {
    /// cel-go's minor version (`0.N`): 17 for Kubernetes 1.30, 26 for 1.34 to 1.36, 29 for 1.37.
    pub cel_go: u32,
}

impl Lib {
    pub fn of(minor: &crate::cel::minor::Minor) -> Lib {
        let cel_go = minor
            .cel_go
            .trim_start_matches('v')
            .split('.')
            .nth(1)
            .and_then(|m| m.parse().ok())
            .unwrap_or(26);
        Lib { cel_go }
    }
}

impl Default for Lib {
    fn default() -> Lib {
        Lib { cel_go: 26 }
    }
}

/// The values of the types only this module evaluates.
#[derive(Clone, Debug, PartialEq)]
pub enum Ext {
    /// `google.protobuf.Duration`: Go's `time.Duration`, nanoseconds.
    Duration(i64),
    /// `google.protobuf.Timestamp`: seconds and nanoseconds since the Unix epoch, and the offset
    /// east of UTC in seconds of the zone it was written in (shown by `string()`).
    Timestamp { secs: i64, nanos: u32, offset: i32 },
    /// A type value (`type(x)`, `int`, `string`, …), by cel-go's name.
    Type(String),
    /// `kubernetes.Quantity`.
    Quantity(Quantity),
    /// `net.IP`.
    Ip(IpAddr),
    /// `net.CIDR`: the address as written and the prefix length.
    Cidr(IpAddr, u8),
    /// `kubernetes.Semver`.
    Semver(Semver),
    /// `kubernetes.NamedFormat`: its key in `ConstantFormats`.
    Format(&'static str),
}

fn ext(e: Ext) -> Val {
    Val::Ext(Arc::new(e))
}

fn ok(v: Val) -> Called {
    Ok(Ok(v))
}

fn fail(m: impl Into<String>) -> Called {
    Ok(Err(Failure::new(m)))
}

fn unworded() -> Called {
    Ok(Err(Failure::unworded()))
}

fn not_followed() -> Called {
    Err(NotFollowed)
}

/// Whether two values of this module are equal (`None` where the kinds differ: cel-go's
/// `no such overload`, or `false` for mixed kinds as its `Equal` implementations say).
pub fn ext_equal(a: &Ext, b: &Ext) -> Option<bool> {
    Some(match (a, b) {
        (Ext::Duration(x), Ext::Duration(y)) => x == y,
        (
            Ext::Timestamp {
                secs: s1,
                nanos: n1,
                ..
            },
            Ext::Timestamp {
                secs: s2,
                nanos: n2,
                ..
            },
        ) => s1 == s2 && n1 == n2,
        (Ext::Type(x), Ext::Type(y)) => x == y,
        (Ext::Quantity(x), Ext::Quantity(y)) => x.cmp_value(y) == Ordering::Equal,
        (Ext::Ip(x), Ext::Ip(y)) => x == y,
        (Ext::Cidr(a1, b1), Ext::Cidr(a2, b2)) => a1 == a2 && b1 == b2,
        (Ext::Semver(x), Ext::Semver(y)) => x.compare(y) == Ordering::Equal,
        (Ext::Format(x), Ext::Format(y)) => x == y,
        _ => return None,
    })
}

/// Orders two values of this module where cel-go does (durations, timestamps).
pub fn ext_compare(a: &Ext, b: &Ext) -> Option<Ordering> {
    match (a, b) {
        (Ext::Duration(x), Ext::Duration(y)) => Some(x.cmp(y)),
        (
            Ext::Timestamp {
                secs: s1,
                nanos: n1,
                ..
            },
            Ext::Timestamp {
                secs: s2,
                nanos: n2,
                ..
            },
        ) => Some((s1, n1).cmp(&(s2, n2))),
        _ => None,
    }
}

/// `actualSize` of a value of this module: the Kubernetes types that are `traits.Sizer` (an
/// IP's bytes, a CIDR's prefix bytes), 1 for the others.
pub fn ext_size(e: &Ext) -> u64 {
    match e {
        Ext::Ip(IpAddr::V4(_)) => 4,
        Ext::Ip(IpAddr::V6(_)) => 16,
        Ext::Cidr(_, bits) => (*bits as u64).div_ceil(8),
        _ => 1,
    }
}

/// cel-go's type name of a value (`type(x)`), where celcost knows it: `None` for a map, which
/// is an object of a generated type name when it comes from a schema object.
pub fn type_name(v: &Val) -> Option<&'static str> {
    Some(match v {
        Val::Null => "null_type",
        Val::Bool(_) => "bool",
        Val::Int(_) => "int",
        Val::Uint(_) => "uint",
        Val::Double(_) => "double",
        Val::String(_) => "string",
        Val::Bytes(_) => "bytes",
        Val::List(_) => "list",
        Val::Optional(_) => "optional_type",
        Val::Url(_) => "kubernetes.URL",
        Val::Ext(e) => match &**e {
            Ext::Duration(_) => "google.protobuf.Duration",
            Ext::Timestamp { .. } => "google.protobuf.Timestamp",
            Ext::Type(_) => "type",
            Ext::Quantity(_) => "kubernetes.Quantity",
            Ext::Ip(_) => "net.IP",
            Ext::Cidr(..) => "net.CIDR",
            Ext::Semver(_) => "kubernetes.Semver",
            Ext::Format(_) => "kubernetes.NamedFormat",
        },
        Val::Map(_) | Val::Other(_) => return None,
    })
}

/// The type value an identifier names, if it names one (`int`, `google.protobuf.Duration`,
/// `net.IP`, …): the type identifiers of the environment.
pub fn type_ident(name: &str) -> Option<Val> {
    const NAMES: &[&str] = &[
        "bool",
        "bytes",
        "double",
        "int",
        "uint",
        "string",
        "list",
        "map",
        "null_type",
        "type",
        "google.protobuf.Duration",
        "google.protobuf.Timestamp",
        "optional_type",
        "net.IP",
        "net.CIDR",
    ];
    NAMES
        .contains(&name)
        .then(|| ext(Ext::Type(name.to_string())))
}

/// Calls `function` (a member call when `member`, its receiver first in `args`) on values that
/// are no errors.
pub fn call(lib: Lib, function: &str, member: bool, args: &[Val]) -> Called {
    use Val::*;
    crate::budget::charge(1);
    match (function, args) {
        // --- conversions (`common/types` `ConvertToType`) ---
        ("dyn", [x]) => ok(x.clone()),
        ("type", [x]) => match type_name(x) {
            Some(n) => ok(ext(self::Ext::Type(n.into()))),
            None => not_followed(),
        },
        ("string", [x]) => to_string(x),
        ("bytes", [String(s)]) => ok(Bytes(s.as_bytes().to_vec())),
        ("bytes", [Bytes(b)]) => ok(Bytes(b.clone())),
        ("int", [x]) => to_int(x),
        ("uint", [x]) => to_uint(x),
        ("double", [x]) => to_double(x),
        ("bool", [Bool(b)]) => ok(Bool(*b)),
        ("bool", [String(s)]) => match s.as_str() {
            "1" | "t" | "T" | "TRUE" | "true" | "True" => ok(Bool(true)),
            "0" | "f" | "F" | "FALSE" | "false" | "False" => ok(Bool(false)),
            _ => fail(conversion_error("string", "bool")),
        },
        ("duration", [String(s)]) => match go_parse_duration(s) {
            Some(d) => ok(ext(self::Ext::Duration(d))),
            None => fail(conversion_error("string", "google.protobuf.Duration")),
        },
        ("duration", [Ext(d)]) if matches!(**d, self::Ext::Duration(_)) => ok(args[0].clone()),
        // `int64_to_duration` (cel-go before v0.28.1): not followed.
        ("duration", [Int(_)]) => not_followed(),
        ("timestamp", [String(s)]) => match parse_rfc3339(s) {
            Some((secs, nanos, offset)) if (MIN_UNIX..=MAX_UNIX).contains(&secs) => {
                ok(ext(self::Ext::Timestamp {
                    secs,
                    nanos,
                    offset,
                }))
            }
            Some(_) => fail("timestamp overflow"),
            None => fail(conversion_error("string", "google.protobuf.Timestamp")),
        },
        ("timestamp", [Int(i)]) if (MIN_UNIX..=MAX_UNIX).contains(i) => {
            ok(ext(self::Ext::Timestamp {
                secs: *i,
                nanos: 0,
                offset: 0,
            }))
        }
        ("timestamp", [Int(_)]) => fail("timestamp overflow"),
        ("timestamp", [Ext(t)]) if matches!(**t, self::Ext::Timestamp { .. }) => {
            ok(args[0].clone())
        }

        // --- sizes, strings (stdlib) ---
        ("size", [String(s)]) => ok(Int(s.chars().count() as i64)),
        ("size", [Bytes(b)]) => ok(Int(b.len() as i64)),
        ("size", [List(l)]) => ok(Int(l.len() as i64)),
        ("size", [Map(m)]) => ok(Int(m.len() as i64)),
        ("contains", [String(s), String(t)]) => ok(Bool(s.contains(t.as_str()))),
        ("startsWith", [String(s), String(t)]) => ok(Bool(s.starts_with(t.as_str()))),
        ("endsWith", [String(s), String(t)]) => ok(Bool(s.ends_with(t.as_str()))),
        ("matches", [String(s), String(re)]) => {
            crate::budget::charge((s.len() * re.len()) as u64 / 16);
            match crate::goregexp::is_match(re, s) {
                Ok(b) => ok(Bool(b)),
                Err(e) => fail(e.to_string()),
            }
        }
        ("_+_", [Bytes(x), Bytes(y)]) => {
            crate::budget::charge((x.len() + y.len()) as u64 / 16);
            ok(Bytes([x.as_slice(), y.as_slice()].concat()))
        }

        // --- durations and timestamps ---
        ("-_", [Ext(d)]) => match &**d {
            self::Ext::Duration(x) => match x.checked_neg() {
                Some(n) => ok(ext(self::Ext::Duration(n))),
                None => fail("integer overflow"),
            },
            _ => not_followed(),
        },
        ("_+_" | "_-_", [Ext(a), Ext(b)]) => time_arith(function == "_+_", a, b),
        (
            "getFullYear" | "getMonth" | "getDayOfYear" | "getDate" | "getDayOfMonth"
            | "getDayOfWeek" | "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds",
            [Ext(t), rest @ ..],
        ) if member => time_accessor(function, t, rest),

        // --- the strings extension (`ext/strings.go`) ---
        ("charAt", [String(s), Int(i)]) => {
            let runes: Vec<char> = s.chars().collect();
            if *i < 0 || *i as usize > runes.len() {
                return fail(format!("index out of range: {i}"));
            }
            ok(String(
                runes
                    .get(*i as usize)
                    .map(|c| c.to_string())
                    .unwrap_or_default(),
            ))
        }
        ("indexOf", [String(s), String(sub)]) => index_of(lib, s, sub, 0),
        ("indexOf", [String(s), String(sub), Int(off)]) => index_of(lib, s, sub, *off),
        ("lastIndexOf", [String(s), String(sub)]) => {
            let n = s.chars().count() as i64;
            if sub.is_empty() {
                return ok(Int(n));
            }
            if lib.cel_go >= 26 && s.len() < sub.len() {
                return ok(Int(-1));
            }
            last_index_of(lib, s, sub, n - 1)
        }
        ("lastIndexOf", [String(s), String(sub), Int(off)]) => last_index_of(lib, s, sub, *off),
        ("lowerAscii", [String(s)]) => ok(String(s.to_ascii_lowercase())),
        ("upperAscii", [String(s)]) => ok(String(s.to_ascii_uppercase())),
        ("replace", [String(s), String(old), String(new)]) => {
            crate::budget::charge(s.len() as u64);
            ok(String(go_replace(s, old, new, -1)))
        }
        ("replace", [String(s), String(old), String(new), Int(n)]) => {
            crate::budget::charge(s.len() as u64);
            ok(String(go_replace(s, old, new, *n)))
        }
        ("split", [String(s), String(sep)]) => ok(string_list(go_split(s, sep, -1))),
        ("split", [String(s), String(sep), Int(n)]) => ok(string_list(go_split(s, sep, *n))),
        ("substring", [String(s), Int(start)]) => {
            let runes: Vec<char> = s.chars().collect();
            if *start < 0 || *start as usize > runes.len() {
                return fail(format!("index out of range: {start}"));
            }
            ok(String(runes[*start as usize..].iter().collect()))
        }
        ("substring", [String(s), Int(start), Int(end)]) => {
            let runes: Vec<char> = s.chars().collect();
            let l = runes.len() as i64;
            if start > end {
                return fail(format!(
                    "invalid substring range. start: {start}, end: {end}"
                ));
            }
            if *start < 0 || *start > l {
                return fail(format!("index out of range: {start}"));
            }
            if *end < 0 || *end > l {
                return fail(format!("index out of range: {end}"));
            }
            ok(String(
                runes[*start as usize..*end as usize].iter().collect(),
            ))
        }
        ("trim", [String(s)]) => ok(String(s.trim().to_string())),
        ("join", [List(l)]) => join(l, ""),
        ("join", [List(l), String(sep)]) => join(l, sep),
        ("strings.quote", [String(s)]) => ok(String(quote(s))),
        ("format", [String(f), List(a)]) => match format::format(f, a) {
            Ok(s) => ok(String(s)),
            Err(format::FormatError::Go(e)) => fail(e),
            Err(format::FormatError::Unworded) => unworded(),
            Err(format::FormatError::NotFollowed) => not_followed(),
        },

        // --- the sets extension (`ext/sets.go`) ---
        ("sets.contains", [List(a), List(b)]) => sets_contains(a, b),
        ("sets.equivalent", [List(a), List(b)]) => {
            match (sets_contains(a, b)?, sets_contains(b, a)?) {
                (Ok(Bool(x)), Ok(Bool(y))) => ok(Bool(x && y)),
                (Err(f), _) | (_, Err(f)) => Ok(Err(f)),
                _ => not_followed(),
            }
        }
        ("sets.intersects", [List(a), List(b)]) => {
            for x in a {
                for y in b {
                    if equal(x, y).ok_or(NotFollowed)? {
                        return ok(Bool(true));
                    }
                }
            }
            ok(Bool(false))
        }

        // --- the lists extension (`ext/lists.go`, version 3) and optional `first`/`last` ---
        ("slice", [List(l), Int(start), Int(end)]) => {
            let n = l.len() as i64;
            if *start < 0 || *end < 0 {
                return fail(format!(
                    "cannot slice({start}, {end}), negative indexes not supported"
                ));
            }
            if start > end {
                return fail(format!(
                    "cannot slice({start}, {end}), start index must be less than or equal to end index"
                ));
            }
            if *end > n {
                return fail(format!("cannot slice({start}, {end}), list is length {n}"));
            }
            ok(List(l[*start as usize..*end as usize].to_vec()))
        }
        ("flatten", [List(l)]) => flatten(l, 1),
        ("flatten", [List(l), Int(depth)]) => {
            if *depth < 0 {
                return fail("level must be non-negative");
            }
            flatten(l, *depth)
        }
        ("distinct", [List(l)]) => {
            let mut out: Vec<Val> = Vec::new();
            for x in l {
                let mut seen = false;
                for y in &out {
                    if equal(x, y).ok_or(NotFollowed)? {
                        seen = true;
                        break;
                    }
                }
                if !seen {
                    out.push(x.clone());
                }
            }
            ok(List(out))
        }
        ("lists.range", [Int(n)]) => {
            if *n > 1_000_000 {
                return not_followed();
            }
            ok(List((0..(*n).max(0)).map(Int).collect()))
        }
        ("reverse", [List(l)]) => ok(List(l.iter().rev().cloned().collect())),
        ("sort", [List(l)]) => sort(l),
        ("@sortByAssociatedKeys", [List(l), List(keys)]) => {
            if l.len() != keys.len() {
                return fail(format!(
                    "@sortByAssociatedKeys() expected a list of the same size as the associated keys list, but got {} and {} elements respectively.",
                    l.len(),
                    keys.len()
                ));
            }
            let order = sorted_order(keys)?;
            let order = match order {
                Ok(o) => o,
                Err(f) => return Ok(Err(f)),
            };
            ok(List(order.into_iter().map(|i| l[i].clone()).collect()))
        }
        ("first", [List(l)]) => ok(Optional(l.first().map(|x| Box::new(x.clone())))),
        ("last", [List(l)]) => ok(Optional(l.last().map(|x| Box::new(x.clone())))),

        // --- optional values (`cel/library.go`) ---
        ("optional.of", [x]) => ok(Optional(Some(Box::new(x.clone())))),
        ("optional.ofNonZeroValue", [x]) => match is_zero_value(x) {
            Some(true) => ok(Optional(None)),
            Some(false) => ok(Optional(Some(Box::new(x.clone())))),
            None => not_followed(),
        },
        ("optional.none", []) => ok(Optional(None)),
        ("value", [Optional(o)]) => match o.as_deref() {
            Some(x) => ok(x.clone()),
            None => fail("optional.none() dereference"),
        },
        ("hasValue", [Optional(o)]) => ok(Bool(o.is_some())),
        ("or", [Optional(a), Optional(_)]) if a.is_some() => ok(args[0].clone()),
        ("or", [Optional(_), b @ Optional(_)]) => ok(b.clone()),
        ("orValue", [Optional(o), d]) => ok(o.as_deref().cloned().unwrap_or_else(|| d.clone())),
        ("optional.unwrap" | "unwrapOpt", [List(l)]) => {
            let mut out = Vec::new();
            for x in l {
                match x {
                    Optional(Some(v)) => out.push((**v).clone()),
                    Optional(None) => {}
                    _ => return not_followed(),
                }
            }
            ok(List(out))
        }

        // --- two-variable comprehensions' helper (`ext/comprehensions.go`) ---
        ("cel.@mapInsert", [Map(m), k, v]) => map_insert(m, &[(k.clone(), v.clone())]),
        ("cel.@mapInsert", [Map(m), Map(other)]) => map_insert(m, other),

        // --- Kubernetes lists (`library/lists.go`) ---
        ("isSorted", [List(l)]) => {
            for w in l.windows(2) {
                match compare(&w[0], &w[1]) {
                    Some(Ordering::Greater) => return ok(Bool(false)),
                    Some(_) => {}
                    None => return not_followed(),
                }
            }
            ok(Bool(true))
        }
        ("sum", [List(l)]) => sum(l),
        ("min" | "max", [List(l)]) => {
            let Some(mut best) = l.first() else {
                return fail(format!("{function} called on empty list"));
            };
            for x in &l[1..] {
                let o = compare(best, x).ok_or(NotFollowed)?;
                // `result.Compare(next) == 1` (min) or `-1` (max): the next is preferred.
                if (function == "min" && o == Ordering::Greater)
                    || (function == "max" && o == Ordering::Less)
                {
                    best = x;
                }
            }
            ok(best.clone())
        }
        ("indexOf", [List(l), x]) => {
            for (i, y) in l.iter().enumerate() {
                if equal(y, x).ok_or(NotFollowed)? {
                    return ok(Int(i as i64));
                }
            }
            ok(Int(-1))
        }
        ("lastIndexOf", [List(l), x]) => {
            for (i, y) in l.iter().enumerate().rev() {
                if equal(y, x).ok_or(NotFollowed)? {
                    return ok(Int(i as i64));
                }
            }
            ok(Int(-1))
        }
        ("includes", [List(l), x]) => {
            for y in l {
                if equal(y, x).ok_or(NotFollowed)? {
                    return ok(Bool(true));
                }
            }
            ok(Bool(false))
        }

        // --- Kubernetes regex (`library/regex.go`) ---
        ("find", [String(s), String(re)]) => match crate::goregexp::compile(re) {
            Err(e) => fail(format!("Illegal regex: {e}")),
            Ok(None) => not_followed(),
            Ok(Some(r)) => ok(String(
                r.find(s)
                    .map(|m| m.as_str().to_string())
                    .unwrap_or_default(),
            )),
        },
        ("findAll", [String(s), String(re), rest @ ..]) => {
            let n = match rest {
                [] => -1,
                [Int(n)] => *n,
                _ => return not_followed(),
            };
            match crate::goregexp::compile(re) {
                Err(e) => fail(format!("Illegal regex: {e}")),
                Ok(None) => not_followed(),
                Ok(Some(r)) => {
                    let mut out = Vec::new();
                    for m in r.find_iter(s) {
                        if n >= 0 && out.len() as i64 >= n {
                            break;
                        }
                        // Go and the regex crate place empty matches differently.
                        if m.as_str().is_empty() {
                            return not_followed();
                        }
                        out.push(String(m.as_str().to_string()));
                    }
                    ok(List(out))
                }
            }
        }

        // --- Kubernetes URLs (`library/urls.go`) ---
        ("url", [String(s)]) => match urls::url(s).map_err(|_| NotFollowed)? {
            Ok(u) => ok(Url(Arc::new(u))),
            Err(Some(m)) => fail(m),
            Err(None) => unworded(),
        },
        ("isURL", [String(s)]) => ok(Bool(urls::is_url(s).map_err(|_| NotFollowed)?)),
        ("getScheme", [Url(u)]) => ok(String(u.scheme())),
        ("getHost", [Url(u)]) => ok(String(u.host().map_err(|_| NotFollowed)?)),
        ("getHostname", [Url(u)]) => ok(String(u.hostname().map_err(|_| NotFollowed)?)),
        ("getPort", [Url(u)]) => ok(String(u.port().map_err(|_| NotFollowed)?)),
        ("getEscapedPath", [Url(u)]) => ok(String(u.escaped_path().map_err(|_| NotFollowed)?)),
        ("getQuery", [Url(u)]) => ok(Map(u
            .query()
            .map_err(|_| NotFollowed)?
            .into_iter()
            .map(|(k, vs)| (String(k), List(vs.into_iter().map(String).collect())))
            .collect())),

        // --- Kubernetes quantities (`library/quantity.go`) ---
        ("isQuantity", [String(s)]) => ok(Bool(Quantity::parse(s).is_ok())),
        ("quantity", [String(s)]) => match Quantity::parse(s) {
            Ok(q) => ok(ext(self::Ext::Quantity(q))),
            Err(m) => fail(m),
        },
        ("sign", [Ext(q)]) => match &**q {
            self::Ext::Quantity(q) => ok(Int(q.sign() as i64)),
            _ => not_followed(),
        },
        ("isInteger" | "asInteger" | "asApproximateFloat", [Ext(q)]) => match &**q {
            self::Ext::Quantity(q) => match function {
                "isInteger" => ok(Bool(q.as_int64().is_some())),
                "asInteger" => match q.as_int64() {
                    Some(i) => ok(Int(i)),
                    None => fail("cannot convert value to integer"),
                },
                _ => ok(Double(q.as_approximate_float64())),
            },
            _ => not_followed(),
        },
        ("isGreaterThan" | "isLessThan" | "compareTo", [Ext(a), Ext(b)]) => {
            let o = match (&**a, &**b) {
                (self::Ext::Quantity(x), self::Ext::Quantity(y)) => x.cmp_value(y),
                (self::Ext::Semver(x), self::Ext::Semver(y)) => x.compare(y),
                _ => return not_followed(),
            };
            ok(match function {
                "isGreaterThan" => Bool(o == Ordering::Greater),
                "isLessThan" => Bool(o == Ordering::Less),
                _ => Int(o as i64),
            })
        }
        ("add" | "sub", [Ext(a), b]) => {
            let self::Ext::Quantity(x) = &**a else {
                return not_followed();
            };
            let y = match b {
                Ext(b) => match &**b {
                    self::Ext::Quantity(y) => y.clone(),
                    _ => return not_followed(),
                },
                Int(i) => Quantity::Int {
                    value: *i,
                    scale: 0,
                },
                _ => return not_followed(),
            };
            let r = if function == "add" {
                x.add(&y)
            } else {
                x.add(&y.neg())
            };
            ok(ext(self::Ext::Quantity(r)))
        }

        // --- Kubernetes IPs and CIDRs (`library/ip.go`, `library/cidr.go`) ---
        ("isIP", [String(s)]) => ok(Bool(parse_ip_addr(s).is_ok())),
        ("ip", [String(s)]) => match parse_ip_addr(s) {
            Ok(a) => ok(ext(self::Ext::Ip(a))),
            Err(Some(m)) => fail(m),
            Err(None) => unworded(),
        },
        ("ip.isCanonical", [String(s)]) => match parse_ip_addr(s) {
            Ok(a) => ok(Bool(go_ip_string(&a) == *s)),
            Err(Some(m)) => fail(m),
            Err(None) => unworded(),
        },
        ("isCIDR", [String(s)]) => ok(Bool(parse_cidr(s).is_ok())),
        ("cidr", [String(s)]) => match parse_cidr(s) {
            Ok((a, b)) => ok(ext(self::Ext::Cidr(a, b))),
            // Wrapped twice (`stringToCIDR`'s error of `parseCIDR`'s).
            Err(Some(m)) => fail(format!(
                "network address parse error during conversion from string: network address parse error during conversion from string: {m}"
            )),
            Err(None) => unworded(),
        },
        (
            "family"
            | "isUnspecified"
            | "isLoopback"
            | "isLinkLocalMulticast"
            | "isLinkLocalUnicast"
            | "isGlobalUnicast",
            [Ext(a)],
        ) => {
            let self::Ext::Ip(a) = &**a else {
                return not_followed();
            };
            ok(match function {
                "family" => Int(if a.is_ipv4() { 4 } else { 6 }),
                "isUnspecified" => Bool(a.is_unspecified()),
                "isLoopback" => Bool(a.is_loopback()),
                "isLinkLocalMulticast" => Bool(is_link_local_multicast(a)),
                "isLinkLocalUnicast" => Bool(is_link_local_unicast(a)),
                _ => Bool(is_global_unicast(a)),
            })
        }
        ("ip", [Ext(c)]) => match &**c {
            self::Ext::Cidr(a, _) => ok(ext(self::Ext::Ip(*a))),
            _ => not_followed(),
        },
        ("masked", [Ext(c)]) => match &**c {
            self::Ext::Cidr(a, b) => ok(ext(self::Ext::Cidr(mask(a, *b), *b))),
            _ => not_followed(),
        },
        ("prefixLength", [Ext(c)]) => match &**c {
            self::Ext::Cidr(_, b) => ok(Int(*b as i64)),
            _ => not_followed(),
        },
        ("containsIP", [Ext(c), other]) => {
            let self::Ext::Cidr(a, b) = &**c else {
                return not_followed();
            };
            let ip = match other {
                String(s) => match parse_ip_addr(s) {
                    Ok(ip) => ip,
                    Err(Some(m)) => return fail(m),
                    Err(None) => return unworded(),
                },
                Ext(x) => match &**x {
                    self::Ext::Ip(ip) => *ip,
                    _ => return not_followed(),
                },
                _ => return not_followed(),
            };
            ok(Bool(prefix_contains(a, *b, &ip)))
        }
        ("containsCIDR", [Ext(c), other]) => {
            let self::Ext::Cidr(a, b) = &**c else {
                return not_followed();
            };
            let (oa, ob) = match other {
                String(s) => match parse_cidr(s) {
                    Ok(x) => x,
                    // Wrapped twice (`stringToCIDR`'s error of `parseCIDR`'s).
                    Err(Some(m)) => {
                        return fail(format!(
                            "network address parse error during conversion from string: network address parse error during conversion from string: {m}"
                        ));
                    }
                    Err(None) => return unworded(),
                },
                Ext(x) => match &**x {
                    self::Ext::Cidr(oa, ob) => (*oa, *ob),
                    _ => return not_followed(),
                },
                _ => return not_followed(),
            };
            // `cidr.Overlaps(other) && cidr.Bits() <= other.Bits()`.
            let same_family = a.is_ipv4() == oa.is_ipv4();
            let overlaps = same_family && {
                let m = (*b).min(ob);
                mask(a, m) == mask(&oa, m)
            };
            ok(Bool(overlaps && *b <= ob))
        }

        // --- Kubernetes semvers (`library/semverlib.go`) ---
        ("isSemver", [String(s)]) => ok(Bool(Semver::parse(s).is_ok())),
        ("isSemver", [String(s), Bool(normalize)]) => ok(Bool(if *normalize {
            Semver::normalize_and_parse(s).is_ok()
        } else {
            Semver::parse(s).is_ok()
        })),
        ("semver", [String(s), rest @ ..]) => {
            let normalize = match rest {
                [] => false,
                [Bool(b)] => *b,
                _ => return not_followed(),
            };
            let r = if normalize {
                Semver::normalize_and_parse(s)
            } else {
                Semver::parse(s)
            };
            match r {
                Ok(v) => ok(ext(self::Ext::Semver(v))),
                Err(m) => fail(m),
            }
        }
        ("major" | "minor" | "patch", [Ext(v)]) => match &**v {
            self::Ext::Semver(v) => ok(Int(match function {
                "major" => v.major,
                "minor" => v.minor,
                _ => v.patch,
            } as i64)),
            _ => not_followed(),
        },

        // --- Kubernetes named formats (`library/format.go`) ---
        ("format.named", [String(name)]) => ok(Optional(
            named_format(name).map(|k| Box::new(ext(self::Ext::Format(k)))),
        )),
        ("validate", [Ext(f), String(s)]) => match &**f {
            self::Ext::Format(k) => match validate_format(k, s) {
                Some(errs) if errs.is_empty() => ok(Optional(None)),
                Some(errs) => ok(Optional(Some(Box::new(string_list(errs))))),
                None => not_followed(),
            },
            _ => not_followed(),
        },
        (f, []) if f.starts_with("format.") => match named_format(&f["format.".len()..]) {
            Some(k) => ok(ext(self::Ext::Format(k))),
            None => not_followed(),
        },
        // No overload of these operand types (a `dyn` value at runtime): cel-go fails, in
        // words that vary by function. An error can only be absorbed where another operand
        // decides (`||`, `&&`, `exists`), as a value would be: never a result celcost is wrong on.
        // `size` of what has none, the string functions on what is no string, `-` of a string
        // (each a `dyn` value), as cel-go words them.
        ("size", [Int(_) | Uint(_) | Double(_) | Bool(_) | Null]) => fail("no such overload: size"),
        ("contains" | "startsWith" | "endsWith" | "matches", [x, String(_)])
            if member && !matches!(x, String(_)) =>
        {
            fail("no such overload")
        }
        ("-_", [String(_)]) => fail("no such overload"),
        _ => unworded(),
    }
}

fn string_list(v: Vec<String>) -> Val {
    Val::List(v.into_iter().map(Val::String).collect())
}

/// `type conversion error from '<from>' to '<to>'`.
fn conversion_error(from: &str, to: &str) -> String {
    format!("type conversion error from '{from}' to '{to}'")
}

/// cel-go's equality where celcost follows it (`None` elsewhere).
pub fn equal(a: &Val, b: &Val) -> Option<bool> {
    use Val::*;
    crate::budget::charge(1);
    Some(match (a, b) {
        (Int(_) | Uint(_) | Double(_), Int(_) | Uint(_) | Double(_)) => match number_cmp(a, b) {
            Some(o) => o == Ordering::Equal,
            None if matches!(a, Double(x) if x.is_nan())
                || matches!(b, Double(x) if x.is_nan()) =>
            {
                false
            }
            None => return None,
        },
        (String(x), String(y)) => x == y,
        (Bool(x), Bool(y)) => x == y,
        (Bytes(x), Bytes(y)) => x == y,
        (Null, Null) => true,
        (List(x), List(y)) => {
            if x.len() != y.len() {
                return Some(false);
            }
            for (p, q) in x.iter().zip(y) {
                if !equal(p, q)? {
                    return Some(false);
                }
            }
            true
        }
        (Map(x), Map(y)) => {
            if x.len() != y.len() {
                return Some(false);
            }
            for (k, v) in x {
                let Some(w) = map_get(y, k)? else {
                    return Some(false);
                };
                if !equal(v, w)? {
                    return Some(false);
                }
            }
            true
        }
        (Optional(x), Optional(y)) => match (x, y) {
            (None, None) => true,
            (Some(p), Some(q)) => equal(p, q)?,
            _ => false,
        },
        (Ext(x), Ext(y)) => ext_equal(x, y).unwrap_or(false),
        (Url(_) | Other(_), _) | (_, Url(_) | Other(_)) => return None,
        _ => false,
    })
}

/// Numbers compared across int, uint and double.
pub fn number_cmp(a: &Val, b: &Val) -> Option<Ordering> {
    use Val::*;
    match (a, b) {
        (Int(x), Int(y)) => Some(x.cmp(y)),
        (Uint(x), Uint(y)) => Some(x.cmp(y)),
        (Int(x), Uint(y)) => Some(if *x < 0 {
            Ordering::Less
        } else {
            (*x as u64).cmp(y)
        }),
        (Uint(_), Int(_)) => number_cmp(b, a).map(Ordering::reverse),
        (Double(x), Double(y)) => x.partial_cmp(y),
        (Double(x), Int(y)) => x
            .partial_cmp(&(*y as f64))
            .filter(|_| y.unsigned_abs() < 1 << 53),
        (Double(x), Uint(y)) => x.partial_cmp(&(*y as f64)).filter(|_| *y < 1 << 53),
        (Int(_) | Uint(_), Double(_)) => number_cmp(b, a).map(Ordering::reverse),
        _ => None,
    }
}

/// The order of two values of one comparable type (`traits.Comparer`), `None` where celcost
/// does not follow it (NaN, other types).
pub fn compare(a: &Val, b: &Val) -> Option<Ordering> {
    use Val::*;
    match (a, b) {
        (String(x), String(y)) => Some(x.cmp(y)),
        (Bytes(x), Bytes(y)) => Some(x.cmp(y)),
        (Bool(x), Bool(y)) => Some(x.cmp(y)),
        (Ext(x), Ext(y)) => ext_compare(x, y),
        _ => number_cmp(a, b),
    }
}

/// A map's value at a key (`None` where numeric keys of other types would need cel-go's
/// cross-type lookup).
pub fn map_get<'m>(m: &'m [(Val, Val)], k: &Val) -> Option<Option<&'m Val>> {
    crate::budget::charge(m.len() as u64 + 1);
    for (key, v) in m {
        match (key, k) {
            (Val::String(a), Val::String(b)) if a == b => return Some(Some(v)),
            (Val::Int(a), Val::Int(b)) if a == b => return Some(Some(v)),
            (Val::Uint(a), Val::Uint(b)) if a == b => return Some(Some(v)),
            (Val::Bool(a), Val::Bool(b)) if a == b => return Some(Some(v)),
            (Val::String(_), Val::String(_))
            | (Val::Int(_), Val::Int(_))
            | (Val::Uint(_), Val::Uint(_))
            | (Val::Bool(_), Val::Bool(_)) => {}
            _ => return None,
        }
    }
    Some(None)
}

/// `cel.@mapInsert`: the entries added one by one, `insert failed: key <k> already exists` on
/// a repeated key (`types.InsertMapKeyValue`).
fn map_insert(m: &[(Val, Val)], entries: &[(Val, Val)]) -> Called {
    let mut out = m.to_vec();
    for (k, v) in entries {
        if !matches!(
            k,
            Val::String(_) | Val::Int(_) | Val::Uint(_) | Val::Bool(_)
        ) {
            return not_followed();
        }
        if map_get(&out, k).ok_or(NotFollowed)?.is_some() {
            let shown = match k {
                Val::String(s) => s.clone(),
                Val::Int(i) => i.to_string(),
                Val::Uint(u) => u.to_string(),
                Val::Bool(b) => b.to_string(),
                _ => return not_followed(),
            };
            return fail(format!("insert failed: key {shown} already exists"));
        }
        out.push((k.clone(), v.clone()));
    }
    ok(Val::Map(out))
}

/// `ref.Val.IsZeroValue` (`optional.ofNonZeroValue`).
fn is_zero_value(v: &Val) -> Option<bool> {
    Some(match v {
        Val::Null => true,
        Val::Bool(b) => !b,
        Val::Int(i) => *i == 0,
        Val::Uint(u) => *u == 0,
        Val::Double(d) => *d == 0.0,
        Val::String(s) => s.is_empty(),
        Val::Bytes(b) => b.is_empty(),
        // A list or map of the default is an `unstructuredList`/`unstructuredMap`, which has no
        // `IsZeroValue` (never zero); a literal one has: celcost does not tell them apart.
        Val::List(_) | Val::Map(_) => return None,
        Val::Optional(o) => o.is_none(),
        Val::Ext(e) => match &**e {
            Ext::Duration(d) => *d == 0,
            Ext::Timestamp { secs, nanos, .. } => *secs == 0 && *nanos == 0,
            _ => return None,
        },
        _ => return None,
    })
}

fn to_string(v: &Val) -> Called {
    use Val::*;
    ok(String(match v {
        String(s) => s.clone(),
        Int(i) => i.to_string(),
        Uint(u) => u.to_string(),
        Double(d) => go_float(*d),
        Bool(b) => b.to_string(),
        Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) => s.to_string(),
            Err(_) => return fail("invalid UTF-8 in bytes, cannot convert to string"),
        },
        Ext(e) => match &**e {
            self::Ext::Duration(d) => duration_string(*d),
            self::Ext::Timestamp {
                secs,
                nanos,
                offset,
            } => match timestamp_string(*secs, *nanos, *offset) {
                Some(s) => s,
                None => return not_followed(),
            },
            self::Ext::Type(t) => t.clone(),
            self::Ext::Ip(a) => go_ip_string(a),
            self::Ext::Cidr(a, b) => format!("{}/{b}", go_ip_string(a)),
            _ => return fail(conversion_error(type_name(v).unwrap_or("?"), "string")),
        },
        _ => return not_followed(),
    }))
}

fn to_int(v: &Val) -> Called {
    use Val::*;
    match v {
        Int(i) => ok(Int(*i)),
        Uint(u) => i64::try_from(*u).map_or_else(|_| fail("integer overflow"), |i| ok(Int(i))),
        // `doubleToInt64Checked`: (-2^63, 2^63) exclusive, truncated.
        Double(d) => {
            if d.is_nan() || *d <= -9_223_372_036_854_775_808.0 || *d >= 9_223_372_036_854_775_808.0
            {
                fail("integer overflow")
            } else {
                ok(Int(d.trunc() as i64))
            }
        }
        String(s) => match go_parse_int(s) {
            Some(i) => ok(Int(i)),
            None => fail(conversion_error("string", "int")),
        },
        Ext(e) => match &**e {
            self::Ext::Duration(d) => ok(Int(*d)),
            self::Ext::Timestamp { secs, .. } => ok(Int(*secs)),
            _ => not_followed(),
        },
        _ => not_followed(),
    }
}

/// Go's `strconv.ParseInt(s, 10, 64)`: an optional sign and decimal digits.
fn go_parse_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.strip_prefix('+').unwrap_or(s).parse().ok()
}

fn to_uint(v: &Val) -> Called {
    use Val::*;
    match v {
        Uint(u) => ok(Uint(*u)),
        Int(i) => {
            u64::try_from(*i).map_or_else(|_| fail("unsigned integer overflow"), |u| ok(Uint(u)))
        }
        Double(d) => {
            if (0.0..18_446_744_073_709_551_616.0).contains(d) {
                ok(Uint(*d as u64))
            } else {
                fail("unsigned integer overflow")
            }
        }
        String(s) if !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()) => {
            s.parse::<u64>().map_or_else(
                |_| fail(conversion_error("string", "uint")),
                |u| ok(Uint(u)),
            )
        }
        String(_) => fail(conversion_error("string", "uint")),
        _ => not_followed(),
    }
}

fn to_double(v: &Val) -> Called {
    use Val::*;
    match v {
        Double(d) => ok(Double(*d)),
        Int(i) => ok(Double(*i as f64)),
        Uint(u) => ok(Double(*u as f64)),
        String(s) => match super::go_parse_float(s) {
            Some(Ok(d)) => ok(Double(d)),
            Some(Err(())) => fail(conversion_error("string", "double")),
            None => not_followed(),
        },
        _ => not_followed(),
    }
}

// --- durations and timestamps ----------------------------------------------------------------

/// The range of cel-go's timestamps (`minUnixTime`, `maxUnixTime`: years 1 to 9999).
const MIN_UNIX: i64 = -62_135_596_800;
const MAX_UNIX: i64 = 253_402_300_799;

/// Go's `time.ParseDuration`, in nanoseconds (`None` where it fails).
pub fn go_parse_duration(orig: &str) -> Option<i64> {
    let mut s = orig.as_bytes();
    let mut neg = false;
    if let Some(&c) = s.first()
        && (c == b'-' || c == b'+')
    {
        neg = c == b'-';
        s = &s[1..];
    }
    if s == b"0" {
        return Some(0);
    }
    if s.is_empty() {
        return None;
    }
    const LIMIT: u64 = 1 << 63;
    let mut d: u64 = 0;
    while !s.is_empty() {
        if !(s[0] == b'.' || s[0].is_ascii_digit()) {
            return None;
        }
        // leadingInt
        let mut v: u64 = 0;
        let mut i = 0;
        while i < s.len() && s[i].is_ascii_digit() {
            if v > LIMIT / 10 {
                return None;
            }
            v = v * 10 + (s[i] - b'0') as u64;
            if v > LIMIT {
                return None;
            }
            i += 1;
        }
        let pre = i > 0;
        s = &s[i..];
        let mut f: u64 = 0;
        let mut scale: f64 = 1.0;
        let mut post = false;
        if !s.is_empty() && s[0] == b'.' {
            s = &s[1..];
            // leadingFraction
            let mut i = 0;
            let mut overflow = false;
            while i < s.len() && s[i].is_ascii_digit() {
                if !overflow {
                    if f > (LIMIT - 1) / 10 {
                        overflow = true;
                    } else {
                        let y = f * 10 + (s[i] - b'0') as u64;
                        if y > LIMIT {
                            overflow = true;
                        } else {
                            f = y;
                            scale *= 10.0;
                        }
                    }
                }
                i += 1;
            }
            post = i > 0;
            s = &s[i..];
        }
        if !pre && !post {
            return None;
        }
        let mut i = 0;
        while i < s.len() && !(s[i] == b'.' || s[i].is_ascii_digit()) {
            i += 1;
        }
        if i == 0 {
            return None;
        }
        let unit: u64 = match &s[..i] {
            b"ns" => 1,
            b"us" | b"\xc2\xb5s" | b"\xce\xbcs" => 1_000,
            b"ms" => 1_000_000,
            b"s" => 1_000_000_000,
            b"m" => 60_000_000_000,
            b"h" => 3_600_000_000_000,
            _ => return None,
        };
        s = &s[i..];
        if v > LIMIT / unit {
            return None;
        }
        v *= unit;
        if f > 0 {
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > LIMIT {
                return None;
            }
        }
        d += v;
        if d > LIMIT {
            return None;
        }
    }
    if neg {
        return Some((d as i128).wrapping_neg() as i64);
    }
    if d > LIMIT - 1 {
        return None;
    }
    Some(d as i64)
}

/// cel-go's `string` of a duration: `strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"`.
fn duration_string(d: i64) -> String {
    let secs = (d / 1_000_000_000) as f64 + (d % 1_000_000_000) as f64 / 1e9;
    format!("{secs}s")
}

/// Go's `time.Parse(time.RFC3339, s)`: seconds since the epoch, nanoseconds and the offset
/// east of UTC in seconds.
pub fn parse_rfc3339(s: &str) -> Option<(i64, u32, i32)> {
    let b = s.as_bytes();
    if b.len() < 19 {
        return None;
    }
    let num = |r: std::ops::Range<usize>, lo: i64, hi: i64| -> Option<i64> {
        let part = &b[r];
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let v = std::str::from_utf8(part).ok()?.parse::<i64>().ok()?;
        (lo..=hi).contains(&v).then_some(v)
    };
    if !(b[4] == b'-' && b[7] == b'-' && b[10] == b'T' && b[13] == b':' && b[16] == b':') {
        return None;
    }
    let year = num(0..4, 0, 9999)?;
    let month = num(5..7, 1, 12)?;
    let day = num(8..10, 1, days_in(month, year))?;
    let hour = num(11..13, 0, 23)?;
    let min = num(14..16, 0, 59)?;
    let sec = num(17..19, 0, 59)?;
    let mut rest = &b[19..];
    let mut nanos: u32 = 0;
    if rest.len() >= 2 && (rest[0] == b'.' || rest[0] == b',') && rest[1].is_ascii_digit() {
        let mut n = 1;
        while n < rest.len() && rest[n].is_ascii_digit() {
            n += 1;
        }
        let digits = &rest[1..n];
        let mut v: u32 = 0;
        for i in 0..9 {
            v = v * 10 + digits.get(i).map_or(0, |d| (d - b'0') as u32);
        }
        nanos = v;
        rest = &rest[n..];
    }
    let offset: i64 = if rest == b"Z" {
        0
    } else {
        if rest.len() != 6 || !(rest[0] == b'-' || rest[0] == b'+') || rest[3] != b':' {
            return None;
        }
        let hr = std::str::from_utf8(&rest[1..3]).ok()?;
        let mm = std::str::from_utf8(&rest[4..6]).ok()?;
        if !hr.bytes().chain(mm.bytes()).all(|c| c.is_ascii_digit()) {
            return None;
        }
        let (hr, mm): (i64, i64) = (hr.parse().ok()?, mm.parse().ok()?);
        if hr > 23 || mm > 59 {
            return None;
        }
        let o = hr * 3600 + mm * 60;
        if rest[0] == b'-' { -o } else { o }
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + min * 60 + sec - offset;
    Some((secs, nanos, offset as i32))
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in(m: i64, y: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day since the epoch: (year, month 1-12, day 1-31).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Go's `Format(time.RFC3339Nano)` of a time in a zone `offset` seconds east of UTC.
fn timestamp_string(secs: i64, nanos: u32, offset: i32) -> Option<String> {
    let local = secs + offset as i64;
    let (y, m, d) = civil_from_days(local.div_euclid(86_400));
    if !(0..=9999).contains(&y) {
        return None;
    }
    let t = local.rem_euclid(86_400);
    let mut out = format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        t / 3600,
        t / 60 % 60,
        t % 60
    );
    if nanos > 0 {
        let f = format!("{nanos:09}");
        out.push('.');
        out.push_str(f.trim_end_matches('0'));
    }
    if offset == 0 {
        out.push('Z');
    } else {
        let o = offset.abs();
        if o % 60 != 0 {
            return None;
        }
        out.push_str(&format!(
            "{}{:02}:{:02}",
            if offset < 0 { '-' } else { '+' },
            o / 3600,
            o / 60 % 60
        ));
    }
    Some(out)
}

fn time_arith(add: bool, a: &Ext, b: &Ext) -> Called {
    const NANOS: i128 = 1_000_000_000;
    match (a, b) {
        (Ext::Duration(x), Ext::Duration(y)) => {
            let r = if add {
                x.checked_add(*y)
            } else {
                x.checked_sub(*y)
            };
            match r {
                Some(r) => ok(ext(Ext::Duration(r))),
                None => fail("integer overflow"),
            }
        }
        (
            Ext::Timestamp {
                secs,
                nanos,
                offset,
            },
            Ext::Duration(d),
        )
        | (
            Ext::Duration(d),
            Ext::Timestamp {
                secs,
                nanos,
                offset,
            },
        ) if add || matches!(a, Ext::Timestamp { .. }) => {
            let d = if add { *d as i128 } else { -(*d as i128) };
            let total = *secs as i128 * NANOS + *nanos as i128 + d;
            let s = total.div_euclid(NANOS);
            if s < MIN_UNIX as i128 || s > MAX_UNIX as i128 {
                return fail("timestamp overflow");
            }
            ok(ext(Ext::Timestamp {
                secs: s as i64,
                nanos: total.rem_euclid(NANOS) as u32,
                offset: *offset,
            }))
        }
        (
            Ext::Timestamp {
                secs: s1,
                nanos: n1,
                ..
            },
            Ext::Timestamp {
                secs: s2,
                nanos: n2,
                ..
            },
        ) if !add => {
            let diff = (*s1 as i128 - *s2 as i128) * NANOS + *n1 as i128 - *n2 as i128;
            match i64::try_from(diff) {
                Ok(d) => ok(ext(Ext::Duration(d))),
                Err(_) => fail("integer overflow"),
            }
        }
        _ => not_followed(),
    }
}

/// The timestamp and duration accessors (`getHours`, …): of a timestamp in UTC (the
/// environment's `DefaultUTCTimeZone`) or in the zone given (a `±HH:MM` offset; zone names are
/// not followed), of a duration its whole hours, minutes, seconds or milliseconds.
fn time_accessor(function: &str, t: &Ext, rest: &[Val]) -> Called {
    match (t, rest) {
        (Ext::Duration(d), []) => {
            let d = *d;
            ok(Val::Int(match function {
                "getHours" => d / 3_600_000_000_000,
                "getMinutes" => d / 60_000_000_000,
                "getSeconds" => d / 1_000_000_000,
                "getMilliseconds" => d / 1_000_000,
                _ => return not_followed(),
            }))
        }
        (Ext::Timestamp { secs, nanos, .. }, _) => {
            let offset = match rest {
                [] => 0,
                [Val::String(tz)] => match tz_offset(tz) {
                    Some(Ok(o)) => o,
                    Some(Err(m)) => return fail(m),
                    None => return not_followed(),
                },
                _ => return not_followed(),
            };
            let local = secs + offset;
            let days = local.div_euclid(86_400);
            let t = local.rem_euclid(86_400);
            let (y, m, d) = civil_from_days(days);
            ok(Val::Int(match function {
                "getFullYear" => y,
                "getMonth" => m - 1,
                "getDayOfYear" => days - days_from_civil(y, 1, 1),
                "getDate" => d,
                "getDayOfMonth" => d - 1,
                // 1970-01-01 was a Thursday (4).
                "getDayOfWeek" => (days + 4).rem_euclid(7),
                "getHours" => t / 3600,
                "getMinutes" => t / 60 % 60,
                "getSeconds" => t % 60,
                "getMilliseconds" => (*nanos / 1_000_000) as i64,
                _ => return not_followed(),
            }))
        }
        _ => not_followed(),
    }
}

/// cel-go's `timeZone`: a `[+-]HH:MM` offset (`strconv.Atoi` of each side of the colon);
/// `UTC` is the zero offset; other names (`time.LoadLocation`) are not followed.
fn tz_offset(tz: &str) -> Option<Result<i64, String>> {
    let Some(ind) = tz.find(':') else {
        return (tz == "UTC" || tz.is_empty()).then_some(Ok(0));
    };
    let atoi = |s: &str| -> Option<i64> {
        let d = s.strip_prefix(['+', '-']).unwrap_or(s);
        if d.is_empty() || !d.bytes().all(|b| b.is_ascii_digit()) || d.len() > 18 {
            return None;
        }
        s.strip_prefix('+').unwrap_or(s).parse().ok()
    };
    let (Some(hr), Some(min)) = (atoi(&tz[..ind]), atoi(&tz[ind + 1..])) else {
        // strconv.Atoi's error (`strconv.Atoi: parsing "x": invalid syntax`): not followed.
        return None;
    };
    let offset = if tz.starts_with('-') {
        hr * 60 - min
    } else {
        hr * 60 + min
    };
    Some(Ok(offset * 60))
}

// --- strings ------------------------------------------------------------------------------------

fn index_of(lib: Lib, s: &str, sub: &str, offset: i64) -> Called {
    if sub.is_empty() {
        return ok(Val::Int(offset));
    }
    let runes: Vec<char> = s.chars().collect();
    let subrunes: Vec<char> = sub.chars().collect();
    if offset < 0 || (lib.cel_go < 22 && offset as usize >= runes.len()) {
        return fail(format!("index out of range: {offset}"));
    }
    let off = offset as usize;
    if off >= runes.len() {
        return ok(Val::Int(-1));
    }
    let last = runes.len() as i64 - (subrunes.len() as i64 - 1);
    let mut i = off as i64;
    while i < last {
        let iu = i as usize;
        if runes[iu..iu + subrunes.len()] == subrunes[..] {
            return ok(Val::Int(i));
        }
        i += 1;
    }
    ok(Val::Int(-1))
}

fn last_index_of(lib: Lib, s: &str, sub: &str, offset: i64) -> Called {
    if sub.is_empty() {
        return ok(Val::Int(offset));
    }
    let runes: Vec<char> = s.chars().collect();
    let subrunes: Vec<char> = sub.chars().collect();
    if offset < 0 || (lib.cel_go < 22 && offset as usize >= runes.len()) {
        return fail(format!("index out of range: {offset}"));
    }
    if offset as usize >= runes.len() {
        return ok(Val::Int(-1));
    }
    let mut off = offset;
    let max = runes.len() as i64 - subrunes.len() as i64;
    if off > max {
        off = max;
    }
    let mut i = off;
    while i >= 0 {
        let iu = i as usize;
        if runes[iu..iu + subrunes.len()] == subrunes[..] {
            return ok(Val::Int(i));
        }
        i -= 1;
    }
    ok(Val::Int(-1))
}

/// Go's `strings.Replace(s, old, new, n)` (`n < 0`: every one).
fn go_replace(s: &str, old: &str, new: &str, n: i64) -> String {
    if n == 0 || old == new && !old.is_empty() {
        return s.to_string();
    }
    if old.is_empty() {
        // Before every character and at the end, up to n times.
        let mut out = String::new();
        let mut done = 0i64;
        for c in s.chars() {
            if n < 0 || done < n {
                out.push_str(new);
                done += 1;
            }
            out.push(c);
        }
        if n < 0 || done < n {
            out.push_str(new);
        }
        return out;
    }
    if n < 0 {
        return s.replace(old, new);
    }
    s.replacen(old, new, n as usize)
}

/// Go's `strings.SplitN(s, sep, n)` (`n < 0`: all; `n == 0`: none).
fn go_split(s: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<char> = s.chars().collect();
        let k = if n < 0 || n as usize > chars.len() {
            chars.len()
        } else {
            n as usize
        };
        let mut out: Vec<String> = chars[..k.saturating_sub(1).min(chars.len())]
            .iter()
            .map(|c| c.to_string())
            .collect();
        if k > 0 {
            out.push(chars[k - 1..].iter().collect());
        }
        if chars.is_empty() {
            return Vec::new();
        }
        return out;
    }
    if n < 0 {
        return s.split(sep).map(str::to_string).collect();
    }
    s.splitn(n as usize, sep).map(str::to_string).collect()
}

fn join(l: &[Val], sep: &str) -> Called {
    let mut out = String::new();
    for (i, x) in l.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        match x {
            Val::String(s) => out.push_str(s),
            _ => return not_followed(),
        }
    }
    ok(Val::String(out))
}

/// `strings.quote`.
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

// --- lists ---------------------------------------------------------------------------------------

fn sets_contains(a: &[Val], b: &[Val]) -> Called {
    for y in b {
        let mut found = false;
        for x in a {
            if equal(x, y).ok_or(NotFollowed)? {
                found = true;
                break;
            }
        }
        if !found {
            return ok(Val::Bool(false));
        }
    }
    ok(Val::Bool(true))
}

fn flatten(l: &[Val], depth: i64) -> Called {
    let mut out = Vec::new();
    for x in l {
        match x {
            Val::List(inner) if depth > 0 => match flatten(inner, depth - 1)? {
                Ok(Val::List(f)) => out.extend(f),
                other => return Ok(other),
            },
            _ => out.push(x.clone()),
        }
    }
    ok(Val::List(out))
}

/// The order `sort` puts elements of one comparable type in (stable, as Go's `sort.SliceStable`
/// in `ext/lists.go`).
fn sorted_order(l: &[Val]) -> Result<Result<Vec<usize>, Failure>, NotFollowed> {
    if let Some(first) = l.first() {
        let kind = std::mem::discriminant(first);
        for x in l {
            // Mixed element types (a `dyn` list): cel-go's error is not followed.
            if std::mem::discriminant(x) != kind {
                return Err(NotFollowed);
            }
            if matches!(x, Val::Double(d) if d.is_nan()) {
                return Err(NotFollowed);
            }
            if compare(first, x).is_none() {
                return Err(NotFollowed);
            }
        }
    }
    let mut idx: Vec<usize> = (0..l.len()).collect();
    idx.sort_by(|&i, &j| compare(&l[i], &l[j]).unwrap_or(Ordering::Equal));
    Ok(Ok(idx))
}

fn sort(l: &[Val]) -> Called {
    match sorted_order(l)? {
        Ok(o) => ok(Val::List(o.into_iter().map(|i| l[i].clone()).collect())),
        Err(f) => Ok(Err(f)),
    }
}

fn sum(l: &[Val]) -> Called {
    use Val::*;
    let Some(first) = l.first() else {
        // The zero of the element type, which only the checked type tells.
        return not_followed();
    };
    let mut acc = first.clone();
    for x in &l[1..] {
        acc = match (&acc, x) {
            (Int(a), Int(b)) => match a.checked_add(*b) {
                Some(s) => Int(s),
                None => return fail("integer overflow"),
            },
            (Uint(a), Uint(b)) => match a.checked_add(*b) {
                Some(s) => Uint(s),
                None => return fail("unsigned integer overflow"),
            },
            (Double(a), Double(b)) => Double(a + b),
            (Ext(a), Ext(b)) => match time_arith(true, a, b)? {
                Ok(v) => v,
                Err(f) => return Ok(Err(f)),
            },
            _ => return not_followed(),
        };
    }
    ok(acc)
}

// --- quantities ------------------------------------------------------------------------------

/// A `resource.Quantity` as its arithmetic holds it: an `int64Amount` (`value × 10^scale`) or
/// an `inf.Dec` (`unscaled × 10^-scale`).
#[derive(Clone, Debug, PartialEq)]
pub enum Quantity {
    Int { value: i64, scale: i32 },
    Dec { unscaled: BigInt, scale: i32 },
}

const QUANTITY_FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

impl Quantity {
    /// `resource.ParseQuantity`.
    pub fn parse(str: &str) -> Result<Quantity, String> {
        let wrong = || Err(QUANTITY_FORMAT_WRONG.to_string());
        if str.is_empty() {
            return wrong();
        }
        if str == "0" {
            return Ok(Quantity::Int { value: 0, scale: 0 });
        }
        let b = str.as_bytes();
        let end = b.len();
        let mut positive = true;
        let mut pos = 0;
        match b[0] {
            b'-' => {
                positive = false;
                pos += 1;
            }
            b'+' => pos += 1,
            _ => {}
        }
        // Leading zeros.
        while pos < end && b[pos] == b'0' {
            pos += 1;
        }
        let (value_end, num, denom, suffix);
        if pos >= end {
            // All zeros: "0".
            return Ok(Quantity::Int { value: 0, scale: 0 });
        }
        let num_start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        let mut n = &str[num_start..pos];
        if pos >= end {
            num = n.to_string();
            denom = String::new();
            suffix = String::new();
            value_end = end;
        } else {
            if n.is_empty() {
                n = "0";
            }
            num = n.to_string();
            let mut d = String::new();
            let mut whole = false;
            if b[pos] == b'.' {
                pos += 1;
                let ds = pos;
                while pos < end && b[pos].is_ascii_digit() {
                    pos += 1;
                }
                d = str[ds..pos].to_string();
                whole = pos >= end;
            }
            denom = d;
            value_end = pos;
            if whole {
                suffix = String::new();
            } else {
                let suffix_start = pos;
                while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
                    pos += 1;
                }
                if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
                    pos += 1;
                }
                while pos < end && b[pos].is_ascii_digit() {
                    pos += 1;
                }
                if pos < end {
                    return wrong();
                }
                suffix = str[suffix_start..].to_string();
            }
        }
        let Some((base, exponent, binary)) = interpret_suffix(&suffix) else {
            return Err("unable to parse quantity's suffix".into());
        };
        let value_text = &str[..value_end];
        // The exact value: sign × (num.denom) × base^exponent, then rounded up (away from zero)
        // to 10^-9, binary ones capped at 2^63-1 — the fast path gives the same value.
        let mut precision: i32;
        let mut scale: i32 = 0;
        let mut mantissa: i64 = 1;
        if !binary {
            scale = exponent;
            precision = 18 - (num.len() + denom.len()) as i32;
        } else if exponent >= 0 && denom.is_empty() {
            mantissa <<= exponent as u32;
            precision = 15 - num.len() as i32 - ((exponent as f32) * 3.0 / 10.0) as i32 - 1;
        } else {
            precision = -1;
        }
        if precision >= 0 {
            scale -= denom.len() as i32;
            if scale >= -9 {
                let shifted = format!("{num}{denom}");
                let Ok(value) = shifted.parse::<i64>() else {
                    return Err("unable to parse numeric part of quantity".into());
                };
                if let Some(result) = int64_multiply(value, mantissa) {
                    let result = if positive { result } else { -result };
                    return Ok(Quantity::Int {
                        value: result,
                        scale,
                    });
                }
            }
            precision = -1;
        }
        let _ = precision;
        // inf.Dec's SetString of the numeric part.
        let (unscaled, dscale) =
            parse_dec(value_text).ok_or("unable to parse numeric part of quantity")?;
        let mut unscaled = unscaled;
        let mut dscale = dscale;
        if base == 10 {
            dscale -= exponent;
        } else {
            unscaled *= BigInt::from(1u8) << (exponent as usize);
        }
        let neg = unscaled.is_negative();
        let mut amount = unscaled.abs();
        if !amount.is_zero() {
            // Round to scale 9, up.
            if dscale > 9 {
                let div = BigInt::from(10u8).pow((dscale - 9) as u32);
                let (q, r) = (&amount / &div, &amount % &div);
                amount = if r.is_zero() { q } else { q + 1 };
            } else {
                amount *= BigInt::from(10u8).pow((9 - dscale) as u32);
            }
            dscale = 9;
        }
        if binary {
            let max = BigInt::from(i64::MAX) * BigInt::from(10u8).pow(dscale.max(0) as u32);
            if dscale >= 0 && amount > max {
                amount = max;
            }
        }
        if neg {
            amount = -amount;
        }
        Ok(Quantity::Dec {
            unscaled: amount,
            scale: dscale,
        })
    }

    /// The exact value as `unscaled × 10^-scale`.
    fn as_dec(&self) -> (BigInt, i32) {
        match self {
            Quantity::Int { value, scale } => (BigInt::from(*value), -scale),
            Quantity::Dec { unscaled, scale } => (unscaled.clone(), *scale),
        }
    }

    pub fn cmp_value(&self, other: &Quantity) -> Ordering {
        let (a, sa) = self.as_dec();
        let (b, sb) = other.as_dec();
        let s = sa.max(sb);
        let a = a * BigInt::from(10u8).pow((s - sa) as u32);
        let b = b * BigInt::from(10u8).pow((s - sb) as u32);
        a.cmp(&b)
    }

    pub fn sign(&self) -> i32 {
        match self {
            Quantity::Int { value, .. } => value.signum() as i32,
            Quantity::Dec { unscaled, .. } => {
                if unscaled.is_zero() {
                    0
                } else if unscaled.is_negative() {
                    -1
                } else {
                    1
                }
            }
        }
    }

    fn neg(&self) -> Quantity {
        match self {
            Quantity::Int { value, scale } => Quantity::Int {
                value: value.wrapping_neg(),
                scale: *scale,
            },
            Quantity::Dec { unscaled, scale } => Quantity::Dec {
                unscaled: -unscaled,
                scale: *scale,
            },
        }
    }

    /// `Quantity.Add` (`int64Amount.Add`, else `inf.Dec.Add`).
    fn add(&self, y: &Quantity) -> Quantity {
        if let (
            Quantity::Int {
                value: a,
                scale: sa,
            },
            Quantity::Int {
                value: b,
                scale: sb,
            },
        ) = (self, y)
            && let Some(r) = int64_amount_add(*a, *sa, *b, *sb)
        {
            return r;
        }
        let (a, sa) = self.as_dec();
        let (b, sb) = y.as_dec();
        let s = sa.max(sb);
        let a = a * BigInt::from(10u8).pow((s - sa) as u32);
        let b = b * BigInt::from(10u8).pow((s - sb) as u32);
        Quantity::Dec {
            unscaled: a + b,
            scale: s,
        }
    }

    /// `Quantity.AsInt64`.
    pub fn as_int64(&self) -> Option<i64> {
        match self {
            Quantity::Dec { .. } => None,
            Quantity::Int { value, scale } => match *scale {
                0 => Some(*value),
                s if s < 0 => None,
                s => positive_scale(*value, s),
            },
        }
    }

    /// `Quantity.AsApproximateFloat64`.
    pub fn as_approximate_float64(&self) -> f64 {
        let (base, exponent) = match self {
            Quantity::Dec { unscaled, scale } => (unscaled.to_f64().unwrap_or(f64::NAN), -scale),
            Quantity::Int { value, scale } => (*value as f64, *scale),
        };
        if exponent == 0 {
            return base;
        }
        base * go_pow10(exponent)
    }
}

/// `quantitySuffixer.interpret`: (base, exponent, binary).
fn interpret_suffix(s: &str) -> Option<(u32, i32, bool)> {
    Some(match s {
        "" => (10, 0, false),
        "n" => (10, -9, false),
        "u" => (10, -6, false),
        "m" => (10, -3, false),
        "k" => (10, 3, false),
        "M" => (10, 6, false),
        "G" => (10, 9, false),
        "T" => (10, 12, false),
        "P" => (10, 15, false),
        "E" => (10, 18, false),
        "Ki" => (2, 10, true),
        "Mi" => (2, 20, true),
        "Gi" => (2, 30, true),
        "Ti" => (2, 40, true),
        "Pi" => (2, 50, true),
        "Ei" => (2, 60, true),
        _ => {
            let rest = s.strip_prefix(['e', 'E'])?;
            let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let e: i32 = rest.strip_prefix('+').unwrap_or(rest).parse().ok()?;
            (10, e, false)
        }
    })
}

/// `inf.Dec.SetString` of `[+-]?digits[.digits]`: (unscaled, scale).
fn parse_dec(s: &str) -> Option<(BigInt, i32)> {
    let (neg, t) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let digits = format!("{int}{frac}");
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut v: BigInt = digits.parse().ok()?;
    if neg {
        v = -v;
    }
    Some((v, frac.len() as i32))
}

fn int64_multiply(a: i64, b: i64) -> Option<i64> {
    if a == 0 || b == 0 || a == 1 || b == 1 {
        return Some(a.wrapping_mul(b));
    }
    if a == i64::MIN || b == i64::MIN {
        return None;
    }
    a.checked_mul(b)
}

fn positive_scale(base: i64, scale: i32) -> Option<i64> {
    let mut v = base;
    for _ in 0..scale {
        v = if v == 0 || v == 1 {
            v * 10
        } else if v == i64::MIN {
            return None;
        } else {
            v.checked_mul(10)?
        };
    }
    Some(v)
}

/// `int64Amount.Add`: `None` where it overflows (the caller goes to `inf.Dec`).
fn int64_amount_add(a: i64, sa: i32, b: i64, sb: i32) -> Option<Quantity> {
    let (value, scale) = if b == 0 {
        (a, sa)
    } else if a == 0 {
        (b, sb)
    } else if sa == sb {
        (int64_add(a, b)?, sa)
    } else if sa > sb {
        (int64_add(positive_scale(a, sa - sb)?, b)?, sb)
    } else {
        (int64_add(a, positive_scale(b, sb - sa)?)?, sa)
    };
    Some(Quantity::Int { value, scale })
}

fn int64_add(a: i64, b: i64) -> Option<i64> {
    a.checked_add(b)
}

/// Go's `math.Pow10`.
fn go_pow10(n: i32) -> f64 {
    const TAB: [f64; 32] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31,
    ];
    const POS32: [f64; 10] = [
        1e0, 1e32, 1e64, 1e96, 1e128, 1e160, 1e192, 1e224, 1e256, 1e288,
    ];
    const NEG32: [f64; 11] = [
        1e-0, 1e-32, 1e-64, 1e-96, 1e-128, 1e-160, 1e-192, 1e-224, 1e-256, 1e-288, 1e-320,
    ];
    if (0..=308).contains(&n) {
        return POS32[n as usize / 32] * TAB[n as usize % 32];
    }
    if (-323..=0).contains(&n) {
        let m = (-n) as usize;
        return NEG32[m / 32] / TAB[m % 32];
    }
    if n > 0 { f64::INFINITY } else { 0.0 }
}

// --- IPs and CIDRs ----------------------------------------------------------------------------

/// Go's `netip.ParseAddr` (Go 1.22 to 1.26 alike): the address and whether it has an IPv6
/// zone, or Go's error text (`ParseAddr("1.2.3"): IPv4 address too short`).
fn go_parse_addr(s: &str) -> Result<(IpAddr, bool), String> {
    let err = |msg: &str, at: Option<&[u8]>| match at {
        Some(at) if !at.is_empty() => format!(
            "ParseAddr({}): {msg} (at {})",
            go_quote(s),
            crate::cel::gofmt::go_quote_bytes(at)
        ),
        _ => format!("ParseAddr({}): {msg}", go_quote(s)),
    };
    for &c in s.as_bytes() {
        match c {
            b'.' => {
                return go_parse_ipv4(s.as_bytes())
                    .map(|o| (IpAddr::V4(o.into()), false))
                    .map_err(|(m, at)| err(&m, at));
            }
            b':' => return go_parse_ipv6(s).map_err(|(m, at)| err(&m, at.as_deref())),
            b'%' => return Err(err("missing IPv6 address", None)),
            _ => {}
        }
    }
    Err(err("unable to parse IP", None))
}

/// `parseIPv4`: the octets, or (message, the rest at the error).
fn go_parse_ipv4(s: &[u8]) -> Result<[u8; 4], (String, Option<&[u8]>)> {
    let mut fields = [0u8; 4];
    let (mut val, mut pos, mut dig_len) = (0u32, 0usize, 0usize);
    for i in 0..s.len() {
        let c = s[i];
        if c.is_ascii_digit() {
            if dig_len == 1 && val == 0 {
                return Err(("IPv4 field has octet with leading zero".into(), None));
            }
            val = val * 10 + (c - b'0') as u32;
            dig_len += 1;
            if val > 255 {
                return Err(("IPv4 field has value >255".into(), None));
            }
        } else if c == b'.' {
            if i == 0 || i == s.len() - 1 || s[i - 1] == b'.' {
                return Err((
                    "IPv4 field must have at least one digit".into(),
                    Some(&s[i..]),
                ));
            }
            if pos == 3 {
                return Err(("IPv4 address too long".into(), None));
            }
            fields[pos] = val as u8;
            pos += 1;
            val = 0;
            dig_len = 0;
        } else {
            return Err(("unexpected character".into(), Some(&s[i..])));
        }
    }
    if pos < 3 {
        return Err(("IPv4 address too short".into(), None));
    }
    fields[3] = val as u8;
    Ok(fields)
}

/// `parseIPv6`: the address and whether it has a zone, or (message, the rest at the error).
/// A parse error: its message, and the rest of the input where it was met.
type ParseAddrError = (String, Option<Vec<u8>>);

fn go_parse_ipv6(input: &str) -> Result<(IpAddr, bool), ParseAddrError> {
    let mut s = input.as_bytes();
    let mut zone = false;
    if let Some(i) = s.iter().position(|c| *c == b'%') {
        if i + 1 == s.len() {
            return Err(("zone must be a non-empty string".into(), None));
        }
        zone = true;
        s = &s[..i];
    }
    let mut ip = [0u8; 16];
    let mut ellipsis: i64 = -1;
    if s.len() >= 2 && s[0] == b':' && s[1] == b':' {
        ellipsis = 0;
        s = &s[2..];
        if s.is_empty() {
            return Ok((IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED), zone));
        }
    }
    let at = |r: &[u8]| Some(r.to_vec());
    let mut i = 0usize;
    while i < 16 {
        let mut off = 0;
        let mut acc: u32 = 0;
        while off < s.len() {
            let c = s[off];
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => break,
            };
            acc = (acc << 4) + d as u32;
            if acc > 0xffff {
                return Err(("IPv6 field has value >=2^16".into(), at(s)));
            }
            off += 1;
        }
        if off == 0 {
            return Err((
                "each colon-separated field must have at least one digit".into(),
                at(s),
            ));
        }
        if off < s.len() && s[off] == b'.' {
            if ellipsis < 0 && i != 12 {
                return Err((
                    "embedded IPv4 address must replace the final 2 fields of the address".into(),
                    at(s),
                ));
            }
            if i + 4 > 16 {
                return Err((
                    "too many hex fields to fit an embedded IPv4 at the end of the address".into(),
                    at(s),
                ));
            }
            let v4 = match go_parse_ipv4(s) {
                Ok(v4) => v4,
                Err((m, a)) => {
                    let inner = match a {
                        Some(a) if !a.is_empty() => format!(
                            "ParseAddr({}): {m} (at {})",
                            crate::cel::gofmt::go_quote_bytes(s),
                            crate::cel::gofmt::go_quote_bytes(a)
                        ),
                        _ => format!("ParseAddr({}): {m}", crate::cel::gofmt::go_quote_bytes(s)),
                    };
                    return Err((inner, at(s)));
                }
            };
            ip[i..i + 4].copy_from_slice(&v4);
            s = &[];
            i += 4;
            break;
        }
        ip[i] = (acc >> 8) as u8;
        ip[i + 1] = acc as u8;
        i += 2;
        s = &s[off..];
        if s.is_empty() {
            break;
        }
        if s[0] != b':' {
            return Err(("unexpected character, want colon".into(), at(s)));
        } else if s.len() == 1 {
            return Err(("colon must be followed by more characters".into(), at(s)));
        }
        s = &s[1..];
        if s[0] == b':' {
            if ellipsis >= 0 {
                return Err(("multiple :: in address".into(), at(s)));
            }
            ellipsis = i as i64;
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return Err(("trailing garbage after address".into(), at(s)));
    }
    if i < 16 {
        if ellipsis < 0 {
            return Err(("address string too short".into(), None));
        }
        let e = ellipsis as usize;
        let n = 16 - i;
        for j in (e..i).rev() {
            ip[j + n] = ip[j];
        }
        for b in ip.iter_mut().skip(e).take(n) {
            *b = 0;
        }
    } else if ellipsis >= 0 {
        return Err((
            "the :: must expand to at least one field of zeros".into(),
            None,
        ));
    }
    Ok((IpAddr::V6(ip.into()), zone))
}

/// The IP library's `parseIPAddr`: Go's `netip.ParseAddr`, no zone, no IPv4-mapped IPv6
/// address.
fn parse_ip_addr(raw: &str) -> Result<IpAddr, Option<String>> {
    match go_parse_addr(raw) {
        Err(e) => Err(Some(format!(
            "IP Address {} parse error during conversion from string: {e}",
            go_quote(raw)
        ))),
        Ok((_, true)) => Err(Some(format!(
            "IP address {} with zone value is not allowed",
            go_quote(raw)
        ))),
        Ok((IpAddr::V6(a), _)) if a.to_ipv4_mapped().is_some() => Err(Some(format!(
            "IPv4-mapped IPv6 address {} is not allowed",
            go_quote(raw)
        ))),
        Ok((a, _)) => Ok(a),
    }
}

/// `netip.ParsePrefix` and the CIDR library's checks: (address, bits).
fn parse_cidr(raw: &str) -> Result<(IpAddr, u8), Option<String>> {
    let prefix_err = |m: &str| Err(Some(format!("netip.ParsePrefix({}): {m}", go_quote(raw))));
    let Some(i) = raw.rfind('/') else {
        return prefix_err("no '/'");
    };
    let (addr, bits) = (&raw[..i], &raw[i + 1..]);
    let (a, zone) = match go_parse_addr(addr) {
        Ok(x) => x,
        Err(e) => return prefix_err(&e),
    };
    if zone {
        return prefix_err("IPv6 zones cannot be present in a prefix");
    }
    // `strconv.Atoi` takes a sign and leading zeros, ParsePrefix neither.
    let bad_bits = || prefix_err(&format!("bad bits after slash: {}", go_quote(bits)));
    if bits.len() > 1 && !(b'1'..=b'9').contains(&bits.as_bytes()[0]) {
        return bad_bits();
    }
    let Some(n) = bits
        .bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| bits.parse::<i64>().ok())
        .flatten()
    else {
        return bad_bits();
    };
    let max = if a.is_ipv4() { 32 } else { 128 };
    if n > max {
        return prefix_err("prefix length out of range");
    }
    if let IpAddr::V6(v6) = a
        && v6.to_ipv4_mapped().is_some()
    {
        return Err(Some(format!(
            "IPv4-mapped IPv6 address {} is not allowed",
            go_quote(raw)
        )));
    }
    Ok((a, n as u8))
}

/// Go's `netip.Addr.String`.
fn go_ip_string(a: &IpAddr) -> String {
    a.to_string()
}

fn mask(a: &IpAddr, bits: u8) -> IpAddr {
    match a {
        IpAddr::V4(v4) => {
            let x = u32::from(*v4);
            let m = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits as u32)
            };
            IpAddr::V4((x & m).into())
        }
        IpAddr::V6(v6) => {
            let x = u128::from(*v6);
            let m = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits as u32)
            };
            IpAddr::V6((x & m).into())
        }
    }
}

/// `netip.Prefix.Contains`.
fn prefix_contains(a: &IpAddr, bits: u8, ip: &IpAddr) -> bool {
    a.is_ipv4() == ip.is_ipv4() && mask(a, bits) == mask(ip, bits)
}

fn is_link_local_multicast(a: &IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

fn is_link_local_unicast(a: &IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => v4.octets()[..2] == [169, 254],
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

/// `netip.Addr.IsGlobalUnicast`.
fn is_global_unicast(a: &IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => {
            !(v4.is_unspecified()
                || *v4 == std::net::Ipv4Addr::BROADCAST
                || v4.is_loopback()
                || v4.is_multicast()
                || is_link_local_unicast(a))
        }
        IpAddr::V6(v6) => {
            !(v6.is_unspecified()
                || v6.is_loopback()
                || v6.is_multicast()
                || is_link_local_unicast(a))
        }
    }
}

// --- semvers ------------------------------------------------------------------------------------

/// A `blang/semver/v4` version.
#[derive(Clone, Debug, PartialEq)]
pub struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    /// Prerelease parts: a number, or an alphanumeric string.
    pre: Vec<Result<u64, String>>,
}

const NUMBERS: &str = "0123456789";
const ALPHANUM: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789";

fn contains_only(s: &str, set: &str) -> bool {
    s.chars().all(|c| set.contains(c))
}

fn has_leading_zeroes(s: &str) -> bool {
    s.len() > 1 && s.starts_with('0')
}

/// Go's `strconv.ParseUint(s, 10, 64)` error text.
fn parse_uint_error(s: &str) -> String {
    let kind = if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        "invalid syntax"
    } else {
        "value out of range"
    };
    format!("strconv.ParseUint: parsing {}: {kind}", go_quote(s))
}

impl Semver {
    /// `semver.Parse`.
    pub fn parse(s: &str) -> Result<Semver, String> {
        if s.is_empty() {
            return Err("Version string empty".into());
        }
        let parts: Vec<&str> = s.splitn(3, '.').collect();
        if parts.len() != 3 {
            return Err("No Major.Minor.Patch elements found".into());
        }
        let number = |p: &str, what: &str, cap: &str| -> Result<u64, String> {
            if !contains_only(p, NUMBERS) {
                return Err(format!(
                    "Invalid character(s) found in {what} number {}",
                    go_quote(p)
                ));
            }
            if has_leading_zeroes(p) {
                return Err(format!(
                    "{cap} number must not contain leading zeroes {}",
                    go_quote(p)
                ));
            }
            p.parse::<u64>().map_err(|_| parse_uint_error(p))
        };
        let major = number(parts[0], "major", "Major")?;
        let minor = number(parts[1], "minor", "Minor")?;
        let mut patch_str = parts[2];
        let mut build: Vec<&str> = Vec::new();
        if let Some(i) = patch_str.find('+') {
            build = patch_str[i + 1..].split('.').collect();
            patch_str = &patch_str[..i];
        }
        let mut prerelease: Vec<&str> = Vec::new();
        if let Some(i) = patch_str.find('-') {
            prerelease = patch_str[i + 1..].split('.').collect();
            patch_str = &patch_str[..i];
        }
        let patch = number(patch_str, "patch", "Patch")?;
        let mut pre = Vec::new();
        for p in prerelease {
            if p.is_empty() {
                return Err("Prerelease is empty".into());
            }
            if contains_only(p, NUMBERS) {
                if has_leading_zeroes(p) {
                    return Err(format!(
                        "Numeric PreRelease version must not contain leading zeroes {}",
                        go_quote(p)
                    ));
                }
                pre.push(Ok(p.parse::<u64>().map_err(|_| parse_uint_error(p))?));
            } else if contains_only(p, ALPHANUM) {
                pre.push(Err(p.to_string()));
            } else {
                return Err(format!(
                    "Invalid character(s) found in prerelease {}",
                    go_quote(p)
                ));
            }
        }
        for b in build {
            if b.is_empty() {
                return Err("Build meta data is empty".into());
            }
            if !contains_only(b, ALPHANUM) {
                return Err(format!(
                    "Invalid character(s) found in build meta data {}",
                    go_quote(b)
                ));
            }
        }
        Ok(Semver {
            major,
            minor,
            patch,
            pre,
        })
    }

    /// `normalizeAndParse`.
    pub fn normalize_and_parse(s: &str) -> Result<Semver, String> {
        let s = s.strip_prefix('v').unwrap_or(s);
        let mut parts: Vec<String> = s.splitn(3, '.').map(str::to_string).collect();
        for p in parts.iter_mut() {
            if p.len() > 1 {
                let mut t = p.trim_start_matches('0').to_string();
                if t.is_empty() || !t.as_bytes()[0].is_ascii_digit() {
                    t = format!("0{t}");
                }
                *p = t;
            }
        }
        if parts.len() < 3 {
            if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
                return Err("short version cannot contain PreRelease/Build meta data".into());
            }
            while parts.len() < 3 {
                parts.push("0".into());
            }
        }
        Semver::parse(&parts.join("."))
    }

    /// `Version.Compare`.
    pub fn compare(&self, o: &Semver) -> Ordering {
        let c = (self.major, self.minor, self.patch).cmp(&(o.major, o.minor, o.patch));
        if c != Ordering::Equal {
            return c;
        }
        match (self.pre.is_empty(), o.pre.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            _ => {}
        }
        for (a, b) in self.pre.iter().zip(&o.pre) {
            let c = match (a, b) {
                (Ok(x), Ok(y)) => x.cmp(y),
                (Ok(_), Err(_)) => Ordering::Less,
                (Err(_), Ok(_)) => Ordering::Greater,
                (Err(x), Err(y)) => x.cmp(y),
            };
            if c != Ordering::Equal {
                return c;
            }
        }
        self.pre.len().cmp(&o.pre.len())
    }
}

// --- named formats --------------------------------------------------------------------------

const FORMAT_NAMES: &[&str] = &[
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

fn named_format(name: &str) -> Option<&'static str> {
    FORMAT_NAMES.iter().find(|n| **n == name).copied()
}

const DNS1123_LABEL: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035_LABEL: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";

fn full_match(fmt: &str, s: &str) -> bool {
    crate::goregexp::is_match(&format!("^{fmt}$"), s).unwrap_or(false)
}

/// `RegexError`.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let ex: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{fmt}')",
        ex.join(" or ")
    )
}

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

fn dns1123_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !full_match(DNS1123_LABEL, s) {
        if full_match(DNS1123_SUBDOMAIN, s) {
            errs.push("must not contain dots".into());
        } else {
            errs.push(regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
                DNS1123_LABEL,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !full_match(DNS1123_SUBDOMAIN, s) {
        errs.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            DNS1123_SUBDOMAIN,
            &["example.com"],
        ));
    }
    errs
}

fn dns1035_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !full_match(DNS1035_LABEL, s) {
        errs.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            DNS1035_LABEL,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

const LABEL_KEY: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// `IsQualifiedName` (apimachinery `content.IsLabelKey`, v0.36).
fn qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR, LABEL_KEY, &["MyName", "my.name", "123-abc"])
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".into());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63)));
    }
    if !full_match(LABEL_KEY, name) {
        errs.push(format!(
            "name part {}",
            regex_error(LABEL_KEY_ERR, LABEL_KEY, &["MyName", "my.name", "123-abc"])
        ));
    }
    errs
}

/// `IsValidLabelValue` (apimachinery `content.IsLabelValue`, v0.36).
fn label_value(value: &str) -> Vec<String> {
    let fmt = format!("({LABEL_KEY})?");
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !full_match(&fmt, value) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            &fmt,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `maskTrailingDash` of the `NameIs…(s, prefix=true)` validations.
fn mask_trailing_dash(s: &str) -> String {
    if s.len() > 1 && s.ends_with('-') {
        format!("{}a", &s[..s.len() - 1])
    } else {
        s.to_string()
    }
}

/// A named format's `validate`: its errors (none when valid), `None` where celcost does not
/// follow it (the URI validation's `url.ParseRequestURI` errors; `uuid`, `byte`, `date` and
/// `datetime`, whose `strfmt` checks live in the objects layer).
fn validate_format(name: &str, s: &str) -> Option<Vec<String>> {
    Some(match name {
        "dns1123Label" => dns1123_label(s),
        "dns1123LabelPrefix" => dns1123_label(&mask_trailing_dash(s)),
        "dns1123Subdomain" => dns1123_subdomain(s),
        "dns1123SubdomainPrefix" => dns1123_subdomain(&mask_trailing_dash(s)),
        "dns1035Label" => dns1035_label(s),
        "dns1035LabelPrefix" => dns1035_label(&mask_trailing_dash(s)),
        "qualifiedName" => qualified_name(s),
        "labelValue" => label_value(s),
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
