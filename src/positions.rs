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

#[derive(Debug)]
enum Kids {
    Leaf,
    Seq(Box<[u32]>),
    /// Sorted by key, one entry per key (as the document's mapping resolves duplicates and
    /// merge keys).
    Map(Box<[(Box<str>, u32)]>),
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

/// The positions of one document's nodes.
#[derive(Debug, Default)]
pub struct Positions {
    nodes: Vec<Node>,
    root: Option<u32>,
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
        let Kids::Map(kids) = &self.target(n).kids else {
            return None;
        };
        kids.binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| NodeId(kids[i].1))
    }

    /// Item `i`, when the node is a sequence that long.
    pub fn index(&self, n: NodeId, i: usize) -> Option<NodeId> {
        let Kids::Seq(items) = &self.target(n).kids else {
            return None;
        };
        items.get(i).map(|&id| NodeId(id))
    }

    /// Whether the node (through an alias) is a sequence.
    pub fn is_seq(&self, n: NodeId) -> bool {
        matches!(self.target(n).kids, Kids::Seq(_))
    }
}

enum Entry {
    Key(Box<str>, u32),
    Merge(u32),
}

struct Open {
    id: u32,
    items: Vec<u32>,
    entries: Vec<Entry>,
    /// The position of the key whose value comes next.
    key_at: Option<Pos>,
}

/// Builds a [`Positions`] from parser events; driven by the value builder of
/// [`crate::input`], which tells it where each node goes.
pub(crate) struct Recorder<'t> {
    text: &'t str,
    line_offset: u32,
    nodes: Vec<Node>,
    open: Vec<Open>,
    anchors: HashMap<usize, u32>,
    root: Option<u32>,
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
            line_offset: u32::try_from(first_line.saturating_sub(1)).unwrap_or(u32::MAX),
            nodes: Vec::new(),
            open: Vec::new(),
            anchors: HashMap::new(),
            root: None,
            prev_end: Marker::default(),
            cursor: (0, 0),
        }
    }

    pub(crate) fn finish(self) -> Positions {
        Positions {
            nodes: self.nodes,
            root: self.root,
        }
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
        let id = u32::try_from(self.nodes.len()).unwrap_or(NONE - 1);
        self.nodes.push(Node {
            at,
            key_at: None,
            alias_of,
            kids: Kids::Leaf,
        });
        id
    }

    pub(crate) fn scalar(&mut self, span: Span, style: ScalarStyle, has_properties: bool) -> u32 {
        let start = span.start;
        let at = match style {
            ScalarStyle::Literal | ScalarStyle::Folded => self.block_indicator(start, span.end),
            _ if has_properties => self.after_properties(start, span.end),
            _ => None,
        }
        .unwrap_or_else(|| self.pos(start.line(), start.col()));
        self.push(at, NONE)
    }

    pub(crate) fn alias(&mut self, span: Span, anchor: usize) -> u32 {
        let target = self.anchors.get(&anchor).copied().unwrap_or(NONE);
        let at = self.pos(span.start.line(), span.start.col());
        self.push(at, target)
    }

    pub(crate) fn anchor(&mut self, anchor: usize, node: u32) {
        self.anchors.insert(anchor, node);
    }

    pub(crate) fn open(&mut self, span: Span) {
        let at = self.pos(span.start.line(), span.start.col());
        let id = self.push(at, NONE);
        self.open.push(Open {
            id,
            items: Vec::new(),
            entries: Vec::new(),
            key_at: None,
        });
    }

    /// Closes the innermost sequence (`seq`) or mapping; its node id.
    pub(crate) fn close(&mut self, seq: bool) -> u32 {
        let Some(o) = self.open.pop() else {
            return self.push(Pos::default(), NONE);
        };
        let kids = if seq {
            Kids::Seq(o.items.into_boxed_slice())
        } else {
            Kids::Map(self.mapping(o.entries))
        };
        self.nodes[o.id as usize].kids = kids;
        o.id
    }

    /// A mapping's keys as its value has them: the last of duplicate keys wins, merged keys
    /// (`<<`) never override explicit ones, and the first merged source wins among them.
    fn mapping(&self, entries: Vec<Entry>) -> Box<[(Box<str>, u32)]> {
        // (key, rank, node): explicit keys rank by reverse order, merged ones after them.
        let mut all: Vec<(Box<str>, (u8, usize), u32)> = Vec::with_capacity(entries.len());
        let explicit = entries.len();
        let mut merged = 0usize;
        for (i, e) in entries.into_iter().enumerate() {
            match e {
                Entry::Key(k, id) => all.push((k, (0, explicit - i), id)),
                Entry::Merge(id) => {
                    let target = self.resolve(id);
                    let sources: Vec<u32> = match &self.nodes[target as usize].kids {
                        Kids::Seq(items) => items.iter().map(|&s| self.resolve(s)).collect(),
                        Kids::Map(_) => vec![target],
                        Kids::Leaf => vec![],
                    };
                    for s in sources {
                        if let Kids::Map(kids) = &self.nodes[s as usize].kids {
                            for (k, id) in kids.iter() {
                                all.push((k.clone(), (1, merged), *id));
                                merged += 1;
                            }
                        }
                    }
                }
            }
        }
        all.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        all.dedup_by(|later, first| later.0 == first.0);
        all.into_iter().map(|(k, _, id)| (k, id)).collect()
    }

    fn resolve(&self, id: u32) -> u32 {
        match self.nodes.get(id as usize) {
            Some(n) if n.alias_of != NONE => n.alias_of,
            _ => id,
        }
    }

    /// The node is the document's root.
    pub(crate) fn root(&mut self, node: u32) {
        self.root = Some(node);
    }

    /// The node is the next item of the innermost sequence.
    pub(crate) fn item(&mut self, node: u32) {
        if let Some(o) = self.open.last_mut() {
            o.items.push(node);
        }
    }

    /// The node is the key of the innermost mapping's next entry.
    pub(crate) fn key(&mut self, node: u32) {
        let at = self.nodes.get(node as usize).map(|n| n.at);
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
            o.entries.push(Entry::Merge(node));
        } else {
            o.entries.push(Entry::Key(key.into(), node));
        }
        if let Some(n) = self.nodes.get_mut(node as usize) {
            n.key_at = key_at;
        }
    }

    /// The byte offset of character `index` of the text.
    fn byte_of(&mut self, index: usize) -> usize {
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
