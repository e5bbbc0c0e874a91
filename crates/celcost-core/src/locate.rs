//! `file:line:column` for what a report names: its rules, messageExpressions, policy
//! expressions, schemas and the API server's errors, found by their field paths in the
//! positions recorded while the file was read ([`crate::positions`]). The estimate itself knows
//! nothing of files: locations are attached to its report afterwards.
//!
//! Field paths are the API server's: `spec.versions[0].schema.openAPIV3Schema.properties[spec]
//! .x-kubernetes-validations[0].rule`, `spec.validations[2].expression`. A bracket is a
//! sequence index or, on a mapping, a key (`properties[app.kubernetes.io/name]`). When every
//! version of a CRD shares one schema the API server names it `spec.validation.openAPIV3Schema`,
//! which a `apiextensions.k8s.io/v1` file does not have: it is looked up in the first version's
//! schema (`spec.versions[0].schema.openAPIV3Schema`), which is the same schema.

use std::sync::Arc;

use crate::positions::{NodeId, Pos, Positions};
use crate::report::{ErrorLocation, ObjectReport, SourceLocation};

/// An object's place in a file: the positions of its document, and the object's node there.
#[derive(Clone, Debug)]
pub struct ObjectSource {
    /// The file, as the report names it (the path as given).
    pub file: String,
    pub positions: Arc<Positions>,
    pub node: NodeId,
}

impl ObjectSource {
    /// The object named `object_source` of the document named `doc_source` (`file#2`): the
    /// document itself, or item `i` of a `kind: List` (`file#2[i]`).
    pub fn of(
        file: &str,
        positions: Arc<Positions>,
        doc_source: &str,
        object_source: &str,
    ) -> Option<ObjectSource> {
        let root = positions.root()?;
        let node = if object_source == doc_source {
            root
        } else {
            let i: usize = object_source
                .strip_prefix(doc_source)?
                .strip_prefix('[')?
                .strip_suffix(']')?
                .parse()
                .ok()?;
            let items = positions.get(root, "items")?;
            positions.index(items, i)?
        };
        Some(ObjectSource {
            file: file.to_string(),
            positions,
            node,
        })
    }

    fn location(&self, p: Pos) -> SourceLocation {
        SourceLocation {
            file: self.file.clone(),
            line: u64::from(p.line),
            column: u64::from(p.column),
        }
    }

    /// Where a node is: a scalar's token; a mapping's or sequence's key when it has one (the
    /// line that names it), else its start.
    fn node_pos(&self, n: NodeId) -> Pos {
        let p = &self.positions;
        if p.is_scalar(n) {
            p.at(n)
        } else {
            p.key_at(n).unwrap_or_else(|| p.at(n))
        }
    }

    /// Where the object starts.
    pub fn object_location(&self) -> SourceLocation {
        self.location(self.positions.at(self.node))
    }

    /// The node a field path names, when the file has it.
    pub fn locate(&self, field_path: &str) -> Option<SourceLocation> {
        let (n, _, complete) = self.walk(field_path);
        complete.then(|| self.location(self.node_pos(n)))
    }

    /// The node a field path names or, when the file does not have it, the nearest ancestor
    /// it has (the object itself at worst); with the part of the path that was found.
    pub fn nearest(&self, field_path: &str) -> (String, SourceLocation) {
        let (n, found, _) = self.walk(field_path);
        (found, self.location(self.node_pos(n)))
    }

    /// Follows a field path as far as the file has it: the node reached, the path to it, and
    /// whether that is the whole path.
    fn walk(&self, field_path: &str) -> (NodeId, String, bool) {
        let p = &self.positions;
        let shared = "spec.validation";
        let rewritten;
        let path = match field_path.strip_prefix(shared) {
            Some(rest)
                if (rest.is_empty() || rest.starts_with('.'))
                    && p.get(self.node, "spec")
                        .is_some_and(|s| p.get(s, "validation").is_none()) =>
            {
                rewritten = format!("spec.versions[0].schema{rest}");
                rewritten.as_str()
            }
            _ => field_path,
        };
        let mut node = self.node;
        let mut found = 0;
        for (step, end) in steps(path) {
            let next = match step {
                Step::Name(k) => p.get(node, k),
                Step::Bracket(k) if p.is_seq(node) => {
                    k.parse::<usize>().ok().and_then(|i| p.index(node, i))
                }
                Step::Bracket(k) => p.get(node, k),
            };
            match next {
                Some(n) => {
                    node = n;
                    found = end;
                }
                None => return (node, path[..found].to_string(), false),
            }
        }
        (node, path.to_string(), true)
    }

