//! The report model: one value per estimated object, shared by `celcost estimate --output json`
//! and the `CostReport` status written by the operator.
//!
//! Field names follow `shared/corpus/expected/README.md` (the upstream oracle's output), so a
//! report can be compared with the API server's own numbers field by field. Costs are `u64`:
//! upstream saturates at 2^64-1, and that value is meaningful ("unbounded").

pub mod format;
pub mod versions;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Per-rule static cost limit (rule cost × cardinality, and each messageExpression).
/// Upstream: k8s.io/apiextensions-apiserver pkg/apis/apiextensions/validation `StaticEstimatedCostLimit`.
pub const PER_RULE_COST_LIMIT: u64 = 10_000_000;
/// Per-schema (per CRD version) static cost limit.
/// Upstream: `StaticEstimatedCRDCostLimit` in the same file.
pub const PER_SCHEMA_COST_LIMIT: u64 = 100_000_000;
/// Runtime limit of one CEL expression evaluation.
/// Upstream: k8s.io/apiserver pkg/apis/cel/config.go `PerCallLimit`.
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// Runtime budget of one custom-resource validation or one policy-binding evaluation.
/// Upstream: k8s.io/apiserver pkg/apis/cel/config.go `RuntimeCELCostBudget`.
pub const RUNTIME_COST_BUDGET: u64 = 10_000_000;
/// Runtime budget of a policy's matchConditions.
/// Upstream: k8s.io/apiserver pkg/apis/cel/config.go `RuntimeCELCostBudgetMatchConditions`.
pub const MATCH_CONDITIONS_COST_BUDGET: u64 = 2_500_000;

/// The near-budget threshold of findings, in percent of the limit, unless
/// `--near-budget-percent` says otherwise (the operator's default too): the outputs warn from
/// it, and suggested bounds aim below it.
pub const DEFAULT_NEAR_BUDGET_PERCENT: f64 = 80.0;

/// A cost as a share of its limit (infinite when unbounded).
pub fn ratio(cost: u64, limit: u64) -> f64 {
    if cost == u64::MAX {
        f64::INFINITY
    } else {
        cost as f64 / limit.max(1) as f64
    }
}

/// Whether a cost reaches `percent` of its limit.
pub fn reaches_share(cost: u64, limit: u64, percent: f64) -> bool {
    ratio(cost, limit) * 100.0 >= percent
}

/// The estimate of one Kubernetes object (a CRD, a ValidatingAdmissionPolicy or a
/// MutatingAdmissionPolicy).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReport {
    /// Where the object was read from: `<path as given>#<document number>` (1-based), or
    /// `cluster` for objects read from an API server.
    // (Not in the doc above, which is the CostReport CRD's description: `<stdin>#N` for standard
    // input, and `cluster:crd/NAME`, `cluster:vap/NAME`, `cluster:map/NAME` for `celcost
    // estimate --cluster`, celcost::cli::cluster.)
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// `CustomResourceDefinition`, `ValidatingAdmissionPolicy` or `MutatingAdmissionPolicy`.
    pub kind: String,
    /// `apiVersion` of the object as read.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `metadata.name`.
    pub name: String,
    /// The Kubernetes version whose cost model was applied, e.g. `v1.36`.
    pub kubernetes_version: String,
    /// Whether the API server would accept the object on create.
    pub valid: bool,
    /// The API server's field errors, `<field path>: <type>: <detail>`.
    #[serde(default)]
    pub errors: Vec<String>,
    /// `errors` in parts, one each (not in the JSON output, which has their text): what
    /// celcost's outputs read of them.
    #[serde(skip)]
    #[schemars(skip)]
    pub error_parts: Vec<ErrorParts>,
    /// CRDs: one entry per validated schema root.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schemas: Vec<SchemaReport>,
    /// Policies: every CEL expression.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expressions: Vec<ExpressionReport>,
    /// Policies: the runtime budgets, summed the way the runtime spends them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_budget: Option<PolicyBudget>,
    /// Policies: the schemas behind the typed estimates (beyond upstream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typing: Option<PolicyTyping>,
    /// Set when the estimate of this object stopped before its end (over its work budget, or an
    /// internal error): there are no numbers then, and `valid` is false because nothing was
    /// judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<EstimateStopped>,
    /// With a range of Kubernetes versions: the verdict on each, the oldest that accepts the
    /// object, and what changes between them (the rest of the report is the newest's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_version: Option<versions::VersionMatrix>,
    /// What else matters about the object in this Kubernetes version, beyond the verdict (e.g.
    /// an API version the API server serves only when the cluster enables it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Where the object starts in the file it was read from (absent for objects read from a
    /// cluster).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<SourceLocation>,
    /// Where in the file each of `errors` points: the node its field path names, or the
    /// nearest ancestor the file has (absent for objects read from a cluster).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub error_locations: Vec<ErrorLocation>,
    /// Set when the API server panics on the object (an expression its CEL compiler crashes
    /// on): the request is aborted with no response and no field errors, and nothing is stored.
    /// `valid` is false and `errors` holds this one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apiserver_panic: Option<ApiServerPanic>,
    /// CRDs: the API server's verdict on an UPDATE of a stored object to this one (`valid` is
    /// the verdict on a CREATE). Set by `celcost diff` (BASE as the cluster stores it) and, for
    /// a stored CRD its minor would refuse on create, by the operator (the stored object
    /// against itself: what an update that keeps it passes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<UpdateVerdict>,
    /// Which minor's rules made the report, and what of them its estimate consulted (not in
    /// the JSON output): what names the causes of a range's changes
    /// ([`versions::VersionMatrix::of`]).
    #[serde(skip)]
    #[schemars(skip)]
    pub made_by: MadeBy,
}

