//! Discovering a finding's sites: the ancestors that set a rule's cardinality and the nodes
//! whose sizes it reads, and how they group into units.

use std::collections::HashMap;

use celcost_core::budget;
use celcost_core::cel::env::Env;
use celcost_core::report::Keyword;
use celcost_core::schema::Schema;
use celcost_core::schema::decltype::{escape, unescape};
use celcost_core::schema::path::{Node, Step, rule_path as schema_path, walk as node};

use super::bounds::{cardinality_keyword, size_keyword, smallest_sensible};
use super::implied;
use super::model::{Read, RuleModel};
use super::search::{Site, unbounded_cap};

/// The sites of a search, and each one's index by its node (address) and keyword.
#[derive(Default)]
pub(super) struct Sites {
    pub(super) sites: Vec<Site>,
    pub(super) index: HashMap<(usize, Keyword), usize>,
}

/// The sites of one rule, added to `sites` (deduplicated); returns their indices and the
/// notes about what cannot change.
pub(super) fn rule_sites(
    env: &Env,
    root: &Schema,
    model: &RuleModel,
    reads: &[Read],
    sites: &mut Sites,
    notes: &mut Vec<String>,
) -> Vec<usize> {
    let mut out = Vec::new();
    let mut mine = std::collections::HashSet::new();
    let mut add = |sites: &mut Sites, s: &Schema, path: &[Step], k: Keyword, cardinality: bool| {
        let at = (s as *const Schema as usize, k);
        let idx = match sites.index.get(&at) {
            Some(&i) => {
                sites.sites[i].cardinality |= cardinality;
                i
            }
            None => {
                let lo = smallest_sensible(s, k);
                let sites_now = &mut sites.sites;
                let current = k.get(s);
                let mut site = Site {
                    node: path.to_vec(),
                    keyword: k,
                    current,
                    lo,
                    cap: current
                        .is_none()
                        .then(|| unbounded_cap(env, s, k))
                        .flatten()
                        .map(|c| c.max(lo)),
                    cardinality,
                    implied: None,
                };
                // A bound the node's validation implies, when one at it would be a change and
                // within what the API server assumes already.
                site.implied = implied::implied_bound(root, path, k, env.minor).filter(|i| {
                    current.is_none_or(|c| i.value < c) && site.cap.is_none_or(|c| i.value <= c)
                });
                match site.safe_value() {
                    Some(v) => site.cap = Some(site.cap.map_or(v, |c| c.min(v))),
                    None => site.implied = None,
                }
                sites_now.push(site);
                sites.index.insert(at, sites_now.len() - 1);
                sites_now.len() - 1
            }
        };
        if mine.insert(idx) {
            out.push(idx);
        }
    };
    // The ancestors, in one walk down.
    let mut s = root;
    for (i, step) in model.node.iter().enumerate() {
        budget::charge(1);
        if let Some(k) = cardinality_keyword(s) {
            add(sites, s, &model.node[..i], k, true);
        }
        match Node::child(s, step) {
            Some(c) => s = c,
            None => break,
        }
    }
    for r in reads {
        budget::charge(1);
        match read_steps(root, &model.node, &r.elems) {
            Ok(Some(path)) => {
                let Some(s) = node(root, &path) else { continue };
                if s.x_int_or_string && !env.minor.int_or_string_max_length {
                    note(
                        notes,
                        format!(
                            "{} is x-kubernetes-int-or-string, whose maxLength Kubernetes {} ignores (1.34 and later count it)",
                            schema_path(&path),
                            env.kubernetes
                        ),
                    );
                    continue;
                }
                if let Some(k) = size_keyword(s) {
                    add(sites, s, &path, k, false);
                }
            }
            Ok(None) => {}
            Err(at) => {
                let shown = schema_path(&at.0);
                let why = if r.resolved {
                    format!(
                        "{shown}.{} is typed by the API server at a resource root (kind, apiVersion, metadata.name and metadata.generateName, unless the schema declares all four), not by this schema{}: no bound on it applies",
                        at.2,
                        if at.1 {
                            ", which has x-kubernetes-preserve-unknown-fields without declaring them"
                        } else {
                            ""
                        }
                    )
                } else if at.1 {
                    format!(
                        "{shown} has x-kubernetes-preserve-unknown-fields: what the rule reads below it ({}) has no schema to bound",
                        at.2
                    )
                } else {
                    format!(
                        "the rule reads {} below {shown}, which the schema does not declare",
                        at.2
                    )
                };
                note(notes, why);
            }
        }
    }
    out
}

pub(super) fn note(notes: &mut Vec<String>, n: String) {
    if !notes.contains(&n) {
        notes.push(n);
    }
}

/// The schema node a read names (`Ok(None)`: a map's keys, which no bound sizes), or where it
/// leaves the schema: (the last node, whether it preserves unknown fields, what is read).
#[allow(clippy::type_complexity)]
pub(super) fn read_steps(
    root: &Schema,
    node_path: &[Step],
    elems: &[String],
) -> Result<Option<Vec<Step>>, (Vec<Step>, bool, String)> {
    let mut path = node_path.to_vec();
    let Some(mut s) = node(root, node_path) else {
        return Ok(None);
    };
    for (i, e) in elems.iter().enumerate() {
        let step = match e.as_str() {
            "@keys" => return Ok(None),
            "@items" => Step::Items,
            "@values" => Step::Values,
            name => match property_named(s, name) {
                Some(p) => Step::Prop(p.clone()),
                None => {
                    let rest = celcost_core::schema::decltype::display_path(
                        &elems[i..]
                            .iter()
                            .map(|e| std::rc::Rc::from(e.as_str()))
                            .collect::<Vec<_>>(),
                    );
                    return Err((path, s.x_preserve_unknown_fields == Some(true), rest));
                }
            },
        };
        match Node::child(s, &step) {
            Some(c) => s = c,
            None => {
                return Err((
                    path,
                    s.x_preserve_unknown_fields == Some(true),
                    e.to_string(),
                ));
            }
        }
        path.push(step);
    }
    Ok(Some(path))
}

/// The property of `s` whose CEL name (escaped) is `name`: looked up by its unescaped form,
/// the properties searched one by one only when that misses.
pub(super) fn property_named<'s>(s: &'s Schema, name: &str) -> Option<&'s String> {
    let is = |p: &String| escape(p).as_deref() == Some(name);
    match s.properties.get_key_value(unescape(name).as_str()) {
        Some((p, _)) if is(p) => Some(p),
        _ => s.properties.keys().find(|p| is(p)),
    }
}

/// The units of a set of sites: every ancestor without a bound that sets a rule's cardinality
/// in one (they change nothing until all are bounded), every other site on its own. Sites
/// already as low as they sensibly go are left out.
pub(super) fn units_of(sites: &[Site], groups: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let mut units: Vec<Vec<usize>> = Vec::new();
    for g in groups {
        let unbounded: Vec<usize> = g
            .iter()
            .copied()
            .filter(|&i| sites[i].cardinality && sites[i].current.is_none())
            .collect();
        if !unbounded.is_empty() && !units.contains(&unbounded) {
            units.push(unbounded);
        }
    }
    // (A site on its own is in no unit above, which are of sites without a bound.)
    let mut alone = vec![false; sites.len()];
    for g in groups {
        for &i in g {
            let s = &sites[i];
            if !s.has_room() {
                continue;
            }
            if s.cardinality && s.current.is_none() {
                continue;
            }
            if !alone[i] {
                alone[i] = true;
                units.push(vec![i]);
            }
        }
    }
    units
}
