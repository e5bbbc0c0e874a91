//! A bound written into a CRD's YAML (or JSON) text in place: the one key added or its number
//! lowered, everything else byte for byte as it was — comments, key order, quoting,
//! indentation, flow or block style. The places come from the positions the reader recorded
//! ([`celcost_core::positions`]); nothing is serialized again.
//!
//! - An existing `maxLength: 64` (a plain decimal integer) is lowered where its number is.
//! - In a block mapping the new key goes on a line of its own before the first key that sorts
//!   after it (controller-gen writes keys in that order, so a generated file stays as the
//!   generator would write it), at the mapping's indentation and in the quoting of its keys;
//!   when the mapping's first key follows a sequence's `- `, the new key takes that place and
//!   the old first key moves to the next line at the same column. When no key sorts after it,
//!   the new line goes after the mapping's last line.
//! - In a flow mapping (`{type: string}`, JSON) the new key goes first: `{maxLength: 64, type:
//!   string}`, `"maxLength": 64,` before a JSON object's first key.
//!
//! Anything else (a number written otherwise, a key that does not start its line, keys at
//! different columns) is refused with the reason. The caller reads the edited text back and
//! compares it with the intended object, so an edit that reads back differently (an alias
//! shared with other nodes, an odd layout) is refused too, never written.

use celcost_core::positions::{NodeId, Pos, Positions};

/// A replacement of the bytes `start..end` of a text (an insertion when they are equal).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TextEdit {
    pub start: usize,
    pub end: usize,
    pub text: String,
}

/// A text with its line starts, to turn positions (1-based lines, columns in characters) into
/// byte offsets. Lines break where YAML breaks them: at `\r\n`, `\n` and a lone `\r` (YAML 1.2
/// `b-break`), so a line number here is the reader's.
pub struct Lines<'t> {
    text: &'t str,
    starts: Vec<usize>,
    /// Whether some line ends with a lone `\r`.
    lone_cr: bool,
}

impl<'t> Lines<'t> {
    pub fn new(text: &'t str) -> Self {
        let b = text.as_bytes();
        let mut lone_cr = false;
        let starts = std::iter::once(0)
            .chain(b.iter().enumerate().filter_map(|(i, &c)| {
                let cr = c == b'\r' && b.get(i + 1) != Some(&b'\n');
                lone_cr |= cr;
                (c == b'\n' || cr).then_some(i + 1)
            }))
            .collect();
        Lines {
            text,
            starts,
            lone_cr,
        }
    }

    pub fn text(&self) -> &'t str {
        self.text
    }

    /// How many lines (a text ending with a newline has an empty last one).
    pub fn count(&self) -> usize {
        self.starts.len()
    }

    /// The byte offset where 1-based line `l` starts.
    pub fn start(&self, l: usize) -> usize {
        self.starts
            .get(l.saturating_sub(1))
            .copied()
            .unwrap_or(self.text.len())
    }

    /// Line `l` (1-based) without its line break.
    pub fn line(&self, l: usize) -> &'t str {
        let s = self.start(l);
        let e = self.starts.get(l).copied().unwrap_or(self.text.len());
        self.text[s..e]
            .trim_end_matches('\n')
            .trim_end_matches('\r')
    }

    /// The line break the text uses after line `l` (`\r\n`, `\r` or `\n`; `\n` after the last
    /// line when it has none).
    pub fn newline(&self, l: usize) -> &'static str {
        let e = self.starts.get(l).copied().unwrap_or(self.text.len());
        let before = &self.text[..e];
        if before.ends_with("\r\n") {
            "\r\n"
        } else if before.ends_with('\r') {
            "\r"
        } else {
            "\n"
        }
    }

    /// The 1-based line the byte offset `off` is on.
    pub fn line_of(&self, off: usize) -> usize {
        self.starts.partition_point(|&s| s <= off)
    }

    /// Whether the text ends with a line break.
    pub fn ends_with_break(&self) -> bool {
        self.text.ends_with(['\n', '\r'])
    }

    /// The byte offset of a position.
    pub fn offset(&self, p: Pos) -> Option<usize> {
        let l = p.line as usize;
        if l == 0 || l > self.starts.len() {
            return None;
        }
        let line = self.line(l);
        let col = (p.column as usize).checked_sub(1)?;
        let within = match line.char_indices().nth(col) {
            Some((b, _)) => b,
            None if line.chars().count() == col => line.len(),
            None => return None,
        };
        Some(self.start(l) + within)
    }
}

