//! cel-go's `<string>.format(<list>)` (the strings extension from version 1, as every minor here
//! installs it: `ext.Strings(ext.StringsVersion(2))`), on [`Val`]s: `ext/formatting.go` of
//! cel-go v0.20.1 to v0.26.0 (`parseFormatString`, `stringFormatter`), the same code as v0.17.8's
//! `interpreter/formatting.go` and `ext/strings.go` (Kubernetes 1.30).
//!
//! A clause is `%` with an optional `.precision` and one verb; `%%` is a `%`. The verbs:
//! - `%s`: strings as they are; ints and uints in decimal; doubles as Go's `%g` (`1e+06`,
//!   `+Inf`); bools, `null`; bytes as their text; lists `[a, b]` and maps `{k:v, k:v}` (sorted by
//!   the shown key) with strings quoted (Go's `%q`), bytes as `b"…"`, doubles as Go's `%.6f`;
//! - `%d` ints and uints; `%b` ints, uints and bools (`1`, `0`); `%o` ints and uints; `%x` and
//!   `%X` ints, uints (Go's sign and magnitude: `-1e`), strings and bytes (hex of each byte);
//! - `%f` doubles, and the strings `NaN`, `Infinity`, `-Infinity`, through
//!   `golang.org/x/text/message` in `en_US` (its decimal pattern `#,##0.###` unchanged from
//!   x/text v0.14 to v0.33): the integer part grouped by `,`, the fraction rounded half to even
//!   at the precision (6 when none), `NaN`, `∞`, `-∞`; a negative number keeps its `-` when it
//!   rounds to zero. The printer's minimum of fraction digits is a `uint8`: above 255 the
//!   significant digits are shown and the zeros up to the precision modulo 256 (`%.300f` of `1`
//!   shows 44 zeros, as the API server does).
//!
//! Not followed (the caller leaves the expression unevaluated): `%e` (x/text's scientific
//! notation, `1.052033×10⁰³`, changed between the x/text versions the minors vendor, and
//! ignores the precision), a precision over 1,100, values the interpreter does not hold as cel-go
//! (optionals, URLs), map keys shown alike (their order is Go's map order). Bytes that are not
//! UTF-8 under `%s` are an error cel-go words with the conversion's error value; celcost knows it
//! fails but not how it is worded ([`FormatError::Unworded`]).

use super::Val;
use crate::cel::gofmt::{go_float, go_quote};

/// Why `format` gave no string.
#[derive(Debug, PartialEq)]
pub enum FormatError {
    /// cel-go's error, as it words it.
    Go(String),
    /// cel-go fails, with a text celcost does not reproduce.
    Unworded,
    /// celcost does not follow cel-go here.
    NotFollowed,
}

use FormatError::{Go, NotFollowed, Unworded};

/// The largest precision followed (a double's exact decimal expansion has at most 1,074
/// fraction digits).
const MAX_PRECISION: usize = 1_100;

/// `parseFormatString(f, &stringFormatter{}, &stringArgList{args}, "en_US")`.
pub fn format(f: &str, args: &[Val]) -> Result<String, FormatError> {
    crate::budget::charge(f.len() as u64 / 16 + args.len() as u64);
    let b = f.as_bytes();
    let mut out = String::with_capacity(f.len());
    let mut i = 0;
    let mut arg_index = 0usize;
    // Copied up to here.
    let mut copied = 0;
    while i < b.len() {
        if b[i] != b'%' {
            i += 1;
            continue;
        }
        out.push_str(&f[copied..i]);
        if i + 1 < b.len() && b[i + 1] == b'%' {
            out.push('%');
            i += 2;
            copied = i;
            continue;
        }
        // `list.Arg(argIndex)` first, then the end of the string.
        let Some(arg) = args.get(arg_index) else {
            return Err(Go(format!("index {arg_index} out of range")));
        };
        if i + 1 >= b.len() {
            return Err(Go("unexpected end of string".into()));
        }
        let (read, clause) = parse_clause(&b[i + 1..])
            .map_err(|e| Go(format!("could not parse formatting clause: {e}")))?;
        let shown = match clause(arg) {
            Err(Go(e)) => return Err(Go(format!("error during formatting: {e}"))),
            other => other?,
        };
        out.push_str(&shown);
        i += 1 + read;
        copied = i;
        arg_index += 1;
    }
    out.push_str(&f[copied..]);
    Ok(out)
}

type Clause = Box<dyn Fn(&Val) -> Result<String, FormatError>>;