/// What an estimate consulted of its minor's rules: the bits of
/// [`crate::cel::version::consulted`] and the library sections its compiles resolved names in
/// ([`crate::cel::decls::section_names`]). It tells how a number was made, not what it is: every
/// two are equal, so that reports compare by what they say.
#[derive(Clone, Copy, Debug, Default)]
pub struct Consulted {
    pub rules: u64,
    pub libraries: u64,
}

impl PartialEq for Consulted {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Consulted {
    pub fn union(self, o: Consulted) -> Consulted {
        Consulted {
            rules: self.rules | o.rules,
            libraries: self.libraries | o.libraries,
        }
    }
}

/// Which minor's rules made a report, and what the estimate consulted of them (every two are
/// equal, as [`Consulted`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct MadeBy {
    pub minor: Option<&'static crate::cel::minor::Minor>,
    pub consulted: Consulted,
}

impl PartialEq for MadeBy {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// The API server's verdict on an UPDATE of a stored CustomResourceDefinition (apiextensions
/// `ValidateCustomResourceDefinitionUpdate`). It is not the CREATE verdict: the per-expression
/// cost limit is not applied to the rules of a version whose schema the update leaves unchanged
/// (`findVersionsWithUnchangedSchemas`, `suppressExpressionCostForUnchangedSchema`), rules and
/// messageExpressions the stored object already has are compiled in the stored-expressions
/// environment (`preexistingExpressions`), and the per-schema total is checked as on create.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateVerdict {
    /// Where the stored object was read from: `cluster`, or BASE's `<path>#<document>`.
    pub stored_source: String,
    /// Whether the API server accepts the update.
    pub valid: bool,
    /// Its field errors, `<field path>: <type>: <detail>`, as it words them.
    #[serde(default)]
    pub errors: Vec<String>,
    /// `errors` in parts (not in the JSON output), as [`ObjectReport::error_parts`].
    #[serde(skip)]
    #[schemars(skip)]
    pub error_parts: Vec<ErrorParts>,
    /// Every version of the new object, and whether the update leaves its schema unchanged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<VersionSchemaChange>,
    /// Rules and messageExpressions over the per-expression limit that pass only because their
    /// version's schema is unchanged: an update that changes that schema is refused until each
    /// of them fits.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<HeldExpression>,
    /// Rules and messageExpressions that compile only because the stored object has them (in
    /// the stored-expressions environment): a new or edited expression that needs them is
    /// refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stored_only: Vec<StoredOnlyExpression>,
    /// Set when the update could not be judged (its estimate went over the work budget, or the
    /// stored object cannot be read): `valid` is false then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<EstimateStopped>,
}

/// A version of an updated CRD.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionSchemaChange {
    pub name: String,
    /// The version's schema deep-equals the stored object's schema of the same version (a
    /// version the stored object lacks counts as changed, unless the stored object has one
    /// schema for all versions).
    pub schema_unchanged: bool,
}

