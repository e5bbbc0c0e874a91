//! Suggested bounds: for every CRD rule over the per-rule limit, every schema total over the
//! per-schema limit, and every rule or total at or above the near-budget threshold, the
//! `maxItems` / `maxProperties` / `maxLength` that bring it below the threshold — found by
//! re-estimating, never by a formula. Pure: no IO.
//!
//! # What is searched
//!
//! The *sites* of a finding are the schema nodes whose bounds its cost depends on:
//!
//! - the ancestors of the rule's node that are lists or maps (their `maxItems` /
//!   `maxProperties` set the cardinality; while one of them has none, the API server assumes
//!   the request-size cardinality, so every unbounded one must be bounded together — one
//!   *unit*);
//! - the strings, lists and maps the rule (or its messageExpression) reads, as the cost
//!   estimator asks their sizes (`maxLength`, `maxItems`, `maxProperties`), whether they have a
//!   bound already (then the suggestion lowers it) or not.
//!
//! For a schema total, the sites of every rule of the schema that costs anything.
//!
//! # How
//!
//! The cost is monotone in each bound, so the search is a binary search over candidate values:
//! the **1-2-5 series** (1, 2, 5, 10, 20, 50, 100, …) — a suggestion is always the largest
//! 1-2-5 value that fits (or the node's smallest sensible value: its `minItems` /
//! `minProperties` / `minLength`, the length of its default or of its longest enum value).
//! Each probe re-estimates the rule: the node's CEL type is built again from the changed schema
//! (as the API server builds it) and the rule's compiled expression is costed again with it, by
//! the same estimator; the cardinality is recomputed from the changed ancestors. The checked
//! expressions are kept, since bounds change no type.
//!
//! 1. Every site at its smallest sensible value: if even that does not fit, **no bound helps**
//!    (the cost is in fixed parts: literals, regexes on bounded strings, ...), and the reason
//!    says so with the numbers.
//! 2. Each unit alone (the biggest driver first — the one whose smallest value lowers the cost
//!    most): when it fits alone, its largest fitting value.
//! 3. When more than one unit matters, all of them **together**: the largest common value `c`
//!    (every bound set to `c`, or left where it is when lower), then any bound that is not
//!    needed is dropped, then each bound in turn (the biggest driver first) raised to its
//!    largest fitting value. That balances the bounds (`maxItems: 1000` on a list and
//!    `maxLength: 1000` on its strings rather than `maxItems: 2`).
//!
//! The suggestions are ordered least restrictive first (the highest smallest value), at most
//! [`MAX_SUGGESTIONS`]. Every one is then **verified**: applied to a copy of the object and
//! estimated again, whole, by the [`Estimator`]; it is kept only when the rule or total now
//! fits and the object has no error it did not have before; its `costAfter` is that
//! estimate's.
//!
//! # Bounds on the work
//!
//! Every search is finite by construction (binary searches over at most 60 candidates, one
//! pass per unit); on top of that an object gets at most [`Settings::max_evaluations`] probes
//! and [`Settings::max_verifications`] whole re-estimates, and its search runs within the
//! estimator's work budget ([`celcost_core::budget`]): over it, the findings left get a
//! `noSuggestion` saying so.
//!
//! # Modules
//!
//! - this file: the public API — [`Settings`], [`Keyword`], [`suggest`], [`suggest_across`],
//!   [`suggest_across_with`] — and what an entry point does before the search (the schema
//!   roots, the findings, the same finding on another minor);
//! - [`headroom`]: how far each bound can be raised before a rule or total goes over;
//! - [`candidates`]: the 1-2-5 series and the binary search for the largest value that fits;
//! - [`bounds`]: which keyword bounds a node, and its smallest sensible value;
//! - [`model`]: one rule's cost, re-estimated from a changed schema;
//! - [`sites`]: a finding's sites (what its cost depends on) and their units;
//! - [`search`]: the search over one finding's sites, answering with candidate groups;
//! - [`implied`]: the bound a rule itself implies (safe bounds, searched first);
//! - [`object`]: one object's findings searched and verified within its budget;
//! - [`verify`]: bounds applied to a copy of the object and estimated whole, memoized;
//! - [`text`]: the suggestions as text, and the object with the first ones applied.

use serde_json::Value;

