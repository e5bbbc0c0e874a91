//! The schemas of the resources an admission policy can match, for typed policy estimates
//! (beyond upstream, whose estimate types `object`, `oldObject` and `params` as `dyn`).
//!
//! A [`SchemaCatalog`] maps a group/version/resource to its kind and root OpenAPI v3 schema, and
//! an apiVersion/kind to the same (for `paramKind`). It is filled from CustomResourceDefinitions
//! ([`SchemaCatalog::add_crd`]) and from OpenAPI v3 documents as an API server publishes them
//! ([`SchemaCatalog::add_openapi_v3`]); built-in kinds come from the `k8s-openapi` crate, are
//! generated on first use, and are consulted after the catalog's own entries. Pure: no IO.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value, json};

use super::Schema;
use super::decltype::{
    ConversionFlavor, ConversionReads, DeclType, DeclTypeProvider, escape, openapi_schema_decl_type,
};
use crate::cel::minor::Minor;

/// A resource as admission rules name it (`resourceRules[].apiGroups/apiVersions/resources`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupVersionResource {
    /// `""` for the core group.
    pub group: String,
    pub version: String,
    /// The plural resource name, e.g. `deployments`.
    pub resource: String,
}

impl GroupVersionResource {
    pub fn new(group: &str, version: &str, resource: &str) -> Self {
        GroupVersionResource {
            group: group.to_string(),
            version: version.to_string(),
            resource: resource.to_string(),
        }
    }

    /// `apps/v1`, or `v1` for the core group.
    pub fn api_version(&self) -> String {
        api_version(&self.group, &self.version)
    }
}

/// `apps/v1/deployments`, `v1/pods`.
impl fmt::Display for GroupVersionResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.api_version(), self.resource)
    }
}

fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// Where a catalog schema came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchemaOrigin {
    /// Generated from the `k8s-openapi` crate (Kubernetes 1.33 API types).
    BuiltIn,
    /// `spec.versions[].schema.openAPIV3Schema` of the named CustomResourceDefinition, with
    /// `metadata` typed as ObjectMeta (as the API server publishes it).
    Crd(String),
    /// An OpenAPI v3 document, as `/openapi/v3/...` serves it.
    OpenApi,
}

impl fmt::Display for SchemaOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaOrigin::BuiltIn => {
                write!(f, "built-in schemas (k8s-openapi, Kubernetes 1.33 API)")
            }
            SchemaOrigin::Crd(n) => write!(f, "CRD {n}"),
            SchemaOrigin::OpenApi => write!(f, "OpenAPI v3"),
        }
    }
}

/// How an entry's schema is produced.
enum Source {
    /// A schema read already (OpenAPI documents).
    Ready(Value),
    /// A CRD version's `openAPIV3Schema`, read on first use.
    CrdVersion { crd: Arc<Value>, index: usize },
    /// A built-in kind, generated on first use.
    Generated(fn() -> Value),
}

/// One resource (or param kind) of a catalog. Its schema is read on first use; its typed form
/// is kept per way of converting it (minors that convert it alike share one).
pub struct CatalogEntry {
    pub gvr: GroupVersionResource,
    pub kind: String,
    pub origin: SchemaOrigin,
    source: Source,
    schema: OnceLock<Option<Arc<Schema>>>,
    reads: OnceLock<ConversionReads>,
    /// By [`ConversionReads::flavor`].
    typed: Mutex<Vec<(ConversionFlavor, Option<Arc<TypedRoot>>)>>,
}

impl fmt::Debug for CatalogEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CatalogEntry")
            .field("gvr", &self.gvr)
            .field("kind", &self.kind)
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

impl CatalogEntry {
    fn new(gvr: GroupVersionResource, kind: &str, origin: SchemaOrigin, source: Source) -> Self {
        CatalogEntry {
            gvr,
            kind: kind.to_string(),
            origin,
            source,
            schema: OnceLock::new(),
            reads: OnceLock::new(),
            typed: Mutex::new(Vec::new()),
        }
    }

    /// `apps/v1`.
    pub fn api_version(&self) -> String {
        self.gvr.api_version()
    }

