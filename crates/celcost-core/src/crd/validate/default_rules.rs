//! The CEL rules the API server evaluates on each `default` (apiextensions
//! `schema/defaulting/validation.go`: once a default passes its schema, `cel.NewValidator(s,
//! isResourceRoot, PerCallLimit).Validate(ctx, <node>.default, s, default, default, budget)`,
//! `schema/cel/validation.go`): the rules of the node and of every node below it, each on the
//! part of the default it applies to, with `oldSelf` = `self`; when that finds nothing, again
//! with no `oldSelf` (ratcheting), where only `optionalOldSelf` rules can fail. All defaults of
//! a schema share one `RuntimeCELCostBudget`.
//!
//! The rules are compiled as `NewValidator` compiles them, with `StoredExpressionsEnvLoader`
//! (`Env::stored_for_minor`: every library of the minor, not only those of its compatibility
//! version). A rule that does not compile is reported as it is there (`<path>: Invalid value:
//! "<type>": rule compile error: …`), with no evaluation. A rule is evaluated with the `cel`
//! crate's interpreter (`crate::cel::eval`) only when the outcome is certain: every function it
//! calls is one the interpreter follows cel-go on, the default's values convert to CEL values, the
//! result is a boolean (or an evaluation error cel-go words as celcost can,
//! `crate::cel::eval::EvalError`: reported as `<error> evaluating rule: <rule>`), and a bound
//! of its runtime cost fits the per-call limit and what is left of the budget. The bound is the
//! smaller of its static estimate with the default's own sizes (or, with no comprehension, a
//! bound from the default's size) and its runtime cost counted on the default as cel-go's cost
//! tracker counts it, or more (`crate::cel::runtime_cost`: used only when its evaluator follows
//! every function of the rule and agrees with the interpreter's outcome). So a comprehension over
//! `self.?m.orValue({})`, which cel-go's estimate cannot bound, is evaluated on a small default
//! as upstream evaluates it; the bound is what is taken from the budget. A count over the limit
//! is never reported as upstream's `operation cancelled: actual cost limit exceeded` (the count
//! may be more than cel-go's), and the rules after such a rule are not evaluated (the budget
//! left is no longer known). Nothing is guessed: a rule not evaluated is listed in
//! `unevaluated` with why, and counts as passing. Two-variable comprehensions are evaluated as
//! one-variable ones over the `[index or key, value]` pairs
//! (`crate::cel::eval::lower_for_interpreter`), except `transformList` over a map
//! of more than one entry (its order is Go's map order). A failed rule with a `fieldPath` is
//! reported at that path below the default (at the node when its messageExpression does not
//! compile). Not evaluated today: timestamps, durations, bytes, Kubernetes library functions
//! other than `isIP` and the URL library, `format`'s `%e`.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::cel::cost::{AstNode, Size, by_either_algorithm, estimate};
use crate::cel::env::{CheckerPanic, Env};
use crate::cel::eval::library::{self, Ext};
use crate::cel::eval::{GoError, Interpreter, Outcome, Prepared, Val};
use crate::cel::k8s_cost::{KubernetesEstimator, SizeSource};
use crate::cel::runtime_cost::{self, Count};
use crate::cel::types::Type;
use crate::crd::compile_rule;
use crate::crd::fielderr::{BadValue, FieldError, failed_rules_show_the_value};
use crate::report::{PER_CALL_LIMIT, RUNTIME_COST_BUDGET};
use crate::schema::decltype::{DeclKind, DeclType, DeclTypeProvider, escape, schema_decl_type};
use crate::schema::{AdditionalProperties, Schema, ValidationRule};

/// `celconfig.MaxEvaluatedMessageExpressionSizeBytes`.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// Static estimates from which a rule's runtime cost is counted even when the estimate fits (a
/// count takes work; below this, what it could save of the budget is small).
const COUNT_FROM: u64 = 10_000;

/// The evaluation of the rules on the defaults of one schema root.
pub(super) struct DefaultRules<'e> {
    env: &'e Env,
    /// The environment the rules are compiled in: `cel.NewValidator` compiles with
    /// `StoredExpressionsEnvLoader` (every library of the minor, not only those of its
    /// compatibility version), made when a schema has rules.
    stored: Option<Arc<Env>>,
    interpreter: Option<Interpreter>,
    /// What is left of the `RuntimeCELCostBudget` at least (each rule evaluation charged with a
    /// bound of its runtime cost: its static estimate or its counted runtime cost).
    budget: u64,
    /// A rule may have run out of the budget: the rules after it are not evaluated.
    budget_uncertain: bool,
    /// A rule went over the per-call limit (`operation cancelled`): the API server's
    /// validation of defaults returns there (`remainingCost < 0`), no default after it is
    /// validated.
    pub stopped: bool,
    /// Rules that were not evaluated, and why (`<field path>: <rule>: <why>`).
    pub unevaluated: Vec<String>,
    /// The first rule the API server's CEL compiler panics on.
    pub panic: Option<(String, CheckerPanic)>,
    /// Whether a schema node or one below it has rules, by node (each subtree walked once).
    rules_below: HashMap<*const Schema, bool>,
    /// Which of the two runs (`Validate(…, default, default)`, then, when that finds nothing,
    /// `Validate(…, default, nil)` for ratcheting) is under way.
    second_run: bool,
}