use celcost_core::estimate::Estimator;
pub use celcost_core::report::Keyword;
use celcost_core::report::{ObjectReport, PER_RULE_COST_LIMIT, PER_SCHEMA_COST_LIMIT};
use celcost_core::schema::Schema;
use celcost_core::schema::path::{Node, Step, walk as node};

mod bounds;
mod candidates;
mod headroom;
mod implied;
mod model;
mod object;
mod search;
mod sites;
mod text;
mod verify;

pub use candidates::{largest_fitting, round_down_125, series_125};
pub use headroom::{
    Headroom, HeadroomSettings, LimitedBy, ObjectHeadroom, SchemaHeadroom, headroom,
};
use model::RuleCost;
use object::{Answered, apply_answers, search_findings};
pub use text::{
    apply_first_suggestions, schema_suggestion_text, suggestion_line, suggestion_lines,
    suggestion_text,
};
use verify::Verified;

/// Suggestions kept per finding (alternatives).
pub const MAX_SUGGESTIONS: usize = 3;
/// Units combined at most in one suggestion (the biggest drivers).
const MAX_COMBINED_UNITS: usize = 8;
/// Units a search weighs one by one at most. Each unit takes its own probes (alone, with the
/// others at their smallest, dropped, raised), and each probe costs as much as the rules it
/// re-estimates, which read every unit: over this many, the work would grow as the square of
/// what a rule reads. Beyond it, every unit gets the largest common value that fits (a few
/// probes), and then the units it need not bound are lifted ([`MAX_LIFT_ROUNDS`]). The public
/// corpus's largest search at the default threshold has 49 units.
const MAX_WEIGHED_UNITS: usize = 64;
/// Over [`MAX_WEIGHED_UNITS`]: how many needed units the lifting finds at most. Each round
/// bisects for the longest run of units that can be lifted together (cost only grows as bounds
/// are lifted), so a search takes O(rounds · log units) probes, not one per unit, and sets
/// O(rounds · units) bounds.
const MAX_LIFT_ROUNDS: usize = 8;
/// Rules of a schema whose cost a total's search follows (the costliest); the others count as
/// fixed.
const MAX_TOTAL_RULES: usize = 256;
/// The stack a search runs on (schemas nest to 1,000 levels).
const SEARCH_STACK: usize = 64 << 20;

/// What counts as a finding, and how much work one object's search may take.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// A rule or total at or above this percent of its limit (or over the limit) gets
    /// suggestions (the CLI's and the operator's near-budget percent), and a suggestion brings
    /// it below both.
    pub near_budget_percent: f64,
    /// Probes (re-estimates of a rule) one object's search may make.
    pub max_evaluations: usize,
    /// Whole-object re-estimates (verifications) one object may take.
    pub max_verifications: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings::new(celcost_core::report::DEFAULT_NEAR_BUDGET_PERCENT)
    }
}

impl Settings {
    /// `near_budget_percent` not above 0 (or not a number) counts as the default.
    pub fn new(near_budget_percent: f64) -> Self {
        let p = if near_budget_percent.is_finite() && near_budget_percent > 0.0 {
            near_budget_percent
        } else {
            celcost_core::report::DEFAULT_NEAR_BUDGET_PERCENT
        };
        Settings {
            near_budget_percent: p,
            max_evaluations: 4_000,
            max_verifications: 48,
        }
    }

    /// Whether `cost` is at most `limit` and below the threshold (the same share the sarif and
    /// github outputs call near budget).
    pub fn fits(&self, cost: u64, limit: u64) -> bool {
        cost <= limit && !celcost_core::report::reaches_share(cost, limit, self.near_budget_percent)
    }
}

// ---------------------------------------------------------------------------------------------
// The entry point.

/// Where a schema root is in the object.
struct Root {
    /// JSON pointers of the schema (every version's, for a shared one).
    pointers: Vec<String>,
    schema: Schema,
}

/// The JSON pointers of the `openAPIV3Schema`s a report's schema (`schema_field_path`, serving
/// `versions`) is: its version's, or each named version's of a schema they all share
/// (`spec.validation`); those that are present and not null.
pub fn schema_pointers(
    object: &Value,
    schema_field_path: &str,
    versions: &[String],
) -> Vec<String> {
    let Some(vs) = object.pointer("/spec/versions").and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut pointers = Vec::new();
    for (i, v) in vs.iter().enumerate() {
        let named = v
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| versions.iter().any(|x| x == n));
        let p = format!("/spec/versions/{i}/schema/openAPIV3Schema");
        let exact = schema_field_path == format!("spec.versions[{i}].schema.openAPIV3Schema");
        let shared = schema_field_path == "spec.validation.openAPIV3Schema" && named;
        if (exact || shared) && object.pointer(&p).is_some_and(|s| !s.is_null()) {
            pointers.push(p);
        }
    }
    pointers
}

