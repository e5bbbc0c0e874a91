//! Typed policy estimates, beyond upstream: every expression compiled again with `object` and
//! `oldObject` typed from the schema of each resource the policy matches, and `params` from
//! `paramKind`, the way upstream's policy type checking types them
//! (k8s.io/apiserver pkg/admission/plugin/policy/validating/typechecking.go), then costed with
//! sizes from those schemas; the worst case over the matched resources is reported beside
//! upstream's estimate.
//!
//! Sizes come from the first element of a node's path: `object`/`oldObject` walk the matched
//! resource's DeclType, `params` the param kind's, `namespaceObject` the Namespace schema,
//! `variables.<name>` what the variable's expression reads (selects, `?:`, `+`, literals);
//! anything else (`request`, iteration variables over literals, call results) has no schema
//! size, as for upstream.
//!
//! Fields a matched schema does not have still compile (as `dyn`): at runtime reading them
//! fails with an error, so they are sized 0 and listed in `absentFields`. This keeps guards
//! such as `object.kind != 'Pod' || object.spec.containers.all(...)` meaningful for a policy
//! that matches Pods and Deployments.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;

use serde_json::Value;

use super::shape::{Leaf, Shape, ShapeRef, Shapes};
use super::types::PolicyTypes;
use crate::cel::ast::{Expr, ExprKind, Literal};
use crate::cel::checker::{CheckedExpr, TypeProvider};
use crate::cel::cost::{self, AstNode, Cost, CostOptions, Size, estimate};
use crate::cel::env::{Env, PatchTypes};
use crate::cel::k8s_cost::{KubernetesEstimator, SizeSource};
use crate::cel::minor::Minor;
use crate::cel::types::{Kind, Type};
use crate::report::{PolicyTyping, TypedEstimate, TypedSchema};
use crate::schema::catalog::{CatalogEntry, GroupVersionResource, SchemaCatalog, TypedRoot};
use crate::schema::decltype::{ConversionReads, unescape};

/// The schemas a policy's typed estimates use.
pub(super) struct Typing {
    /// One per matched resource with a schema, sorted.
    pub targets: Vec<Arc<TypedRoot>>,
    pub params: Option<Arc<TypedRoot>>,
    pub namespace: Option<Arc<TypedRoot>>,
    pub report: PolicyTyping,
}

fn typed_schema(e: &CatalogEntry) -> TypedSchema {
    TypedSchema {
        resource: e.gvr.to_string(),
        kind: e.kind.clone(),
        origin: e.origin.to_string(),
    }
}

/// The resources a policy's `matchConstraints.resourceRules` name, as upstream's type checking
/// reads them: a rule with a wildcard group or version is skipped, and so are wildcard and
/// subresource resources. Also what is skipped, and why.
pub fn matched_resources(spec: &Value) -> (Vec<GroupVersionResource>, Vec<String>) {
    let mut out: Vec<GroupVersionResource> = Vec::new();
    let mut skipped = Vec::new();
    let rules = spec
        .pointer("/matchConstraints/resourceRules")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if rules.is_empty() {
        skipped.push("matchConstraints.resourceRules names no resources".to_string());
    }
    let strs = |r: &Value, k: &str| -> Vec<String> {
        r.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    for (i, rule) in rules.iter().enumerate() {
        let (groups, versions, resources) = (
            strs(rule, "apiGroups"),
            strs(rule, "apiVersions"),
            strs(rule, "resources"),
        );
        if groups.iter().any(|g| g.contains('*')) {
            skipped.push(format!(
                "resourceRules[{i}]: wildcard apiGroups (any kind can be the object)"
            ));
            continue;
        }
        if versions.iter().any(|v| v.contains('*')) {
            skipped.push(format!(
                "resourceRules[{i}]: wildcard apiVersions (any version can be the object)"
            ));
            continue;
        }
        for g in &groups {
            for v in &versions {
                for r in &resources {
                    if r.contains('*') {
                        skipped.push(format!(
                            "resourceRules[{i}]: {}/{r}: wildcard resources",
                            GroupVersionResource::new(g, v, "").api_version()
                        ));
                    } else if r.contains('/') {
                        skipped.push(format!(
                            "{}: subresource (not typed, as upstream's type checking)",
                            GroupVersionResource::new(g, v, r)
                        ));
                    } else {
                        let gvr = GroupVersionResource::new(g, v, r);
                        if !out.contains(&gvr) {
                            out.push(gvr);
                        }
                    }
                }
            }
        }
    }
    out.sort();
    skipped.dedup();
    (out, skipped)
}

/// The param kind (`paramKind.apiVersion`, `paramKind.kind`), if any.
pub fn param_kind(spec: &Value) -> Option<(String, String)> {
    let pk = spec.get("paramKind")?;
    let s = |k: &str| pk.get(k).and_then(Value::as_str).map(str::to_string);
    Some((s("apiVersion")?, s("kind")?))
}

/// The CustomResourceDefinitions a policy's typed estimate would read, for a caller that fetches
/// schemas on demand (the operator): what to put into the [`SchemaCatalog`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SchemaNeeds {
    /// CRD names (`<plural>.<group>`, as the API server requires them) of the matched resources
    /// that are not built in, sorted.
    pub crds: Vec<String>,
    /// `paramKind` when it is not a built-in kind: (group, version, kind). Its CRD is the one of
    /// that group whose `spec.names.kind` is the kind; its name cannot be told from the kind.
    pub param_kind: Option<(String, String, String)>,
}

