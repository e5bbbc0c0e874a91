//! The Kubernetes URL library (`k8s.io/apiserver/pkg/cel/library/urls.go`, unchanged from 1.30
//! to 1.36 but for its name): `url(string)`, `isURL(string)` and the accessors of a URL, over
//! Go's `net/url` as the API servers of those minors are built with it (Go 1.22 to 1.26).
//!
//! - `isURL(s)`: `url.ParseRequestURI(s)` succeeds.
//! - `url(s)`: `url.ParseRequestURI(s)` (the error `URL parse error during conversion from
//!   string: parse "<s>": <why>`), then the value of `url.Parse(s)` (which cuts a `#fragment`
//!   off first, and may fail on it alone).
//! - `getScheme()`, `getHost()`, `getHostname()`, `getPort()` (`Hostname` and `Port`: a valid
//!   numeric port after the last colon), `getEscapedPath()` (`EscapedPath`), `getQuery()`
//!   (`Query()`: `ParseQuery`, its errors ignored: pairs split at `&`, a pair with `;` dropped,
//!   keys and values unescaped with `+` as a space, values in order).
//!
//! Go's `net/url` changed between those versions for hosts with brackets (IP literals) and
//! with more than one colon (Go 1.25/1.26: `invalid IP-literal`, strict colons for http(s)),
//! and in the number of query parameters it parses (10,000 from Go 1.26 and the security
//! releases before it): those are [`NotFollowed`]. So is a host, key or value that unescapes
//! to bytes that are not UTF-8 (a Go string, no Rust one).

use crate::cel::gofmt::go_quote_bytes;

/// What celcost does not follow: the caller leaves the expression unevaluated.
#[derive(Debug, PartialEq)]
pub struct NotFollowed;

/// A URL as `url.Parse` makes it (the fields the accessors read).
#[derive(Clone, Debug, PartialEq)]
pub struct Url {
    scheme: String,
    host: Vec<u8>,
    path: Vec<u8>,
    raw_path: Vec<u8>,
    raw_query: Vec<u8>,
}

/// `url(s)`: the URL, or the API server's error text (`None`: an error whose text differs
/// between the Go versions).
pub fn url(s: &str) -> Result<Result<Url, Option<String>>, NotFollowed> {
    crate::budget::charge(s.len() as u64 / 16 + 1);
    let wrap = |raw: &[u8], why: ParseError| match why {
        ParseError::Go(why) => Some(format!(
            "URL parse error during conversion from string: parse {}: {why}",
            go_quote_bytes(raw)
        )),
        ParseError::Unworded => None,
    };
    if let Err(why) = parse(s.as_bytes(), true)? {
        return Ok(Err(wrap(s.as_bytes(), why)));
    }
    // `url.Parse`: the fragment cut off first; its errors name the part parsed, and, for the
    // fragment, the whole string.
    let b = s.as_bytes();
    let (u, frag) = match b.iter().position(|&c| c == b'#') {
        Some(i) => (&b[..i], Some(&b[i + 1..])),
        None => (b, None),
    };
    let url = match parse(u, false)? {
        Ok(url) => url,
        Err(why) => return Ok(Err(wrap(u, why))),
    };
    if let Some(f) = frag
        && !f.is_empty()
        && let Err(e) = unescape(f, Mode::Fragment)
    {
        return Ok(Err(wrap(b, ParseError::Go(e.text()))));
    }
    Ok(Ok(url))
}

/// `isURL(s)`.
pub fn is_url(s: &str) -> Result<bool, NotFollowed> {
    crate::budget::charge(s.len() as u64 / 16 + 1);
    Ok(parse(s.as_bytes(), true)?.is_ok())
}

fn text(b: &[u8]) -> Result<String, NotFollowed> {
    String::from_utf8(b.to_vec()).map_err(|_| NotFollowed)
}

impl Url {
    pub fn scheme(&self) -> String {
        self.scheme.clone()
    }

    pub fn host(&self) -> Result<String, NotFollowed> {
        text(&self.host)
    }

    /// `Hostname()`.
    pub fn hostname(&self) -> Result<String, NotFollowed> {
        text(split_host_port(&self.host).0)
    }

