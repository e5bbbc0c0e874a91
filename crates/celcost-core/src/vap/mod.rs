//! ValidatingAdmissionPolicy: every expression compiled in the environment the API server uses
//! when the policy is written (k8s.io/apiserver pkg/admission/plugin/cel compile.go and
//! composition.go; k8s.io/kubernetes pkg/apis/admissionregistration/validation), costed as
//! cel-go estimates it there (no size estimator: `object`, `oldObject`, `params` are `dyn`), and
//! summed against the runtime budgets the way the runtime spends them.
//!
//! MutatingAdmissionPolicies (`mutating.rs`) share all of it, with their own compile sites
//! (mutations, in the environment with the patch types) and budgets.
//!
//! Beside it, beyond upstream (`typed.rs`): the same expressions with `object`/`oldObject` typed
//! from the schemas of the resources the policy matches and `params` from `paramKind`, costed
//! with sizes from those schemas (`ExpressionReport.typed`, `PolicyBudget.typed_*`). Upstream's
//! numbers and errors do not depend on it.

mod meta;
mod mutating;
mod shape;
mod typed;
mod types;

pub use mutating::{
    MapApiVersion, estimate_map, estimate_map_keeping_errors, estimate_map_with, map_api_version,
};

pub use typed::{SchemaNeeds, conversion_reads, matched_resources, param_kind, schema_needs};

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use crate::cel::ast::{Expr, ExprKind};
use crate::cel::checker::{CheckedExpr, TypeProvider};
use crate::cel::cost::{Cost, by_either_algorithm, estimate};
use crate::cel::env::{CheckerPanic, Env, JSONPATCH_TYPE, OBJECT_TYPE, PatchTypes};
use crate::cel::k8s_cost::KubernetesEstimator;
use crate::cel::types::Type;
use crate::cel::version::Version;
use crate::crd::fielderr::{BadValue, FieldError};
use crate::report::{ExpressionReport, ObjectReport, PER_CALL_LIMIT, PolicyBudget, TypedEstimate};
use crate::schema::catalog::SchemaCatalog;
use types::PolicyTypes;

/// Where an expression sits and how the API server compiles it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Site {
    MatchCondition,
    Variable,
    Validation,
    MessageExpression,
    AuditAnnotation,
    /// MutatingAdmissionPolicy `spec.mutations[*].applyConfiguration.expression`.
    ApplyConfiguration,
    /// MutatingAdmissionPolicy `spec.mutations[*].jsonPatch.expression`.
    JsonPatch,
}

impl Site {
    /// What the expression must evaluate to (the accessor's `ReturnTypes`): mutations
    /// `patch.ApplyConfigurationCondition` (`Object`) and `patch.JSONPatchCondition`
    /// (`list(JSONPatch)`).
    fn return_types(self) -> Vec<Type> {
        match self {
            Site::MatchCondition | Site::Validation => vec![Type::Bool],
            Site::MessageExpression => vec![Type::String],
            Site::AuditAnnotation => vec![Type::String, Type::Null],
            Site::Variable => vec![Type::Any],
            Site::ApplyConfiguration => vec![Type::object(OBJECT_TYPE)],
            Site::JsonPatch => vec![Type::list(Type::object(JSONPATCH_TYPE))],
        }
    }

    /// Whether the expression is compiled with the mutation patch types (`HasPatchTypes`).
    fn patch_types(self) -> bool {
        matches!(self, Site::ApplyConfiguration | Site::JsonPatch)
    }
}

/// Go `Type.String()` (not the checker's formatting): `null_type`, `google.protobuf.Timestamp`.
pub fn go_type_string(t: &Type) -> String {
    if let Type::TypeParam(n) = t {
        return format!("<{n}>");
    }
    let params = t.parameters();
    if params.is_empty() {
        return t.type_name().to_string();
    }
    let ps: Vec<String> = params.iter().map(go_type_string).collect();
    format!("{}({})", t.type_name(), ps.join(", "))
}

/// Why the API server refuses an expression, as `convertCELErrorToValidationError` reports it.
enum CompileFailure {
    /// `Invalid value: "<expression>": <detail>`.
    Invalid(String),
    /// `Internal error: <detail>` (program instantiation).
    Internal(String),
}

