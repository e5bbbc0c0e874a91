//! The `CostReport` custom resource (celcost.io/v1alpha1): one per estimated target.
//!
//! The status carries the estimator's report (`celcost_core::report::ObjectReport`) with the same field
//! names as `celcost estimate --output json`, adapted to what the API server can store:
//!
//! - **int64, not uint64.** The API server decodes JSON integers as int64. The estimator's costs
//!   are u64 and saturate at 2^64-1 ("unbounded"), which would come back as a float (or be
//!   rejected by the `integer` schema). Every cost in the status is therefore an `int64`, capped
//!   at 9223372036854775807 (`i64::MAX`), and the object holding it gets `unbounded: true`. No
//!   information that matters is lost: the limits are 10^7 and 10^8, so a capped value is more
//!   than 10^11 times over either.
//! - **Bounded.** Every string has a `maxLength` and every list a `maxItems`; only the costliest
//!   rules are listed (see [`crate::status`]), with `status.note` saying so.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use celcost_core::report::Keyword;

/// Upper bound of rules (CRDs) or expressions (policies) listed in one report.
pub const MAX_LISTED_RULES: usize = 200;
/// Upper bound of schemas (one per distinct version schema of a CRD) listed in one report.
pub const MAX_LISTED_SCHEMAS: usize = 32;
/// Upper bound of the entries of each drivers list.
pub const MAX_DRIVERS: usize = 16;
/// Upper bound of the API server errors listed.
pub const MAX_ERRORS: usize = 16;
/// Maximum length of CEL source text kept in a report (longer text is cut with `…`).
pub const MAX_EXPRESSION_LEN: usize = 1024;
/// Maximum length of a path or message kept in a report.
pub const MAX_TEXT_LEN: usize = 1024;

/// What the report describes: its target. (A CostReport is written by `celcost controller`.)
// clippy reads the repeated `printcolumn(type_ = ...)` keys as duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "celcost.io",
    version = "v1alpha1",
    kind = "CostReport",
    plural = "costreports",
    singular = "costreport",
    shortname = "ccr",
    category = "celcost",
    status = "CostReportStatus",
    derive = "PartialEq",
    doc = "Estimated CEL cost of one CustomResourceDefinition, ValidatingAdmissionPolicy or MutatingAdmissionPolicy, written by celcost. Named crd.<name>, vap.<name> or map.<name>; owned (and garbage-collected) by its target.",
    printcolumn(
        name = "Kind",
        type_ = "string",
        json_path = ".spec.targetRef.kind",
        description = "Kind of the estimated object"
    ),
    printcolumn(
        name = "Target",
        type_ = "string",
        json_path = ".spec.targetRef.name",
        description = "Name of the estimated object"
    ),
    printcolumn(
        name = "Rule%",
        type_ = "string",
        json_path = ".status.summary.highestRulePercent",
        description = "Highest estimated rule cost, % of the per-rule limit (CRDs: 10,000,000; policies: the 1,000,000 per-call limit)"
    ),
    printcolumn(
        name = "Total%",
        type_ = "string",
        json_path = ".status.summary.highestTotalPercent",
        description = "Highest estimated schema total, % of the limit (CRDs: 100,000,000 per schema; policies: the 10,000,000 runtime budget)"
    ),
    printcolumn(
        name = "WithinBudget",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"WithinBudget\")].status",
        description = "False when a rule or total is near or over its limit, or the estimate failed"
    ),
    printcolumn(
        name = "K8s",
        type_ = "string",
        json_path = ".status.kubernetesVersion",
        description = "Kubernetes minor whose API server the estimate follows"
    ),
    printcolumn(
        name = "UpgradeSafe",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"UpgradeSafe\")].status",
        description = "False when the next Kubernetes minor would reject the object or push a rule to the near-budget threshold"
    ),
    printcolumn(
        name = "Reason",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"WithinBudget\")].reason",
        description = "Reason of the WithinBudget condition",
        priority = 1
    ),
    printcolumn(
        name = "Updates",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"SchemaUpdatable\")].reason",
        description = "CRDs: AcceptedOnCreate; SchemaFrozen (served, but refused on create: updates that keep its schemas pass, a schema change is refused until the named rule fits); UpdatesRefused",
        priority = 1
    ),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status",
        description = "True when an estimate exists",
        priority = 1
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    selectable = ".spec.targetRef.kind",
    selectable = ".spec.targetRef.name"
)]
#[serde(rename_all = "camelCase")]
pub struct CostReportSpec {
    /// The estimated object. Immutable: a report belongs to one target.
    #[schemars(extend("x-kubernetes-validations" = [{"rule": "self == oldSelf", "message": "targetRef is immutable"}]))]
    pub target_ref: TargetRef,
}