impl Root {
    fn read(object: &Value, field_path: &str, versions: &[String]) -> Option<Root> {
        let pointers = schema_pointers(object, field_path, versions);
        let first = object.pointer(pointers.first()?)?;
        let schema = Schema::from_json(first, field_path).ok()?;
        Some(Root { pointers, schema })
    }
}

/// A finding of a schema: a rule (index into its rules) or the total.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Finding {
    Rule(usize),
    Total,
}

impl Finding {
    /// The limit the finding is judged against: per rule, or per schema for a total.
    fn limit(self) -> u64 {
        match self {
            Finding::Rule(_) => PER_RULE_COST_LIMIT,
            Finding::Total => PER_SCHEMA_COST_LIMIT,
        }
    }
}

/// The report with suggested bounds (or why there are none) on every CRD rule and schema total
/// over its limit or at the near-budget threshold. `object` is the CRD the report is of, and
/// `estimator` the one that made it (any minor). Reports of other kinds, or whose estimate
/// stopped, come back unchanged.
pub fn suggest(
    estimator: &Estimator,
    object: &Value,
    report: ObjectReport,
    settings: &Settings,
) -> ObjectReport {
    // All of it on a stack of its own: reading the schema back, applying bounds to copies of the
    // object and verifying them recurse as deep as the schema nests, whatever the caller's stack
    // (a test thread's, a blocking pool's).
    stacker::grow(SEARCH_STACK, || {
        celcost_core::crd::with_compiles_kept(|| {
            suggest_on_this_stack(estimator, object, report, settings)
        })
    })
}

/// As [`suggest`], with bounds that fit every minor of a range: `report` is `estimator`'s, and
/// `others` the other minors' estimators with their own reports of the same object. Every
/// suggestion is verified whole on each minor (it is kept only where the finding then fits on
/// all of them, and no minor gets an error it did not have); a rule or total at or over the
/// threshold only on another minor is searched with that minor's estimator, and its suggestions
/// (verified on all) are given to the same rule or total of `report`.
pub fn suggest_across(
    estimator: &Estimator,
    others: &[(&Estimator, &ObjectReport)],
    object: &Value,
    report: ObjectReport,
    settings: &Settings,
) -> ObjectReport {
    suggest_across_with(estimator, others, None, object, report, settings)
}

/// Whether a minor (the second argument) estimates a copy of an object (the third) with bounds
/// set (the fourth: each node of the object a bound is set on, with the keyword set there) as
/// one of the known minors (the first) does: a verification on it is then theirs. With each
/// known minor, when known, what its estimate of the copy consulted (its report's
/// `made_by.consulted.rules`: `RangeEstimator::estimate_alike_bounded`); without it, whatever
/// the object's words may reach.
pub type Alike<'a> = &'a AlikeTest<'a>;

/// What an [`Alike`] refers to.
pub type AlikeTest<'a> = dyn Fn(&[(&Estimator, Option<u64>)], &Estimator, &Value, &[(&Value, Keyword)]) -> bool
    + Sync
    + 'a;

/// [`suggest_across`], skipping the verifications `alike` says would repeat another's (a range's
/// minors that cannot differ on the object: `RangeEstimator::estimate_alike`).
pub fn suggest_across_with(
    estimator: &Estimator,
    others: &[(&Estimator, &ObjectReport)],
    alike: Option<Alike<'_>>,
    object: &Value,
    report: ObjectReport,
    settings: &Settings,
) -> ObjectReport {
    stacker::grow(SEARCH_STACK, || {
        // Every whole estimate a search verifies is of the object with bounds set: their
        // compiles are kept.
        celcost_core::crd::with_compiles_kept(|| {
            suggest_across_on_this_stack(estimator, others, alike, object, report, settings)
        })
    })
}

fn suggest_on_this_stack(
    estimator: &Estimator,
    object: &Value,
    report: ObjectReport,
    settings: &Settings,
) -> ObjectReport {
    suggest_across_on_this_stack(estimator, &[], None, object, report, settings)
}