/// Which CRDs the typed estimate of the policy `vap` (a ValidatingAdmissionPolicy as JSON) can
/// use. Resources of the core group, of groups without a dot (CRD groups need one) and kinds
/// the built-in schemas have are left out.
pub fn schema_needs(vap: &Value) -> SchemaNeeds {
    let spec = vap.get("spec").unwrap_or(&Value::Null);
    let builtin = SchemaCatalog::builtin();
    let custom = |group: &str| group.contains('.');
    let mut crds: Vec<String> = matched_resources(spec)
        .0
        .into_iter()
        .filter(|gvr| custom(&gvr.group) && builtin.resource(gvr).is_none())
        .map(|gvr| format!("{}.{}", gvr.resource, gvr.group))
        .collect();
    crds.sort();
    crds.dedup();
    let param_kind = param_kind(spec).and_then(|(api, kind)| {
        let (group, version) = api.split_once('/')?;
        (custom(group) && builtin.kind(&api, &kind).is_none())
            .then(|| (group.to_string(), version.to_string(), kind))
    });
    SchemaNeeds { crds, param_kind }
}

/// What the typed roots of the policy spec `spec` read of a minor ([`resolve`]'s schemas: the
/// matched resources, the param kind and Namespace): minors that agree on it type the policy
/// alike.
pub fn conversion_reads(spec: &Value, catalog: &SchemaCatalog) -> ConversionReads {
    let targets = matched_resources(spec).0;
    let targets = targets.iter().filter_map(|gvr| catalog.resource(gvr));
    let params = param_kind(spec).and_then(|(api, kind)| catalog.kind(&api, &kind));
    let namespace = catalog.resource(&GroupVersionResource::new("", "v1", "namespaces"));
    targets
        .chain(params)
        .chain(namespace)
        .fold(ConversionReads::default(), |r, e| {
            r.union(e.conversion_reads())
        })
}

pub(super) fn resolve(spec: &Value, catalog: &SchemaCatalog, env: &Env) -> Typing {
    let version = env.minor;
    let (gvrs, mut not_typed) = matched_resources(spec);
    let mut report = PolicyTyping::default();
    let mut targets = Vec::new();
    for gvr in gvrs {
        match catalog.resource(&gvr) {
            Some(e) => match e.typed_root(version) {
                Some(root) => {
                    report.schemas.push(typed_schema(e));
                    targets.push(root);
                }
                None => not_typed.push(format!("{gvr}: its schema could not be read")),
            },
            None => not_typed.push(format!(
                "{gvr}: no schema known (give celcost its CRD, or its OpenAPI v3)"
            )),
        }
    }
    let mut params = None;
    if let Some((api, kind)) = param_kind(spec) {
        match catalog
            .kind(&api, &kind)
            .and_then(|e| e.typed_root(version).map(|r| (typed_schema(e), r)))
        {
            Some((s, r)) => {
                report.params = Some(s);
                params = Some(r);
            }
            None => not_typed.push(format!(
                "params: {api} {kind}: no schema known (give celcost its CRD), params is dyn"
            )),
        }
    }
    let namespace = catalog
        .resource(&GroupVersionResource::new("", "v1", "namespaces"))
        .and_then(|e| e.typed_root(version));
    report.not_typed = not_typed;
    Typing {
        targets,
        params,
        namespace,
        report,
    }
}

