//! Type resolution: declarations, fields and the types they name, followed from a CRD's root
//! type down a schema path as controller-gen follows them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use celcost_core::schema::path::{Step, rule_path as schema_path};
use serde_json::Value;

use super::place::shape_name;
use super::syntax::{Expr, Field, GoFile};
use super::{
    DeclRef, FieldRef, GoPackages, MAX_CHAIN, NodeType, Shape, Via, is_basic, json_name,
    strip_wrappers, syntax,
};

impl GoPackages {
    pub(super) fn decl(&self, d: DeclRef) -> &syntax::TypeDecl {
        &self.packages[d.pkg].files[d.file].2.decls[d.decl]
    }

    pub(super) fn file_of(&self, d: DeclRef) -> &(PathBuf, String, GoFile) {
        &self.packages[d.pkg].files[d.file]
    }

    /// `pkg.Type` for people.
    pub(super) fn decl_name(&self, d: DeclRef) -> String {
        format!("{}.{}", self.packages[d.pkg].name, self.decl(d).name)
    }

    pub(super) fn decl_where(&self, d: DeclRef) -> String {
        let (path, _, _) = self.file_of(d);
        format!("{}:{}", path.display(), self.decl(d).place.line)
    }

    /// The declaration `name` in package `pkg` (any file).
    pub(super) fn find_decl(&self, pkg: usize, name: &str) -> Option<DeclRef> {
        for (fi, (_, _, f)) in self.packages[pkg].files.iter().enumerate() {
            if let Some(di) = f.decls.iter().position(|d| d.name == name) {
                return Some(DeclRef {
                    pkg,
                    file: fi,
                    decl: di,
                });
            }
        }
        None
    }

    /// What a type expression in file `ctx` (package, file) is.
    pub(super) fn resolve(&self, ctx: (usize, usize), expr: &Expr) -> NodeType {
        let mut chain = Vec::new();
        let mut ctx = ctx;
        let mut e = expr.clone();
        for _ in 0..MAX_CHAIN {
            match e {
                Expr::Pointer(x) => e = *x,
                Expr::Slice(x) => {
                    let of_bytes = matches!(&*x, Expr::Named { pkg: None, name } if name == "byte" || name == "uint8");
                    return NodeType {
                        chain,
                        shape: Shape::Slice {
                            elt: *x,
                            ctx,
                            of_bytes,
                        },
                    };
                }
                Expr::Map(_, v) => {
                    return NodeType {
                        chain,
                        shape: Shape::Map { value: *v, ctx },
                    };
                }
                Expr::Struct(_) => {
                    // An anonymous struct: the caller knows where it is.
                    return NodeType {
                        chain,
                        shape: Shape::Other,
                    };
                }
                Expr::Other => {
                    return NodeType {
                        chain,
                        shape: Shape::Other,
                    };
                }
                Expr::Named { pkg, name } => {
                    let target = match &pkg {
                        None if is_basic(&name) && self.find_decl(ctx.0, &name).is_none() => {
                            return NodeType {
                                chain,
                                shape: Shape::Basic(name),
                            };
                        }
                        None => self.find_decl(ctx.0, &name),
                        Some(alias) => {
                            let imports = &self.packages[ctx.0].files[ctx.1].2.imports;
                            let Some((_, path)) = imports.iter().find(|(n, _)| n == alias) else {
                                return NodeType {
                                    chain,
                                    shape: Shape::External(format!("{alias}.{name}")),
                                };
                            };
                            match self.by_path.get(path) {
                                Some(&p) => self.find_decl(p, &name),
                                None => {
                                    return NodeType {
                                        chain,
                                        shape: Shape::External(format!("{path}.{name}")),
                                    };
                                }
                            }
                        }
                    };
                    let Some(d) = target else {
                        return NodeType {
                            chain,
                            shape: Shape::External(format!(
                                "{}{name} (no declaration found)",
                                pkg.map(|p| format!("{p}.")).unwrap_or_default()
                            )),
                        };
                    };
                    let decl = self.decl(d);
                    if !decl.alias {
                        chain.push(d);
                    }
                    ctx = (d.pkg, d.file);
                    if let Expr::Struct(_) = &decl.expr {
                        return NodeType {
                            chain,
                            shape: Shape::Struct {
                                decl: d,
                                path: Vec::new(),
                            },
                        };
                    }
                    e = decl.expr.clone();
                }
            }
        }
        NodeType {
            chain,
            shape: Shape::Other,
        }
    }

