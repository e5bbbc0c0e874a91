//! One object's findings searched and verified within its budget (`Searched`, `SearchBudget`,
//! `Probe`), the answers put back on its report.

use std::cell::RefCell;
use std::collections::HashMap;

use celcost_core::budget;
use celcost_core::budget::Limits;
use celcost_core::cel::env::Env;
use celcost_core::estimate::{Estimator, Shared};
use celcost_core::report::format::num;
use celcost_core::report::{Keyword, ObjectReport, SchemaReport, Suggestion};
use celcost_core::schema::Schema;
use celcost_core::schema::decltype::ConversionMemo;
use celcost_core::schema::path::{parse as parse_steps, rule_path as schema_path};
use serde_json::Value;

use super::model::{Read, RuleCost, RuleModel};
use super::search::{Answer, Search, Site, Stop, Target};
use super::sites::{Sites, rule_sites, units_of};
use super::verify::{
    Verified, bounded_nodes, fits_elsewhere, suggested_bound, verify, with_bounds,
};
use super::{Alike, Finding, MAX_TOTAL_RULES, Other, Root, SEARCH_STACK, Settings};

/// A finding's suggestions, or why there are none.
pub(super) type Answered = (Vec<Suggestion>, Option<String>);

pub(super) fn apply_answers(report: &mut ObjectReport, answers: Vec<(usize, Finding, Answered)>) {
    for (si, finding, (sugg, none)) in answers {
        let schema = &mut report.schemas[si];
        match finding {
            Finding::Rule(ri) => {
                schema.rules[ri].suggestions = sugg;
                schema.rules[ri].no_suggestion = none;
            }
            Finding::Total => {
                schema.suggestions = sugg;
                schema.no_suggestion = none;
            }
        }
    }
}

/// Searches `findings` of `report` (`estimator`'s) and verifies each candidate on `estimator`
/// and on every minor of `others`.
pub(super) fn search_findings(
    estimator: &Estimator,
    others: &[(&Estimator, &ObjectReport)],
    alike: Option<Alike<'_>>,
    object: &Value,
    report: &ObjectReport,
    findings: Vec<(usize, Finding)>,
    settings: &Settings,
) -> Vec<(usize, Finding, Answered)> {
    let mut out = Vec::new();
    if findings.is_empty() {
        return out;
    }
    let mut others: Vec<Other<'_>> = others
        .iter()
        .map(|(e, r)| Other {
            estimator: e,
            base: r,
            verified: Verified::default(),
            alike,
            searched: estimator,
        })
        .collect();
    let limits = estimator.limits();
    let mut steps_left = limits.steps;
    let mut left = SearchBudget {
        evals_left: settings.max_evaluations,
        verifications_left: settings.max_verifications,
    };
    let mut keeping = Keeping::default();
    let mut roots: Vec<Option<Option<Root>>> = (0..report.schemas.len()).map(|_| None).collect();
    for (si, finding) in findings {
        let schema = &report.schemas[si];
        let root = roots[si]
            .get_or_insert_with(|| Root::read(object, &schema.schema_field_path, &schema.versions));
        let answer: Result<Vec<Vec<Suggestion>>, String> = match root {
            None => Err("no suggestion: the schema could not be read back from the object".into()),
            Some(_) if steps_left == 0 || left.evals_left == 0 || left.verifications_left == 0 => Err(
                "no suggestion: the search's work budget for this object is spent (on the findings above)"
                    .into(),
            ),
            Some(root) => {
                let budget_now = Limits {
                    steps: steps_left,
                    bytes: limits.bytes,
                };
                let (res, usage) = stacker::grow(SEARCH_STACK, || {
                    budget::run_measured(budget_now, || {
                        search_and_verify(
                            &Searched {
                                estimator,
                                object,
                                report,
                                settings,
                            },
                            (si, finding),
                            root,
                            &mut left,
                            &mut keeping,
                            &mut others,
                        )
                    })
                });
                steps_left = steps_left.saturating_sub(usage.steps);
                match res {
                    Ok(a) => a,
                    Err(stop) => {
                        // Stopped mid-search: the schema may hold a probe's bounds; read again
                        // for the next finding.
                        roots[si] = None;
                        Err(format!("no suggestion: the search stopped: {stop}"))
                    }
                }
            }
        };
        let (sugg, none) = match answer {
            Ok(groups) => (
                groups
                    .into_iter()
                    .enumerate()
                    .flat_map(|(g, bounds)| {
                        bounds.into_iter().map(move |mut b| {
                            b.group = g as u32;
                            b
                        })
                    })
                    .collect(),
                None,
            ),
            Err(why) => (Vec::new(), Some(why)),
        };
        out.push((si, finding, (sugg, none)));
    }
    out
}