impl CompileFailure {
    /// The compile result's `Error.Detail`.
    fn detail(&self) -> &str {
        match self {
            CompileFailure::Invalid(d) | CompileFailure::Internal(d) => d,
        }
    }

    fn field_error(&self, fp: &str, expr: &str) -> FieldError {
        match self {
            CompileFailure::Invalid(d) => {
                FieldError::invalid(fp, BadValue::Str(expr.to_string()), d)
            }
            CompileFailure::Internal(d) => FieldError::internal(fp, d),
        }
    }
}

struct Compiled {
    report: ExpressionReport,
    checked: Option<CheckedExpr>,
    /// The API server's error for the expression: a compile failure, an output type the field
    /// does not accept, or a program that cannot be built (the expression is still costed for
    /// the last two).
    error: Option<CompileFailure>,
    /// How it was compiled, to compile it again typed.
    site: Site,
    source: String,
    has_params: bool,
    has_authorizer: bool,
    composition: bool,
    /// The variable's name, for `variables[*]`.
    variable: Option<String>,
    /// The API server's compiler panics on the expression.
    panic: Option<CheckerPanic>,
}

impl Compiled {
    /// The checked expression when the API server accepts it (compiled, of an accepted output
    /// type, with a program).
    fn accepted(&self) -> Option<&CheckedExpr> {
        self.checked.as_ref().filter(|_| self.error.is_none())
    }

    /// The names of `variables.<name>` the expression reads (none when it did not compile).
    fn variables_used(&self) -> BTreeSet<String> {
        self.checked
            .as_ref()
            .map(variables_used)
            .unwrap_or_default()
    }

    /// Upstream's estimate of the expression's most cost (0 when it has none).
    fn max_cost(&self) -> u64 {
        self.report.max_cost.unwrap_or(0)
    }

    /// The typed estimate of its most cost, or upstream's where it has none.
    fn typed_max_cost(&self) -> u64 {
        self.report
            .typed
            .as_ref()
            .map_or(self.max_cost(), |t: &TypedEstimate| t.max_cost)
    }
}

/// The first minor that serves `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicies
/// (k8s.io/api admissionregistration v1 in 1.30; before, only `v1beta1`, off by default, and
/// `v1alpha1`).
pub const VAP_V1_SINCE: Version = Version::new(1, 30);

/// Why Kubernetes `kubernetes` does not serve a ValidatingAdmissionPolicy of `api_version`, if
/// it does not: `v1` before 1.30.
pub fn vap_not_served(api_version: &str, kubernetes: Version) -> Option<String> {
    (api_version == "admissionregistration.k8s.io/v1" && kubernetes < VAP_V1_SINCE).then(|| {
        format!(
            "no matches for kind \"ValidatingAdmissionPolicy\" in version \"{api_version}\": \
             Kubernetes {kubernetes} does not serve admissionregistration.k8s.io/v1 (not served \
             before {VAP_V1_SINCE}; it serves v1beta1, off by default): no estimate"
        )
    })
}

/// Estimates one ValidatingAdmissionPolicy (admissionregistration v1 or v1beta1, as JSON), with
/// typed estimates from the built-in schemas.
pub fn estimate_vap(env: &Env, vap: &Value, source: &str) -> ObjectReport {
    estimate_vap_with(env, vap, source, &SchemaCatalog::new())
}

/// Estimates one ValidatingAdmissionPolicy: upstream's estimate, and the typed one from the
/// schemas of `catalog` (then the built-in ones) beside it.
pub fn estimate_vap_with(
    env: &Env,
    vap: &Value,
    source: &str,
    catalog: &SchemaCatalog,
) -> ObjectReport {
    estimate_vap_keeping_errors(env, vap, source, catalog).0
}

