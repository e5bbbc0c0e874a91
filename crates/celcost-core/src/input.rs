//! Reading manifests: multi-document YAML (with the YAML 1.1 scalar rules of the go-yaml v2
//! fork behind `sigs.k8s.io/yaml`, which the API server and kubectl use), JSON, and `kind: List`.
//! Built on `saphyr-parser` events, with limits on nesting and alias expansion so that hostile
//! input fails with an error instead of exhausting memory.

use std::borrow::Cow;
use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, Span};
use serde_json::{Map, Number, Value};

use crate::positions::{Positions, Recorder};

mod fast;

/// Containers nested deeper than this are refused.
pub const MAX_DEPTH: usize = 10_000;
/// Aliases may not expand a document to more than this many nodes beyond what it spells out.
pub const MAX_ALIAS_NODES: usize = 1_000_000;

/// One document of a manifest file.
#[derive(Debug)]
pub struct Document {
    /// 1-based document number within the file.
    pub index: usize,
    /// The document, or why it could not be read.
    pub value: Result<Value, String>,
}

/// Files under `path` (recursively for directories) that look like manifests, sorted.
pub fn collect_files(
    path: &std::path::Path,
    out: &mut Vec<std::path::PathBuf>,
    errors: &mut Vec<String>,
) {
    match std::fs::metadata(path) {
        Err(e) => errors.push(format!("{}: {e}", path.display())),
        Ok(m) if m.is_dir() => match std::fs::read_dir(path) {
            Err(e) => errors.push(format!("{}: {e}", path.display())),
            Ok(rd) => {
                let mut entries: Vec<std::path::PathBuf> = rd.flatten().map(|e| e.path()).collect();
                entries.sort();
                for p in entries {
                    if p.is_dir() {
                        collect_files(&p, out, errors);
                    } else if matches!(
                        p.extension().and_then(|e| e.to_str()),
                        Some("yaml" | "yml" | "json")
                    ) {
                        out.push(p);
                    }
                }
            }
        },
        Ok(_) => out.push(path.to_path_buf()),
    }
}

/// Splits and parses a manifest file. Documents are split on `---` lines first, as
/// Kubernetes' YAML reader does, so a broken document never hides the ones after it. JSON is
/// YAML, so one parser serves both.
pub fn parse_documents(text: &str) -> Vec<Document> {
    if memchr::memchr(0, text.as_bytes()).is_some() {
        return vec![Document {
            index: 1,
            value: Err("the file is binary (contains NUL bytes), not YAML or JSON".into()),
        }];
    }
    let mut docs = Vec::new();
    for (n, (first_line, chunk)) in split_documents(text).into_iter().enumerate() {
        docs.push(Document {
            index: n + 1,
            value: parse_one(chunk, first_line),
        });
    }
    docs
}

/// As [`parse_documents`], each document with where its nodes are in the file
/// ([`crate::positions`]): `None` for a document that could not be read, and for a JSON
/// document nested deeper than the YAML parser goes (read as JSON, without positions).
pub fn parse_documents_located(text: &str) -> Vec<(Document, Option<Positions>)> {
    if memchr::memchr(0, text.as_bytes()).is_some() {
        return parse_documents(text)
            .into_iter()
            .map(|d| (d, None))
            .collect();
    }
    let mut docs = Vec::new();
    for (n, (first_line, chunk)) in split_documents(text).into_iter().enumerate() {
        let (value, positions) = parse_one_located(chunk, first_line, true);
        docs.push((
            Document {
                index: n + 1,
                value,
            },
            positions,
        ));
    }
    docs
}

/// For the fuzz targets ([`crate::fuzzing`]): every document of `text` that the fast reader
/// takes, it reads as the general parser does (values and positions); panics when not.
pub fn check_fast_reader(text: &str) {
    if memchr::memchr(0, text.as_bytes()).is_some() {
        return;
    }
    for (first_line, chunk) in split_documents(text) {
        fast::agrees(chunk, first_line);
    }
}