/// One expression of the policy, in compile order.
pub(super) struct Input<'a> {
    /// Where it is (`spec.variables[3].expression`).
    pub field_path: &'a str,
    pub source: &'a str,
    pub has_params: bool,
    pub has_authorizer: bool,
    pub composition: bool,
    /// Compiled with the mutation patch types (MutatingAdmissionPolicy mutations).
    pub patch_types: bool,
    /// The variable's name, for `variables[*]`.
    pub variable: Option<&'a str>,
    /// Whether upstream's compile succeeded (no typed estimate otherwise).
    pub compiled: bool,
    /// Upstream's estimate.
    pub upstream: Cost,
    /// Upstream's output type (variables are declared with it in the `dyn` fallback).
    pub output: Option<Type>,
}

/// One expression against one resource.
#[derive(Clone)]
struct One {
    cost: Cost,
    /// Field → how much of the maximum it drives (the drop when it is sized 0).
    unbounded: Vec<(String, u64)>,
    unknown: Vec<(String, u64)>,
    absent: Vec<String>,
    /// Why the schema types could not be used (the typed compile error).
    note: Option<String>,
    /// Whether this is upstream's estimate (not even the `dyn` compile worked).
    upstream: bool,
}

/// Typed estimates of every input, `None` where upstream's compile failed.
pub(super) fn estimate_typed(
    env: &Env,
    typing: &Typing,
    inputs: &[Input<'_>],
) -> Vec<Option<TypedEstimate>> {
    // Within a range's comparison of the cost algorithms, the other's costs too: what is
    // compared is what the report keeps of them, the estimates combined over the targets.
    let other = cost::comparing_with(env.cost_options());
    let run = || -> Vec<Vec<Option<Costed>>> {
        typing
            .targets
            .iter()
            .map(|t| run_target(env, typing, t, inputs, other))
            .collect()
    };
    let per_target = match other {
        Some(_) => {
            crate::cel::version::consulted::holding_back(
                crate::cel::version::consulted::COST_ALGORITHM,
                run,
            )
            .0
        }
        None => run(),
    };
    let combined = |theirs: bool| -> Option<Vec<Option<TypedEstimate>>> {
        inputs
            .iter()
            .enumerate()
            .map(|(i, inp)| {
                if !inp.compiled {
                    return Some(None);
                }
                let mut ones = Vec::with_capacity(per_target.len());
                for r in &per_target {
                    ones.push(match &r[i] {
                        None => None,
                        // A cost the other algorithm could not make: they do not agree.
                        Some(c) if theirs => Some(c.theirs.as_ref()?),
                        Some(c) => Some(&c.mine),
                    });
                }
                Some(combine(&typing.targets, ones.into_iter()))
            })
            .collect()
    };
    let mine = combined(false).unwrap_or_default();
    if other.is_some() {
        cost::algorithms_agree(combined(true).as_ref() == Some(&mine));
    }
    mine
}

/// One expression's cost against one resource, and the other cost algorithm's where a range
/// compares them ([`cost::comparing_with`]; `None` where it could not finish).
struct Costed {
    mine: One,
    theirs: Option<One>,
}

fn combine<'a>(
    targets: &[Arc<TypedRoot>],
    results: impl Iterator<Item = Option<&'a One>>,
) -> Option<TypedEstimate> {
    let mut t = TypedEstimate::default();
    let mut best: Option<Cost> = None;
    let mut unbounded: BTreeMap<String, (u64, usize)> = BTreeMap::new();
    let mut unknown: BTreeMap<String, (u64, usize)> = BTreeMap::new();
    let mut absent: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut seen = 0usize;
    let mut all_upstream = true;
    for (target, one) in targets.iter().zip(results) {
        let Some(one) = one else { continue };
        t.against.push(target.label.clone());
        all_upstream &= one.upstream;
        if let Some(note) = &one.note {
            let how = if one.upstream {
                "upstream's estimate stands"
            } else {
                "compiled as upstream does (object as dyn), sized from the schema"
            };
            t.failed_against
                .push(format!("{}: {how}: {note}", target.label));
        }
        match best {
            Some(b) if b.max >= one.cost.max => {
                best = Some(Cost::new(b.min.min(one.cost.min), b.max));
            }
            _ => {
                best = Some(Cost::new(
                    best.map_or(one.cost.min, |b| b.min.min(one.cost.min)),
                    one.cost.max,
                ));
                t.worst_against = Some(target.label.clone());
            }
        }
        for (f, impact) in &one.unbounded {
            let e = unbounded.entry(f.clone()).or_insert((0, seen));
            e.0 = e.0.max(*impact);
            seen += 1;
        }
        for (f, impact) in &one.unknown {
            let e = unknown.entry(f.clone()).or_insert((0, seen));
            e.0 = e.0.max(*impact);
            seen += 1;
        }
        for f in &one.absent {
            absent
                .entry(f.clone())
                .or_default()
                .push(target.label.clone());
        }
    }
    let c = best?;
    t.min_cost = c.min;
    t.max_cost = c.max;
    t.max_cost_unbounded = c.max == u64::MAX;
    if all_upstream {
        t.error = Some(format!(
            "does not compile against any matched schema, even with object as dyn ({}); the numbers are upstream's",
            t.failed_against.join("; ")
        ));
        t.failed_against.clear();
        t.worst_against = None;
        return Some(t);
    }
    t.unbounded_fields = ranked(unbounded, c.max, t.max_cost_unbounded);
    t.unknown_size_fields = ranked(unknown, c.max, t.max_cost_unbounded);
    t.absent_fields = absent
        .into_iter()
        .map(|(f, on)| format!("{f} (not in {})", on.join(", ")))
        .collect();
    Some(t)
}

