//! Where the nodes of a YAML or JSON document are in its file: a tree of positions beside the
//! `serde_json::Value` that [`crate::input`] builds, recorded from the same parser events, so
//! that a report can point at `file:line:column` of each rule, expression and error without the
//! estimator knowing about files.
//!
//! The position of a scalar is where its *token* starts: the opening quote of a quoted scalar,
//! the `|` or `>` indicator of a block scalar, the first character of a plain scalar. A tag or
//! an anchor before it (`!!str`, `&a`) is skipped. The position of a mapping or sequence is
//! where the parser marks its start (the first key of a block mapping, the `{` or `[` of a flow
//! one); a mapping's value also keeps the position of its key. Lines and columns are 1-based;
//! columns count characters (Unicode code points), as the parser does.
//!
//! Cost: one arena entry per node plus each mapping key once, O(n) memory; each mapping's keys
//! are sorted once (O(n log n)) and looked up by binary search. Aliases are not expanded: an
//! alias node refers to its anchored node, so an alias bomb costs nothing here. Nothing
//! recurses, so deep nesting needs no stack.

use std::collections::HashMap;

use saphyr_parser::{Marker, ScalarStyle, Span};

/// A 1-based line and column (in characters) in a file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    pub line: u32,
    pub column: u32,
}

/// A node of a [`Positions`] tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeId(u32);

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
enum Kids {
    Leaf,
    /// `count` items from `start` of [`Positions::items`].
    Seq {
        start: u32,
        count: u32,
    },
    /// `count` entries from `start` of [`Positions::entries`], sorted by key, one entry per key
    /// (as the document's mapping resolves duplicates and merge keys).
    Map {
        start: u32,
        count: u32,
    },
}

#[derive(Debug)]
struct Node {
    at: Pos,
    /// For a mapping's value: where its key is.
    key_at: Option<Pos>,
    /// For an alias: the anchored node (never itself an alias).
    alias_of: u32,
    kids: Kids,
}

/// A mapping's entry: its key (a range of [`Positions::keys`]) and its value's node.
#[derive(Clone, Copy, Debug)]
struct KeyEntry {
    key_start: u32,
    key_len: u32,
    node: u32,
}

/// The positions of one document's nodes.
#[derive(Debug, Default)]
pub struct Positions {
    nodes: Vec<Node>,
    root: Option<u32>,
    /// The items of every sequence, each sequence's together.
    items: Vec<u32>,
    /// The entries of every mapping, each mapping's together and sorted by key.
    entries: Vec<KeyEntry>,
    /// The text of every mapping key, one after the other.
    keys: String,
}

impl Positions {
    /// The document's root node.
    pub fn root(&self) -> Option<NodeId> {
        self.root.map(NodeId)
    }