/// The kinds celcost estimates: the estimator's, serialized by their names.
pub use celcost_core::estimate::TargetKind;

/// Reference to the estimated object.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetRef {
    /// `apiextensions.k8s.io/v1` or `admissionregistration.k8s.io/v1`.
    #[schemars(length(max = 64))]
    pub api_version: String,
    pub kind: TargetKind,
    #[schemars(length(max = 253))]
    pub name: String,
    #[schemars(length(max = 64))]
    pub uid: String,
}

/// The estimate, as the CLI's JSON report has it, plus a summary and conditions.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CostReportStatus {
    /// The target's `metadata.generation` this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The Kubernetes version whose cost model was applied, e.g. `v1.33`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 16))]
    pub kubernetes_version: String,
    /// The highest numbers, as percentages of their limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
    /// Whether the API server of `kubernetesVersion` would accept the object on create.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid: Option<bool>,
    /// The API server's field errors, `<field path>: <type>: <detail>` (first 16).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), inner(length(max = 1024)))]
    pub errors: Vec<String>,
    /// CRDs: one entry per validated schema root; rules ordered by cost, costliest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub schemas: Vec<SchemaStatus>,
    /// Policies: the CEL expressions, costliest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 200))]
    pub expressions: Vec<ExpressionStatus>,
    /// Policies: the runtime budgets, summed the way the runtime spends them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_budget: Option<PolicyBudgetStatus>,
    /// Policies: the schemas behind the typed estimates (beyond upstream), and what they do
    /// not cover.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typing: Option<PolicyTypingStatus>,
    /// The next Kubernetes minor's verdict on the object, and what changes there (absent when
    /// celcost has no rules for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_version: Option<NextVersionStatus>,
    /// CRDs the API server of `kubernetesVersion` would refuse on create, though the cluster
    /// stores and serves them: its verdict on an update that keeps the object as it is, and
    /// what a schema change is refused for (CLI JSON of `celcost diff`: `update`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<UpdateStatus>,
    /// Set when the report is abridged (rules left out, text cut).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 1024))]
    pub note: String,
    /// `Ready` (an estimate exists) and `WithinBudget` (no rule or total near or over its limit).
    #[serde(default)]
    #[schemars(schema_with = "conditions_schema")]
    pub conditions: Vec<Condition>,
}

/// The API server's verdict on an update of the stored object (CLI JSON: `update`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateStatus {
    /// `cluster`: the object was judged against itself, as stored.
    #[schemars(length(max = 1024))]
    pub stored_source: String,
    /// Whether the API server accepts an update that keeps the object's schemas.
    pub valid: bool,
    /// Its field errors for such an update (first 16).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), inner(length(max = 1024)))]
    pub errors: Vec<String>,
    /// Rules and messageExpressions over the per-expression limit that pass only while their
    /// version's schema is unchanged (first 16).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub held: Vec<HeldExpressionStatus>,
    /// Expressions that compile only because the stored object has them (first 16).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub stored_only: Vec<StoredOnlyStatus>,
    /// Set when the update could not be judged: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub stopped: Option<String>,
}

/// A rule or messageExpression held by its unchanged schema (CLI JSON: `update.held[]`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeldExpressionStatus {
    #[schemars(length(max = 256))]
    pub schema_field_path: String,
    #[serde(default)]
    #[schemars(length(max = 64), inner(length(max = 64)))]
    pub versions: Vec<String>,
    #[schemars(length(max = 1024))]
    pub path: String,
    pub index: i64,
    /// `rule` or `messageExpression`.
    #[schemars(length(max = 32))]
    pub what: String,
    #[schemars(length(max = 1024))]
    pub expression: String,
    pub cost: i64,
    /// The error the API server gives once the schema changes.
    #[schemars(length(max = 1024))]
    pub error: String,
    /// True when `cost` exceeded int64 and is shown as 9223372036854775807.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unbounded: bool,
}