/// Below this, no field is said to drive a cost (0.1% of the per-call limit).
const NEGLIGIBLE_COST: u64 = 1_000;

/// Fields that drive the cost (sizing one 0 takes at least 1% off `max`), the one that drives
/// it most first (then in reading order). When none does alone but `keep_all` (several fields
/// saturate the estimate together), all of them. None for a negligible cost.
fn ranked(fields: BTreeMap<String, (u64, usize)>, max: u64, keep_all: bool) -> Vec<String> {
    if max < NEGLIGIBLE_COST {
        return Vec::new();
    }
    let mut v: Vec<(String, u64, usize)> =
        fields.into_iter().map(|(f, (i, o))| (f, i, o)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
    let driving: Vec<String> = v
        .iter()
        .filter(|(_, impact, _)| *impact > 0 && *impact >= max / 100)
        .map(|(f, ..)| f.clone())
        .collect();
    if driving.is_empty() && keep_all {
        v.into_iter().map(|(f, ..)| f).collect()
    } else {
        driving
    }
}

/// Compiles and costs every input against one matched resource, variables first as upstream
/// compiles them. An expression that does not type-check against the schema (e.g. a list of
/// Containers concatenated with a list of EphemeralContainers, which only `dyn` accepts) is
/// compiled again as upstream compiles it (`object`, `oldObject` and `params` as `dyn`, the
/// variables with upstream's types), still sized from the schema; if even that fails, upstream's
/// estimate stands for it.
fn run_target(
    env: &Env,
    typing: &Typing,
    target: &Arc<TypedRoot>,
    inputs: &[Input<'_>],
    other: Option<CostOptions>,
) -> Vec<Option<Costed>> {
    let mut types = PolicyTypes::new();
    let mut upstream_types = PolicyTypes::new();
    let shapes = Shapes::default();
    let mut vars: HashMap<String, ShapeRef> = HashMap::new();
    let object_type = Type::object(target.type_name());
    let params_type = typing
        .params
        .as_ref()
        .map_or(Type::Dyn, |p| Type::object(p.type_name()));
    let mut out = Vec::with_capacity(inputs.len());
    for inp in inputs {
        crate::budget::at(inp.field_path);
        if let Some(v) = inp.variable {
            upstream_types.add_variable(v, inp.output.as_ref());
        }
        if !inp.compiled {
            if let Some(v) = inp.variable {
                types.add_variable(v, None);
            }
            out.push(None);
            continue;
        }
        let compile = |object: Type, params: Type, types: &PolicyTypes| {
            let vars = super::declare_vars(
                object,
                inp.has_params.then_some(params),
                inp.has_authorizer,
                inp.composition,
            );
            let provider = TypedProvider {
                policy: types,
                object: target,
                params: typing.params.as_deref(),
                absent: RefCell::new(Vec::new()),
            };
            let patch = PatchTypes { inner: &provider };
            let with: &dyn TypeProvider = if inp.patch_types { &patch } else { &provider };
            let compiled = env.compile_in(inp.source, &vars, with, inp.patch_types);
            (compiled, provider.absent.into_inner())
        };
        let (checked, absent, note) =
            match compile(object_type.clone(), params_type.clone(), &types) {
                (Ok(c), absent) => (Some(c), absent, None),
                (Err(e), _) => {
                    let typed_error = format!("compilation failed: {}", e.0);
                    match compile(Type::Dyn, Type::Dyn, &upstream_types) {
                        (Ok(c), absent) => (Some(c), absent, Some(typed_error)),
                        (Err(_), _) => (None, Vec::new(), Some(typed_error)),
                    }
                }
            };
        let Some(checked) = checked else {
            if let Some(v) = inp.variable {
                types.add_variable(v, None);
                vars.insert(v.to_string(), Shape::unknown(format!("variables.{v}")));
            }
            // Upstream's estimate, compared where it was made.
            let one = One {
                cost: inp.upstream,
                unbounded: Vec::new(),
                unknown: Vec::new(),
                absent: Vec::new(),
                note,
                upstream: true,
            };
            out.push(Some(Costed {
                theirs: Some(one.clone()),
                mine: one,
            }));
            continue;
        };
        let ctx = Ctx {
            object: target,
            params: typing.params.as_ref(),
            namespace: typing.namespace.as_ref(),
            vars: &vars,
            shapes: &shapes,
            iters: HashMap::new(),
            cost_options: env.cost_options(),
            minor: env.minor,
        };
        let theirs = other.and_then(|o| {
            cost::aside(|| {
                let mut one = cost_one(&checked, &ctx, o, absent.clone());
                one.note = note.clone();
                one
            })
        });
        let mut one = cost_one(&checked, &ctx, ctx.cost_options, absent);
        one.note = note;
        if let Some(v) = inp.variable {
            let shape = shape_of(&checked, checked.expr(), &ctx);
            types.add_variable(v, Some(checked.output_type()));
            vars.insert(v.to_string(), shape);
        }
        out.push(Some(Costed { mine: one, theirs }));
    }
    out
}

/// What the size source resolves paths against.
struct Ctx<'a> {
    object: &'a Arc<TypedRoot>,
    params: Option<&'a Arc<TypedRoot>>,
    namespace: Option<&'a Arc<TypedRoot>>,
    vars: &'a HashMap<String, ShapeRef>,
    shapes: &'a Shapes,
    /// Iteration variables (by name) → what their ranges' elements may hold, for ranges that
    /// the estimator keeps no path for (`(a + b).all(x, ...)`, literals).
    iters: HashMap<String, ShapeRef>,
    /// The estimator of the minor being followed.
    cost_options: CostOptions,
    minor: &'static Minor,
}

impl Ctx<'_> {
    /// The iteration variables of `checked`, outer comprehensions first so that inner ranges
    /// can read outer variables. A name bound by several comprehensions holds any of their
    /// elements.
    fn with_iteration_variables(mut self, checked: &CheckedExpr) -> Self {
        let mut comprehensions = Vec::new();
        checked.expr().walk(&mut |e: &Expr| {
            if let ExprKind::Comprehension(c) = &e.kind
                && c.iter_var2.is_none()
                && !c.iter_var.starts_with('@')
                && !c.iter_var.starts_with('#')
            {
                comprehensions.push(c);
            }
        });
        for c in comprehensions {
            let elem = match checked.type_of(c.iter_range.id).kind() {
                Kind::List => "@items",
                _ => "@keys",
            };
            let range = shape_of(checked, &c.iter_range, &self);
            let shape = self.shapes.step(&range, elem);
            let merged = match self.iters.remove(&c.iter_var) {
                Some(prev) => Shape::one_of(vec![prev, shape]),
                None => shape,
            };
            self.iters.insert(c.iter_var.clone(), merged);
        }
        self
    }
}