/// Chunks between `---` separator lines, with the line number each starts at. A leading
/// separator does not open an empty document.
fn split_documents(text: &str) -> Vec<(usize, &str)> {
    let mut chunks = Vec::new();
    let mut start = 0;
    let mut start_line = 1;
    // Only lines that start with `---` can separate documents: the line starts are found with
    // a newline search (memchr), each checked for `---`; the lines before each separator are
    // counted once.
    let (mut counted_to, mut line_no) = (0, 1);
    let line_starts =
        std::iter::once(0).chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
    for at in line_starts {
        if !text.as_bytes()[at..].starts_with(b"---") {
            continue;
        }
        let end = text[at..].find('\n').map_or(text.len(), |i| at + i + 1);
        let rest = text[at + 3..end].trim();
        if !(rest.is_empty() || rest.starts_with('#')) {
            continue;
        }
        line_no += bytecount_newlines(&text[counted_to..at]);
        counted_to = at;
        chunks.push((start_line, &text[start..at]));
        start = end;
        start_line = line_no + 1;
    }
    chunks.push((start_line, &text[start..]));
    let blank = |c: &str| {
        c.lines()
            .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
    };
    if chunks.len() > 1 && blank(chunks[0].1) {
        chunks.remove(0);
    }
    if chunks.len() > 1 && blank(chunks[chunks.len() - 1].1) {
        chunks.pop();
    }
    chunks
}

fn bytecount_newlines(s: &str) -> usize {
    memchr::memchr_iter(b'\n', s.as_bytes()).count()
}

/// A JSON document nested deeper than the YAML scanner goes, read as JSON (to [`MAX_DEPTH`]
/// levels, on a stack of its own); `None` when the text is not a JSON object.
fn deep_json(text: &str) -> Option<Result<Value, String>> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for b in text.bytes() {
        match (in_string, escaped, b) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (true, false, _) => {}
            (false, _, b'"') => in_string = true,
            (false, _, b'{' | b'[') => {
                depth += 1;
                max = max.max(depth);
            }
            (false, _, b'}' | b']') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if max > MAX_DEPTH {
        return Some(Err(format!(
            "JSON nesting is deeper than {MAX_DEPTH} levels"
        )));
    }
    stacker::grow(max * 16 * 1024 + (1 << 20), || {
        use serde::Deserialize;
        let mut de = serde_json::Deserializer::from_str(text);
        de.disable_recursion_limit();
        let v = Value::deserialize(&mut de).and_then(|v| de.end().map(|()| v));
        Some(v.map_err(|e| format!("JSON syntax error: {e}")))
    })
}

fn parse_one(text: &str, first_line: usize) -> Result<Value, String> {
    parse_one_located(text, first_line, false).0
}

fn parse_one_located(
    text: &str,
    first_line: usize,
    located: bool,
) -> (Result<Value, String>, Option<Positions>) {
    if let Some((value, positions)) = fast::read(text, first_line, located) {
        return (Ok(value), positions);
    }
    parse_general(text, first_line, located)
}

/// Any YAML, with the general parser.
fn parse_general(
    text: &str,
    first_line: usize,
    located: bool,
) -> (Result<Value, String>, Option<Positions>) {
    let mut b = Builder::new();
    if located {
        b.positions = Some(Recorder::new(text, first_line));
    }
    let mut parser = Parser::new_from_str(text);
    let mut seen_document = false;
    loop {
        match parser.next_event() {
            None => break,
            Some(Err(e)) => {
                let m = e.marker();
                let info = if e.info().contains("recursion limit") {
                    // The YAML scanner counts flow (`{}`/`[]`) levels in a byte; the API server
                    // reads JSON to 10,000 levels. A JSON document that deep is read as JSON.
                    if let Some(v) = deep_json(text) {
                        return (v, None);
                    }
                    "nesting is too deep (the YAML parser's recursion limit)"
                } else {
                    e.info()
                };
                return (
                    Err(format!(
                        "YAML syntax error at line {} column {}: {info}",
                        m.line() + first_line - 1,
                        m.col() + 1
                    )),
                    None,
                );
            }
            Some(Ok((ev, span))) => match ev {
                Event::DocumentStart(_) => {
                    if seen_document {
                        break;
                    }
                    seen_document = true;
                    if let Some(p) = &mut b.positions {
                        p.event_end(span);
                    }
                }
                Event::DocumentEnd | Event::StreamStart | Event::StreamEnd | Event::Nothing => {
                    if let Some(p) = &mut b.positions {
                        p.event_end(span);
                    }
                }
                other => b.on_event(other, span),
            },
        }
    }
    b.finish()
}

enum Frame {
    Seq(Vec<Value>, usize),
    Map(Map<String, Value>, Option<String>, usize),
}