/// As [`estimate_vap_with`], with the field errors the report's `errors` are rendered from
/// (none where the API server panics: the report says that instead).
pub fn estimate_vap_keeping_errors(
    env: &Env,
    vap: &Value,
    source: &str,
    catalog: &SchemaCatalog,
) -> (ObjectReport, Option<Vec<FieldError>>) {
    let mut report = ObjectReport::on(
        vap,
        "ValidatingAdmissionPolicy",
        source,
        format!("v{}", env.kubernetes),
    );
    let name = report.name.clone();
    let k = env.kubernetes;
    let api_version = vap
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let Some(why) = vap_not_served(api_version, k) {
        report.error_parts = vec![crate::report::ErrorParts::other("", &why)];
        report.errors = vec![why];
        report.valid = false;
        return (report, None);
    }
    let mut errors: Vec<FieldError> = meta::validate_object_meta(vap.get("metadata"));
    let spec = vap.get("spec").unwrap_or(&Value::Null);
    errors.extend(meta::validate_spec(spec, k));
    let has_params = spec.get("paramKind").is_some_and(|p| !p.is_null());
    let list = |k: &str| -> &[Value] {
        spec.get(k)
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    };
    let variables = list("variables");
    let composition = !variables.is_empty();
    let mut types = PolicyTypes::new();

    let mut expressions = compile_conditions_and_variables(
        env,
        &mut types,
        list("matchConditions"),
        variables,
        has_params,
        &mut errors,
    );
    // The validations, messageExpressions and auditAnnotations: with `variables` declared when
    // the policy has some.
    let mut compile_at = |site: Site, kind: &str, fp: &str, expr: &str, authorizer: bool| {
        let declared = Declared {
            params: has_params,
            authorizer,
            variables: composition,
        };
        compile(env, &mut types, site, kind, fp, expr, declared)
    };
    let validations = list("validations");
    let audits = list("auditAnnotations");
    if validations.is_empty() && audits.is_empty() {
        errors.push(FieldError::required(
            "spec.validations",
            "validations or auditAnnotations must contain at least one item",
        ));
        errors.push(FieldError::required(
            "spec.auditAnnotations",
            "validations or auditAnnotations must contain at least one item",
        ));
    }
    compile_validations(validations, &mut compile_at, &mut errors, &mut expressions);
    compile_audit_annotations(
        audits,
        (&name, k),
        &mut compile_at,
        &mut errors,
        &mut expressions,
    );
    let (validation_cost, match_conditions_cost, audit_annotations_cost) =
        budgets(&expressions, Compiled::max_cost);
    report.policy_budget = Some(PolicyBudget {
        validation_cost,
        match_conditions_cost,
        audit_annotations_cost,
        ..Default::default()
    });
    let typing = typed::resolve(spec, catalog, env);
    if !typing.targets.is_empty() {
        add_typed_estimates(env, &typing, &mut expressions);
        if let Some(b) = report.policy_budget.as_mut() {
            let (validation, matches, audit) = budgets(&expressions, Compiled::typed_max_cost);
            b.typed_validation_cost = Some(validation);
            b.typed_match_conditions_cost = Some(matches);
            b.typed_audit_annotations_cost = Some(audit);
        }
    }
    report.typing = Some(typing.report);
    let panic = first_panic(&expressions);
    report.expressions = expressions.into_iter().map(|c| c.report).collect();
    report.valid = errors.is_empty();
    (report.errors, report.error_parts) = crate::crd::fielderr::render_all(&errors, k);
    if let Some((field_path, p)) = panic {
        report.set_apiserver_panic(&field_path, &p);
        return (report, None);
    }
    (report, Some(errors))
}