/// `checked`'s cost on `ctx`'s resource with `cost_options`, and the fields that drive it.
fn cost_one(
    checked: &CheckedExpr,
    ctx: &Ctx<'_>,
    cost_options: CostOptions,
    absent: Vec<String>,
) -> One {
    let ctx = &Ctx {
        object: ctx.object,
        params: ctx.params,
        namespace: ctx.namespace,
        vars: ctx.vars,
        shapes: ctx.shapes,
        iters: HashMap::new(),
        cost_options,
        minor: ctx.minor,
    }
    .with_iteration_variables(checked);
    // The estimate with the schemas' sizes (and `capped` sized 0), and the fields it read them
    // from.
    let estimate_sized = |capped: Option<&str>| {
        let sizes = TypedSizes {
            ctx,
            capped,
            seen: RefCell::new(Seen::default()),
        };
        let estimator = KubernetesEstimator {
            sizes: Some(&sizes),
            minor: ctx.minor,
        };
        let cost = estimate(checked, &estimator, ctx.cost_options);
        (cost, sizes.seen.into_inner())
    };
    let (cost, seen) = estimate_sized(None);
    let mut impacts: HashMap<&str, u64> = HashMap::new();
    let mut one = One {
        cost,
        unbounded: Vec::new(),
        unknown: Vec::new(),
        absent,
        note: None,
        upstream: false,
    };
    let mut listed: HashMap<(Leaf, &str), usize> = HashMap::new();
    for (leaf, read, origin) in &seen.list {
        // Each read is measured by estimating again with it sized 0: the first
        // MEASURED_READS of them, so that an expression reading thousands of fields costs a
        // bounded number of estimates; the others are listed, as driving nothing measured.
        if !impacts.contains_key(read.as_str()) && impacts.len() >= MEASURED_READS {
            impacts.insert(read, 0);
        }
        let impact = *impacts.entry(read).or_insert_with(|| {
            let (capped, _) = estimate_sized(Some(read));
            cost.max.saturating_sub(capped.max)
        });
        let list = match leaf {
            Leaf::Unbounded => &mut one.unbounded,
            Leaf::Unknown => &mut one.unknown,
        };
        match listed.get(&(*leaf, origin.as_str())) {
            Some(&i) => list[i].1 = list[i].1.max(impact),
            None => {
                listed.insert((*leaf, origin), list.len());
                list.push((origin.clone(), impact));
            }
        }
    }
    one
}