/// An expression that compiles only as a stored one (CLI JSON: `update.storedOnly[]`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoredOnlyStatus {
    #[schemars(length(max = 1024))]
    pub field_path: String,
    #[schemars(length(max = 1024))]
    pub expression: String,
    #[schemars(length(max = 1024))]
    pub compile_error: String,
}

/// The object on the next Kubernetes minor.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NextVersionStatus {
    /// e.g. `v1.34`.
    #[schemars(length(max = 16))]
    pub kubernetes_version: String,
    /// Whether that minor's API server would accept the object on create.
    pub valid: bool,
    /// The `UpgradeSafe` condition's status (`True`, `False`), reason and message.
    #[schemars(length(max = 8))]
    pub upgrade_safe: String,
    #[schemars(length(max = 64))]
    pub reason: String,
    #[schemars(length(max = 1024))]
    pub message: String,
    /// Rules, totals and expressions whose number or verdict changes there, as
    /// `<unit>: <value> → <value>` (first 16).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), inner(length(max = 1024)))]
    pub changes: Vec<String>,
    /// How many units change in all.
    #[serde(default)]
    pub change_count: i64,
}

/// Where a number stands against its limit.
#[derive(
    Serialize,
    Deserialize,
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    JsonSchema,
)]
pub enum BudgetLevel {
    /// Below the near-budget threshold.
    #[default]
    WithinBudget,
    /// At or above the near-budget threshold, not above the limit.
    NearBudget,
    /// Above the limit: the API server rejects the CRD (CRDs) or evaluation can exceed the
    /// runtime budget (policies).
    OverBudget,
}

/// The highest numbers of the report.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// The limit `highestRuleCost` is compared with: 10,000,000 (estimated, per CRD rule) or
    /// 1,000,000 (runtime per-call limit, per policy expression).
    pub rule_limit: i64,
    /// The highest rule cost (CRDs: rule cost × cardinality, or a messageExpression) or
    /// expression cost (policies).
    pub highest_rule_cost: i64,
    /// `highestRuleCost` as a percentage of `ruleLimit`, e.g. `12.5%`, or `unbounded`.
    #[schemars(length(max = 32))]
    pub highest_rule_percent: String,
    /// Where the highest rule stands.
    pub rule_level: BudgetLevel,
    /// The limit `highestTotalCost` is compared with: 100,000,000 (estimated, per CRD schema) or
    /// 10,000,000 (runtime budget of one policy-binding evaluation).
    pub total_limit: i64,
    /// The highest schema total (CRDs) or the policy's validation cost (policies).
    pub highest_total_cost: i64,
    /// `highestTotalCost` as a percentage of `totalLimit`.
    #[schemars(length(max = 32))]
    pub highest_total_percent: String,
    /// Where the highest total stands.
    pub total_level: BudgetLevel,
    /// The near-budget threshold applied, in percent of the limits.
    pub near_budget_percent: i32,
    /// Rules (or expressions) at or above the threshold and not over the limit.
    pub rules_near_budget: i64,
    /// Rules (or expressions) over the limit.
    pub rules_over_budget: i64,
    /// Rules (or expressions) in the estimate.
    pub rule_count: i64,
    /// Rules (or expressions) listed in this report (the costliest ones).
    pub rules_listed: i64,
    /// True when a highest cost exceeded int64 and is shown as 9223372036854775807.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unbounded: bool,
}