/// The token of a plain scalar starting at `off`.
fn plain_token(text: &str, off: usize) -> &str {
    let rest = &text[off..];
    let len = rest
        .find([' ', '\t', '\r', '\n', ',', '}', ']', '#'])
        .unwrap_or(rest.len());
    &rest[..len]
}

/// The edit that sets `keyword: value` on the mapping `node`, or `None` when the node already
/// has that bound or a lower one (a bound is never loosened).
pub fn bound_edit(
    lines: &Lines<'_>,
    p: &Positions,
    node: NodeId,
    keyword: &str,
    value: i64,
) -> Result<Option<TextEdit>, String> {
    if lines.lone_cr {
        // YAML breaks lines there, and the reader's positions after one are not always the
        // lines YAML counts (a scalar's token is put a line early): no edit is placed by them.
        return Err(
            "the file breaks lines with a lone CR (\\r); only LF and CRLF files are edited".into(),
        );
    }
    if p.is_scalar(node) || p.is_seq(node) {
        return Err("the schema node is not a mapping in the file".into());
    }
    if let Some(v) = p.get(node, keyword) {
        return lower_existing(lines, p, v, keyword, value);
    }
    let at = lines
        .offset(p.at(node))
        .ok_or("the schema node is not where the reader put it")?;
    let mut keys: Vec<(&str, Pos)> = p
        .entries(node)
        .into_iter()
        .filter_map(|(k, n)| p.key_at(n).map(|pos| (k, pos)))
        .collect();
    keys.sort_by_key(|(_, pos)| *pos);
    let entry = Entry { keyword, value };
    if lines.text()[at..].starts_with('{') {
        flow_insert(lines, at, &keys, entry).map(Some)
    } else {
        block_insert(lines, &keys, entry).map(Some)
    }
}

/// The key and value a [`bound_edit`] writes.
#[derive(Clone, Copy)]
struct Entry<'k> {
    keyword: &'k str,
    value: i64,
}

impl Entry<'_> {
    /// `maxItems: 5`, its key in quote `q`.
    fn written(self, q: &str) -> String {
        format!("{q}{}{q}: {}", self.keyword, self.value)
    }
}

/// The existing bound `v` (a scalar) lowered to `value` where its number is; `None` when it is
/// at or below it already.
fn lower_existing(
    lines: &Lines<'_>,
    p: &Positions,
    v: NodeId,
    keyword: &str,
    value: i64,
) -> Result<Option<TextEdit>, String> {
    if !p.is_scalar(v) {
        return Err(format!("its {keyword} is not a number"));
    }
    let off = lines
        .offset(p.at(v))
        .ok_or_else(|| format!("its {keyword} is not where the reader put it"))?;
    let tok = plain_token(lines.text(), off);
    let plain = !tok.is_empty() && tok.bytes().all(|b| b.is_ascii_digit());
    let current: i64 = match tok.parse() {
        Ok(n) if plain => n,
        _ => {
            return Err(format!(
                "its {keyword} is written `{tok}`, not as a plain decimal integer"
            ));
        }
    };
    if current <= value {
        return Ok(None);
    }
    Ok(Some(TextEdit {
        start: off,
        end: off + tok.len(),
        text: value.to_string(),
    }))
}

