//! What a value may hold, as far as the schemas tell: the size source of the typed policy
//! estimate for variables, iteration variables and literals.
//!
//! Shapes are shared, never copied. A variable's shape refers to the shapes of the variables it
//! reads, so `v1 = v0 + v0`, `v2 = v1 + v1`, ... is one node per variable, not 2^n. Each node
//! gets its size and its leaves (the unbounded or unknown fields behind it) once, when it is
//! made; steps into a composite node (`x.f`, `x[*]`) are computed once per node and step. A node
//! more than [`MAX_DEPTH`] levels above the schema keeps its size and leaves but not its
//! structure (reading into it gives an unknown size), and a node keeps at most [`MAX_LEAVES`]
//! leaves: both bound the work per node whatever the policy.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;

use crate::cel::cost::Size;
use crate::schema::catalog::TypedRoot;
use crate::schema::decltype::{DeclKind, DeclType, unescape};

/// Levels of composition (`?:`, `+`, literals) kept above the schema nodes.
pub(super) const MAX_DEPTH: u32 = 32;
/// Unbounded or unknown fields a node remembers (for the report's drivers).
pub(super) const MAX_LEAVES: usize = 16;

pub(super) type ShapeRef = Rc<Shape>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Leaf {
    /// A schema node without a size bound: sized from the request size.
    Unbounded,
    /// Nothing gives a size.
    Unknown,
}

/// A node, its size and leaves computed when it was made.
#[derive(Debug)]
pub(super) struct Shape {
    kind: Kind,
    size: Option<Size>,
    leaves: Rc<[(Leaf, String)]>,
    depth: u32,
}

#[derive(Debug)]
enum Kind {
    /// A schema node, read at `origin` (`object.spec.containers[*]`).
    Node {
        root: Arc<TypedRoot>,
        t: Arc<DeclType>,
        origin: String,
        /// Whether a field the schema does not declare is absent (a runtime error) rather than
        /// unknown (`namespaceObject`, whose type is not the schema's).
        strict: bool,
    },
    /// Not in the schema: reading it fails at runtime.
    Absent,
    /// Nothing known; `origin` names it for the report (empty: not reported).
    Unknown { origin: String },
    /// A known size (literals).
    Fixed,
    /// One of several values (`c ? a : b`).
    OneOf(Vec<ShapeRef>),
    /// Concatenated values (`a + b`): the sizes add up.
    Concat(Vec<ShapeRef>),
    /// A list or map literal: each element (value) one of `elem`, keys `keys` (maps).
    Literal {
        elem: ShapeRef,
        keys: Option<ShapeRef>,
    },
    /// Deeper than [`MAX_DEPTH`]: the size and leaves stand, what is inside is unknown.
    Summary,
}

fn no_leaves() -> Rc<[(Leaf, String)]> {
    Rc::from(Vec::new())
}

/// The leaves of `children`, each once, at most [`MAX_LEAVES`].
fn merge_leaves<'a>(children: impl Iterator<Item = &'a ShapeRef>) -> Rc<[(Leaf, String)]> {
    let mut out: Vec<(Leaf, String)> = Vec::new();
    'outer: for c in children {
        for l in c.leaves.iter() {
            if out.len() >= MAX_LEAVES {
                break 'outer;
            }
            if !out.contains(l) {
                out.push(l.clone());
            }
        }
    }
    Rc::from(out)
}

impl Shape {
    fn leaf(kind: Kind, size: Option<Size>, leaves: Rc<[(Leaf, String)]>) -> ShapeRef {
        Rc::new(Shape {
            kind,
            size,
            leaves,
            depth: 0,
        })
    }

    /// A composite node, or its summary when it is too deep.
    fn composite(
        kind: Kind,
        size: Option<Size>,
        leaves: Rc<[(Leaf, String)]>,
        depth: u32,
    ) -> ShapeRef {
        let kind = if depth > MAX_DEPTH {
            Kind::Summary
        } else {
            kind
        };
        Rc::new(Shape {
            kind,
            size,
            leaves,
            depth,
        })
    }

    pub(super) fn unknown(origin: String) -> ShapeRef {
        let leaves: Rc<[(Leaf, String)]> = Rc::from(vec![(Leaf::Unknown, origin.clone())]);
        Shape::leaf(Kind::Unknown { origin }, None, leaves)
    }