/// One validated schema root of a CRD (CLI JSON: `schemas[]`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchemaStatus {
    #[schemars(length(max = 256))]
    pub schema_field_path: String,
    #[serde(default)]
    #[schemars(length(max = 64), inner(length(max = 64)))]
    pub versions: Vec<String>,
    pub total_cost: i64,
    pub exceeds_total_limit: bool,
    /// Number of rules in the schema (all of them, listed or not).
    pub rule_count: i64,
    /// The costliest rules of the schema, costliest first.
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub rules: Vec<RuleStatus>,
    /// When the total is over its limit or near budget: bounds that bring it below the
    /// threshold (CLI JSON: `schemas[].suggestions`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub suggestions: Vec<SuggestionStatus>,
    /// Set instead of `suggestions` when no bound helps: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub no_suggestion: Option<String>,
    /// True when `totalCost` exceeded int64 and is shown as 9223372036854775807.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unbounded: bool,
}

/// One suggested schema bound (CLI JSON: `suggestions[]`): bounds of the same `group` go
/// together; `costAfter` is the cost with all of them, from the estimator run again.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SuggestionStatus {
    /// The schema node, as `nodeFieldPath` from the object root.
    #[schemars(length(max = 1024))]
    pub path: String,
    /// `maxItems`, `maxProperties` or `maxLength`.
    #[schemars(with = "String", length(max = 16))]
    pub keyword: Keyword,
    pub value: i64,
    pub cost_after: i64,
    #[serde(default)]
    pub group: i64,
    /// The node as rule paths name it (`^.spec.tags`).
    #[schemars(length(max = 1024))]
    pub schema_path: String,
    /// The bound there now, which the suggestion lowers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<i64>,
    /// The kubebuilder marker (`+kubebuilder:validation:MaxItems=64`).
    #[schemars(length(max = 128))]
    pub marker: String,
    /// Where the marker goes (`.spec.tags`).
    #[schemars(length(max = 1024))]
    pub marker_on: String,
    /// The bound refuses nothing the schema accepts today: the node's own validation already
    /// limits it to this much (`impliedBy`). Otherwise an added bound refuses larger values and
    /// a lowered one (`current`) values the API accepts today.
    #[serde(default, skip_serializing_if = "is_false")]
    pub safe: bool,
    /// What makes the bound safe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 512))]
    pub implied_by: Option<String>,
}

/// One `x-kubernetes-validations` rule (CLI JSON: `schemas[].rules[]`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleStatus {
    #[schemars(length(max = 1024))]
    pub path: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 1024))]
    pub rule_field_path: String,
    pub index: i64,
    #[schemars(length(max = 1024))]
    pub rule: String,
    pub max_cost: i64,
    pub max_cardinality: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_max_cardinality: Option<i64>,
    pub cardinality_used: i64,
    pub cost: i64,
    pub exceeds_cost_limit: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_expression_cost: Option<i64>,
    #[serde(default)]
    pub uses_old_self: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub compile_error: Option<String>,
    pub compiled_by_apiserver: bool,
    #[serde(default, skip_serializing_if = "DriversStatus::is_empty")]
    pub drivers: DriversStatus,
    /// When the rule is over its limit or near budget: bounds that bring it below the
    /// threshold (CLI JSON: `suggestions`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub suggestions: Vec<SuggestionStatus>,
    /// Set instead of `suggestions` when no bound helps: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub no_suggestion: Option<String>,
    /// True when a number here exceeded int64 and is shown as 9223372036854775807.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unbounded: bool,
}

impl RuleStatus {
    /// The cost this rule is judged by, as [`celcost_core::report::RuleReport::judged_cost`] (in the
    /// status's integers).
    pub fn judged_cost(&self) -> i64 {
        self.cost.max(self.message_expression_cost.unwrap_or(0))
    }
}

/// What drives a rule's cost (CLI JSON: `drivers`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DriversStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), inner(length(max = 512)))]
    pub unbounded_ancestors: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), inner(length(max = 512)))]
    pub unbounded_fields: Vec<String>,
}

impl DriversStatus {
    pub fn is_empty(&self) -> bool {
        self.unbounded_ancestors.is_empty() && self.unbounded_fields.is_empty()
    }
}

/// One CEL expression of a policy (CLI JSON: `expressions[]`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExpressionStatus {
    #[schemars(length(max = 256))]
    pub field_path: String,
    #[schemars(length(max = 256))]
    pub kind: String,
    #[schemars(length(max = 1024))]
    pub expression: String,
    /// Upstream's estimate; absent when the expression does not compile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_cost: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_unbounded: Option<bool>,
    pub per_call_limit: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_exceeds_per_call_limit: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub compile_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typed: Option<TypedEstimateStatus>,
    /// True when a number here exceeded int64 and is shown as 9223372036854775807.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unbounded: bool,
}

