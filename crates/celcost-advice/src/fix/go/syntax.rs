//! The declarations of a Go file that a CRD is generated from: the package clause, imports,
//! package-level markers, and every top-level `type` declaration with its type expression —
//! structs with their fields (names, type, tag), pointers, slices, arrays, maps, named types
//! (local or `pkg.Name`, generic instantiations), aliases — each with where it starts, its
//! indentation, and the comment lines above it (where controller-gen reads markers: the doc
//! comment and the closest comment group above it).
//!
//! A purpose-built reader rather than a parser crate: the job needs no more than declarations,
//! and it needs exact byte offsets of comment lines and of the lines that start declarations
//! (to insert a marker line gofmt leaves as it is). It tokenizes the whole file as Go does
//! (comments, interpreted and raw strings, runes, so no brace in a string or comment is
//! miscounted) and skips what it does not read (function bodies, `var`, `const`) by bracket
//! depth. Linear in the file's size; nesting is bounded by [`MAX_DEPTH`].

/// Type expressions nested deeper than this are refused.
pub const MAX_DEPTH: usize = 200;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Ident,
    Str,
    Num,
    Punct,
}

#[derive(Clone, Copy, Debug)]
pub struct Token {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
    /// 1-based line.
    pub line: u32,
}

/// A comment: `//` to the line's end, or `/* … */`.
#[derive(Clone, Debug)]
pub struct Comment {
    pub start: usize,
    pub end: usize,
    pub line: u32,
    pub end_line: u32,
    /// Nothing but blanks before it on its line.
    pub own_line: bool,
}

/// A Go type expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// `Name` (local, `pkg: None`) or `pkg.Name`; generic arguments are dropped.
    Named {
        pkg: Option<String>,
        name: String,
    },
    Pointer(Box<Expr>),
    /// `[]T`; `[N]T` too.
    Slice(Box<Expr>),
    Map(Box<Expr>, Box<Expr>),
    Struct(Vec<Field>),
    /// Interfaces, functions, channels.
    Other,
}

/// Where a declaration or field starts, for a marker line above it.
#[derive(Clone, Debug, PartialEq)]
pub struct Place {
    /// 1-based line of its first token.
    pub line: u32,
    /// Byte offset where that line starts.
    pub line_start: usize,
    /// The blanks before its first token on that line (its indentation).
    pub indent: String,
    /// Its first token starts the line.
    pub own_line: bool,
}

/// A struct field.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// Empty for an embedded field.
    pub names: Vec<String>,
    pub expr: Expr,
    /// The tag's text (without its quotes).
    pub tag: Option<String>,
    pub place: Place,
    /// Bytes of its type and of its tag (with quotes), and where the field ends.
    pub type_span: (usize, usize),
    pub tag_span: Option<(usize, usize)>,
    pub end: usize,
    /// Its last token's line (a field of one line ends on the line it starts).
    pub end_line: u32,
}

impl Field {
    /// The value of `key` in the tag (`json:"name,omitempty"`), as `reflect.StructTag.Lookup`.
    pub fn tag_value(&self, key: &str) -> Option<String> {
        struct_tag_lookup(self.tag.as_deref()?, key)
    }

    /// The Go name of an embedded field (`T` of `*pkg.T`).
    pub fn embedded_name(&self) -> Option<&str> {
        let mut e = &self.expr;
        loop {
            match e {
                Expr::Pointer(x) => e = x,
                Expr::Named { name, .. } => return Some(name),
                _ => return None,
            }
        }
    }
}

/// A top-level `type` declaration.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeDecl {
    pub name: String,
    /// `type A = B`.
    pub alias: bool,
    pub expr: Expr,
    pub place: Place,
}

/// A read Go file.
#[derive(Clone, Debug, Default)]
pub struct GoFile {
    pub package: String,
    /// (name it is used by, import path); the name is the alias, or the path's last element.
    pub imports: Vec<(String, String)>,
    pub decls: Vec<TypeDecl>,
    pub comments: Vec<Comment>,
    /// Lines that hold code (a token), sorted.
    code_lines: Vec<u32>,
}