    /// How many nodes were recorded.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    fn target(&self, n: NodeId) -> &Node {
        let node = &self.nodes[n.0 as usize];
        if node.alias_of == NONE {
            node
        } else {
            &self.nodes[node.alias_of as usize]
        }
    }

    fn key(&self, e: &KeyEntry) -> &str {
        let start = e.key_start as usize;
        self.keys
            .get(start..start + e.key_len as usize)
            .unwrap_or_default()
    }

    fn slice<T>(v: &[T], start: u32, count: u32) -> &[T] {
        let start = start as usize;
        v.get(start..start + count as usize).unwrap_or_default()
    }

    /// Where the node's value starts (for an alias: where the anchored node starts, which is
    /// where its text is).
    pub fn at(&self, n: NodeId) -> Pos {
        self.target(n).at
    }

    /// Where the node's key is, when the node is a mapping's value.
    pub fn key_at(&self, n: NodeId) -> Option<Pos> {
        self.nodes[n.0 as usize].key_at
    }

    /// Whether the node (through an alias) is a scalar.
    pub fn is_scalar(&self, n: NodeId) -> bool {
        matches!(self.target(n).kids, Kids::Leaf)
    }

    /// The value of `key`, when the node is a mapping that has it.
    pub fn get(&self, n: NodeId, key: &str) -> Option<NodeId> {
        let Kids::Map { start, count } = self.target(n).kids else {
            return None;
        };
        let kids = Self::slice(&self.entries, start, count);
        kids.binary_search_by(|e| self.key(e).cmp(key))
            .ok()
            .map(|i| NodeId(kids[i].node))
    }

    /// Item `i`, when the node is a sequence that long.
    pub fn index(&self, n: NodeId, i: usize) -> Option<NodeId> {
        let Kids::Seq { start, count } = self.target(n).kids else {
            return None;
        };
        Self::slice(&self.items, start, count)
            .get(i)
            .map(|&id| NodeId(id))
    }

    /// Whether the node (through an alias) is a sequence.
    pub fn is_seq(&self, n: NodeId) -> bool {
        matches!(self.target(n).kids, Kids::Seq { .. })
    }

    /// Whether the node is an alias (`*a`): its text is its anchored node's.
    pub fn is_alias(&self, n: NodeId) -> bool {
        self.nodes[n.0 as usize].alias_of != NONE
    }

    /// The entries of a mapping (through an alias), each key with its value's node, sorted by
    /// key; empty for anything else.
    pub fn entries(&self, n: NodeId) -> Vec<(&str, NodeId)> {
        let Kids::Map { start, count } = self.target(n).kids else {
            return Vec::new();
        };
        Self::slice(&self.entries, start, count)
            .iter()
            .map(|e| (self.key(e), NodeId(e.node)))
            .collect()
    }
}

#[derive(Clone, Copy)]
enum Entry {
    /// A key (a range of [`Positions::keys`]) and its value's node.
    Key(KeyEntry),
    Merge(u32),
}

struct Open {
    id: u32,
    /// Where this container's items or entries start on the recorder's shared stacks.
    first: usize,
    /// The position of the key whose value comes next.
    key_at: Option<Pos>,
}

/// Builds a [`Positions`] from parser events; driven by the value builder of
/// [`crate::input`], which tells it where each node goes.
pub(crate) struct Recorder<'t> {
    text: &'t str,
    /// The text is ASCII: character indices are byte offsets.
    ascii: bool,
    line_offset: u32,
    out: Positions,
    open: Vec<Open>,
    /// The items of the open sequences, innermost last.
    open_items: Vec<u32>,
    /// The entries of the open mappings, innermost last.
    open_entries: Vec<Entry>,
    /// Scratch space for sorting one mapping's entries.
    sorting: Vec<(KeyEntry, (u8, usize))>,
    anchors: HashMap<usize, u32>,
    /// The end of the previous event (a block scalar's indicator is between it and the
    /// scalar's content).
    prev_end: Marker,
    /// A character index of `text` and its byte offset: events come in order, so converting
    /// their character indices walks the text once.
    cursor: (usize, usize),
}

impl<'t> Recorder<'t> {
    /// `text` is the document's text, whose first line is line `first_line` of the file.
    pub(crate) fn new(text: &'t str, first_line: usize) -> Self {
        Recorder {
            text,
            ascii: text.is_ascii(),
            line_offset: u32::try_from(first_line.saturating_sub(1)).unwrap_or(u32::MAX),
            out: Positions::default(),
            open: Vec::new(),
            open_items: Vec::new(),
            open_entries: Vec::new(),
            sorting: Vec::new(),
            anchors: HashMap::new(),
            prev_end: Marker::default(),
            cursor: (0, 0),
        }
    }

    pub(crate) fn finish(self) -> Positions {
        self.out
    }

    /// Every event's span passes here after it was handled.
    pub(crate) fn event_end(&mut self, span: Span) {
        self.prev_end = span.end;
    }

    fn pos(&self, line: usize, col: usize) -> Pos {
        Pos {
            line: u32::try_from(line)
                .unwrap_or(u32::MAX)
                .saturating_add(self.line_offset),
            column: u32::try_from(col).unwrap_or(u32::MAX).saturating_add(1),
        }
    }