impl<'e> DefaultRules<'e> {
    pub(super) fn new(env: &'e Env) -> Self {
        DefaultRules {
            env,
            stored: None,
            interpreter: None,
            budget: RUNTIME_COST_BUDGET,
            budget_uncertain: false,
            stopped: false,
            second_run: false,
            rules_below: HashMap::new(),
            unevaluated: Vec::new(),
            panic: None,
        }
    }

    /// `hasXValidations`, remembered per node.
    fn has_rules(&mut self, s: &Schema) -> bool {
        let key = s as *const Schema;
        if let Some(&b) = self.rules_below.get(&key) {
            return b;
        }
        crate::budget::charge(1);
        let b = !s.x_validations.is_empty()
            || s.items.as_deref().is_some_and(|i| self.has_rules(i))
            || matches!(&s.additional_properties, Some(AdditionalProperties::Schema(a)) if self.has_rules(a))
            || s.properties.values().any(|p| self.has_rules(p));
        self.rules_below.insert(key, b);
        b
    }

    /// The stored-expressions environment (the minor's own when no schema had rules yet).
    fn cel(&self) -> Arc<Env> {
        match &self.stored {
            Some(e) => e.clone(),
            None => Arc::new(Env::stored_for_minor(self.env.minor)),
        }
    }

    pub(super) fn kubernetes(&self) -> crate::cel::decls::Version {
        self.env.kubernetes
    }