/// `reflect.StructTag.Lookup`: the value of `key` in a conventional struct tag.
pub fn struct_tag_lookup(tag: &str, key: &str) -> Option<String> {
    let mut t = tag;
    loop {
        t = t.trim_start_matches(' ');
        if t.is_empty() {
            return None;
        }
        let colon = t.find(':')?;
        let name = &t[..colon];
        if name.is_empty() || name.contains(|c: char| c <= ' ' || c == '"') {
            return None;
        }
        let rest = t[colon + 1..].strip_prefix('"')?;
        // The quoted value, with backslash escapes.
        let mut end = None;
        let b = rest.as_bytes();
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'\\' => i += 2,
                b'"' => {
                    end = Some(i);
                    break;
                }
                _ => i += 1,
            }
        }
        let end = end?;
        if name == key {
            return Some(rest[..end].replace("\\\"", "\"").replace("\\\\", "\\"));
        }
        t = &rest[end + 1..];
    }
}

/// Tokens and comments of a Go file.
pub fn scan(src: &str) -> Result<(Vec<Token>, Vec<Comment>), String> {
    let b = src.as_bytes();
    let mut toks = Vec::new();
    let mut comments = Vec::new();
    let mut i = 0;
    let mut line = 1u32;
    let mut line_start = 0usize;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\n' => {
                line += 1;
                i += 1;
                line_start = i;
            }
            b' ' | b'\t' | b'\r' => i += 1,
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = src[i..].find('\n').map_or(b.len(), |k| i + k);
                let own = src[line_start..i].trim().is_empty();
                comments.push(Comment {
                    start: i,
                    end,
                    line,
                    end_line: line,
                    own_line: own,
                });
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = src[i + 2..]
                    .find("*/")
                    .map(|k| i + 2 + k + 2)
                    .ok_or_else(|| format!("line {line}: a comment is not closed"))?;
                let own = src[line_start..i].trim().is_empty();
                let start_line = line;
                for (k, ch) in src[i..end].char_indices() {
                    if ch == '\n' {
                        line += 1;
                        line_start = i + k + 1;
                    }
                }
                comments.push(Comment {
                    start: i,
                    end,
                    line: start_line,
                    end_line: line,
                    own_line: own,
                });
                i = end;
            }
            b'"' | b'\'' => {
                let mut j = i + 1;
                loop {
                    match b.get(j) {
                        None | Some(b'\n') => {
                            return Err(format!("line {line}: a string is not closed"));
                        }
                        Some(b'\\') => j += 2,
                        Some(&q) if q == c => break,
                        _ => j += 1,
                    }
                }
                toks.push(Token {
                    kind: Kind::Str,
                    start: i,
                    end: j + 1,
                    line,
                });
                i = j + 1;
            }
            b'`' => {
                let end = src[i + 1..]
                    .find('`')
                    .map(|k| i + 1 + k + 1)
                    .ok_or_else(|| format!("line {line}: a raw string is not closed"))?;
                toks.push(Token {
                    kind: Kind::Str,
                    start: i,
                    end,
                    line,
                });
                for (k, ch) in src[i..end].char_indices() {
                    if ch == '\n' {
                        line += 1;
                        line_start = i + k + 1;
                    }
                }
                i = end;
            }
            _ if c.is_ascii_digit() => {
                let mut j = i;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'.' || b[j] == b'_')
                {
                    j += 1;
                }
                toks.push(Token {
                    kind: Kind::Num,
                    start: i,
                    end: j,
                    line,
                });
                i = j;
            }
            _ if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 => {
                let mut j = i;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_' || b[j] >= 0x80)
                {
                    j += 1;
                }
                toks.push(Token {
                    kind: Kind::Ident,
                    start: i,
                    end: j,
                    line,
                });
                i = j;
            }
            _ => {
                toks.push(Token {
                    kind: Kind::Punct,
                    start: i,
                    end: i + 1,
                    line,
                });
                i += 1;
            }
        }
    }
    Ok((toks, comments))
}

struct Parser<'s> {
    src: &'s str,
    toks: Vec<Token>,
    i: usize,
    line_starts: Vec<usize>,
}

impl<'s> Parser<'s> {
    fn peek(&self, k: usize) -> Option<&Token> {
        self.toks.get(self.i + k)
    }