    /// `Port()`.
    pub fn port(&self) -> Result<String, NotFollowed> {
        text(split_host_port(&self.host).1)
    }

    /// `EscapedPath()`.
    pub fn escaped_path(&self) -> Result<String, NotFollowed> {
        crate::budget::charge(self.path.len() as u64 / 16 + 1);
        if !self.raw_path.is_empty()
            && valid_encoded(&self.raw_path, Mode::Path)
            && unescape(&self.raw_path, Mode::Path).is_ok_and(|p| p == self.path)
        {
            return text(&self.raw_path);
        }
        if self.path == b"*" {
            return Ok("*".into());
        }
        text(&escape(&self.path, Mode::Path))
    }

    /// `Query()`: each key with its values in order, keys in the order they first appear.
    pub fn query(&self) -> Result<Vec<(String, Vec<String>)>, NotFollowed> {
        let q = &self.raw_query;
        crate::budget::charge(q.len() as u64 / 16 + 1);
        if q.iter().filter(|&&c| c == b'&').count() + 1 > 10_000 {
            return Err(NotFollowed);
        }
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for pair in q.split(|&c| c == b'&') {
            if pair.contains(&b';') || pair.is_empty() {
                continue;
            }
            let (k, v) = match pair.iter().position(|&c| c == b'=') {
                Some(i) => (&pair[..i], &pair[i + 1..]),
                None => (pair, &pair[..0]),
            };
            let (Ok(k), Ok(v)) = (
                unescape(k, Mode::QueryComponent),
                unescape(v, Mode::QueryComponent),
            ) else {
                continue;
            };
            let (k, v) = (text(&k)?, text(&v)?);
            match index.get(&k) {
                Some(&i) => out[i].1.push(v),
                None => {
                    index.insert(k.clone(), out.len());
                    out.push((k, vec![v]));
                }
            }
        }
        Ok(out)
    }
}

/// `splitHostPort`.
fn split_host_port(host: &[u8]) -> (&[u8], &[u8]) {
    let (host, port) = match host.iter().rposition(|&c| c == b':') {
        Some(i) if valid_optional_port(&host[i..]) => (&host[..i], &host[i + 1..]),
        _ => (host, &host[..0]),
    };
    match host {
        [b'[', inner @ .., b']'] => (inner, port),
        _ => (host, port),
    }
}

/// `validOptionalPort`: empty, or `:` and digits.
fn valid_optional_port(p: &[u8]) -> bool {
    p.is_empty() || (p[0] == b':' && p[1..].iter().all(u8::is_ascii_digit))
}

/// `parse(rawURL, viaRequest)`: the URL, or the error's text; hosts Go's versions parse
/// differently are not followed.
fn parse(raw: &[u8], via_request: bool) -> Result<Result<Url, ParseError>, NotFollowed> {
    macro_rules! fail {
        ($e:expr) => {
            return Ok(Err($e.into()))
        };
    }
    if raw.iter().any(|&c| c < b' ' || c == 0x7f) {
        fail!("net/url: invalid control character in URL");
    }
    if raw.is_empty() && via_request {
        fail!("empty url");
    }
    let mut url = Url {
        scheme: String::new(),
        host: Vec::new(),
        path: Vec::new(),
        raw_path: Vec::new(),
        raw_query: Vec::new(),
    };
    if raw == b"*" {
        url.path = b"*".to_vec();
        return Ok(Ok(url));
    }
    let (scheme, mut rest) = match get_scheme(raw) {
        Ok(x) => x,
        Err(e) => fail!(e),
    };
    url.scheme = String::from_utf8_lossy(scheme).to_ascii_lowercase();
    let questions = rest.iter().filter(|&&c| c == b'?').count();
    if rest.last() == Some(&b'?') && questions == 1 {
        // ForceQuery.
        rest = &rest[..rest.len() - 1];
    } else if let Some(i) = rest.iter().position(|&c| c == b'?') {
        url.raw_query = rest[i + 1..].to_vec();
        rest = &rest[..i];
    }
    if !rest.starts_with(b"/") {
        if !url.scheme.is_empty() {
            // Opaque: no host, no path.
            return Ok(Ok(url));
        }
        if via_request {
            fail!("invalid URI for request");
        }
        let segment = rest.split(|&c| c == b'/').next().unwrap_or_default();
        if segment.contains(&b':') {
            fail!("first path segment in URL cannot contain colon");
        }
    }
    if (!url.scheme.is_empty() || !via_request && !rest.starts_with(b"///"))
        && rest.starts_with(b"//")
    {
        let mut authority = &rest[2..];
        rest = &rest[..0];
        if let Some(i) = authority.iter().position(|&c| c == b'/') {
            rest = &authority[i..];
            authority = &authority[..i];
        }
        match parse_authority(authority)? {
            Ok(host) => url.host = host,
            Err(e) => fail!(e),
        }
    }
    // setPath.
    match unescape(rest, Mode::Path) {
        Ok(path) => {
            if escape(&path, Mode::Path) != rest {
                url.raw_path = rest.to_vec();
            }
            url.path = path;
        }
        Err(e) => fail!(e.text()),
    }
    Ok(Ok(url))
}

