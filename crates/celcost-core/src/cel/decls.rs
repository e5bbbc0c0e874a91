//! Function and identifier declarations, read from the `.decl` files in `decls/`.
//!
//! The files restate, library by library, the signatures cel-go and Kubernetes declare (overload
//! ids as upstream names them, in upstream's declaration order), each library tagged with the
//! Kubernetes compatibility versions it is in the environment for. See `decls/README.md` for the
//! format.

use std::collections::HashMap;
use std::sync::Arc;

use super::types::Type;

pub use super::version::Version;

/// One overload of a function.
#[derive(Clone, Debug, PartialEq)]
pub struct Overload {
    pub id: Arc<str>,
    pub member: bool,
    /// Argument types, the receiver first for member overloads.
    pub args: Vec<Type>,
    pub result: Type,
    pub type_params: Vec<Arc<str>>,
}

/// A function with its overloads in declaration order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Function {
    pub name: Arc<str>,
    pub overloads: Vec<Overload>,
}

/// A library section of a `.decl` file.
#[derive(Clone, Debug)]
struct Section {
    name: String,
    since: Version,
    until: Option<Version>,
    /// Only in the environments with the mutation patch types (`patch-types`).
    patch_types: bool,
    idents: Vec<(String, Type)>,
    functions: Vec<Function>,
}

/// Everything declared for one compile environment.
#[derive(Clone, Debug, Default)]
pub struct Declarations {
    pub idents: HashMap<String, Type>,
    pub functions: HashMap<String, Function>,
    pub libraries: Vec<String>,
}

impl Declarations {
    /// The declarations of every library present at `version`, in file order; overloads of a
    /// function declared by several libraries are appended in library order, as cel-go merges
    /// function declarations.
    pub fn for_version(version: Version) -> Declarations {
        Declarations::for_environment(version, |_| None, false)
    }

    /// The declarations of a Kubernetes minor's environment for new expressions: the libraries
    /// its `base.go` puts in at its compatibility version; with `patch_types`, also the
    /// libraries of MutatingAdmissionPolicy mutations (`HasPatchTypes`).
    pub fn for_minor(minor: &super::minor::Minor, patch_types: bool) -> Declarations {
        Declarations::for_minor_at(minor, minor.compatibility, patch_types)
    }

    /// The declarations of a Kubernetes minor's environment for stored expressions: every
    /// library its `base.go` has (each introduced at or before the minor itself).
    pub fn for_minor_stored(minor: &super::minor::Minor) -> Declarations {
        Declarations::for_minor_at(minor, minor.kubernetes, false)
    }

    /// The libraries of `minor`'s `base.go` present at `version`, as it introduces them.
    fn for_minor_at(
        minor: &super::minor::Minor,
        version: Version,
        patch_types: bool,
    ) -> Declarations {
        Declarations::for_environment(
            version,
            |s| {
                if minor.has_library(s) {
                    minor.library_introduced(s)
                } else {
                    Some(Version::new(u32::MAX, 0))
                }
            },
            patch_types,
        )
    }

    /// The libraries present at `version`, with `introduced` overriding the `since` of sections.
    fn for_environment(
        version: Version,
        introduced: impl Fn(&str) -> Option<Version>,
        patch_types: bool,
    ) -> Declarations {
        let mut d = Declarations::default();
        for s in sections() {
            let since = introduced(&s.name).unwrap_or(s.since);
            if version < since
                || s.until.is_some_and(|u| version >= u)
                || (s.patch_types && !patch_types)
            {
                continue;
            }
            d.libraries.push(s.name.clone());
            for (name, t) in &s.idents {
                d.idents.insert(name.clone(), t.clone());
            }
            for f in &s.functions {
                let entry = d
                    .functions
                    .entry(f.name.to_string())
                    .or_insert_with(|| Function {
                        name: f.name.clone(),
                        overloads: vec![],
                    });
                for o in &f.overloads {
                    if !entry.overloads.iter().any(|x| x.id == o.id) {
                        entry.overloads.push(o.clone());
                    }
                }
            }
        }
        d
    }
}

/// The library sections of the `.decl` files, in the order environments apply them: a
/// section's index is its bit in [`sections_of_references`] and
/// [`super::version::consulted::note_libraries`].
pub fn section_names() -> Vec<&'static str> {
    sections().iter().map(|s| s.name.as_str()).collect()
}

/// The functions a library section declares, in its order (for telling what it brings).
pub fn section_functions(index: usize) -> Vec<&'static str> {
    sections()
        .get(index)
        .map(|s| s.functions.iter().map(|f| &*f.name).collect())
        .unwrap_or_default()
}

