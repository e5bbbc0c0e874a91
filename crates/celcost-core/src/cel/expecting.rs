//! What cel-go's parser says it expected where a token does not fit.
//!
//! For a "mismatched input" error at a token that must close a construct, ANTLR's Go runtime
//! (cel-go) names what the construct in progress expects: `':'` in the middle of a conditional,
//! `')'` in call arguments or parentheses, `']'` in an index, `<EOF>` at the top. The `cel`
//! crate's Rust runtime instead names what the last bracketed construct it finished expected
//! (`{')', ','}` after `f(x)`, `')'` after `(x)`, `']'` after `x[0]`), and `{')', ','}` for call
//! arguments. [`corrected`] recomputes the expectation from the brackets, conditionals and
//! list/map separators before the token; the syntax errors the parser recovered from by
//! inserting or deleting one token are replayed, and after any other error nothing is
//! corrected (the parser's resynchronisation is not followed).

/// The sets the Rust runtime reports wrongly; other sets are left as they are.
const STALE: [&str; 3] = ["{')', ','}", "')'", "']'"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok {
    /// An identifier (`has`, `x`, a type name).
    Ident,
    /// A literal or other token an expression may end with (number, string, `true`).
    Value,
    Open(u8),
    Close,
    Question,
    Colon,
    Comma,
    /// `.`
    Dot,
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Top,
    /// Parentheses or call arguments.
    Parens,
    Index,
    List,
    /// A map or message literal.
    Braces,
}

#[derive(Clone, Copy, Debug)]
struct Level {
    kind: Kind,
    /// Conditionals whose `?` was seen at this level and whose `:` was not.
    pending: u32,
}

/// The tokens of `source` (byte offset, kind). Only what bracket matching needs: strings,
/// comments and numbers are skipped whole.
fn tokens(source: &str) -> Vec<(usize, Tok)> {
    let b = source.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let word = &source[start..i];
            let is_prefix = word.len() <= 2 && word.chars().all(|ch| "rRbB".contains(ch));
            if is_prefix && matches!(b.get(i), Some(b'\'' | b'"')) {
                let raw = word.contains(['r', 'R']);
                i = skip_string(b, i, raw);
                out.push((start, Tok::Value));
                continue;
            }
            let tok = match word {
                "true" | "false" | "null" => Tok::Value,
                "in" => Tok::Other,
                _ => Tok::Ident,
            };
            out.push((start, tok));
            continue;
        }
        if c == b'\'' || c == b'"' {
            i = skip_string(b, i, false);
            out.push((start, Tok::Value));
            continue;
        }
        let value_before = matches!(out.last(), Some((_, Tok::Ident | Tok::Value | Tok::Close)));
        if c.is_ascii_digit()
            || (c == b'.' && !value_before && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            i += 1;
            while i < b.len()
                && (b[i].is_ascii_alphanumeric()
                    || b[i] == b'.'
                    || ((b[i] == b'+' || b[i] == b'-') && matches!(b[i - 1], b'e' | b'E')))
            {
                i += 1;
            }
            out.push((start, Tok::Value));
            continue;
        }
        let tok = match c {
            b'(' | b'[' | b'{' => Tok::Open(c),
            b')' | b']' | b'}' => Tok::Close,
            b'?' => Tok::Question,
            b':' => Tok::Colon,
            b',' => Tok::Comma,
            b'.' => Tok::Dot,
            _ => Tok::Other,
        };
        // Two-character operators are one token.
        i += if matches!(
            (c, b.get(i + 1)),
            (b'=' | b'!' | b'<' | b'>', Some(b'=')) | (b'&', Some(b'&')) | (b'|', Some(b'|'))
        ) {
            2
        } else {
            1
        };
        out.push((start, tok));
    }
    out
}

/// The end of the string literal whose quote is at `i`.
fn skip_string(b: &[u8], i: usize, raw: bool) -> usize {
    let q = b[i];
    let triple = b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q);
    let mut j = if triple { i + 3 } else { i + 1 };
    while j < b.len() {
        if b[j] == b'\\' && !raw {
            j += 2;
            continue;
        }
        if b[j] == q {
            if !triple {
                return j + 1;
            }
            if b.get(j + 1) == Some(&q) && b.get(j + 2) == Some(&q) {
                return j + 3;
            }
        }
        if b[j] == b'\n' && !triple {
            return j;
        }
        j += 1;
    }
    b.len()
}

struct Scan {
    levels: Vec<Level>,
    prev: Option<Tok>,
}