    /// `cel.NewValidator(s, isResourceRoot).Validate(dfld, s, default, default)`: the errors of
    /// the rules of `s` and below on `default`.
    pub(super) fn validate(
        &mut self,
        dfld: &str,
        s: &Schema,
        is_resource_root: bool,
        default: &Value,
    ) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if !self.has_rules(s) {
            return errs;
        }
        if self.stored.is_none() {
            self.stored = Some(Arc::new(Env::stored_for_minor(self.env.minor)));
        }
        let decl = schema_decl_type(s, is_resource_root, self.env.minor, "selfType");
        let provider = decl
            .as_ref()
            .map(|d| DeclTypeProvider::new(&[d], self.env.minor));
        let mut fld = dfld.to_string();
        // The second run, if the first found nothing: CRDValidationRatcheting (on by default
        // from 1.30), the update from nothing to the default, where only rules with
        // `optionalOldSelf` differ (`oldSelf` is none; other transition rules are skipped, the
        // rest pass again).
        for second_run in [false, true] {
            if second_run && (!errs.is_empty() || self.stopped) {
                break;
            }
            self.second_run = second_run;
            self.node(
                &mut fld,
                s,
                decl.as_ref(),
                provider.as_ref(),
                default,
                &mut errs,
            );
        }
        self.second_run = false;
        errs
    }

    /// `Validator.validate` of one node: its rules on `value`, then its items, additional
    /// properties and properties.
    fn node(
        &mut self,
        fld: &mut String,
        s: &Schema,
        decl: Option<&Arc<DeclType>>,
        provider: Option<&DeclTypeProvider>,
        value: &Value,
        errs: &mut Vec<FieldError>,
    ) {
        crate::budget::charge(1);
        if self.stopped || value.is_null() || !self.has_rules(s) {
            return;
        }
        if !s.x_validations.is_empty() {
            match (decl, provider) {
                (Some(d), Some(p)) => self.rules(fld, s, d, p, value, errs),
                _ => self.skip(fld, "all rules", "the node has no CEL type"),
            }
        }
        match value {
            Value::Array(items) => {
                let (Some(item_schema), Some(d)) = (s.items.as_deref(), decl) else {
                    return;
                };
                let elem = d.elem();
                for (i, v) in items.iter().enumerate() {
                    let len = fld.len();
                    fld.push_str(&format!("[{i}]"));
                    self.node(fld, item_schema, elem, provider, v, errs);
                    fld.truncate(len);
                }
            }
            Value::Object(map) => {
                if let Some(AdditionalProperties::Schema(ap)) = &s.additional_properties {
                    let elem = decl.and_then(|d| d.elem());
                    for (k, v) in map {
                        let len = fld.len();
                        fld.push_str(&format!("[{k}]"));
                        self.node(fld, ap, elem, provider, v, errs);
                        fld.truncate(len);
                    }
                }
                if s.properties.is_empty() {
                    return;
                }
                for (k, v) in map {
                    let Some(p) = s.properties.get(k) else {
                        continue;
                    };
                    if escape(k).is_none() {
                        // Upstream converts the property on its own (a type of its own).
                        if self.has_rules(p) {
                            self.skip(fld, k, "a property whose name CEL cannot escape");
                        }
                        continue;
                    }
                    // Fields with no CEL type are left out of CEL validation.
                    let Some(fd) = decl.and_then(|d| escape(k).and_then(|e| d.field(&e))) else {
                        continue;
                    };
                    let len = fld.len();
                    fld.push('.');
                    fld.push_str(k);
                    self.node(fld, p, Some(fd), provider, v, errs);
                    fld.truncate(len);
                }
            }
            _ => {}
        }
    }

    /// Whether a rule of the node reads `oldSelf` (`validationActivationWithOldSelf`: then the
    /// messageExpressions read it too).
    fn uses_old_self(&self, s: &Schema) -> bool {
        s.x_validations.iter().any(|r| r.rule.contains("oldSelf"))
    }

    fn skip(&mut self, fld: &str, rule: &str, why: &str) {
        self.unevaluated.push(format!("{fld}: {rule}: {why}"));
    }

    /// A rule not evaluated: its estimated cost charged to the budget, which is uncertain
    /// from then on when the estimate does not rule out the runtime limits (`over_limit`).
    fn skip_charging(&mut self, fld: &str, rule: &str, cost: u64, over_limit: bool, why: &str) {
        self.budget = self.budget.saturating_sub(cost);
        self.budget_uncertain |= over_limit;
        self.skip(fld, rule, why);
    }

    /// `validateExpressions`: each rule of the node on `value`.
    fn rules(
        &mut self,
        fld: &str,
        s: &Schema,
        decl: &Arc<DeclType>,
        provider: &DeclTypeProvider,
        value: &Value,
        errs: &mut Vec<FieldError>,
    ) {
        let mut self_val: Option<Option<Val>> = None;
        for rule in &s.x_validations {
            crate::budget::at(fld);
            let optional_old_self =
                rule.optional_old_self == Some(true) && self.env.minor.optional_old_self;
            if self.second_run && !optional_old_self {
                continue;
            }
            let cr = compile_rule(&self.cel(), rule, decl, provider);
            if self.second_run && !cr.uses_old_self {
                continue;
            }
            if let Some(p) = cr.panic {
                self.panic.get_or_insert((fld.to_string(), p));
                return;
            }
            if let Some(e) = &cr.error {
                errs.push(FieldError::invalid(
                    fld,
                    BadValue::Str(s.type_.clone()),
                    &format!("rule compile error: {}", e.detail),
                ));
                continue;
            }
            if rule.rule.trim().is_empty() {
                continue;
            }
            if self.budget_uncertain {
                self.skip(
                    fld,
                    &rule.rule,
                    "the rules before it may have spent the runtime cost budget",
                );
                continue;
            }
            // Spent whatever the outcome (upstream evaluates it): the static estimate with the
            // default's own sizes bounds it, and so does the runtime count (when it follows the
            // rule and agrees with the interpreter's outcome); the smaller one is spent.
            let limit = PER_CALL_LIMIT.min(self.budget);
            let static_cost = self.bound(&rule.rule, optional_old_self, decl, provider, value);
            let v = self_val.get_or_insert_with(|| to_val(value, decl)).clone();
            let old_self = v.as_ref().and_then(|v| {
                match (cr.uses_old_self, optional_old_self, self.second_run) {
                    (false, _, _) => None,
                    (true, false, _) => Some(v.clone()),
                    (true, true, false) => Some(Val::Optional(Some(Box::new(v.clone())))),
                    (true, true, true) => Some(Val::Optional(None)),
                }
            });
            // A list of `x-kubernetes-list-type: set` or `map` is an `unstructuredSetList` /
            // `unstructuredMapList`: its equality ignores order and its `+` merges, where celcost
            // holds a plain list.
            let v = v.filter(|_| !(keyed_lists(s, value) && compares_or_adds(&rule.rule)));
            let Some(v) = v else {
                let (over, why) = if static_cost > limit {
                    (
                        true,
                        "its estimated cost does not rule out the runtime cost limits",
                    )
                } else {
                    (false, "the default has values celcost does not evaluate")
                };
                self.skip_charging(fld, &rule.rule, static_cost, over, why);
                continue;
            };
            let passed = match self.evaluate(
                fld,
                &rule.rule,
                &v,
                old_self.as_ref(),
                static_cost,
                Expression::Rule,
            ) {
                Evaluated::Value(Val::Bool(b)) => b,
                Evaluated::Value(other) => {
                    self.skip(fld, &rule.rule, &format!("it evaluates to {other:?}"));
                    continue;
                }
                Evaluated::Error(Some(e)) => {
                    errs.push(evaluation_error(fld, s, rule, &e));
                    continue;
                }
                Evaluated::Error(None) => {
                    self.skip(
                        fld,
                        &rule.rule,
                        "its evaluation fails with an error celcost does not word as cel-go does",
                    );
                    continue;
                }
                Evaluated::Unknown => continue,
                Evaluated::Cancelled => {
                    errs.push(FieldError::invalid(
                        fld,
                        BadValue::Str(s.type_.clone()),
                        &format!(
                            "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                            rule_error_string(rule)
                        ),
                    ));
                    self.stopped = true;
                    return;
                }
            };
            if passed {
                continue;
            }
            // A messageExpression that does not compile is no program (`compileRule` returns
            // there, before the rule's fieldPath is normalized): the rule's message, at the node.
            let compiled_message = cr.message_error.is_none();
            let detail = match cr.message_expression_cost {
                Some(_) if compiled_message => {
                    let cost = self.bound(&rule.message_expression, false, decl, provider, value);
                    // The activation of the rules (`oldSelf` is the default on the first run).
                    let old = (self.uses_old_self(s) && !self.second_run).then_some(&v);
                    self.message(fld, rule, &v, old, cost)
                }
                _ => rule_message_or_default(rule),
            };
            let bad = if !failed_rules_show_the_value(self.env.kubernetes) {
                BadValue::Str(s.type_.clone())
            } else if s.type_ == "object" || s.type_ == "array" {
                BadValue::Omit
            } else {
                BadValue::any(value.clone())
            };
            // A failed rule with a valid fieldPath is reported there (`currentFldPath.Child(
            // compiled.NormalizedRuleFieldPath)`).
            let at = match super::node::normalized_field_path(&rule.field_path, s) {
                Some(p) if compiled_message && !rule.field_path.is_empty() && !p.is_empty() => {
                    format!("{fld}.{p}")
                }
                _ => fld.to_string(),
            };
            if self.stopped {
                // The messageExpression went over the per-call limit: `Invalid` at the rule's
                // path, with the schema type, and nothing after it.
                errs.push(FieldError::invalid(
                    &at,
                    BadValue::Str(s.type_.clone()),
                    &detail,
                ));
                return;
            }
            errs.push(field_error_for_reason(
                &at,
                bad,
                &detail,
                rule.reason.as_deref(),
            ));
        }
    }

    /// The detail of a failed rule: its (compiled) messageExpression's value when that evaluates
    /// to a fitting string, else its message or `failed rule: <rule>` (`evalMessageExpression`:
    /// a failure, a value that is no string, an empty one once trimmed, one of more than 5 KiB
    /// or with a line break all give the rule's message, the cost spent).
    fn message(
        &mut self,
        fld: &str,
        rule: &ValidationRule,
        v: &Val,
        old_self: Option<&Val>,
        static_cost: u64,
    ) -> String {
        let fallback = rule_message_or_default(rule);
        match self.evaluate(
            fld,
            &rule.message_expression,
            v,
            old_self,
            static_cost,
            Expression::Message,
        ) {
            Evaluated::Value(Val::String(m)) => {
                let m = m.trim();
                if m.is_empty() || m.len() > MAX_MESSAGE_BYTES || m.contains('\n') {
                    fallback
                } else {
                    m.to_string()
                }
            }
            // An evaluation error or a result of another type: the rule's message (upstream
            // logs the messageExpression's error).
            Evaluated::Value(_) | Evaluated::Error(_) => fallback,
            Evaluated::Unknown => fallback,
            // Reported by the caller, which stops (`evalMessageExpression`'s `ErrorTypeInvalid`).
            Evaluated::Cancelled => {
                self.stopped = true;
                format!(
                    "no further validation rules will be run due to call cost exceeds limit for messageExpression: {}",
                    crate::cel::gofmt::go_quote(&rule.message_expression)
                )
            }
        }
    }

    /// Evaluates a rule or a messageExpression on `v` and spends its cost: with the `cel`
    /// crate's interpreter where it follows cel-go (and its runtime count agrees), else with
    /// the evaluator of [`crate::cel::runtime_cost`], which follows every function of the
    /// environment ([`crate::cel::eval::library`]) and counts the cost as it goes. What neither
    /// follows is noted as not evaluated ([`Evaluated::Unknown`]).
    fn evaluate(
        &mut self,
        fld: &str,
        source: &str,
        v: &Val,
        old_self: Option<&Val>,
        static_cost: u64,
        what: Expression,
    ) -> Evaluated {
        let limit = PER_CALL_LIMIT.min(self.budget);
        let count_from = match what {
            Expression::Rule => COUNT_FROM,
            Expression::Message => u64::MAX,
        };
        // Counted where the static estimate does not fit, or is large enough that a tighter
        // bound may leave the rules after it more of the budget.
        let mut counted = (static_cost > limit || static_cost >= count_from)
            .then(|| self.count(source, v, old_self, limit));
        let held = v.holds_ext() || old_self.is_some_and(Val::holds_ext);
        let result = if held {
            Err("it reads values the interpreter does not hold".to_string())
        } else if static_cost > limit && !matches!(counted, Some(Count::Counted(_))) {
            if self.cancelled(source, v, old_self) {
                return Evaluated::Cancelled;
            }
            self.skip_charging(fld, source, static_cost, true, &what.unbounded());
            return Evaluated::Unknown;
        } else {
            self.eval(source, v, old_self)
        };
        let why = match result {
            Ok(result) => {
                // The runtime count, when the interpreter agrees with its outcome.
                let runtime = match (&counted, &result) {
                    (Some(Count::Counted(c)), Ok(r)) if c.outcome.as_ref() == Ok(r) => Some(c.cost),
                    (Some(Count::Counted(c)), Err(_)) if c.outcome.is_err() => Some(c.cost),
                    _ => None,
                };
                match (runtime, what) {
                    (Some(c), Expression::Rule) => {
                        self.budget = self.budget.saturating_sub(c.min(static_cost))
                    }
                    (Some(c), Expression::Message) => self.budget = self.budget.saturating_sub(c),
                    (None, _) if static_cost <= limit => {
                        self.budget = self.budget.saturating_sub(static_cost)
                    }
                    (None, _) => {
                        self.skip_charging(fld, source, static_cost, true, &what.uncounted());
                        return Evaluated::Unknown;
                    }
                }
                match result {
                    Ok(v) => return Evaluated::Value(v),
                    Err(e) => return Evaluated::Error(e),
                }
            }
            Err(why) => why,
        };
        // The evaluator of `runtime_cost`, on what the interpreter does not follow.
        let c = match counted.take() {
            Some(c @ Count::Counted(_)) => c,
            _ => self.count(source, v, old_self, limit),
        };
        match c {
            Count::Counted(c) => {
                self.budget = self.budget.saturating_sub(c.cost.min(static_cost));
                match c.outcome {
                    Ok(v) => Evaluated::Value(v),
                    Err(f) => Evaluated::Error(f.0),
                }
            }
            Count::Over if self.cancelled(source, v, old_self) => Evaluated::Cancelled,
            Count::Over => {
                self.skip_charging(fld, source, static_cost, true, &what.uncounted());
                Evaluated::Unknown
            }
            Count::Unsupported => {
                self.skip_charging(
                    fld,
                    source,
                    static_cost,
                    static_cost > limit,
                    &what.not_followed(&why),
                );
                Evaluated::Unknown
            }
        }
    }

    /// Whether cel-go certainly cancels `source` on `v` for going over the per-call limit
    /// (`operation cancelled: actual cost limit exceeded`) with the budget left (so that the
    /// API server reports the limit, not the budget): a count of no more than cel-go spends
    /// goes over the limit, and the whole evaluation counted as no less fits what is left.
    fn cancelled(&mut self, source: &str, v: &Val, old_self: Option<&Val>) -> bool {
        let Ok(parsed) = self.cel().parse_cached(source) else {
            return false;
        };
        let mut vars: Vec<(&str, &Val)> = vec![("self", v)];
        if let Some(o) = old_self {
            vars.push(("oldSelf", o));
        }
        let rules = runtime_cost::Rules::of(self.env.minor);
        crate::budget::charge(v.weight() as u64);
        if runtime_cost::count_at_least(&parsed.expr, &vars, PER_CALL_LIMIT, rules) != Count::Over {
            return false;
        }
        matches!(
            runtime_cost::count(&parsed.expr, &vars, self.budget, rules),
            Count::Counted(_)
        )
    }

    /// The static estimate of `source` with the sizes of `value` (each path at the largest of
    /// the values it reaches): a bound of its runtime cost on `value`. Its maximum when it does
    /// not compile.
    fn bound(
        &self,
        source: &str,
        optional_old_self: bool,
        decl: &Arc<DeclType>,
        provider: &DeclTypeProvider,
        value: &Value,
    ) -> u64 {
        let old_self = if optional_old_self {
            Type::optional(decl.cel.clone())
        } else {
            decl.cel.clone()
        };
        let vars = vec![
            ("self".to_string(), decl.cel.clone()),
            ("oldSelf".to_string(), old_self),
        ];
        let env = self.cel();
        let Ok(checked) = env.compile(source, &vars, provider) else {
            return u64::MAX;
        };
        let sizes = ValueSizes { root: value };
        let embedder = KubernetesEstimator {
            minor: self.env.minor,
            sizes: Some(&sizes),
        };
        let estimated = by_either_algorithm(env.cost_options(), |opts| {
            estimate(&checked, &embedder, opts).max
        });
        estimated.min(straight_line_bound(checked.expr(), value).unwrap_or(u64::MAX))
    }

    /// The runtime cost of `source` on `v` counted as cel-go counts it, or more
    /// ([`crate::cel::runtime_cost`]), up to `limit`.
    fn count(&self, source: &str, v: &Val, old_self: Option<&Val>, limit: u64) -> Count {
        let Ok(parsed) = self.cel().parse_cached(source) else {
            return Count::Unsupported;
        };
        crate::budget::charge(v.weight() as u64);
        let mut vars: Vec<(&str, &Val)> = vec![("self", v)];
        if let Some(o) = old_self {
            vars.push(("oldSelf", o));
        }
        runtime_cost::count(
            &parsed.expr,
            &vars,
            limit,
            runtime_cost::Rules::of(self.env.minor),
        )
    }

    /// Evaluates `source` with `self` (and `oldSelf`) bound to `v`, when the interpreter follows
    /// cel-go on it: `Ok(Ok(value))`, `Ok(Err(Some(the evaluation error as cel-go words it)))`,
    /// `Ok(Err(None))` (cel-go fails too, in words celcost does not reproduce), or `Err(why it
    /// was not evaluated)`.
    fn eval(
        &mut self,
        source: &str,
        v: &Val,
        old_self: Option<&Val>,
    ) -> Result<Result<Val, Option<String>>, String> {
        let parser = self.cel().parser;
        let interp = self
            .interpreter
            .get_or_insert_with(|| Interpreter::new(parser));
        let program = match interp.prepare(source) {
            Prepared::Unparsed(e) => return Err(e),
            Prepared::Parsed(p) => p,
        };
        let mut vars: Vec<(&str, &Val)> = vec![("self", v)];
        if let Some(o) = old_self {
            vars.push(("oldSelf", o));
        }
        crate::budget::charge(v.weight() as u64);
        // Two-variable comprehensions as one-variable ones over `[index or key, value]` pairs;
        // cel-go's `format` (both in the preparation).
        let program = program?;
        match interp.eval(&program, &vars) {
            Outcome::Value(v) => Ok(Ok(v)),
            Outcome::Error(e) => match e.go {
                GoError::Worded(go) => Ok(Err(Some(go))),
                GoError::Unworded => Ok(Err(None)),
                GoError::Unknown => Err(format!(
                    "its evaluation fails ({e}), which celcost cannot word as cel-go does"
                )),
            },
            Outcome::Unsupported(e) => Err(format!("the interpreter cannot evaluate it ({e})")),
        }
    }
}