    fn text(&self, t: &Token) -> &'s str {
        &self.src[t.start..t.end]
    }

    fn is(&self, k: usize, s: &str) -> bool {
        self.peek(k).is_some_and(|t| self.text(t) == s)
    }

    fn err(&self, what: &str) -> String {
        match self.peek(0) {
            Some(t) => format!("line {}: {what} (at `{}`)", t.line, self.text(t)),
            None => format!("at the end of the file: {what}"),
        }
    }

    fn place(&self, t: &Token) -> Place {
        let ls = self.line_starts[(t.line - 1) as usize];
        let before = &self.src[ls..t.start];
        Place {
            line: t.line,
            line_start: ls,
            indent: before.to_string(),
            own_line: before.chars().all(|c| c == ' ' || c == '\t'),
        }
    }

    /// Skips a balanced `(…)`, `[…]` or `{…}` starting at the current token.
    fn skip_balanced(&mut self) -> Result<(), String> {
        let mut depth = 0usize;
        while let Some(t) = self.peek(0) {
            let s = self.text(t);
            self.i += 1;
            match s {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Ok(());
                    }
                }
                _ => {}
            }
        }
        Err("unbalanced brackets".into())
    }

    fn ident(&mut self) -> Result<String, String> {
        match self.peek(0) {
            Some(t) if t.kind == Kind::Ident => {
                let s = self.text(t).to_string();
                self.i += 1;
                Ok(s)
            }
            _ => Err(self.err("a name was expected")),
        }
    }

    fn expr(&mut self, depth: usize) -> Result<Expr, String> {
        if depth > MAX_DEPTH {
            return Err(self.err("types nest too deep"));
        }
        let Some(t) = self.peek(0).copied() else {
            return Err(self.err("a type was expected"));
        };
        let s = self.text(&t);
        match s {
            "*" => {
                self.i += 1;
                Ok(Expr::Pointer(Box::new(self.expr(depth + 1)?)))
            }
            "(" => {
                self.i += 1;
                let e = self.expr(depth + 1)?;
                if !self.is(0, ")") {
                    return Err(self.err("`)` was expected"));
                }
                self.i += 1;
                Ok(e)
            }
            "[" => {
                if self.is(1, "]") {
                    self.i += 2;
                } else {
                    self.skip_balanced()?;
                }
                Ok(Expr::Slice(Box::new(self.expr(depth + 1)?)))
            }
            "map" if self.is(1, "[") => {
                self.i += 2;
                let k = self.expr(depth + 1)?;
                if !self.is(0, "]") {
                    return Err(self.err("`]` was expected after a map's key type"));
                }
                self.i += 1;
                let v = self.expr(depth + 1)?;
                Ok(Expr::Map(Box::new(k), Box::new(v)))
            }
            "struct" if self.is(1, "{") => {
                self.i += 1;
                Ok(Expr::Struct(self.fields(depth + 1)?))
            }
            "interface" if self.is(1, "{") => {
                self.i += 1;
                self.skip_balanced()?;
                Ok(Expr::Other)
            }
            "func" => {
                self.i += 1;
                if self.is(0, "(") {
                    self.skip_balanced()?;
                }
                // A result on the same line: a list or one type.
                if let Some(n) = self.peek(0).copied()
                    && n.line == t.line
                {
                    if self.text(&n) == "(" {
                        self.skip_balanced()?;
                    } else if !matches!(self.text(&n), ";" | "}" | ")" | "," | "]")
                        && n.kind != Kind::Str
                    {
                        self.expr(depth + 1)?;
                    }
                }
                Ok(Expr::Other)
            }
            "chan" => {
                self.i += 1;
                if self.is(0, "<") && self.is(1, "-") {
                    self.i += 2;
                }
                self.expr(depth + 1)?;
                Ok(Expr::Other)
            }
            "<" if self.is(1, "-") => {
                self.i += 2;
                self.expr(depth + 1)
            }
            _ if t.kind == Kind::Ident => {
                self.i += 1;
                let e = if self.is(0, ".") && self.peek(1).is_some_and(|n| n.kind == Kind::Ident) {
                    self.i += 1;
                    let name = self.ident()?;
                    Expr::Named {
                        pkg: Some(s.to_string()),
                        name,
                    }
                } else {
                    Expr::Named {
                        pkg: None,
                        name: s.to_string(),
                    }
                };
                // Generic arguments, written right after the name.
                if let (Some(prev), Some(n)) = (self.toks.get(self.i - 1), self.peek(0))
                    && self.text(n) == "["
                    && n.start == prev.end
                {
                    self.skip_balanced()?;
                }
                Ok(e)
            }
            _ => Err(self.err("a type was expected")),
        }
    }

    /// A struct's fields, from its `{` to its `}`.
    fn fields(&mut self, depth: usize) -> Result<Vec<Field>, String> {
        if !self.is(0, "{") {
            return Err(self.err("`{` was expected"));
        }
        self.i += 1;
        let mut out = Vec::new();
        loop {
            while self.is(0, ";") {
                self.i += 1;
            }
            let Some(first) = self.peek(0).copied() else {
                return Err(self.err("a struct is not closed"));
            };
            if self.text(&first) == "}" {
                self.i += 1;
                return Ok(out);
            }
            let place = self.place(&first);
            let mut names = Vec::new();
            let next = self.peek(1).copied();
            let named = first.kind == Kind::Ident
                && next.is_some_and(|n| {
                    let s = self.text(&n);
                    s == ","
                        || (n.line == first.line
                            && n.kind != Kind::Str
                            && !matches!(s, "." | ";" | "}"))
                });
            if named {
                names.push(self.ident()?);
                while self.is(0, ",") {
                    self.i += 1;
                    names.push(self.ident()?);
                }
            }
            let type_start = self.peek(0).map_or(0, |t| t.start);
            let expr = self.expr(depth + 1)?;
            let type_end = self.toks.get(self.i - 1).map_or(type_start, |t| t.end);
            let last_line = self.toks.get(self.i - 1).map_or(first.line, |t| t.line);
            let mut tag = None;
            let mut tag_span = None;
            if let Some(t) = self.peek(0).copied()
                && t.kind == Kind::Str
                && t.line == last_line
            {
                let raw = self.text(&t);
                tag = Some(raw[1..raw.len() - 1].to_string());
                tag_span = Some((t.start, t.end));
                self.i += 1;
            }
            let end_tok = self.toks.get(self.i - 1).copied().unwrap_or(first);
            let end_line = end_tok.line;
            out.push(Field {
                names,
                expr,
                tag,
                place,
                type_span: (type_start, type_end),
                tag_span,
                end: end_tok.end,
                end_line,
            });
            if let Some(n) = self.peek(0)
                && n.line == end_line
                && !matches!(self.text(n), ";" | "}")
            {
                return Err(self.err("a field was expected to end here"));
            }
        }
    }

    /// One type spec: `Name [params] [=] Type`.
    fn type_spec(&mut self, at: &Token) -> Result<TypeDecl, String> {
        let place = self.place(at);
        let name = self.ident()?;
        // Type parameters: `[T any]` (an array type starts `[N]` or `[]`).
        if self.is(0, "[")
            && self.peek(1).is_some_and(|t| t.kind == Kind::Ident)
            && !self.is(2, "]")
        {
            self.skip_balanced()?;
        }
        let alias = self.is(0, "=");
        if alias {
            self.i += 1;
        }
        let expr = self.expr(0)?;
        Ok(TypeDecl {
            name,
            alias,
            expr,
            place,
        })
    }

    fn file(&mut self) -> Result<GoFile, String> {
        let mut f = GoFile::default();
        while let Some(t) = self.peek(0).copied() {
            match self.text(&t) {
                "package" if t.kind == Kind::Ident => {
                    self.i += 1;
                    f.package = self.ident()?;
                }
                "import" => {
                    self.i += 1;
                    let group = self.is(0, "(");
                    if group {
                        self.i += 1;
                    }
                    loop {
                        while self.is(0, ";") {
                            self.i += 1;
                        }
                        if group && self.is(0, ")") {
                            self.i += 1;
                            break;
                        }
                        let mut alias = None;
                        if let Some(a) = self.peek(0).copied()
                            && a.kind != Kind::Str
                        {
                            alias = Some(self.text(&a).to_string());
                            self.i += 1;
                        }
                        let Some(p) = self.peek(0).copied().filter(|p| p.kind == Kind::Str) else {
                            return Err(self.err("an import path was expected"));
                        };
                        self.i += 1;
                        let raw = self.text(&p);
                        let path = raw[1..raw.len() - 1].to_string();
                        let name = alias.unwrap_or_else(|| {
                            let last = path.rsplit('/').next().unwrap_or(&path);
                            // `gopkg.in/yaml.v3` is `yaml`; a major version suffix is not a name.
                            let last = last.split('.').next().unwrap_or(last);
                            last.replace('-', "_")
                        });
                        f.imports.push((name, path));
                        if !group {
                            break;
                        }
                    }
                }
                "type" if t.kind == Kind::Ident => {
                    self.i += 1;
                    if self.is(0, "(") {
                        self.i += 1;
                        loop {
                            while self.is(0, ";") {
                                self.i += 1;
                            }
                            if self.is(0, ")") {
                                self.i += 1;
                                break;
                            }
                            let Some(at) = self.peek(0).copied() else {
                                return Err(self.err("a type group is not closed"));
                            };
                            let d = self.type_spec(&at)?;
                            f.decls.push(d);
                        }
                    } else {
                        let d = self.type_spec(&t)?;
                        f.decls.push(d);
                    }
                }
                "(" | "[" | "{" => self.skip_balanced()?,
                _ => self.i += 1,
            }
        }
        Ok(f)
    }
}

