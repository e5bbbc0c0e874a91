//! `celcost diff BASE HEAD`: what a change does to the numbers. Objects are matched by kind and
//! name; their rules, messageExpressions, schema totals and policy expressions by where they
//! are (schema root, node path) and their text — a rule whose text changed at the same place
//! is the same rule, changed. Pure: it compares two sets of reports.

use std::collections::{HashMap, HashSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::report::{
    CostUnit, ObjectReport, PER_RULE_COST_LIMIT, PER_SCHEMA_COST_LIMIT, UpdateVerdict,
};

/// One object in the base, the head, or both.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectDiff {
    pub kind: String,
    pub name: String,
    /// `added`, `removed`, `changed` or `unchanged`.
    pub change: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_before: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_after: Option<bool>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source_before: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source_after: String,
    /// Every unit whose number, verdict or text differs, and the added and removed ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub units: Vec<UnitDiff>,
    /// CRDs in both: the API server's verdict on an update of BASE's object (as the cluster
    /// stores it) to HEAD's, beside `validAfter` (HEAD's verdict on create).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<UpdateVerdict>,
    /// The minor whose API server answered, when the diff is over several (`1.37`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
    /// For an object an older minor answers otherwise than the newest: the upstream changes
    /// between the two behind HEAD's numbers ([`crate::report::versions::VersionCause`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<crate::report::versions::VersionCause>,
}

impl ObjectDiff {
    /// What the API server answers when HEAD's object is applied to a cluster that stores
    /// BASE's: the update verdict for an object BASE has (when it was judged), else the create
    /// verdict; `None` for a removed object.
    pub fn applied_valid(&self) -> Option<bool> {
        match &self.update {
            Some(u) => Some(u.valid),
            None => self.valid_after,
        }
    }
}

/// `celcost diff`'s exit status: 1 when the API server would refuse an object of HEAD applied
/// over BASE ([`ObjectDiff::applied_valid`]: an update of what BASE has, a create of the rest),
/// else 0; 2 when an update could not be judged. (Unreadable input and stopped estimates, 2
/// too, are the caller's.)
pub fn exit_code(d: &[ObjectDiff]) -> i32 {
    if d.iter()
        .any(|o| o.update.as_ref().is_some_and(|u| u.stopped.is_some()))
    {
        2
    } else if d.iter().any(|o| o.applied_valid() == Some(false)) {
        1
    } else {
        0
    }
}

/// A rule, messageExpression, schema total or policy expression of a changed object.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnitDiff {
    /// `^.spec.rules[*] [0]`, `^.spec.rules[*] [0] messageExpression`,
    /// `spec.validation.openAPIV3Schema total`, or a policy expression's field path.
    pub unit: String,
    /// `added`, `removed` or `changed`.
    pub change: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub expression_before: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub expression_after: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_before: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_after: Option<u64>,
    /// The limit the cost is compared with.
    pub limit: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_error_before: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_error_after: Option<String>,
}

/// A unit of one report, keyed for matching.
#[derive(Clone, Debug)]
struct Unit {
    /// Where it is: schema root (when several), node path, kind of unit.
    place: String,
    label: String,
    expression: String,
    cost: Option<u64>,
    limit: u64,
    compile_error: Option<String>,
}

fn units(r: &ObjectReport) -> Vec<Unit> {
    let prefix = crate::report::cost_unit_prefix;
    r.cost_units()
        .into_iter()
        .map(|u| {
            let label = u.label();
            match u {
                CostUnit::Total(s) => Unit {
                    place: label.clone(),
                    label,
                    expression: String::new(),
                    cost: Some(s.total_cost),
                    limit: PER_SCHEMA_COST_LIMIT,
                    compile_error: None,
                },
                CostUnit::Rule { schema, rule } => Unit {
                    place: format!("{}{}", prefix(schema), rule.path),
                    label,
                    expression: rule.rule.clone(),
                    cost: rule.compile_error.is_none().then_some(rule.cost),
                    limit: PER_RULE_COST_LIMIT,
                    compile_error: rule.compile_error.clone(),
                },
                CostUnit::MessageExpression { schema, rule } => Unit {
                    place: format!("{}{} messageExpression", prefix(schema), rule.path),
                    label,
                    expression: rule.message_expression.clone().unwrap_or_default(),
                    cost: rule.message_expression_cost,
                    limit: PER_RULE_COST_LIMIT,
                    compile_error: rule.message_expression_compile_error.clone(),
                },
                // A policy expression's place is its list (`spec.validations`), its index the
                // entry.
                CostUnit::Expression(e) => Unit {
                    place: list_of(&e.field_path),
                    label,
                    expression: e.expression.clone(),
                    cost: e.typed.as_ref().map(|t| t.max_cost).or(e.max_cost),
                    limit: e.per_call_limit,
                    compile_error: e.compile_error.clone(),
                },
            }
        })
        .collect()
}