/// The string at key `k` of `v` ("" when absent).
fn str_at(v: &Value, k: &str) -> String {
    v.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A policy's validations: each expression and messageExpression compiled with `compile_at`
/// (site, kind, field path, text, whether `authorizer` is declared), their messages and
/// reasons checked as the API server checks them.
fn compile_validations(
    validations: &[Value],
    compile_at: &mut impl FnMut(Site, &str, &str, &str, bool) -> Compiled,
    errors: &mut Vec<FieldError>,
    expressions: &mut Vec<Compiled>,
) {
    let s = str_at;
    for (i, v) in validations.iter().enumerate() {
        let fp = format!("spec.validations[{i}].expression");
        let expr = s(v, "expression");
        if expr.trim().is_empty() {
            errors.push(FieldError::required(&fp, "expression is not specified"));
        } else {
            let c = compile_at(Site::Validation, "validation", &fp, &expr, true);
            push_error(errors, &c, &fp, &expr);
            expressions.push(c);
        }
        let me = s(v, "messageExpression");
        let mfp = format!("spec.validations[{i}].messageExpression");
        if !me.is_empty() && me.trim().is_empty() {
            errors.push(FieldError::invalid(
                &mfp,
                BadValue::Str(me.clone()),
                "must be non-empty if specified",
            ));
        } else if !me.trim().is_empty() {
            let c = compile_at(
                Site::MessageExpression,
                "messageExpression",
                &mfp,
                &me,
                false,
            );
            push_error(errors, &c, &mfp, &me);
            expressions.push(c);
        }
        let msg = s(v, "message");
        let msg_error = if !msg.is_empty() && msg.trim().is_empty() {
            Some("must be non-empty if specified")
        } else if msg.trim().contains('\n') || msg.trim().contains('\r') {
            Some("must not contain line breaks")
        } else {
            None
        };
        if let Some(e) = msg_error {
            let field = format!("spec.validations[{i}].message");
            errors.push(FieldError::invalid_string(&field, &msg, e));
        }
        if let Some(r) = v.get("reason").and_then(Value::as_str) {
            // `supportedValidationPolicyReason` (1.30-1.36): no `Unauthorized`.
            const REASONS: [&str; 3] = ["Forbidden", "Invalid", "RequestEntityTooLarge"];
            errors.extend(FieldError::unless_one_of(
                &format!("spec.validations[{i}].reason"),
                "v1.StatusReason",
                r,
                &REASONS,
            ));
        }
    }
}

/// A policy's auditAnnotations: each key checked (qualified with the policy's `name`, unique)
/// and each valueExpression compiled with `compile_at`.
fn compile_audit_annotations(
    audits: &[Value],
    (name, k): (&str, Version),
    compile_at: &mut impl FnMut(Site, &str, &str, &str, bool) -> Compiled,
    errors: &mut Vec<FieldError>,
    expressions: &mut Vec<Compiled>,
) {
    let s = str_at;
    let mut keys = BTreeSet::new();
    for (i, a) in audits.iter().enumerate() {
        let fp = format!("spec.auditAnnotations[{i}].valueExpression");
        let key = s(a, "key");
        if name.is_empty() {
            errors.push(FieldError::invalid(
                &format!("spec.auditAnnotations[{i}].key"),
                BadValue::Str(key.clone()),
                "requires metadata.name be non-empty",
            ));
        } else {
            errors.extend(meta::validate_qualified_name(
                &format!("{name}/{key}"),
                &format!("spec.auditAnnotations[{i}].key"),
                k,
            ));
        }
        if !keys.insert(key.clone()) {
            errors.push(FieldError::duplicate(
                &format!("spec.auditAnnotations[{i}].key"),
                BadValue::Str(key),
            ));
        }
        let expr = s(a, "valueExpression");
        let trimmed = expr.trim().to_string();
        if trimmed.is_empty() {
            errors.push(FieldError::required(
                &fp,
                "valueExpression is not specified",
            ));
            continue;
        }
        if trimmed.len() > 5 * 1024 {
            errors.push(FieldError::required(
                &fp,
                "must not exceed 5120 bytes in length",
            ));
            continue;
        }
        let c = compile_at(
            Site::AuditAnnotation,
            "auditAnnotation",
            &fp,
            &trimmed,
            true,
        );
        push_error(errors, &c, &fp, &expr);
        expressions.push(c);
    }
}

/// The first expression, in the order the API server compiles them, its compiler panics on.
fn first_panic(expressions: &[Compiled]) -> Option<(String, CheckerPanic)> {
    expressions
        .iter()
        .find_map(|c| c.panic.clone().map(|p| (c.report.field_path.clone(), p)))
}

/// The policy's budgets with the costs `max` gives (upstream's, or the typed ones), summed as
/// the runtime spends them: validations and messageExpressions with the variables they use
/// (transitively, each once), matchConditions, auditAnnotations with theirs.
fn budgets(expressions: &[Compiled], max: fn(&Compiled) -> u64) -> (u64, u64, u64) {
    let vars = Variables::of(expressions, max);
    let (v, v_used) = sites_cost(
        expressions,
        &[Site::Validation, Site::MessageExpression],
        max,
    );
    let (m, _) = sites_cost(expressions, &[Site::MatchCondition], max);
    let (a, a_used) = sites_cost(expressions, &[Site::AuditAnnotation], max);
    (
        v.saturating_add(vars.cost(v_used)),
        m,
        a.saturating_add(vars.cost(a_used)),
    )
}

/// The expressions at `sites`: their costs by `max` summed, and the variables they read.
fn sites_cost(
    expressions: &[Compiled],
    sites: &[Site],
    max: fn(&Compiled) -> u64,
) -> (u64, BTreeSet<String>) {
    let mut cost = 0u64;
    let mut used = BTreeSet::new();
    for c in expressions.iter().filter(|c| sites.contains(&c.site)) {
        cost = cost.saturating_add(max(c));
        used.extend(c.variables_used());
    }
    (cost, used)
}

/// A policy's variables by name: the cost `max` gives each and the variables it reads.
struct Variables<'c>(HashMap<&'c str, (u64, BTreeSet<String>)>);

