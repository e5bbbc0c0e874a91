//! Schema → CEL type with size bounds (`DeclType`), the CRD size estimator and the type
//! provider that resolves object fields for the checker.

use crate::cel::version::consulted;
use std::collections::HashMap;
use std::sync::Arc;

use indexmap::IndexMap;

use super::Schema;
use super::path::{Node, Step};
use crate::cel::checker::TypeProvider;
use crate::cel::cost::{AstNode, Size};
use crate::cel::decls::Version;
use crate::cel::k8s_cost::SizeSource;
use crate::cel::minor::Minor;
use crate::cel::types::Type;

/// `DefaultMaxRequestSizeBytes` (k8s.io/apiserver pkg/cel/limits.go).
pub const MAX_REQUEST_SIZE_BYTES: i64 = 3 * 1024 * 1024;
pub const MAX_DURATION_SIZE_JSON: i64 = 32;
pub const MAX_DATETIME_SIZE_JSON: i64 = 32;
pub const JSON_DATE_SIZE: i64 = 12;
pub const MIN_DURATION_SIZE_JSON: i64 = 3;
pub const MIN_DATETIME_SIZE_JSON: i64 = 21;
pub const MIN_STRING_SIZE: i64 = 2;
pub const MIN_BOOL_SIZE: i64 = 4;
pub const MIN_NUMBER_SIZE: i64 = 1;

#[derive(Clone, Debug)]
pub enum DeclKind {
    Scalar,
    List(Arc<DeclType>),
    /// Key type (the shared `string` type, MaxElements 0) and value type.
    Map(Arc<DeclType>, Arc<DeclType>),
    /// Fields keyed by their CEL-escaped name.
    Object(IndexMap<String, Arc<DeclType>>),
}

/// A CEL type with the bounds the estimator reads.
#[derive(Clone, Debug)]
pub struct DeclType {
    pub kind: DeclKind,
    pub cel: Type,
    pub max_elements: i64,
    pub min_serialized_size: i64,
    /// Whether a schema bound (maxLength, maxItems, maxProperties, enum, format) fixes
    /// `max_elements`, rather than the request-size estimate.
    pub bounded: bool,
    /// The rules of a minor this node's conversion depends on, noted as consulted where a cost
    /// reads its size or a rule is compiled against it (bits of
    /// [`crate::cel::version::consulted`]; 0 for most nodes).
    pub minor_rules: u64,
}

impl DeclType {
    fn scalar(cel: Type, min: i64, max: i64, bounded: bool) -> Arc<DeclType> {
        Arc::new(DeclType {
            kind: DeclKind::Scalar,
            cel,
            max_elements: max,
            min_serialized_size: min,
            bounded,
            minor_rules: 0,
        })
    }

    /// A list or map (`NewListType`, `NewMapType`) of at most `max_items` elements (`maxItems`,
    /// `maxProperties`, zero if negative) or, with none, of `estimate` elements (as many of the
    /// smallest as fit in a request).
    fn collection(
        cel: Type,
        kind: DeclKind,
        max_items: Option<i64>,
        estimate: i64,
    ) -> Arc<DeclType> {
        let (max_elements, bounded) = match max_items {
            Some(m) => (zero_if_negative(m), true),
            None => (estimate, false),
        };
        Arc::new(DeclType {
            kind,
            cel,
            max_elements,
            min_serialized_size: 2,
            bounded,
            minor_rules: 0,
        })
    }

    pub fn elem(&self) -> Option<&Arc<DeclType>> {
        match &self.kind {
            DeclKind::List(e) | DeclKind::Map(_, e) => Some(e),
            _ => None,
        }
    }

    pub fn key(&self) -> Option<&Arc<DeclType>> {
        match &self.kind {
            DeclKind::Map(k, _) => Some(k),
            _ => None,
        }
    }

    pub fn field(&self, name: &str) -> Option<&Arc<DeclType>> {
        match &self.kind {
            DeclKind::Object(f) => f.get(name),
            _ => None,
        }
    }