/// `parseFormattingClause`: the bytes read and the clause, or the error's text.
fn parse_clause(b: &[u8]) -> Result<(usize, Clause), String> {
    let mut i = 0;
    let mut precision = None;
    if b[0] == b'.' {
        i = 1;
        loop {
            if i >= b.len() {
                return Err(
                    "error while parsing precision: could not find end of precision specifier"
                        .into(),
                );
            }
            if !b[i].is_ascii_digit() {
                break;
            }
            i += 1;
        }
        // `strconv.Atoi` of the digits.
        let digits = std::str::from_utf8(&b[1..i]).unwrap_or_default();
        let atoi = |why: &str| {
            format!(
                "error while parsing precision: error while converting precision to integer: strconv.Atoi: parsing {}: {why}",
                go_quote(digits)
            )
        };
        if digits.is_empty() {
            return Err(atoi("invalid syntax"));
        }
        let p: i64 = digits.parse().map_err(|_| atoi("value out of range"))?;
        precision = Some(usize::try_from(p).unwrap_or(usize::MAX));
    }
    let verb = b[i];
    let clause: Clause = match verb {
        b's' => Box::new(format_string),
        b'd' => Box::new(decimal),
        b'f' => {
            let p = precision.unwrap_or(6);
            Box::new(move |v: &Val| fixed(v, p))
        }
        b'e' => Box::new(scientific),
        b'b' => Box::new(binary),
        b'x' => Box::new(|v: &Val| hex(v, false)),
        b'X' => Box::new(|v: &Val| hex(v, true)),
        b'o' => Box::new(octal),
        // `%c` of the byte as a rune (a lead byte of UTF-8 shows as its Latin-1 character).
        other => {
            return Err(format!(
                "unrecognized formatting clause \"{}\"",
                char::from(other)
            ));
        }
    };
    Ok((i + 1, clause))
}

/// `TypeName()` of a value's type, where cel-go's is known.
fn type_name(v: &Val) -> Result<&'static str, FormatError> {
    Ok(match v {
        Val::Null => "null_type",
        Val::Bool(_) => "bool",
        Val::Int(_) => "int",
        Val::Uint(_) => "uint",
        Val::Double(_) => "double",
        Val::String(_) => "string",
        Val::Bytes(_) => "bytes",
        Val::List(_) => "list",
        Val::Map(_) => "map",
        Val::Optional(_) | Val::Url(_) | Val::Ext(_) | Val::Other(_) => return Err(NotFollowed),
    })
}

/// A clause's "can only be used on" error, naming the value's type.
fn misused(what: &str, v: &Val) -> Result<String, FormatError> {
    Err(Go(format!("{what}, was given {}", type_name(v)?)))
}

/// `FormatString`: the `%s` clause.
fn format_string(v: &Val) -> Result<String, FormatError> {
    crate::budget::charge(1);
    Ok(match v {
        Val::List(l) => format_list(l)?,
        Val::Map(m) => format_map(m)?,
        Val::Int(i) => i.to_string(),
        Val::Uint(u) => u.to_string(),
        Val::Double(d) => go_float(*d),
        Val::Bool(b) => b.to_string(),
        Val::String(s) => s.clone(),
        // `ConvertToType(StringType)` is an error value for bytes that are not UTF-8.
        Val::Bytes(b) => String::from_utf8(b.clone()).map_err(|_| Unworded)?,
        Val::Null => "null".into(),
        Val::Optional(_) | Val::Url(_) | Val::Ext(_) | Val::Other(_) => return Err(NotFollowed),
    })
}

/// `clauseForType` and `quoteForCEL`: an element of a list or a value of a map.
fn member(v: &Val) -> Result<String, FormatError> {
    Ok(match v {
        Val::Int(_) | Val::Uint(_) => decimal(v)?,
        Val::String(s) => go_quote(s),
        Val::Bytes(_) => format!("b{}", go_quote(&format_string(v)?)),
        Val::Bool(_) | Val::Null | Val::List(_) | Val::Map(_) => format_string(v)?,
        // Go's `%.6f`, the special values quoted.
        Val::Double(d) if d.is_nan() => "\"NaN\"".into(),
        Val::Double(d) if d.is_infinite() => {
            if *d > 0.0 {
                "\"+Inf\"".into()
            } else {
                "\"-Inf\"".into()
            }
        }
        Val::Double(d) if *d == 0.0 && d.is_sign_negative() => "-0.000000".into(),
        Val::Double(d) => format!("{d:.6}"),
        Val::Optional(_) | Val::Url(_) | Val::Ext(_) | Val::Other(_) => return Err(NotFollowed),
    })
}

fn format_list(l: &[Val]) -> Result<String, FormatError> {
    let parts = l.iter().map(member).collect::<Result<Vec<_>, _>>()?;
    Ok(format!("[{}]", parts.join(", ")))
}

