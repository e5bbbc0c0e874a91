//! A bound written as a kubebuilder marker in the Go types a CRD is generated from.
//!
//! # Finding the Go field of a schema node
//!
//! The packages under the `--go` directories are read ([`syntax`]), and every package of the
//! same Go module they import (found from `go.mod`). A CRD's root type per version is the type
//! named as its kind in the package whose `+groupName` is the CRD's group and whose version
//! (`+versionName`, else the package name) is the version's name, preferring one marked
//! `+kubebuilder:object:root=true`. From there each step of the node's path follows the types
//! as controller-gen does:
//!
//! - a property is the struct field whose `json` tag names it (`json:"-"` fields skipped,
//!   `json:",inline"` and untagged embedded fields searched through, shallower fields first);
//! - `[*]` of a list is the slice's (or array's) element, of a map its value;
//! - pointers are looked through, named types followed to their declarations (in any file of
//!   the package, or in another package of the module), aliases (`type A = B`) to what they
//!   name. A type of another module (`metav1.Time`) ends the search: it cannot be edited here.
//!
//! # Where the marker goes
//!
//! As controller-gen applies them (`applyMarkers` of `sigs.k8s.io/controller-tools/pkg/crd`):
//! a field's markers apply to the field's schema, an `items:` marker of a field to its list's
//! items, a type declaration's markers to every use of the type. A bound already written is
//! lowered where it is — on the field, its `items:` marker, or the declaration of the named
//! type (or list type) it is on. A new one goes on the field when controller-gen can apply it
//! there and the node has no named type of its own: `MaxItems` on a field of an unnamed slice
//! type, `MaxProperties` on an unnamed map, `MaxLength` on a `string` field, `items:MaxLength`
//! (or `items:MaxItems`, `items:MaxProperties`) on a field whose unnamed slice's items are
//! such. A node of a named type gets the marker on the type's declaration (for the items of a
//! named list type of unnamed items, an `items:` marker on the list type's declaration), and a
//! note says how many fields that type bounds. A node no declaration carries markers for (the values of a `map[string]string`, a
//! list of unnamed lists' items) is refused with that reason: giving them a named type is the
//! author's decision.
//!
//! The marker line is inserted right above the field or declaration (after its doc comment,
//! where controller-gen reads it and leaves the description as it was), at its indentation;
//! when the field was aligned with the fields next to it, those lines are aligned again as
//! gofmt aligns them (a comment line ends an alignment section). A bound is never raised.
//!
//! After the edits, every changed file is read again and every marker searched for where it
//! was put; the CRD the edited types would generate is the input CRD with the bound on every
//! node the edited field or type describes, and that is what is estimated after.

pub mod syntax;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::Value;

use self::syntax::{Expr, Field, GoFile, Place};
use super::yaml::{TextEdit, apply_edits};
use super::{Bound, FixOptions, FixOutcome, ObjectFix, compare, plan_bounds};
use crate::estimate::Estimator;
use crate::report::ObjectReport;
use crate::schema::path::{Step, rule_path as schema_path, walk_mut};
use crate::suggest::{Keyword, Settings};

/// Steps through named types and aliases at most (a cycle of aliases ends here).
const MAX_CHAIN: usize = 64;
/// Files read at most.
const MAX_FILES: usize = 20_000;

/// One Go package.
#[derive(Debug)]
struct Package {
    import_path: Option<String>,
    name: String,
    files: Vec<(PathBuf, String, GoFile)>,
    group: Option<String>,
    version: String,
}

/// A type declaration: package, file, index in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeclRef {
    pkg: usize,
    file: usize,
    decl: usize,
}

/// A field: its struct's declaration and the field indices down to it (through anonymous
/// structs and the pointers, slices and maps around them).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FieldRef {
    decl: DeclRef,
    path: Vec<usize>,
}

/// What carries a marker.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Host {
    Field(FieldRef),
    Decl(DeclRef),
}

/// What a type is, once pointers, named types and aliases are looked through.
#[derive(Clone, Debug)]
enum Shape {
    Struct {
        decl: DeclRef,
        path: Vec<usize>,
    },
    Slice {
        elt: Expr,
        ctx: (usize, usize),
        of_bytes: bool,
    },
    Map {
        value: Expr,
        ctx: (usize, usize),
    },
    Basic(String),
    External(String),
    Other,
}

/// A schema node's Go type: the named declarations passed (aliases left out) and its shape.
#[derive(Clone, Debug)]
struct NodeType {
    chain: Vec<DeclRef>,
    shape: Shape,
}

/// How the walk reached a node.
#[derive(Clone, Debug)]
enum Via {
    Root,
    /// A struct field.
    Field(FieldRef),
    /// The items of a field's list: the field, and the list's named declarations (none for
    /// `[]T`).
    FieldItems(FieldRef, Vec<DeclRef>),
    /// Items of a list or values of a map reached otherwise: the list's or map's declarations.
    Items(Vec<DeclRef>),
    Values,
}

/// A marker to write: where, which, the value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub host: Host,
    /// `kubebuilder:validation:items:MaxLength`.
    pub marker: String,
    pub value: i64,
    /// Markers of that name already there, each (value, bytes of the value in its file).
    existing: Vec<(i64, usize, usize)>,
    /// Markers the host needs for controller-gen to apply this one, written above it when
    /// missing (`kubebuilder:validation:Type=string` on a field of another module's type).
    pub requires: Vec<String>,
}

/// The Go packages of a run and the edits made to them.
#[derive(Debug, Default)]
pub struct GoTypes {
    packages: Vec<Package>,
    by_path: HashMap<String, usize>,
    /// Edits by file: (file, key) → edit; a key is where the marker goes.
    edits: BTreeMap<(usize, usize), Vec<(Placement, Place)>>,
    /// Objects fixed in Go, with the placements they made.
    objects: Vec<(ObjectFix, Vec<Placement>)>,
}