/// `getScheme`: the scheme and the rest, or an error.
fn get_scheme(raw: &[u8]) -> Result<(&[u8], &[u8]), &'static str> {
    for (i, &c) in raw.iter().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme"),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok((&raw[..0], raw)),
        }
    }
    Ok((&raw[..0], raw))
}

/// `parseAuthority`: the host (userinfo checked, not kept).
fn parse_authority(authority: &[u8]) -> Result<Result<Vec<u8>, ParseError>, NotFollowed> {
    let at = authority.iter().rposition(|&c| c == b'@');
    let host = match at {
        Some(i) => &authority[i + 1..],
        None => authority,
    };
    let host = match parse_host(host)? {
        Ok(h) => h,
        Err(e) => return Ok(Err(e)),
    };
    let Some(i) = at else {
        return Ok(Ok(host));
    };
    let userinfo = &authority[..i];
    if !valid_userinfo(userinfo) {
        return Ok(Err(ParseError::Go("net/url: invalid userinfo".into())));
    }
    let (user, password) = match userinfo.iter().position(|&c| c == b':') {
        Some(i) => (&userinfo[..i], Some(&userinfo[i + 1..])),
        None => (userinfo, None),
    };
    for part in std::iter::once(user).chain(password) {
        if let Err(e) = unescape(part, Mode::UserPassword) {
            return Ok(Err(ParseError::Go(e.text())));
        }
    }
    Ok(Ok(host))
}

/// `validUserinfo` (ranging over the runes of a Go string: a byte of a multi-byte sequence
/// or an invalid byte is no allowed character either way).
fn valid_userinfo(s: &[u8]) -> bool {
    s.iter().all(|&c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'-' | b'.'
                    | b'_'
                    | b':'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b'%'
                    | b'@'
            )
    })
}

/// `parseHost`, where Go 1.22 to 1.26 agree:
/// - an IP literal `[<IPv6 address>]` with an optional port (Go 1.26 also checks the address;
///   with a zone, another address or other brackets, not followed);
/// - a host with at most one colon, the port after it;
/// - a host with more colons fails when what follows the last one is no port (Go 1.22 reads
///   the port after the last colon, Go 1.26 after the first one for http and https: the
///   errors differ, so they are [`ParseError::Unworded`]); otherwise not followed.
fn parse_host(host: &[u8]) -> Result<Result<Vec<u8>, ParseError>, NotFollowed> {
    let count = |b: u8| host.iter().filter(|&&c| c == b).count();
    if host.first() == Some(&b'[') {
        let close = host.iter().position(|&c| c == b']').ok_or(NotFollowed)?;
        let literal = std::str::from_utf8(&host[1..close]).map_err(|_| NotFollowed)?;
        if count(b'[') != 1
            || count(b']') != 1
            || !valid_optional_port(&host[close + 1..])
            || literal.parse::<std::net::Ipv6Addr>().is_err()
        {
            return Err(NotFollowed);
        }
        return Ok(Ok(host.to_vec()));
    }
    if count(b'[') + count(b']') > 0 {
        return Err(NotFollowed);
    }
    if count(b':') > 1 {
        let last = host.iter().rposition(|&c| c == b':').unwrap_or_default();
        if valid_optional_port(&host[last..]) {
            return Err(NotFollowed);
        }
        return Ok(Err(ParseError::Unworded));
    }
    if let Some(i) = host.iter().position(|&c| c == b':')
        && !valid_optional_port(&host[i..])
    {
        return Ok(Err(ParseError::Go(format!(
            "invalid port {} after host",
            go_quote_bytes(&host[i..])
        ))));
    }
    Ok(unescape(host, Mode::Host).map_err(|e| ParseError::Go(e.text())))
}