    /// Whether this type's size comes from the request-size estimate (no schema bound) and the
    /// size matters for cost (strings, bytes, lists, maps, int-or-string).
    pub fn is_unbounded_sized(&self) -> bool {
        !self.bounded && !matches!(self.kind, DeclKind::Object(_)) && self.max_elements > 0
    }
}

/// cel-go reserved words that Kubernetes escapes as `__word__` in field names (and that are no
/// valid CEL identifier).
pub(crate) const CEL_RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// k8s.io/apiserver pkg/cel/escaping.go `Escape`.
pub fn escape(ident: &str) -> Option<String> {
    let first = ident.as_bytes().first()?;
    if first.is_ascii_digit() {
        return None;
    }
    if CEL_RESERVED.contains(&ident) {
        return Some(format!("__{ident}__"));
    }
    let plain = ident
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !ident.contains("__");
    if plain {
        return Some(ident.to_string());
    }
    let mut out = String::with_capacity(ident.len());
    let chars: Vec<char> = ident.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '_' && i + 1 < chars.len() && chars[i + 1] == '_' {
            out.push_str("__underscores__");
            i += 2;
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
        i += 1;
    }
    Some(out)
}

/// Reverses [`escape`] for display.
pub fn unescape(name: &str) -> String {
    if let Some(inner) = name.strip_prefix("__").and_then(|s| s.strip_suffix("__"))
        && CEL_RESERVED.contains(&inner)
    {
        return inner.to_string();
    }
    // Every escape is spelled with `__`; a name without it (nor a NUL, which the last step
    // turns into `__`) is its own unescaped form: most names, on a path asked for per AST node.
    if !name.as_bytes().windows(2).any(|w| w == b"__") && !name.contains('\u{0}') {
        return name.to_string();
    }
    name.replace("__underscores__", "\u{0}")
        .replace("__dot__", ".")
        .replace("__dash__", "-")
        .replace("__slash__", "/")
        .replace('\u{0}', "__")
}

/// A size-estimator path below its root (field names unescaped, `[*]` for items and map
/// values, `[key]` for map keys), for reports.
pub fn display_path(path: &[std::rc::Rc<str>]) -> String {
    let mut s = String::new();
    for p in path {
        match &**p {
            "@items" | "@values" => s.push_str("[*]"),
            "@keys" => s.push_str("[key]"),
            f => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(&unescape(f));
            }
        }
    }
    s
}

/// Conversions already made, for a caller that converts the same schema again and again while
/// changing only bounds, and needs only the sizes of the types (the suggested bounds' search,
/// which owns one for as long as it searches one tree): by node ([`NodeId`]), root flag and the
/// bounds below the node (a signature of the changes [`ConversionMemo::note_bound_change`] was
/// told of: zero for a node nothing below changed, the same again once a change is undone).
/// Every change of a bound must be told; the tree must not otherwise change. Conversions made
/// with it name no object types: a conversion costs in proportion to the nodes whose bounds
/// below changed, not to the schema.
#[derive(Default)]
pub struct ConversionMemo {
    /// Node identities: by parent and place ([`ConversionMemo::child_key`]).
    ids: HashMap<u64, u32, NumberHash>,
    signatures: HashMap<u32, u64, NumberHash>,
    done: HashMap<ConversionKey, Option<Arc<DeclType>>, NumberHash>,
}

/// A node of the tree a [`ConversionMemo`] is for: the root, or a child by its parent and place
/// (a property's index, the items, the values, a resource root's `ObjectMeta` override's
/// property); given when first asked for, never reused while the memo lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeId(u32);

/// Where a child is under its parent, for its [`NodeId`].
#[derive(Clone, Copy)]
enum Place {
    Items,
    Values,
    Property(usize),
    Override(usize),
}

/// A remembered conversion: the node, its root flag, whether the structural adaptor converts
/// it, and the signature of the bounds below it.
type ConversionKey = (u32, bool, bool, u64);

/// A memo and the node being converted with it.
type Memo<'m> = Option<(&'m mut ConversionMemo, NodeId)>;

impl ConversionMemo {
    /// The root of the tree.
    pub const ROOT: NodeId = NodeId(0);