impl Scan {
    fn feed(&mut self, tok: Tok) {
        let value_before = matches!(self.prev, Some(Tok::Ident | Tok::Value | Tok::Close));
        match tok {
            Tok::Open(c) => {
                let kind = match c {
                    b'(' => Kind::Parens,
                    b'[' if value_before => Kind::Index,
                    b'[' => Kind::List,
                    _ => Kind::Braces,
                };
                self.levels.push(Level { kind, pending: 0 });
            }
            Tok::Close if self.levels.len() > 1 => {
                self.levels.pop();
            }
            // After an operand, `?` is a conditional; after `.`, `[`, `{`, `,` it marks an
            // optional field, index or entry.
            Tok::Question if value_before => self.top().pending += 1,
            Tok::Colon => {
                let l = self.top();
                l.pending = l.pending.saturating_sub(1);
            }
            Tok::Comma => self.top().pending = 0,
            _ => {}
        }
        self.prev = Some(tok);
    }

    fn top(&mut self) -> &mut Level {
        if self.levels.is_empty() {
            self.levels.push(Level {
                kind: Kind::Top,
                pending: 0,
            });
        }
        let n = self.levels.len();
        &mut self.levels[n - 1]
    }

    fn expected(&mut self) -> &'static str {
        let l = *self.top();
        if l.pending > 0 {
            return "':'";
        }
        match l.kind {
            Kind::Top => "<EOF>",
            Kind::Parens => "')'",
            Kind::Index => "']'",
            Kind::List => "{']', ','}",
            Kind::Braces => "{'}', ','}",
        }
    }
}

/// `messages` (the parser's, at byte offsets of `source`, in order) with the expectation of
/// each "mismatched input" error cel-go words differently recomputed (see the module).
pub(super) fn corrected(source: &str, messages: &[(usize, String)]) -> Vec<String> {
    let toks = tokens(source);
    let mut scan = Scan {
        levels: vec![Level {
            kind: Kind::Top,
            pending: 0,
        }],
        prev: None,
    };
    let mut next = 0;
    let mut following = true;
    let mut skip_at: Option<usize> = None;
    let mut out = Vec::with_capacity(messages.len());
    for (at, msg) in messages {
        crate::budget::charge(1);
        if !following {
            out.push(msg.clone());
            continue;
        }
        while next < toks.len() && toks[next].0 < *at {
            if skip_at != Some(toks[next].0) {
                scan.feed(toks[next].1);
            }
            next += 1;
        }
        let body = msg.strip_prefix("Syntax error: ");
        if let Some((head, set)) = body.and_then(|m| {
            m.strip_prefix("mismatched input ")
                .and_then(|r| r.rsplit_once(" expecting "))
        }) {
            following = false;
            if STALE.contains(&set) {
                out.push(format!(
                    "Syntax error: mismatched input {head} expecting {}",
                    scan.expected()
                ));
                continue;
            }
        } else if let Some(tok) = body
            .and_then(|m| m.strip_prefix("missing '"))
            .and_then(|r| r.split_once("' at "))
            .map(|(t, _)| t)
        {
            // The parser went on as if the token were there.
            match tok {
                ":" => scan.feed(Tok::Colon),
                ")" | "]" | "}" => scan.feed(Tok::Close),
                _ => following = false,
            }
        } else if body.is_some_and(|m| m.starts_with("extraneous input ")) {
            // The parser went on without the token.
            skip_at = Some(*at);
        } else {
            following = false;
        }
        out.push(msg.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(source: &str, at: usize, set: &str) -> String {
        corrected(
            source,
            &[(
                at,
                format!("Syntax error: mismatched input 'x' expecting {set}"),
            )],
        )
        .remove(0)
    }

    #[test]
    fn the_construct_in_progress_names_what_it_expects() {
        // Each case: the source, where the error is (the first place of a text), the set the
        // parser names, and the end of the corrected message.
        for (s, at, set, want) in [
            (
                "true ? has(object.a) ? true : false : true",
                "? true",
                "{')', ','}",
                "expecting ':'",
            ),
            ("g(f(y) z y)", "z", "{')', ','}", "expecting ')'"),
            ("x[f(y) z y]", "z", "{')', ','}", "expecting ']'"),
            ("(x) z y", "z", "')'", "expecting <EOF>"),
            (
                "{'a': true ? f(x) ? 1 : 2 : 3}",
                "? 1",
                "{')', ','}",
                "expecting ':'",
            ),
            // A string's brackets and `?` are not tokens; `.?` marks an optional field.
            ("g(')?[', x.?y z)", "z", "{')', ','}", "expecting ')'"),
            // Other sets are the parser's own.
            ("[f(y) z y]", "z", "{']', ','}", "expecting {']', ','}"),
        ] {
            let got = one(s, s.find(at).unwrap(), set);
            assert!(got.ends_with(want), "{s}: {got}");
        }
    }

    #[test]
    fn recovered_errors_are_replayed() {
        let s = "true ? f(x) z y : 1";
        let got = corrected(
            s,
            &[
                (12, "Syntax error: missing ':' at 'z'".into()),
                (
                    14,
                    "Syntax error: mismatched input 'y' expecting {')', ','}".into(),
                ),
            ],
        );
        assert_eq!(got[1], "Syntax error: mismatched input 'y' expecting <EOF>");
    }
}