/// Why Go's `parse` fails.
#[derive(Debug, PartialEq)]
enum ParseError {
    /// Its error, as Go words it.
    Go(String),
    /// It fails in every Go version, with texts that differ.
    Unworded,
}

impl From<&str> for ParseError {
    fn from(s: &str) -> Self {
        ParseError::Go(s.to_string())
    }
}

impl From<String> for ParseError {
    fn from(s: String) -> Self {
        ParseError::Go(s)
    }
}

/// The parts of a URL, for escaping (`encodeHost`, ...).
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Path,
    Host,
    UserPassword,
    QueryComponent,
    Fragment,
}

/// RFC 3986's sub-delims, which Go's `shouldEscape` (in a host) and `validEncoded` let through.
const SUB_DELIMS: &[u8] = b"!$&'()*+,;=";

/// `shouldEscape`.
fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if mode == Mode::Host
        && (SUB_DELIMS.contains(&c) || matches!(c, b':' | b'[' | b']' | b'<' | b'>' | b'"'))
    {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Mode::Path => return c == b'?',
            Mode::UserPassword => return matches!(c, b'@' | b'/' | b'?' | b':'),
            Mode::QueryComponent => return true,
            Mode::Fragment => return false,
            Mode::Host => {}
        },
        _ => {}
    }
    if mode == Mode::Fragment && matches!(c, b'!' | b'(' | b')' | b'*') {
        return false;
    }
    true
}

/// An error of `unescape`.
enum UnescapeError {
    /// `EscapeError`: the `%` and up to two bytes after it.
    Escape(Vec<u8>),
    /// `InvalidHostError`: one byte.
    Host(u8),
}

impl UnescapeError {
    fn text(&self) -> String {
        match self {
            UnescapeError::Escape(s) => format!("invalid URL escape {}", go_quote_bytes(s)),
            UnescapeError::Host(c) => {
                format!("invalid character {} in host name", go_quote_bytes(&[*c]))
            }
        }
    }
}

fn unhex(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c - b'A' + 10,
    }
}

/// `unescape` (no zones here: they are inside brackets).
fn unescape(s: &[u8], mode: Mode) -> Result<Vec<u8>, UnescapeError> {
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'%' => {
                if i + 2 >= s.len()
                    || !s[i + 1].is_ascii_hexdigit()
                    || !s[i + 2].is_ascii_hexdigit()
                {
                    let end = s.len().min(i + 3);
                    return Err(UnescapeError::Escape(s[i..end].to_vec()));
                }
                if mode == Mode::Host && unhex(s[i + 1]) < 8 && &s[i..i + 3] != b"%25" {
                    return Err(UnescapeError::Escape(s[i..i + 3].to_vec()));
                }
                i += 3;
            }
            c => {
                if mode == Mode::Host && c < 0x80 && should_escape(c, mode) {
                    return Err(UnescapeError::Host(c));
                }
                i += 1;
            }
        }
    }
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'%' => {
                out.push(unhex(s[i + 1]) << 4 | unhex(s[i + 2]));
                i += 3;
            }
            b'+' if mode == Mode::QueryComponent => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// `escape` (never in query mode here).
fn escape(s: &[u8], mode: Mode) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = Vec::with_capacity(s.len());
    for &c in s {
        if should_escape(c, mode) {
            out.extend_from_slice(&[b'%', HEX[(c >> 4) as usize], HEX[(c & 15) as usize]]);
        } else {
            out.push(c);
        }
    }
    out
}

/// `validEncoded`.
fn valid_encoded(s: &[u8], mode: Mode) -> bool {
    s.iter().all(|&c| {
        SUB_DELIMS.contains(&c)
            || matches!(c, b':' | b'@' | b'[' | b']' | b'%')
            || !should_escape(c, mode)
    })
}

#[cfg(test)]
mod tests;