    fn child_key(parent: NodeId, place: Place) -> u64 {
        let (tag, i) = match place {
            Place::Items => (0, 0),
            Place::Values => (1, 0),
            Place::Property(i) => (2, i),
            Place::Override(i) => (3, i),
        };
        (u64::from(parent.0) << 32) ^ ((i as u64) << 2) ^ tag
    }

    fn at(&mut self, parent: NodeId, place: Place) -> NodeId {
        let next = u32::try_from(self.ids.len() + 1).expect("fewer than 2^32 nodes");
        NodeId(
            *self
                .ids
                .entry(Self::child_key(parent, place))
                .or_insert(next),
        )
    }

    /// The child of node `parent` (whose schema is `s`) one `step` down, if `s` has it.
    pub fn child(&mut self, parent: NodeId, s: &Schema, step: &Step) -> Option<NodeId> {
        let place = match step {
            Step::Prop(n) => Place::Property(s.properties.get_index_of(n)?),
            Step::Items => {
                s.items.as_ref()?;
                Place::Items
            }
            Step::Values => {
                s.additional_properties_schema()?;
                Place::Values
            }
        };
        Some(self.at(parent, place))
    }

    /// The nodes from `root` (the tree's root) down `path`, as far as the schema has them.
    pub fn path(&mut self, root: &Schema, path: &[Step]) -> Vec<NodeId> {
        let mut out = Vec::with_capacity(path.len() + 1);
        let (mut s, mut at) = (root, Self::ROOT);
        out.push(at);
        for step in path {
            match (Node::child(s, step), self.child(at, s, step)) {
                (Some(c), Some(id)) => {
                    (s, at) = (c, id);
                    out.push(at);
                }
                _ => break,
            }
        }
        out
    }

    /// Tells the memo that bound `site` (any number naming it) changed from `from` to `to` on
    /// the node whose ancestors (from the root) and itself are `path`.
    pub fn note_bound_change(
        &mut self,
        path: &[NodeId],
        site: usize,
        from: Option<i64>,
        to: Option<i64>,
    ) {
        if from == to {
            return;
        }
        crate::budget::charge(path.len() as u64);
        let mark = |v: Option<i64>| {
            use std::hash::Hasher;
            let mut h = std::collections::hash_map::DefaultHasher::new();
            h.write_usize(site);
            h.write_i64(v.unwrap_or(i64::MIN));
            h.write_u8(u8::from(v.is_some()));
            h.finish()
        };
        let delta = mark(from) ^ mark(to);
        for &at in path {
            *self.signatures.entry(at.0).or_insert(0) ^= delta;
        }
    }

    /// [`schema_decl_type`] of node `at` (whose schema is `s`), remembered.
    pub fn schema_decl_type(
        &mut self,
        s: &Schema,
        at: NodeId,
        is_resource_root: bool,
        minor: &'static Minor,
    ) -> Option<Arc<DeclType>> {
        decl_type(
            s,
            is_resource_root,
            minor,
            "",
            Adaptor::Structural,
            Some((self, at)),
        )
    }
}

/// The memo and node for a child of the node being converted.
fn below<'a>(memo: &'a mut Memo<'_>, place: Place) -> Memo<'a> {
    let (m, at) = memo.as_mut()?;
    let id = m.at(*at, place);
    Some((&mut **m, id))
}

/// A hash of a few numbers (node ids, flags, signatures) by multiplying, as rustc's `FxHasher`
/// does: a change of a bound notes it to each ancestor of its node, and SipHash made that most
/// of the suggested bounds' search.
#[derive(Clone, Copy, Default)]
struct NumberHash;

#[derive(Default)]
struct NumberHasher(u64);

impl std::hash::BuildHasher for NumberHash {
    type Hasher = NumberHasher;
    fn build_hasher(&self) -> NumberHasher {
        NumberHasher(0)
    }
}

impl std::hash::Hasher for NumberHasher {
    fn finish(&self) -> u64 {
        // The low bits pick the bucket: bring the product's well-mixed high bits there.
        self.0.rotate_left(26)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0xf135_7aea_2e62_a9c5);
    }
}

/// Conversions a [`ConversionMemo`] keeps at most.
const MEMO_CAPACITY: usize = 65_536;

