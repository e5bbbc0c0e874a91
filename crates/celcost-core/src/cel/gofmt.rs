//! Go's `fmt` and `strconv` renderings of strings and numbers, as cel-go, the Kubernetes CEL
//! libraries and the API server's field errors show them: `%q` (`strconv.Quote`), `%v` of a
//! `float64`. Shared by the CEL layer (`string.format`, the URL library's errors) and the field
//! errors of `crate::crd::fielderr`.

/// Go's `%q` of a string (`strconv.Quote`): printable characters as they are, `\a \b \f \n \r
/// \t \v`, other ASCII controls as `\xHH`, other unprintable characters as `\uHHHH` or
/// `\UHHHHHHHH`.
pub fn go_quote(s: &str) -> String {
    go_quote_bytes(s.as_bytes())
}

/// [`go_quote`] of the bytes of a Go string, which need not be UTF-8: each byte of an invalid
/// sequence as `\xHH`, as `strconv.Quote` decodes them (one `RuneError` of width 1 each).
pub fn go_quote_bytes(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len() + 2);
    out.push('"');
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            quote_char(c, &mut out);
        }
        for x in chunk.invalid() {
            out.push_str(&format!("\\x{x:02x}"));
        }
    }
    out.push('"');
    out
}

fn quote_char(c: char, out: &mut String) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        c if go_is_print(c) => out.push(c),
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        c if c.is_ascii() => out.push_str(&format!("\\x{:02x}", c as u32)),
        c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
        c => out.push_str(&format!("\\U{:08x}", c as u32)),
    }
}

/// Go's `strconv.IsPrint`: letters, marks, numbers, punctuation, symbols and the ASCII space.
/// Rust's `escape_debug` keeps the same characters (of its own Unicode version, which may be
/// newer than Go's) except grapheme extenders at the start of a string, hence the `a` before.
fn go_is_print(c: char) -> bool {
    if c.is_ascii() {
        return (' '..='~').contains(&c);
    }
    let mut buf = [0u8; 8];
    buf[0] = b'a';
    let n = c.encode_utf8(&mut buf[1..]).len();
    let s = std::str::from_utf8(&buf[..=n]).unwrap_or_default();
    s.escape_debug().eq(s.chars())
}

/// Go's `%v` of a `float64`: `strconv.FormatFloat(f, 'g', -1, 64)`, i.e. the shortest digits,
/// in exponent form when the decimal exponent is < -4 or >= 6 (`1e+06`, `1.5`, `1e-05`).
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let (neg, digits, exp) = shortest_digits(f);
    let sign = if neg { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let mut m = digits[..1].to_string();
        if digits.len() > 1 {
            m.push('.');
            m.push_str(&digits[1..]);
        }
        let es = if exp < 0 { '-' } else { '+' };
        format!("{sign}{m}e{es}{:02}", exp.abs())
    } else {
        format!("{sign}{}", fixed(&digits, exp))
    }
}

/// The shortest round-trip decimal digits of `f` and its decimal exponent (`d.ddd × 10^exp`).
pub fn shortest_digits(f: f64) -> (bool, String, i32) {
    let s = format!("{:e}", f.abs());
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let digits: String = m.chars().filter(|c| *c != '.').collect();
    (f < 0.0, digits, e.parse().unwrap_or(0))
}

/// `digits` × 10^(exp - len + 1) in fixed notation.
pub fn fixed(digits: &str, exp: i32) -> String {
    let n = digits.len() as i32;
    if exp < 0 {
        format!("0.{}{}", "0".repeat((-exp - 1) as usize), digits)
    } else if exp + 1 >= n {
        format!("{}{}", digits, "0".repeat((exp + 1 - n) as usize))
    } else {
        let (a, b) = digits.split_at((exp + 1) as usize);
        format!("{a}.{b}")
    }
}