/// Go's predeclared types that a schema takes as strings.
fn is_string_like(name: &str) -> bool {
    name == "string"
}

fn is_basic(name: &str) -> bool {
    matches!(
        name,
        "string"
            | "bool"
            | "byte"
            | "rune"
            | "int"
            | "int8"
            | "int16"
            | "int32"
            | "int64"
            | "uint"
            | "uint8"
            | "uint16"
            | "uint32"
            | "uint64"
            | "uintptr"
            | "float32"
            | "float64"
            | "complex64"
            | "complex128"
            | "any"
            | "error"
    )
}

/// The module a directory is in: its root and module path, from the nearest `go.mod` above.
fn module_of(dir: &Path) -> Option<(PathBuf, String)> {
    let mut d = std::fs::canonicalize(dir).ok()?;
    loop {
        let m = d.join("go.mod");
        if let Ok(text) = std::fs::read_to_string(&m) {
            let path = text.lines().find_map(|l| {
                l.trim()
                    .strip_prefix("module ")
                    .map(|p| p.trim().trim_matches('"').to_string())
            })?;
            return Some((d, path));
        }
        if !d.pop() {
            return None;
        }
    }
}

/// The json name of a field and whether it is inlined; `None` for a field json skips.
fn json_name(f: &Field) -> Option<(String, bool)> {
    let tag = f.tag_value("json");
    if tag.as_deref() == Some("-") {
        return None;
    }
    let tag = tag.unwrap_or_default();
    let mut parts = tag.split(',');
    let name = parts.next().unwrap_or_default().to_string();
    let inline_opt = parts.any(|o| o == "inline");
    let embedded = f.names.is_empty();
    if embedded && (inline_opt || name.is_empty()) {
        return Some((String::new(), true));
    }
    if inline_opt {
        return Some((String::new(), true));
    }
    let go_name = f
        .names
        .first()
        .cloned()
        .or_else(|| f.embedded_name().map(String::from))?;
    if !go_name.starts_with(|c: char| c.is_uppercase()) {
        return None;
    }
    Some((if name.is_empty() { go_name } else { name }, false))
}

/// The struct of a field's type, looking through pointers, slices and maps: the expression
/// the next index of a [`FieldRef`] path goes into.
fn strip_wrappers(e: &Expr) -> &Expr {
    match e {
        Expr::Pointer(x) | Expr::Slice(x) | Expr::Map(_, x) => strip_wrappers(x),
        _ => e,
    }
}