/// Which of a minor's conversion rules can change a schema's DeclType (see [`convert`]): the
/// minors that agree on the rules a schema reads convert it alike. Over-approximated: every node
/// below the root is looked at, whether or not CEL sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConversionReads {
    /// An `x-kubernetes-int-or-string` node with `maxLength`
    /// ([`Minor::int_or_string_max_length`]).
    pub int_or_string_max_length: bool,
    /// A resource root (the root, or an `x-kubernetes-embedded-resource` node) with
    /// `additionalProperties` ([`Minor::type_meta_keeps_additional_properties`]).
    pub resource_additional_properties: bool,
    /// A string node with `enum` and no `maxLength` ([`Minor::enum_string_max_length`]).
    pub enum_string_without_max_length: bool,
}

/// What of a minor converting a schema depends on ([`ConversionReads::flavor`]).
pub type ConversionFlavor = [bool; 4];

impl ConversionReads {
    /// What converting the resource root `root` reads of a minor.
    pub fn of(root: &Schema) -> Self {
        let mut reads = ConversionReads::default();
        let mut stack = vec![(root, true)];
        while let Some((s, resource_root)) = stack.pop() {
            reads.int_or_string_max_length |= s.x_int_or_string && s.max_length.is_some();
            reads.enum_string_without_max_length |=
                s.max_length.is_none() && !s.enum_values.is_empty() && s.type_ == "string";
            let ap = s.additional_properties_schema();
            reads.resource_additional_properties |= resource_root && ap.is_some();
            stack.extend(ap.map(|a| (a, a.x_embedded_resource)));
            stack.extend(s.items.as_deref().map(|i| (i, i.x_embedded_resource)));
            stack.extend(s.properties.values().map(|p| (p, p.x_embedded_resource)));
        }
        reads
    }

    /// What of `minor` converting a schema with these reads ([`schema_decl_type`]) and resolving
    /// its object types ([`DeclTypeProvider::new`]) depends on: minors with the same flavor type
    /// the schema alike.
    pub fn flavor(self, minor: &Minor) -> ConversionFlavor {
        [
            self.int_or_string_max_length && minor.int_or_string_max_length,
            self.resource_additional_properties && minor.type_meta_keeps_additional_properties,
            keywords_as_field_names(minor.compatibility),
            self.enum_string_without_max_length && minor.enum_string_max_length,
        ]
    }

    pub fn union(self, other: Self) -> Self {
        ConversionReads {
            int_or_string_max_length: self.int_or_string_max_length
                || other.int_or_string_max_length,
            resource_additional_properties: self.resource_additional_properties
                || other.resource_additional_properties,
            enum_string_without_max_length: self.enum_string_without_max_length
                || other.enum_string_without_max_length,
        }
    }
}

/// Which schema adaptor converts: they differ in what `WithTypeAndObjectMeta` gives a resource
/// root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Adaptor {
    /// apiextensions `schema/cel/model` (a CRD's structural schema): from 1.37 bounds
    /// `metadata.name` and `generateName` ([`Minor::object_meta_name_max_length`]).
    Structural,
    /// apiserver `pkg/cel/openapi` (`common.WithTypeAndObjectMeta`): the OpenAPI schemas a
    /// policy is type-checked against, in every minor plain strings.
    OpenApi,
}

/// Converts a CRD schema to its DeclType (`SchemaDeclType`), or `None` when the node is not
/// visible to CEL. `name` names object types (`name.field` below).
pub fn schema_decl_type(
    s: &Schema,
    is_resource_root: bool,
    minor: &'static Minor,
    name: &str,
) -> Option<Arc<DeclType>> {
    decl_type(s, is_resource_root, minor, name, Adaptor::Structural, None)
}

/// Converts the OpenAPI schema of a resource a policy matches (`openapi.SchemaDeclType`), as
/// [`schema_decl_type`] does but for the resource roots' `metadata` (see [`Adaptor`]).
pub fn openapi_schema_decl_type(
    s: &Schema,
    is_resource_root: bool,
    minor: &'static Minor,
    name: &str,
) -> Option<Arc<DeclType>> {
    decl_type(s, is_resource_root, minor, name, Adaptor::OpenApi, None)
}

