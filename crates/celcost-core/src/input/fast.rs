//! The fast path of [`super`]: block-style YAML as CRD and policy generators write it
//! (indented mappings and sequences; plain, quoted and block scalars; comments; one-line flow
//! collections of scalars such as `["v1"]`), read a line at a time. The general parser builds every scalar a
//! character at a time and queues every token; on the public corpus it was a third of the
//! CLI's CPU time.
//!
//! Whatever is outside that subset returns `None` and the document is read by the general
//! parser: anchors, aliases, tags, tabs, carriage returns, directives,
//! explicit keys, merge keys, multi-line keys, flow collections over several lines or with
//! collections inside, block scalars with an indentation indicator or leading blank lines,
//! documents nested deeper than [`MAX_NESTING`], and anything that would be a syntax error. Where it answers,
//! it gives the value and positions the general parser gives: tests compare the two on every
//! corpus document and on hand-written edge cases, and the `crd_document` and
//! `policy_document` fuzz targets on arbitrary input.
//!
//! Cost: one pass over the lines, O(n) time and memory; scalars on one line are borrowed until
//! they are resolved, and nothing recurses deeper than [`MAX_NESTING`].

use std::borrow::Cow;

use saphyr_parser::ScalarStyle;
use serde_json::{Map, Value};

use super::{json_key, resolve_scalar};
use crate::positions::{Positions, Recorder};

/// Deeper documents go to the general parser (it has no recursion limit of its own).
const MAX_NESTING: usize = 100;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Only spaces.
    Blank,
    /// A comment after the indentation.
    Comment,
    Content,
}

#[derive(Clone, Copy)]
struct Line {
    start: usize,
    end: usize,
    /// Leading spaces.
    indent: usize,
    kind: Kind,
}

/// `None`: the text is not in the subset (see the module docs).
type Fast<T> = Option<T>;

/// A node read: its node in the positions (when recorded), its value, the line after it.
type Read = (Option<u32>, Value, usize);

/// The document `text` (one `---`-separated chunk, starting at line `first_line` of its file),
/// with its positions when `located`.
pub(super) fn read(
    text: &str,
    first_line: usize,
    located: bool,
) -> Fast<(Value, Option<Positions>)> {
    if memchr::memchr2(b'\t', b'\r', text.as_bytes()).is_some() || text.starts_with('\u{feff}') {
        return None;
    }
    let mut lines = Vec::with_capacity(text.len() / 32);
    let mut start = 0;
    // The last line's break ends it; nothing after it is a line.
    let body = text.strip_suffix('\n').unwrap_or(text);
    let breaks = memchr::memchr_iter(b'\n', body.as_bytes()).chain(std::iter::once(body.len()));
    for end in breaks {
        let piece = &body[start..end];
        let indent = piece.bytes().take_while(|&b| b == b' ').count();
        let kind = match piece.as_bytes().get(indent) {
            None => Kind::Blank,
            Some(b'#') => Kind::Comment,
            Some(_) => Kind::Content,
        };
        if indent == 0
            && (piece.starts_with("---") || piece.starts_with("...") || piece.starts_with('%'))
        {
            return None;
        }
        lines.push(Line {
            start,
            end,
            indent,
            kind,
        });
        start = end + 1;
    }
    let mut r = Reader {
        text,
        lines,
        rec: located.then(|| Recorder::new(text, first_line)),
        depth: 0,
        ends_with_break: text.ends_with('\n'),
    };
    let first = r.next_content(0)?;
    let (node, value, next) = r.block_node(first, -1)?;
    if r.next_content(next).is_some() {
        return None;
    }
    if let (Some(p), Some(node)) = (&mut r.rec, node) {
        p.root(node);
    }
    Some((value, r.rec.map(Recorder::finish)))
}

struct Reader<'t> {
    text: &'t str,
    lines: Vec<Line>,
    rec: Option<Recorder<'t>>,
    depth: usize,
    /// The text's last line has a line break.
    ends_with_break: bool,
}