/// A rule or messageExpression over the per-expression limit, let through because its
/// version's schema is unchanged.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeldExpression {
    /// The schema root it belongs to, and the versions of that root.
    pub schema_field_path: String,
    #[serde(default)]
    pub versions: Vec<String>,
    /// The rule as the report lists it: its node (`^.spec.tags`) and index.
    pub path: String,
    pub index: u64,
    /// `rule` or `messageExpression`.
    pub what: String,
    pub expression: String,
    /// The rule's cost × cardinality, or the messageExpression's cost.
    pub cost: u64,
    /// The error the API server gives for it once the schema changes.
    pub error: String,
}

/// An expression that compiles only as a stored one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoredOnlyExpression {
    /// `…x-kubernetes-validations[0].rule` or `….messageExpression`.
    pub field_path: String,
    pub expression: String,
    /// Why it does not compile as a new expression.
    pub compile_error: String,
}

/// What makes the API server panic on an object (see [`ObjectReport::apiserver_panic`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiServerPanic {
    /// The expression it panics on (the first, in the order the API server compiles them).
    pub field_path: String,
    /// Go's panic value, e.g. `runtime error: index out of range [0] with length 0`.
    pub panic: String,
    /// Where it panics.
    pub site: String,
}

/// A place in a file: `file:line:column`, 1-based, the column in characters. For a rule or an
/// expression, where its scalar's token starts: the opening quote of a quoted scalar, the `|`
/// or `>` of a block scalar, the first character of a plain one (after any tag or anchor).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceLocation {
    /// The path as given on the command line (joined with the directory's entries).
    pub file: String,
    pub line: u64,
    pub column: u64,
}

impl std::fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// Where an API server error points in the file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorLocation {
    /// Index in the report's `errors`.
    pub error: u64,
    /// The part of the error's field path that the file has (the whole path when it has the
    /// node; `spec.validation.openAPIV3Schema` is found at the first version's
    /// `spec.versions[0].schema.openAPIV3Schema`, as the API server reads a schema all
    /// versions share).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field_path: String,
    pub location: SourceLocation,
}

/// Why an object has no estimate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EstimateStopped {
    /// `WorkBudgetExceeded` or `InternalError`.
    #[schemars(with = "String")]
    pub reason: StopReason,
    /// `estimate stopped: work budget of N steps exceeded at spec.variables[42].expression`.
    pub message: String,
    /// The field path the estimate was at when it stopped, if it said (the end of `message`;
    /// not in the JSON output): where [`Self::location`] is looked up.
    #[serde(skip)]
    #[schemars(skip)]
    pub at: Option<String>,
    /// Where in the file the estimate stopped (the node the message names, or the nearest
    /// one the file has).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<SourceLocation>,
}

/// Why an estimate stopped ([`EstimateStopped::reason`]), serialized as its name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StopReason {
    /// Over its work budget (steps or memory).
    #[default]
    WorkBudgetExceeded,
    /// The estimator panicked: a bug.
    InternalError,
}

impl StopReason {
    /// The reason's name (`WorkBudgetExceeded`), as the report and the operator's conditions
    /// say it.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::WorkBudgetExceeded => "WorkBudgetExceeded",
            StopReason::InternalError => "InternalError",
        }
    }
}

/// One validated schema root of a CRD.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchemaReport {
    /// `spec.validation.openAPIV3Schema` when every version shares the schema, else
    /// `spec.versions[i].schema.openAPIV3Schema`.
    pub schema_field_path: String,
    /// The versions this schema belongs to.
    #[serde(default)]
    pub versions: Vec<String>,
    /// Sum of every rule's cost and every messageExpression's cost (saturating), compared with
    /// [`PER_SCHEMA_COST_LIMIT`].
    pub total_cost: u64,
    /// Whether `total_cost` exceeds [`PER_SCHEMA_COST_LIMIT`].
    pub exceeds_total_limit: bool,
    /// Number of `x-kubernetes-validations` entries in the schema.
    pub rule_count: u64,
    /// Every rule, in schema walk order.
    #[serde(default)]
    pub rules: Vec<RuleReport>,
    /// When `total_cost` is over [`PER_SCHEMA_COST_LIMIT`] or at the near-budget threshold:
    /// bounds that bring it below the threshold, verified by re-estimating
    /// ([`crate::suggest`]); the least restrictive first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<Suggestion>,
    /// Set instead of `suggestions` when no bound brings the total below the threshold: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_suggestion: Option<String>,
    /// Where the schema (`openAPIV3Schema`) is in the file; for a schema all versions share,
    /// the first version's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<SourceLocation>,
}