fn decl_type(
    s: &Schema,
    is_resource_root: bool,
    minor: &'static Minor,
    name: &str,
    adaptor: Adaptor,
    memo: Memo<'_>,
) -> Option<Arc<DeclType>> {
    let Some((m, at)) = memo else {
        return convert(s, is_resource_root, minor, name, adaptor, None);
    };
    let key = (
        at.0,
        is_resource_root,
        adaptor == Adaptor::Structural,
        m.signatures.get(&at.0).copied().unwrap_or(0),
    );
    if let Some(d) = m.done.get(&key) {
        return d.clone();
    }
    let d = convert(s, is_resource_root, minor, "", adaptor, Some((&mut *m, at)));
    // Bounded: forgotten when full (each probe adds the nodes it changed).
    if m.done.len() >= MEMO_CAPACITY {
        m.done.clear();
    }
    m.done.insert(key, d.clone());
    d
}

/// `name.part`, the name of a child's object type; nothing when converting with a memo.
fn child_name(memo: &Memo<'_>, name: &str, part: &str) -> String {
    if memo.is_some() {
        String::new()
    } else {
        format!("{name}.{part}")
    }
}

fn convert(
    s: &Schema,
    is_resource_root: bool,
    minor: &'static Minor,
    name: &str,
    adaptor: Adaptor,
    mut memo: Memo<'_>,
) -> Option<Arc<DeclType>> {
    crate::budget::charge(1);
    let unbounded_string = MAX_REQUEST_SIZE_BYTES - 2;
    if s.x_int_or_string {
        let (max, bounded) = match s.max_length {
            Some(m) if minor.int_or_string_max_length => (max_length_bytes(m), true),
            _ => (unbounded_string, false),
        };
        let t = DeclType::scalar(Type::Dyn, 1, max, bounded);
        return Some(if s.max_length.is_some() {
            with_minor_rules(&t, consulted::INT_OR_STRING_MAX_LENGTH)
        } else {
            t
        });
    }
    // A list's items, a map's values or a property: converted below its place, its object
    // types named `name.part`.
    let child_type = |memo: &mut Memo<'_>, child: &Schema, part: &str, place: Place| {
        let name = child_name(memo, name, part);
        let at = below(memo, place);
        decl_type(child, child.x_embedded_resource, minor, &name, adaptor, at)
    };
    let meta_overrides = if is_resource_root {
        object_meta_overrides(
            s,
            adaptor == Adaptor::Structural && minor.object_meta_name_max_length,
        )
    } else {
        None
    };
    match s.type_.as_str() {
        "array" => {
            let items = s.items.as_ref()?;
            let elem = child_type(&mut memo, items, "@idx", Place::Items)?;
            // `estimateMaxArrayItemsFromMinSize`: an item and a comma each.
            let estimate = unbounded_string / (elem.min_serialized_size + 1);
            let cel = Type::list(elem.cel.clone());
            let kind = DeclKind::List(elem);
            Some(DeclType::collection(cel, kind, s.max_items, estimate))
        }
        "object" => {
            // 1.30's `WithTypeAndObjectMeta` copy drops `additionalProperties`.
            let additional_dropped =
                meta_overrides.is_some() && s.additional_properties_schema().is_some();
            let ap = s.additional_properties_schema().filter(|_| {
                meta_overrides.is_none() || minor.type_meta_keeps_additional_properties
            });
            if let Some(ap) = ap {
                let val = child_type(&mut memo, ap, "@elem", Place::Values)?;
                // `estimateMaxAdditionalPropertiesFromMinSize`: a value, a two-byte key in
                // quotes, a colon and a comma each.
                let estimate = unbounded_string / (val.min_serialized_size + 6);
                let key = DeclType::scalar(Type::String, MIN_STRING_SIZE, 0, true);
                let cel = Type::map(Type::String, val.cel.clone());
                let kind = DeclKind::Map(key, val);
                let t = DeclType::collection(cel, kind, s.max_properties, estimate);
                return Some(if additional_dropped {
                    with_minor_rules(&t, consulted::TYPE_META_ADDITIONAL_PROPERTIES)
                } else {
                    t
                });
            }
            let mut fields = IndexMap::new();
            let mut min_size = 2i64;
            let overridden = |p: &str| {
                meta_overrides.is_some() && matches!(p, "kind" | "apiVersion" | "metadata")
            };
            let props = s
                .properties
                .iter()
                .enumerate()
                .filter(|(_, (p, _))| !overridden(p))
                .map(|(i, p)| (Place::Property(i), p))
                .chain(
                    meta_overrides
                        .iter()
                        .flat_map(|m| m.properties.iter().enumerate())
                        .map(|(i, p)| (Place::Override(i), p)),
                );
            for (place, (pname, prop)) in props {
                let escaped = escape(pname);
                let part = escaped.as_deref().unwrap_or(pname);
                if let Some(mut ft) = child_type(&mut memo, prop, part, place) {
                    if matches!(place, Place::Override(_)) && pname == "metadata" {
                        ft = with_meta_name_rules(&ft);
                    }
                    let required = s.required.iter().any(|r| r == pname);
                    if required && prop.default.is_none() {
                        min_size += pname.len() as i64 + ft.min_serialized_size + 4;
                    }
                    if let Some(e) = escaped {
                        fields.insert(e, ft);
                    }
                }
            }
            Some(Arc::new(DeclType {
                kind: DeclKind::Object(fields),
                cel: Type::object(name),
                max_elements: 0,
                min_serialized_size: min_size,
                bounded: true,
                minor_rules: if additional_dropped {
                    consulted::TYPE_META_ADDITIONAL_PROPERTIES
                } else {
                    0
                },
            }))
        }
        "string" => {
            let (cel, min, max, bounded) = match s.format.as_str() {
                "byte" => {
                    let (max, b) = match s.max_length {
                        Some(m) => (zero_if_negative(m), true),
                        None => (unbounded_string, false),
                    };
                    (Type::Bytes, MIN_STRING_SIZE, max, b)
                }
                "duration" => (
                    Type::Duration,
                    MIN_DURATION_SIZE_JSON,
                    MAX_DURATION_SIZE_JSON,
                    true,
                ),
                "date" => (Type::Timestamp, JSON_DATE_SIZE, JSON_DATE_SIZE, true),
                "date-time" => (
                    Type::Timestamp,
                    MIN_DATETIME_SIZE_JSON,
                    MAX_DATETIME_SIZE_JSON,
                    true,
                ),
                _ if s.max_length.is_none() && !s.enum_values.is_empty() => {
                    let t = if minor.enum_string_max_length {
                        let longest = s
                            .enum_values
                            .iter()
                            .filter_map(|v| v.as_str())
                            .map(|v| v.len() as i64)
                            .max()
                            .unwrap_or(0);
                        DeclType::scalar(Type::String, MIN_STRING_SIZE, longest, true)
                    } else {
                        DeclType::scalar(Type::String, MIN_STRING_SIZE, unbounded_string, false)
                    };
                    return Some(with_minor_rules(&t, consulted::ENUM_STRING_SIZES));
                }
                _ => {
                    let (max, b) = match s.max_length {
                        Some(m) => (max_length_bytes(m), true),
                        None => (unbounded_string, false),
                    };
                    (Type::String, MIN_STRING_SIZE, max, b)
                }
            };
            Some(DeclType::scalar(cel, min, max, bounded))
        }
        "boolean" => Some(DeclType::scalar(Type::Bool, MIN_BOOL_SIZE, 0, true)),
        "number" => Some(DeclType::scalar(Type::Double, MIN_NUMBER_SIZE, 0, true)),
        "integer" => Some(DeclType::scalar(Type::Int, MIN_NUMBER_SIZE, 0, true)),
        _ => None,
    }
}