    /// The root schema (refs resolved, `metadata` typed as ObjectMeta), or `None` when it cannot
    /// be read.
    pub fn schema(&self) -> Option<Arc<Schema>> {
        self.schema
            .get_or_init(|| {
                let json = match &self.source {
                    Source::Ready(v) => v.clone(),
                    Source::Generated(f) => f(),
                    Source::CrdVersion { crd, index } => {
                        let s =
                            crd.pointer(&format!("/spec/versions/{index}/schema/openAPIV3Schema"))?;
                        with_object_meta(s)
                    }
                };
                Schema::from_json(&json, "openAPIV3Schema")
                    .ok()
                    .map(Arc::new)
            })
            .clone()
    }

    /// Which minor-dependent conversion rules the typed root reads: minors that agree on them
    /// get the same [`Self::typed_root`].
    pub fn conversion_reads(&self) -> ConversionReads {
        *self.reads.get_or_init(|| {
            self.schema()
                .map_or_else(ConversionReads::default, |s| ConversionReads::of(&s))
        })
    }

    /// The CEL type of the resource's root for `object`/`oldObject`/`params` (k8s.io/apiserver
    /// `common.SchemaDeclType(schema, isResourceRoot=true)`, as policy type checking builds it).
    pub fn typed_root(&self, minor: &'static Minor) -> Option<Arc<TypedRoot>> {
        // One per flavor: minors that convert this schema alike share it.
        let flavor = self.conversion_reads().flavor(minor);
        let mut cache = self.typed.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, t)) = cache.iter().find(|(f, _)| *f == flavor) {
            return t.clone();
        }
        let name = format!("{}.{}", type_prefix(&self.gvr), self.kind);
        let t = self
            .schema()
            .and_then(|s| TypedRoot::new(&s, &name, minor, self.gvr.to_string()))
            .map(Arc::new);
        cache.push((flavor, t.clone()));
        t
    }
}

/// Type names carry a `/`, so they never read as a qualified identifier in an expression.
fn type_prefix(gvr: &GroupVersionResource) -> String {
    let group = if gvr.group.is_empty() {
        "core"
    } else {
        &gvr.group
    };
    format!("{group}/{}", gvr.version)
}

/// A resource root as CEL sees it: its DeclType, the provider that resolves its object types,
/// and which of its objects keep unknown fields.
pub struct TypedRoot {
    /// `apps/v1/deployments`.
    pub label: String,
    pub decl: Arc<DeclType>,
    pub provider: DeclTypeProvider,
    /// Object type names whose schema keeps unknown fields
    /// (`x-kubernetes-preserve-unknown-fields`): a field they do not declare may still be there.
    open: HashSet<String>,
}

impl fmt::Debug for TypedRoot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedRoot")
            .field("label", &self.label)
            .field("type", &self.decl.cel)
            .finish_non_exhaustive()
    }
}

impl TypedRoot {
    pub fn new(
        schema: &Schema,
        name: &str,
        minor: &'static Minor,
        label: String,
    ) -> Option<TypedRoot> {
        let decl = openapi_schema_decl_type(schema, true, minor, name)?;
        let provider = DeclTypeProvider::new(&[&decl], minor);
        let mut open = HashSet::new();
        collect_open(schema, name, &mut open);
        Some(TypedRoot {
            label,
            decl,
            provider,
            open,
        })
    }

    /// Whether the object type keeps fields its schema does not declare.
    pub fn is_open(&self, type_name: &str) -> bool {
        self.open.contains(type_name)
    }

    /// The name of the root type (object type names below it extend it with `.field`).
    pub fn type_name(&self) -> &str {
        self.decl.cel.type_name()
    }
}

/// Names the objects with `x-kubernetes-preserve-unknown-fields`, as `schema_decl_type` names
/// them.
fn collect_open(s: &Schema, name: &str, out: &mut HashSet<String>) {
    if s.x_preserve_unknown_fields == Some(true) {
        out.insert(name.to_string());
    }
    if let Some(items) = &s.items {
        collect_open(items, &format!("{name}.@idx"), out);
    }
    if let Some(ap) = s.additional_properties_schema() {
        collect_open(ap, &format!("{name}.@elem"), out);
    }
    for (p, child) in &s.properties {
        let escaped = escape(p);
        collect_open(
            child,
            &format!("{name}.{}", escaped.as_deref().unwrap_or(p)),
            out,
        );
    }
}