    fn push(&mut self, at: Pos, alias_of: u32) -> u32 {
        let id = u32::try_from(self.out.nodes.len()).unwrap_or(NONE - 1);
        self.out.nodes.push(Node {
            at,
            key_at: None,
            alias_of,
            kids: Kids::Leaf,
        });
        id
    }

    /// Where a scalar's token is.
    fn scalar_at(&mut self, span: Span, style: ScalarStyle, has_properties: bool) -> Pos {
        let start = span.start;
        match style {
            ScalarStyle::Literal | ScalarStyle::Folded => self.block_indicator(start, span.end),
            _ if has_properties => self.after_properties(start, span.end),
            _ => None,
        }
        .unwrap_or_else(|| self.pos(start.line(), start.col()))
    }

    pub(crate) fn scalar(&mut self, span: Span, style: ScalarStyle, has_properties: bool) -> u32 {
        let at = self.scalar_at(span, style, has_properties);
        self.push(at, NONE)
    }

    /// A scalar whose token is at `line` (1-based) and `col` (0-based), as the parser counts:
    /// for readers that know where the token is.
    pub(crate) fn scalar_at_position(&mut self, line: usize, col: usize) -> u32 {
        let at = self.pos(line, col);
        self.push(at, NONE)
    }

    /// As [`Self::key_scalar`], the key's token at `line` and `col`.
    pub(crate) fn key_at_position(&mut self, line: usize, col: usize) {
        let at = self.pos(line, col);
        self.key_at(at);
    }

    /// The innermost mapping's next entry has its key at `at`.
    fn key_at(&mut self, at: Pos) {
        if let Some(o) = self.open.last_mut() {
            o.key_at = Some(at);
        }
    }

    /// A scalar that is the key of the innermost mapping's next entry (and has no anchor: no
    /// alias can refer to it, so it needs no node).
    pub(crate) fn key_scalar(&mut self, span: Span, style: ScalarStyle, has_properties: bool) {
        let at = self.scalar_at(span, style, has_properties);
        self.key_at(at);
    }

    pub(crate) fn alias(&mut self, span: Span, anchor: usize) -> u32 {
        let target = self.anchors.get(&anchor).copied().unwrap_or(NONE);
        let at = self.pos(span.start.line(), span.start.col());
        self.push(at, target)
    }

    pub(crate) fn anchor(&mut self, anchor: usize, node: u32) {
        self.anchors.insert(anchor, node);
    }

    pub(crate) fn open(&mut self, span: Span, seq: bool) {
        self.open_at_position(span.start.line(), span.start.col(), seq);
    }

    /// As [`Self::open`], the collection marked at `line` and `col`.
    pub(crate) fn open_at_position(&mut self, line: usize, col: usize, seq: bool) {
        let at = self.pos(line, col);
        let id = self.push(at, NONE);
        let first = if seq {
            self.open_items.len()
        } else {
            self.open_entries.len()
        };
        self.open.push(Open {
            id,
            first,
            key_at: None,
        });
    }

    /// Closes the innermost sequence (`seq`) or mapping; its node id.
    pub(crate) fn close(&mut self, seq: bool) -> u32 {
        let Some(o) = self.open.pop() else {
            return self.push(Pos::default(), NONE);
        };
        let kids = if seq {
            let start = self.out.items.len();
            let first = o.first.min(self.open_items.len());
            self.out.items.extend(self.open_items.drain(first..));
            Kids::Seq {
                start: u32::try_from(start).unwrap_or(NONE),
                count: u32::try_from(self.out.items.len() - start).unwrap_or(0),
            }
        } else {
            let start = self.out.entries.len();
            self.mapping(o.first.min(self.open_entries.len()));
            Kids::Map {
                start: u32::try_from(start).unwrap_or(NONE),
                count: u32::try_from(self.out.entries.len() - start).unwrap_or(0),
            }
        };
        if let Some(n) = self.out.nodes.get_mut(o.id as usize) {
            n.kids = kids;
        }
        o.id
    }

