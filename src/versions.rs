//! One object over a range of Kubernetes minors: the verdict per minor, the oldest minor that
//! accepts it, and every rule or expression whose cost or verdict changes between minors.
//!
//! Pure: the estimates come from one [`crate::Estimator`] per minor; this module compares their
//! reports.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use serde_json::Value;

use crate::Estimator;
use crate::cel::decls::{Declarations, Version};
use crate::cel::minor::Minor;
use crate::report::{ObjectReport, PER_RULE_COST_LIMIT, PER_SCHEMA_COST_LIMIT};

/// An object's verdict on one minor.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionVerdict {
    /// `v1.31`.
    pub kubernetes_version: String,
    /// Whether that minor's API server accepts the object on create.
    pub valid: bool,
    /// Set when the estimate stopped (work budget): nothing was judged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
    /// How many field errors that minor gives.
    pub error_count: usize,
    /// CRDs: the highest rule cost (× cardinality) and schema total; policies: the highest
    /// expression cost (upstream's estimate).
    pub highest_rule_cost: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub highest_total_cost: Option<u64>,
}

/// A rule, messageExpression, schema total or policy expression whose number or verdict is not
/// the same on every minor of the range.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionChange {
    /// `^.spec.cidrs[*] [0]` (a rule), `^.spec.cidrs[*] [0] messageExpression`,
    /// `spec.validation.openAPIV3Schema total`, or a policy expression's field path.
    pub unit: String,
    /// The expression, when the unit is one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub expression: String,
    /// The value on the first minor of the range, then on each minor where it changes.
    pub steps: Vec<VersionStep>,
}

/// A unit's value from one minor on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionStep {
    pub kubernetes_version: String,
    /// The cost compared with the unit's limit (absent when it does not compile there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<u64>,
    /// The limit it is compared with.
    pub limit: u64,
    /// Over the limit: the API server rejects the CRD (rules, totals), or the runtime would
    /// stop the expression (policies).
    pub exceeds_limit: bool,
    /// The compile error on that minor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_error: Option<String>,
}

/// An object's estimates over a range of minors.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionMatrix {
    /// Oldest first.
    pub verdicts: Vec<VersionVerdict>,
    /// The oldest minor of the range whose API server accepts the object (`v1.32`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oldest_accepting: Option<String>,
    /// Whether some minor rejects it while an older one accepts it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rejected_after_accepted: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<VersionChange>,
}

impl VersionMatrix {
    /// The verdicts and changes of one object's reports, one per minor, oldest first.
    pub fn of(reports: &[ObjectReport]) -> VersionMatrix {
        let verdicts: Vec<VersionVerdict> = reports.iter().map(verdict).collect();
        let oldest_accepting = verdicts
            .iter()
            .find(|v| v.valid)
            .map(|v| v.kubernetes_version.clone());
        let rejected_after_accepted = verdicts.iter().skip_while(|v| !v.valid).any(|v| !v.valid);
        // Every unit, in first-seen order, with its value on each minor.
        let mut order: Vec<(String, String)> = Vec::new();
        let mut values: BTreeMap<String, Vec<Option<VersionStep>>> = BTreeMap::new();
        for (i, r) in reports.iter().enumerate() {
            for (unit, expression, step) in units(r) {
                let slot = values.entry(unit.clone()).or_insert_with(|| {
                    order.push((unit.clone(), expression));
                    vec![None; reports.len()]
                });
                slot[i] = Some(step);
            }
        }
        let mut changes = Vec::new();
        for (unit, expression) in order {
            let per_minor = &values[&unit];
            let mut steps: Vec<VersionStep> = Vec::new();
            let mut last: Option<&Option<VersionStep>> = None;
            for (i, v) in per_minor.iter().enumerate() {
                let same = last.is_some_and(|l| same_value(l, v));
                if !same {
                    steps.push(v.clone().unwrap_or_else(|| VersionStep {
                        kubernetes_version: reports[i].kubernetes_version.clone(),
                        ..VersionStep::default()
                    }));
                }
                last = Some(v);
            }
            if steps.len() > 1 {
                changes.push(VersionChange {
                    unit,
                    expression,
                    steps,
                });
            }
        }
        VersionMatrix {
            verdicts,
            oldest_accepting,
            rejected_after_accepted,
            changes,
        }
    }
}