/// Resources and param kinds with their schemas. Cheap to clone (entries are shared).
#[derive(Clone, Default, Debug)]
pub struct SchemaCatalog {
    resources: BTreeMap<GroupVersionResource, Arc<CatalogEntry>>,
    /// (apiVersion, kind) → entry.
    kinds: BTreeMap<(String, String), Arc<CatalogEntry>>,
    /// Do not fall back to the built-in kinds.
    no_builtins: bool,
}

impl SchemaCatalog {
    /// An empty catalog; lookups fall back to the built-in kinds.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty catalog that does not fall back to the built-in kinds.
    pub fn without_builtins() -> Self {
        SchemaCatalog {
            no_builtins: true,
            ..Self::default()
        }
    }

    /// The built-in kinds alone (generated on first use of each).
    pub fn builtin() -> &'static SchemaCatalog {
        static BUILTIN: OnceLock<SchemaCatalog> = OnceLock::new();
        BUILTIN.get_or_init(|| {
            let mut c = SchemaCatalog::without_builtins();
            for b in builtin_kinds() {
                c.insert(Arc::new(CatalogEntry::new(
                    GroupVersionResource::new(b.group, b.version, b.resource),
                    b.kind,
                    SchemaOrigin::BuiltIn,
                    Source::Generated(b.schema),
                )));
            }
            c
        })
    }

    /// Whether the catalog has entries of its own (the built-in kinds aside).
    pub fn is_empty(&self) -> bool {
        self.resources.is_empty() && self.kinds.is_empty()
    }

    /// The entries of the catalog itself (not the built-in fallback), by resource.
    pub fn entries(&self) -> impl Iterator<Item = &Arc<CatalogEntry>> {
        self.resources.values()
    }

    fn insert(&mut self, e: Arc<CatalogEntry>) {
        self.kinds
            .insert((e.api_version(), e.kind.clone()), e.clone());
        self.resources.insert(e.gvr.clone(), e);
    }

    /// The entry for a resource: the catalog's own, else the built-in one.
    pub fn resource(&self, gvr: &GroupVersionResource) -> Option<&Arc<CatalogEntry>> {
        self.resources.get(gvr).or_else(|| {
            if self.no_builtins {
                None
            } else {
                SchemaCatalog::builtin().resources.get(gvr)
            }
        })
    }

    /// The entry for a kind (`paramKind`): the catalog's own, else the built-in one.
    pub fn kind(&self, api_version: &str, kind: &str) -> Option<&Arc<CatalogEntry>> {
        let key = (api_version.to_string(), kind.to_string());
        self.kinds.get(&key).or_else(|| {
            if self.no_builtins {
                None
            } else {
                SchemaCatalog::builtin().kinds.get(&key)
            }
        })
    }

    /// Adds every version of a CustomResourceDefinition (`apiextensions.k8s.io/v1`) that has a
    /// schema, as `spec.group` / version / `spec.names.plural`, and as its kind for
    /// `paramKind`. Versions that are not served are added too (a request can only name served
    /// ones, so they are never matched wrongly). Entries of an earlier CRD for the same
    /// resources are replaced. The CRD is kept (shared, not copied) and each version's schema
    /// is read on first use. Returns the resources added.
    pub fn add_crd(&mut self, crd: impl Into<Arc<Value>>) -> Vec<GroupVersionResource> {
        let crd: Arc<Value> = crd.into();
        let name = crd
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut added = Vec::new();
        for (index, gvr, kind) in crd_versions(&crd) {
            self.insert(Arc::new(CatalogEntry::new(
                gvr.clone(),
                &kind,
                SchemaOrigin::Crd(name.clone()),
                Source::CrdVersion {
                    crd: crd.clone(),
                    index,
                },
            )));
            added.push(gvr);
        }
        added
    }

    /// The resources (and their kind) a CRD would add, without adding it: to find out cheaply
    /// which CRDs a set of policies needs.
    pub fn crd_resources(crd: &Value) -> Vec<(GroupVersionResource, String)> {
        crd_versions(crd)
            .into_iter()
            .map(|(_, gvr, kind)| (gvr, kind))
            .collect()
    }

    /// Removes the entries a CRD of this name added.
    pub fn remove_crd(&mut self, name: &str) {
        let is_it = |e: &Arc<CatalogEntry>| matches!(&e.origin, SchemaOrigin::Crd(n) if n == name);
        self.resources.retain(|_, e| !is_it(e));
        self.kinds.retain(|_, e| !is_it(e));
    }

    /// Adds the resources of an OpenAPI v3 document as an API server serves it for one group
    /// version (`/openapi/v3/apis/apps/v1`, `/openapi/v3/api/v1`): each collection path
    /// (`/apis/{group}/{version}[/namespaces/{namespace}]/{resource}`) whose operations name a
    /// kind (`x-kubernetes-group-version-kind`) is typed from the component schema of that kind,
    /// with its `$ref`s resolved. Returns the resources added.
    pub fn add_openapi_v3(&mut self, doc: &Value) -> Vec<GroupVersionResource> {
        let mut added = Vec::new();
        let Some(components) = doc
            .pointer("/components/schemas")
            .and_then(Value::as_object)
        else {
            return added;
        };
        let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
            return added;
        };
        let lookup = |r: &str| components.get(r.strip_prefix("#/components/schemas/")?);
        let mut seen = HashSet::new();
        for (path, item) in paths {
            let Some((group, version, resource)) = collection_of(path) else {
                continue;
            };
            let Some((g, v, kind)) = operation_gvk(item) else {
                continue;
            };
            if g != group || v != version || !seen.insert(resource.clone()) {
                continue;
            }
            let Some((_, schema)) = components.iter().find(|(_, s)| has_gvk(s, &g, &v, &kind))
            else {
                continue;
            };
            let json = resolve_refs(schema, &lookup);
            let gvr = GroupVersionResource::new(&group, &version, &resource);
            self.insert(Arc::new(CatalogEntry::new(
                gvr.clone(),
                &kind,
                SchemaOrigin::OpenApi,
                Source::Ready(json),
            )));
            added.push(gvr);
        }
        added
    }
}