impl<'c> Variables<'c> {
    fn of(expressions: &'c [Compiled], max: fn(&Compiled) -> u64) -> Self {
        let mut vars = HashMap::new();
        for c in expressions {
            if let Some(v) = &c.variable {
                vars.insert(v.as_str(), (max(c), c.variables_used()));
            }
        }
        Variables(vars)
    }

    /// The cost of the variables `used` names and of those they read, transitively, each once.
    fn cost(&self, used: BTreeSet<String>) -> u64 {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<String> = used.into_iter().collect();
        let mut cost = 0u64;
        while let Some(v) = stack.pop() {
            if seen.insert(v.clone())
                && let Some((m, deps)) = self.0.get(v.as_str())
            {
                cost = cost.saturating_add(*m);
                stack.extend(deps.iter().cloned());
            }
        }
        cost
    }
}

/// The variables of the compile environment (`compile.go` `createEnvForOpts`): upstream types
/// `object`, `oldObject` and `params` as `dyn`; the typed estimate from schemas.
fn declare_vars(
    object: Type,
    params: Option<Type>,
    has_authorizer: bool,
    composition: bool,
) -> Vec<(String, Type)> {
    let mut vars: Vec<(String, Type)> = vec![
        ("object".into(), object.clone()),
        ("oldObject".into(), object),
        (
            "namespaceObject".into(),
            Type::object("kubernetes.Namespace"),
        ),
        (
            "request".into(),
            Type::object("kubernetes.AdmissionRequest"),
        ),
    ];
    if let Some(p) = params {
        vars.push(("params".into(), p));
    }
    if has_authorizer {
        vars.push((
            "authorizer".into(),
            Type::object("kubernetes.authorization.Authorizer"),
        ));
        vars.push((
            "authorizer.requestResource".into(),
            Type::object("kubernetes.authorization.ResourceCheck"),
        ));
    }
    if composition {
        vars.push(("variables".into(), Type::object(types::VARIABLES_TYPE)));
    }
    vars
}

fn push_error(errors: &mut Vec<FieldError>, c: &Compiled, fp: &str, expr: &str) {
    if let Some(e) = &c.error {
        errors.push(e.field_error(fp, expr));
    }
}

/// `isCELIdentifier`: `[_a-zA-Z][_a-zA-Z0-9]*`, not a reserved word.
fn is_cel_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic());
    first_ok
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !crate::schema::decltype::CEL_RESERVED.contains(&s)
}

/// The names of `variables.<name>` the expression reads.
fn variables_used(c: &CheckedExpr) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    c.expr().walk(&mut |e: &Expr| {
        if let ExprKind::Select { operand, field, .. } = &e.kind
            && matches!(&operand.kind, ExprKind::Ident(n) if n == "variables")
        {
            out.insert(field.clone());
        }
    });
    out
}