/// What one object's search on the searched minor keeps across its findings: the whole
/// estimates its verifications made, the rules it modeled, and the object's copy each probe
/// sets its bounds on and puts back ([`with_bounds`]) for every minor's verification, made
/// once, not once per verification (a copy of a large CRD for each of an object's findings was
/// 5 % of a run with suggestions at 30 %, and one per minor 5 % again).
#[derive(Default)]
pub(super) struct Keeping {
    verified: Verified,
    models: KeptModels,
    copy: Option<Value>,
}

/// The rules an object's findings modeled on one minor, by schema and rule: the model (`None`:
/// the rule does not compile, or is not found in the schema), its cost of the schema as read,
/// the sizes that cost asked, and the steps that took. A rule and its schema's total, or the
/// totals of a schema near budget for several reasons, model it once; a model found kept
/// charges its steps again, so that the budgets stop where they would without it. (The
/// schema a model is of is the object's, as read: a search puts back every bound it sets.)
#[derive(Default)]
pub(super) struct KeptModels {
    done: HashMap<(usize, usize), (ModelOfRule, u64)>,
}

/// A rule's model, its cost of the schema as read, and the sizes that cost asked.
type ModelOfRule = (Option<RuleModel>, Option<RuleCost>, Vec<Read>);

impl KeptModels {
    pub(super) fn model(
        &mut self,
        si: usize,
        ri: usize,
        make: impl FnOnce() -> ModelOfRule,
    ) -> ModelOfRule {
        if let Some((model, steps)) = self.done.get(&(si, ri))
            && budget::spend_again(*steps)
        {
            return model.clone();
        }
        let (model, steps) = budget::counted(make);
        self.done.insert((si, ri), (model.clone(), steps));
        model
    }
}

/// What an object's search runs on: the estimator, the object, its report and the settings.
pub(super) struct Searched<'a> {
    pub(super) estimator: &'a Estimator,
    pub(super) object: &'a Value,
    pub(super) report: &'a ObjectReport,
    pub(super) settings: &'a Settings,
}

/// What is left of an object's search budget: probes and verifications, over its findings.
pub(super) struct SearchBudget {
    pub(super) evals_left: usize,
    pub(super) verifications_left: usize,
}

/// Bounds to verify (set on a copy of `object` at its schema roots, [`with_bounds`]).
pub(super) struct Probe<'a> {
    pub(super) object: &'a Value,
    /// The nodes of `object` the bounds are set on (at each schema root), with the keyword;
    /// `None` where the alike test is not asked (one minor) or cannot be (a node missing).
    pub(super) nodes: Option<&'a [(&'a Value, Keyword)]>,
    pub(super) bounds: &'a [(&'a Site, i64)],
    pub(super) settings: &'a Settings,
}

impl Probe<'_> {
    /// `maxItems: 20 on ^.spec.a and maxLength: 64 on ^.spec.a[*]`.
    pub(super) fn bounds_text(&self) -> String {
        self.bounds
            .iter()
            .map(|(s, v)| format!("{}: {v} on {}", s.keyword.name(), schema_path(&s.node)))
            .collect::<Vec<_>>()
            .join(" and ")
    }
}

