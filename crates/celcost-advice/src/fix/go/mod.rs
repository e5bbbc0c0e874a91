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
//!
//! # Modules
//!
//! The types shared by all ([`GoPackages`], [`GoTypes`], [`DeclRef`], [`FieldRef`], [`Host`],
//! [`Placement`]) are here. One type per phase: [`GoPackages`], the packages as read — [`load`]
//! (reading them), [`resolve`] (declarations, fields and a schema path followed through the
//! types) and [`place`] (where a marker goes) are its `impl`s, all reading only; [`GoTypes`], a
//! run's edits over them — [`edit`] (the edits, their alignment, and reading them back) is its
//! `impl`. [`syntax`] is the Go parser.

mod edit;
mod load;
mod place;
mod resolve;
pub mod syntax;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::suggest::Keyword;

use self::syntax::{Expr, Field, GoFile, Place};
use super::ObjectFix;

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
    /// The keyword the marker sets.
    pub keyword: Keyword,
    pub value: i64,
    /// Markers of that name already there, each (value, bytes of the value in its file).
    existing: Vec<(i64, usize, usize)>,
    /// Markers the host needs for controller-gen to apply this one, written above it when
    /// missing (`kubebuilder:validation:Type=string` on a field of another module's type).
    pub requires: Vec<String>,
}

/// The Go packages of a run as read: their declarations, resolved and searched for where a
/// marker goes (read only once loaded).
#[derive(Debug, Default)]
pub struct GoPackages {
    packages: Vec<Package>,
    by_path: HashMap<String, usize>,
}

/// A `fix --go` run: the packages, and the edits planned in them until [`GoTypes::finish`].
#[derive(Debug, Default)]
pub struct GoTypes {
    types: GoPackages,
    /// Edits by file: (file, key) → edit; a key is where the marker goes.
    edits: BTreeMap<(usize, usize), Vec<(Placement, Place)>>,
    /// Objects fixed in Go, with the placements they made.
    objects: Vec<(ObjectFix, Vec<Placement>)>,
}

impl GoTypes {
    /// Reads the packages under `dirs` ([`GoPackages::load`]); no edits yet.
    pub fn load(dirs: &[PathBuf]) -> Result<GoTypes, String> {
        Ok(GoTypes {
            types: GoPackages::load(dirs)?,
            ..GoTypes::default()
        })
    }

    /// The packages as read.
    pub fn types(&self) -> &GoPackages {
        &self.types
    }
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

#[cfg(test)]
mod tests;