    pub(super) fn absent() -> ShapeRef {
        Shape::leaf(Kind::Absent, Some(Size::new(0, 0)), no_leaves())
    }

    pub(super) fn fixed(size: Size) -> ShapeRef {
        Shape::leaf(Kind::Fixed, Some(size), no_leaves())
    }

    pub(super) fn node(
        root: Arc<TypedRoot>,
        t: Arc<DeclType>,
        origin: String,
        strict: bool,
    ) -> ShapeRef {
        let size = Some(Size::new(0, t.max_elements.max(0) as u64));
        let leaves: Rc<[(Leaf, String)]> = if t.is_unbounded_sized() {
            Rc::from(vec![(Leaf::Unbounded, origin.clone())])
        } else {
            no_leaves()
        };
        Shape::leaf(
            Kind::Node {
                root,
                t,
                origin,
                strict,
            },
            size,
            leaves,
        )
    }

    /// The root of a schema, read as the variable `var`.
    pub(super) fn root(root: &Arc<TypedRoot>, var: &str, strict: bool) -> ShapeRef {
        Shape::node(root.clone(), root.decl.clone(), var.to_string(), strict)
    }

    /// One of `children` (each distinct node once; one child is itself).
    pub(super) fn one_of(children: Vec<ShapeRef>) -> ShapeRef {
        let mut seen = HashSet::new();
        let children: Vec<ShapeRef> = children
            .into_iter()
            .filter(|c| seen.insert(Rc::as_ptr(c)))
            .collect();
        if children.len() == 1 {
            return children.into_iter().next().expect("one child");
        }
        let mut size = Some(Size::new(u64::MAX, 0));
        for c in &children {
            size = match (size, c.size) {
                (Some(a), Some(b)) => Some(a.union(b)),
                _ => None,
            };
        }
        let size = size.map(|a| if a.min > a.max { Size::new(0, 0) } else { a });
        let leaves = merge_leaves(children.iter());
        let depth = children.iter().map(|c| c.depth).max().unwrap_or(0) + 1;
        Shape::composite(Kind::OneOf(children), size, leaves, depth)
    }

    /// `children` concatenated.
    pub(super) fn concat(children: Vec<ShapeRef>) -> ShapeRef {
        let mut size = Some(Size::new(0, 0));
        for c in &children {
            size = match (size, c.size) {
                (Some(a), Some(b)) => Some(a.add(b)),
                _ => None,
            };
        }
        let leaves = merge_leaves(children.iter());
        let depth = children.iter().map(|c| c.depth).max().unwrap_or(0) + 1;
        Shape::composite(Kind::Concat(children), size, leaves, depth)
    }

    /// A list (`keys` none) or map literal of `count` elements (entries).
    pub(super) fn literal(count: u64, elem: ShapeRef, keys: Option<ShapeRef>) -> ShapeRef {
        let depth = elem.depth.max(keys.as_ref().map_or(0, |k| k.depth)) + 1;
        Shape::composite(
            Kind::Literal { elem, keys },
            Some(Size::new(count, count)),
            no_leaves(),
            depth,
        )
    }

    /// The size, if anything gives one.
    pub(super) fn size(&self) -> Option<Size> {
        self.size
    }

    /// The unbounded and unknown fields the size comes from (empty origin: not named).
    pub(super) fn leaves(&self) -> &[(Leaf, String)] {
        &self.leaves
    }
}

/// A memoized step: (node, step) → (the node, kept alive so that its address stays its own;
/// the result).
type StepMemo = HashMap<(*const Shape, Box<str>), (ShapeRef, ShapeRef)>;

/// Steps into shapes, each composite node and step once.
#[derive(Default)]
pub(super) struct Shapes {
    memo: RefCell<StepMemo>,
}