/// The versions of a CRD that have a schema: (index in `spec.versions`, resource, kind).
fn crd_versions(crd: &Value) -> Vec<(usize, GroupVersionResource, String)> {
    let s = |p: &str| crd.pointer(p).and_then(Value::as_str).unwrap_or_default();
    let (group, plural, kind) = (
        s("/spec/group"),
        s("/spec/names/plural"),
        s("/spec/names/kind"),
    );
    if group.is_empty() || plural.is_empty() || kind.is_empty() {
        return Vec::new();
    }
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    versions
        .iter()
        .enumerate()
        .filter(|(_, v)| {
            v.pointer("/schema/openAPIV3Schema")
                .is_some_and(Value::is_object)
        })
        .filter_map(|(i, v)| {
            let vname = v.get("name").and_then(Value::as_str)?;
            Some((
                i,
                GroupVersionResource::new(group, vname, plural),
                kind.to_string(),
            ))
        })
        .collect()
}

/// `(group, version, resource)` of a collection path; `None` for item and subresource paths.
fn collection_of(path: &str) -> Option<(String, String, String)> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return None,
    };
    let rest = match rest {
        ["namespaces", "{namespace}", r @ ..] if !r.is_empty() => r,
        r => r,
    };
    match rest {
        [resource] if !resource.starts_with('{') => {
            Some((group.to_string(), version.to_string(), resource.to_string()))
        }
        _ => None,
    }
}

fn operation_gvk(item: &Value) -> Option<(String, String, String)> {
    for op in ["post", "get", "put", "patch", "delete"] {
        if let Some(gvk) = item
            .get(op)
            .and_then(|o| o.get("x-kubernetes-group-version-kind"))
        {
            let s = |k: &str| gvk.get(k).and_then(Value::as_str).unwrap_or_default();
            let kind = s("kind");
            if kind.ends_with("List") && op == "get" {
                continue;
            }
            return Some((s("group").into(), s("version").into(), kind.into()));
        }
    }
    None
}

fn has_gvk(s: &Value, g: &str, v: &str, k: &str) -> bool {
    s.get("x-kubernetes-group-version-kind")
        .and_then(Value::as_array)
        .is_some_and(|a| {
            a.iter().any(|x| {
                x.get("group").and_then(Value::as_str).unwrap_or_default() == g
                    && x.get("version").and_then(Value::as_str) == Some(v)
                    && x.get("kind").and_then(Value::as_str) == Some(k)
            })
        })
}