/// One `x-kubernetes-validations` entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleReport {
    /// The schema node, `^.spec.a.b[*]` (`[*]` for items and additionalProperties).
    pub path: String,
    /// The API server's field path of the schema node.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node_field_path: String,
    /// The API server's field path of the rule.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rule_field_path: String,
    /// Index in the node's `x-kubernetes-validations`.
    pub index: u64,
    /// The CEL expression.
    pub rule: String,
    /// The compiled rule's estimated cost per evaluation.
    pub max_cost: u64,
    /// The CEL compiler's cardinality for the node (the request-size fallback).
    pub max_cardinality: u64,
    /// Product of the ancestors' maxItems / maxProperties; `None` when an ancestor is unbounded.
    pub schema_max_cardinality: Option<u64>,
    /// The cardinality the API server multiplies with.
    pub cardinality_used: u64,
    /// `max_cost × cardinality_used` (saturating): what the API server compares with
    /// [`PER_RULE_COST_LIMIT`].
    pub cost: u64,
    /// Whether `cost` exceeds [`PER_RULE_COST_LIMIT`].
    pub exceeds_cost_limit: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_expression: Option<String>,
    /// The messageExpression's estimated cost (not multiplied by cardinality).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_expression_cost: Option<u64>,
    /// Whether the rule refers to `oldSelf` (a transition rule).
    #[serde(default)]
    pub uses_old_self: bool,
    /// The compile error, in the API server's words, when the rule does not compile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_error: Option<String>,
    /// The messageExpression's compile error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_expression_compile_error: Option<String>,
    /// False where the API server skips CEL for the node because the schema has errors at or
    /// below it (such rules are not in the total).
    pub compiled_by_apiserver: bool,
    /// Why the number is what it is.
    #[serde(default, skip_serializing_if = "Drivers::is_empty")]
    pub drivers: Drivers,
    /// Where the rule's text is in the file (for a schema all versions share, in the first
    /// version's schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<SourceLocation>,
    /// Where the messageExpression's text is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_expression_location: Option<SourceLocation>,
    /// Cheaper rules that say the same (`crate::rewrite`): each estimated cheaper at this node
    /// and checked equivalent on generated values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rewrites: Vec<Rewrite>,
    /// What the compile and estimate of the rule and its messageExpression consulted of the
    /// minor's rules (not in the JSON output).
    #[serde(skip)]
    #[schemars(skip)]
    pub consulted: Consulted,
    /// When the rule (its cost, or its messageExpression's) is over [`PER_RULE_COST_LIMIT`] or
    /// at the near-budget threshold: bounds that bring it below the threshold, verified by
    /// re-estimating ([`crate::suggest`]); the least restrictive alternative first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<Suggestion>,
    /// Set instead of `suggestions` when no bound brings the rule below the threshold: why
    /// (`no bound helps: ...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_suggestion: Option<String>,
}

/// A cheaper rule (or a schema change that makes the rule unnecessary), proven cheaper by the
/// estimator at the same schema node and checked equivalent by evaluating both on values
/// generated from the node's schema.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rewrite {
    /// The catalog's name of the pattern (`filter-size-to-exists`, ...).
    pub pattern: String,
    /// The rewritten rule; empty when the schema change makes the rule unnecessary.
    #[serde(default)]
    pub rule: String,
    /// The rule's estimated cost per evaluation, before and after.
    pub max_cost_before: u64,
    pub max_cost_after: u64,
    /// × the cardinality: what the API server compares with the per-rule limit.
    pub cost_before: u64,
    pub cost_after: u64,
    /// How many generated values both were evaluated on, with the same results.
    pub checked_cases: u64,
    /// The change to the schema that goes with it, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_change: Option<String>,
}

