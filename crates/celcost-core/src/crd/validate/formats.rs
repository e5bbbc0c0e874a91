//! The string formats kube-openapi's default registry knows (k8s.io/kube-openapi
//! pkg/validation/strfmt `Default`), which the API server checks default values against.
//! Format names are looked up with dashes removed (`date-time` is `datetime`).

use std::net::Ipv6Addr;
use std::sync::LazyLock;

use regex::Regex;

use super::goregexp;

/// The registered names, normalized.
const KNOWN: [&str; 26] = [
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "bsonobjectid",
    "date",
    "datetime",
    "duration",
    "k8sshortname",
    "k8slongname",
];

fn normalize(format: &str) -> String {
    format.replace('-', "")
}

/// `strfmt.Default.ContainsName(format)`.
pub(super) fn is_known(format: &str) -> bool {
    !format.is_empty() && KNOWN.contains(&normalize(format).as_str())
}

/// `strfmt.Default.Validates(format, s)`.
pub(super) fn validates(format: &str, s: &str) -> bool {
    match normalize(format).as_str() {
        "uri" => is_request_uri(s),
        "email" => is_email(s),
        "hostname" => is_hostname(s),
        "ipv4" => parse_ip_sloppy(s) && s.contains('.'),
        // net.ParseIP (netip): strict IPv4 parts, no zone.
        "ipv6" => s.parse::<Ipv6Addr>().is_ok() && s.contains(':'),
        "cidr" => is_cidr(s),
        "mac" => is_mac(s),
        "uuid" => go_match(&UUID, s),
        "uuid3" => go_match(&UUID3, s),
        "uuid4" => go_match(&UUID4, s),
        "uuid5" => go_match(&UUID5, s),
        "isbn" => is_isbn(s, 10) || is_isbn(s, 13),
        "isbn10" => is_isbn(s, 10),
        "isbn13" => is_isbn(s, 13),
        "creditcard" => is_credit_card(s),
        "ssn" => s.len() == 11 && go_match(&SSN, s),
        "hexcolor" => go_match(&HEXCOLOR, s),
        "rgbcolor" => go_match(&RGBCOLOR, s),
        "byte" => go_match(&BASE64, s),
        "password" => true,
        "bsonobjectid" => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
        "date" => is_date(s),
        "datetime" => is_date_time(s),
        "duration" => is_duration(s),
        "k8sshortname" => s.len() <= 63 && go_match(&SHORT_NAME, s),
        "k8slongname" => s.len() <= 253 && go_match(&LONG_NAME, s),
        _ => true,
    }
}

/// A Go regular expression known to be valid and translatable.
fn go_regex(pattern: &str) -> Option<Regex> {
    goregexp::compile(pattern).ok().flatten()
}

fn go_match(re: &LazyLock<Option<Regex>>, s: &str) -> bool {
    re.as_ref().is_some_and(|re| re.is_match(s))
}