/// How many distinct reads of an expression get their impact on its cost measured.
const MEASURED_READS: usize = 32;

/// The checker's view: the policy's own object types (`request`, `namespaceObject`,
/// `variables`) and the schema types of `object` and `params`. A field a schema object does not
/// declare is `dyn` (recorded as absent unless the object keeps unknown fields).
struct TypedProvider<'a> {
    policy: &'a PolicyTypes,
    object: &'a TypedRoot,
    params: Option<&'a TypedRoot>,
    absent: RefCell<Vec<String>>,
}

impl TypeProvider for TypedProvider<'_> {
    fn has_struct_type(&self, name: &str) -> bool {
        self.policy.has_struct_type(name)
            || self.object.provider.has_struct_type(name)
            || self
                .params
                .is_some_and(|p| p.provider.has_struct_type(name))
    }

    fn field_type(&self, struct_name: &str, field: &str) -> Option<Type> {
        if self.policy.has_struct_type(struct_name) {
            return self.policy.field_type(struct_name, field);
        }
        let roots = [(Some(self.object), "object"), (self.params, "params")];
        for (root, var) in roots {
            let Some(root) = root else { continue };
            if !root.provider.has_struct_type(struct_name) {
                continue;
            }
            if let Some(t) = root.provider.field_type(struct_name, field) {
                return Some(t);
            }
            if !root.is_open(struct_name) {
                let path = display_type_path(root, var, struct_name);
                let f = format!("{path}.{}", unescape(field));
                let mut a = self.absent.borrow_mut();
                if !a.contains(&f) {
                    a.push(f);
                }
            }
            return Some(Type::Dyn);
        }
        None
    }
}

/// `object.spec.containers[*]` for the type `apps/v1.Deployment.spec.containers.@idx`.
fn display_type_path(root: &TypedRoot, var: &str, struct_name: &str) -> String {
    let rest = struct_name
        .strip_prefix(root.type_name())
        .unwrap_or(struct_name);
    let mut out = var.to_string();
    for seg in rest.split('.').filter(|s| !s.is_empty()) {
        match seg {
            "@idx" | "@elem" => out.push_str("[*]"),
            s => {
                out.push('.');
                out.push_str(&unescape(s));
            }
        }
    }
    out
}