/// One suggested schema bound. Bounds with the same `group` are one alternative, to be applied
/// **together** (a group of several: no single bound does it); `costAfter` is the cost with
/// every bound of its group applied. Groups are numbered from 0, the least restrictive first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Suggestion {
    /// The schema node, as `nodeFieldPath` names nodes, from the object root
    /// (`spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[tags]`). Under
    /// `spec.validation.openAPIV3Schema` (a schema every version shares) the bound goes in every
    /// version's schema.
    pub path: String,
    /// `maxItems`, `maxProperties` or `maxLength`.
    #[schemars(with = "String")]
    pub keyword: Keyword,
    pub value: i64,
    /// The cost once every bound of the group is applied, from the estimator run again on the
    /// object with them: for a rule, the higher of its cost (× cardinality) and its
    /// messageExpression's; for a schema, its total.
    pub cost_after: u64,
    /// The alternative this bound is part of.
    #[serde(default)]
    pub group: u32,
    /// The same node as rule paths name it (`^.spec.tags`).
    pub schema_path: String,
    /// The bound there now, which the suggestion lowers; absent when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<i64>,
    /// The kubebuilder marker (`+kubebuilder:validation:MaxItems=64`).
    pub marker: String,
    /// Where the marker goes, as a Go field path (`.spec.tags`; `(type of .spec.m[*])` for a
    /// node only a type can carry markers for).
    pub marker_on: String,
    /// The bound refuses nothing the schema accepts today: the node's own validation (a regex,
    /// its enum or format, a size rule) already limits it to this much, as `impliedBy` says.
    /// Otherwise an added bound refuses the values above it, and a lowered one (`current`
    /// present) values the API accepts today: a breaking change.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub safe: bool,
    /// What makes the bound safe (`its rule's regex `^…$` accepts at most 28 characters`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implied_by: Option<String>,
    /// The node typed (not in the JSON output): the JSON pointers of the schema roots it is
    /// under in the object (`/spec/versions/0/schema/openAPIV3Schema`; every version's, for a
    /// schema they share)...
    #[serde(skip)]
    #[schemars(skip)]
    pub roots: Vec<String>,
    /// ...and the steps from them down to it: what `path` and `schemaPath` say as text.
    #[serde(skip)]
    #[schemars(skip)]
    pub steps: Vec<crate::schema::path::Step>,
}

impl Suggestion {
    /// Whether the bound lowers one there now below what the node's validation implies:
    /// values the API accepts today are refused from then on.
    pub fn breaks(&self) -> bool {
        self.current.is_some() && !self.safe
    }

    /// What the bound refuses that the API accepts today, for a breaking one.
    pub fn refused(&self) -> String {
        self.keyword.refused(self.value)
    }
}

/// The schema keywords a suggestion sets (serialized as the keyword's name, `maxItems`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "camelCase")]
pub enum Keyword {
    #[default]
    MaxItems,
    MaxProperties,
    MaxLength,
}

impl Keyword {
    /// The keyword as the schema spells it (`maxItems`).
    pub fn name(self) -> &'static str {
        match self {
            Keyword::MaxItems => "maxItems",
            Keyword::MaxProperties => "maxProperties",
            Keyword::MaxLength => "maxLength",
        }
    }

    /// The keyword as a kubebuilder marker names it (`MaxItems`).
    pub fn marker_name(self) -> &'static str {
        match self {
            Keyword::MaxItems => "MaxItems",
            Keyword::MaxProperties => "MaxProperties",
            Keyword::MaxLength => "MaxLength",
        }
    }

    /// The keyword named `name` as the schema spells it (`maxItems`), if it is one of them.
    pub fn of_name(name: &str) -> Option<Keyword> {
        match name {
            "maxItems" => Some(Keyword::MaxItems),
            "maxProperties" => Some(Keyword::MaxProperties),
            "maxLength" => Some(Keyword::MaxLength),
            _ => None,
        }
    }

    /// The keyword named `name` as a kubebuilder marker names it (`MaxItems`), if it is one.
    pub fn of_marker_name(name: &str) -> Option<Keyword> {
        match name {
            "MaxItems" => Some(Keyword::MaxItems),
            "MaxProperties" => Some(Keyword::MaxProperties),
            "MaxLength" => Some(Keyword::MaxLength),
            _ => None,
        }
    }

    /// The bound a schema node has for the keyword.
    pub fn get(self, s: &crate::schema::Schema) -> Option<i64> {
        match self {
            Keyword::MaxItems => s.max_items,
            Keyword::MaxProperties => s.max_properties,
            Keyword::MaxLength => s.max_length,
        }
    }

    /// Sets (or removes) the keyword's bound on a schema node.
    pub fn set(self, s: &mut crate::schema::Schema, v: Option<i64>) {
        match self {
            Keyword::MaxItems => s.max_items = v,
            Keyword::MaxProperties => s.max_properties = v,
            Keyword::MaxLength => s.max_length = v,
        }
    }

    /// What a bound `keyword: value` refuses (`lists of more than 8 items`).
    pub fn refused(self, value: i64) -> String {
        match self {
            Keyword::MaxItems => format!("lists of more than {value} items"),
            Keyword::MaxProperties => format!("maps of more than {value} properties"),
            Keyword::MaxLength => format!("values of more than {value} characters"),
        }
    }
}