    /// A mapping's keys (its entries from `first` of the open entries) as its value has them:
    /// the last of duplicate keys wins, merged keys (`<<`) never override explicit ones, and
    /// the first merged source wins among them. Appended to the positions' entries.
    fn mapping(&mut self, first: usize) {
        // (key, rank): explicit keys rank by reverse order, merged ones after them.
        let mut all = std::mem::take(&mut self.sorting);
        all.clear();
        let explicit = self.open_entries.len() - first;
        let mut merged = 0usize;
        for (i, e) in self.open_entries.drain(first..).enumerate() {
            match e {
                Entry::Key(k) => all.push((k, (0, explicit - i))),
                Entry::Merge(id) => {
                    let target = resolve(&self.out.nodes, id);
                    let mut add = |s: u32| {
                        if let Some(Node {
                            kids: Kids::Map { start, count },
                            ..
                        }) = self.out.nodes.get(s as usize)
                        {
                            for k in Positions::slice(&self.out.entries, *start, *count) {
                                all.push((*k, (1, merged)));
                                merged += 1;
                            }
                        }
                    };
                    match self.out.nodes.get(target as usize).map(|n| n.kids) {
                        Some(Kids::Seq { start, count }) => {
                            for &s in Positions::slice(&self.out.items, start, count) {
                                add(resolve(&self.out.nodes, s));
                            }
                        }
                        Some(Kids::Map { .. }) => add(target),
                        _ => {}
                    }
                }
            }
        }
        let keys = &self.out.keys;
        let text = |k: &KeyEntry| {
            let start = k.key_start as usize;
            keys.get(start..start + k.key_len as usize)
                .unwrap_or_default()
        };
        all.sort_by(|a, b| text(&a.0).cmp(text(&b.0)).then(a.1.cmp(&b.1)));
        all.dedup_by(|later, first| text(&later.0) == text(&first.0));
        self.out.entries.extend(all.iter().map(|(k, _)| *k));
        self.sorting = all;
    }

    /// The node is the document's root.
    pub(crate) fn root(&mut self, node: u32) {
        self.out.root = Some(node);
    }

    /// The node is the next item of the innermost sequence.
    pub(crate) fn item(&mut self, node: u32) {
        if !self.open.is_empty() {
            self.open_items.push(node);
        }
    }

    /// The node is the key of the innermost mapping's next entry.
    pub(crate) fn key(&mut self, node: u32) {
        let at = self.out.nodes.get(node as usize).map(|n| n.at);
        if let Some(o) = self.open.last_mut() {
            o.key_at = at;
        }
    }

    /// The node is the value of `key` in the innermost mapping.
    pub(crate) fn value(&mut self, key: &str, node: u32) {
        let Some(o) = self.open.last_mut() else {
            return;
        };
        let key_at = o.key_at.take();
        if key == "<<" {
            self.open_entries.push(Entry::Merge(node));
        } else {
            let key_start = u32::try_from(self.out.keys.len()).unwrap_or(NONE);
            let key_len = u32::try_from(key.len()).unwrap_or(0);
            self.out.keys.push_str(key);
            self.open_entries.push(Entry::Key(KeyEntry {
                key_start,
                key_len,
                node,
            }));
        }
        if let Some(n) = self.out.nodes.get_mut(node as usize) {
            n.key_at = key_at;
        }
    }

    /// The byte offset of character `index` of the text.
    fn byte_of(&mut self, index: usize) -> usize {
        if self.ascii {
            return index.min(self.text.len());
        }
        if index < self.cursor.0 {
            self.cursor = (0, 0);
        }
        let (mut c, mut b) = self.cursor;
        let bytes = self.text.as_bytes();
        while c < index && b < bytes.len() {
            b += utf8_len(bytes[b]);
            c += 1;
        }
        let b = b.min(bytes.len());
        self.cursor = (c, b);
        b
    }

    /// A block scalar's content starts on the line after its `|` or `>` (its span starts
    /// there, or at its tag or anchor): the indicator is the first token after the previous
    /// event (past `:`, `-`, `?`, properties and comments).
    fn block_indicator(&mut self, start: Marker, end: Marker) -> Option<Pos> {
        let from = if self.prev_end.index() <= start.index() {
            self.prev_end
        } else {
            start
        };
        let b = self.byte_of(from.index());
        let e = self.byte_of(end.index());
        let skip = [':', '-', '?', ',', '[', '{'];
        let (found, line, col) = scan(self.text, b, e, from.line(), from.col(), &skip);
        matches!(found, Some('|' | '>')).then(|| self.pos(line, col))
    }