/// What a variable's value may hold: followed through selects, `?:`, `+`, indexing, list and
/// map literals and other variables; anything else is unknown.
fn shape_of(checked: &CheckedExpr, e: &Expr, ctx: &Ctx<'_>) -> ShapeRef {
    crate::budget::charge(1);
    match &e.kind {
        ExprKind::Ident(n) => match n.as_str() {
            "object" | "oldObject" => Shape::root(ctx.object, n, true),
            "params" => match ctx.params {
                Some(p) => Shape::root(p, "params", true),
                None => Shape::unknown("params".into()),
            },
            "namespaceObject" => match ctx.namespace {
                Some(ns) => Shape::root(ns, "namespaceObject", false),
                None => Shape::unknown(String::new()),
            },
            _ => ctx
                .iters
                .get(n)
                .cloned()
                .unwrap_or_else(|| Shape::unknown(String::new())),
        },
        ExprKind::Select {
            operand,
            field,
            test_only: false,
        } => {
            if matches!(&operand.kind, ExprKind::Ident(n) if n == "variables") {
                return ctx
                    .vars
                    .get(field)
                    .cloned()
                    .unwrap_or_else(|| Shape::unknown(format!("variables.{field}")));
            }
            ctx.shapes.step(&shape_of(checked, operand, ctx), field)
        }
        ExprKind::Call {
            function,
            target: None,
            args,
        } => match (function.as_str(), args.as_slice()) {
            ("_?_:_", [_, a, b]) => {
                Shape::one_of(vec![shape_of(checked, a, ctx), shape_of(checked, b, ctx)])
            }
            ("_+_", [a, b]) => {
                Shape::concat(vec![shape_of(checked, a, ctx), shape_of(checked, b, ctx)])
            }
            ("_[_]", [a, _]) => {
                let elem = match checked.type_of(a.id).kind() {
                    Kind::List => "@items",
                    _ => "@values",
                };
                ctx.shapes.step(&shape_of(checked, a, ctx), elem)
            }
            _ => Shape::unknown(String::new()),
        },
        ExprKind::Literal(Literal::String(s)) => {
            let n = s.chars().count() as u64;
            Shape::fixed(Size::new(n, n))
        }
        ExprKind::Literal(Literal::Bytes(b)) => {
            let n = b.len() as u64;
            Shape::fixed(Size::new(n, n))
        }
        ExprKind::Literal(_) => Shape::fixed(Size::new(1, 1)),
        ExprKind::List { elements, .. } => Shape::literal(
            elements.len() as u64,
            Shape::one_of(elements.iter().map(|x| shape_of(checked, x, ctx)).collect()),
            None,
        ),
        ExprKind::Map { entries } => Shape::literal(
            entries.len() as u64,
            Shape::one_of(
                entries
                    .iter()
                    .map(|x| shape_of(checked, &x.value, ctx))
                    .collect(),
            ),
            Some(Shape::one_of(
                entries
                    .iter()
                    .map(|x| shape_of(checked, &x.key, ctx))
                    .collect(),
            )),
        ),
        _ => Shape::unknown(String::new()),
    }
}

/// The fields sizes were read from: (kind, the path as the expression reads it, the field it
/// comes from), in reading order, each once.
#[derive(Default)]
struct Seen {
    list: Vec<(Leaf, String, String)>,
    index: HashSet<(Leaf, String, String)>,
}

impl Seen {
    fn add(&mut self, leaf: Leaf, read: &str, origin: &str) {
        let e = (leaf, read.to_string(), origin.to_string());
        if self.index.insert(e.clone()) {
            self.list.push(e);
        }
    }
}

/// The typed size estimator: dispatches on the first element of a node's path.
struct TypedSizes<'a> {
    ctx: &'a Ctx<'a>,
    /// A path (as read) sized 0, to measure how much of the cost it drives.
    capped: Option<&'a str>,
    seen: RefCell<Seen>,
}

/// Whether a node's size can change its cost.
fn size_matters(t: &Type) -> bool {
    matches!(
        t.kind(),
        Kind::String | Kind::Bytes | Kind::List | Kind::Map | Kind::Dyn | Kind::Any
    )
}

/// The identifier a chain of selects starts from, and how many selects there are.
fn root_ident(e: &Expr) -> Option<(&str, usize)> {
    let mut cur = e;
    let mut n = 0;
    loop {
        match &cur.kind {
            ExprKind::Ident(name) => return Some((name, n)),
            ExprKind::Select {
                operand,
                test_only: false,
                ..
            } => {
                n += 1;
                cur = operand;
            }
            _ => return None,
        }
    }
}