/// `t` noting the rules `bits` where it is read.
fn with_minor_rules(t: &Arc<DeclType>, bits: u64) -> Arc<DeclType> {
    let mut t = DeclType::clone(t);
    t.minor_rules |= bits;
    Arc::new(t)
}

/// The `metadata` that `WithTypeAndObjectMeta` gives a resource root, its `name` and
/// `generateName` noting [`consulted::OBJECT_META_NAMES`] where a cost reads their size.
fn with_meta_name_rules(meta: &Arc<DeclType>) -> Arc<DeclType> {
    let DeclKind::Object(fields) = &meta.kind else {
        return meta.clone();
    };
    let mut fields = fields.clone();
    for (f, t) in fields.iter_mut() {
        if f == "name" || f == "generateName" {
            *t = with_minor_rules(t, consulted::OBJECT_META_NAMES);
        }
    }
    Arc::new(DeclType {
        kind: DeclKind::Object(fields),
        ..DeclType::clone(meta)
    })
}

/// `zeroIfNegative(maxLength) * 4`: four bytes per code point, multiplied as Go's `int64`
/// does, wrapping (a `maxLength` of 2^62 gives 0, of 2^62−1 gives −4, a size of 2^64−4).
fn max_length_bytes(max_length: i64) -> i64 {
    zero_if_negative(max_length).wrapping_mul(4)
}