/// Replaces every `$ref` (also one wrapped in `allOf`, as kube-openapi wraps refs to keep a
/// description) with the schema it names, the way k8s.io/apiserver `resolver.PopulateRefs` does
/// for policy type checking, through `properties`, `items` and `additionalProperties`. A ref
/// to a schema being resolved (recursion, e.g. `JSONSchemaProps`) and a ref that cannot be
/// found become an object that keeps unknown fields: its contents are not known. Objects
/// without `properties` and `additionalProperties` (free-form JSON such as `FieldsV1`) are
/// marked the same way. Descriptions are dropped.
pub fn resolve_refs<'a>(schema: &'a Value, lookup: &dyn Fn(&str) -> Option<&'a Value>) -> Value {
    let mut visiting = Vec::new();
    resolve(schema, lookup, &mut visiting)
}

fn open_object() -> Value {
    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
}

fn ref_of(v: &Value) -> Option<&str> {
    if let Some(r) = v.get("$ref").and_then(Value::as_str) {
        return Some(r);
    }
    v.get("allOf")
        .and_then(Value::as_array)?
        .iter()
        .find_map(ref_of)
}

fn resolve<'a>(
    node: &'a Value,
    lookup: &dyn Fn(&str) -> Option<&'a Value>,
    visiting: &mut Vec<&'a str>,
) -> Value {
    let Value::Object(map) = node else {
        return node.clone();
    };
    if let Some(r) = ref_of(node) {
        if visiting.contains(&r) || visiting.len() > 64 {
            return open_object();
        }
        let Some(target) = lookup(r) else {
            return open_object();
        };
        visiting.push(r);
        let out = resolve(target, lookup, visiting);
        visiting.pop();
        return out;
    }
    let mut out = Map::new();
    for (k, v) in map {
        match k.as_str() {
            "properties" => {
                if let Value::Object(props) = v {
                    let resolved: Map<String, Value> = props
                        .iter()
                        .map(|(p, s)| (p.clone(), resolve(s, lookup, visiting)))
                        .collect();
                    out.insert(k.clone(), Value::Object(resolved));
                }
            }
            "items" | "additionalProperties" if v.is_object() => {
                out.insert(k.clone(), resolve(v, lookup, visiting));
            }
            "description" | "$defs" | "definitions" | "$schema" | "title" | "allOf" => {}
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    let is_object = out.get("type").and_then(Value::as_str) == Some("object");
    if is_object
        && !out.contains_key("properties")
        && !out.contains_key("additionalProperties")
        && !out.contains_key("x-kubernetes-preserve-unknown-fields")
    {
        out.insert(
            "x-kubernetes-preserve-unknown-fields".into(),
            Value::Bool(true),
        );
    }
    Value::Object(out)
}

/// A CRD version's schema as the API server publishes it: `apiVersion` and `kind` strings and
/// `metadata` typed as ObjectMeta.
fn with_object_meta(s: &Value) -> Value {
    let mut out = s.clone();
    if let Some(obj) = out.as_object_mut() {
        let props = obj
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(props) = props.as_object_mut() {
            props.insert("apiVersion".into(), json!({"type": "string"}));
            props.insert("kind".into(), json!({"type": "string"}));
            props.insert("metadata".into(), object_meta().clone());
        }
    }
    out
}

fn object_meta() -> &'static Value {
    static META: OnceLock<Value> = OnceLock::new();
    META.get_or_init(generate::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>)
}

/// The schema of a `k8s-openapi` type, refs resolved.
fn generate<T: schemars::JsonSchema>() -> Value {
    let root = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    let v = root.to_value();
    let defs = v.get("$defs").and_then(Value::as_object);
    let lookup = |r: &str| -> Option<&Value> {
        if r == "#" {
            return Some(&v);
        }
        defs?.get(r.strip_prefix("#/$defs/")?)
    };
    resolve_refs(&v, &lookup)
}

/// A built-in kind.
struct Builtin {
    group: &'static str,
    version: &'static str,
    resource: &'static str,
    kind: &'static str,
    schema: fn() -> Value,
}

fn builtin<T: k8s_openapi::Resource + schemars::JsonSchema>() -> Builtin {
    Builtin {
        group: T::GROUP,
        version: T::VERSION,
        resource: T::URL_PATH_SEGMENT,
        kind: T::KIND,
        schema: generate::<T>,
    }
}

/// The built-in kinds celcost ships schemas for.
fn builtin_kinds() -> Vec<Builtin> {
    use k8s_openapi::api::{
        admissionregistration::v1 as admissionregistration, apps::v1 as apps,
        autoscaling::v1 as autoscaling_v1, autoscaling::v2 as autoscaling_v2, batch::v1 as batch,
        certificates::v1 as certificates, coordination::v1 as coordination, core::v1 as core,
        discovery::v1 as discovery, events::v1 as events, networking::v1 as networking,
        node::v1 as node, policy::v1 as policy, rbac::v1 as rbac, scheduling::v1 as scheduling,
        storage::v1 as storage,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
    vec![
        builtin::<core::Pod>(),
        builtin::<core::Service>(),
        builtin::<core::ConfigMap>(),
        builtin::<core::Secret>(),
        builtin::<core::Namespace>(),
        builtin::<core::ServiceAccount>(),
        builtin::<core::PersistentVolumeClaim>(),
        builtin::<core::PersistentVolume>(),
        builtin::<core::Node>(),
        builtin::<core::ReplicationController>(),
        builtin::<core::PodTemplate>(),
        builtin::<core::Endpoints>(),
        builtin::<core::Event>(),
        builtin::<core::LimitRange>(),
        builtin::<core::ResourceQuota>(),
        builtin::<apps::Deployment>(),
        builtin::<apps::StatefulSet>(),
        builtin::<apps::DaemonSet>(),
        builtin::<apps::ReplicaSet>(),
        builtin::<apps::ControllerRevision>(),
        builtin::<batch::Job>(),
        builtin::<batch::CronJob>(),
        builtin::<networking::Ingress>(),
        builtin::<networking::IngressClass>(),
        builtin::<networking::NetworkPolicy>(),
        builtin::<networking::ServiceCIDR>(),
        builtin::<networking::IPAddress>(),
        builtin::<rbac::Role>(),
        builtin::<rbac::ClusterRole>(),
        builtin::<rbac::RoleBinding>(),
        builtin::<rbac::ClusterRoleBinding>(),
        builtin::<autoscaling_v1::HorizontalPodAutoscaler>(),
        builtin::<autoscaling_v2::HorizontalPodAutoscaler>(),
        builtin::<policy::PodDisruptionBudget>(),
        builtin::<discovery::EndpointSlice>(),
        builtin::<coordination::Lease>(),
        builtin::<storage::StorageClass>(),
        builtin::<storage::CSIStorageCapacity>(),
        builtin::<storage::CSIDriver>(),
        builtin::<storage::CSINode>(),
        builtin::<storage::VolumeAttachment>(),
        builtin::<scheduling::PriorityClass>(),
        builtin::<node::RuntimeClass>(),
        builtin::<certificates::CertificateSigningRequest>(),
        builtin::<events::Event>(),
        builtin::<admissionregistration::ValidatingAdmissionPolicy>(),
        builtin::<admissionregistration::ValidatingAdmissionPolicyBinding>(),
        builtin::<admissionregistration::ValidatingWebhookConfiguration>(),
        builtin::<admissionregistration::MutatingWebhookConfiguration>(),
        builtin::<apiextensions::CustomResourceDefinition>(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::decltype::DeclKind;

    const V: &Minor = crate::cel::minor::NEWEST_MINOR;

    fn field<'a>(t: &'a Arc<DeclType>, path: &[&str]) -> &'a Arc<DeclType> {
        let mut cur = t;
        for p in path {
            cur = match *p {
                "@items" => cur.elem().unwrap(),
                f => cur
                    .field(f)
                    .unwrap_or_else(|| panic!("no field {f} in {:?}", cur.cel)),
            };
        }
        cur
    }

    #[test]
    fn deployment_schema_has_typed_containers() {
        let c = SchemaCatalog::new();
        let e = c
            .resource(&GroupVersionResource::new("apps", "v1", "deployments"))
            .expect("deployments are built in");
        assert_eq!(e.kind, "Deployment");
        assert_eq!(e.origin, SchemaOrigin::BuiltIn);
        let s = e.schema().unwrap();
        let containers = &s.properties["spec"].properties["template"].properties["spec"].properties
            ["containers"];
        assert_eq!(containers.type_, "array");
        let item = containers.items.as_ref().unwrap();
        assert_eq!(item.type_, "object");
        assert_eq!(item.properties["image"].type_, "string");
        // IntOrString, Quantity and Time as the API server's OpenAPI has them.
        let strategy = &s.properties["spec"].properties["strategy"].properties["rollingUpdate"];
        assert!(strategy.properties["maxSurge"].x_int_or_string);
        let resources = &item.properties["resources"].properties["limits"];
        assert!(
            resources
                .additional_properties_schema()
                .unwrap()
                .x_int_or_string
        );
        let ts = &s.properties["metadata"].properties["creationTimestamp"];
        assert_eq!(
            (ts.type_.as_str(), ts.format.as_str()),
            ("string", "date-time")
        );

        let root = e.typed_root(V).unwrap();
        assert_eq!(root.label, "apps/v1/deployments");
        let image = field(
            &root.decl,
            &["spec", "template", "spec", "containers", "@items", "image"],
        );
        assert!(image.is_unbounded_sized());
        assert_eq!(image.max_elements, 3_145_726);
        let labels = field(&root.decl, &["metadata", "labels"]);
        assert!(matches!(labels.kind, DeclKind::Map(..)));
        // Cached per version.
        assert!(Arc::ptr_eq(&root, &e.typed_root(V).unwrap()));
    }

    #[test]
    fn builtin_kinds_all_generate() {
        for b in builtin_kinds() {
            let c = SchemaCatalog::builtin();
            let e = c
                .resource(&GroupVersionResource::new(b.group, b.version, b.resource))
                .unwrap();
            assert!(e.typed_root(V).is_some(), "{}", e.gvr);
            assert!(c.kind(&e.api_version(), b.kind).is_some());
        }
        let c = SchemaCatalog::new();
        assert!(c.kind("v1", "ConfigMap").is_some());
        assert!(
            c.resource(&GroupVersionResource::new("", "v1", "pods/exec"))
                .is_none()
        );
        assert!(
            SchemaCatalog::without_builtins()
                .kind("v1", "ConfigMap")
                .is_none()
        );
    }

    #[test]
    fn refs_resolve_with_recursion_guard() {
        let doc = json!({
            "a": {"type": "object", "properties": {
                "b": {"allOf": [{"$ref": "#/d/b"}], "description": "wrapped"},
                "self": {"$ref": "#/d/a"},
                "list": {"type": "array", "items": {"$ref": "#/d/b"}},
                "missing": {"$ref": "#/d/nope"}
            }},
            "b": {"type": "object", "additionalProperties": {"type": "string"}},
        });
        let lookup = |r: &str| doc.get(r.strip_prefix("#/d/")?);
        let out = resolve_refs(&doc["a"], &lookup);
        assert_eq!(
            out["properties"]["b"],
            json!({"type": "object", "additionalProperties": {"type": "string"}})
        );
        assert_eq!(out["properties"]["list"]["items"], out["properties"]["b"]);
        // `a` refers to itself: inside the one copy, an open object (upstream's placeholder,
        // but keeping unknown fields: its contents are not known).
        assert_eq!(out["properties"]["self"]["type"], "object");
        assert_eq!(
            out["properties"]["self"]["properties"]["self"],
            open_object()
        );
        assert_eq!(out["properties"]["missing"], open_object());
    }

    #[test]
    fn crds_are_added_per_version_with_object_meta() {
        let v1 = json!({
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"spec": {"type": "object", "properties": {
                "name": {"type": "string", "maxLength": 10}}}}});
        let mut crd = crate::fixtures::widgets(v1);
        crd["spec"]["versions"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "v2", "served": true}));
        let mut c = SchemaCatalog::without_builtins();
        let added = c.add_crd(crd);
        assert_eq!(
            added,
            vec![GroupVersionResource::new("example.com", "v1", "widgets")]
        );
        let e = c.kind("example.com/v1", "Widget").unwrap();
        assert_eq!(e.origin, SchemaOrigin::Crd("widgets.example.com".into()));
        let root = e.typed_root(V).unwrap();
        assert!(root.is_open(root.type_name()));
        assert_eq!(field(&root.decl, &["spec", "name"]).max_elements, 40);
        // metadata is ObjectMeta, not just name and generateName.
        assert!(matches!(
            field(&root.decl, &["metadata", "labels"]).kind,
            DeclKind::Map(..)
        ));
        c.remove_crd("widgets.example.com");
        assert!(c.is_empty());
    }

    /// Minors that convert a schema alike share its typed root; the others each have their own.
    #[test]
    fn typed_roots_are_shared_by_minors_that_convert_alike() {
        use crate::cel::decls::Version;
        use crate::cel::minor::{Distribution, Minor};
        let crd = |spec: Value| {
            crate::fixtures::widgets(json!({"type": "object", "properties": {"spec": spec}}))
        };
        let minor =
            |m| Minor::of_distribution(Version::new(1, m), Distribution::Kubernetes).unwrap();
        let port = |c: &SchemaCatalog, m| {
            let e = c.kind("example.com/v1", "Widget").unwrap();
            let root = e.typed_root(minor(m)).unwrap();
            (field(&root.decl, &["spec", "port"]).max_elements, root)
        };
        // int-or-string bounded by maxLength from 1.34 (4 bytes a character).
        let mut c = SchemaCatalog::without_builtins();
        c.add_crd(crd(json!({"type": "object", "properties": {
            "port": {"x-kubernetes-int-or-string": true, "maxLength": 10}}})));
        let (m33, r33) = port(&c, 33);
        let (m34, r34) = port(&c, 34);
        let (_, r36) = port(&c, 36);
        assert_eq!(m34, 40);
        assert!(m33 > m34, "{m33}");
        assert!(!Arc::ptr_eq(&r33, &r34));
        assert!(Arc::ptr_eq(&r34, &r36));
        // Without maxLength the two convert alike.
        let mut c = SchemaCatalog::without_builtins();
        c.add_crd(crd(json!({"type": "object", "properties": {
            "port": {"x-kubernetes-int-or-string": true}}})));
        assert!(Arc::ptr_eq(&port(&c, 33).1, &port(&c, 34).1));
        // Reserved words as field names resolve differently from compatibility 1.31 (1.32).
        assert!(!Arc::ptr_eq(&port(&c, 31).1, &port(&c, 32).1));
    }

    #[test]
    fn openapi_v3_documents() {
        let doc = json!({
            "paths": {
                "/apis/example.com/v1/namespaces/{namespace}/gadgets": {
                    "get": {"x-kubernetes-group-version-kind":
                        {"group": "example.com", "version": "v1", "kind": "GadgetList"}},
                    "post": {"x-kubernetes-group-version-kind":
                        {"group": "example.com", "version": "v1", "kind": "Gadget"}}
                },
                "/apis/example.com/v1/namespaces/{namespace}/gadgets/{name}/status": {
                    "get": {"x-kubernetes-group-version-kind":
                        {"group": "example.com", "version": "v1", "kind": "Gadget"}}
                }
            },
            "components": {"schemas": {
                "com.example.v1.Gadget": {
                    "type": "object",
                    "x-kubernetes-group-version-kind":
                        [{"group": "example.com", "version": "v1", "kind": "Gadget"}],
                    "properties": {"spec": {"allOf": [
                        {"$ref": "#/components/schemas/com.example.v1.GadgetSpec"}]}}
                },
                "com.example.v1.GadgetSpec": {"type": "object", "properties": {
                    "size": {"type": "integer"}}}
            }}
        });
        let mut c = SchemaCatalog::without_builtins();
        assert_eq!(
            c.add_openapi_v3(&doc),
            vec![GroupVersionResource::new("example.com", "v1", "gadgets")]
        );
        let e = c
            .resource(&GroupVersionResource::new("example.com", "v1", "gadgets"))
            .unwrap();
        assert_eq!(e.kind, "Gadget");
        let s = e.schema().unwrap();
        assert_eq!(s.properties["spec"].properties["size"].type_, "integer");
    }
}