impl std::fmt::Display for Keyword {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The alternatives of a list of suggestions: the bounds of each group, in order.
pub fn suggestion_groups(s: &[Suggestion]) -> Vec<Vec<&Suggestion>> {
    let mut out: Vec<Vec<&Suggestion>> = Vec::new();
    for x in s {
        match out.iter_mut().find(|g| g[0].group == x.group) {
            Some(g) => g.push(x),
            None => out.push(vec![x]),
        }
    }
    out
}

/// What drives a rule's cost: the schema bounds an author can add.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Drivers {
    /// Ancestors without maxItems / maxProperties, which make the cardinality fall back to the
    /// request-size estimate (`^.spec.items`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unbounded_ancestors: Vec<String>,
    /// Strings, lists and maps without maxLength / maxItems / maxProperties (so sized from the
    /// 3 MiB request limit) whose size the rule's cost reads: a call whose cost grows with it,
    /// a comprehension over it (`size()` reads none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unbounded_fields: Vec<String>,
}

impl Drivers {
    pub fn is_empty(&self) -> bool {
        self.unbounded_ancestors.is_empty() && self.unbounded_fields.is_empty()
    }
}

/// One CEL expression of a ValidatingAdmissionPolicy or a MutatingAdmissionPolicy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExpressionReport {
    /// e.g. `spec.validations[0].expression`.
    pub field_path: String,
    /// `validation`, `messageExpression`, `matchCondition`, `auditAnnotation`, `variable:<name>`;
    /// MutatingAdmissionPolicies: `applyConfiguration`, `jsonPatch`.
    pub kind: String,
    pub expression: String,
    /// The compile environment, as the upstream oracle names it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub env: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output_type: String,
    /// Upstream's estimate (object/oldObject/params typed dyn); absent when the expression
    /// does not compile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_cost: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_unbounded: Option<bool>,
    pub per_call_limit: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_exceeds_per_call_limit: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_error: Option<String>,
    /// Beyond upstream: the estimate with `object`/`oldObject`/`params` typed from the schemas
    /// of what the policy matches. Absent when no schema was available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typed: Option<TypedEstimate>,
    /// Where the expression's text is in the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<SourceLocation>,
    /// What its compile and upstream's estimate consulted of the minor's rules (not in the
    /// JSON output).
    #[serde(skip)]
    #[schemars(skip)]
    pub consulted: Consulted,
}

/// An estimate with `object`, `oldObject` and `params` typed from schemas.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TypedEstimate {
    /// The resources whose schemas typed `object`/`oldObject` (`apps/v1/deployments`, ...);
    /// the worst case over them.
    #[serde(default)]
    pub against: Vec<String>,
    pub min_cost: u64,
    pub max_cost: u64,
    pub max_cost_unbounded: bool,
    /// Strings, lists and maps the expression reads whose size no schema bound limits (no
    /// maxLength / maxItems / maxProperties), so it comes from the 3 MiB request size; only
    /// those that drive the cost, the one that drives it most first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unbounded_fields: Vec<String>,
    /// Reads whose size nothing gives (`request` fields, `params` without a schema, fields an
    /// open schema does not declare, variables celcost cannot follow): each can make the
    /// estimate 2^64-1. Only those that drive the cost, worst first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown_size_fields: Vec<String>,
    /// Fields the expression reads that a matched resource's schema does not have
    /// (`object.spec.template (not in v1/pods)`): for that resource the runtime stops with an
    /// error there, so nothing below them is costed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub absent_fields: Vec<String>,
    /// The matched resource the maximum comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst_against: Option<String>,
    /// Matched resources the expression does not type-check against (`v1/pods: <how>: <error>`,
    /// e.g. Containers concatenated with EphemeralContainers): for them it is compiled as
    /// upstream compiles it (`object`/`oldObject`/`params` as `dyn`) but sized from the schema,
    /// or, when even that does not compile, upstream's estimate stands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_against: Vec<String>,
    /// Set when no matched schema gave an estimate (not even with `object` as `dyn`): why; the
    /// numbers above are then upstream's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// How a policy's typed estimates were made: which schemas typed `object`, `oldObject` and
