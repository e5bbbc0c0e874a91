//! Placement: where a bound's marker goes (a field, its `items:` marker, a type's
//! declaration), and the markers a host already has.

use std::collections::BTreeMap;

use celcost_core::schema::path::rule_path as schema_path;

use crate::fix::Bound;
use crate::suggest::Keyword;

use super::syntax::{Expr, Place};
use super::{
    DeclRef, FieldRef, GoPackages, Host, Placement, Shape, Via, is_string_like, strip_wrappers,
};

impl GoPackages {
    /// Markers named `name` on a host, with their values.
    pub(super) fn host_markers(&self, host: &Host, name: &str) -> Vec<(i64, usize, usize)> {
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

    pub(super) fn host_place(&self, host: &Host) -> Option<Place> {
        match host {
            Host::Decl(d) => Some(self.decl(*d).place.clone()),
            Host::Field(f) => self.field(f).map(|x| x.place.clone()),
        }
    }

    pub(super) fn host_file(&self, host: &Host) -> (usize, usize) {
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
        let k = b.keyword.marker_name();
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
                    keyword: b.keyword,
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
            keyword: b.keyword,
            value: b.value,
            existing: Vec::new(),
            requires: requires(m),
        };
        let on_field = |f: &FieldRef, m: &str| Placement {
            host: Host::Field(f.clone()),
            marker: m.to_string(),
            keyword: b.keyword,
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
    pub(super) fn host_has_marker(&self, host: &Host, name: &str) -> bool {
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
    pub(super) fn place(
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
    pub(super) fn uses_of(&self, d: DeclRef) -> Vec<String> {
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
}

/// The type marker (`Type=string`) a size bound on a node of another module's type `x` needs,
/// from the node's type in the CRD; `Err` when the bound cannot apply to it.
pub(super) fn enabling_marker(b: &Bound, x: &str) -> Result<String, String> {
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

pub(super) fn shape_name(s: &Shape) -> String {
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