/// Whether `minor`'s environment at compatibility (or stored) version `at` has the library
/// section `index` ([`section_names`]), as [`Declarations::for_minor`] builds it.
pub fn section_present(
    minor: &super::minor::Minor,
    index: usize,
    at: Version,
    patch_types: bool,
) -> bool {
    let Some(s) = sections().get(index) else {
        return false;
    };
    let since = if minor.has_library(&s.name) {
        minor.library_introduced(&s.name).unwrap_or(s.since)
    } else {
        return false;
    };
    at >= since && s.until.is_none_or(|u| at < u) && (!s.patch_types || patch_types)
}

/// A name a failed compile looked up: a call (global, or a member call on a receiver) or an
/// identifier (also the namespace of a namespaced function: `format` of `format.named`).
#[derive(Clone, Copy, Debug)]
pub enum LookedUp<'a> {
    Global(&'a str),
    Member(&'a str),
    Ident(&'a str),
}

/// The sections (bits by index, [`section_names`]) that declare what `names` looked up: a
/// global or member overload of a call's name, an identifier or a namespace.
pub fn sections_of_names<'a>(names: impl IntoIterator<Item = LookedUp<'a>>) -> u64 {
    #[derive(Default)]
    struct Index {
        global: HashMap<&'static str, u64>,
        member: HashMap<&'static str, u64>,
        idents: HashMap<&'static str, u64>,
    }
    static INDEX: std::sync::OnceLock<Index> = std::sync::OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut ix = Index::default();
        for (i, s) in sections().iter().enumerate() {
            for f in &s.functions {
                for o in &f.overloads {
                    let map = if o.member {
                        &mut ix.member
                    } else {
                        &mut ix.global
                    };
                    *map.entry(&*f.name).or_insert(0) |= 1 << i;
                }
                if let Some((namespace, _)) = f.name.rsplit_once('.') {
                    *ix.idents.entry(namespace).or_insert(0) |= 1 << i;
                }
            }
            for (name, _) in &s.idents {
                *ix.idents.entry(name.as_str()).or_insert(0) |= 1 << i;
            }
        }
        ix
    });
    names
        .into_iter()
        .map(|n| {
            let (map, name) = match n {
                LookedUp::Global(f) => (&index.global, f),
                LookedUp::Member(f) => (&index.member, f),
                LookedUp::Ident(x) => (&index.idents, x),
            };
            map.get(name).copied().unwrap_or(0)
        })
        .fold(0, |a, b| a | b)
}

/// The sections (bits by index, [`section_names`]) that declare an overload id or an identifier
/// a checked expression refers to: where its names resolved, in whatever minor.
pub fn sections_of_references<'a>(
    overloads: impl IntoIterator<Item = &'a str>,
    idents: impl IntoIterator<Item = &'a str>,
) -> u64 {
    struct Index {
        overloads: HashMap<&'static str, u64>,
        idents: HashMap<&'static str, u64>,
    }
    static INDEX: std::sync::OnceLock<Index> = std::sync::OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let all = sections();
        assert!(all.len() <= 64, "more library sections than bits");
        let mut ix = Index {
            overloads: HashMap::new(),
            idents: HashMap::new(),
        };
        for (i, s) in all.iter().enumerate() {
            for f in &s.functions {
                for o in &f.overloads {
                    *ix.overloads.entry(&*o.id).or_insert(0) |= 1 << i;
                }
            }
            for (name, _) in &s.idents {
                *ix.idents.entry(name.as_str()).or_insert(0) |= 1 << i;
            }
        }
        ix
    });
    let mut bits = 0;
    for o in overloads {
        bits |= index.overloads.get(o).copied().unwrap_or(0);
    }
    for n in idents {
        bits |= index.idents.get(n).copied().unwrap_or(0);
    }
    bits
}

const SOURCES: &[(&str, &str)] = &[
    ("stdlib.decl", include_str!("decls/stdlib.decl")),
    ("kubernetes.decl", include_str!("decls/kubernetes.decl")),
    ("extensions.decl", include_str!("decls/extensions.decl")),
];

fn sections() -> &'static [Section] {
    static SECTIONS: std::sync::OnceLock<Vec<Section>> = std::sync::OnceLock::new();
    SECTIONS.get_or_init(|| {
        let mut all = Vec::new();
        for (file, text) in SOURCES {
            match parse_file(text) {
                Ok(mut s) => all.append(&mut s),
                Err(e) => panic!("built-in declarations {file} are malformed: {e}"),
            }
        }
        order_sections(all)
    })
}

/// Libraries are applied in the order of the `order` lines; sections without one keep file order
/// after the ordered ones.
fn order_sections(all: Vec<Section>) -> Vec<Section> {
    let mut ordered: Vec<Section> = Vec::new();
    let order: Vec<&str> = LIBRARY_ORDER
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let mut rest = all;
    for name in order {
        let mut i = 0;
        while i < rest.len() {
            if rest[i].name == name {
                ordered.push(rest.remove(i));
            } else {
                i += 1;
            }
        }
    }
    ordered.extend(rest);
    ordered
}