/// What [`DefaultRules::evaluate`] found.
enum Evaluated {
    Value(Val),
    /// An evaluation error: cel-go's words, or `None` where celcost knows it fails but not how
    /// cel-go words it.
    Error(Option<String>),
    /// Not evaluated (noted, and its cost charged).
    Unknown,
    /// Cancelled for going over the per-call limit.
    Cancelled,
}

/// A rule or a messageExpression, for the words of what was not evaluated.
#[derive(Clone, Copy)]
enum Expression {
    Rule,
    Message,
}

impl Expression {
    fn unbounded(self) -> String {
        const WHY: &str = "its estimated cost does not rule out the runtime cost limits";
        match self {
            Expression::Rule => WHY.into(),
            Expression::Message => {
                format!("messageExpression not evaluated ({WHY}); the message shown is the rule's")
            }
        }
    }

    fn uncounted(self) -> String {
        const WHY: &str = "its estimated cost does not rule out the runtime cost limits, and celcost cannot count its runtime cost";
        match self {
            Expression::Rule => WHY.into(),
            Expression::Message => {
                format!("messageExpression not evaluated ({WHY}); the message shown is the rule's")
            }
        }
    }

    fn not_followed(self, why: &str) -> String {
        match self {
            Expression::Rule => format!("{why}, and celcost's evaluator does not follow it"),
            Expression::Message => format!(
                "messageExpression not evaluated ({why}, and celcost's evaluator does not follow it); the message shown is the rule's"
            ),
        }
    }
}