/// One finding: search, then verify each candidate on a copy of the object.
pub(super) fn search_and_verify(
    cx: &Searched<'_>,
    (si, finding): (usize, Finding),
    root: &mut Root,
    left: &mut SearchBudget,
    keeping: &mut Keeping,
    others: &mut [Other<'_>],
) -> Result<Vec<Vec<Suggestion>>, String> {
    let Searched {
        estimator,
        report,
        settings,
        ..
    } = *cx;
    let env = estimator.env();
    let schema = &report.schemas[si];
    let Modeled {
        models,
        sites,
        unit_groups,
        notes,
        fixed,
    } = model_finding(
        env,
        (si, schema),
        &root.schema,
        finding,
        &mut keeping.models,
    )?;
    // A model depends on every site on its node's way from the root and below it.
    let depends = models
        .iter()
        .map(|m| {
            (0..sites.len())
                .filter(|&i| {
                    let s: &Site = &sites[i];
                    s.node.starts_with(&m.node) || m.node.starts_with(&s.node)
                })
                .collect()
        })
        .collect();
    let units = units_of(&sites, &unit_groups);
    let limit = finding.limit();
    let target = match finding {
        Finding::Rule(_) => Target::Rule,
        Finding::Total => Target::Total,
    };
    // Only the sites' bounds change during the search: the memo of its conversions knows the
    // nodes they are on.
    let mut memo = ConversionMemo::default();
    let ids = sites
        .iter()
        .map(|s: &Site| memo.path(&root.schema, &s.node))
        .collect();
    let n_sites = sites.len();
    let mut search = Search {
        env,
        root: &mut root.schema,
        memo,
        ids,
        target,
        limit,
        settings,
        sites,
        models,
        depends,
        fixed,
        evals_left: &mut left.evals_left,
        applied: vec![None; n_sites],
        probed: HashMap::new(),
    };
    let answer = search.run(units, &notes);
    search.restore();
    let groups = match answer {
        Ok(Answer::Groups(g)) => g,
        Ok(Answer::None(why)) => return Err(why),
        Err(Stop::Evaluations) => {
            return Err(format!(
                "no suggestion: the search's probes for this object ({}) are spent",
                settings.max_evaluations
            ));
        }
    };
    let sites = search.sites;
    let groups: Vec<Vec<(&Site, i64)>> = groups
        .iter()
        .map(|g| g.bounds.iter().map(|&(i, v)| (&sites[i], v)).collect())
        .collect();
    verify_groups(cx, (si, finding), root, groups, left, keeping, others)
}

/// The rule models a finding's search runs on (the rule, or the costliest rules of its schema
/// for a total), the sites whose bounds their costs read, and the part of the total no model
/// covers.
struct Modeled {
    models: Vec<RuleModel>,
    sites: Vec<Site>,
    /// Per model, the sites it reads.
    unit_groups: Vec<Vec<usize>>,
    notes: Vec<String>,
    /// The schema's total without the modeled rules' parts.
    fixed: u64,
}

fn model_finding(
    env: &Env,
    (si, schema): (usize, &SchemaReport),
    root: &Schema,
    finding: Finding,
    kept: &mut KeptModels,
) -> Result<Modeled, String> {
    let fp = schema.schema_field_path.as_str();
    let chosen: Vec<usize> = match finding {
        Finding::Rule(ri) => vec![ri],
        Finding::Total => {
            let mut v: Vec<usize> = (0..schema.rules.len())
                .filter(|&ri| RuleCost::of_report(&schema.rules[ri]).total_part() > 0)
                .collect();
            v.sort_by_key(|&ri| {
                std::cmp::Reverse(RuleCost::of_report(&schema.rules[ri]).total_part())
            });
            v.truncate(MAX_TOTAL_RULES);
            v
        }
    };
    let mut models = Vec::new();
    let mut found = Sites::default();
    let mut notes = Vec::new();
    let mut fixed = schema.total_cost;
    let mut unit_groups = Vec::new();
    for &ri in &chosen {
        let r = &schema.rules[ri];
        let (built, got, reads) = kept.model(si, ri, || {
            let built = r
                .node_field_path
                .strip_prefix(fp)
                .and_then(|rest| parse_steps(root, rest))
                .and_then(|path| RuleModel::build(env, root, path, r.index as usize));
            let reads = RefCell::new(Vec::new());
            let got = built
                .as_ref()
                .and_then(|m| m.eval(env, root, Some(&reads), None));
            (built, got, reads.into_inner())
        });
        let Some(mut m) = built else {
            if finding != Finding::Total {
                return Err(if r.compile_error.is_some() || !r.compiled_by_apiserver {
                    "no suggestion: the rule does not compile".into()
                } else {
                    "no suggestion: internal: the rule could not be found again in the schema"
                        .into()
                });
            }
            continue;
        };
        let want = RuleCost::of_report(r);
        if got != Some(want) {
            if finding == Finding::Total {
                continue;
            }
            return Err(format!(
                "no suggestion: internal: re-estimating the rule gives {:?}, the estimate {want:?}",
                got
            ));
        }
        m.base = want;
        fixed = fixed.saturating_sub(want.total_part());
        let own = rule_sites(env, root, &m, &reads, &mut found, &mut notes);
        unit_groups.push(own);
        models.push(m);
    }
    Ok(Modeled {
        models,
        sites: found.sites,
        unit_groups,
        notes,
        fixed,
    })
}

/// The search's groups of bounds verified on a copy of the object, each within the budget's
/// verifications: the suggestions that bring the finding under its limit without breaking
/// another, or why none does.
fn verify_groups(
    cx: &Searched<'_>,
    (si, finding): (usize, Finding),
    root: &Root,
    groups: Vec<Vec<(&Site, i64)>>,
    left: &mut SearchBudget,
    keeping: &mut Keeping,
    others: &mut [Other<'_>],
) -> Result<Vec<Vec<Suggestion>>, String> {
    let Searched {
        estimator,
        object,
        report,
        settings,
    } = *cx;
    let schema = &report.schemas[si];
    let fp = schema.schema_field_path.as_str();
    let limit = finding.limit();
    let before = match finding {
        Finding::Rule(ri) => RuleCost::of_report(&schema.rules[ri]).judged(),
        Finding::Total => schema.total_cost,
    };
    let mut out = Vec::new();
    let mut rejected = Vec::new();
    for bounds in groups {
        if left.verifications_left == 0 {
            break;
        }
        left.verifications_left -= 1;
        // (Only another minor's verification asks whether it estimates the copy alike.)
        let nodes = (!others.is_empty())
            .then(|| {
                let sites = bounds.iter().map(|(s, _)| (s.node.as_slice(), s.keyword));
                bounded_nodes(object, &root.pointers, sites)
            })
            .flatten();
        let probe = Probe {
            object,
            nodes: nodes.as_deref(),
            bounds: &bounds,
            settings,
        };
        // The bounds set once on the object's copy for every minor's verification, and what
        // every minor reads of it alike made once ([`Shared`]).
        let Keeping { verified, copy, .. } = &mut *keeping;
        let mut copy = copy.take().unwrap_or_else(|| object.clone());
        let judged = with_bounds(&mut copy, object, &root.pointers, &bounds, |bounded| {
            let bounded = Shared::new(bounded);
            match verify(estimator, report, (si, finding), &probe, verified, &bounded) {
                Ok((after, consulted)) if settings.fits(after, limit) && after < before => {
                    fits_elsewhere(
                        others,
                        report,
                        (si, finding),
                        &probe,
                        &bounded,
                        limit,
                        left,
                        consulted,
                    )
                    .map(|()| after)
                }
                Ok((after, _)) => Err(format!(
                    "{} gives {} once estimated whole",
                    probe.bounds_text(),
                    num(after)
                )),
                Err(e) => Err(e),
            }
        });
        keeping.copy = Some(copy);
        match judged.and_then(|j| j) {
            Ok(after) => out.push(
                bounds
                    .iter()
                    .map(|(s, v)| suggested_bound(fp, &root.pointers, s, *v, after))
                    .collect(),
            ),
            Err(e) => rejected.push(e),
        }
    }
    if out.is_empty() {
        return Err(if rejected.is_empty() {
            "no suggestion: the search's verifications for this object are spent".into()
        } else {
            format!(
                "no bound helps without breaking the schema: {}",
                rejected.join("; ")
            )
        });
    }
    Ok(out)
}