/// `params`, and what they do not cover.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyTyping {
    /// The matched resources with a schema (`matchConstraints.resourceRules`, without
    /// wildcards and subresources, as upstream's type checking reads them).
    #[serde(default)]
    pub schemas: Vec<TypedSchema>,
    /// The schema of `paramKind`, when one is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<TypedSchema>,
    /// What the typed estimates do not cover, and why (wildcards, subresources, resources and
    /// param kinds without a known schema).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_typed: Vec<String>,
}

/// A schema that typed a policy's variables.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TypedSchema {
    /// `apps/v1/deployments`.
    pub resource: String,
    /// `Deployment`.
    pub kind: String,
    /// Where the schema came from: `built-in schemas (k8s-openapi, Kubernetes 1.33 API)`,
    /// `CRD widgets.example.com`, `OpenAPI v3`.
    pub origin: String,
}

/// A policy's runtime budgets, summed the way the runtime spends them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyBudget {
    /// Worst case of one policy-binding evaluation (validations, their messageExpressions and
    /// the variables they use, each variable once), compared with [`RUNTIME_COST_BUDGET`]
    /// (0 for a MutatingAdmissionPolicy).
    pub validation_cost: u64,
    /// Same with the typed estimates, where available (upstream's where an expression has
    /// none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typed_validation_cost: Option<u64>,
    /// Worst case of the matchConditions, compared with [`MATCH_CONDITIONS_COST_BUDGET`].
    pub match_conditions_cost: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typed_match_conditions_cost: Option<u64>,
    /// Worst case of the auditAnnotations (a fresh budget).
    pub audit_annotations_cost: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typed_audit_annotations_cost: Option<u64>,
    /// MutatingAdmissionPolicies: worst case of one mutation's evaluation (its applyConfiguration
    /// or jsonPatch expression and the variables it uses, transitively, each once), compared
    /// with [`RUNTIME_COST_BUDGET`]: each mutation gets a fresh budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutation_cost: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typed_mutation_cost: Option<u64>,
}

/// An API server error in parts, as it was made (k8s.io/apimachinery `field.Error`): the text is
/// `<field>: <message>`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorParts {
    /// The field path it is about; empty for an error about no field (a kind not served).
    pub field: String,
    /// The error type's words (`Forbidden`, `Invalid value`, …); empty for an error that is not
    /// a field error.
    pub kind: String,
    /// The text after the field path: the type's words, the bad value, the detail.
    pub message: String,
    /// Which cost limit a cost error is about.
    pub cost: Option<CostError>,
}

impl ErrorParts {
    /// An error that is not a field error (its text names the field, if any, itself).
    pub fn other(field: &str, message: &str) -> Self {
        ErrorParts {
            field: field.to_string(),
            message: message.to_string(),
            ..ErrorParts::default()
        }
    }
}

/// The cost limits the API server's cost errors are about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CostError {
    /// A rule's cost × cardinality over the per-rule limit.
    Rule,
    /// A messageExpression's cost over the per-rule limit.
    MessageExpression,
    /// A rule among the costliest of a schema whose total is over the per-CRD limit.
    ContributedToTotal,
    /// A schema's total over the per-CRD limit.
    Total,
}

impl CostError {
    /// A rule's or messageExpression's own limit (not the total's).
    pub fn per_rule(self) -> bool {
        matches!(self, CostError::Rule | CostError::MessageExpression)
    }
}

/// What the per-rule limit is compared with: a CRD rule's cost × cardinality, or its
/// messageExpression's cost where that is higher (the API server checks both against the limit).
pub fn judged_rule_cost(cost: u64, message_expression_cost: Option<u64>) -> u64 {
    cost.max(message_expression_cost.unwrap_or(0))
}

impl RuleReport {
    /// The cost this rule is judged by ([`judged_rule_cost`]).
    pub fn judged_cost(&self) -> u64 {
        judged_rule_cost(self.cost, self.message_expression_cost)
    }

    /// Where the messageExpression's text is in the file, else the rule's.
    pub fn message_expression_or_rule_location(&self) -> Option<&SourceLocation> {
        self.message_expression_location
            .as_ref()
            .or(self.location.as_ref())
    }
}

impl ExpressionReport {
    /// The cost a policy expression is judged by: the typed estimate where there is one, else
    /// the untyped one; `None` for an expression not estimated.
    pub fn judged_cost(&self) -> Option<u64> {
        self.typed.as_ref().map(|t| t.max_cost).or(self.max_cost)
    }
}