/// The API server's error for a rule whose evaluation fails (`validateExpressions`): a
/// runtime `no such overload` as a signature mismatch, any other error as `<error> evaluating
/// rule: <rule or message>`; the schema type as the value on every minor.
fn evaluation_error(fld: &str, s: &Schema, rule: &ValidationRule, e: &str) -> FieldError {
    let detail = if e.starts_with("no such overload") {
        format!(
            "'{e}': call arguments did not match a supported operator, function or macro signature for rule: {}",
            rule_error_string(rule)
        )
    } else {
        format!("{e} evaluating rule: {}", rule_error_string(rule))
    };
    FieldError::invalid(fld, BadValue::Str(s.type_.clone()), &detail)
}

/// `ruleErrorString`.
fn rule_error_string(rule: &ValidationRule) -> String {
    if rule.message.is_empty() {
        rule.rule.trim().to_string()
    } else {
        rule.message.trim().to_string()
    }
}

/// `ruleMessageOrDefault`.
fn rule_message_or_default(rule: &ValidationRule) -> String {
    if rule.message.is_empty() {
        format!("failed rule: {}", rule.rule.trim())
    } else {
        rule.message.trim().to_string()
    }
}

/// `fieldErrorForReason`.
fn field_error_for_reason(
    fld: &str,
    value: BadValue,
    detail: &str,
    reason: Option<&str>,
) -> FieldError {
    match reason {
        Some("FieldValueForbidden") => FieldError::forbidden(fld, detail),
        Some("FieldValueRequired") => FieldError::required(fld, detail),
        Some("FieldValueDuplicate") => FieldError::duplicate(fld, value),
        _ => FieldError::invalid(fld, value, detail),
    }
}