struct Builder<'t> {
    stack: Vec<Frame>,
    root: Option<Value>,
    anchors: HashMap<usize, Value>,
    error: Option<String>,
    alias_nodes: usize,
    /// Where each node is, when asked for ([`parse_documents_located`]).
    positions: Option<Recorder<'t>>,
}

impl<'t> Builder<'t> {
    fn new() -> Self {
        Builder {
            stack: Vec::new(),
            root: None,
            anchors: HashMap::new(),
            error: None,
            alias_nodes: 0,
            positions: None,
        }
    }

    fn finish(self) -> (Result<Value, String>, Option<Positions>) {
        if let Some(e) = self.error {
            return (Err(e), None);
        }
        (
            Ok(self.root.unwrap_or(Value::Null)),
            self.positions.map(Recorder::finish),
        )
    }

    fn fail(&mut self, msg: String) {
        if self.error.is_none() {
            self.error = Some(msg);
        }
        self.stack.clear();
    }

    fn on_event(&mut self, ev: Event<'_>, span: Span) {
        if self.error.is_some() {
            return;
        }
        self.on_event_inner(ev, span);
        if let Some(p) = &mut self.positions {
            p.event_end(span);
        }
    }

    fn on_event_inner(&mut self, ev: Event<'_>, span: Span) {
        match ev {
            Event::Scalar(text, style, anchor, tag) => {
                let has_properties = tag.is_some() || anchor != 0;
                let tag = tag.map(|t| format!("{}{}", t.handle, t.suffix));
                let v = resolve_scalar(text, style, tag.as_deref());
                // A mapping's key needs no node of its own in the positions, only its place.
                let is_key = matches!(self.stack.last(), Some(Frame::Map(_, None, _)));
                if is_key && anchor == 0 {
                    if let Some(p) = &mut self.positions {
                        p.key_scalar(span, style, has_properties);
                    }
                    return self.set_key(v);
                }
                let node = self
                    .positions
                    .as_mut()
                    .map(|p| p.scalar(span, style, has_properties));
                self.push_value(v, anchor, node);
            }
            Event::SequenceStart(anchor, _) => {
                if self.stack.len() >= MAX_DEPTH {
                    return self.fail(format!("YAML nesting is deeper than {MAX_DEPTH} levels"));
                }
                if let Some(p) = &mut self.positions {
                    p.open(span, true);
                }
                self.stack.push(Frame::Seq(Vec::new(), anchor));
            }
            Event::MappingStart(anchor, _) => {
                if self.stack.len() >= MAX_DEPTH {
                    return self.fail(format!("YAML nesting is deeper than {MAX_DEPTH} levels"));
                }
                if let Some(p) = &mut self.positions {
                    p.open(span, false);
                }
                self.stack.push(Frame::Map(Map::new(), None, anchor));
            }
            Event::SequenceEnd => {
                if let Some(Frame::Seq(v, anchor)) = self.stack.pop() {
                    let node = self.positions.as_mut().map(|p| p.close(true));
                    self.push_value(Value::Array(v), anchor, node);
                }
            }
            Event::MappingEnd => {
                if let Some(Frame::Map(m, _, anchor)) = self.stack.pop() {
                    let node = self.positions.as_mut().map(|p| p.close(false));
                    self.push_value(Value::Object(m), anchor, node);
                }
            }
            Event::Alias(id) => {
                let Some(v) = self.anchors.get(&id).cloned() else {
                    return self.fail("YAML alias refers to an unknown anchor".into());
                };
                self.alias_nodes = self
                    .alias_nodes
                    .saturating_add(count_nodes(&v, MAX_ALIAS_NODES + 1));
                if self.alias_nodes > MAX_ALIAS_NODES {
                    return self.fail("document contains excessive aliasing".into());
                }
                let node = self.positions.as_mut().map(|p| p.alias(span, id));
                self.push_value(v, 0, node);
            }
            _ => {}
        }
    }