/// What every policy compiles first: its `matchConditions`, with the stateless compiler (no
/// `variables`), then its `variables`, in the composited environment, each declared for the
/// expressions after it (`CompileAndStoreVariable`: its output type, or `dyn` when it was
/// refused). Both with `authorizer` declared; one with no expression is a field error.
fn compile_conditions_and_variables(
    env: &Env,
    types: &mut PolicyTypes,
    match_conditions: &[Value],
    variables: &[Value],
    has_params: bool,
    errors: &mut Vec<FieldError>,
) -> Vec<Compiled> {
    let compile_reported = |types: &mut PolicyTypes,
                            errors: &mut Vec<FieldError>,
                            site: Site,
                            kind: &str,
                            fp: &str,
                            expr: &str| {
        let declared = Declared {
            params: has_params,
            authorizer: true,
            variables: site == Site::Variable,
        };
        let c = compile(env, types, site, kind, fp, expr, declared);
        push_error(errors, &c, fp, expr);
        c
    };
    let mut compiled = Vec::new();
    for (i, mc) in match_conditions.iter().enumerate() {
        let fp = format!("spec.matchConditions[{i}].expression");
        let expr = mc
            .get("expression")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim();
        if expr.is_empty() {
            errors.push(FieldError::required(&fp, ""));
            continue;
        }
        let kind = "matchCondition";
        compiled.push(compile_reported(
            types,
            errors,
            Site::MatchCondition,
            kind,
            &fp,
            expr,
        ));
    }
    for (i, v) in variables.iter().enumerate() {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();
        let fp = format!("spec.variables[{i}].expression");
        let (vname, expr) = (s("name"), s("expression"));
        if vname.trim().is_empty() {
            errors.push(FieldError::required(
                &format!("spec.variables[{i}].name"),
                "name is not specified",
            ));
        } else if !is_cel_identifier(vname) {
            errors.push(
                FieldError::invalid(
                    &format!("spec.variables[{i}].name"),
                    BadValue::Str(vname.to_string()),
                    "must be a valid CEL identifier",
                )
                .repeating_before_1_34("name is not a valid CEL identifier"),
            );
        }
        if expr.trim().is_empty() {
            errors.push(FieldError::required(&fp, "expression is not specified"));
            continue;
        }
        let kind = format!("variable:{vname}");
        let mut c = compile_reported(types, errors, Site::Variable, &kind, &fp, expr);
        c.variable = Some(vname.to_string());
        let out = c.accepted().map(|ch| ch.output_type().clone());
        types.add_variable(vname, out.as_ref());
        compiled.push(c);
    }
    compiled
}

/// The variables a policy expression's environment declares besides the request's (apiserver
/// `plugin/cel`'s `OptionalVariableDeclarations`, and the composited environment's `variables`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Declared {
    /// `params`: the policy has a `paramKind`.
    pub params: bool,
    /// `authorizer`: every site but a messageExpression.
    pub authorizer: bool,
    /// `variables`: a policy with variables (and the variables themselves).
    pub variables: bool,
}

fn compile(
    env: &Env,
    types: &mut PolicyTypes,
    site: Site,
    kind: &str,
    field_path: &str,
    expr: &str,
    declared: Declared,
) -> Compiled {
    let Declared {
        params: has_params,
        authorizer: has_authorizer,
        variables: composition,
    } = declared;
    crate::budget::at(field_path);
    let vars = declare_vars(
        Type::Dyn,
        has_params.then_some(Type::Dyn),
        has_authorizer,
        composition,
    );
    let patch_types = site.patch_types();
    let mut env_name =
        format!("NewExpressions,hasParams={has_params},hasAuthorizer={has_authorizer}");
    if patch_types {
        env_name.push_str(",hasPatchTypes=true");
    }
    let mut report = ExpressionReport {
        field_path: field_path.to_string(),
        kind: kind.to_string(),
        expression: expr.to_string(),
        env: env_name,
        per_call_limit: PER_CALL_LIMIT,
        ..Default::default()
    };
    let patch = PatchTypes { inner: types };
    let provider: &dyn TypeProvider = if patch_types { &patch } else { types };
    let mut panic = None;
    let ((checked, error), (rules, libraries)) =
        crate::cel::version::consulted::tracking_all(|| {
            match env.compile_in(expr, &vars, provider, patch_types) {
                Err(e) => {
                    let msg = if e.1.is_some() {
                        e.0
                    } else {
                        format!("compilation failed: {}", e.0)
                    };
                    panic = e.1;
                    (None, Some(CompileFailure::Invalid(msg)))
                }
                Ok(checked) => {
                    let error = accept_and_cost(env, site, &checked, &mut report);
                    (Some(checked), error)
                }
            }
        });
    report.consulted = crate::report::Consulted { rules, libraries };
    if let Some(e) = &error {
        // Whether it does not compile or is refused after (wrong output type, program
        // instantiation), the compile result holds only the error (`CompileCELExpression`'s
        // `resultError`: no program, no output type), so the expression has no cost.
        report.compile_error = Some(e.detail().to_string());
    }
    Compiled {
        report,
        checked,
        error,
        site,
        source: expr.to_string(),
        has_params,
        has_authorizer,
        composition,
        variable: None,
        panic,
    }
}