/// Whether `value` (of schema `s`) holds a list of `x-kubernetes-list-type: set` or `map` with
/// an element (the order or the repetition of its elements may then matter).
fn keyed_lists(s: &Schema, value: &Value) -> bool {
    crate::budget::charge(1);
    match value {
        Value::Array(items) => {
            (!items.is_empty() && matches!(s.x_list_type.as_deref(), Some("set" | "map")))
                || s.items
                    .as_deref()
                    .is_some_and(|i| items.iter().any(|x| keyed_lists(i, x)))
        }
        Value::Object(m) => m.iter().any(|(k, x)| {
            s.properties
                .get(k)
                .or(match &s.additional_properties {
                    Some(AdditionalProperties::Schema(a)) => Some(&**a),
                    _ => None,
                })
                .is_some_and(|p| keyed_lists(p, x))
        }),
        _ => false,
    }
}

/// Whether a rule's text has `==`, `!=` or `+` (which treat a set or map list differently).
fn compares_or_adds(rule: &str) -> bool {
    rule.contains("==") || rule.contains("!=") || rule.contains('+')
}

/// The default as the CEL value `UnstructuredToVal` makes of it, for the types the interpreter
/// holds as cel-go does: `None` for anything else (timestamps, durations, bytes, `dyn` values
/// other than int-or-string, fields of unknown type).
fn to_val(v: &Value, decl: &DeclType) -> Option<Val> {
    crate::budget::charge(1);
    Some(match (&decl.kind, v) {
        (DeclKind::Scalar, _) => match (&decl.cel, v) {
            (Type::String, Value::String(s)) => Val::String(s.clone()),
            (Type::Int, Value::Number(n)) => Val::Int(n.as_i64()?),
            (Type::Double, Value::Number(n)) => Val::Double(n.as_f64()?),
            (Type::Bool, Value::Bool(b)) => Val::Bool(*b),
            (Type::Dyn, Value::String(s)) => Val::String(s.clone()),
            (Type::Dyn, Value::Number(n)) => Val::Int(n.as_i64()?),
            // `format: byte`, `duration`, `date`, `date-time` (`UnstructuredToVal`): bytes
            // decoded from base64, a duration, a timestamp, where celcost parses the value as
            // kube-openapi's `strfmt` does (Go's `time.ParseDuration` and RFC 3339 only).
            (Type::Bytes, Value::String(s)) => Val::Bytes(base64_std(s)?),
            (Type::Duration, Value::String(s)) => {
                Val::Ext(Arc::new(Ext::Duration(library::go_parse_duration(s)?)))
            }
            (Type::Timestamp, Value::String(s)) => {
                let (secs, nanos, offset) = if s.len() == 10 {
                    library::parse_rfc3339(&format!("{s}T00:00:00Z"))?
                } else {
                    library::parse_rfc3339(s)?
                };
                Val::Ext(Arc::new(Ext::Timestamp {
                    secs,
                    nanos,
                    offset,
                }))
            }
            _ => return None,
        },
        (DeclKind::List(elem), Value::Array(items)) => Val::List(
            items
                .iter()
                .map(|x| to_val(x, elem))
                .collect::<Option<Vec<_>>>()?,
        ),
        (DeclKind::Map(_, elem), Value::Object(m)) => Val::Map(
            m.iter()
                .map(|(k, x)| Some((Val::String(k.clone()), to_val(x, elem)?)))
                .collect::<Option<Vec<_>>>()?,
        ),
        (DeclKind::Object(fields), Value::Object(m)) => {
            let mut out = Vec::with_capacity(m.len());
            for (k, x) in m {
                let e = escape(k)?;
                let fd = fields.get(&e)?;
                out.push((Val::String(e), to_val(x, fd)?));
            }
            Val::Map(out)
        }
        _ => return None,
    })
}