    /// `node`: the value's node in the positions being recorded, if any.
    fn push_value(&mut self, v: Value, anchor: usize, node: Option<u32>) {
        if anchor != 0 {
            self.anchors.insert(anchor, v.clone());
        }
        if let (Some(p), Some(node)) = (&mut self.positions, node) {
            if anchor != 0 {
                p.anchor(anchor, node);
            }
            match self.stack.last() {
                None => p.root(node),
                Some(Frame::Seq(..)) => p.item(node),
                Some(Frame::Map(_, None, _)) => p.key(node),
                Some(Frame::Map(_, Some(k), _)) => p.value(k, node),
            }
        }
        match self.stack.last_mut() {
            None => self.root = Some(v),
            Some(Frame::Seq(items, _)) => items.push(v),
            Some(Frame::Map(m, key, _)) => match key.take() {
                None => self.set_key(v),
                Some(k) => {
                    if k == "<<" {
                        // Merge keys: the mapping(s) given are merged without overriding.
                        let sources = match v {
                            Value::Array(a) => a,
                            other => vec![other],
                        };
                        for s in sources {
                            if let Value::Object(src) = s {
                                for (sk, sv) in src {
                                    m.entry(sk).or_insert(sv);
                                }
                            }
                        }
                    } else {
                        m.insert(k, v);
                    }
                }
            },
        }
    }
}

impl Builder<'_> {
    /// `v` is the key of the innermost mapping's next entry.
    fn set_key(&mut self, v: Value) {
        match json_key(v) {
            Some(k) => {
                if let Some(Frame::Map(_, key, _)) = self.stack.last_mut() {
                    *key = Some(k);
                }
            }
            None => self.fail("YAML mapping keys must be scalars".into()),
        }
    }
}

fn count_nodes(v: &Value, cap: usize) -> usize {
    let mut n = 1;
    match v {
        Value::Array(a) => {
            for x in a {
                n += count_nodes(x, cap);
                if n > cap {
                    return n;
                }
            }
        }
        Value::Object(o) => {
            for x in o.values() {
                n += count_nodes(x, cap);
                if n > cap {
                    return n;
                }
            }
        }
        _ => {}
    }
    n
}

/// Non-string keys become their JSON text, as `sigs.k8s.io/yaml` converts them.
fn json_key(v: Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Null => Some("null".into()),
        _ => None,
    }
}

/// go-yaml v2's resolution of scalars (YAML 1.1 booleans, octal, `~` nulls, ...).
fn resolve_scalar(text: Cow<'_, str>, style: ScalarStyle, tag: Option<&str>) -> Value {
    match tag {
        Some("!!str") | Some("tag:yaml.org,2002:str") => return Value::String(text.into_owned()),
        Some("!!binary") | Some("tag:yaml.org,2002:binary") => {
            return Value::String(text.into_owned());
        }
        _ => {}
    }
    if style != ScalarStyle::Plain {
        return Value::String(text.into_owned());
    }
    match &*text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Value::Bool(true);
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Value::Bool(false);
        }
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" | "-.inf" | "-.Inf" | "-.INF"
        | ".nan" | ".NaN" | ".NAN" => {
            // JSON has no infinities or NaN; sigs.k8s.io/yaml fails on them, keep the text.
            return Value::String(text.into_owned());
        }
        _ => {}
    }
    let first = text.as_bytes()[0];
    if first.is_ascii_digit() || first == b'-' || first == b'+' || first == b'.' {
        let plain: Cow<'_, str> = if text.contains('_') {
            Cow::Owned(text.chars().filter(|&c| c != '_').collect())
        } else {
            Cow::Borrowed(&*text)
        };
        if let Some(i) = parse_go_int(&plain) {
            return Value::Number(i);
        }
        if is_yaml_float(&plain)
            && let Ok(f) = plain.parse::<f64>()
            && let Some(n) = Number::from_f64(f)
        {
            return Value::Number(n);
        }
    }
    Value::String(text.into_owned())
}

/// Go `strconv.ParseInt(s, 0, 64)`, then `ParseUint` (go-yaml v2 tries both).
fn parse_go_int(s: &str) -> Option<Number> {
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if body.is_empty() {
        return None;
    }
    let (radix, digits) =
        if let Some(r) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            (16, r)
        } else if let Some(r) = body.strip_prefix("0b").or_else(|| body.strip_prefix("0B")) {
            (2, r)
        } else if let Some(r) = body.strip_prefix("0o").or_else(|| body.strip_prefix("0O")) {
            (8, r)
        } else if body.len() > 1 && body.starts_with('0') {
            (8, &body[1..])
        } else {
            (10, body)
        };
    if digits.is_empty() {
        return None;
    }
    let mag = u64::from_str_radix(digits, radix).ok()?;
    if neg {
        if mag <= i64::MAX as u64 + 1 {
            return Some(Number::from(-(mag as i128) as i64));
        }
        return None;
    }
    Some(Number::from(mag))
}