/// The findings of a report: every rule and total not below the threshold.
fn findings_of(report: &ObjectReport, settings: &Settings) -> Vec<(usize, Finding)> {
    let mut findings = Vec::new();
    for (si, s) in report.schemas.iter().enumerate() {
        for (ri, r) in s.rules.iter().enumerate() {
            if !settings.fits(RuleCost::of_report(r).judged(), PER_RULE_COST_LIMIT) {
                findings.push((si, Finding::Rule(ri)));
            }
        }
        if !settings.fits(s.total_cost, PER_SCHEMA_COST_LIMIT) {
            findings.push((si, Finding::Total));
        }
    }
    findings
}

/// Where a finding of `from` is in `to` (another minor's report of the same object): the schema
/// of the same field path, the rule of the same node and index.
fn same_finding(
    from: &ObjectReport,
    (si, finding): (usize, Finding),
    to: &ObjectReport,
) -> Option<(usize, Finding)> {
    let schema = from.schemas.get(si)?;
    let tsi = to
        .schemas
        .iter()
        .position(|s| s.schema_field_path == schema.schema_field_path)?;
    match finding {
        Finding::Total => Some((tsi, Finding::Total)),
        Finding::Rule(ri) => {
            let r = schema.rules.get(ri)?;
            let tri = to.schemas[tsi]
                .rules
                .iter()
                .position(|x| x.node_field_path == r.node_field_path && x.index == r.index)?;
            Some((tsi, Finding::Rule(tri)))
        }
    }
}

/// Another minor a suggestion must fit: its estimator, its own report of the object, the
/// whole estimates its verifications made, and whether it estimates a copy as the searched
/// minor does.
struct Other<'e> {
    estimator: &'e Estimator,
    base: &'e ObjectReport,
    verified: Verified,
    alike: Option<Alike<'e>>,
    searched: &'e Estimator,
}

fn suggest_across_on_this_stack(
    estimator: &Estimator,
    others: &[(&Estimator, &ObjectReport)],
    alike: Option<Alike<'_>>,
    object: &Value,
    mut report: ObjectReport,
    settings: &Settings,
) -> ObjectReport {
    if report.kind != "CustomResourceDefinition" || report.stopped.is_some() {
        return report;
    }
    let others: Vec<(&Estimator, &ObjectReport)> = others
        .iter()
        .copied()
        .filter(|(_, r)| r.stopped.is_none() && r.kind == report.kind)
        .collect();
    let findings = findings_of(&report, settings);
    // Findings on another minor only (the same rule or total fits on `estimator`'s).
    let mut elsewhere: Vec<(usize, usize, Finding)> = Vec::new();
    for (oi, (_, r)) in others.iter().enumerate() {
        for f in findings_of(r, settings) {
            let here = same_finding(r, f, &report);
            let covered = here.is_some_and(|h| findings.contains(&h))
                || elsewhere
                    .iter()
                    .any(|&(pj, psi, pf)| same_finding(others[pj].1, (psi, pf), r) == Some(f));
            if here.is_some() && !covered {
                elsewhere.push((oi, f.0, f.1));
            }
        }
    }
    if findings.is_empty() && elsewhere.is_empty() {
        return report;
    }
    let answers = search_findings(
        estimator, &others, alike, object, &report, findings, settings,
    );
    apply_answers(&mut report, answers);
    // Each other minor's findings, searched with its estimator and verified on every minor.
    for (oi, (e, r)) in others.iter().enumerate() {
        let mine: Vec<(usize, Finding)> = elsewhere
            .iter()
            .filter(|(o, _, _)| *o == oi)
            .map(|&(_, si, f)| (si, f))
            .collect();
        if mine.is_empty() {
            continue;
        }
        let mut rest: Vec<(&Estimator, &ObjectReport)> = vec![(estimator, &report)];
        rest.extend(
            others
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != oi)
                .map(|(_, x)| *x),
        );
        let answers = search_findings(e, &rest, alike, object, r, mine, settings);
        let moved: Vec<(usize, Finding, Answered)> = answers
            .into_iter()
            .filter_map(|(si, f, a)| {
                same_finding(r, (si, f), &report).map(|(tsi, tf)| (tsi, tf, a))
            })
            .collect();
        apply_answers(&mut report, moved);
    }
    report
}

#[cfg(test)]
mod tests;