/// An estimate with `object`, `oldObject` and `params` typed from schemas.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TypedEstimateStatus {
    #[serde(default)]
    #[schemars(length(max = 16), inner(length(max = 256)))]
    pub against: Vec<String>,
    pub min_cost: i64,
    pub max_cost: i64,
    pub max_cost_unbounded: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), inner(length(max = 512)))]
    pub unbounded_fields: Vec<String>,
}

/// The schemas that typed a policy's `object`/`oldObject` and `params` (CLI JSON: `typing`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyTypingStatus {
    /// The matched resources with a schema.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub schemas: Vec<TypedSchemaStatus>,
    /// The schema of `paramKind`, when one is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<TypedSchemaStatus>,
    /// What the typed estimates do not cover, and why (first 16).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), inner(length(max = 1024)))]
    pub not_typed: Vec<String>,
}

/// A schema that typed a policy (`stable.example.com/v1/widgets`, `Widget`, `CRD
/// widgets.stable.example.com`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TypedSchemaStatus {
    #[schemars(length(max = 512))]
    pub resource: String,
    #[schemars(length(max = 256))]
    pub kind: String,
    #[schemars(length(max = 512))]
    pub origin: String,
}

/// A policy's runtime budgets (CLI JSON: `policyBudget`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyBudgetStatus {
    pub validation_cost: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typed_validation_cost: Option<i64>,
    pub match_conditions_cost: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typed_match_conditions_cost: Option<i64>,
    pub audit_annotations_cost: i64,
    /// True when a number here exceeded int64 and is shown as 9223372036854775807.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unbounded: bool,
}

/// A u64 cost as the int64 the API server can store, and whether it had to be capped.
pub fn cap(v: u64) -> (i64, bool) {
    match i64::try_from(v) {
        Ok(i) => (i, false),
        Err(_) => (i64::MAX, true),
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// `metav1.Condition` as a list-map keyed by `type`, so server-side apply merges per type, with
/// the bounds upstream's type declares.
fn conditions_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "description": "Conditions of the report, one per type.",
        "maxItems": 8,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "type": "object",
            "required": ["type", "status", "lastTransitionTime", "reason", "message"],
            "properties": {
                "type": {
                    "type": "string",
                    "description": "Type of the condition, in CamelCase.",
                    "maxLength": 316
                },
                "status": {
                    "type": "string",
                    "description": "True, False or Unknown.",
                    "enum": ["True", "False", "Unknown"]
                },
                "observedGeneration": {
                    "type": "integer",
                    "format": "int64",
                    "description": "The target's metadata.generation the condition was set from.",
                    "minimum": 0
                },
                "lastTransitionTime": {
                    "type": "string",
                    "format": "date-time",
                    "description": "When the status last changed."
                },
                "reason": {
                    "type": "string",
                    "description": "Why the condition is in its status, in CamelCase.",
                    "maxLength": 1024,
                    "minLength": 1
                },
                "message": {
                    "type": "string",
                    "description": "A human-readable message.",
                    "maxLength": 32768
                }
            }
        }
    })
}

/// The CRD of [`CostReport`] as YAML, as `celcost crd` prints it and `crds/costreport.yaml`
/// holds it.
pub fn crd_yaml() -> String {
    use kube::CustomResourceExt;
    let crd = CostReport::crd();
    let body = serde_yaml_ng::to_string(&crd).expect("a CRD serializes to YAML");
    format!(
        "# Generated by `celcost crd` (just generate) from crates/celcost-operator/src/resource.rs. Do not edit.\n{body}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_at_int64() {
        assert_eq!(cap(5), (5, false));
        assert_eq!(cap(i64::MAX as u64), (i64::MAX, false));
        assert_eq!(cap(i64::MAX as u64 + 1), (i64::MAX, true));
        assert_eq!(cap(u64::MAX), (i64::MAX, true));
    }
}