fn same_value(a: &Option<VersionStep>, b: &Option<VersionStep>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => {
            a.cost == b.cost
                && a.exceeds_limit == b.exceeds_limit
                && a.compile_error == b.compile_error
        }
        (None, None) => true,
        _ => false,
    }
}

fn verdict(r: &ObjectReport) -> VersionVerdict {
    let crd = !r.schemas.is_empty();
    VersionVerdict {
        kubernetes_version: r.kubernetes_version.clone(),
        valid: r.valid,
        stopped: r.stopped.is_some(),
        error_count: r.errors.len(),
        highest_rule_cost: if crd {
            r.highest_rule_cost()
        } else {
            r.expressions
                .iter()
                .filter_map(|e| e.max_cost)
                .max()
                .unwrap_or(0)
        },
        highest_total_cost: crd.then(|| r.highest_total_cost()),
    }
}

/// The units of one report: (key, expression, value).
fn units(r: &ObjectReport) -> Vec<(String, String, VersionStep)> {
    let step = |cost: Option<u64>, limit: u64, exceeds: bool, err: Option<&String>| VersionStep {
        kubernetes_version: r.kubernetes_version.clone(),
        cost,
        limit,
        exceeds_limit: exceeds,
        compile_error: err.cloned(),
    };
    let mut out = Vec::new();
    let several = r.schemas.len() > 1;
    for s in &r.schemas {
        let prefix = if several {
            format!("{}: ", s.schema_field_path)
        } else {
            String::new()
        };
        out.push((
            format!("{} total", s.schema_field_path),
            String::new(),
            step(
                Some(s.total_cost),
                PER_SCHEMA_COST_LIMIT,
                s.exceeds_total_limit,
                None,
            ),
        ));
        for rule in &s.rules {
            let key = format!("{prefix}{} [{}]", rule.path, rule.index);
            let compiled = rule.compile_error.is_none();
            out.push((
                key.clone(),
                rule.rule.clone(),
                step(
                    compiled.then_some(rule.cost),
                    PER_RULE_COST_LIMIT,
                    rule.exceeds_cost_limit,
                    rule.compile_error.as_ref(),
                ),
            ));
            if let Some(m) = &rule.message_expression {
                let cost = rule.message_expression_cost;
                out.push((
                    format!("{key} messageExpression"),
                    m.clone(),
                    step(
                        cost,
                        PER_RULE_COST_LIMIT,
                        cost.is_some_and(|c| c > PER_RULE_COST_LIMIT),
                        rule.message_expression_compile_error.as_ref(),
                    ),
                ));
            }
        }
    }
    for e in &r.expressions {
        out.push((
            e.field_path.clone(),
            e.expression.clone(),
            step(
                e.max_cost,
                e.per_call_limit,
                e.max_cost_exceeds_per_call_limit.unwrap_or(false),
                e.compile_error.as_ref(),
            ),
        ));
    }
    out
}

/// `current`'s report, carrying the matrix of it and the next minor's (the operator's view: the
/// cluster's minor, and what its upgrade would change).
pub fn with_next(current: ObjectReport, next: ObjectReport) -> ObjectReport {
    let matrix = VersionMatrix::of(&[current.clone(), next]);
    ObjectReport {
        by_version: Some(matrix),
        ..current
    }
}