/// Go's `base64.StdEncoding.DecodeString` (line breaks skipped, padding required), as
/// `strfmt.Base64` decodes a `format: byte` value; `None` where it fails.
fn base64_std(s: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = s.bytes().filter(|b| *b != b'\r' && *b != b'\n').collect();
    if !digits.len().is_multiple_of(4) {
        return None;
    }
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        })
    };
    let mut out = Vec::with_capacity(digits.len() / 4 * 3);
    let chunks = digits.len() / 4;
    for (i, q) in digits.chunks(4).enumerate() {
        let pad = q.iter().rev().take_while(|c| **c == b'=').count();
        if pad > 2 || (pad > 0 && i + 1 != chunks) {
            return None;
        }
        let mut n: u32 = 0;
        for &c in &q[..4 - pad] {
            n = n << 6 | value(c)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        // StdEncoding is not strict: bits after the last byte are dropped.
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

/// The sizes of a value, for the estimator: a path (`self.a.@items.b`) names the values it
/// reaches in `root`, and its size is the largest of theirs (string length, list length, map
/// size); 0 when it reaches none.
struct ValueSizes<'v> {
    root: &'v Value,
}

impl SizeSource for ValueSizes<'_> {
    fn estimate_size(&self, node: &AstNode<'_>) -> Option<Size> {
        let path = node.path_elems();
        if path.is_empty() {
            return None;
        }
        let mut at: Vec<&Value> = vec![self.root];
        for (i, name) in path[1..].iter().enumerate() {
            crate::budget::charge(at.len() as u64);
            if &**name == "@keys" {
                // Keys are strings: the longest, and nothing below them.
                let longest = at
                    .iter()
                    .filter_map(|v| v.as_object())
                    .flat_map(|m| m.keys())
                    .map(|k| k.chars().count() as u64)
                    .max()
                    .unwrap_or(0);
                return Some(Size::new(0, if i + 2 == path.len() { longest } else { 0 }));
            }
            let mut next = Vec::new();
            for v in at {
                match (&**name, v) {
                    ("@items", Value::Array(items)) => next.extend(items.iter()),
                    ("@values", Value::Object(m)) => next.extend(m.values()),
                    (field, Value::Object(m)) => next.extend(
                        m.iter()
                            .filter(|(k, _)| escape(k).as_deref() == Some(field))
                            .map(|(_, v)| v),
                    ),
                    _ => {}
                }
            }
            at = next;
        }
        let size = at
            .iter()
            .map(|v| match v {
                Value::String(s) => s.chars().count() as u64,
                Value::Array(a) => a.len() as u64,
                Value::Object(m) => m.len() as u64,
                _ => 1,
            })
            .max()
            .unwrap_or(0);
        Some(Size::new(0, size))
    }
}

