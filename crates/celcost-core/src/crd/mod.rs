//! The CRD walk: which schemas the API server validates, the cardinality of every node, the
//! per-rule and per-schema accounting and the API server's field errors
//! (k8s.io/apiextensions-apiserver pkg/apis/apiextensions/validation, validation.go and
//! cel_validation.go). This is accounting, not CEL: CEL is reached through [`compile_rule`].

mod compile;
pub mod fielderr;
pub mod update;
pub(crate) mod validate;

use std::rc::Rc;
use std::sync::Arc;

use serde_json::Value;

pub use compile::Taken;
pub use compile::{
    RuleCompilation, compile_rule, compile_rule_in, rule_variables, with_compiles_kept,
};
pub(crate) use compile::{mark_rules_usable, with_rules_across_minors};
use fielderr::{CostError, FieldError};

use crate::cel::env::{CheckerPanic, Env};
use crate::report::{
    Drivers, HeldExpression, ObjectReport, PER_RULE_COST_LIMIT, PER_SCHEMA_COST_LIMIT, RuleReport,
    SchemaReport,
};
use crate::schema::decltype::{
    ConversionFlavor, ConversionReads, DeclType, DeclTypeProvider, MAX_REQUEST_SIZE_BYTES,
    schema_decl_type,
};
use crate::schema::{Schema, SchemaReadError};

/// A schema root the API server validates.
struct SchemaRoot<'a> {
    field_path: String,
    versions: Vec<String>,
    schema: Schema,
    /// The schema as given (for errors that render it whole).
    raw: &'a Value,
    status_enabled: bool,
}

/// Beside the other CEL checks of a CRD (the report model itself stays below the CEL layers).
impl crate::report::ObjectReport {
    /// The object makes the API server panic at `field_path`: the request fails as a whole, so
    /// the field errors the API server would have collected are never returned.
    pub fn set_apiserver_panic(&mut self, field_path: &str, p: &crate::cel::env::CheckerPanic) {
        self.valid = false;
        self.errors = vec![format!("{field_path}: {}", p.message())];
        self.error_parts = vec![crate::report::ErrorParts::other(field_path, &p.message())];
        self.apiserver_panic = Some(crate::report::ApiServerPanic {
            field_path: field_path.to_string(),
            panic: p.value.to_string(),
            site: p.site.to_string(),
        });
    }
}

/// What of a CRD every Kubernetes minor reads and checks alike: its schema roots and the checks
/// that involve no CEL. The minors of a range make it once
/// ([`crate::estimate::Shared`]).
pub struct Prepared<'a> {
    roots: Result<Vec<PreparedRoot<'a>>, SchemaReadError>,
    /// The object-level checks ([`validate::validate_crd_spec`]).
    spec_errors: Vec<FieldError>,
}

struct PreparedRoot<'a> {
    root: SchemaRoot<'a>,
    structure: validate::StructuralChecks,
    /// The CEL types of its nodes as the minors that estimate it convert them: each kept for
    /// the next minor that converts it alike ([`KeptTypes`]).
    types: std::cell::RefCell<KeptTypes>,
}

/// The node types ([`schema_decl_type`] and its [`DeclTypeProvider`]) the schema walks of one
/// schema root made, for every minor of a range that estimates the same CRD: a conversion
/// depends on the node, whether it is a resource root, and the minor's rules that the node's
/// schema reads ([`ConversionReads::flavor`]) and whether `metadata.name` is bounded
/// ([`crate::cel::minor::Minor::object_meta_name_max_length`]). A node's schema lives in its
/// [`Prepared`], so its address names it while the types are kept.
#[derive(Default)]
struct KeptTypes {
    /// What each node's conversion reads of a minor, by the node's address.
    reads: std::collections::HashMap<usize, ConversionReads>,
    done: std::collections::HashMap<TypeKey, KeptType>,
}

type TypeKey = (usize, bool, ConversionFlavor, bool);

/// A node type converted, and the steps converting it took.
struct KeptType {
    decl: Option<Arc<DeclType>>,
    provider: Option<Arc<DeclTypeProvider>>,
    steps: u64,
}

/// Node types one schema root keeps at most (the public corpus's largest CRD converts fewer
/// than 400 nodes with rules, on each minor).
const MAX_KEPT_TYPES: usize = 4096;