fn zero_if_negative(v: i64) -> i64 {
    v.max(0)
}

/// Compatibility 1.31 finds a field named by a CEL reserved word as its escaped name.
pub(crate) fn keywords_as_field_names(compatibility: Version) -> bool {
    compatibility >= Version::new(1, 31)
}

/// apiextensions `model.WithTypeAndObjectMeta` (and apiserver `common.WithTypeAndObjectMeta`):
/// `kind`, `apiVersion` and a `metadata` with only `name` and `generateName` at resource roots,
/// unless the schema declares them all (then the schema is kept as is, its own `maxLength`s
/// too). With `bounded_names` (1.37's structural adaptor, `cappedLengthStringType`): `name` has
/// `maxLength` 253 (`DNS1123SubdomainMaxLength`) and `generateName` 252 (a generated suffix is
/// at least one byte), or the schema's own `metadata` `maxLength` where it is smaller. Returns
/// the replacement properties (in a schema of their own), or `None` when the schema is kept.
fn object_meta_overrides(s: &Schema, bounded_names: bool) -> Option<Schema> {
    let is = |p: Option<&Schema>, t: &str| p.is_some_and(|p| p.type_ == t);
    let meta = s.properties.get("metadata");
    if !s.properties.is_empty()
        && is(s.properties.get("kind"), "string")
        && is(s.properties.get("apiVersion"), "string")
        && is(meta, "object")
        && meta.is_some_and(|m| {
            !m.properties.is_empty()
                && is(m.properties.get("name"), "string")
                && is(m.properties.get("generateName"), "string")
        })
    {
        return None;
    }
    let mut r = Schema::default();
    let string = Schema {
        type_: "string".into(),
        ..Default::default()
    };
    r.properties.insert("kind".into(), string.clone());
    r.properties.insert("apiVersion".into(), string.clone());
    let mut name = string.clone();
    let mut generate_name = string;
    if bounded_names {
        let declared = |f: &str| {
            meta.and_then(|m| m.properties.get(f))
                .and_then(|p| p.max_length)
        };
        name.max_length = Some(declared("name").map_or(253, |d| d.min(253)));
        generate_name.max_length = Some(declared("generateName").map_or(252, |d| d.min(252)));
    }
    let mut metadata = Schema {
        type_: "object".into(),
        ..Default::default()
    };
    metadata.properties.insert("name".into(), name);
    metadata
        .properties
        .insert("generateName".into(), generate_name);
    r.properties.insert("metadata".into(), metadata);
    Some(r)
}

/// The CRD size estimator (apiextensions `compilation.go` `sizeEstimator`): walks the node's
/// path from the rule's DeclType, skipping the first element whatever it is.
pub struct RuleSizes {
    pub root: Arc<DeclType>,
}

impl RuleSizes {
    pub fn resolve(&self, path: &[std::rc::Rc<str>]) -> Option<&Arc<DeclType>> {
        if path.is_empty() {
            return None;
        }
        let mut cur = &self.root;
        for name in &path[1..] {
            cur = match &**name {
                "@items" | "@values" => cur.elem()?,
                "@keys" => cur.key()?,
                other => cur.field(other)?,
            };
        }
        Some(cur)
    }
}