const LIBRARY_ORDER: &str = include_str!("decls/ORDER");

#[derive(Debug)]
pub struct DeclError {
    line: usize,
    msg: String,
}

impl std::fmt::Display for DeclError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.msg)
    }
}

fn parse_file(text: &str) -> Result<Vec<Section>, DeclError> {
    let mut sections: Vec<Section> = Vec::new();
    let mut named: HashMap<String, (bool, usize)> = HashMap::new(); // name -> (is_struct, params)
    let mut current_fn: Option<Function> = None;
    let err = |line: usize, msg: String| DeclError { line, msg };
    for (n, raw) in text.lines().enumerate() {
        let line_no = n + 1;
        let line = match raw.find('#') {
            Some(i) => &raw[..i],
            None => raw,
        };
        if line.trim().is_empty() {
            continue;
        }
        let indented = line.starts_with(' ') || line.starts_with('\t');
        let line = line.trim();
        if indented {
            let f = current_fn
                .as_mut()
                .ok_or_else(|| err(line_no, "overload outside of a func".into()))?;
            let o = parse_overload(line, &named).map_err(|m| err(line_no, m))?;
            f.overloads.push(o);
            continue;
        }
        if let Some(f) = current_fn.take() {
            sections.last_mut().unwrap().functions.push(f);
        }
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        let rest = rest.trim();
        match word {
            "library" => {
                let mut parts = rest.split_whitespace();
                let name = parts
                    .next()
                    .ok_or_else(|| err(line_no, "library needs a name".into()))?;
                let mut since = Version::new(1, 0);
                let mut until = None;
                let mut patch_types = false;
                while let Some(k) = parts.next() {
                    if k == "patch-types" {
                        patch_types = true;
                        continue;
                    }
                    let v = parts
                        .next()
                        .and_then(Version::parse)
                        .ok_or_else(|| err(line_no, format!("bad version after {k}")))?;
                    match k {
                        "since" => since = v,
                        "until" => until = Some(v),
                        _ => return Err(err(line_no, format!("unknown library attribute {k}"))),
                    }
                }
                sections.push(Section {
                    name: name.to_string(),
                    since,
                    until,
                    patch_types,
                    idents: vec![],
                    functions: vec![],
                });
            }
            "opaque" | "struct" => {
                let mut parts = rest.split_whitespace();
                let name = parts
                    .next()
                    .ok_or_else(|| err(line_no, "type needs a name".into()))?;
                let params = parts.next().map(|p| p.parse().unwrap_or(0)).unwrap_or(0);
                named.insert(name.to_string(), (word == "struct", params));
            }
            "ident" => {
                let (name, ty) = rest
                    .split_once(':')
                    .ok_or_else(|| err(line_no, "ident needs `name : type`".into()))?;
                let t = parse_type(ty.trim(), &named).map_err(|m| err(line_no, m))?;
                sections
                    .last_mut()
                    .ok_or_else(|| err(line_no, "ident outside of a library".into()))?
                    .idents
                    .push((name.trim().to_string(), t));
            }
            "func" => {
                if sections.is_empty() {
                    return Err(err(line_no, "func outside of a library".into()));
                }
                current_fn = Some(Function {
                    name: rest.into(),
                    overloads: vec![],
                });
            }
            "macro" => {}
            _ => return Err(err(line_no, format!("unknown declaration `{word}`"))),
        }
    }
    if let Some(f) = current_fn.take() {
        sections.last_mut().unwrap().functions.push(f);
    }
    Ok(sections)
}

fn parse_overload(line: &str, named: &HashMap<String, (bool, usize)>) -> Result<Overload, String> {
    let (id, sig) = line
        .split_once(' ')
        .ok_or("overload needs `id signature`")?;
    let sig = sig.trim();
    let (lhs, result) = sig.rsplit_once("->").ok_or("overload needs `-> result`")?;
    let lhs = lhs.trim();
    let open = find_args_open(lhs).ok_or("overload needs `(args)`")?;
    let (member, receiver) = if open > 0 {
        let recv = lhs[..open].trim();
        let recv = recv
            .strip_suffix('.')
            .ok_or("member overload needs `receiver.(args)`")?;
        (true, Some(parse_type(recv.trim(), named)?))
    } else {
        (false, None)
    };
    let inner = lhs[open..]
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or("unbalanced argument list")?;
    let mut args: Vec<Type> = receiver.into_iter().collect();
    for a in split_top(inner) {
        if !a.trim().is_empty() {
            args.push(parse_type(a.trim(), named)?);
        }
    }
    let result = parse_type(result.trim(), named)?;
    let mut type_params = Vec::new();
    for a in &args {
        a.collect_type_params(&mut type_params);
    }
    result.collect_type_params(&mut type_params);
    Ok(Overload {
        id: id.into(),
        member,
        args,
        result,
        type_params,
    })
}