impl<'t> Reader<'t> {
    fn bytes(&self) -> &'t [u8] {
        self.text.as_bytes()
    }

    /// The first line from `li` on with content (not blank, not only a comment).
    fn next_content(&self, li: usize) -> Option<usize> {
        (li..self.lines.len()).find(|&i| self.lines[i].kind == Kind::Content)
    }

    /// Where a block indented `indent` goes on after an entry that ends before line `after`: its
    /// next entry's line, `Some(None)` where the block ends, `None` (not read here) at a line
    /// indented deeper.
    fn next_entry(&self, after: usize, indent: usize) -> Fast<Option<usize>> {
        match self.next_content(after) {
            Some(nl) if self.lines[nl].indent == indent => Some(Some(nl)),
            Some(nl) if self.lines[nl].indent > indent => None,
            _ => Some(None),
        }
    }

    /// The 0-based column (in characters) of byte `at` of line `li`.
    fn col(&self, li: usize, at: usize) -> usize {
        let prefix = &self.text[self.lines[li].start..at];
        if prefix.is_ascii() {
            prefix.len()
        } else {
            prefix.chars().count()
        }
    }

    /// Line `li` (1-based, as the parser counts) and the column of byte `at`.
    fn at(&self, li: usize, at: usize) -> (usize, usize) {
        (li + 1, self.col(li, at))
    }

    /// Byte `at` ends a token: a space or the end of its line follows.
    fn ends_token(&self, li: usize, at: usize) -> bool {
        at >= self.lines[li].end || self.bytes()[at] == b' '
    }

    /// After byte `at` of line `li` come only spaces and perhaps a comment.
    fn rest_is_empty(&self, li: usize, at: usize) -> bool {
        let end = self.lines[li].end;
        let rest = &self.bytes()[at.min(end)..end];
        let first = rest.iter().position(|&b| b != b' ');
        match first {
            None => true,
            // A comment needs a space before it (`a#b` is text).
            Some(i) => rest[i] == b'#' && (i > 0 || at == self.lines[li].start),
        }
    }

    fn scalar_node(&mut self, li: usize, at: usize) -> Option<u32> {
        let (line, col) = self.at(li, at);
        self.rec.as_mut().map(|p| p.scalar_at_position(line, col))
    }

    /// A node that starts a line: `li` is a content line indented more than `parent`.
    fn block_node(&mut self, li: usize, parent: isize) -> Fast<Read> {
        let at = self.lines[li].start + self.lines[li].indent;
        self.node(li, at, parent, true)
    }

    /// The node whose first token is byte `at` of line `li`, inside a block indented `parent`;
    /// `map_ok`: a block mapping may start here (at a line's start or after `- `).
    fn node(&mut self, li: usize, at: usize, parent: isize, map_ok: bool) -> Fast<Read> {
        self.nested(|r| r.node_inner(li, at, parent, map_ok))
    }

    /// `read` one level deeper; `None` past [`MAX_NESTING`].
    fn nested(&mut self, read: impl FnOnce(&mut Self) -> Fast<Read>) -> Fast<Read> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return None;
        }
        let out = read(self);
        self.depth -= 1;
        out
    }

    /// A block sequence entry's `-` is byte `at` of line `li` (a space or the line's end after).
    fn is_entry(&self, li: usize, at: usize) -> bool {
        self.bytes()[at] == b'-' && self.ends_token(li, at + 1)
    }

    fn node_inner(&mut self, li: usize, at: usize, parent: isize, map_ok: bool) -> Fast<Read> {
        let b = self.bytes();
        let c = b[at];
        let next = b
            .get(at + 1)
            .copied()
            .filter(|_| at + 1 < self.lines[li].end);
        let blank_next = matches!(next, None | Some(b' '));
        match c {
            b'-' if blank_next => {
                if !map_ok {
                    return None;
                }
                self.sequence(li, at, false)
            }
            b'"' | b'\'' => {
                let (text, end_line, end) = self.quoted(li, at, Some(parent))?;
                if end_line == li
                    && let Some(colon) = self.key_colon_after(li, end)
                {
                    return if map_ok {
                        self.mapping(li, at, colon)
                    } else {
                        None
                    };
                }
                if !self.rest_is_empty(end_line, end) {
                    return None;
                }
                let style = if c == b'"' {
                    ScalarStyle::DoubleQuoted
                } else {
                    ScalarStyle::SingleQuoted
                };
                let node = self.scalar_node(li, at);
                Some((node, resolve_scalar(text, style, None), end_line + 1))
            }
            b'|' | b'>' => self.block_scalar(li, at, parent),
            b'[' | b'{' => self.flow(li, at),
            b'&' | b'*' | b'!' | b'%' | b'@' | b'`' | b',' | b']' | b'}' | b'#' => None,
            b'?' | b':' | b'-' if blank_next => None,
            _ => {
                let (seg_end, colon) = self.plain_segment(li, at);
                if let Some(colon) = colon {
                    return if map_ok {
                        self.mapping(li, at, colon)
                    } else {
                        None
                    };
                }
                self.plain(li, at, seg_end, parent)
            }
        }
    }

    /// A plain scalar's text on line `li` from `at`: where it ends (before trailing spaces and
    /// a comment) and, when it is a mapping key, the byte of its `:`.
    fn plain_segment(&self, li: usize, at: usize) -> (usize, Option<usize>) {
        let b = self.bytes();
        let end = self.lines[li].end;
        let mut i = at;
        while i < end {
            match b[i] {
                b':' if i + 1 >= end || b[i + 1] == b' ' => {
                    return (trim_end(b, at, i), Some(i));
                }
                b'#' if i > at && b[i - 1] == b' ' => return (trim_end(b, at, i), None),
                _ => i += 1,
            }
        }
        (trim_end(b, at, end), None)
    }

    /// After a quoted key ending before `end`: the byte of its `:`.
    fn key_colon_after(&self, li: usize, end: usize) -> Option<usize> {
        let b = self.bytes();
        let line_end = self.lines[li].end;
        let mut i = end;
        while i < line_end && b[i] == b' ' {
            i += 1;
        }
        (i < line_end && b[i] == b':' && (i + 1 >= line_end || b[i + 1] == b' ')).then_some(i)
    }

    /// A quoted scalar at byte `at` of line `li`, going on over lines indented more than
    /// `parent` (`None`: it must end on its line, as a key does): its text, and the line and
    /// byte after its closing quote.
    fn quoted(
        &self,
        li: usize,
        at: usize,
        parent: Option<isize>,
    ) -> Fast<(Cow<'t, str>, usize, usize)> {
        let b = self.bytes();
        let mut end = self.lines[li].end;
        let q = b[at];
        let from = at + 1;
        // Most have no escape and end on their line: borrowed.
        let mut i = from;
        while i < end && b[i] != q && !(q == b'"' && b[i] == b'\\') {
            i += 1;
        }
        if i < end && (q == b'"' && b[i] == b'"' || q == b'\'' && b.get(i + 1) != Some(&b'\'')) {
            return Some((Cow::Borrowed(&self.text[from..i]), li, i + 1));
        }
        // Spaces not yet written: kept before text, dropped before a line break.
        let text_end = trim_end(b, from, i);
        let mut spaces = i - text_end;
        let mut out = String::from(&self.text[from..text_end]);
        let mut line = li;
        let mut escaped_break = false;
        loop {
            if i >= end {
                // A line break: folded to a space, or to one break per empty line after it.
                let parent = parent?;
                let mut breaks = 0usize;
                line += 1;
                while self.lines.get(line)?.kind == Kind::Blank {
                    breaks += 1;
                    line += 1;
                }
                let l = self.lines[line];
                if l.indent as isize <= parent {
                    return None;
                }
                if breaks > 0 {
                    out.extend(std::iter::repeat_n('\n', breaks));
                } else if !escaped_break {
                    out.push(' ');
                }
                spaces = 0;
                escaped_break = false;
                i = l.start + l.indent;
                end = l.end;
                continue;
            }
            let c = b[i];
            if c == b' ' {
                spaces += 1;
                i += 1;
                continue;
            }
            out.extend(std::iter::repeat_n(' ', spaces));
            spaces = 0;
            match c {
                b'\'' if q == b'\'' => {
                    if i + 1 < end && b[i + 1] == b'\'' {
                        out.push('\'');
                        i += 2;
                    } else {
                        return Some((Cow::Owned(out), line, i + 1));
                    }
                }
                b'"' if q == b'"' => return Some((Cow::Owned(out), line, i + 1)),
                b'\\' if q == b'"' => {
                    if i + 1 >= end {
                        escaped_break = true;
                        i = end;
                        continue;
                    }
                    let e = b[i + 1];
                    let simple = match e {
                        b'\\' => Some('\\'),
                        b'"' => Some('"'),
                        b'/' => Some('/'),
                        b'n' => Some('\n'),
                        b't' => Some('\t'),
                        b'r' => Some('\r'),
                        b'b' => Some('\u{8}'),
                        b'f' => Some('\u{c}'),
                        b'0' => Some('\0'),
                        b'a' => Some('\u{7}'),
                        b'e' => Some('\u{1b}'),
                        b'v' => Some('\u{b}'),
                        b' ' => Some(' '),
                        _ => None,
                    };
                    if let Some(ch) = simple {
                        out.push(ch);
                        i += 2;
                        continue;
                    }
                    let digits = match e {
                        b'x' => 2,
                        b'u' => 4,
                        b'U' => 8,
                        _ => return None,
                    };
                    let hex = self.text.get(i + 2..i + 2 + digits)?;
                    if i + 2 + digits > end || !hex.bytes().all(|h| h.is_ascii_hexdigit()) {
                        return None;
                    }
                    out.push(char::from_u32(u32::from_str_radix(hex, 16).ok()?)?);
                    i += 2 + digits;
                }
                _ => {
                    let ch = self.text[i..end].chars().next()?;
                    out.push(ch);
                    i += ch.len_utf8();
                }
            }
        }
    }

    /// A flow collection on one line, `[a, "b"]` or `{a: 1, "b": c}`, of scalars, at byte `at`
    /// of line `li`.
    fn flow(&mut self, li: usize, at: usize) -> Fast<Read> {
        let b = self.bytes();
        let end = self.lines[li].end;
        let seq = b[at] == b'[';
        let close = if seq { b']' } else { b'}' };
        let skip = |mut i: usize| {
            while i < end && b[i] == b' ' {
                i += 1;
            }
            i
        };
        let (line, col) = self.at(li, at);
        if let Some(p) = &mut self.rec {
            p.open_at_position(line, col, seq);
        }
        let mut items = Vec::new();
        let mut map = Map::new();
        let mut i = skip(at + 1);
        if i < end && b[i] == close {
            i += 1;
        } else {
            loop {
                let (text, style, first, after) = self.flow_scalar(li, i)?;
                if seq {
                    let node = self.scalar_node(li, first);
                    if let (Some(p), Some(node)) = (&mut self.rec, node) {
                        p.item(node);
                    }
                    items.push(resolve_scalar(text, style, None));
                    i = skip(after);
                } else {
                    let key = json_key(resolve_scalar(text, style, None))?;
                    let colon = skip(after);
                    let quoted = style != ScalarStyle::Plain;
                    if key == "<<"
                        || colon >= end
                        || b[colon] != b':'
                        // A plain key's `:` needs a space after it.
                        || !(quoted || colon + 1 < end && b[colon + 1] == b' ')
                    {
                        return None;
                    }
                    let (line, col) = self.at(li, first);
                    if let Some(p) = &mut self.rec {
                        p.key_at_position(line, col);
                    }
                    let (text, style, first, after) = self.flow_scalar(li, skip(colon + 1))?;
                    let node = self.scalar_node(li, first);
                    if let (Some(p), Some(node)) = (&mut self.rec, node) {
                        p.value(&key, node);
                    }
                    map.insert(key, resolve_scalar(text, style, None));
                    i = skip(after);
                }
                match b.get(i).filter(|_| i < end) {
                    Some(b',') => {
                        i = skip(i + 1);
                        if i >= end || b[i] == close {
                            return None;
                        }
                    }
                    Some(&c) if c == close => {
                        i += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        if !self.rest_is_empty(li, i) {
            return None;
        }
        let node = self.rec.as_mut().map(|p| p.close(seq));
        let v = if seq {
            Value::Array(items)
        } else {
            Value::Object(map)
        };
        Some((node, v, li + 1))
    }

    /// A scalar inside a one-line flow collection at byte `at` of line `li`: its text, style,
    /// first byte and the byte after it.
    fn flow_scalar(&self, li: usize, at: usize) -> Fast<(Cow<'t, str>, ScalarStyle, usize, usize)> {
        let b = self.bytes();
        let end = self.lines[li].end;
        match *b.get(at).filter(|_| at < end)? {
            q @ (b'"' | b'\'') => {
                let (text, _, after) = self.quoted(li, at, None)?;
                let style = if q == b'"' {
                    ScalarStyle::DoubleQuoted
                } else {
                    ScalarStyle::SingleQuoted
                };
                Some((text, style, at, after))
            }
            b'&' | b'*' | b'!' | b'|' | b'>' | b'%' | b'@' | b'`' | b',' | b'[' | b']' | b'{'
            | b'}' | b'#' | b':' | b'?' | b'-' => None,
            _ => {
                let mut i = at;
                while i < end && !matches!(b[i], b',' | b'[' | b']' | b'{' | b'}' | b'#' | b':') {
                    i += 1;
                }
                let text_end = trim_end(b, at, i);
                Some((
                    Cow::Borrowed(&self.text[at..text_end]),
                    ScalarStyle::Plain,
                    at,
                    i,
                ))
            }
        }
    }

    /// A plain scalar at byte `at` of line `li` whose first line's text ends at `seg_end`; it
    /// goes on over lines indented more than `parent`.
    fn plain(&mut self, li: usize, at: usize, seg_end: usize, parent: isize) -> Fast<Read> {
        let first = &self.text[at..seg_end];
        let mut text: Cow<'t, str> = Cow::Borrowed(first);
        let mut li_end = li + 1;
        if self.bytes()[seg_end..self.lines[li].end].contains(&b'#') {
            // A comment ends the scalar; a line that would go on with it is an error.
            if let Some(nl) = self.next_content(li + 1)
                && self.lines[nl].indent as isize > parent
            {
                return None;
            }
        } else {
            // Continuation lines: (blank lines between them become line breaks).
            let mut breaks = 0usize;
            let mut i = li + 1;
            while i < self.lines.len() {
                let l = self.lines[i];
                match l.kind {
                    Kind::Blank => {
                        breaks += 1;
                        i += 1;
                        continue;
                    }
                    Kind::Comment => break,
                    Kind::Content => {}
                }
                if l.indent as isize <= parent {
                    break;
                }
                let from = l.start + l.indent;
                let (end, colon) = self.plain_segment(i, from);
                if colon.is_some() || self.bytes()[end..l.end].contains(&b'#') {
                    return None;
                }
                let s = text.to_mut();
                if breaks == 0 {
                    s.push(' ');
                } else {
                    s.extend(std::iter::repeat_n('\n', breaks));
                }
                s.push_str(&self.text[from..end]);
                breaks = 0;
                i += 1;
                li_end = i;
            }
        }
        let node = self.scalar_node(li, at);
        Some((node, resolve_scalar(text, ScalarStyle::Plain, None), li_end))
    }

    /// A block mapping whose first key starts at byte `at` of line `li` (its `:` at `colon`).
    fn mapping(&mut self, mut li: usize, mut at: usize, mut colon: usize) -> Fast<Read> {
        let m = at - self.lines[li].start;
        let (line, col) = self.at(li, at);
        if let Some(p) = &mut self.rec {
            p.open_at_position(line, col, false);
        }
        let mut map = Map::new();
        let next = loop {
            let b = self.bytes();
            let (key_text, style) = match b[at] {
                b'"' | b'\'' => {
                    let (t, _, _) = self.quoted(li, at, None)?;
                    let style = if b[at] == b'"' {
                        ScalarStyle::DoubleQuoted
                    } else {
                        ScalarStyle::SingleQuoted
                    };
                    (t, style)
                }
                _ => (
                    Cow::Borrowed(&self.text[at..trim_end(b, at, colon)]),
                    ScalarStyle::Plain,
                ),
            };
            let key = json_key(resolve_scalar(key_text, style, None))?;
            if key == "<<" {
                return None;
            }
            let (line, col) = self.at(li, at);
            if let Some(p) = &mut self.rec {
                p.key_at_position(line, col);
            }
            let (node, value, after) = self.value(li, colon, m)?;
            if let (Some(p), Some(node)) = (&mut self.rec, node) {
                p.value(&key, node);
            }
            map.insert(key, value);
            let Some(nl) = self.next_entry(after, m)? else {
                break after;
            };
            li = nl;
            at = self.lines[nl].start + m;
            let b = self.bytes();
            if self.is_entry(nl, at) {
                return None;
            }
            colon = match b[at] {
                b'"' | b'\'' => {
                    let (_, _, end) = self.quoted(nl, at, None)?;
                    self.key_colon_after(nl, end)?
                }
                b'&' | b'*' | b'!' | b'%' | b'@' | b'`' | b',' | b'[' | b']' | b'{' | b'}'
                | b'|' | b'>' | b'#' => return None,
                b'?' | b':' if self.ends_token(nl, at + 1) => return None,
                _ => self.plain_segment(nl, at).1?,
            };
        };
        let node = self.rec.as_mut().map(|p| p.close(false));
        Some((node, Value::Object(map), next))
    }

    /// The value after the `:` at byte `colon` of line `li`, in a mapping indented `m`.
    fn value(&mut self, li: usize, colon: usize, m: usize) -> Fast<Read> {
        let b = self.bytes();
        let end = self.lines[li].end;
        let mut at = colon + 1;
        while at < end && b[at] == b' ' {
            at += 1;
        }
        if at < end && b[at] != b'#' {
            return self.node(li, at, m as isize, false);
        }
        match self.next_content(li + 1) {
            Some(nl) if self.lines[nl].indent > m => self.block_node(nl, m as isize),
            Some(nl)
                if self.lines[nl].indent == m && self.is_entry(nl, self.lines[nl].start + m) =>
            {
                self.nested(|r| r.sequence(nl, r.lines[nl].start + m, true))
            }
            _ => {
                // An empty value is null, placed at its `:`.
                let node = self.scalar_node(li, colon);
                Some((node, Value::Null, li + 1))
            }
        }
    }

    /// A block sequence whose first `-` is byte `at` of line `li`. `indentless`: it is a
    /// mapping's value at the mapping's own indentation (the parser then places it at the
    /// token after its first `-`).
    fn sequence(&mut self, mut li: usize, mut at: usize, indentless: bool) -> Fast<Read> {
        let s = at - self.lines[li].start;
        if self.bytes()[self.lines[li].start..at]
            .iter()
            .any(|&b| b != b' ' && b != b'-')
        {
            return None;
        }
        let opened = if indentless {
            let mut first = at + 1;
            while first < self.lines[li].end && self.bytes()[first] == b' ' {
                first += 1;
            }
            if first >= self.lines[li].end || self.bytes()[first] == b'#' {
                return None;
            }
            self.at(li, first)
        } else {
            self.at(li, at)
        };
        if let Some(p) = &mut self.rec {
            p.open_at_position(opened.0, opened.1, true);
        }
        let mut items = Vec::new();
        let next = loop {
            let b = self.bytes();
            let end = self.lines[li].end;
            let mut item = at + 1;
            while item < end && b[item] == b' ' {
                item += 1;
            }
            let (node, value, after) = if item < end && b[item] != b'#' {
                self.node(li, item, s as isize, true)?
            } else {
                match self.next_content(li + 1) {
                    Some(nl) if self.lines[nl].indent > s => self.block_node(nl, s as isize)?,
                    _ => {
                        // An empty item is null, placed where the next token is.
                        return None;
                    }
                }
            };
            if let (Some(p), Some(node)) = (&mut self.rec, node) {
                p.item(node);
            }
            items.push(value);
            let Some(nl) = self.next_entry(after, s)? else {
                break after;
            };
            let dash = self.lines[nl].start + s;
            if !self.is_entry(nl, dash) {
                if indentless {
                    break after;
                }
                return None;
            }
            li = nl;
            at = dash;
        };
        let node = self.rec.as_mut().map(|p| p.close(true));
        Some((node, Value::Array(items), next))
    }

    /// A block scalar whose `|` or `>` is byte `at` of line `li`, inside a block indented
    /// `parent`.
    fn block_scalar(&mut self, li: usize, at: usize, parent: isize) -> Fast<Read> {
        let b = self.bytes();
        let literal = b[at] == b'|';
        let mut i = at + 1;
        let end = self.lines[li].end;
        let mut chomp = 0i8; // -1 strip, 0 clip, 1 keep
        if i < end && (b[i] == b'-' || b[i] == b'+') {
            chomp = if b[i] == b'-' { -1 } else { 1 };
            i += 1;
        }
        if !(i >= end || b[i] == b' ') || !self.rest_is_empty(li, i) {
            return None;
        }
        // The content's indentation is its first line's; no leading blank lines.
        let first = li + 1;
        let l = *self.lines.get(first)?;
        if l.kind == Kind::Blank || l.indent as isize <= parent {
            return None;
        }
        let ci = l.indent;
        let mut out = String::new();
        // Line breaks not yet written (between content lines, and trailing ones).
        let mut breaks = 0usize;
        let mut any = false;
        let mut previous_more_indented = false;
        let mut j = first;
        while j < self.lines.len() {
            let l = self.lines[j];
            let blank = l.kind == Kind::Blank;
            if !blank && l.indent < ci {
                break;
            }
            if blank && l.end - l.start <= ci {
                breaks += 1;
                j += 1;
                continue;
            }
            let text = &self.text[l.start + ci..l.end];
            let more_indented = text.starts_with(' ');
            if any {
                // Folding joins two lines of text with a space (k empty lines between them
                // give k breaks); next to a more-indented line, every break is kept.
                if literal || more_indented || previous_more_indented {
                    out.extend(std::iter::repeat_n('\n', breaks + 1));
                } else if breaks == 0 {
                    out.push(' ');
                } else {
                    out.extend(std::iter::repeat_n('\n', breaks));
                }
            }
            out.push_str(text);
            previous_more_indented = more_indented;
            any = true;
            breaks = 0;
            j += 1;
        }
        if j == self.lines.len() && !self.ends_with_break {
            // Content up to the end of a text without a final line break: left to the parser.
            return None;
        }
        // Trailing blank lines belong to the scalar (chomping decides what they add); the
        // next node starts after them.
        match chomp {
            -1 => {}
            0 => out.push('\n'),
            _ => out.extend(std::iter::repeat_n('\n', breaks + 1)),
        }
        let style = if literal {
            ScalarStyle::Literal
        } else {
            ScalarStyle::Folded
        };
        let node = self.scalar_node(li, at);
        Some((node, resolve_scalar(Cow::Owned(out), style, None), j))
    }
}

/// `at..end` of `b` without trailing spaces.
fn trim_end(b: &[u8], at: usize, mut end: usize) -> usize {
    while end > at && b[end - 1] == b' ' {
        end -= 1;
    }
    end
}

/// Whether the fast path takes `text` (a document starting at line `first_line`); where it
/// does, its value and positions are checked against the general parser's, panicking when they
/// differ (tests and fuzz targets: [`super::check_fast_reader`]).
pub(super) fn agrees(text: &str, first_line: usize) -> bool {
    let Some((value, positions)) = read(text, first_line, true) else {
        return false;
    };
    let (general, general_positions) = super::parse_general(text, first_line, true);
    assert_eq!(Ok(&value), general.as_ref(), "values differ on:\n{text}");
    assert_eq!(
        format!("{positions:?}"),
        format!("{general_positions:?}"),
        "positions differ on:\n{text}"
    );
    let (unlocated, none) = read(text, first_line, false).expect("read without positions");
    assert_eq!(
        unlocated, value,
        "values without positions differ on:\n{text}"
    );
    assert!(none.is_none());
    true
}

#[cfg(test)]
mod tests {
    use super::super::split_documents;

    fn agrees(text: &str) -> bool {
        super::agrees(text, 3)
    }

    #[test]
    fn the_generators_shapes_read_alike() {
        let taken = [
            "a: 1\nb: x\n",
            "a:\n  b:\n    c: true\n  d: [] # none\ne: {}\n",
            "k:\n- a\n- b: 1\n  c: 2\n- - x\n  - y\n-\n  z: 0\nafter: 1\n",
            "k:\n  - a\n  -   b\n  - 'it''s'\n  - \"q\\\"\\n\\u00e9\"\n",
            "- 1\n- -2\n- 0x1F\n- 1_000\n- yes\n- ~\n- .5\n- 1e3\n",
            "desc: this is\n  a folded\n\n  plain   scalar\n# c\nnext: x # trailing\n",
            "lit: |\n  line1\n\n    more\n  line3\nstrip: |-\n  x\n\n\nkeep: |+\n  y\n\n\nz: 1\n",
            "fold: >\n  a\n  b\n\n  c\nfold2: >-\n  d\n",
            "f: >\n  a\n    more\n  b\n\n    more2\n\n  c\n   \n  d\n",
            "\"quoted key\": 1\n'single': 2\nempty:\nnull: 3\n1: 4\n",
            "ünï: \"çödé\"\nx: ünï text\ny: |\n  ∂∂\n",
            "root plain\nscalar\n",
            "a:\n  b: |\n    deep\n  c: >\n    folded\n    text\n\nd: 1\n",
            "url: http://x:8080/a#b\ntime: 12:30\nc: a:b\n",
            "list:\n- name: a\n  value: |\n    v\n- name: b\n",
            "keep: |+\n  y\n",
            "\n# leading comment\n\nk: v\n\n# trailing\n",
            "v: [\"v1\"]\nops: [CREATE, 'UPDATE' ]\nm: {\"a\": \"b\", c: 1}\nn: {\"k\":\"v\"}\n",
            "l:\n- [a, b]\n- {x: y}\n",
            "d: \"a long\n  text, \\\"quoted\\\"   \n\n  after a break \\\n  joined\"\ns: 'it''s\n  two lines'\n",
            "- \"item\n  two\"\n- x\n",
        ];
        for t in taken {
            assert!(agrees(t), "the fast path declined:\n{t}");
        }
        let declined = [
            "a: &x 1\nb: *x\n",
            "a: !!str 1\n",
            "a: {b: {c: 1}}\n",
            "a: [1, [2]]\n",
            "a: [1,\n  2]\n",
            "a: [1, ]\n",
            "a: [*x]\n",
            "a: \"x\ny\"\n",
            "a:\tb\n",
            "\"multi\n  line key\": 1\n",
            "a: |2\n   x\n",
            "<<: {a: 1}\n",
            "? a\n: b\n",
            "a: b: c\n",
            "a: 1\n  b: 2\n",
            "- a\nb: 1\n",
            "a: x # c\n  more\n",
            "%YAML 1.1\n---\na: 1\n",
            "a: |\n\n  x\n",
            "a: 'x'y\n",
            "k:\n-\n- b\n",
            "f: >\n    first more\n  a\n",
        ];
        for t in declined {
            assert!(!agrees(t), "the fast path took what it should leave:\n{t}");
        }
    }

    /// Every corpus document the fast path reads, it reads as the general parser does.
    #[test]
    fn corpus_documents_read_alike() {
        let dir = std::env::var_os("CELCOST_CORPUS")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus")
            });
        if !dir.is_dir() {
            assert!(
                std::env::var_os("CELCOST_REQUIRE_CORPUS").is_none(),
                "no corpus at {}",
                dir.display()
            );
            eprintln!("SKIPPED: no corpus at {}", dir.display());
            return;
        }
        let mut stack = vec![dir];
        let (mut taken, mut all) = (0, 0);
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
                    let Ok(text) = std::fs::read_to_string(&p) else {
                        continue;
                    };
                    for (_, chunk) in split_documents(&text) {
                        all += 1;
                        taken += usize::from(agrees(chunk));
                    }
                }
            }
        }
        eprintln!("fast path: {taken} of {all} corpus documents");
        assert!(taken > 0, "the fast path read no corpus document");
    }
}