/// One thing of a report whose cost is judged against a limit: a schema's total, a rule, a
/// rule's messageExpression, a policy's expression ([`ObjectReport::cost_units`]).
#[derive(Clone, Copy, Debug)]
pub enum CostUnit<'a> {
    Total(&'a SchemaReport),
    /// `schema`: the schema's field path when the object has several (CRDs whose versions
    /// have schemas of their own), which the rule's label starts with.
    Rule {
        schema: Option<&'a str>,
        rule: &'a RuleReport,
    },
    MessageExpression {
        schema: Option<&'a str>,
        rule: &'a RuleReport,
    },
    Expression(&'a ExpressionReport),
}

/// What a rule's unit name starts with: its schema's field path when the object has several
/// (`spec.versions[1].schema.openAPIV3Schema: `), else nothing.
pub fn cost_unit_prefix(schema: Option<&str>) -> String {
    schema.map(|p| format!("{p}: ")).unwrap_or_default()
}

impl<'a> CostUnit<'a> {
    /// The unit's name, one per unit of a report: `spec.versions[0]…: ^.spec [2]`,
    /// `… messageExpression`, `<schema> total`, a policy expression's field path.
    pub fn label(&self) -> String {
        let prefix = cost_unit_prefix;
        match self {
            CostUnit::Total(s) => format!("{} total", s.schema_field_path),
            CostUnit::Rule { schema, rule } => {
                format!("{}{} [{}]", prefix(*schema), rule.path, rule.index)
            }
            CostUnit::MessageExpression { schema, rule } => format!(
                "{}{} [{}] messageExpression",
                prefix(*schema),
                rule.path,
                rule.index
            ),
            CostUnit::Expression(e) => e.field_path.clone(),
        }
    }

    /// Where the unit is in the file: its text's place; a total's, its schema's.
    pub fn location(&self) -> Option<&'a SourceLocation> {
        match self {
            CostUnit::Total(s) => s.location.as_ref(),
            CostUnit::Rule { rule, .. } => rule.location.as_ref(),
            CostUnit::MessageExpression { rule, .. } => rule.message_expression_or_rule_location(),
            CostUnit::Expression(e) => e.location.as_ref(),
        }
    }
}

impl ObjectReport {
    /// Every unit whose cost is judged, in report order: each schema's total, then its rules
    /// each followed by its messageExpression; then the policy's expressions.
    pub fn cost_units(&self) -> Vec<CostUnit<'_>> {
        let several = self.schemas.len() > 1;
        let mut out = Vec::new();
        for s in &self.schemas {
            let schema = several.then_some(s.schema_field_path.as_str());
            out.push(CostUnit::Total(s));
            for rule in &s.rules {
                out.push(CostUnit::Rule { schema, rule });
                if rule.message_expression.is_some() {
                    out.push(CostUnit::MessageExpression { schema, rule });
                }
            }
        }
        out.extend(self.expressions.iter().map(CostUnit::Expression));
        out
    }

    /// A report on `object` (its `apiVersion` and `metadata.name`), a `kind` read from
    /// `source`, by the Kubernetes version `kubernetes_version` (`v1.36`), with nothing
    /// estimated yet.
    pub fn on(
        object: &serde_json::Value,
        kind: &str,
        source: &str,
        kubernetes_version: String,
    ) -> Self {
        let text = |v: Option<&serde_json::Value>| {
            v.and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        ObjectReport {
            source: source.to_string(),
            kind: kind.to_string(),
            api_version: text(object.get("apiVersion")),
            name: text(object.pointer("/metadata/name")),
            kubernetes_version,
            ..Default::default()
        }
    }

    /// The field path error `i` is about (empty when it names none).
    pub fn error_field(&self, i: usize) -> &str {
        self.error_parts.get(i).map_or("", |p| p.field.as_str())
    }

    /// Which cost limit error `i` is about, if it is a cost error.
    pub fn error_cost(&self, i: usize) -> Option<CostError> {
        self.error_parts.get(i).and_then(|p| p.cost)
    }

    /// The highest rule cost (rule × cardinality, or a messageExpression) of a CRD.
    pub fn highest_rule_cost(&self) -> u64 {
        self.schemas
            .iter()
            .flat_map(|s| s.rules.iter())
            .map(RuleReport::judged_cost)
            .max()
            .unwrap_or(0)
    }

    /// The highest schema total of a CRD.
    pub fn highest_total_cost(&self) -> u64 {
        self.schemas.iter().map(|s| s.total_cost).max().unwrap_or(0)
    }
}