fn is_yaml_float(s: &str) -> bool {
    // ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
    let b = s.as_bytes();
    let at = |i: usize, set: &[u8]| b.get(i).is_some_and(|c| set.contains(c));
    // The digits from `i` on, `i` past them: how many.
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    let mut i = usize::from(at(0, b"-+"));
    if at(i, b".") {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if at(i, b".") {
            i += 1;
            digits(&mut i);
        }
    }
    if at(i, b"eE") {
        i += 1;
        i += usize::from(at(i, b"-+"));
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// A Kubernetes object found in a manifest, with where it came from.
#[derive(Debug)]
pub struct FoundObject {
    /// `<path>#<document>`; items of a `kind: List` add `[i]`.
    pub source: String,
    pub value: Value,
}

/// Objects of a document: the document itself, or the items of a `kind: List`.
pub fn objects_of(source: &str, v: Value) -> Vec<FoundObject> {
    let is_list = v
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| k == "List" || k.ends_with("List"))
        && v.get("items").is_some_and(Value::is_array);
    if is_list {
        if let Value::Object(mut o) = v
            && let Some(Value::Array(items)) = o.remove("items")
        {
            return items
                .into_iter()
                .enumerate()
                .map(|(i, it)| FoundObject {
                    source: format!("{source}[{i}]"),
                    value: it,
                })
                .collect();
        }
        return vec![];
    }
    vec![FoundObject {
        source: source.to_string(),
        value: v,
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(y: &str) -> Value {
        parse_documents(y).remove(0).value.unwrap()
    }

    #[test]
    fn yaml_1_1_scalars() {
        let v = one(
            "a: yes\nb: off\nc: 0755\nd: 0x1F\ne: '=' \nf: =\ng: 1_000\nh: 1.5e3\ni: ~\nj: '1'\nk: 2.\n",
        );
        assert_eq!(v["a"], Value::Bool(true));
        assert_eq!(v["b"], Value::Bool(false));
        assert_eq!(v["c"], 493);
        assert_eq!(v["d"], 31);
        assert_eq!(v["e"], "=");
        assert_eq!(v["f"], "=");
        assert_eq!(v["g"], 1000);
        assert_eq!(v["h"], 1500.0);
        assert_eq!(v["i"], Value::Null);
        assert_eq!(v["j"], "1");
        assert_eq!(v["k"], 2.0);
    }

    #[test]
    fn multi_document_and_errors() {
        let docs = parse_documents("a: 1\n---\n---\nb: [1, 2\n");
        assert_eq!(docs.len(), 3);
        assert_eq!(docs[0].value.as_ref().unwrap()["a"], 1);
        assert_eq!(docs[1].value.as_ref().unwrap(), &Value::Null);
        assert!(docs[2].value.is_err());
        assert_eq!(docs[2].index, 3);
    }

    #[test]
    fn alias_bombs_are_refused() {
        let mut y = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            y.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n", p = i - 1));
        }
        let docs = parse_documents(&y);
        assert!(
            docs[0]
                .value
                .as_ref()
                .unwrap_err()
                .contains("excessive aliasing")
        );
    }

    #[test]
    fn deep_nesting_and_binary_are_errors() {
        let deep = "[".repeat(20_000);
        assert!(parse_documents(&deep)[0].value.is_err());
        assert!(parse_documents("a\0b")[0].value.is_err());
    }

    #[test]
    fn yaml_floats_as_the_core_schema_resolves_them() {
        for f in ["1.5", ".5", "-1.", "+0", "1e3", "+1.5E-3", "-.5e+10", "007"] {
            assert!(is_yaml_float(f), "{f}");
        }
        for f in [
            "", ".", "-", "1e", "1.2.3", "e3", ".e3", "1e+", "1,5", "0x1", " 1",
        ] {
            assert!(!is_yaml_float(f), "{f}");
        }
    }

    #[test]
    fn json_is_yaml() {
        let v = one(r#"{"kind": "CustomResourceDefinition", "n": [1, 2.5, true, null]}"#);
        assert_eq!(v["n"][1], 2.5);
    }

    #[test]
    fn lists_are_unwrapped() {
        let v = one("kind: List\nitems:\n- kind: A\n- kind: B\n");
        let objs = objects_of("f#1", v);
        assert_eq!(objs.len(), 2);
        assert_eq!(objs[1].source, "f#1[1]");
    }
}