impl SizeSource for RuleSizes {
    fn estimate_size(&self, node: &AstNode<'_>) -> Option<Size> {
        let path = node.path_elems();
        self.resolve(&path).map(|t| {
            if t.minor_rules != 0 {
                consulted::note(t.minor_rules);
            }
            Size::new(0, t.max_elements as u64)
        })
    }
}

/// Resolves the object types of a DeclType tree by name.
pub struct DeclTypeProvider {
    objects: HashMap<String, Arc<DeclType>>,
    /// Compatibility ≥ 1.31: `self.namespace` finds the field escaped as `__namespace__`.
    keywords_as_field_names: bool,
}

impl DeclTypeProvider {
    pub fn new(roots: &[&Arc<DeclType>], minor: &'static Minor) -> Self {
        let version = minor.compatibility;
        let mut objects = HashMap::new();
        fn walk(t: &Arc<DeclType>, out: &mut HashMap<String, Arc<DeclType>>) {
            match &t.kind {
                DeclKind::Object(fields) => {
                    out.insert(t.cel.type_name().to_string(), t.clone());
                    for f in fields.values() {
                        walk(f, out);
                    }
                }
                DeclKind::List(e) => walk(e, out),
                DeclKind::Map(_, v) => walk(v, out),
                DeclKind::Scalar => {}
            }
        }
        for r in roots {
            walk(r, &mut objects);
        }
        DeclTypeProvider {
            objects,
            keywords_as_field_names: keywords_as_field_names(version),
        }
    }
}

impl TypeProvider for DeclTypeProvider {
    fn has_struct_type(&self, name: &str) -> bool {
        self.objects.contains_key(name)
    }

    fn field_type(&self, struct_name: &str, field: &str) -> Option<Type> {
        let t = self.objects.get(struct_name)?;
        let mut f = t.field(field);
        if f.is_none() && CEL_RESERVED.contains(&field) {
            let escaped = t.field(&format!("__{field}__"));
            if escaped.is_some() {
                consulted::note(consulted::KEYWORDS_AS_FIELD_NAMES);
            }
            if self.keywords_as_field_names {
                f = escaped;
            }
        }
        f.map(|f| f.cel.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_matches_kubernetes() {
        assert_eq!(escape("foo").as_deref(), Some("foo"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("foo-bar").as_deref(), Some("foo__dash__bar"));
        assert_eq!(escape("a.b/c").as_deref(), Some("a__dot__b__slash__c"));
        assert_eq!(escape("a__b").as_deref(), Some("a__underscores__b"));
        assert_eq!(escape("1a"), None);
        assert_eq!(escape("a b"), None);
        assert_eq!(escape(""), None);
        assert_eq!(unescape("foo__dash__bar"), "foo-bar");
        assert_eq!(unescape("__namespace__"), "namespace");
    }

    fn s(json: &str) -> Schema {
        Schema::from_json(&serde_json::from_str(json).unwrap(), "x").unwrap()
    }

    #[test]
    fn min_serialized_sizes() {
        let v = Minor::of(Version::new(1, 36)).unwrap();
        let obj = s(
            r#"{"type":"object","required":["key","value"],"properties":{"key":{"type":"string"},"value":{"type":"string"}}}"#,
        );
        assert_eq!(
            schema_decl_type(&obj, false, v, "o")
                .unwrap()
                .min_serialized_size,
            22
        );
        let list = s(r#"{"type":"array","items":{"type":"boolean"}}"#);
        assert_eq!(
            schema_decl_type(&list, false, v, "l").unwrap().max_elements,
            629_145
        );
        let map = s(r#"{"type":"object","additionalProperties":{"type":"integer"}}"#);
        assert_eq!(
            schema_decl_type(&map, false, v, "m").unwrap().max_elements,
            449_389
        );
        let e = s(r#"{"type":"string","enum":["A","LongValue"]}"#);
        assert_eq!(schema_decl_type(&e, false, v, "e").unwrap().max_elements, 9);
        let ios = s(r#"{"x-kubernetes-int-or-string":true,"maxLength":5}"#);
        assert_eq!(
            schema_decl_type(&ios, false, v, "i").unwrap().max_elements,
            20
        );
    }
}