/// A bound of the runtime cost of an expression with no comprehension, on `value`, when it is
/// evaluated at all (so every function it calls is one of `FAITHFUL_FUNCTIONS`: each costs at
/// most 1 + the product of its operands' sizes, and no value it makes is larger than the sum
/// of the sizes of the leaves, `n` nodes of at most `s` each): `n · (1 + (n·s)²)`. cel-go's
/// static estimate cannot bound some of these (`string(self)` has no size there).
fn straight_line_bound(e: &crate::cel::ast::Expr, value: &Value) -> Option<u64> {
    use crate::cel::ast::{ExprKind, Literal};
    let mut nodes = 0u64;
    let mut leaves = total_size(value);
    let mut loops = false;
    e.walk(&mut |x| {
        nodes += 1;
        match &x.kind {
            ExprKind::Comprehension(_) => loops = true,
            ExprKind::Literal(Literal::String(s)) => leaves += s.chars().count() as u64,
            ExprKind::Literal(Literal::Bytes(b)) => leaves += b.len() as u64,
            _ => {}
        }
    });
    if loops {
        return None;
    }
    let largest = nodes.checked_mul(leaves.checked_add(1)?)?;
    nodes.checked_mul(largest.checked_mul(largest)?.checked_add(1)?)
}

/// Characters and elements in a JSON value.
fn total_size(v: &Value) -> u64 {
    crate::budget::charge(1);
    match v {
        Value::String(s) => s.chars().count() as u64 + 1,
        Value::Array(a) => a.iter().map(total_size).sum::<u64>() + 1,
        Value::Object(m) => {
            m.iter()
                .map(|(k, v)| k.chars().count() as u64 + total_size(v))
                .sum::<u64>()
                + 1
        }
        _ => 1,
    }
}