/// The quote a key at `pos` is written in (`"`, `'` or none).
fn quote_at(lines: &Lines<'_>, pos: Pos) -> &'static str {
    match lines
        .offset(pos)
        .and_then(|o| lines.text()[o..].chars().next())
    {
        Some('"') => "\"",
        Some('\'') => "'",
        _ => "",
    }
}

/// The entry first in the flow mapping whose `{` is at byte `at`, whose keys are `keys`.
fn flow_insert(
    lines: &Lines<'_>,
    at: usize,
    keys: &[(&str, Pos)],
    entry: Entry<'_>,
) -> Result<TextEdit, String> {
    let text = lines.text();
    let Some(&(_, first)) = keys.first() else {
        // `{}`: the only key.
        let q = if text.trim_start().starts_with('{') {
            "\""
        } else {
            ""
        };
        return Ok(TextEdit {
            start: at + 1,
            end: at + 1,
            text: entry.written(q),
        });
    };
    let q = quote_at(lines, first);
    let k = lines
        .offset(first)
        .ok_or("a key is not where the reader put it")?;
    let written = if first.line as usize == lines.line_of(at) {
        format!("{}, ", entry.written(q))
    } else {
        let prefix = &text[lines.start(first.line as usize)..k];
        let nl = lines.newline(first.line as usize);
        format!("{},{nl}{}", entry.written(q), spaces_for(prefix))
    };
    Ok(TextEdit {
        start: k,
        end: k,
        text: written,
    })
}

/// The entry on a line of its own in the block mapping whose keys are `keys`: before the first
/// key that sorts after it, else after the mapping's last line.
fn block_insert(
    lines: &Lines<'_>,
    keys: &[(&str, Pos)],
    entry: Entry<'_>,
) -> Result<TextEdit, String> {
    let text = lines.text();
    let Some(&(_, first)) = keys.first() else {
        return Err("the schema node is an empty mapping that is not written `{}`".into());
    };
    if keys.iter().any(|(_, pos)| pos.column != first.column) {
        return Err("the keys of the schema node are not at one column".into());
    }
    if let Some(&(name, pos)) = keys.iter().find(|(k, _)| *k > entry.keyword) {
        let q = quote_at(lines, pos);
        let l = pos.line as usize;
        let k = lines
            .offset(pos)
            .ok_or("a key is not where the reader put it")?;
        let prefix = &text[lines.start(l)..k];
        let nl = lines.newline(l);
        if prefix.chars().all(|c| c == ' ') {
            return Ok(TextEdit {
                start: lines.start(l),
                end: lines.start(l),
                text: format!("{prefix}{}{nl}", entry.written(q)),
            });
        }
        if prefix.chars().all(|c| c == ' ' || c == '-') {
            return Ok(TextEdit {
                start: k,
                end: k,
                text: format!("{}{nl}{}", entry.written(q), spaces_for(prefix)),
            });
        }
        return Err(format!(
            "its key `{name}` does not start its line (line {l})"
        ));
    }
    let (_, last) = keys[keys.len() - 1];
    let indent = first.column as usize - 1;
    let end_line = block_end_line(lines, last.line as usize, indent);
    let nl = lines.newline(end_line);
    let insert_at = lines.start(end_line + 1);
    let lead = if insert_at == text.len() && !lines.ends_with_break() {
        nl
    } else {
        ""
    };
    Ok(TextEdit {
        start: insert_at,
        end: insert_at,
        text: format!(
            "{lead}{}{}{nl}",
            " ".repeat(indent),
            entry.written(quote_at(lines, last))
        ),
    })
}

/// The last line of a block mapping whose last key is on line `last` and whose keys are indented
/// by `indent`: the lines after it that are more indented (or a sequence's items at its keys'
/// column), comments and blank lines between.
fn block_end_line(lines: &Lines<'_>, last: usize, indent: usize) -> usize {
    let mut end_line = last;
    for l in last + 1..=lines.count() {
        let s = lines.line(l);
        let t = s.trim_start_matches(' ');
        if t.is_empty() {
            continue;
        }
        let ind = s.len() - t.len();
        if ind > indent || (ind == indent && (t == "-" || t.starts_with("- "))) {
            end_line = l;
            continue;
        }
        if t.starts_with('#') {
            continue;
        }
        break;
    }
    end_line
}

/// As many spaces as `prefix` has characters.
fn spaces_for(prefix: &str) -> String {
    " ".repeat(prefix.chars().count())
}

/// The text with the edits applied; edits are sorted first and may not overlap (insertions at
/// one offset keep their sorted order).
pub fn apply_edits(text: &str, edits: &[TextEdit]) -> Result<String, String> {
    let mut sorted: Vec<&TextEdit> = edits.iter().collect();
    sorted.sort();
    let mut out = String::with_capacity(text.len() + edits.len() * 24);
    let mut at = 0;
    for e in sorted {
        if e.start < at || e.end < e.start || e.end > text.len() {
            return Err("two edits overlap".into());
        }
        out.push_str(&text[at..e.start]);
        out.push_str(&e.text);
        at = e.end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use celcost_core::input::parse_documents_located;

    /// Sets `keyword: value` on the node at `path` (keys of mappings) of a one-document text.
    fn set(text: &str, path: &[&str], keyword: &str, value: i64) -> Result<String, String> {
        let (_, p) = parse_documents_located(text).remove(0);
        let p = p.unwrap();
        let mut n = p.root().unwrap();
        for k in path {
            n = match k.parse::<usize>() {
                Ok(i) => p.index(n, i).unwrap(),
                Err(_) => p.get(n, k).unwrap(),
            };
        }
        let lines = Lines::new(text);
        match bound_edit(&lines, &p, n, keyword, value)? {
            Some(e) => apply_edits(text, &[e]),
            None => Ok(text.to_string()),
        }
    }

    #[test]
    fn bounds_are_set_as_the_file_writes_its_keys() {
        // (what the case shows, text, path (keys joined by `.`), keyword, value, the text after)
        let t = "a:\n  maxItems: 100 # keep\n  type: array\n";
        let cases = [
            (
                "a key goes before the first that sorts after it",
                "a:\n  # the items\n  description: x\n  type: string # plain\n",
                "a",
                "maxLength",
                64,
                "a:\n  # the items\n  description: x\n  maxLength: 64\n  type: string # plain\n",
            ),
            (
                "a key after every other goes after the mapping",
                "a:\n  description: |\n    text\n\n    more\n  enum:\n  - x\n  - y\n# next\nb: 1\n",
                "a",
                "minLength",
                1,
                "a:\n  description: |\n    text\n\n    more\n  enum:\n  - x\n  - y\n  minLength: 1\n# next\nb: 1\n",
            ),
            (
                "at the end of a text without a final newline",
                "a:\n  b: 1",
                "a",
                "c",
                2,
                "a:\n  b: 1\n  c: 2\n",
            ),
            (
                "the first key of a sequence item moves down",
                "l:\n- type: string\n  x: 1\n",
                "l.0",
                "maxLength",
                5,
                "l:\n- maxLength: 5\n  type: string\n  x: 1\n",
            ),
            (
                "quoting and line breaks follow the file",
                "a:\r\n  \"type\": \"string\"\r\n",
                "a",
                "maxLength",
                5,
                "a:\r\n  \"maxLength\": 5\r\n  \"type\": \"string\"\r\n",
            ),
            (
                "a flow mapping gets the key first",
                "a: {type: string}\n",
                "a",
                "maxLength",
                5,
                "a: {maxLength: 5, type: string}\n",
            ),
            (
                "JSON gets the key first",
                "{\n  \"a\": {\n    \"type\": \"array\"\n  }\n}\n",
                "a",
                "maxItems",
                5,
                "{\n  \"a\": {\n    \"maxItems\": 5,\n    \"type\": \"array\"\n  }\n}\n",
            ),
            (
                "an empty JSON object gets the key",
                "{\"a\": {}}",
                "a",
                "maxItems",
                5,
                "{\"a\": {\"maxItems\": 5}}",
            ),
            (
                "a bound is lowered in place",
                t,
                "a",
                "maxItems",
                20,
                "a:\n  maxItems: 20 # keep\n  type: array\n",
            ),
            ("a bound is never raised", t, "a", "maxItems", 200, t),
            ("an equal bound is left", t, "a", "maxItems", 100, t),
        ];
        for (case, text, path, keyword, value, after) in cases {
            let path: Vec<&str> = path.split('.').collect();
            assert_eq!(
                set(text, &path, keyword, value).as_deref(),
                Ok(after),
                "{case}"
            );
        }
    }

    #[test]
    fn odd_values_and_layouts_are_refused() {
        for (text, why) in [
            ("a:\n  maxItems: 0x10\n", "`0x10`"),
            ("a: 1\n", "not a mapping"),
            ("a:\r  maxItems: 9\r", "lone CR"),
            ("a:\r\n  b: 1\r\n  c: 2\r  d: 3\n", "lone CR"),
        ] {
            let e = set(text, &["a"], "maxItems", 5).unwrap_err();
            assert!(e.contains(why), "{text:?}: {e}");
        }
    }
}