/// The newest report, carrying the matrix of all of them.
pub fn combine(mut reports: Vec<ObjectReport>) -> ObjectReport {
    let matrix = VersionMatrix::of(&reports);
    let mut newest = reports.pop().unwrap_or_default();
    if !matrix.verdicts.is_empty() {
        newest.by_version = Some(matrix);
    }
    newest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{RuleReport, SchemaReport};

    fn crd(version: &str, cost: u64, err: Option<&str>) -> ObjectReport {
        ObjectReport {
            kind: "CustomResourceDefinition".into(),
            name: "x".into(),
            kubernetes_version: version.into(),
            valid: cost <= PER_RULE_COST_LIMIT && err.is_none(),
            schemas: vec![SchemaReport {
                schema_field_path: "spec.validation.openAPIV3Schema".into(),
                total_cost: cost,
                rules: vec![RuleReport {
                    path: "^.spec.cidrs[*]".into(),
                    index: 0,
                    rule: "isCIDR(self)".into(),
                    cost,
                    exceeds_cost_limit: cost > PER_RULE_COST_LIMIT,
                    compile_error: err.map(String::from),
                    ..RuleReport::default()
                }],
                ..SchemaReport::default()
            }],
            ..ObjectReport::default()
        }
    }

    #[test]
    fn the_oldest_accepting_minor_and_the_steps_of_a_changing_rule() {
        let m = VersionMatrix::of(&[
            crd("v1.30", 0, Some("undeclared reference to 'isCIDR'")),
            crd("v1.31", 12_310_000, None),
            crd("v1.32", 4_100_000, None),
            crd("v1.33", 4_100_000, None),
        ]);
        assert_eq!(m.oldest_accepting.as_deref(), Some("v1.32"));
        assert!(!m.rejected_after_accepted);
        let rule = m
            .changes
            .iter()
            .find(|c| c.unit == "^.spec.cidrs[*] [0]")
            .unwrap();
        let at: Vec<(&str, Option<u64>, bool)> = rule
            .steps
            .iter()
            .map(|s| (s.kubernetes_version.as_str(), s.cost, s.exceeds_limit))
            .collect();
        assert_eq!(
            at,
            [
                ("v1.30", None, false),
                ("v1.31", Some(12_310_000), true),
                ("v1.32", Some(4_100_000), false)
            ]
        );
        assert!(rule.steps[0].compile_error.is_some());
        assert_eq!(m.verdicts.iter().filter(|v| v.valid).count(), 2);
    }

    #[test]
    fn nothing_changes_nothing_is_listed() {
        let m = VersionMatrix::of(&[crd("v1.35", 5, None), crd("v1.36", 5, None)]);
        assert!(m.changes.is_empty());
        assert_eq!(m.oldest_accepting.as_deref(), Some("v1.35"));
    }

    #[test]
    fn a_later_rejection_is_flagged() {
        let m = VersionMatrix::of(&[crd("v1.32", 5, None), crd("v1.33", 20_000_000, None)]);
        assert!(m.rejected_after_accepted);
        assert_eq!(m.oldest_accepting.as_deref(), Some("v1.32"));
        let c = combine(vec![crd("v1.32", 5, None), crd("v1.33", 20_000_000, None)]);
        assert_eq!(c.kubernetes_version, "v1.33");
        assert_eq!(c.by_version.unwrap().verdicts.len(), 2);
    }
}

// ---------------------------------------------------------------------------------------------
// Estimating one object for a range of minors, each distinct estimate once.

/// What differs between two minors' rules, as far as an object can tell.
#[derive(Debug, Default)]
struct Differences {
    /// The segments of every function or identifier declared differently (`format`, `named`,
    /// `isIP`, `first`, `string`, ...).
    names: HashSet<String>,
    /// Parser options differ in the two-variable macros / `sortBy`.
    two_var_macros: bool,
    sort_by: bool,
    cost_algorithm: bool,
    optional_macros: bool,
    format_validator: bool,
    kubernetes_type_equality: bool,
    url_result_size: bool,
    keywords_as_field_names: bool,
    type_meta_additional_properties: bool,
    int_or_string_max_length: bool,
}