/// Reads a Go file's declarations.
pub fn parse(src: &str) -> Result<GoFile, String> {
    let (toks, comments) = scan(src)?;
    let line_starts = std::iter::once(0)
        .chain(src.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let mut code_lines: Vec<u32> = toks.iter().map(|t| t.line).collect();
    code_lines.dedup();
    let mut p = Parser {
        src,
        toks,
        i: 0,
        line_starts,
    };
    let mut f = p.file()?;
    f.comments = comments;
    f.code_lines = code_lines;
    Ok(f)
}

/// A `// +name=value` marker line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkerLine {
    /// `kubebuilder:validation:MaxLength` (without `+`).
    pub name: String,
    /// The text after `=` (trimmed).
    pub value: String,
    /// Bytes of the value in the file.
    pub value_start: usize,
    pub value_end: usize,
}

impl GoFile {
    /// The comment groups controller-gen reads the markers of a declaration or field starting
    /// at `line` from: its doc comment (the `//` lines right above it) and the closest comment
    /// group above that, when no code is between.
    pub fn marker_comments(&self, line: u32) -> Vec<&Comment> {
        // Code above the line: the comments after it are the candidates.
        let code_above = match self.code_lines.binary_search(&line) {
            Ok(i) | Err(i) => i.checked_sub(1).map(|k| self.code_lines[k]).unwrap_or(0),
        };
        let first = self.comments.partition_point(|c| c.line <= code_above);
        let last = self.comments.partition_point(|c| c.line < line);
        let candidates: Vec<&Comment> = self.comments[first..last]
            .iter()
            .filter(|c| c.own_line)
            .collect();
        // Groups of comments on consecutive lines, from the bottom.
        let mut groups: Vec<Vec<&Comment>> = Vec::new();
        let mut next_line = line;
        for c in candidates.into_iter().rev() {
            match groups.last_mut() {
                Some(g) if c.end_line + 1 == next_line => g.push(c),
                _ => groups.push(vec![c]),
            }
            next_line = c.line;
        }
        let mut out = Vec::new();
        let mut gi = groups.iter();
        if let Some(g) = gi.next() {
            let doc = g.first().is_some_and(|c| c.end_line + 1 == line);
            out.extend(g.iter().copied());
            if doc && let Some(g2) = gi.next() {
                out.extend(g2.iter().copied());
            }
        }
        out
    }