    /// Sets the locations of everything the report names.
    pub fn attach(&self, report: &mut ObjectReport) {
        report.location = Some(self.object_location());
        for s in &mut report.schemas {
            s.location = self.locate(&s.schema_field_path);
            for r in &mut s.rules {
                if r.rule_field_path.is_empty() {
                    continue;
                }
                r.location = self.locate(&r.rule_field_path);
                if r.message_expression.is_some() {
                    let node = r
                        .rule_field_path
                        .strip_suffix(".rule")
                        .unwrap_or(&r.rule_field_path);
                    r.message_expression_location =
                        self.locate(&format!("{node}.messageExpression"));
                }
            }
        }
        for e in &mut report.expressions {
            e.location = self.locate(&e.field_path);
        }
        report.error_locations = (0..report.errors.len())
            .map(|i| {
                let (field_path, location) = self.nearest(report.error_field(i));
                ErrorLocation {
                    error: i as u64,
                    field_path,
                    location,
                }
            })
            .collect();
        if let Some(st) = &mut report.stopped {
            // Where it stopped (`spec.variables[42].expression`), or the object.
            let at = st.at.as_deref().map(str::trim).unwrap_or_default();
            st.location = Some(self.nearest(at).1);
        }
    }
}

enum Step<'a> {
    /// `.name` (or the first name).
    Name(&'a str),
    /// `[index]` or `[key]`.
    Bracket(&'a str),
}

/// The steps of a field path, each with the byte offset where it ends. A bracket closes at the
/// first `]` followed by `.`, `[` or the end, so keys may hold dots and brackets.
fn steps(path: &str) -> Vec<(Step<'_>, usize)> {
    let b = path.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'.' => i += 1,
            b'[' => {
                let start = i + 1;
                let mut j = start;
                let close = loop {
                    match path[j..].find(']') {
                        None => break b.len(),
                        Some(k) => {
                            let at = j + k;
                            if at + 1 == b.len() || matches!(b[at + 1], b'.' | b'[') {
                                break at;
                            }
                            j = at + 1;
                        }
                    }
                };
                out.push((Step::Bracket(&path[start..close]), (close + 1).min(b.len())));
                i = close + 1;
            }
            _ => {
                let end = path[i..].find(['.', '[']).map(|k| i + k).unwrap_or(b.len());
                out.push((Step::Name(&path[i..end]), end));
                i = end;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::parse_documents_located;

    fn source(text: &str) -> ObjectSource {
        let (_, p) = parse_documents_located(text).remove(0);
        ObjectSource::of("f.yaml", Arc::new(p.unwrap()), "f.yaml#1", "f.yaml#1").unwrap()
    }

    fn at(s: &ObjectSource, path: &str) -> Option<(u64, u64)> {
        s.locate(path).map(|l| (l.line, l.column))
    }

    #[test]
    fn steps_keep_dots_and_brackets_inside_keys() {
        let s: Vec<String> = steps("spec.a[app.kubernetes.io/x].b[0][k]]x].c")
            .into_iter()
            .map(|(s, _)| match s {
                Step::Name(n) => format!("N:{n}"),
                Step::Bracket(n) => format!("B:{n}"),
            })
            .collect();
        assert_eq!(
            s,
            [
                "N:spec",
                "N:a",
                "B:app.kubernetes.io/x",
                "N:b",
                "B:0",
                "B:k]]x",
                "N:c"
            ]
        );
    }

    #[test]
    fn scalars_point_at_their_token() {
        let s = source(
            "spec:\n  a: plain\n  b: \"quoted\"\n  c: |\n    block\n  d: >-\n    folded\n  e: !!str tagged\n  f: &x anchored\n  g: *x\n  h:\n  - |\n    item\n  - 'it'\n  i: {j: [1, \"k\"]}\n  l: !!str |\n    x\n",
        );
        assert_eq!(at(&s, "spec.a"), Some((2, 6)));
        assert_eq!(at(&s, "spec.b"), Some((3, 6)));
        assert_eq!(at(&s, "spec.c"), Some((4, 6)));
        assert_eq!(at(&s, "spec.d"), Some((6, 6)));
        assert_eq!(at(&s, "spec.e"), Some((8, 12)));
        assert_eq!(at(&s, "spec.f"), Some((9, 9)));
        // An alias is found where its anchored text is.
        assert_eq!(at(&s, "spec.g"), Some((9, 9)));
        assert_eq!(at(&s, "spec.h[0]"), Some((12, 5)));
        assert_eq!(at(&s, "spec.h[1]"), Some((14, 5)));
        assert_eq!(at(&s, "spec.i.j[1]"), Some((15, 14)));
        assert_eq!(at(&s, "spec.l"), Some((16, 12)));
        // A mapping is found at its key.
        assert_eq!(at(&s, "spec.i"), Some((15, 3)));
        assert_eq!(at(&s, "spec.x"), None);
        assert_eq!(s.nearest("spec.i.zz[3]").0, "spec.i");
    }

    #[test]
    fn documents_and_lists_count_lines_from_the_file() {
        let text =
            "a: 1\n---\nkind: List\nitems:\n- kind: A\n  rule: x\n- kind: B\n  rule: \"y\"\n";
        let p = Arc::new(parse_documents_located(text).remove(1).1.unwrap());
        let s = ObjectSource::of("f", p, "f#2", "f#2[1]").unwrap();
        assert_eq!(s.locate("rule").map(|l| (l.line, l.column)), Some((8, 9)));
        assert_eq!(
            (s.object_location().line, s.object_location().column),
            (7, 3)
        );
    }

    #[test]
    fn duplicate_and_merged_keys_resolve_as_the_value_does() {
        let s = source("base: &b {x: 1, z: 2}\nm:\n  x: 3\n  <<: *b\n  x: 4\n");
        assert_eq!(at(&s, "m.x"), Some((5, 6)));
        assert_eq!(at(&s, "m.z"), Some((1, 20)));
    }

    #[test]
    fn a_shared_schema_is_found_in_the_first_version() {
        let s = source(
            "spec:\n  versions:\n  - name: v1\n    schema:\n      openAPIV3Schema:\n        x-kubernetes-validations:\n        - rule: self.a\n",
        );
        assert_eq!(
            at(
                &s,
                "spec.validation.openAPIV3Schema.x-kubernetes-validations[0].rule"
            ),
            Some((7, 17))
        );
        assert_eq!(at(&s, "spec.validation.openAPIV3Schema"), Some((5, 7)));
        let (found, l) = s.nearest("status.storedVersions");
        assert_eq!((found.as_str(), l.line, l.column), ("", 1, 1));
    }

    #[test]
    fn json_documents_are_located() {
        let s = source("{\"spec\": {\"validations\": [{\"expression\": \"true\"}]}}");
        assert_eq!(at(&s, "spec.validations[0].expression"), Some((1, 42)));
    }

    /// Tags, anchors, aliases, merges and block scalars by the hundred thousand, on one line
    /// and on many, and deep nesting: located in linear time (a quadratic walk of the text
    /// would take minutes here), one node per node.
    #[test]
    fn hostile_documents_are_located_in_linear_time() {
        let n = 100_000;
        let started = std::time::Instant::now();
        let one_line = format!("a: [{}]\n", vec!["!!str &x y, *x"; n].join(", "));
        let (d, p) = parse_documents_located(&one_line).remove(0);
        assert!(d.value.is_ok());
        let p = p.unwrap();
        assert!(p.len() <= 2 * n + 3, "{}", p.len());
        let s = ObjectSource::of("f", Arc::new(p), "f#1", "f#1").unwrap();
        // The last alias is found at the text of the last anchor.
        let last_y = one_line.rfind('y').unwrap() as u64 + 1;
        assert_eq!(
            s.locate(&format!("a[{}]", 2 * n - 1)).unwrap().column,
            last_y
        );
        assert_eq!(s.locate("a[0]").unwrap().column, 14);
        let mut many = String::from("base: &b {k: v}\nl:\n");
        for _ in 0..n / 4 {
            many.push_str("- !!str |\n  text\n- {<<: *b, j: 1}\n");
        }
        let (d, p) = parse_documents_located(&many).remove(0);
        assert!(d.value.is_ok());
        let s = ObjectSource::of("f", Arc::new(p.unwrap()), "f#1", "f#1").unwrap();
        assert_eq!(s.locate("l[2]").unwrap().line, 6);
        assert_eq!(s.locate("l[2]").unwrap().column, 9);
        assert_eq!(s.locate("l[3].k").unwrap().line, 1);
        let depth = 5_000;
        let mut deep = String::new();
        for i in 0..depth {
            deep.push_str(&" ".repeat(i));
            deep.push_str("a:\n");
        }
        deep.push_str(&" ".repeat(depth));
        deep.push_str("rule: x\n");
        let (d, p) = parse_documents_located(&deep).remove(0);
        assert!(d.value.is_ok());
        let s = ObjectSource::of("f", Arc::new(p.unwrap()), "f#1", "f#1").unwrap();
        let path = format!("{}rule", "a.".repeat(depth));
        assert_eq!(s.locate(&path).map(|l| l.line), Some(depth as u64 + 1));
        assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
    }
}