/// The policy compiler's wrong-output-type error rule, with the other error-wording rules in
/// `crd::fielderr`.
pub use crate::crd::fielderr::output_type_errors_name_the_type;

/// The typed estimate of every compiled expression of a policy (validating or mutating), from
/// the schemas `typing` found.
fn add_typed_estimates(env: &Env, typing: &typed::Typing, expressions: &mut [Compiled]) {
    let inputs: Vec<typed::Input<'_>> = expressions
        .iter()
        .map(|c| typed::Input {
            field_path: &c.report.field_path,
            source: &c.source,
            has_params: c.has_params,
            has_authorizer: c.has_authorizer,
            composition: c.composition,
            patch_types: c.site.patch_types(),
            variable: c.variable.as_deref(),
            compiled: c.accepted().is_some(),
            upstream: Cost::new(
                c.report.min_cost.unwrap_or(0),
                c.report.max_cost.unwrap_or(0),
            ),
            output: c.accepted().map(|ch| ch.output_type().clone()),
        })
        .collect();
    let estimates = typed::estimate_typed(env, typing, &inputs);
    drop(inputs);
    for (c, t) in expressions.iter_mut().zip(estimates) {
        c.report.typed = t;
    }
}

/// Upstream's checks of a compiled expression (its output type, then its program) and, when it
/// passes them, its estimate into `report`.
fn accept_and_cost(
    env: &Env,
    site: Site,
    checked: &CheckedExpr,
    report: &mut ExpressionReport,
) -> Option<CompileFailure> {
    let out = checked.output_type().clone();
    let returns = site.return_types();
    if !returns.iter().any(|r| out.is_exact(r) || *r == Type::Any) {
        let expected = if returns.len() == 1 {
            go_type_string(&returns[0])
        } else {
            let names: Vec<String> = returns.iter().map(go_type_string).collect();
            format!("one of [{}]", names.join(" "))
        };
        let msg = if output_type_errors_name_the_type(env.kubernetes) {
            format!(
                "must evaluate to {expected} but got {}",
                go_type_string(&out)
            )
        } else {
            format!("must evaluate to {expected}")
        };
        return Some(CompileFailure::Invalid(msg));
    }
    if let Some(e) = env.program_error(checked) {
        // Only once the output type is accepted, as upstream builds the program after that
        // check; the policy is refused on create.
        return Some(CompileFailure::Internal(format!(
            "program instantiation failed: {e}"
        )));
    }
    report.output_type = go_type_string(&out);
    let est = by_either_algorithm(env.cost_options(), |opts| {
        let embedder = KubernetesEstimator {
            sizes: None,
            minor: env.minor,
        };
        estimate(checked, &embedder, opts)
    });
    report.min_cost = Some(est.min);
    report.max_cost = Some(est.max);
    report.max_cost_unbounded = Some(est.max == u64::MAX);
    report.max_cost_exceeds_per_call_limit = Some(est.max > PER_CALL_LIMIT);
    None
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::Estimator;
    use crate::cel::decls::Version;
    use crate::fixtures::{match_resource, policy};
    use crate::report::ObjectReport;

    /// The ValidatingAdmissionPolicy `p`, failing closed on `CREATE`s of `resource` (of the API
    /// group `group`), with the spec fields `fields` besides.
    fn vap(group: &str, resource: &str, fields: Value) -> Value {
        let mut spec = json!({
            "failurePolicy": "Fail",
            "matchConstraints": match_resource(group, resource, &["CREATE"]),
        });
        let fields = fields.as_object().expect("spec fields").clone();
        spec.as_object_mut().unwrap().extend(fields);
        policy("ValidatingAdmissionPolicy", "p", spec)
    }

    /// The estimate of `vap` in Kubernetes 1.`minor`.
    fn estimate(vap: &Value, minor: u32) -> ObjectReport {
        Estimator::new(Version::new(1, minor))
            .estimate(vap, "test")
            .unwrap()
    }

    #[test]
    fn details_name_their_field_before_1_34() {
        let vap = vap(
            "",
            "pods",
            json!({
                "variables": [{"name": "a-b", "expression": "1"}],
                "validations": [
                    {"expression": "true", "message": " "},
                    {"expression": "true", "message": "a\nb"}
                ]
            }),
        );
        let errors = |minor| {
            let mut e = estimate(&vap, minor).errors;
            e.sort();
            e
        };
        assert_eq!(
            errors(33),
            [
                "spec.validations[0].message: Invalid value: \" \": message must be non-empty if specified",
                "spec.validations[1].message: Invalid value: \"a\\nb\": message must not contain line breaks",
                "spec.variables[0].name: Invalid value: \"a-b\": name is not a valid CEL identifier",
            ]
        );
        assert_eq!(
            errors(34),
            [
                "spec.validations[0].message: Invalid value: \" \": must be non-empty if specified",
                "spec.validations[1].message: Invalid value: \"a\\nb\": must not contain line breaks",
                "spec.variables[0].name: Invalid value: \"a-b\": must be a valid CEL identifier",
            ]
        );
    }

    /// A validation, messageExpression and auditAnnotation of the wrong output type: the API
    /// server's compile result is the error alone, so each expression carries it as its compile
    /// error with no cost; the other expressions keep theirs. Before 1.32 the detail does not
    /// name the type.
    #[test]
    fn wrong_output_types_are_compile_errors() {
        let vap = vap(
            "apps",
            "deployments",
            json!({
                "validations": [
                    {"expression": "'invalid value'"},
                    {"expression": "object.spec.replicas > 1",
                     "messageExpression": "object.spec.replicas"}
                ],
                "auditAnnotations": [{"key": "a", "valueExpression": "object.metadata.name"}]
            }),
        );
        for minor in 30..=36 {
            let r = estimate(&vap, minor);
            let named = minor >= 32;
            let want = |expected: &str, got: &str| {
                if named {
                    format!("must evaluate to {expected} but got {got}")
                } else {
                    format!("must evaluate to {expected}")
                }
            };
            let by_path = |fp: &str| r.expressions.iter().find(|e| e.field_path == fp).unwrap();
            for (fp, detail) in [
                ("spec.validations[0].expression", want("bool", "string")),
                (
                    "spec.validations[1].messageExpression",
                    want("string", "dyn"),
                ),
                (
                    "spec.auditAnnotations[0].valueExpression",
                    want("one of [string null_type]", "dyn"),
                ),
            ] {
                let e = by_path(fp);
                assert_eq!(
                    e.compile_error.as_deref(),
                    Some(detail.as_str()),
                    "1.{minor} {fp}"
                );
                assert_eq!((e.min_cost, e.max_cost), (None, None), "1.{minor} {fp}");
                assert!(
                    r.errors
                        .iter()
                        .any(|x| x.starts_with(fp) && x.ends_with(&detail)),
                    "1.{minor} {fp}: {:?}",
                    r.errors
                );
            }
            let ok = by_path("spec.validations[1].expression");
            assert_eq!(ok.compile_error, None);
            assert_eq!(ok.output_type, "bool");
            assert!(ok.min_cost.is_some() && ok.max_cost.is_some());
            assert!(!r.valid);
            assert_eq!(r.errors.len(), 3, "1.{minor}: {:?}", r.errors);
        }
    }

    /// `{?'app': object.data[?'app']}` makes the API server's CEL compiler panic (1.30-1.36):
    /// the request is aborted as a whole, so no field error is returned (not even the ones
    /// found before it) and the policy is refused.
    #[test]
    fn checker_panic_aborts_the_request() {
        let vap = vap(
            "",
            "configmaps",
            json!({
                "validations": [
                    {"expression": "1"},
                    {"expression": "{?'app': object.data[?'app']}.size() <= 1"},
                    {"expression": "[?object.x].size() == 0"}
                ]
            }),
        );
        for minor in 30..=36 {
            let r = estimate(&vap, minor);
            assert!(!r.valid, "1.{minor}");
            let p = r.apiserver_panic.as_ref().expect("panics");
            assert_eq!(p.field_path, "spec.validations[1].expression");
            assert_eq!(
                p.panic,
                "runtime error: index out of range [0] with length 0"
            );
            assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
            assert!(
                r.errors[0].starts_with("spec.validations[1].expression: the API server panics")
            );
            let e = &r.expressions[1];
            assert_eq!((e.min_cost, e.max_cost), (None, None));
            assert!(e.compile_error.is_some());
        }
    }
}