fn format_map(m: &[(Val, Val)]) -> Result<String, FormatError> {
    let mut pairs = Vec::with_capacity(m.len());
    for (k, v) in m {
        let key = match k {
            Val::String(s) => go_quote(s),
            Val::Bool(_) | Val::Int(_) | Val::Uint(_) => format_string(k)?,
            _ => return Err(NotFollowed),
        };
        pairs.push((key, member(v)?));
    }
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    // Keys shown alike keep Go's map order.
    if pairs.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(NotFollowed);
    }
    let parts: Vec<String> = pairs.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
    Ok(format!("{{{}}}", parts.join(", ")))
}

fn decimal(v: &Val) -> Result<String, FormatError> {
    match v {
        Val::Int(i) => Ok(i.to_string()),
        Val::Uint(u) => Ok(u.to_string()),
        _ => misused("decimal clause can only be used on integers", v),
    }
}

/// The double a `%f` or `%e` clause formats: a double, or the strings `NaN`, `Infinity` and
/// `-Infinity` (converted as `strconv.ParseFloat` does).
fn floating(v: &Val, what: &str) -> Result<f64, FormatError> {
    match v {
        Val::Double(d) => Ok(*d),
        Val::String(s) if s == "NaN" => Ok(f64::NAN),
        Val::String(s) if s == "Infinity" => Ok(f64::INFINITY),
        Val::String(s) if s == "-Infinity" => Ok(f64::NEG_INFINITY),
        _ => misused(what, v).map(|_| 0.0),
    }
}

/// `%f`: `message.NewPrinter(en_US).Sprintf("%.<p>f", x)` (x/text `fmtDecimalFloat`: the
/// digits of `strconv.AppendFloat(|x|, 'f', p)`, trailing zeros dropped, then at least
/// `uint8(p)` fraction digits; the `en` pattern's grouping of 3 and symbols).
fn fixed(v: &Val, precision: usize) -> Result<String, FormatError> {
    let x = floating(v, "fixed-point clause can only be used on doubles")?;
    if precision > MAX_PRECISION {
        return Err(NotFollowed);
    }
    if x.is_nan() {
        return Ok("NaN".into());
    }
    let sign = if x < 0.0 { "-" } else { "" };
    if x.is_infinite() {
        return Ok(format!("{sign}∞"));
    }
    crate::budget::charge(precision as u64 / 16 + 1);
    // Rust rounds a double's exact value half to even, as strconv does.
    let digits = format!("{:.precision$}", x.abs());
    let (int, frac) = digits.split_once('.').unwrap_or((&digits, ""));
    let int = int.trim_start_matches('0');
    let significant = frac.trim_end_matches('0');
    let shown = significant.len().max(precision % 256);
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 4);
    out.push_str(sign);
    if int.is_empty() {
        out.push('0');
    }
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if shown > 0 {
        out.push('.');
        out.push_str(&frac[..shown]);
    }
    Ok(out)
}

fn scientific(v: &Val) -> Result<String, FormatError> {
    floating(v, "scientific clause can only be used on doubles")?;
    Err(NotFollowed)
}

/// Go's `%b`, `%o`, `%x` of an `int64`: the sign, then the magnitude.
fn signed(i: i64, radix: fn(u64) -> String) -> String {
    let m = radix(i.unsigned_abs());
    if i < 0 { format!("-{m}") } else { m }
}

fn binary(v: &Val) -> Result<String, FormatError> {
    match v {
        Val::Int(i) => Ok(signed(*i, |u| format!("{u:b}"))),
        Val::Uint(u) => Ok(format!("{u:b}")),
        Val::Bool(b) => Ok(if *b { "1" } else { "0" }.into()),
        _ => misused("only integers and bools can be formatted as binary", v),
    }
}

fn octal(v: &Val) -> Result<String, FormatError> {
    match v {
        Val::Int(i) => Ok(signed(*i, |u| format!("{u:o}"))),
        Val::Uint(u) => Ok(format!("{u:o}")),
        _ => misused("octal clause can only be used on integers", v),
    }
}

fn hex(v: &Val, upper: bool) -> Result<String, FormatError> {
    let bytes = |b: &[u8]| {
        crate::budget::charge(b.len() as u64 / 16);
        b.iter()
            .map(|x| {
                if upper {
                    format!("{x:02X}")
                } else {
                    format!("{x:02x}")
                }
            })
            .collect::<String>()
    };
    let s = match v {
        Val::String(s) => bytes(s.as_bytes()),
        Val::Bytes(b) => bytes(b),
        Val::Int(i) => signed(*i, |u| format!("{u:x}")),
        Val::Uint(u) => format!("{u:x}"),
        _ => {
            return misused(
                "only integers, byte buffers, and strings can be formatted as hex",
                v,
            );
        }
    };
    Ok(if upper { s.to_ascii_uppercase() } else { s })
}

#[cfg(test)]
mod tests;