/// Index of the `(` that opens the argument list: the last top-level `(` of `lhs`, which ends
/// with `)`.
fn find_args_open(lhs: &str) -> Option<usize> {
    if !lhs.ends_with(')') {
        return None;
    }
    let mut depth = 0i32;
    for (i, c) in lhs.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// Parses a type expression of the declaration format.
pub(crate) fn parse_type(s: &str, named: &HashMap<String, (bool, usize)>) -> Result<Type, String> {
    let s = s.trim();
    let (name, params) = match s.find('(') {
        Some(i) => {
            let inner = s[i + 1..]
                .strip_suffix(')')
                .ok_or_else(|| format!("bad type `{s}`"))?;
            let ps = split_top(inner)
                .into_iter()
                .map(|p| parse_type(p, named))
                .collect::<Result<Vec<_>, _>>()?;
            (s[..i].trim(), ps)
        }
        None => (s, vec![]),
    };
    let arity = |n: usize| -> Result<(), String> {
        if params.len() == n {
            Ok(())
        } else {
            Err(format!("`{name}` takes {n} parameter(s)"))
        }
    };
    let t = match name {
        "int" => Type::Int,
        "uint" => Type::Uint,
        "double" => Type::Double,
        "bool" => Type::Bool,
        "string" => Type::String,
        "bytes" => Type::Bytes,
        "null_type" => Type::Null,
        "dyn" => Type::Dyn,
        "any" => Type::Any,
        "duration" => Type::Duration,
        "timestamp" => Type::Timestamp,
        "error" => Type::Error,
        "type" => {
            return match params.len() {
                0 => Ok(Type::TypeOf(None)),
                1 => Ok(Type::type_of(params.into_iter().next().unwrap())),
                _ => Err("type takes at most one parameter".into()),
            };
        }
        "list" => {
            arity(1)?;
            return Ok(Type::list(params.into_iter().next().unwrap()));
        }
        "map" => {
            arity(2)?;
            let mut it = params.into_iter();
            return Ok(Type::map(it.next().unwrap(), it.next().unwrap()));
        }
        "optional_type" => {
            arity(1)?;
            return Ok(Type::optional(params.into_iter().next().unwrap()));
        }
        n if n.len() == 1 && n.chars().all(|c| c.is_ascii_uppercase()) => Type::param(n),
        n => match named.get(n) {
            Some((true, _)) => Type::object(n),
            Some((false, k)) => {
                arity(*k)?;
                return Ok(Type::opaque(n, params));
            }
            None => {
                return Err(format!(
                    "unknown type `{n}` (declare it with opaque/struct)"
                ));
            }
        },
    };
    if !params.is_empty() {
        return Err(format!("`{name}` takes no parameters"));
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_format() {
        let text = "library a since 1.28 until 1.30\nopaque net.IP\nstruct kubernetes.URL\nident int : type(int)\nfunc _+_\n  add_list (list(A), list(A)) -> list(A)\n  x net.IP.(string, map(K, V)) -> kubernetes.URL\n";
        let s = parse_file(text).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].since, Version::new(1, 28));
        assert_eq!(s[0].until, Some(Version::new(1, 30)));
        let f = &s[0].functions[0];
        assert_eq!(f.overloads[0].type_params.len(), 1);
        assert!(f.overloads[1].member);
        assert_eq!(f.overloads[1].args[0], Type::opaque("net.IP", vec![]));
        assert_eq!(f.overloads[1].result, Type::object("kubernetes.URL"));
        assert_eq!(f.overloads[1].type_params.len(), 2);
    }

    #[test]
    fn patch_type_libraries_only_where_asked() {
        let text = "library a\nfunc f\n  f_int (int) -> int\nlibrary b since 1.1 patch-types\nfunc g\n  g_int (int) -> int\n";
        let s = parse_file(text).unwrap();
        assert!(!s[0].patch_types);
        assert!(s[1].patch_types);
        assert_eq!(s[1].since, Version::new(1, 1));
        let base = Declarations::for_version(Version::new(1, 35));
        let patch = Declarations::for_minor(crate::cel::minor::NEWEST_MINOR, true);
        assert!(!base.functions.contains_key("jsonpatch.escapeKey"));
        assert_eq!(
            &*patch.functions["jsonpatch.escapeKey"].overloads[0].id,
            "string_jsonpatch_escapeKey_string"
        );
        assert_eq!(
            patch.libraries.last().map(String::as_str),
            Some("kubernetes.jsonpatch")
        );
    }

    #[test]
    fn builtin_declarations_load() {
        let d = Declarations::for_version(Version::new(1, 35));
        assert!(d.functions.contains_key("_+_"));
        assert!(d.idents.contains_key("int"));
    }
}