impl GoTypes {
    /// Reads the packages under `dirs` (recursively; `_test.go` files, `vendor` and `testdata`
    /// left out) and the packages of their modules that they import.
    pub fn load(dirs: &[PathBuf]) -> Result<GoTypes, String> {
        let mut g = GoTypes::default();
        let mut modules: Vec<(PathBuf, String)> = Vec::new();
        let mut todo: Vec<PathBuf> = Vec::new();
        for d in dirs {
            if !d.is_dir() {
                return Err(format!("--go {}: not a directory", d.display()));
            }
            if let Some(m) = module_of(d)
                && !modules.contains(&m)
            {
                modules.push(m);
            }
            let mut stack = vec![d.clone()];
            while let Some(dir) = stack.pop() {
                todo.push(dir.clone());
                let Ok(rd) = std::fs::read_dir(&dir) else {
                    continue;
                };
                let mut subs: Vec<PathBuf> = rd
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.is_dir()
                            && !matches!(
                                p.file_name().and_then(|n| n.to_str()),
                                Some("vendor" | "testdata" | ".git")
                            )
                    })
                    .collect();
                subs.sort();
                stack.extend(subs.into_iter().rev());
            }
        }
        let mut files_read = 0usize;
        let mut seen: std::collections::HashSet<PathBuf> = Default::default();
        // The directories given first (so that files are named as given), then the imports.
        let mut todo: std::collections::VecDeque<PathBuf> = todo.into();
        while let Some(dir) = todo.pop_front() {
            let Ok(canon) = std::fs::canonicalize(&dir) else {
                continue;
            };
            if !seen.insert(canon.clone()) {
                continue;
            }
            let Some(idx) = g.read_package(&dir, &canon, &modules, &mut files_read)? else {
                continue;
            };
            // The module's packages it imports, read too.
            let imports: Vec<String> = g.packages[idx]
                .files
                .iter()
                .flat_map(|(_, _, f)| f.imports.iter().map(|(_, p)| p.clone()))
                .collect();
            for imp in imports {
                for (root, module) in &modules {
                    if let Some(rest) = imp.strip_prefix(module.as_str())
                        && (rest.is_empty() || rest.starts_with('/'))
                    {
                        let d = root.join(rest.trim_start_matches('/'));
                        if d.is_dir() {
                            todo.push_back(d);
                        }
                    }
                }
            }
        }
        Ok(g)
    }

    fn read_package(
        &mut self,
        dir: &Path,
        canon: &Path,
        modules: &[(PathBuf, String)],
        files_read: &mut usize,
    ) -> Result<Option<usize>, String> {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return Ok(None);
        };
        let mut paths: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.is_file()
                    && p.extension().is_some_and(|e| e == "go")
                    && !p
                        .file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.ends_with("_test.go"))
            })
            .collect();
        if paths.is_empty() {
            return Ok(None);
        }
        paths.sort();
        let mut files = Vec::new();
        for p in paths {
            *files_read += 1;
            if *files_read > MAX_FILES {
                return Err(format!(
                    "--go: more than {MAX_FILES} Go files; name the API packages' directories"
                ));
            }
            let src = std::fs::read_to_string(&p)
                .map_err(|e| format!("{}: cannot read: {e}", p.display()))?;
            // Files excluded from every build (`//go:build ignore`) are not the package's.
            if src
                .lines()
                .take_while(|l| !l.starts_with("package "))
                .any(|l| l.trim() == "//go:build ignore" || l.trim() == "// +build ignore")
            {
                continue;
            }
            let f = syntax::parse(&src).map_err(|e| format!("{}: {e}", p.display()))?;
            files.push((p, src, f));
        }
        let Some(name) = files
            .iter()
            .map(|(_, _, f)| f.package.clone())
            .find(|n| !n.is_empty())
        else {
            return Ok(None);
        };
        files.retain(|(_, _, f)| f.package == name);
        let mut group = None;
        let mut version = None;
        for (_, src, f) in &files {
            for (n, v) in f.all_markers(src) {
                match n.as_str() {
                    "groupName" if group.is_none() => group = Some(v),
                    "versionName" if version.is_none() => version = Some(v),
                    _ => {}
                }
            }
        }
        let import_path = modules.iter().find_map(|(root, module)| {
            let rel = canon.strip_prefix(root).ok()?;
            let rel = rel.to_string_lossy().replace('\\', "/");
            Some(if rel.is_empty() {
                module.clone()
            } else {
                format!("{module}/{rel}")
            })
        });
        let idx = self.packages.len();
        if let Some(p) = &import_path {
            self.by_path.insert(p.clone(), idx);
        }
        self.packages.push(Package {
            import_path,
            version: version.unwrap_or_else(|| name.clone()),
            name,
            files,
            group,
        });
        Ok(Some(idx))
    }

    fn decl(&self, d: DeclRef) -> &syntax::TypeDecl {
        &self.packages[d.pkg].files[d.file].2.decls[d.decl]
    }

    fn file_of(&self, d: DeclRef) -> &(PathBuf, String, GoFile) {
        &self.packages[d.pkg].files[d.file]
    }

    /// `pkg.Type` for people.
    fn decl_name(&self, d: DeclRef) -> String {
        format!("{}.{}", self.packages[d.pkg].name, self.decl(d).name)
    }

    fn decl_where(&self, d: DeclRef) -> String {
        let (path, _, _) = self.file_of(d);
        format!("{}:{}", path.display(), self.decl(d).place.line)
    }

    /// The declaration `name` in package `pkg` (any file).
    fn find_decl(&self, pkg: usize, name: &str) -> Option<DeclRef> {
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
    fn resolve(&self, ctx: (usize, usize), expr: &Expr) -> NodeType {
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
    fn struct_fields(&self, decl: DeclRef, path: &[usize]) -> Option<&[Field]> {
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

    fn field(&self, f: &FieldRef) -> Option<&Field> {
        let (last, up) = f.path.split_last()?;
        self.struct_fields(f.decl, up)?.get(*last)
    }

    /// The field of a struct whose json name is `name`: direct fields first, then those of
    /// inlined embedded structs (breadth first, as encoding/json prefers shallower fields).
    fn find_field(&self, decl: DeclRef, path: &[usize], name: &str) -> Option<FieldRef> {
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
    fn field_type(&self, f: &FieldRef) -> Option<NodeType> {
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
    fn inner_type(&self, expr: &Expr, ctx: (usize, usize), owner: Option<&FieldRef>) -> NodeType {
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
    fn walk(&self, root: DeclRef, steps: &[Step]) -> Result<(NodeType, Via), String> {
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

    /// Markers named `name` on a host, with their values.
    fn host_markers(&self, host: &Host, name: &str) -> Vec<(i64, usize, usize)> {
        let (d, line) = match host {
            Host::Decl(d) => (*d, self.decl(*d).place.line),
            Host::Field(f) => match self.field(f) {
                Some(field) => (f.decl, field.place.line),
                None => return Vec::new(),
            },
        };
        let (_, src, file) = self.file_of(d);
        file.markers(src, line)
            .into_iter()
            .filter(|m| m.name == name)
            .filter_map(|m| {
                m.value
                    .parse::<i64>()
                    .ok()
                    .map(|v| (v, m.value_start, m.value_end))
            })
            .collect()
    }

    fn host_place(&self, host: &Host) -> Option<Place> {
        match host {
            Host::Decl(d) => Some(self.decl(*d).place.clone()),
            Host::Field(f) => self.field(f).map(|x| x.place.clone()),
        }
    }

    fn host_file(&self, host: &Host) -> (usize, usize) {
        match host {
            Host::Decl(d) => (d.pkg, d.file),
            Host::Field(f) => (f.decl.pkg, f.decl.file),
        }
    }

    /// `WidgetSpec.Hosts` or `type Hosts`, with the file and line.
    pub fn host_name(&self, host: &Host) -> String {
        match host {
            Host::Decl(d) => format!("type {} ({})", self.decl_name(*d), self.decl_where(*d)),
            Host::Field(f) => {
                let (path, _, _) = self.file_of(f.decl);
                let (name, line) = match self.field(f) {
                    Some(x) => (
                        x.names
                            .first()
                            .cloned()
                            .or_else(|| x.embedded_name().map(String::from))
                            .unwrap_or_default(),
                        x.place.line,
                    ),
                    None => (String::new(), 0),
                };
                format!(
                    "field {}.{name} ({}:{line})",
                    self.decl_name(f.decl),
                    path.display()
                )
            }
        }
    }

    /// Where the bound goes for one root type, or why it cannot go anywhere.
    pub fn place_in(&self, root: DeclRef, b: &Bound) -> Result<Vec<Placement>, String> {
        let (t, via) = self.walk(root, &b.steps)?;
        let k = match b.keyword {
            Keyword::MaxItems => "MaxItems",
            Keyword::MaxProperties => "MaxProperties",
            Keyword::MaxLength => "MaxLength",
        };
        let plain = format!("kubebuilder:validation:{k}");
        let items = format!("kubebuilder:validation:items:{k}");
        // Bounds already written: lowered where they are.
        let mut hosts: Vec<(Host, String)> = Vec::new();
        match &via {
            Via::Field(f) => hosts.push((Host::Field(f.clone()), plain.clone())),
            Via::FieldItems(f, list) => {
                hosts.push((Host::Field(f.clone()), items.clone()));
                hosts.extend(list.iter().map(|d| (Host::Decl(*d), items.clone())));
            }
            Via::Items(list) => hosts.extend(list.iter().map(|d| (Host::Decl(*d), items.clone()))),
            Via::Root | Via::Values => {}
        }
        hosts.extend(t.chain.iter().map(|d| (Host::Decl(*d), plain.clone())));
        let mut existing = Vec::new();
        for (h, m) in &hosts {
            let found = self.host_markers(h, m);
            if !found.is_empty() {
                existing.push(Placement {
                    host: h.clone(),
                    marker: m.clone(),
                    value: b.value,
                    existing: found,
                    requires: Vec::new(),
                });
            }
        }
        if !existing.is_empty() {
            return Ok(existing);
        }
        let fits_field = |shape: &Shape| match (b.keyword, shape) {
            (Keyword::MaxLength, Shape::Basic(n)) => is_string_like(n),
            (Keyword::MaxLength, Shape::Slice { of_bytes, .. }) => *of_bytes,
            (Keyword::MaxItems, Shape::Slice { of_bytes, .. }) => !of_bytes,
            (Keyword::MaxProperties, Shape::Map { .. }) => true,
            _ => false,
        };
        // A type of another module (`metav1.Duration`, `resource.Quantity`, a type of another
        // API module): controller-gen gives the field a reference to the type's schema, with
        // no type of its own, and a size marker applies only to a schema that says what it is
        // (`must apply maxlength to a textual value`). So the marker goes on the field (or on
        // the local type that names the other), with the type marker that makes it apply:
        // `Type=string` (`XIntOrString` for an int-or-string, `Type=array`, `Type=object`),
        // which the flattened schema already has from the type it refers to.
        let external = match &t.shape {
            Shape::External(x) => Some(enabling_marker(b, x)?),
            _ => None,
        };
        let kind_ok = external.is_some()
            || fits_field(&t.shape)
            || (b.keyword == Keyword::MaxProperties && matches!(t.shape, Shape::Struct { .. }));
        if !kind_ok {
            return Err(format!(
                "{} is {} in Go, which {} does not apply to",
                schema_path(&b.steps),
                shape_name(&t.shape),
                b.keyword.name()
            ));
        }
        let requires = |m: &str| -> Vec<String> {
            match &external {
                Some(e) => {
                    let prefix = if m == items {
                        "kubebuilder:validation:items:"
                    } else {
                        "kubebuilder:validation:"
                    };
                    vec![format!("{prefix}{e}")]
                }
                None => Vec::new(),
            }
        };
        let on_type = |d: &DeclRef, m: &str| Placement {
            host: Host::Decl(*d),
            marker: m.to_string(),
            value: b.value,
            existing: Vec::new(),
            requires: requires(m),
        };
        let on_field = |f: &FieldRef, m: &str| Placement {
            host: Host::Field(f.clone()),
            marker: m.to_string(),
            value: b.value,
            existing: Vec::new(),
            requires: requires(m),
        };
        // A node of a named type: the marker on the type's declaration (a bound on what the
        // type's values are, for every use of it); an unnamed one, or one of another module's
        // type, on its field.
        let field_can = t.chain.is_empty();
        let on_its_field = field_can && (fits_field(&t.shape) || external.is_some());
        let mut p = match &via {
            Via::Field(f) if on_its_field => on_field(f, &plain),
            Via::FieldItems(f, list) if list.is_empty() && on_its_field => on_field(f, &items),
            _ if !t.chain.is_empty() => on_type(&t.chain[0], &plain),
            Via::FieldItems(_, list) | Via::Items(list) if !list.is_empty() => {
                on_type(&list[0], &items)
            }
            Via::Values => {
                return Err(format!(
                    "{}: the map's values have no named type of their own to carry a marker (controller-gen applies items: markers to lists only); give them one, or bound the map",
                    schema_path(&b.steps)
                ));
            }
            _ => {
                return Err(format!(
                    "{}: no field or type declaration carries markers for this node (the items of an unnamed list inside a list)",
                    schema_path(&b.steps)
                ));
            }
        };
        if let Some(pl) = self.host_place(&p.host)
            && !pl.own_line
        {
            return Err(format!(
                "{}: {} does not start its line, so a marker line cannot go above it",
                schema_path(&b.steps),
                self.host_name(&p.host)
            ));
        }
        // A type marker the host has already (whatever its value: it compiled) is not added.
        let host = p.host.clone();
        p.requires.retain(|r| {
            let name = r.split_once('=').map_or(r.as_str(), |(n, _)| n);
            !self.host_has_marker(&host, name)
        });
        Ok(vec![p])
    }

    /// Whether a host has a marker named `name`, whatever its value.
    fn host_has_marker(&self, host: &Host, name: &str) -> bool {
        let (d, line) = match host {
            Host::Decl(d) => (*d, self.decl(*d).place.line),
            Host::Field(f) => match self.field(f) {
                Some(field) => (f.decl, field.place.line),
                None => return false,
            },
        };
        let (_, src, file) = self.file_of(d);
        file.markers(src, line).iter().any(|m| m.name == name)
    }

    /// Where a bound goes for every version it is in.
    fn place(
        &self,
        roots: &BTreeMap<String, DeclRef>,
        b: &Bound,
    ) -> Result<Vec<Placement>, String> {
        let mut out: Vec<Placement> = Vec::new();
        for v in &b.versions {
            let Some(root) = roots.get(v) else {
                return Err(format!(
                    "version {v} has no Go root type in the --go packages"
                ));
            };
            for p in self.place_in(*root, b)? {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        Ok(out)
    }

    /// How many fields and declarations of the packages read use a declaration, and the first
    /// few of them.
    fn uses_of(&self, d: DeclRef) -> Vec<String> {
        let mut out = Vec::new();
        let name = &self.decl(d).name;
        let target_path = self.packages[d.pkg].import_path.clone();
        for (pi, p) in self.packages.iter().enumerate() {
            for (fi, (_, _, f)) in p.files.iter().enumerate() {
                let names_it = |e: &Expr| -> bool {
                    fn any(e: &Expr, hit: &dyn Fn(&Option<String>, &str) -> bool) -> bool {
                        match e {
                            Expr::Named { pkg, name } => hit(pkg, name),
                            Expr::Pointer(x) | Expr::Slice(x) => any(x, hit),
                            Expr::Map(k, v) => any(k, hit) || any(v, hit),
                            _ => false,
                        }
                    }
                    any(e, &|pkg: &Option<String>, n: &str| {
                        n == name
                            && match pkg {
                                None => pi == d.pkg,
                                Some(alias) => f.imports.iter().any(|(a, path)| {
                                    a == alias && Some(path) == target_path.as_ref()
                                }),
                            }
                    })
                };
                for (di, decl) in f.decls.iter().enumerate() {
                    let here = DeclRef {
                        pkg: pi,
                        file: fi,
                        decl: di,
                    };
                    if here == d {
                        continue;
                    }
                    if !matches!(strip_wrappers(&decl.expr), Expr::Struct(_)) {
                        if names_it(&decl.expr) {
                            out.push(format!("type {}.{}", p.name, decl.name));
                        }
                        continue;
                    }
                    let mut stack: Vec<(&Expr, String)> = vec![(&decl.expr, decl.name.clone())];
                    while let Some((e, at)) = stack.pop() {
                        if let Expr::Struct(fs) = strip_wrappers(e) {
                            for fl in fs {
                                let fname = fl
                                    .names
                                    .first()
                                    .cloned()
                                    .or_else(|| fl.embedded_name().map(String::from))
                                    .unwrap_or_default();
                                if names_it(&fl.expr) {
                                    out.push(format!("{}.{at}.{fname}", p.name));
                                }
                                stack.push((&fl.expr, format!("{at}.{fname}")));
                            }
                        }
                    }
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// Records one object's fix in the Go types: the bounds planned with placements checked,
    /// the edits (applied in [`GoTypes::finish`]), and the costs of the CRD the edited types
    /// would generate.
    pub fn fix_object(
        &mut self,
        estimators: &[Estimator],
        found: &crate::input::FoundObject,
        roots: BTreeMap<String, DeclRef>,
        before: Vec<ObjectReport>,
        mut fix: ObjectFix,
        options: &FixOptions,
    ) {
        let (object, source) = (&found.value, found.source.as_str());
        let planned = {
            let me = &*self;
            plan_bounds(estimators, object, source, &options.settings, &mut |b| {
                me.place(&roots, b).map(|_| ())
            })
        };
        let super::Planned {
            bounds,
            refused,
            notes,
        } = match planned {
            Ok(x) => x,
            Err(stop) => {
                fix.refused.push(format!("the search stopped: {stop}"));
                compare(&mut fix, estimators, &before, &before, &options.settings);
                self.objects.push((fix, Vec::new()));
                return;
            }
        };
        fix.refused.extend(refused);
        fix.notes.extend(notes);
        let mut placed: Vec<Placement> = Vec::new();
        for b in bounds {
            match self.place(&roots, &b) {
                Err(why) => fix.refused.push(format!("{}: {why}", b.describe())),
                Ok(ps) => {
                    let mut at = Vec::new();
                    for p in ps {
                        let what = if p.existing.is_empty() {
                            let needs: String =
                                p.requires.iter().map(|r| format!("+{r} ")).collect();
                            format!(
                                "{needs}+{}={} on {}",
                                p.marker,
                                p.value,
                                self.host_name(&p.host)
                            )
                        } else {
                            format!(
                                "+{}={} (was {}) on {}",
                                p.marker,
                                p.value,
                                p.existing
                                    .iter()
                                    .map(|e| e.0.to_string())
                                    .collect::<Vec<_>>()
                                    .join(", "),
                                self.host_name(&p.host)
                            )
                        };
                        at.push(what);
                        if let Host::Decl(d) = &p.host {
                            let uses = self.uses_of(*d);
                            if uses.len() > 1 {
                                let shown: Vec<&str> =
                                    uses.iter().take(6).map(String::as_str).collect();
                                fix.notes.push(format!(
                                    "+{} is on type {}, which bounds every use of it: {} ({}{})",
                                    p.marker,
                                    self.decl_name(*d),
                                    uses.len(),
                                    shown.join(", "),
                                    if uses.len() > 6 { ", ..." } else { "" }
                                ));
                            }
                        }
                        placed.push(p);
                    }
                    // A schema per version: the same bound and edit once.
                    let at = at.join("; ");
                    if !fix
                        .bounds
                        .iter()
                        .any(|(x, y)| x.describe() == b.describe() && *y == at)
                    {
                        fix.bounds.push((b, at));
                    }
                }
            }
        }
        // The CRD as the edited types would generate it, estimated by every minor.
        let generated = self.generated(object, &roots, &placed);
        let after: Vec<ObjectReport> = estimators
            .iter()
            .map(|e| e.estimate_crd(&generated, source))
            .collect();
        compare(&mut fix, estimators, &before, &after, &options.settings);
        for p in &placed {
            let (pkg, file) = self.host_file(&p.host);
            let key = (pkg, file);
            if let Some(pl) = self.host_place(&p.host) {
                self.edits.entry(key).or_default().push((p.clone(), pl));
            }
        }
        self.objects.push((fix, placed));
    }

    /// The CRD with every placement's bound on every node it describes: what controller-gen
    /// would generate from the edited types (the input CRD being generated from these types).
    fn generated(
        &self,
        object: &Value,
        roots: &BTreeMap<String, DeclRef>,
        placed: &[Placement],
    ) -> Value {
        let mut out = object.clone();
        let Some(vs) = object.pointer("/spec/versions").and_then(Value::as_array) else {
            return out;
        };
        for (i, v) in vs.iter().enumerate() {
            let Some(root) = v
                .get("name")
                .and_then(Value::as_str)
                .and_then(|n| roots.get(n))
            else {
                continue;
            };
            let pointer = format!("/spec/versions/{i}/schema/openAPIV3Schema");
            let Some(schema) = object.pointer(&pointer) else {
                continue;
            };
            let mut hits: Vec<(Vec<Step>, &'static str, i64)> = Vec::new();
            let start = self.resolve(
                (root.pkg, root.file),
                &Expr::Named {
                    pkg: None,
                    name: self.decl(*root).name.clone(),
                },
            );
            let mut stack: Vec<(Vec<Step>, NodeType, Via, &Value)> =
                vec![(Vec::new(), start, Via::Root, schema)];
            let mut visited = 0usize;
            while let Some((steps, t, via, node)) = stack.pop() {
                visited += 1;
                if visited > 1_000_000 {
                    break;
                }
                for p in placed {
                    let keyword = match p.marker.rsplit(':').next().unwrap_or_default() {
                        "MaxItems" => "maxItems",
                        "MaxProperties" => "maxProperties",
                        _ => "maxLength",
                    };
                    let is_items = p.marker.contains(":items:");
                    let applies = match (&p.host, is_items, &via) {
                        (Host::Field(f), false, Via::Field(g)) => f == g,
                        (Host::Field(f), true, Via::FieldItems(g, _)) => f == g,
                        (Host::Decl(d), false, _) => t.chain.contains(d),
                        (Host::Decl(d), true, Via::FieldItems(_, list) | Via::Items(list)) => {
                            list.contains(d)
                        }
                        _ => false,
                    };
                    if applies {
                        hits.push((steps.clone(), keyword, p.value));
                    }
                }
                // Children.
                match &t.shape {
                    Shape::Struct { decl, path } => {
                        if let Some(props) = node.get("properties").and_then(Value::as_object) {
                            for (name, child) in props {
                                let Some(f) = self.find_field(*decl, path, name) else {
                                    continue;
                                };
                                let Some(ft) = self.field_type(&f) else {
                                    continue;
                                };
                                let mut s = steps.clone();
                                s.push(Step::Prop(name.clone()));
                                stack.push((s, ft, Via::Field(f), child));
                            }
                        }
                    }
                    Shape::Slice { elt, ctx, .. } => {
                        if let Some(child) = node.get("items") {
                            let owner = match &via {
                                Via::Field(f) => Some(f.clone()),
                                _ => None,
                            };
                            let ct = self.inner_type(elt, *ctx, owner.as_ref());
                            let cv = match owner {
                                Some(f) => Via::FieldItems(f, t.chain.clone()),
                                None => Via::Items(t.chain.clone()),
                            };
                            let mut s = steps.clone();
                            s.push(Step::Items);
                            stack.push((s, ct, cv, child));
                        }
                    }
                    Shape::Map { value, ctx } => {
                        if let Some(child) =
                            node.get("additionalProperties").filter(|c| c.is_object())
                        {
                            let owner = match &via {
                                Via::Field(f) => Some(f.clone()),
                                _ => None,
                            };
                            let ct = self.inner_type(value, *ctx, owner.as_ref());
                            let mut s = steps.clone();
                            s.push(Step::Values);
                            stack.push((s, ct, Via::Values, child));
                        }
                    }
                    _ => {}
                }
            }
            for (steps, keyword, value) in hits {
                let Some(root) = out.pointer_mut(&pointer) else {
                    continue;
                };
                if let Some(n) = walk_mut(root, &steps).and_then(Value::as_object_mut) {
                    let now = n.get(keyword).and_then(Value::as_i64);
                    if now.is_none_or(|c| c > value) {
                        n.insert(keyword.to_string(), Value::from(value));
                    }
                }
            }
        }
        out
    }

    /// Applies the edits of every object to the files, reads each changed file back and finds
    /// every marker where it was put (a file that does not read back so is not changed, and its
    /// objects say why); hands the files and the objects to the outcome.
    pub fn finish(
        mut self,
        _estimators: &[Estimator],
        _settings: &Settings,
        outcome: &mut FixOutcome,
    ) {
        let mut failed: BTreeMap<(usize, usize), String> = BTreeMap::new();
        for (&(pkg, file), placements) in &self.edits {
            let (path, src, parsed) = &self.packages[pkg].files[file];
            match self.file_edits(src, parsed, placements) {
                Err(e) => {
                    failed.insert((pkg, file), format!("{}: {e}", path.display()));
                }
                Ok(edits) => {
                    let after = match apply_edits(src, &edits) {
                        Ok(t) => t,
                        Err(e) => {
                            failed.insert((pkg, file), format!("{}: {e}", path.display()));
                            continue;
                        }
                    };
                    if let Err(e) = self.read_back(&after, parsed, placements) {
                        failed.insert(
                            (pkg, file),
                            format!(
                                "{}: the edited file does not read back: {e}",
                                path.display()
                            ),
                        );
                        continue;
                    }
                    if after != *src {
                        outcome.files.push(super::FileChange {
                            path: path.clone(),
                            before: src.clone(),
                            after,
                        });
                    }
                }
            }
        }
        let objects = std::mem::take(&mut self.objects);
        for (mut fix, placed) in objects {
            for p in &placed {
                if let Some(why) = failed.get(&self.host_file(&p.host))
                    && !fix.refused.contains(why)
                {
                    fix.refused.push(why.clone());
                }
                // A field or type another CRD bounds lower: the marker carries the lowest.
                let lowest = self
                    .edits
                    .get(&self.host_file(&p.host))
                    .into_iter()
                    .flatten()
                    .filter(|(q, _)| q.host == p.host && q.marker == p.marker)
                    .map(|(q, _)| q.value)
                    .min();
                if let Some(v) = lowest
                    && v < p.value
                {
                    let n = format!(
                        "+{}={} on {} is shared with another CRD fixed in this run, which needs {v}: the marker carries {v}, and this CRD gets that lower bound when generated",
                        p.marker,
                        p.value,
                        self.host_name(&p.host)
                    );
                    if !fix.notes.contains(&n) {
                        fix.notes.push(n);
                    }
                }
            }
            outcome.objects.push(fix);
        }
    }

    /// The text edits of one file: each marker added above its host (the lowest value where
    /// several bounds add the same marker) or lowered where it is, and the fields around an
    /// added line aligned again as gofmt would.
    fn file_edits(
        &self,
        src: &str,
        parsed: &GoFile,
        placements: &[(Placement, Place)],
    ) -> Result<Vec<TextEdit>, String> {
        // Lowered values: (start, end) → value.
        let mut lower: BTreeMap<(usize, usize), i64> = BTreeMap::new();
        // Added markers: (line start, marker) → (indent, value, line, markers it needs).
        let mut add: BTreeMap<(usize, String), AddedMarker> = BTreeMap::new();
        for (p, pl) in placements {
            if p.existing.is_empty() {
                let e = add.entry((pl.line_start, p.marker.clone())).or_insert((
                    pl.indent.clone(),
                    p.value,
                    pl.line,
                    Vec::new(),
                ));
                e.1 = e.1.min(p.value);
                for r in &p.requires {
                    if !e.3.contains(r) {
                        e.3.push(r.clone());
                    }
                }
            } else {
                for &(v, s, e) in &p.existing {
                    if v > p.value {
                        let x = lower.entry((s, e)).or_insert(p.value);
                        *x = (*x).min(p.value);
                    }
                }
            }
        }
        let mut edits: Vec<TextEdit> = lower
            .into_iter()
            .map(|((s, e), v)| TextEdit {
                start: s,
                end: e,
                text: v.to_string(),
            })
            .collect();
        // Lines above which a comment line is inserted.
        let mut split_lines: Vec<u32> = Vec::new();
        // Markers a line needs, written once above the first marker there that needs them.
        let mut required_at: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for ((at, marker), (indent, value, line, requires)) in add {
            let written = required_at.entry(at).or_default();
            let mut text = String::new();
            for r in requires {
                if !written.contains(&r) {
                    text.push_str(&format!("{indent}// +{r}\n"));
                    written.push(r);
                }
            }
            text.push_str(&format!("{indent}// +{marker}={value}\n"));
            edits.push(TextEdit {
                start: at,
                end: at,
                text,
            });
            split_lines.push(line);
        }
        split_lines.sort();
        split_lines.dedup();
        edits.extend(realign(src, parsed, &split_lines)?);
        Ok(edits)
    }

    /// Reads an edited file again and finds every placement's marker with its value.
    fn read_back(
        &self,
        after: &str,
        before: &GoFile,
        placements: &[(Placement, Place)],
    ) -> Result<(), String> {
        let parsed = syntax::parse(after)?;
        if parsed.decls.len() != before.decls.len() {
            return Err("its type declarations changed".into());
        }
        for (p, _) in placements {
            let (decl_idx, line) = match &p.host {
                Host::Decl(d) => (d.decl, parsed.decls[d.decl].place.line),
                Host::Field(f) => {
                    let mut e = &parsed.decls[f.decl.decl].expr;
                    let mut field = None;
                    for &i in &f.path {
                        let Expr::Struct(fs) = strip_wrappers(e) else {
                            return Err("a struct changed".into());
                        };
                        let x = fs.get(i).ok_or("a field is gone")?;
                        field = Some(x);
                        e = &x.expr;
                    }
                    (f.decl.decl, field.ok_or("a field is gone")?.place.line)
                }
            };
            if parsed.decls[decl_idx].name != before.decls[decl_idx].name {
                return Err("its type declarations changed".into());
            }
            let found = parsed
                .markers(after, line)
                .into_iter()
                .filter(|m| m.name == p.marker)
                .filter_map(|m| m.value.parse::<i64>().ok())
                .collect::<Vec<_>>();
            if found.is_empty() || found.iter().any(|&v| v > p.value) {
                return Err(format!(
                    "+{} is not found with {} or less",
                    p.marker, p.value
                ));
            }
            let markers = parsed.markers(after, line);
            for r in &p.requires {
                let (name, value) = r.split_once('=').unwrap_or((r.as_str(), ""));
                if !markers.iter().any(|m| m.name == name && m.value == value) {
                    return Err(format!("+{r} is not found"));
                }
            }
        }
        Ok(())
    }
}

/// A marker line to add: its indentation, value, the host's line, and the markers it needs.
type AddedMarker = (String, i64, u32, Vec<String>);

/// The type marker (`Type=string`) a size bound on a node of another module's type `x` needs,
/// from the node's type in the CRD; `Err` when the bound cannot apply to it.
fn enabling_marker(b: &Bound, x: &str) -> Result<String, String> {
    let ok = match (b.keyword, b.node_type.as_str()) {
        (Keyword::MaxLength, "string") => Some("Type=string"),
        (Keyword::MaxLength, "int-or-string") => Some("XIntOrString"),
        (Keyword::MaxItems, "array") => Some("Type=array"),
        (Keyword::MaxProperties, "object") => Some("Type=object"),
        _ => None,
    };
    ok.map(String::from).ok_or_else(|| {
        format!(
            "{} is of type {x} (of another module), whose schema in the CRD is {}: {} does not apply to it",
            schema_path(&b.steps),
            if b.node_type.is_empty() {
                "untyped".to_string()
            } else {
                format!("of type {}", b.node_type)
            },
            b.keyword.name()
        )
    })
}

fn shape_name(s: &Shape) -> String {
    match s {
        Shape::Struct { .. } => "a struct".into(),
        Shape::Slice { of_bytes: true, .. } => "[]byte".into(),
        Shape::Slice { .. } => "a list".into(),
        Shape::Map { .. } => "a map".into(),
        Shape::Basic(n) => format!("`{n}`"),
        Shape::External(x) => x.clone(),
        Shape::Other => "an interface, function or channel".into(),
    }
}

/// One line of a struct's fields as gofmt lays it out: its cells (name, type, tag, comment).
struct Row {
    line: u32,
    indent: String,
    cells: Vec<String>,
}

/// The rows of fields on consecutive lines around each split line (a field above which a
/// comment line is inserted), re-laid out as gofmt lays them out once the comment line splits
/// them: each part aligned on its own. Returns edits replacing the lines that change.
fn realign(src: &str, parsed: &GoFile, split_lines: &[u32]) -> Result<Vec<TextEdit>, String> {
    if split_lines.is_empty() {
        return Ok(Vec::new());
    }
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(src.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    // Every struct's fields, in order.
    let mut structs: Vec<&[Field]> = Vec::new();
    fn collect<'a>(e: &'a Expr, out: &mut Vec<&'a [Field]>) {
        match e {
            Expr::Struct(fs) => {
                out.push(fs);
                for f in fs {
                    collect(&f.expr, out);
                }
            }
            Expr::Pointer(x) | Expr::Slice(x) => collect(x, out),
            Expr::Map(k, v) => {
                collect(k, out);
                collect(v, out);
            }
            _ => {}
        }
    }
    for d in &parsed.decls {
        collect(&d.expr, &mut structs);
    }
    let mut edits = Vec::new();
    for fields in structs {
        // Runs of one-line fields on consecutive lines (no comment or blank line between).
        let mut runs: Vec<Vec<&Field>> = Vec::new();
        for f in fields {
            let one_line = f.place.line == f.end_line && f.place.own_line;
            match runs.last_mut() {
                Some(r)
                    if one_line
                        && r.last().is_some_and(|p| {
                            p.end_line + 1 == f.place.line && p.place.line == p.end_line
                        }) =>
                {
                    r.push(f)
                }
                _ => runs.push(vec![f]),
            }
        }
        for run in runs {
            if !run
                .iter()
                .skip(1)
                .any(|f| split_lines.contains(&f.place.line))
            {
                continue;
            }
            let rows: Vec<Row> = run
                .iter()
                .map(|f| row(src, parsed, f))
                .collect::<Result<_, _>>()?;
            // Every split inside the run.
            let mut cuts: Vec<usize> = (1..run.len())
                .filter(|&i| split_lines.contains(&run[i].place.line))
                .collect();
            cuts.push(run.len());
            let mut from = 0;
            for cut in cuts {
                for (r, text) in layout(&rows[from..cut]) {
                    let s = line_starts[(r.line - 1) as usize];
                    let e = line_starts
                        .get(r.line as usize)
                        .map_or(src.len(), |&e| e - 1)
                        .max(s);
                    let old = &src[s..e];
                    let old = old.strip_suffix('\r').unwrap_or(old);
                    if old != text {
                        edits.push(TextEdit {
                            start: s,
                            end: s + old.len(),
                            text,
                        });
                    }
                }
                from = cut;
            }
        }
    }
    Ok(edits)
}

/// A field's cells as gofmt separates them.
fn row(src: &str, parsed: &GoFile, f: &Field) -> Result<Row, String> {
    let mut cells = Vec::new();
    if !f.names.is_empty() {
        cells.push(f.names.join(", "));
    }
    cells.push(src[f.type_span.0..f.type_span.1].to_string());
    if let Some((s, e)) = f.tag_span {
        cells.push(src[s..e].to_string());
    }
    if let Some(c) = parsed
        .comments
        .iter()
        .find(|c| c.line == f.end_line && c.start >= f.end)
    {
        cells.push(src[c.start..c.end].to_string());
    }
    if cells.iter().any(|c| c.contains('\n')) {
        return Err(format!("line {}: a field spans lines", f.place.line));
    }
    Ok(Row {
        line: f.place.line,
        indent: f.place.indent.clone(),
        cells,
    })
}

/// The lines of rows aligned as a tabwriter with padding 1 aligns tab-terminated cells: a
/// column is every cell but each line's last, its width the widest in each block of
/// consecutive lines that have it.
fn layout(rows: &[Row]) -> Vec<(&Row, String)> {
    let n = rows.len();
    let ncols = rows.iter().map(|r| r.cells.len()).max().unwrap_or(0);
    let mut width = vec![vec![0usize; ncols]; n];
    for c in 0..ncols {
        let mut i = 0;
        while i < n {
            if rows[i].cells.len() <= c + 1 {
                i += 1;
                continue;
            }
            let start = i;
            let mut w = 0;
            while i < n && rows[i].cells.len() > c + 1 {
                w = w.max(rows[i].cells[c].chars().count());
                i += 1;
            }
            for row_w in width.iter_mut().take(i).skip(start) {
                row_w[c] = w + 1;
            }
        }
    }
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            let mut s = r.indent.clone();
            for (c, cell) in r.cells.iter().enumerate() {
                s.push_str(cell);
                if c + 1 < r.cells.len() {
                    let pad = width[i][c].saturating_sub(cell.chars().count());
                    s.push_str(&" ".repeat(pad));
                }
            }
            (r, s)
        })
        .collect()
}

#[cfg(test)]
mod tests;