impl<'a> Prepared<'a> {
    pub fn new(crd: &'a Value) -> Prepared<'a> {
        let roots = schema_roots(crd).map(|roots| {
            roots
                .into_iter()
                .map(|root| {
                    crate::budget::at(&root.field_path);
                    let structure = validate::validate_structure(
                        &root.schema,
                        root.raw,
                        &root.field_path,
                        root.status_enabled,
                    );
                    PreparedRoot {
                        root,
                        structure,
                        types: Default::default(),
                    }
                })
                .collect()
        });
        let spec_errors = match roots {
            Ok(_) => validate::validate_crd_spec(crd),
            Err(_) => Vec::new(),
        };
        Prepared { roots, spec_errors }
    }
}

/// Estimates one CRD object (apiextensions.k8s.io/v1, as JSON).
pub fn estimate_crd(env: &Env, crd: &Value, source: &str) -> ObjectReport {
    estimate_prepared(env, crd, source, &Prepared::new(crd))
}

/// As [`estimate_crd`], with what every minor makes alike already made.
pub fn estimate_prepared(
    env: &Env,
    crd: &Value,
    source: &str,
    prepared: &Prepared<'_>,
) -> ObjectReport {
    estimate_write(env, crd, source, prepared, None, None).0
}

/// [`estimate_prepared`], with the field errors its `errors` are rendered from (`None` when
/// they are not: an API server panic replaces them). Another minor that judges the object
/// alike but words errors otherwise renders the same errors in its words
/// ([`fielderr::FieldError::render`]).
pub fn estimate_prepared_keeping_errors(
    env: &Env,
    crd: &Value,
    source: &str,
    prepared: &Prepared<'_>,
) -> (ObjectReport, Option<Vec<FieldError>>) {
    let mut kept = None;
    let (report, _) = estimate_write(env, crd, source, prepared, None, Some(&mut kept));
    (report, kept)
}

/// The CRD walk of a create (`update` = `None`) or of an update of a stored object
/// ([`update::UpdateRules`]): the report, and on update the expressions over the per-expression
/// limit that an unchanged schema lets through. `keep` (when given) receives the field errors
/// `errors` is rendered from.
fn estimate_write(
    env: &Env,
    crd: &Value,
    source: &str,
    prepared: &Prepared<'_>,
    update: Option<&update::UpdateRules>,
    keep: Option<&mut Option<Vec<FieldError>>>,
) -> (ObjectReport, Vec<HeldExpression>) {
    let mut report = ObjectReport::on(
        crd,
        "CustomResourceDefinition",
        source,
        format!("v{}", env.kubernetes),
    );
    let mut errors: Vec<FieldError> = Vec::new();
    let roots = match &prepared.roots {
        Ok(r) => r,
        Err(e) => {
            errors.push(FieldError::invalid(
                &e.path,
                fielderr::BadValue::Omit,
                &e.message,
            ));
            (report.errors, report.error_parts) = fielderr::render_all(&errors, env.kubernetes);
            report.valid = false;
            if let Some(k) = keep {
                *k = Some(errors);
            }
            return (report, Vec::new());
        }
    };
    errors.extend(prepared.spec_errors.iter().cloned());
    let mut panic = None;
    let mut held = Vec::new();
    for root in roots {
        let out = estimate_schema(env, root, update);
        errors.extend(out.errors);
        report.schemas.push(out.report);
        report.notes.extend(out.notes);
        held.extend(out.held);
        panic = panic.or(out.panic);
    }
    match update {
        None => {
            // The registry strategy's create starts from an empty status.
            let stored = validate::stored_versions_after_write(None, crd);
            errors.extend(validate::validate_stored_versions(
                stored.as_deref(),
                crd,
                env.kubernetes,
            ));
        }
        Some(u) => errors.extend(u.object_errors(crd, env.kubernetes)),
    }
    report.valid = errors.is_empty();
    (report.errors, report.error_parts) = fielderr::render_all(&errors, env.kubernetes);
    match panic {
        Some((field_path, p)) => report.set_apiserver_panic(&field_path, &p),
        None => {
            if let Some(k) = keep {
                *k = Some(errors);
            }
        }
    }
    (report, held)
}

/// The validated schema roots: one hoisted `spec.validation.openAPIV3Schema` when every version
/// has the same schema (the v1 → internal conversion), else one per version that has one.
fn schema_roots(crd: &Value) -> Result<Vec<SchemaRoot<'_>>, SchemaReadError> {
    let Some(versions) = crd.pointer("/spec/versions").and_then(Value::as_array) else {
        return Ok(vec![]);
    };
    if versions.is_empty() {
        return Ok(vec![]);
    }
    let names: Vec<String> = versions
        .iter()
        .map(|v| {
            v.get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    fn schema_of(v: &Value) -> Option<&Value> {
        v.get("schema").filter(|s| !s.is_null())
    }
    fn sub_of(v: &Value) -> Option<&Value> {
        v.get("subresources").filter(|s| !s.is_null())
    }
    let first = schema_of(&versions[0]);
    let identical = versions
        .iter()
        .all(|v| validate::same_validation(schema_of(v), first));
    let first_sub = sub_of(&versions[0]);
    let subs_identical = versions.iter().all(|v| sub_of(v) == first_sub);
    let status_of =
        |s: Option<&Value>| s.is_some_and(|s| s.get("status").is_some_and(|x| !x.is_null()));
    let any_status = versions.iter().any(|v| status_of(sub_of(v)));
    let mut roots = Vec::new();
    if identical {
        if let Some(s) = first
            .and_then(|s| s.get("openAPIV3Schema"))
            .filter(|s| !s.is_null())
        {
            let path = "spec.validation.openAPIV3Schema";
            roots.push(SchemaRoot {
                field_path: path.into(),
                versions: names,
                schema: Schema::from_json(s, path)?,
                raw: s,
                status_enabled: if subs_identical {
                    status_of(first_sub)
                } else {
                    any_status
                },
            });
        }
        return Ok(roots);
    }
    for (i, v) in versions.iter().enumerate() {
        if let Some(s) = schema_of(v)
            .and_then(|s| s.get("openAPIV3Schema"))
            .filter(|s| !s.is_null())
        {
            let path = format!("spec.versions[{i}].schema.openAPIV3Schema");
            roots.push(SchemaRoot {
                schema: Schema::from_json(s, &path)?,
                raw: s,
                field_path: path,
                versions: vec![names[i].clone()],
                status_enabled: if subs_identical {
                    status_of(first_sub)
                } else {
                    status_of(sub_of(v))
                },
            });
        }
    }
    Ok(roots)
}

/// The CEL context of one schema node (`CELSchemaContext`). The default is an unbounded node
/// outside every rule's scope, with no type information.
#[derive(Clone, Default)]
struct Ctx {
    /// Cardinality from ancestors' maxItems / maxProperties; `None` = unbounded.
    cardinality: Option<u64>,
    /// Whether the node is within the scope of CEL rules (it or an ancestor has some).
    in_scope: bool,
    /// The node's DeclType as its parent's type info provides it, and the provider of that
    /// type tree.
    decl: Option<Arc<DeclType>>,
    provider: Option<Arc<DeclTypeProvider>>,
    /// The name our conversion gives the node's type (`selfType.spec.a.@idx`): the API server
    /// names types relative to the node whose rules it compiles.
    type_path: TypePath,
    /// The parent's type information could not be built (which fails its children too).
    type_failed: bool,
    /// Ancestors (display paths) with no maxItems / maxProperties.
    unbounded_ancestors: Vec<String>,
    /// Whether oldSelf is forbidden below (the uncorrelatable path).
    old_self_forbidden: Option<String>,
    is_root: bool,
    inside_resource_meta: bool,
    /// Why defaults are forbidden below (`withForbiddenDefaults`), when they are.
    defaults_forbidden: Option<String>,
}

struct Walk<'e> {
    env: &'e Env,
    /// On update: the stored object's expressions, compiled in the stored-expressions
    /// environment.
    stored: Option<&'e update::StoredExpressions>,
    /// On update of a version whose schema is unchanged: no per-expression cost limit
    /// (`suppressPerExpressionCost`); what it lets through is kept in `held`.
    suppress_per_expression_cost: bool,
    held: Vec<HeldExpression>,
    /// The first rule (or messageExpression) the API server's compiler panics on.
    panic: Option<(String, CheckerPanic)>,
    total: u64,
    most_expensive: Vec<(String, u64)>,
    rules: Vec<RuleReport>,
    rule_count: u64,
    /// The structural schema's errors, and then the CEL ones (the API server lists them in
    /// that order).
    schema_errors: Vec<FieldError>,
    cel_errors: Vec<FieldError>,
    /// The node types kept for the schema root walked, where it is a [`Prepared`] one.
    types: Option<&'e std::cell::RefCell<KeptTypes>>,
}

/// Estimates one schema root.
fn estimate_schema(
    env: &Env,
    prepared: &PreparedRoot<'_>,
    update: Option<&update::UpdateRules>,
) -> SchemaOutcome {
    let root = &prepared.root;
    crate::budget::at(&root.field_path);
    let mut errors = Vec::new();
    let s = &root.schema;
    let checks = match update {
        // An update of an object with a non-structural schema checks no structure, no
        // default and no rule (`requireStructuralSchema` of the stored object).
        Some(u) if !u.require_structural() => validate::unstructured_root(&prepared.structure),
        _ => validate::validate_root(s, &root.field_path, &prepared.structure, env),
    };
    let cel_enabled = checks.cel_enabled;
    errors.extend(checks.errors);
    let notes: Vec<String> = checks
        .unevaluated_default_rules
        .iter()
        .map(|u| {
            format!(
                "verdict unknown: the API server evaluates a rule on a default that celcost could not evaluate (the verdict shown takes it as passing): {u}"
            )
        })
        .collect();
    let default_panic = checks.panic;
    let mut w = Walk::new(env);
    w.types = Some(&prepared.types);
    w.stored = update.map(update::UpdateRules::stored_expressions);
    // The schema every version shares is judged by the first version (`spec.version`).
    w.suppress_per_expression_cost =
        update.is_some_and(|u| root.versions.first().is_some_and(|v| u.schema_unchanged(v)));
    w.walk_root(s, &root.field_path, cel_enabled);
    errors.append(&mut w.schema_errors);
    errors.append(&mut w.cel_errors);
    if errors.is_empty() {
        errors.extend(checks.conversion_error);
    }
    if cel_enabled && w.total > PER_SCHEMA_COST_LIMIT {
        for (path, _) in &w.most_expensive {
            errors.push(
                FieldError::forbidden(
                    path,
                    "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
                )
                .about_cost(CostError::ContributedToTotal),
            );
        }
        errors.push(
            FieldError::forbidden(
                &root.field_path,
                &cost_error_message(
                    "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                    w.total,
                    PER_SCHEMA_COST_LIMIT,
                ),
            )
            .about_cost(CostError::Total),
        );
    }
    let report = SchemaReport {
        schema_field_path: root.field_path.clone(),
        location: None,
        versions: root.versions.clone(),
        total_cost: w.total,
        exceeds_total_limit: w.total > PER_SCHEMA_COST_LIMIT,
        rule_count: w.rule_count,
        rules: w.rules,
        ..SchemaReport::default()
    };
    let held = w
        .held
        .into_iter()
        .map(|h| HeldExpression {
            schema_field_path: root.field_path.clone(),
            versions: root.versions.clone(),
            ..h
        })
        .collect();
    SchemaOutcome {
        report,
        errors,
        // The defaults are validated before the rules are compiled.
        panic: default_panic.or(w.panic),
        notes,
        held,
    }
}

/// The costs of one schema root's rules and its total as a CRD's estimate gives them (its node
/// walk, rules compiled), and nothing else: no structural check, no default validated, no error
/// kept. For a search that weighs only the cost limits and re-costs a schema under many bounds
/// (headroom): the same walk as [`estimate_crd`]'s, without reading the CRD again.
pub fn schema_costs(env: &Env, schema: &Schema, field_path: &str) -> SchemaCosts {
    crate::budget::at(field_path);
    let mut w = Walk::new(env);
    w.walk_root(schema, field_path, true);
    SchemaCosts {
        rules: w.rules,
        total_cost: w.total,
    }
}

/// What [`schema_costs`] gives: the rules as the estimate reports them, and the schema's total.
#[derive(Clone, Debug, Default)]
pub struct SchemaCosts {
    pub rules: Vec<RuleReport>,
    pub total_cost: u64,
}

/// What estimating one schema root gives.
struct SchemaOutcome {
    report: SchemaReport,
    errors: Vec<FieldError>,
    /// The first rule the API server's compiler panics on.
    panic: Option<(String, CheckerPanic)>,
    /// What the report should say beside the verdict.
    notes: Vec<String>,
    /// On update: what an unchanged schema lets through.
    held: Vec<HeldExpression>,
}

/// `getCostErrorMessage`.
pub fn cost_error_message(name: &str, cost: u64, limit: u64) -> String {
    let factor = crate::report::format::budget_factor(cost, limit);
    format!(
        "{name} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

/// `multiplyWithOverflowGuard`.
pub fn multiply_with_overflow_guard(base: u64, card: u64) -> u64 {
    if base == 0 {
        0
    } else if u64::MAX / base < card {
        u64::MAX
    } else {
        base * card
    }
}

/// `extractMaxElements` of a parent: what its children's cardinality is multiplied by.
pub fn max_elements(s: &Schema) -> Option<u64> {
    match s.type_.as_str() {
        "object" => {
            if s.additional_properties.is_some() {
                s.max_properties.map(|m| m.max(0) as u64)
            } else {
                Some(1)
            }
        }
        "array" => s.max_items.map(|m| m.max(0) as u64),
        _ => Some(1),
    }
}

/// A type name as the API server builds it (`selfType.spec.a.@idx`), as a chain of steps that
/// shares its parent's: a schema `d` levels deep holds `O(d)` of them, not `O(d²)` bytes of
/// names. Rendered only for a compiler message.
#[derive(Clone, Debug, Default)]
struct TypePath(Option<Rc<TypeStep>>);

#[derive(Debug)]
struct TypeStep {
    parent: TypePath,
    step: String,
    /// A name of its own (`selfType`), not a step below `parent`.
    root: bool,
}

impl TypePath {
    fn root(name: &str) -> TypePath {
        TypePath(Some(Rc::new(TypeStep {
            parent: TypePath(None),
            step: name.to_string(),
            root: true,
        })))
    }

    fn child(&self, step: &str) -> TypePath {
        TypePath(Some(Rc::new(TypeStep {
            parent: self.clone(),
            step: step.to_string(),
            root: false,
        })))
    }

    fn is_self_type(&self) -> bool {
        matches!(&self.0, Some(t) if t.root && t.step == "selfType")
    }

    /// `parent.step`, as `format!("{parent}.{step}")` would have built it.
    fn render(&self) -> String {
        let mut steps = Vec::new();
        let mut at = self.0.as_ref();
        let mut rooted = false;
        while let Some(t) = at {
            steps.push(t.step.as_str());
            if t.root {
                rooted = true;
                break;
            }
            at = t.parent.0.as_ref();
        }
        let mut out = String::new();
        for (i, step) in steps.iter().rev().enumerate() {
            if i > 0 || !rooted {
                out.push('.');
            }
            out.push_str(step);
        }
        out
    }
}

/// A node's CEL type information (`CELSchemaContext.TypeInfo`).
struct NodeType {
    in_scope: bool,
    decl: Option<Arc<DeclType>>,
    provider: Option<Arc<DeclTypeProvider>>,
    /// See [`Ctx::type_path`].
    type_path: TypePath,
    /// The type information could not be built (`TypeInfo` returns an error).
    failed: bool,
}

impl NodeType {
    /// Type names in a compiler message as the API server names them: relative to this node
    /// (`selfType.spec.a` → `selfType` when compiling the rules of `spec.a`).
    fn relative_names(&self, msg: &str) -> String {
        if self.type_path.is_self_type() {
            msg.to_string()
        } else {
            msg.replace(&self.type_path.render(), "selfType")
        }
    }
}

impl<'e> Walk<'e> {
    /// The node's CEL type: within the scope of rules (this node or an ancestor has some), the
    /// parent's type info provides it when it has this child; otherwise it is converted from
    /// this node's schema (as a resource root at the root or an embedded resource).
    fn node_type(&self, s: &Schema, ctx: &Ctx, cel_enabled: bool) -> NodeType {
        let in_scope = ctx.in_scope || !s.x_validations.is_empty();
        if !cel_enabled || !in_scope || ctx.type_failed {
            return NodeType {
                in_scope,
                decl: None,
                provider: None,
                type_path: TypePath::default(),
                failed: cel_enabled && in_scope,
            };
        }
        if let (Some(d), Some(p)) = (&ctx.decl, &ctx.provider) {
            return NodeType {
                in_scope,
                decl: Some(d.clone()),
                provider: Some(p.clone()),
                type_path: ctx.type_path.clone(),
                failed: false,
            };
        }
        let is_root = ctx.is_root || s.x_embedded_resource;
        let (decl, provider) = self.converted(s, is_root);
        NodeType {
            in_scope,
            failed: decl.is_none(),
            decl,
            provider,
            type_path: TypePath::root("selfType"),
        }
    }

    /// The node's CEL type converted from its schema, and its provider: kept for the next
    /// minor that converts the node alike ([`KeptTypes`]), charged the steps it took.
    fn converted(
        &self,
        s: &Schema,
        is_root: bool,
    ) -> (Option<Arc<DeclType>>, Option<Arc<DeclTypeProvider>>) {
        let minor = self.env.minor;
        let convert = || {
            let decl = schema_decl_type(s, is_root, minor, "selfType");
            let provider = (decl.as_ref()).map(|d| Arc::new(DeclTypeProvider::new(&[d], minor)));
            (decl, provider)
        };
        let Some(types) = self.types else {
            return convert();
        };
        let at = s as *const Schema as usize;
        let key = {
            let mut kept = types.borrow_mut();
            let reads = *kept
                .reads
                .entry(at)
                .or_insert_with(|| ConversionReads::of(s));
            (
                at,
                is_root,
                reads.flavor(minor),
                minor.object_meta_name_max_length,
            )
        };
        if let Some(k) = types.borrow().done.get(&key)
            && crate::budget::spend_again(k.steps)
        {
            return (k.decl.clone(), k.provider.clone());
        }
        let ((decl, provider), steps) = crate::budget::counted(convert);
        let mut kept = types.borrow_mut();
        if kept.done.len() < MAX_KEPT_TYPES {
            kept.done.insert(
                key,
                KeptType {
                    decl: decl.clone(),
                    provider: provider.clone(),
                    steps,
                },
            );
        }
        (decl, provider)
    }

    fn child_ctx(&self, parent: &Schema, ctx: &Ctx, display: &str, ty: &NodeType) -> Ctx {
        let mut unbounded = ctx.unbounded_ancestors.clone();
        let cardinality = match (ctx.cardinality, max_elements(parent)) {
            (Some(c), Some(e)) => Some(multiply_with_overflow_guard_card(c, e)),
            (_, None) => {
                unbounded.push(display.to_string());
                None
            }
            (None, _) => None,
        };
        Ctx {
            cardinality,
            in_scope: ty.in_scope,
            decl: None,
            provider: ty.provider.clone(),
            type_path: TypePath::default(),
            type_failed: ty.failed,
            unbounded_ancestors: unbounded,
            old_self_forbidden: ctx.old_self_forbidden.clone(),
            is_root: false,
            inside_resource_meta: ctx.inside_resource_meta,
            defaults_forbidden: ctx.defaults_forbidden.clone(),
        }
    }

    /// A create's walk: no stored expressions, every limit applied.
    fn new(env: &'e Env) -> Walk<'e> {
        Walk {
            env,
            stored: None,
            suppress_per_expression_cost: false,
            held: Vec::new(),
            panic: None,
            total: 0,
            most_expensive: Vec::new(),
            rules: Vec::new(),
            rule_count: 0,
            schema_errors: Vec::new(),
            cel_errors: Vec::new(),
            types: None,
        }
    }

    /// Walks a schema root (`field_path`) from its root's context.
    fn walk_root(&mut self, s: &Schema, field_path: &str, cel_enabled: bool) {
        let ctx = Ctx {
            cardinality: Some(1),
            is_root: true,
            ..Ctx::default()
        };
        self.walk(
            s,
            &mut field_path.to_string(),
            &mut "^".to_string(),
            &ctx,
            cel_enabled,
        );
    }

    /// `fld` and `display` are the node's paths in buffers shared by the whole walk: a child
    /// appends its step and the parent truncates it afterwards, so a schema `d` levels deep
    /// holds `O(d)` bytes of paths, not `O(d²)`.
    fn walk(
        &mut self,
        s: &Schema,
        fld: &mut String,
        display: &mut String,
        ctx: &Ctx,
        cel_enabled: bool,
    ) {
        crate::budget::charge(1);
        let errors_before = self.schema_errors.len();
        let ty = self.node_type(s, ctx, cel_enabled);
        self.schema_errors.extend(validate::validate_node(
            s,
            fld,
            validate::NodeContext {
                defaults_forbidden: ctx.defaults_forbidden.as_deref(),
                inside_resource_meta: ctx.inside_resource_meta,
            },
        ));
        let (fld_len, display_len) = (fld.len(), display.len());
        if let Some(ap) = s.additional_properties_schema() {
            let mut c = self.child_ctx(s, ctx, display, &ty);
            if let Some(d) = &ty.decl {
                c.decl = d.elem().cloned();
                c.type_path = ty.type_path.child("@elem");
            }
            if ctx.inside_resource_meta {
                // Pruning without a value would be ambiguous there.
                c.defaults_forbidden =
                    Some("inside additionalProperties applying to object metadata".into());
            }
            fld.push_str(".additionalProperties");
            display.push_str("[*]");
            self.walk(ap, fld, display, &c, cel_enabled);
            fld.truncate(fld_len);
            display.truncate(display_len);
        }
        for (pname, prop) in &s.properties {
            let mut c = self.child_ctx(s, ctx, display, &ty);
            if let Some(d) = &ty.decl
                && let Some(e) = crate::schema::decltype::escape(pname)
            {
                c.decl = d.field(&e).cloned();
                c.type_path = ty.type_path.child(&e);
            }
            if c.old_self_forbidden.is_none()
                && !matches!(
                    s.x_map_type.as_deref(),
                    None | Some("granular") | Some("atomic")
                )
            {
                c.old_self_forbidden = Some(fld.clone());
            }
            if (ctx.is_root || s.x_embedded_resource)
                && matches!(pname.as_str(), "metadata" | "kind" | "apiVersion")
            {
                c.inside_resource_meta = true;
                if ctx.is_root {
                    c.defaults_forbidden = Some(format!("in top-level {pname}"));
                }
            }
            fld.push_str(".properties[");
            fld.push_str(pname);
            fld.push(']');
            display.push('.');
            display.push_str(pname);
            self.walk(prop, fld, display, &c, cel_enabled);
            fld.truncate(fld_len);
            display.truncate(display_len);
        }
        if let Some(items) = &s.items {
            let mut c = self.child_ctx(s, ctx, display, &ty);
            if let Some(d) = &ty.decl {
                c.decl = d.elem().cloned();
                c.type_path = ty.type_path.child("@idx");
            }
            if c.old_self_forbidden.is_none() && s.x_list_type.as_deref() != Some("map") {
                c.old_self_forbidden = Some(fld.clone());
            }
            fld.push_str(".items");
            display.push_str("[*]");
            self.walk(items, fld, display, &c, cel_enabled);
            fld.truncate(fld_len);
            display.truncate(display_len);
        }
        // not, allOf, oneOf, anyOf, definitions, array items, dependencies: their schema
        // errors count for this node, their rules never compile.
        for (m, mfld, mdisplay) in validate::nested_schemas(s, fld, display) {
            let c = Ctx {
                old_self_forbidden: ctx.old_self_forbidden.clone(),
                inside_resource_meta: ctx.inside_resource_meta,
                defaults_forbidden: ctx.defaults_forbidden.clone(),
                ..Ctx::default()
            };
            let (mut mfld, mut mdisplay) = (mfld, mdisplay);
            self.walk(m, &mut mfld, &mut mdisplay, &c, false);
        }
        if s.x_validations.is_empty() {
            return;
        }
        self.rule_count += s.x_validations.len() as u64;
        let subtree_ok = self.schema_errors.len() == errors_before;
        let compile = cel_enabled && subtree_ok;
        let decl = ty.decl.clone();
        let display_path = if display.as_str() == "^" {
            "^".to_string()
        } else {
            display.to_string()
        };
        if compile && decl.is_none() {
            self.cel_errors.push(FieldError::internal(
                &format!("{fld}.x-kubernetes-validations"),
                "internal error: failed to construct type information for x-kubernetes-validations rules: unable to convert structural schema to CEL declarations",
            ));
        }
        for (i, rule) in s.x_validations.iter().enumerate() {
            let rule_fld = format!("{fld}.x-kubernetes-validations[{i}].rule");
            crate::budget::at(&rule_fld);
            let mut r = RuleReport {
                path: display_path.clone(),
                node_field_path: fld.to_string(),
                rule_field_path: rule_fld.clone(),
                index: i as u64,
                rule: rule.rule.clone(),
                schema_max_cardinality: ctx.cardinality,
                message_expression: if rule.message_expression.is_empty() {
                    None
                } else {
                    Some(rule.message_expression.clone())
                },
                compiled_by_apiserver: compile,
                ..Default::default()
            };
            if !compile {
                self.rules.push(r);
                continue;
            }
            let (Some(decl), Some(provider)) = (decl.as_ref(), ty.provider.as_deref()) else {
                // The API server could not build the node's type information.
                r.compile_error = Some(
                    "internal error: failed to construct type information: unable to convert structural schema to CEL declarations".into(),
                );
                self.rules.push(r);
                continue;
            };
            let (mut cr, (rules, libraries)) = crate::cel::version::consulted::tracking_all(|| {
                let (rule_env, message_env) = match self.stored {
                    Some(st) => (
                        st.rule_env(self.env, &rule.rule),
                        st.message_env(self.env, &rule.message_expression),
                    ),
                    None => (self.env, self.env),
                };
                compile::compile_rule_at(rule_env, message_env, rule, decl, provider, Some(fld))
            });
            r.consulted = crate::report::Consulted { rules, libraries };
            if let Some(p) = cr.panic.take()
                && self.panic.is_none()
            {
                let at = if cr.error.is_some() {
                    rule_fld.clone()
                } else {
                    format!("{fld}.x-kubernetes-validations[{i}].messageExpression")
                };
                self.panic = Some((at, p));
            }
            if let Some(e) = &mut cr.error {
                e.detail = ty.relative_names(&e.detail);
            }
            if let Some(e) = &mut cr.message_error {
                *e = ty.relative_names(e);
            }
            let fallback = MAX_REQUEST_SIZE_BYTES as u64 / (decl.min_serialized_size as u64 + 1);
            r.max_cost = cr.max_cost;
            r.max_cardinality = if cr.error.is_none() { fallback } else { 0 };
            r.uses_old_self = cr.uses_old_self;
            r.cardinality_used = ctx.cardinality.unwrap_or(r.max_cardinality);
            r.cost = multiply_with_overflow_guard(cr.max_cost, r.cardinality_used);
            r.exceeds_cost_limit = r.cost > PER_RULE_COST_LIMIT;
            r.compile_error = cr.error.as_ref().map(|e| e.detail.clone());
            r.message_expression_cost = cr.message_expression_cost;
            r.message_expression_compile_error = cr.message_error.clone();
            if r.cost > PER_RULE_COST_LIMIT {
                let e = FieldError::forbidden(
                    &rule_fld,
                    &cost_error_message("estimated rule cost", r.cost, PER_RULE_COST_LIMIT),
                )
                .about_cost(CostError::Rule);
                if self.suppress_per_expression_cost {
                    self.hold(&r, "rule", &rule.rule, r.cost, &e);
                } else {
                    self.cel_errors.push(e);
                }
            }
            self.observe(&rule_fld, r.cost);
            if let Some(e) = &cr.error {
                if e.required {
                    self.cel_errors
                        .push(FieldError::required(&rule_fld, &e.detail));
                } else {
                    self.cel_errors.push(FieldError::invalid(
                        &rule_fld,
                        fielderr::BadValue::Go(validate::go_rule(rule)),
                        &e.detail,
                    ));
                }
            }
            let me_fld = format!("{fld}.x-kubernetes-validations[{i}].messageExpression");
            if let Some(me) = &cr.message_error {
                self.cel_errors.push(FieldError::invalid(
                    &me_fld,
                    fielderr::BadValue::Go(validate::go_rule(rule)),
                    me,
                ));
            } else if let Some(mc) = cr.message_expression_cost {
                if mc > PER_RULE_COST_LIMIT {
                    let e = FieldError::forbidden(
                        &me_fld,
                        &cost_error_message(
                            "estimated messageExpression cost",
                            mc,
                            PER_RULE_COST_LIMIT,
                        ),
                    )
                    .about_cost(CostError::MessageExpression);
                    if self.suppress_per_expression_cost {
                        self.hold(&r, "messageExpression", &rule.message_expression, mc, &e);
                    } else {
                        self.cel_errors.push(e);
                    }
                }
                self.observe(&me_fld, mc);
            }
            if cr.uses_old_self {
                if let Some(p) = &ctx.old_self_forbidden {
                    self.cel_errors.push(FieldError::invalid(
                        &rule_fld,
                        fielderr::BadValue::Str(rule.rule.clone()),
                        &format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {p}"),
                    ));
                }
            } else if let Some(b) = rule
                .optional_old_self
                .filter(|_| self.env.minor.optional_old_self)
            {
                self.cel_errors.push(FieldError::invalid(
                    &format!("{fld}.x-kubernetes-validations[{i}].optionalOldSelf"),
                    fielderr::BadValue::Bool(b),
                    "may not be set if oldSelf is not used in rule",
                ));
            }
            r.drivers = Drivers {
                unbounded_ancestors: if ctx.cardinality.is_none() {
                    ctx.unbounded_ancestors.clone()
                } else {
                    vec![]
                },
                unbounded_fields: cr
                    .unbounded_fields
                    .iter()
                    .map(|f| join_display(&display_path, f))
                    .collect(),
            };
            self.rules.push(r);
        }
    }

    /// An expression over the per-expression limit that an unchanged schema lets through.
    fn hold(&mut self, r: &RuleReport, what: &str, expression: &str, cost: u64, e: &FieldError) {
        self.held.push(HeldExpression {
            path: r.path.clone(),
            index: r.index,
            what: what.to_string(),
            expression: expression.to_string(),
            cost,
            error: e.render(self.env.kubernetes),
            ..HeldExpression::default()
        });
    }

    /// `TotalCost.ObserveExpressionCost`.
    fn observe(&mut self, path: &str, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < PER_SCHEMA_COST_LIMIT / 100 {
            return;
        }
        self.most_expensive.push((path.to_string(), cost));
        self.most_expensive.sort_by_key(|e| std::cmp::Reverse(e.1));
        self.most_expensive.truncate(4);
    }
}

pub fn multiply_with_overflow_guard_card(c: u64, e: u64) -> u64 {
    if c == 0 {
        0
    } else if u64::MAX / c < e {
        u64::MAX
    } else {
        c * e
    }
}

fn join_display(node: &str, rel: &str) -> String {
    if rel.is_empty() {
        node.to_string()
    } else if rel.starts_with('[') {
        format!("{node}{rel}")
    } else {
        format!("{node}.{rel}")
    }
}

#[cfg(test)]
mod kept_types_tests {
    use crate::cel::decls::Version;
    use crate::estimate::Estimator;
    use serde_json::{Value, json};

    /// The node types kept in a prepared CRD: each minor's estimate of it, made with them,
    /// is the one it makes alone; a minor that converts its schema as one before takes that
    /// one's types, and one that reads an enum string's size otherwise converts it again.
    #[test]
    fn node_types_are_converted_once_for_the_minors_that_convert_them_alike() {
        let crd = |enum_without_max_length: bool| {
            let mut mode = json!({"type": "string", "maxLength": 8, "enum": ["a", "b"]});
            if enum_without_max_length {
                mode.as_object_mut().unwrap().remove("maxLength");
            }
            crate::fixtures::widgets(json!({
                "type": "object",
                "properties": {"spec": {
                    "type": "object",
                    "x-kubernetes-validations": [{"rule": "self.mode != 'c'"}],
                    "properties": {"mode": mode},
                }},
            }))
        };
        let kept = |p: &super::Prepared<'_>| match &p.roots {
            Ok(roots) => roots
                .iter()
                .map(|r| r.types.borrow().done.len())
                .sum::<usize>(),
            Err(_) => 0,
        };
        for (enum_without_max_length, minors, converted) in [
            (false, [(1, 28), (1, 29)], [1, 1]),
            (true, [(1, 28), (1, 29)], [1, 2]),
            (true, [(1, 35), (1, 36)], [1, 1]),
        ] {
            let v: Value = crd(enum_without_max_length);
            let prepared = super::Prepared::new(&v);
            for ((major, minor), want) in minors.into_iter().zip(converted) {
                let e = Estimator::new(Version::new(major, minor));
                let with_kept = super::estimate_prepared(e.env(), &v, "w.yaml", &prepared);
                let alone = e.estimate_crd(&v, "w.yaml");
                assert_eq!(
                    serde_json::to_value(&with_kept).unwrap(),
                    serde_json::to_value(&alone).unwrap(),
                    "1.{minor}"
                );
                assert_eq!(
                    kept(&prepared),
                    want,
                    "1.{minor}, enum without maxLength: {enum_without_max_length}"
                );
            }
        }
    }
}