    /// The fields of a struct at `decl`/`path`.
    pub(super) fn struct_fields(&self, decl: DeclRef, path: &[usize]) -> Option<&[Field]> {
        let mut e = &self.decl(decl).expr;
        for &i in path {
            let Expr::Struct(fs) = strip_wrappers(e) else {
                return None;
            };
            e = &fs.get(i)?.expr;
        }
        match strip_wrappers(e) {
            Expr::Struct(fs) => Some(fs),
            _ => None,
        }
    }

    pub(super) fn field(&self, f: &FieldRef) -> Option<&Field> {
        let (last, up) = f.path.split_last()?;
        self.struct_fields(f.decl, up)?.get(*last)
    }

    /// The field of a struct whose json name is `name`: direct fields first, then those of
    /// inlined embedded structs (breadth first, as encoding/json prefers shallower fields).
    pub(super) fn find_field(&self, decl: DeclRef, path: &[usize], name: &str) -> Option<FieldRef> {
        let mut level: Vec<(DeclRef, Vec<usize>)> = vec![(decl, path.to_vec())];
        for _ in 0..MAX_CHAIN {
            let mut next = Vec::new();
            for (d, p) in &level {
                let Some(fields) = self.struct_fields(*d, p) else {
                    continue;
                };
                for (i, f) in fields.iter().enumerate() {
                    match json_name(f) {
                        Some((n, false)) if n == name => {
                            let mut fp = p.clone();
                            fp.push(i);
                            return Some(FieldRef { decl: *d, path: fp });
                        }
                        Some((_, true)) => {
                            let mut fp = p.clone();
                            fp.push(i);
                            if let Expr::Struct(_) = strip_wrappers(&f.expr) {
                                next.push((*d, fp));
                            } else {
                                let t = self.resolve((d.pkg, d.file), &f.expr);
                                if let Shape::Struct { decl, path } = t.shape {
                                    next.push((decl, path));
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
            if next.is_empty() {
                return None;
            }
            level = next;
        }
        None
    }

    /// The type of a field (anonymous structs located by the field itself).
    pub(super) fn field_type(&self, f: &FieldRef) -> Option<NodeType> {
        let field = self.field(f)?;
        if let Expr::Struct(_) = strip_wrappers(&field.expr)
            && matches!(&field.expr, Expr::Struct(_) | Expr::Pointer(_))
        {
            return Some(NodeType {
                chain: Vec::new(),
                shape: Shape::Struct {
                    decl: f.decl,
                    path: f.path.clone(),
                },
            });
        }
        Some(self.resolve((f.decl.pkg, f.decl.file), &field.expr))
    }

    /// The type of a list's element or map's value (anonymous structs inside a field's type
    /// located by the field).
    pub(super) fn inner_type(
        &self,
        expr: &Expr,
        ctx: (usize, usize),
        owner: Option<&FieldRef>,
    ) -> NodeType {
        if let (Expr::Struct(_), Some(f)) = (strip_wrappers(expr), owner) {
            let is_direct = {
                let mut e = expr;
                while let Expr::Pointer(x) = e {
                    e = x;
                }
                matches!(e, Expr::Struct(_))
            };
            if is_direct {
                return NodeType {
                    chain: Vec::new(),
                    shape: Shape::Struct {
                        decl: f.decl,
                        path: f.path.clone(),
                    },
                };
            }
        }
        self.resolve(ctx, expr)
    }

    /// The root type of a CRD per version name (`None` when none of its versions has one).
    pub fn root_of(&self, crd: &Value) -> Result<Option<BTreeMap<String, DeclRef>>, String> {
        let group = crd
            .pointer("/spec/group")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = crd
            .pointer("/spec/names/kind")
            .and_then(Value::as_str)
            .unwrap_or("");
        let versions: Vec<&str> = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .map(|vs| {
                vs.iter()
                    .filter_map(|v| v.get("name").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        let mut out = BTreeMap::new();
        for v in versions {
            let mut found: Vec<(DeclRef, bool)> = Vec::new();
            for (pi, p) in self.packages.iter().enumerate() {
                if p.group.as_deref() != Some(group) || p.version != v {
                    continue;
                }
                if let Some(d) = self.find_decl(pi, kind) {
                    let (_, src, f) = self.file_of(d);
                    let root = f
                        .markers(src, self.decl(d).place.line)
                        .iter()
                        .any(|m| m.name == "kubebuilder:object:root" && m.value != "false");
                    found.push((d, root));
                }
            }
            if found.iter().any(|(_, r)| *r) {
                found.retain(|(_, r)| *r);
            }
            match found.as_slice() {
                [] => {}
                [(d, _)] => {
                    out.insert(v.to_string(), *d);
                }
                many => {
                    return Err(format!(
                        "{group}/{v} {kind}: more than one Go root type: {}",
                        many.iter()
                            .map(|(d, _)| self.decl_where(*d))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
            }
        }
        Ok(if out.is_empty() { None } else { Some(out) })
    }

    /// The Go type of the node `steps` below a root type, and how it was reached.
    pub(super) fn walk(&self, root: DeclRef, steps: &[Step]) -> Result<(NodeType, Via), String> {
        let mut t = self.resolve(
            (root.pkg, root.file),
            &Expr::Named {
                pkg: None,
                name: self.decl(root).name.clone(),
            },
        );
        let mut via = Via::Root;
        for (i, step) in steps.iter().enumerate() {
            let here = || schema_path(&steps[..i]);
            match (step, &t.shape) {
                (Step::Prop(name), Shape::Struct { decl, path }) => {
                    let Some(f) = self.find_field(*decl, path, name) else {
                        return Err(format!(
                            "no field of {} has the json name `{name}`",
                            self.decl_name(*decl)
                        ));
                    };
                    t = self
                        .field_type(&f)
                        .ok_or_else(|| format!("{}.{name}: the field is not readable", here()))?;
                    via = Via::Field(f);
                }
                (Step::Items, Shape::Slice { elt, ctx, .. }) => {
                    let owner = match &via {
                        Via::Field(f) => Some(f.clone()),
                        _ => None,
                    };
                    let next = self.inner_type(elt, *ctx, owner.as_ref());
                    via = match owner {
                        Some(f) => Via::FieldItems(f, t.chain.clone()),
                        None => Via::Items(t.chain.clone()),
                    };
                    t = next;
                }
                (Step::Values, Shape::Map { value, ctx }) => {
                    let owner = match &via {
                        Via::Field(f) => Some(f.clone()),
                        _ => None,
                    };
                    t = self.inner_type(value, *ctx, owner.as_ref());
                    via = Via::Values;
                }
                (_, Shape::External(x)) => {
                    return Err(format!(
                        "{} is of type {x}, outside the Go packages read (--go)",
                        here()
                    ));
                }
                (s, shape) => {
                    return Err(format!(
                        "{}: the Go type is {}, not what the schema has there ({})",
                        here(),
                        shape_name(shape),
                        match s {
                            Step::Prop(n) => format!("a property `{n}`"),
                            Step::Items => "a list".into(),
                            Step::Values => "a map".into(),
                        }
                    ));
                }
            }
        }
        Ok((t, via))
    }
}