/// `spec.validations[2].expression` → `spec.validations[].expression`.
fn list_of(field_path: &str) -> String {
    if let (Some(open), Some(close)) = (field_path.find('['), field_path.find(']'))
        && open < close
        && field_path[open + 1..close].parse::<u64>().is_ok()
    {
        return format!("{}[]{}", &field_path[..open], &field_path[close + 1..]);
    }
    field_path.to_string()
}

/// Compares the units of one object: first by place and text, then what is left by place and
/// likeness of the text (a rule edited in place), the rest added or removed.
fn unit_diffs(before: &ObjectReport, after: &ObjectReport) -> Vec<UnitDiff> {
    let (b, a) = (units(before), units(after));
    let mut matched_b = vec![false; b.len()];
    let mut matched_a = vec![false; a.len()];
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    let by_text: HashMap<(&str, &str), Vec<usize>> =
        b.iter().enumerate().fold(HashMap::new(), |mut m, (i, u)| {
            m.entry((u.place.as_str(), u.expression.as_str()))
                .or_default()
                .push(i);
            m
        });
    for (j, u) in a.iter().enumerate() {
        if let Some(i) = by_text
            .get(&(u.place.as_str(), u.expression.as_str()))
            .and_then(|c| c.iter().copied().find(|&i| !matched_b[i]))
        {
            matched_b[i] = true;
            matched_a[j] = true;
            pairs.push((i, j));
        }
    }
    // What is left at the same place: a rule edited in place, paired by the likeness of the
    // texts (common prefix and suffix, at least half of the shorter one), most alike first.
    let mut candidates: Vec<(usize, usize, usize)> = Vec::new();
    for (j, y) in a.iter().enumerate().filter(|(j, _)| !matched_a[*j]) {
        for (i, x) in b.iter().enumerate().filter(|(i, _)| !matched_b[*i]) {
            if x.place == y.place {
                let l = likeness(&x.expression, &y.expression);
                let shorter = x.expression.len().min(y.expression.len());
                if 2 * l >= shorter {
                    candidates.push((l, i, j));
                }
            }
        }
    }
    candidates.sort_by(|p, q| q.0.cmp(&p.0).then(p.1.cmp(&q.1)).then(p.2.cmp(&q.2)));
    for (_, i, j) in candidates {
        if !matched_b[i] && !matched_a[j] {
            matched_b[i] = true;
            matched_a[j] = true;
            pairs.push((i, j));
        }
    }
    pairs.sort_by_key(|&(_, j)| j);
    let mut out = Vec::new();
    for (i, j) in pairs {
        let (x, y) = (&b[i], &a[j]);
        if x.cost == y.cost && x.compile_error == y.compile_error && x.expression == y.expression {
            continue;
        }
        out.push(unit_diff("changed", Some(x), Some(y)));
    }
    for (_, y) in a.iter().enumerate().filter(|(j, _)| !matched_a[*j]) {
        out.push(unit_diff("added", None, Some(y)));
    }
    for (_, x) in b.iter().enumerate().filter(|(i, _)| !matched_b[*i]) {
        out.push(unit_diff("removed", Some(x), None));
    }
    out
}

/// The diff of a unit in BASE (`x`) and HEAD (`y`), or in one of them (added, removed): named
/// and limited as HEAD has it, else as BASE does.
fn unit_diff(change: &str, x: Option<&Unit>, y: Option<&Unit>) -> UnitDiff {
    let u = y.or(x).expect("a unit on one side at least");
    UnitDiff {
        unit: u.label.clone(),
        change: change.into(),
        expression_before: x.map(|x| x.expression.clone()).unwrap_or_default(),
        expression_after: y.map(|y| y.expression.clone()).unwrap_or_default(),
        cost_before: x.and_then(|x| x.cost),
        cost_after: y.and_then(|y| y.cost),
        limit: u.limit,
        compile_error_before: x.and_then(|x| x.compile_error.clone()),
        compile_error_after: y.and_then(|y| y.compile_error.clone()),
    }
}