impl Differences {
    fn between(a: &Estimator, b: &Estimator) -> Differences {
        let (ea, eb) = (a.env(), b.env());
        let (ma, mb) = (a.minor(), b.minor());
        // With the mutation-only libraries: a superset of every environment of the minor.
        let (da, db) = (
            Declarations::for_minor(ma, true),
            Declarations::for_minor(mb, true),
        );
        let mut names = HashSet::new();
        let mut add = |name: &str| {
            names.extend(name.split('.').map(str::to_string));
        };
        for (n, f) in &da.functions {
            if db.functions.get(n) != Some(f) {
                add(n);
            }
        }
        for n in db.functions.keys() {
            if !da.functions.contains_key(n) {
                add(n);
            }
        }
        for (n, t) in &da.idents {
            if db.idents.get(n) != Some(t) {
                add(n);
            }
        }
        for n in db.idents.keys() {
            if !da.idents.contains_key(n) {
                add(n);
            }
        }
        let keywords = |m: &Minor| m.compatibility >= Version::new(1, 31);
        Differences {
            names,
            two_var_macros: ea.parser.two_var_comprehensions != eb.parser.two_var_comprehensions,
            sort_by: ea.parser.lists_sort_by != eb.parser.lists_sort_by,
            cost_algorithm: ma.cost_algorithm != mb.cost_algorithm,
            optional_macros: ma.optional_macros_copy_their_receiver
                != mb.optional_macros_copy_their_receiver,
            format_validator: ma.format_string_validator != mb.format_string_validator,
            kubernetes_type_equality: ma.kubernetes_type_equality != mb.kubernetes_type_equality,
            url_result_size: ma.url_result_size != mb.url_result_size,
            keywords_as_field_names: keywords(ma) != keywords(mb),
            type_meta_additional_properties: ma.type_meta_keeps_additional_properties
                != mb.type_meta_keeps_additional_properties,
            int_or_string_max_length: ma.int_or_string_max_length != mb.int_or_string_max_length,
        }
    }

    /// Whether an object with this profile gets the same estimate from both minors (apart from
    /// error wording, which [`RangeEstimator`] checks on the report).
    fn irrelevant_to(&self, p: &Profile) -> bool {
        let any = |words: &[&str]| words.iter().any(|w| p.tokens.contains(*w));
        if p.has_cel && (self.cost_algorithm || p.tokens.iter().any(|t| self.names.contains(t))) {
            return false;
        }
        !(self.two_var_macros && any(TWO_VARIABLE_MACROS)
            || self.sort_by && any(&["sortBy"])
            || self.optional_macros && any(&["optMap", "optFlatMap"])
            || self.format_validator && any(&["format"])
            || self.kubernetes_type_equality && any(KUBERNETES_TYPE_SOURCES)
            || self.url_result_size && any(&["url"])
            || self.keywords_as_field_names && selects_reserved_word(p)
            || self.type_meta_additional_properties && p.resource_with_additional_properties
            || self.int_or_string_max_length && p.int_or_string_with_max_length)
    }
}

/// Macros that take three arguments with two-variable comprehensions.
const TWO_VARIABLE_MACROS: &[&str] = &[
    "all",
    "exists",
    "exists_one",
    "existsOne",
    "transformList",
    "transformMap",
    "transformMapEntry",
];
/// Every value of a Kubernetes CEL type comes from one of these.
const KUBERNETES_TYPE_SOURCES: &[&str] = &[
    "quantity",
    "ip",
    "cidr",
    "url",
    "semver",
    "format",
    "authorizer",
];

/// Whether an object's CEL may select a field named by a reserved word (`t.metadata.namespace`):
/// the reserved words the lexer reads as identifiers (`true`, `false`, `null` and `in` are
/// tokens of their own, never field names after a `.`).
fn selects_reserved_word(p: &Profile) -> bool {
    crate::schema::decltype::CEL_RESERVED
        .iter()
        .filter(|w| !matches!(**w, "true" | "false" | "null" | "in"))
        .any(|w| p.tokens.contains(*w))
}

/// What of an object can make minors estimate it differently.
#[derive(Debug, Default)]
struct Profile {
    /// Identifier-like tokens of every CEL expression of the object.
    tokens: HashSet<String>,
    has_cel: bool,
    /// A kind whose API versions the minors serve differently (MutatingAdmissionPolicy).
    served_by_minor: bool,
    int_or_string_with_max_length: bool,
    resource_with_additional_properties: bool,
}