    /// The markers of a declaration or field at `line` ([`Self::marker_comments`]).
    pub fn markers(&self, src: &str, line: u32) -> Vec<MarkerLine> {
        let mut out = Vec::new();
        for c in self.marker_comments(line) {
            let text = &src[c.start..c.end];
            let Some(body) = text.strip_prefix("//") else {
                continue;
            };
            let body_start = c.start + 2;
            let trimmed = body.trim_start();
            let Some(m) = trimmed.strip_prefix('+') else {
                continue;
            };
            let m_start = body_start + (body.len() - trimmed.len()) + 1;
            let (name, value, vs) = match m.find('=') {
                Some(eq) => (&m[..eq], &m[eq + 1..], m_start + eq + 1),
                None => (m, "", m_start + m.len()),
            };
            let lead = value.len() - value.trim_start().len();
            let v = value.trim();
            out.push(MarkerLine {
                name: name.trim().to_string(),
                value: v.to_string(),
                value_start: vs + lead,
                value_end: vs + lead + v.len(),
            });
        }
        out
    }

    /// Markers anywhere in the file's comments (for package-level ones: `+groupName`).
    pub fn all_markers(&self, src: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for c in &self.comments {
            for l in src[c.start..c.end].lines() {
                let l = l.trim_start_matches("//").trim_start_matches("/*").trim();
                if let Some(m) = l.strip_prefix('+') {
                    let (n, v) = m.split_once('=').unwrap_or((m, ""));
                    out.push((n.trim().to_string(), v.trim().to_string()));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = r#"// Package v1 is a test.
// +groupName=example.com
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"example.com/api/shared"
)

// +kubebuilder:object:root=true

// Widget is a widget. A `{` in a comment.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the spec.
	// +optional
	Spec WidgetSpec `json:"spec,omitempty"`
}

type (
	// Hosts are hosts.
	Hosts []Host
	Host  = shared.Name
)

type WidgetSpec struct {
	A, B string `json:"a"`
	M map[string]*[]Host `json:"m"`
	F func(a, b int) (string, error) `json:"-"`
	S struct {
		X int `json:"x"`
	} `json:"s"`
	G shared.List[int] `json:"g"`
}

func (w *Widget) Name() string { type local struct{}; return "}" }
"#;

    #[test]
    fn declarations_fields_and_markers() {
        let f = parse(SRC).unwrap();
        assert_eq!(f.package, "v1");
        assert_eq!(
            f.imports,
            [
                (
                    "metav1".to_string(),
                    "k8s.io/apimachinery/pkg/apis/meta/v1".to_string()
                ),
                ("shared".to_string(), "example.com/api/shared".to_string())
            ]
        );
        let names: Vec<&str> = f.decls.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["Widget", "Hosts", "Host", "WidgetSpec"]);
        assert!(f.decls[2].alias);
        let Expr::Struct(fields) = &f.decls[0].expr else {
            panic!()
        };
        assert_eq!(fields.len(), 3);
        assert!(fields[0].names.is_empty());
        assert_eq!(fields[0].tag_value("json").as_deref(), Some(",inline"));
        assert_eq!(fields[2].names, ["Spec"]);
        assert_eq!(fields[2].place.indent, "\t");
        let m = f.markers(SRC, fields[2].place.line);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].name, "optional");
        // The root marker is in the group above the doc comment.
        let m = f.markers(SRC, f.decls[0].place.line);
        assert_eq!(m[0].name, "kubebuilder:object:root");
        assert_eq!(&SRC[m[0].value_start..m[0].value_end], "true");
        let Expr::Struct(spec) = &f.decls[3].expr else {
            panic!()
        };
        assert_eq!(spec[0].names, ["A", "B"]);
        assert_eq!(
            spec[1].expr,
            Expr::Map(
                Box::new(Expr::Named {
                    pkg: None,
                    name: "string".into()
                }),
                Box::new(Expr::Pointer(Box::new(Expr::Slice(Box::new(
                    Expr::Named {
                        pkg: None,
                        name: "Host".into()
                    }
                )))))
            )
        );
        assert_eq!(spec[2].expr, Expr::Other);
        assert!(matches!(&spec[3].expr, Expr::Struct(x) if x.len() == 1));
        assert_eq!(spec[4].tag_value("json").as_deref(), Some("g"));
        assert!(
            f.all_markers(SRC)
                .contains(&("groupName".into(), "example.com".into()))
        );
    }

    #[test]
    fn struct_tags_as_reflect_reads_them() {
        let t = r#"json:"a,omitempty" yaml:"b\"c""#;
        assert_eq!(struct_tag_lookup(t, "json").as_deref(), Some("a,omitempty"));
        assert_eq!(struct_tag_lookup(t, "yaml").as_deref(), Some("b\"c"));
        assert_eq!(struct_tag_lookup(t, "x"), None);
    }

    #[test]
    fn broken_files_are_errors_not_panics() {
        for src in [
            "type A struct {",
            "type A \"",
            "type A struct { B map[string }",
            "/*",
        ] {
            assert!(parse(src).is_err(), "{src}");
        }
        let deep = format!("type A {}int", "*".repeat(MAX_DEPTH + 10));
        assert!(parse(&deep).unwrap_err().contains("too deep"));
    }
}