/// Bytes the two texts share at their start and end.
fn likeness(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    prefix + suffix
}

/// The key objects are matched by: kind, name, and which of the objects of that kind and name
/// it is in its input (the first with the first: an input may hold several versions of one
/// object, a release's and the next one's).
pub fn match_keys(reports: &[ObjectReport]) -> Vec<(String, String, usize)> {
    let mut seen: HashMap<(&str, &str), usize> = HashMap::new();
    reports
        .iter()
        .map(|r| {
            let n = seen.entry((&r.kind, &r.name)).or_default();
            *n += 1;
            (r.kind.clone(), r.name.clone(), *n - 1)
        })
        .collect()
}

/// Every object of `before` and `after`, matched by kind and name ([`match_keys`]), in the
/// head's order (then the removed ones).
pub fn diff(before: &[ObjectReport], after: &[ObjectReport]) -> Vec<ObjectDiff> {
    let base: HashMap<(String, String, usize), &ObjectReport> =
        match_keys(before).into_iter().zip(before).collect();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (a, key) in after.iter().zip(match_keys(after)) {
        let d = match base.get(&key) {
            Some(b) => {
                let units = unit_diffs(b, a);
                let change = if units.is_empty() && b.valid == a.valid {
                    "unchanged"
                } else {
                    "changed"
                };
                ObjectDiff {
                    kind: a.kind.clone(),
                    name: a.name.clone(),
                    change: change.into(),
                    valid_before: Some(b.valid),
                    valid_after: Some(a.valid),
                    source_before: b.source.clone(),
                    source_after: a.source.clone(),
                    units,
                    update: a.update.clone(),
                    kubernetes_version: None,
                    causes: Vec::new(),
                }
            }
            None => ObjectDiff {
                kind: a.kind.clone(),
                name: a.name.clone(),
                change: "added".into(),
                valid_after: Some(a.valid),
                source_after: a.source.clone(),
                units: unit_diffs(&ObjectReport::default(), a),
                ..ObjectDiff::default()
            },
        };
        seen.insert(key);
        out.push(d);
    }
    for (b, _) in before
        .iter()
        .zip(match_keys(before))
        .filter(|(_, k)| !seen.contains(k))
    {
        out.push(ObjectDiff {
            kind: b.kind.clone(),
            name: b.name.clone(),
            change: "removed".into(),
            valid_before: Some(b.valid),
            source_before: b.source.clone(),
            ..ObjectDiff::default()
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{RuleReport, SchemaReport};

    fn crd(name: &str, rules: &[(&str, &str, u64)]) -> ObjectReport {
        ObjectReport {
            kind: "CustomResourceDefinition".into(),
            name: name.into(),
            valid: rules.iter().all(|r| r.2 <= PER_RULE_COST_LIMIT),
            schemas: vec![SchemaReport {
                schema_field_path: "spec.validation.openAPIV3Schema".into(),
                total_cost: rules.iter().map(|r| r.2).sum(),
                rules: rules
                    .iter()
                    .enumerate()
                    .map(|(i, (path, rule, cost))| RuleReport {
                        path: path.to_string(),
                        index: i as u64,
                        rule: rule.to_string(),
                        cost: *cost,
                        ..RuleReport::default()
                    })
                    .collect(),
                ..SchemaReport::default()
            }],
            ..ObjectReport::default()
        }
    }

    #[test]
    fn rules_are_matched_by_place_and_text_then_by_likeness() {
        let before = [crd(
            "a.x",
            &[
                ("^.spec", "self.a < 3", 4),
                ("^.spec", "self.tags.all(t, t.size() < 9)", 4_100_000),
            ],
        )];
        // A rule inserted first: the others keep their identity though their index moved;
        // the second one's text changed in place.
        let after = [crd(
            "a.x",
            &[
                ("^.spec", "self.b > 0", 2),
                ("^.spec", "self.a < 3", 4),
                ("^.spec", "self.tags.all(t, t.size() < 99)", 8_700_000),
            ],
        )];
        let d = diff(&before, &after);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].change, "changed");
        let units: Vec<(&str, &str, Option<u64>, Option<u64>)> = d[0]
            .units
            .iter()
            .map(|u| {
                (
                    u.unit.as_str(),
                    u.change.as_str(),
                    u.cost_before,
                    u.cost_after,
                )
            })
            .collect();
        assert!(units.contains(&("^.spec [2]", "changed", Some(4_100_000), Some(8_700_000))));
        assert!(units.contains(&("^.spec [0]", "added", None, Some(2))));
        assert!(
            !units.iter().any(|u| u.0 == "^.spec [1]"),
            "unchanged rule listed"
        );
    }

    #[test]
    fn objects_added_removed_and_verdicts() {
        let before = [
            crd("a.x", &[("^", "true", 1)]),
            crd("b.x", &[("^", "true", 1)]),
        ];
        let after = [
            crd("a.x", &[("^", "true", 20_000_000)]),
            crd("c.x", &[("^", "true", 1)]),
        ];
        let d = diff(&before, &after);
        let changes: Vec<(&str, &str)> = d
            .iter()
            .map(|o| (o.name.as_str(), o.change.as_str()))
            .collect();
        assert_eq!(
            changes,
            [("a.x", "changed"), ("c.x", "added"), ("b.x", "removed")]
        );
        assert_eq!(
            (d[0].valid_before, d[0].valid_after),
            (Some(true), Some(false))
        );
    }

    #[test]
    fn objects_of_one_name_are_matched_in_their_order() {
        // Two versions of one CRD in one input (a release's and the next one's): the first
        // with the first, the second with the second; a third is added.
        let a = |cost| crd("a.x", &[("^", "r", cost)]);
        let mut before = [a(1), a(2)];
        before[0].source = "old#1".into();
        before[1].source = "new#1".into();
        let mut after = [a(1), a(2), a(3)];
        after[0].source = "old#1".into();
        after[1].source = "new#1".into();
        let d = diff(&before, &after);
        let pairs: Vec<(&str, &str, &str)> = d
            .iter()
            .map(|o| {
                (
                    o.source_before.as_str(),
                    o.source_after.as_str(),
                    o.change.as_str(),
                )
            })
            .collect();
        assert_eq!(
            pairs,
            [
                ("old#1", "old#1", "unchanged"),
                ("new#1", "new#1", "unchanged"),
                ("", "", "added")
            ]
        );
        assert_eq!(diff(&before, &after[..1])[1].change, "removed");
    }

    #[test]
    fn the_exit_status_is_the_answer_to_head_applied_over_base() {
        let over = [("^", "expensive", 20_000_000)];
        let verdict = |valid: bool| UpdateVerdict {
            valid,
            ..UpdateVerdict::default()
        };
        // Refused on create both times, the update accepted (unchanged schema): 0.
        let mut after = [crd("a.x", &over)];
        after[0].update = Some(verdict(true));
        let d = diff(&[crd("a.x", &over)], &after);
        assert_eq!(d[0].valid_after, Some(false));
        assert_eq!(d[0].applied_valid(), Some(true));
        assert_eq!(exit_code(&d), 0);
        // The update refused: 1, though the create verdict did not change.
        after[0].update = Some(verdict(false));
        assert_eq!(exit_code(&diff(&[crd("a.x", &over)], &after)), 1);
        // Not judged: 2.
        after[0].update = Some(UpdateVerdict {
            stopped: Some(crate::report::EstimateStopped::default()),
            ..verdict(false)
        });
        assert_eq!(exit_code(&diff(&[crd("a.x", &over)], &after)), 2);
        // A new object is a create; a removed one is nothing.
        let d = diff(&[crd("gone.x", &over)], &[crd("new.x", &over)]);
        assert_eq!(
            d.iter().map(ObjectDiff::applied_valid).collect::<Vec<_>>(),
            [Some(false), None]
        );
        assert_eq!(exit_code(&d), 1);
        assert_eq!(exit_code(&diff(&[crd("gone.x", &over)], &[])), 0);
    }

    #[test]
    fn policy_expressions_are_matched_by_list_and_text() {
        assert_eq!(
            list_of("spec.validations[12].expression"),
            "spec.validations[].expression"
        );
        assert_eq!(list_of("spec.x"), "spec.x");
        assert_eq!(likeness("self.a < 9", "self.a < 99"), 10);
    }
}