impl Profile {
    fn of(v: &Value) -> Profile {
        let mut p = Profile {
            served_by_minor: v.get("kind").and_then(Value::as_str)
                == Some("MutatingAdmissionPolicy"),
            ..Profile::default()
        };
        p.walk(v, true);
        p
    }

    fn walk(&mut self, v: &Value, resource_root: bool) {
        match v {
            Value::Object(m) => {
                if m.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
                    && m.contains_key("maxLength")
                {
                    self.int_or_string_with_max_length = true;
                }
                if m.contains_key("additionalProperties")
                    && (resource_root
                        || m.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true)))
                {
                    self.resource_with_additional_properties = true;
                }
                for (k, x) in m {
                    match (k.as_str(), x) {
                        (
                            "rule" | "messageExpression" | "expression" | "valueExpression",
                            Value::String(s),
                        ) => {
                            self.has_cel = true;
                            self.tokens.extend(identifier_tokens(s));
                        }
                        _ => self.walk(x, k == "openAPIV3Schema"),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| self.walk(x, false)),
            _ => {}
        }
    }
}

/// The identifier-like words of a text.
fn identifier_tokens(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
}

/// Estimators of a range of minors (oldest first) that estimate each object once per group of
/// minors that cannot differ on it: the object's CEL words, schema features and the minors'
/// rules decide the groups ([`Differences`]). A report with errors is shared only between minors
/// that word errors alike.
pub struct RangeEstimator {
    estimators: Vec<Estimator>,
    differences: Mutex<HashMap<(usize, usize), Arc<Differences>>>,
}

impl RangeEstimator {
    pub fn new(estimators: Vec<Estimator>) -> Self {
        RangeEstimator {
            estimators,
            differences: Mutex::new(HashMap::new()),
        }
    }

    pub fn estimators(&self) -> &[Estimator] {
        &self.estimators
    }

    fn differences(&self, a: usize, b: usize) -> Arc<Differences> {
        let mut cache = self.differences.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .entry((a, b))
            .or_insert_with(|| {
                Arc::new(Differences::between(
                    &self.estimators[a],
                    &self.estimators[b],
                ))
            })
            .clone()
    }

    /// One report per minor, oldest first; `None` when the kind is not estimable.
    pub fn estimate_each(
        &self,
        v: &Value,
        estimate: impl Fn(&Estimator) -> Option<ObjectReport>,
    ) -> Option<Vec<ObjectReport>> {
        let n = self.estimators.len();
        if n == 1 {
            return Some(vec![estimate(&self.estimators[0])?]);
        }
        let profile = Profile::of(v);
        let mut out: Vec<ObjectReport> = Vec::with_capacity(n);
        // The index of the minor whose report the last ones copy.
        let mut representative: Option<usize> = None;
        for i in 0..n {
            let shared = representative.filter(|&r| {
                !profile.served_by_minor
                    && shareable(
                        &out[r],
                        self.estimators[r].kubernetes_version(),
                        self.estimators[i].kubernetes_version(),
                    )
                    && self.differences(r, i).irrelevant_to(&profile)
            });
            match shared {
                Some(r) => {
                    let mut copy = out[r].clone();
                    copy.kubernetes_version =
                        format!("v{}", self.estimators[i].kubernetes_version());
                    out.push(copy);
                }
                None => {
                    out.push(estimate(&self.estimators[i])?);
                    representative = Some(i);
                }
            }
        }
        Some(out)
    }
}

/// Whether a report of minor `from` can stand for minor `to`'s: both word every error alike (or
/// there are none), and it has no notes (they say what the minor serves). Compile errors are
/// cel-go's words, which vary by minor only in how the optional type is named (in `wording`).
fn shareable(r: &ObjectReport, from: Version, to: Version) -> bool {
    r.stopped.is_none()
        && r.notes.is_empty()
        && (r.errors.is_empty()
            || crate::crd::fielderr::wording(from) == crate::crd::fielderr::wording(to))
}
