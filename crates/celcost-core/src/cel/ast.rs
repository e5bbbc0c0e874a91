//! Our CEL AST: what the checker and the estimator read. Produced by `parse.rs` from the `cel`
//! crate's parser, macros already expanded (as cel-go expands them).

/// Expression ids are dense, starting at 1, so per-node tables can be vectors.
pub type ExprId = u32;

#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    String(String),
    Bytes(Vec<u8>),
    Null,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub id: ExprId,
    pub kind: ExprKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Literal(Literal),
    Ident(String),
    Select {
        operand: Box<Expr>,
        field: String,
        test_only: bool,
    },
    Call {
        function: String,
        target: Option<Box<Expr>>,
        args: Vec<Expr>,
    },
    List {
        elements: Vec<Expr>,
        optional_indices: Vec<usize>,
    },
    Map {
        entries: Vec<MapEntry>,
    },
    Struct {
        type_name: String,
        fields: Vec<StructField>,
    },
    Comprehension(Box<Comprehension>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct MapEntry {
    pub id: ExprId,
    pub key: Expr,
    pub value: Expr,
    pub optional: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StructField {
    pub id: ExprId,
    pub name: String,
    pub value: Expr,
    pub optional: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Comprehension {
    pub iter_range: Expr,
    pub iter_var: String,
    pub iter_var2: Option<String>,
    pub accu_var: String,
    pub accu_init: Expr,
    pub loop_cond: Expr,
    pub loop_step: Expr,
    pub result: Expr,
}

/// A parsed expression with its source positions.
#[derive(Clone, Debug)]
pub struct ParsedExpr {
    pub expr: Expr,
    /// Source text.
    pub source: String,
    /// Start offset (in code points) of each expression id; index = id.
    pub offsets: Vec<u32>,
    /// Largest id + 1.
    pub max_id: ExprId,
}

impl ParsedExpr {
    /// 1-based line and 0-based column (in code points) of an expression, as cel-go locates it.
    pub fn location(&self, id: ExprId) -> (usize, usize) {
        let off = self.offsets.get(id as usize).copied().unwrap_or(0) as usize;
        location_of(&self.source, off)
    }
}

/// 1-based line and 0-based column of a code-point offset.
pub fn location_of(source: &str, offset: usize) -> (usize, usize) {
    let mut line = 1;
    let mut col = 0;
    for (i, c) in source.chars().enumerate() {
        if i >= offset {
            break;
        }
        if c == '\n' {
            line += 1;
            col = 0;
        } else {
            col += 1;
        }
    }
    (line, col)
}

impl Expr {
    /// Visits every expression of the tree (pre-order).
    pub fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Expr)) {
        f(self);
        match &self.kind {
            ExprKind::Literal(_) | ExprKind::Ident(_) => {}
            ExprKind::Select { operand, .. } => operand.walk(f),
            ExprKind::Call { target, args, .. } => {
                if let Some(t) = target {
                    t.walk(f);
                }
                for a in args {
                    a.walk(f);
                }
            }
            ExprKind::List { elements, .. } => elements.iter().for_each(|e| e.walk(f)),
            ExprKind::Map { entries } => entries.iter().for_each(|e| {
                e.key.walk(f);
                e.value.walk(f);
            }),
            ExprKind::Struct { fields, .. } => fields.iter().for_each(|e| e.value.walk(f)),
            ExprKind::Comprehension(c) => {
                c.iter_range.walk(f);
                c.accu_init.walk(f);
                c.loop_cond.walk(f);
                c.loop_step.walk(f);
                c.result.walk(f);
            }
        }
    }

    /// This node with each child replaced by `f` of it (left to right, as [`Expr::walk`] visits
    /// them): the one traversal of the rewriters that rebuild a tree.
    pub fn map_children(&self, f: &mut dyn FnMut(&Expr) -> Expr) -> Expr {
        let kind = match &self.kind {
            ExprKind::Literal(_) | ExprKind::Ident(_) => self.kind.clone(),
            ExprKind::Select {
                operand,
                field,
                test_only,
            } => ExprKind::Select {
                operand: Box::new(f(operand)),
                field: field.clone(),
                test_only: *test_only,
            },
            ExprKind::Call {
                function,
                target,
                args,
            } => ExprKind::Call {
                function: function.clone(),
                target: target.as_ref().map(|t| Box::new(f(t))),
                args: args.iter().map(&mut *f).collect(),
            },
            ExprKind::List {
                elements,
                optional_indices,
            } => ExprKind::List {
                elements: elements.iter().map(&mut *f).collect(),
                optional_indices: optional_indices.clone(),
            },
            ExprKind::Map { entries } => ExprKind::Map {
                entries: entries
                    .iter()
                    .map(|m| MapEntry {
                        id: m.id,
                        key: f(&m.key),
                        value: f(&m.value),
                        optional: m.optional,
                    })
                    .collect(),
            },
            ExprKind::Struct { type_name, fields } => ExprKind::Struct {
                type_name: type_name.clone(),
                fields: fields
                    .iter()
                    .map(|x| StructField {
                        id: x.id,
                        name: x.name.clone(),
                        value: f(&x.value),
                        optional: x.optional,
                    })
                    .collect(),
            },
            ExprKind::Comprehension(c) => ExprKind::Comprehension(Box::new(Comprehension {
                iter_range: f(&c.iter_range),
                iter_var: c.iter_var.clone(),
                iter_var2: c.iter_var2.clone(),
                accu_var: c.accu_var.clone(),
                accu_init: f(&c.accu_init),
                loop_cond: f(&c.loop_cond),
                loop_step: f(&c.loop_step),
                result: f(&c.result),
            })),
        };
        Expr { id: self.id, kind }
    }

    /// A call's function, target and arguments; `None` for any other expression.
    pub fn as_call(&self) -> Option<(&str, Option<&Expr>, &[Expr])> {
        match &self.kind {
            ExprKind::Call {
                function,
                target,
                args,
            } => Some((function.as_str(), target.as_deref(), args.as_slice())),
            _ => None,
        }
    }

    /// `a.b.c` as a qualified name when the expression is an identifier or a chain of
    /// (non-test) selects on one: cel-go `containers.ToQualifiedName`.
    pub fn qualified_name(&self) -> Option<String> {
        match &self.kind {
            ExprKind::Ident(n) => Some(n.clone()),
            ExprKind::Select {
                operand,
                field,
                test_only: false,
            } => operand.qualified_name().map(|q| format!("{q}.{field}")),
            _ => None,
        }
    }
}

/// Builders for synthesized expressions (id 0: they are re-numbered or evaluated, never
/// reported by id). The interpreter's lowering of two-variable comprehensions and the rewrite
/// catalogue build with these.
pub mod build {
    use super::{Expr, ExprKind, Literal};

    pub fn node(kind: ExprKind) -> Expr {
        Expr { id: 0, kind }
    }

    pub fn call(function: &str, target: Option<Expr>, args: Vec<Expr>) -> Expr {
        node(ExprKind::Call {
            function: function.into(),
            target: target.map(Box::new),
            args,
        })
    }

    pub fn ident(name: &str) -> Expr {
        node(ExprKind::Ident(name.into()))
    }

    pub fn list(elements: Vec<Expr>) -> Expr {
        node(ExprKind::List {
            elements,
            optional_indices: vec![],
        })
    }

    pub fn int(i: i64) -> Expr {
        node(ExprKind::Literal(Literal::Int(i)))
    }

    pub fn string(s: &str) -> Expr {
        node(ExprKind::Literal(Literal::String(s.into())))
    }
}