impl Shapes {
    /// What `s.elem` holds: a field name, `@items`, `@values`, `@keys` or `@indices`.
    pub(super) fn step(&self, s: &ShapeRef, elem: &str) -> ShapeRef {
        match &s.kind {
            Kind::Node {
                root,
                t,
                origin,
                strict,
            } => step_node(root, t, origin, *strict, elem),
            Kind::Absent => Shape::absent(),
            Kind::Unknown { origin } => Shape::unknown(if origin.is_empty() {
                String::new()
            } else {
                match elem {
                    "@items" | "@values" => format!("{origin}[*]"),
                    "@keys" => format!("{origin}[key]"),
                    f => format!("{origin}.{}", unescape(f)),
                }
            }),
            Kind::Fixed | Kind::Summary => Shape::unknown(String::new()),
            Kind::Literal { elem: e, keys } => match (elem, keys) {
                ("@keys", Some(k)) => k.clone(),
                ("@items" | "@values" | "@keys", _) => e.clone(),
                _ => Shape::unknown(String::new()),
            },
            Kind::OneOf(v) | Kind::Concat(v) => {
                let key = (Rc::as_ptr(s), Box::from(elem));
                if let Some((_, hit)) = self.memo.borrow().get(&key) {
                    return hit.clone();
                }
                crate::budget::charge(v.len() as u64);
                let stepped: Vec<ShapeRef> = v.iter().map(|c| self.step(c, elem)).collect();
                let out = Shape::one_of(stepped);
                self.memo.borrow_mut().insert(key, (s.clone(), out.clone()));
                out
            }
        }
    }
}

fn step_node(
    root: &Arc<TypedRoot>,
    t: &Arc<DeclType>,
    origin: &str,
    strict: bool,
    elem: &str,
) -> ShapeRef {
    let (next, display) = match elem {
        "@items" | "@values" => (t.elem(), format!("{origin}[*]")),
        // A `dyn` range (an untyped variable) iterates with `@keys`, whatever it holds: a
        // list's elements, a map's keys.
        "@keys" => match &t.kind {
            DeclKind::List(e) => (Some(e), format!("{origin}[*]")),
            _ => (t.key(), format!("{origin}[key]")),
        },
        "@indices" => return Shape::fixed(Size::new(0, 0)),
        f => {
            let display = format!("{origin}.{}", unescape(f));
            let next = match &t.kind {
                DeclKind::Map(_, v) => Some(v),
                DeclKind::Object(_) => t.field(f).or_else(|| {
                    // Compatibility ≥ 1.31: `x.namespace` reads `__namespace__`.
                    t.field(&format!("__{f}__"))
                }),
                _ => None,
            };
            (next, display)
        }
    };
    match next {
        Some(n) => Shape::node(root.clone(), n.clone(), display, strict),
        None => {
            let open = matches!(t.kind, DeclKind::Object(_)) && root.is_open(t.cel.type_name());
            if open || !strict || t.cel == crate::cel::types::Type::Dyn {
                Shape::unknown(display)
            } else {
                Shape::absent()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_shapes_stay_small_and_keep_their_sizes() {
        let shapes = Shapes::default();
        let mut v = Shape::fixed(Size::new(1, 3));
        // 2^200 leaves if copied; 200 nodes here.
        for _ in 0..200 {
            v = Shape::concat(vec![v.clone(), v.clone()]);
        }
        let s = v.size().expect("a size");
        assert_eq!(s.max, u64::MAX, "3 × 2^200 saturates");
        // Deeper than MAX_DEPTH: the structure is summarized, reading into it is unknown.
        assert_eq!(v.depth, 200);
        assert!(shapes.step(&v, "@items").size().is_none());

        let mut l = Shape::unknown("variables.x".into());
        for i in 0..10 {
            l = Shape::one_of(vec![l.clone(), l.clone(), Shape::unknown(format!("f{i}"))]);
        }
        let stepped = shapes.step(&l, "@items");
        assert!(stepped.size().is_none());
        assert!(stepped.leaves().len() <= MAX_LEAVES);
        assert!(
            stepped
                .leaves()
                .iter()
                .any(|(k, o)| *k == Leaf::Unknown && o == "variables.x[*]")
        );
        // The same step again is the same node.
        assert!(Rc::ptr_eq(&stepped, &shapes.step(&l, "@items")));
    }

    #[test]
    fn one_of_the_same_node_is_that_node() {
        let a = Shape::fixed(Size::new(2, 5));
        let b = Shape::one_of(vec![a.clone(), a.clone()]);
        assert!(Rc::ptr_eq(&a, &b));
        let c = Shape::one_of(vec![a, Shape::fixed(Size::new(0, 9))]);
        assert_eq!(c.size(), Some(Size::new(0, 9)));
    }
}