static HOSTNAME: LazyLock<Option<Regex>> = LazyLock::new(|| {
    go_regex(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
    )
});
static UUID: LazyLock<Option<Regex>> = LazyLock::new(|| {
    go_regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID3: LazyLock<Option<Regex>> = LazyLock::new(|| {
    go_regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID4: LazyLock<Option<Regex>> = LazyLock::new(|| {
    go_regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static UUID5: LazyLock<Option<Regex>> = LazyLock::new(|| {
    go_regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static CREDIT_CARD: LazyLock<Option<Regex>> = LazyLock::new(|| {
    go_regex(
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$",
    )
});
static ISBN10: LazyLock<Option<Regex>> = LazyLock::new(|| go_regex(r"^(?:[0-9]{9}X|[0-9]{10})$"));
static ISBN13: LazyLock<Option<Regex>> = LazyLock::new(|| go_regex(r"^(?:[0-9]{13})$"));
static HEXCOLOR: LazyLock<Option<Regex>> =
    LazyLock::new(|| go_regex(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGBCOLOR: LazyLock<Option<Regex>> = LazyLock::new(|| {
    go_regex(
        r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$",
    )
});
static BASE64: LazyLock<Option<Regex>> = LazyLock::new(|| {
    go_regex(
        r"^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$",
    )
});
static SSN: LazyLock<Option<Regex>> = LazyLock::new(|| go_regex(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$"));
static SHORT_NAME: LazyLock<Option<Regex>> =
    LazyLock::new(|| go_regex(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"));
static LONG_NAME: LazyLock<Option<Regex>> = LazyLock::new(|| {
    go_regex(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
});
static DATE_TIME_TAIL: LazyLock<Option<Regex>> = LazyLock::new(|| {
    go_regex(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
});
static DURATION_PART: LazyLock<Option<Regex>> =
    LazyLock::new(|| go_regex(r"((\d+)\s*([A-Za-zµ]+))"));

/// `strfmt.IsHostname`.
fn is_hostname(s: &str) -> bool {
    go_match(&HOSTNAME, s) && s.len() <= 255 && s.split('.').all(|p| p.len() <= 63)
}

/// govalidator `IsCreditCard`: the pattern on the digits, then the Luhn checksum.
fn is_credit_card(s: &str) -> bool {
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    if !go_match(&CREDIT_CARD, &digits) {
        return false;
    }
    let mut sum = 0;
    for (i, d) in digits.bytes().rev().enumerate() {
        let mut n = u32::from(d - b'0');
        if i % 2 == 1 {
            n *= 2;
            if n >= 10 {
                n = n % 10 + 1;
            }
        }
        sum += n;
    }
    sum % 10 == 0
}

/// govalidator `IsISBN(s, version)`: whitespace and dashes are ignored.
fn is_isbn(s: &str, version: u32) -> bool {
    let sanitized: String = s
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '-'))
        .collect();
    let b = sanitized.as_bytes();
    let digit = |i: usize| i32::from(b[i]) - i32::from(b'0');
    if version == 10 {
        if !go_match(&ISBN10, &sanitized) {
            return false;
        }
        let mut checksum: i32 = (0..9).map(|i| (i as i32 + 1) * digit(i)).sum();
        checksum += if b[9] == b'X' { 100 } else { 10 * digit(9) };
        checksum % 11 == 0
    } else {
        if !go_match(&ISBN13, &sanitized) {
            return false;
        }
        let checksum: i32 = (0..12).map(|i| [1, 3][i % 2] * digit(i)).sum();
        digit(12) - ((10 - checksum % 10) % 10) == 0
    }
}

/// `time.Parse("2006-01-02", s)` succeeds.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let year_text = &s[..4];
    let (neg, digits) = match year_text.as_bytes()[0] {
        b'-' => (true, &year_text[1..]),
        b'+' => (false, &year_text[1..]),
        _ => (false, year_text),
    };
    if !digits.bytes().all(|c| c.is_ascii_digit()) {
        return false;
    }
    let mut year: i64 = digits.parse().unwrap_or(0);
    if neg {
        year = -year;
    }
    let two = |t: &str| -> Option<u32> {
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())
            .flatten()
    };
    let (Some(month), Some(day)) = (two(&s[5..7]), two(&s[8..10])) else {
        return false;
    };
    if !(1..=12).contains(&month) {
        return false;
    }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    (1..=days).contains(&day)
}

/// `strfmt.IsDateTime`.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    let Some(re) = DATE_TIME_TAIL.as_ref() else {
        return false;
    };
    let Some(m) = re.captures(parts[1]) else {
        return false;
    };
    m[1] <= *"23" && m[2] <= *"59" && m[3] <= *"59"
}

/// `strfmt.ParseDuration` succeeds: Go's `time.ParseDuration`, or at least one
/// `<digits><unit>` with a known unit (and no number too big for an int).
fn is_duration(s: &str) -> bool {
    if go_parse_duration(s) {
        return true;
    }
    let Some(re) = DURATION_PART.as_ref() else {
        return false;
    };
    const UNITS: [&[&str]; 8] = [
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let mut ok = false;
    for m in re.captures_iter(s) {
        if m[2].parse::<i64>().is_err() {
            return false;
        }
        let unit = m[3].trim().to_lowercase();
        for variants in UNITS {
            let last = variants.len() - 1;
            for (i, v) in variants.iter().enumerate() {
                if (i == last && unit.starts_with(v)) || unit.eq_ignore_ascii_case(v) {
                    ok = true;
                }
            }
        }
    }
    ok
}

/// Go's `time.ParseDuration(s)` succeeds: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+` with the units
/// ns, us, µs, μs, ms, s, m, h, and no overflow; "0" alone is valid.
fn go_parse_duration(s: &str) -> bool {
    let mut t = s.strip_prefix(['-', '+']).unwrap_or(s);
    if t == "0" {
        return true;
    }
    if t.is_empty() {
        return false;
    }
    let mut total: u128 = 0;
    while !t.is_empty() {
        let b = t.as_bytes();
        if !(b[0] == b'.' || b[0].is_ascii_digit()) {
            return false;
        }
        let int_len = b.iter().take_while(|c| c.is_ascii_digit()).count();
        let int_part = &t[..int_len];
        t = &t[int_len..];
        let mut frac_part = "";
        if let Some(rest) = t.strip_prefix('.') {
            let n = rest.bytes().take_while(|c| c.is_ascii_digit()).count();
            frac_part = &rest[..n];
            t = &rest[n..];
            if int_len == 0 && n == 0 {
                return false;
            }
        } else if int_len == 0 {
            return false;
        }
        let unit_len = t
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(t.len(), |(i, _)| i);
        if unit_len == 0 {
            return false;
        }
        let unit: u128 = match &t[..unit_len] {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return false,
        };
        t = &t[unit_len..];
        let Ok(v) = (if int_part.is_empty() {
            Ok(0)
        } else {
            int_part.parse::<u128>()
        }) else {
            return false;
        };
        if v > (1u128 << 63) {
            return false;
        }
        let mut part = v * unit;
        if !frac_part.is_empty() {
            let mut scale: f64 = 1.0;
            let mut f: u128 = 0;
            for d in frac_part.bytes().take(18) {
                f = f * 10 + u128::from(d - b'0');
                scale *= 10.0;
            }
            part += (f as f64 * (unit as f64 / scale)) as u128;
        }
        total += part;
        if total > (1u128 << 63) {
            return false;
        }
    }
    let negative = s.starts_with('-');
    total < (1u128 << 63) || (negative && total == (1u128 << 63))
}

/// `netutils.ParseIPSloppy(s) != nil` (Go's pre-1.17 parser, which allows leading zeros in
/// IPv4 octets): the first `.` or `:` decides the family.
fn parse_ip_sloppy(s: &str) -> bool {
    match s.bytes().find(|b| *b == b'.' || *b == b':') {
        Some(b'.') => parse_ipv4_sloppy(s).is_some(),
        Some(_) => parse_ipv6_sloppy(s),
        None => false,
    }
}

/// `dtoi`: decimal digits (at least one, below 0xFFFFFF); the value and the count.
fn dtoi(s: &[u8]) -> Option<(u32, usize)> {
    let mut n: u32 = 0;
    let mut i = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        n = n * 10 + u32::from(s[i] - b'0');
        if n >= 0xFF_FFFF {
            return None;
        }
        i += 1;
    }
    (i > 0).then_some((n, i))
}

/// `xtoi`: hexadecimal digits (at least one, below 0xFFFFFF).
fn xtoi(s: &[u8]) -> Option<(u32, usize)> {
    let mut n: u32 = 0;
    let mut i = 0;
    while i < s.len() {
        let Some(d) = (s[i] as char).to_digit(16) else {
            break;
        };
        n = n * 16 + d;
        if n >= 0xFF_FFFF {
            return None;
        }
        i += 1;
    }
    (i > 0).then_some((n, i))
}

/// The forked `parseIPv4`: four decimal octets, leading zeros allowed.
fn parse_ipv4_sloppy(s: &str) -> Option<[u8; 4]> {
    let mut s = s.as_bytes();
    let mut out = [0u8; 4];
    for (i, o) in out.iter_mut().enumerate() {
        if s.is_empty() {
            return None;
        }
        if i > 0 {
            if s[0] != b'.' {
                return None;
            }
            s = &s[1..];
        }
        let (n, c) = dtoi(s)?;
        if n > 0xFF {
            return None;
        }
        s = &s[c..];
        *o = n as u8;
    }
    s.is_empty().then_some(out)
}

/// The forked `parseIPv6` (a trailing IPv4 part is parsed sloppily).
fn parse_ipv6_sloppy(s: &str) -> bool {
    let mut s = s.as_bytes();
    let mut ellipsis: Option<usize> = None;
    if s.len() >= 2 && s[0] == b':' && s[1] == b':' {
        ellipsis = Some(0);
        s = &s[2..];
        if s.is_empty() {
            return true;
        }
    }
    let mut i = 0;
    while i < 16 {
        let Some((n, c)) = xtoi(s) else {
            return false;
        };
        if n > 0xFFFF {
            return false;
        }
        if c < s.len() && s[c] == b'.' {
            if (ellipsis.is_none() && i != 12) || i + 4 > 16 {
                return false;
            }
            let ok = std::str::from_utf8(s).is_ok_and(|r| parse_ipv4_sloppy(r).is_some());
            if !ok {
                return false;
            }
            s = &[];
            i += 4;
            break;
        }
        i += 2;
        s = &s[c..];
        if s.is_empty() {
            break;
        }
        if s[0] != b':' || s.len() == 1 {
            return false;
        }
        s = &s[1..];
        if s[0] == b':' {
            if ellipsis.is_some() {
                return false;
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return false;
    }
    if i < 16 {
        ellipsis.is_some()
    } else {
        ellipsis.is_none()
    }
}

/// `netutils.ParseCIDRSloppy(s)` succeeds.
fn is_cidr(s: &str) -> bool {
    let Some((addr, mask)) = s.split_once('/') else {
        return false;
    };
    let bits = if parse_ipv4_sloppy(addr).is_some() {
        32
    } else if parse_ipv6_sloppy(addr) {
        128
    } else {
        return false;
    };
    matches!(dtoi(mask.as_bytes()), Some((n, c)) if c == mask.len() && n <= bits)
}

/// `net.ParseMAC(s)` succeeds: 6, 8 or 20 octets as `xx:xx…`, `xx-xx…`, `xxxx.xxxx…` or plain
/// hex digits.
fn is_mac(s: &str) -> bool {
    let b = s.as_bytes();
    let hex2 = |p: &[u8]| p.len() >= 2 && p[0].is_ascii_hexdigit() && p[1].is_ascii_hexdigit();
    // xtoi2: two hex digits, followed by the separator unless at the end.
    let xtoi2 = |p: &[u8], sep: u8| hex2(p) && (p.len() <= 2 || p[2] == sep);
    if b.len() < 12 {
        return false;
    }
    if b[2] == b':' || b[2] == b'-' {
        if !(b.len() + 1).is_multiple_of(3) {
            return false;
        }
        let n = (b.len() + 1) / 3;
        matches!(n, 6 | 8 | 20) && (0..n).all(|i| xtoi2(&b[i * 3..], b[2]))
    } else if b[4] == b'.' {
        if !(b.len() + 1).is_multiple_of(5) {
            return false;
        }
        let n = 2 * (b.len() + 1) / 5;
        matches!(n, 6 | 8 | 20)
            && (0..n / 2).all(|i| {
                let x = i * 5;
                xtoi2(&b[x..x + 2], 0) && xtoi2(&b[x + 2..], b'.')
            })
    } else {
        b.len().is_multiple_of(2)
            && matches!(b.len() / 2, 6 | 8 | 20)
            && (0..b.len() / 2).all(|i| xtoi2(&b[i * 2..i * 2 + 2], 0))
    }
}

/// `mail.ParseAddress(s)` gives an address: `local@domain`, optionally as
/// `Display Name <local@domain>` (dot-atoms or a quoted local part).
fn is_email(s: &str) -> bool {
    let s = s.trim_matches([' ', '\t']);
    let addr = match (s.rfind('<'), s.ends_with('>')) {
        (Some(i), true) => {
            let name = s[..i].trim_matches([' ', '\t']);
            if !name.is_empty() && !is_phrase(name) {
                return false;
            }
            &s[i + 1..s.len() - 1]
        }
        _ => s,
    };
    let Some(at) = addr.rfind('@') else {
        return false;
    };
    let (local, domain) = (&addr[..at], &addr[at + 1..]);
    let local_ok = if local.len() >= 2 && local.starts_with('"') && local.ends_with('"') {
        true
    } else {
        is_dot_atom(local)
    };
    local_ok && (is_dot_atom(domain) || (domain.starts_with('[') && domain.ends_with(']')))
}

fn is_atext(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c) || !c.is_ascii()
}

fn is_dot_atom(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|p| !p.is_empty() && p.chars().all(is_atext))
}

fn is_phrase(s: &str) -> bool {
    if s.len() >= 2 && s.starts_with('"') && s.ends_with('"') {
        return true;
    }
    s.split([' ', '\t'])
        .filter(|w| !w.is_empty())
        .all(|w| w.chars().all(|c| is_atext(c) || c == '.'))
}

/// `url.ParseRequestURI(s)` succeeds.
fn is_request_uri(s: &str) -> bool {
    if s.bytes().any(|b| b < 0x20 || b == 0x7f) || s.is_empty() {
        return false;
    }
    if s == "*" {
        return true;
    }
    let (scheme, rest) = match get_scheme(s) {
        Err(()) => return false,
        Ok(x) => x,
    };
    let rest = if rest.ends_with('?') && rest.matches('?').count() == 1 {
        &rest[..rest.len() - 1]
    } else {
        rest.split_once('?').map_or(rest, |(r, _)| r)
    };
    if !rest.starts_with('/') {
        // An opaque URI needs a scheme.
        return !scheme.is_empty();
    }
    let mut path = rest;
    if !scheme.is_empty() && rest.starts_with("//") {
        let authority_and_path = &rest[2..];
        let (authority, p) = match authority_and_path.find('/') {
            Some(i) => (&authority_and_path[..i], &authority_and_path[i..]),
            None => (authority_and_path, ""),
        };
        if !valid_authority(authority) {
            return false;
        }
        path = p;
    }
    valid_escapes(path)
}

/// `getScheme`: `Ok(("", s))` when `s` has no scheme.
fn get_scheme(s: &str) -> Result<(&str, &str), ()> {
    for (i, c) in s.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' => {
                if i == 0 {
                    return Ok(("", s));
                }
            }
            ':' => {
                if i == 0 {
                    return Err(());
                }
                return Ok((&s[..i], &s[i + 1..]));
            }
            _ => return Ok(("", s)),
        }
    }
    Ok(("", s))
}

/// `%` escapes are complete (`unescape` in path mode).
fn valid_escapes(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if i + 2 >= b.len() {
                return false;
            }
            if !(b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit()) {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

/// `parseAuthority`: userinfo characters, host characters and a numeric port.
fn valid_authority(authority: &str) -> bool {
    let (userinfo, host) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    if let Some(u) = userinfo
        && !u
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c))
    {
        return false;
    }
    if let Some(rest) = host.strip_prefix('[') {
        let Some(end) = rest.find(']') else {
            return false;
        };
        let port = &rest[end + 1..];
        return port.is_empty() || valid_port(port);
    }
    if let Some(i) = host.rfind(':')
        && !valid_port(&host[i..])
    {
        return false;
    }
    host.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=:%".contains(c) || !c.is_ascii())
        && valid_escapes(host)
}

/// `validOptionalPort`: empty, or `:` followed by digits only.
fn valid_port(p: &str) -> bool {
    p.is_empty()
        || p.strip_prefix(':')
            .is_some_and(|d| d.bytes().all(|c| c.is_ascii_digit()))
}