impl SizeSource for TypedSizes<'_> {
    fn estimate_size(&self, node: &AstNode<'_>) -> Option<Size> {
        let path = node.path_elems();
        let first = path.first()?;
        let ctx = self.ctx;
        let (mut shape, rest) = match &**first {
            "object" | "oldObject" => (Shape::root(ctx.object, first, true), &path[1..]),
            "params" => (
                match ctx.params {
                    Some(p) => Shape::root(p, "params", true),
                    None => Shape::unknown("params".into()),
                },
                &path[1..],
            ),
            "namespaceObject" => (
                Shape::root(ctx.namespace?, "namespaceObject", false),
                &path[1..],
            ),
            "variables" => {
                let name = path.get(1)?;
                (
                    ctx.vars
                        .get(&**name)
                        .cloned()
                        .unwrap_or_else(|| Shape::unknown(format!("variables.{name}"))),
                    &path[2..],
                )
            }
            "request" => (Shape::unknown(String::new()), &path[path.len()..]),
            // The elements of a range the estimator keeps no path for: found from the
            // iteration variable the node selects from.
            f if f.starts_with('@') => {
                let (var, selects) = root_ident(node.expr?)?;
                let shape = ctx.iters.get(var)?.clone();
                (shape, &path[path.len().checked_sub(selects)?..])
            }
            _ => return None,
        };
        let read = match node.expr.and_then(root_ident) {
            Some((var, selects)) if first.starts_with('@') && selects <= path.len() => {
                let mut named: Vec<Rc<str>> = vec![var.into()];
                named.extend_from_slice(&path[path.len() - selects..]);
                crate::schema::decltype::display_path(&named)
            }
            _ => crate::schema::decltype::display_path(&path),
        };
        if self.capped == Some(read.as_str()) {
            return Some(Size::new(0, 0));
        }
        for e in rest {
            shape = ctx.shapes.step(&shape, e);
        }
        if size_matters(&node.ty) {
            let mut seen = self.seen.borrow_mut();
            for (leaf, origin) in shape.leaves() {
                let origin = if origin.is_empty() { &read } else { origin };
                seen.add(*leaf, &read, origin);
            }
        }
        shape.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matched_resources_skip_wildcards_and_subresources() {
        let spec = json!({"matchConstraints": {"resourceRules": [
            {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods", "pods/exec", "*"]},
            {"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments", "pods"]},
            {"apiGroups": ["*"], "apiVersions": ["v1"], "resources": ["things"]},
            {"apiGroups": ["apps"], "apiVersions": ["*"], "resources": ["deployments"]}
        ]}});
        let (gvrs, skipped) = matched_resources(&spec);
        let names: Vec<String> = gvrs.iter().map(ToString::to_string).collect();
        assert_eq!(names, ["v1/pods", "apps/v1/deployments", "apps/v1/pods"]);
        assert_eq!(
            skipped,
            [
                "v1/pods/exec: subresource (not typed, as upstream's type checking)",
                "resourceRules[0]: v1/*: wildcard resources",
                "resourceRules[2]: wildcard apiGroups (any kind can be the object)",
                "resourceRules[3]: wildcard apiVersions (any version can be the object)",
            ]
        );
    }

    #[test]
    fn schema_needs_name_crds_not_built_in() {
        let vap = json!({"spec": {
            "paramKind": {"apiVersion": "rules.example.com/v1", "kind": "Limits"},
            "matchConstraints": {"resourceRules": [
                {"apiGroups": ["", "apps"], "apiVersions": ["v1"], "resources": ["pods", "deployments"]},
                {"apiGroups": ["stable.example.com"], "apiVersions": ["v1"],
                 "resources": ["widgets", "widgets/status"]},
                {"apiGroups": ["batch.example.com"], "apiVersions": ["v1", "v2"], "resources": ["jobs"]},
                {"apiGroups": ["networking.k8s.io"], "apiVersions": ["v1"], "resources": ["ingresses"]}
            ]}
        }});
        let needs = schema_needs(&vap);
        // Core and dotless groups cannot be CRDs; Ingress is built in; one name per resource.
        assert_eq!(
            needs.crds,
            ["jobs.batch.example.com", "widgets.stable.example.com"]
        );
        assert_eq!(
            needs.param_kind,
            Some(("rules.example.com".into(), "v1".into(), "Limits".into()))
        );
        let builtin_params =
            json!({"spec": {"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}});
        assert_eq!(schema_needs(&builtin_params), SchemaNeeds::default());
    }
}