    /// A scalar with a tag or an anchor: its span starts at them; the token comes after.
    fn after_properties(&mut self, start: Marker, end: Marker) -> Option<Pos> {
        let b = self.byte_of(start.index());
        let e = self.byte_of(end.index());
        let (found, line, col) = scan(self.text, b, e, start.line(), start.col(), &[]);
        found.map(|_| self.pos(line, col))
    }
}

/// An alias's anchored node; any other node itself.
fn resolve(nodes: &[Node], id: u32) -> u32 {
    match nodes.get(id as usize) {
        Some(n) if n.alias_of != NONE => n.alias_of,
        _ => id,
    }
}

/// Scans `text[from..to]` past whitespace, comments, properties (`!tag`, `&anchor`) and the
/// indicators `skip`; the first other character and its line and column (0-based column, from
/// `line`/`col` at `from`).
fn scan(
    text: &str,
    from: usize,
    to: usize,
    mut line: usize,
    mut col: usize,
    skip: &[char],
) -> (Option<char>, usize, usize) {
    let Some(s) = text.get(from..to) else {
        return (None, line, col);
    };
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => {
                line += 1;
                col = 0;
                continue;
            }
            ' ' | '\t' | '\r' | '\u{feff}' => {}
            '#' => {
                // A comment runs to the end of the line.
                while chars.peek().is_some_and(|&c| c != '\n') {
                    chars.next();
                }
                continue;
            }
            '!' | '&' => {
                col += 1;
                while chars
                    .peek()
                    .is_some_and(|c| !c.is_whitespace() && *c != ',' && *c != ']' && *c != '}')
                {
                    chars.next();
                    col += 1;
                }
                continue;
            }
            c if skip.contains(&c) => {}
            c => return (Some(c), line, col),
        }
        col += 1;
    }
    (None, line, col)
}

fn utf8_len(first: u8) -> usize {
    match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xff => 4,
        // A continuation byte: only reached on a bad index; move on by one.
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::parse_documents_located;

    fn at(line: u32, column: u32) -> Pos {
        Pos { line, column }
    }

    #[test]
    fn merge_keys_duplicates_aliases_and_wide_characters() {
        let text = "base: &b\n  x: 1\n  w: 2\nm:\n  <<: *b\n  w: 3\n  z: 4\n  z: 5\nü: \"é\"\ns: [a, &k b]\nd: |\n  é\nk: *k\n";
        let (doc, positions) = parse_documents_located(text).remove(0);
        assert!(doc.value.is_ok());
        let p = positions.expect("positions");
        let root = p.root().expect("a root");
        let m = p.get(root, "m").expect("m");
        // Merged from the anchored mapping; explicit keys win over merged ones; the last of
        // duplicate keys wins.
        assert_eq!(p.at(p.get(m, "x").unwrap()), at(2, 6));
        assert_eq!(p.at(p.get(m, "w").unwrap()), at(6, 6));
        let z = p.get(m, "z").unwrap();
        assert_eq!((p.at(z), p.key_at(z)), (at(8, 6), Some(at(8, 3))));
        assert!(p.get(m, "<<").is_none());
        // Columns count characters.
        assert_eq!(p.at(p.get(root, "ü").unwrap()), at(9, 4));
        let s = p.get(root, "s").unwrap();
        assert!(p.is_seq(s));
        assert_eq!(p.at(p.index(s, 1).unwrap()), at(10, 11));
        assert!(p.index(s, 2).is_none());
        // A block scalar is at its indicator; an alias at its anchored node.
        assert_eq!(p.at(p.get(root, "d").unwrap()), at(11, 4));
        assert_eq!(p.at(p.get(root, "k").unwrap()), at(10, 11));
    }
}
