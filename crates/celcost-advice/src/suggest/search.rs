//! The search over one finding's sites: units, the binary searches alone and together, the
//! candidate groups it answers with.

use std::collections::HashMap;

use celcost_core::budget;
use celcost_core::cel::env::Env;
use celcost_core::report::Keyword;
use celcost_core::report::format::num;
use celcost_core::schema::Schema;
use celcost_core::schema::decltype::{ConversionMemo, NodeId, schema_decl_type};
use celcost_core::schema::path::{Step, rule_path as schema_path, walk_mut as node_mut};

use super::candidates::{candidates, largest_fitting, round_down_125, series_125};
use super::implied::Implied;
use super::model::RuleModel;
use super::{MAX_COMBINED_UNITS, MAX_LIFT_ROUNDS, MAX_SUGGESTIONS, MAX_WEIGHED_UNITS, Settings};

/// A bound the search may set.
#[derive(Clone, Debug)]
pub(super) struct Site {
    pub(super) node: Vec<Step>,
    pub(super) keyword: Keyword,
    pub(super) current: Option<i64>,
    pub(super) lo: i64,
    /// The highest value worth suggesting. Without a bound: the size the API server assumes for
    /// the node already (from the request size), rounded down; a looser bound would raise the
    /// cost of rules whose cardinality or sizes fall back to it. With an implied bound: its
    /// round figure (or the implied value itself, where the round figure is not below the
    /// bound there now): a higher one refuses no more and reads as arbitrary.
    pub(super) cap: Option<i64>,
    /// An ancestor that sets the cardinality.
    pub(super) cardinality: bool,
    /// What the node's own validation already implies ([`implied`]), when a bound at it would
    /// be a change: values from it on refuse nothing the schema accepts today.
    pub(super) implied: Option<Implied>,
}

/// The size an unbounded node gets from the request size, as a value of `k` (`maxLength`
/// counts characters of up to 4 bytes), rounded down to the 1-2-5 series.
pub(super) fn unbounded_cap(env: &Env, s: &Schema, k: Keyword) -> Option<i64> {
    let d = schema_decl_type(s, s.x_embedded_resource, env.minor, "selfType")?;
    if d.bounded || d.max_elements <= 0 {
        return None;
    }
    let raw = match k {
        Keyword::MaxLength => d.max_elements / 4,
        Keyword::MaxItems | Keyword::MaxProperties => d.max_elements,
    };
    round_down_125(raw)
}

impl Site {
    /// Values from this one on are not suggested: the bound there now, or above the cap.
    pub(super) fn ceiling(&self) -> Option<i64> {
        let above_cap = self.cap.map(|c| c.saturating_add(1));
        match (self.current, above_cap) {
            (Some(c), Some(a)) => Some(c.min(a)),
            (c, a) => c.or(a),
        }
    }

    /// Whether `value` refuses nothing the schema accepts today.
    pub(super) fn is_safe(&self, value: i64) -> bool {
        self.implied.as_ref().is_some_and(|i| value >= i.value)
    }

    /// The safe value a suggestion writes (the implied bound's round figure, or the implied
    /// value where the round figure is not below the bound there now), if any.
    pub(super) fn safe_value(&self) -> Option<i64> {
        let i = self.implied.as_ref()?;
        let below = |v: i64| {
            self.current.is_none_or(|c| v < c) && self.cap.is_none_or(|c| v <= c) && v >= self.lo
        };
        [i.round(), i.value].into_iter().find(|&v| below(v))
    }

    /// The implied value and its round figure, where they are candidates (for the binary
    /// searches, which otherwise probe the 1-2-5 series only).
    pub(super) fn implied_candidates(&self) -> Vec<i64> {
        let Some(i) = &self.implied else {
            return Vec::new();
        };
        let top = self.ceiling();
        [i.value, i.round()]
            .into_iter()
            .filter(|&v| v >= self.lo && top.is_none_or(|t| v < t))
            .collect()
    }

    pub(super) fn has_room(&self) -> bool {
        self.current.is_none_or(|c| c > self.lo)
    }

    pub(super) fn label(&self) -> String {
        format!("{} on {}", self.keyword.name(), schema_path(&self.node))
    }
}

/// Why a search gave up.
#[derive(Debug)]
pub(super) enum Stop {
    /// The probes allowed are spent.
    Evaluations,
}

/// The finding a search is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Target {
    Rule,
    Total,
}

/// What a suggestion changes for the API's users, the gentlest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Change {
    /// Every bound at or above what the node's validation implies: refuses nothing.
    Safe,
    /// A bound added to a node without one: refuses the values above it.
    Adds,
    /// An existing bound lowered: refuses values the API accepts today.
    Lowers,
}

/// A candidate suggestion: site indices and values, and the cost the probes predicted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Group {
    pub(super) bounds: Vec<(usize, i64)>,
}

impl Group {
    /// The sites `values` sets (`None`: left as they are), as a group; `None` when it sets none.
    pub(super) fn of(values: &[Option<i64>]) -> Option<Group> {
        let bounds: Vec<(usize, i64)> = values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| (i, v)))
            .collect();
        (!bounds.is_empty()).then_some(Group { bounds })
    }
}

pub(super) struct Search<'a> {
    pub(super) env: &'a Env,
    pub(super) root: &'a mut Schema,
    pub(super) target: Target,
    pub(super) limit: u64,
    pub(super) settings: &'a Settings,
    pub(super) sites: Vec<Site>,
    pub(super) models: Vec<RuleModel>,
    /// Per model, the sites its cost depends on.
    pub(super) depends: Vec<Vec<usize>>,
    /// Totals: what no model covers.
    pub(super) fixed: u64,
    pub(super) evals_left: &'a mut usize,
    /// The conversions of the search's probes, by node of `root`: a subtree is converted again
    /// only for bounds below it that it has not been converted with.
    pub(super) memo: ConversionMemo,
    /// Per site, its node's ancestors (from the root) and itself, in `memo`.
    pub(super) ids: Vec<Vec<NodeId>>,
    /// Per site, the value set on the schema now (`None`: its own). A probe changes only the
    /// sites whose value differs from the last probe's, and probes follow each other in an
    /// order that changes few ([`Search::run`]): setting every site of a probe again, each by
    /// a walk from the root and a note to each ancestor, took d² per probe of a rule d lists
    /// deep, so d³ for its search.
    pub(super) applied: Vec<Option<i64>>,
    /// The cost of every set of values probed, and the steps it took.
    pub(super) probed: HashMap<Vec<Option<i64>>, (u64, u64)>,
}

/// A search's answer: suggestions (unverified), or why there are none.
pub(super) enum Answer {
    Groups(Vec<Group>),
    None(String),
}

impl Search<'_> {
    pub(super) fn fits(&self, cost: u64) -> bool {
        self.settings.fits(cost, self.limit)
    }

    pub(super) fn fits_at(&mut self, values: &[Option<i64>]) -> Result<bool, Stop> {
        let c = self.cost(values)?;
        Ok(self.fits(c))
    }

    /// Sets the sites to `values` (`None`: as they are) on the schema, changing only those whose
    /// value differs from what is set now.
    pub(super) fn apply(&mut self, values: &[Option<i64>]) {
        budget::charge(values.len() as u64);
        for (i, v) in values.iter().enumerate() {
            let was = self.applied[i];
            if was == *v {
                continue;
            }
            let site = &self.sites[i];
            if let Some(n) = node_mut(self.root, &site.node) {
                let (from, to) = (was.or(site.current), v.or(site.current));
                site.keyword.set(n, to);
                self.memo.note_bound_change(&self.ids[i], i, from, to);
            }
            self.applied[i] = *v;
        }
    }

    /// The schema as it was before the search.
    pub(super) fn restore(&mut self) {
        let none = vec![None; self.sites.len()];
        self.apply(&none);
    }

    /// The finding's cost with the sites set to `values` (`None`: as they are).
    pub(super) fn cost(&mut self, values: &[Option<i64>]) -> Result<u64, Stop> {
        if *self.evals_left == 0 {
            return Err(Stop::Evaluations);
        }
        *self.evals_left -= 1;
        // The same bounds asked again (a later phase probing what an earlier one did): the cost
        // found then, its work charged again as if done.
        if let Some(&(cost, steps)) = self.probed.get(values) {
            budget::consume(steps);
            return Ok(cost);
        }
        let (cost, steps) = budget::counted(|| self.probe(values));
        // Bounded: a million values kept at most (a search over many sites keeps fewer probes).
        if (self.probed.len() + 1) * values.len() <= 1 << 20 {
            self.probed.insert(values.to_vec(), (cost, steps));
        }
        Ok(cost)
    }

    /// The finding's cost with the sites set to `values`, estimated.
    pub(super) fn probe(&mut self, values: &[Option<i64>]) -> u64 {
        budget::charge(1);
        self.apply(values);
        let mut total = self.fixed;
        let mut judged = 0;
        for (m, deps) in self.models.iter().zip(&self.depends) {
            let changed = deps.iter().any(|&i| values[i].is_some());
            let c = if changed {
                m.eval(self.env, self.root, None, Some(&mut self.memo))
                    .unwrap_or(m.base)
            } else {
                m.base
            };
            total = total.saturating_add(c.total_part());
            judged = judged.max(c.judged());
        }
        match self.target {
            Target::Rule => judged,
            Target::Total => total,
        }
    }

    pub(super) fn at_lo(&self, units: &[&Vec<usize>], values: &mut [Option<i64>]) {
        for u in units {
            for &i in u.iter() {
                values[i] = Some(self.sites[i].lo);
            }
        }
    }

    /// The search (see the module's documentation). `units` are sets of site indices moved
    /// together; `notes` say what cannot change.
    ///
    /// Bounds that break nobody come first: (1) the bounds the nodes' own validation implies
    /// ([`Search::safe_group`]); (2) bounds added to unbounded nodes, existing bounds lowered
    /// only as far as their implied bound; (3) only when neither finds anything, existing
    /// bounds lowered further (a breaking change, said so on the suggestion).
    pub(super) fn run(&mut self, units: Vec<Vec<usize>>, notes: &[String]) -> Result<Answer, Stop> {
        let n = self.sites.len();
        let none = vec![None; n];
        let base = self.cost(&none)?;
        let unit_refs: Vec<&Vec<usize>> = units.iter().collect();
        let mut all_lo = none.clone();
        self.at_lo(&unit_refs, &mut all_lo);
        let lowest = if units.is_empty() {
            base
        } else {
            self.cost(&all_lo)?
        };
        if !self.fits(lowest) {
            return Ok(Answer::None(
                self.no_bound_helps(&units, base, lowest, notes),
            ));
        }
        let mut groups = Vec::new();
        if let Some(g) = self.safe_group()? {
            groups.push(g);
        }
        let (gentle, raised) = self.gentle_units(&units);
        let same = gentle == units && raised.is_empty();
        let found = self.search_units(&gentle, same.then_some(lowest));
        for (i, lo) in &raised {
            self.sites[*i].lo = *lo;
        }
        for g in found? {
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
        if groups.is_empty() && !same {
            groups = self.search_units(&units, Some(lowest))?;
        }
        if groups.is_empty() {
            return Ok(Answer::None(
                self.no_bound_helps(&units, base, lowest, notes),
            ));
        }
        // Safe first, then additions, then lowerings; within each, the least restrictive (the
        // highest smallest value), then fewer bounds.
        groups.sort_by_key(|g| {
            let smallest = g.bounds.iter().map(|b| b.1).min().unwrap_or(0);
            (
                self.change_of(g),
                std::cmp::Reverse(smallest),
                g.bounds.len(),
            )
        });
        groups.truncate(MAX_SUGGESTIONS);
        Ok(Answer::Groups(groups))
    }

    /// What a group changes for the API's users: every bound safe, some added, or some existing
    /// bound lowered below what the node's validation implies.
    pub(super) fn change_of(&self, g: &Group) -> Change {
        let mut change = Change::Safe;
        for &(i, v) in &g.bounds {
            let s = &self.sites[i];
            if s.is_safe(v) {
                continue;
            }
            change = change.max(if s.current.is_some() {
                Change::Lowers
            } else {
                Change::Adds
            });
        }
        change
    }

    /// The units without the sites whose bound could only be lowered below what their
    /// validation implies (a breaking change); those it implies a bound for may go down to it
    /// (their `lo` raised: the old values are returned, to put back).
    pub(super) fn gentle_units(
        &mut self,
        units: &[Vec<usize>],
    ) -> (Vec<Vec<usize>>, Vec<(usize, i64)>) {
        let mut raised = Vec::new();
        let mut out = Vec::new();
        for u in units {
            let mut kept = Vec::new();
            for &i in u {
                let s = &mut self.sites[i];
                if s.current.is_none() {
                    kept.push(i);
                    continue;
                }
                let Some(imp) = &s.implied else { continue };
                if imp.value > s.lo && !raised.iter().any(|(j, _)| *j == i) {
                    raised.push((i, s.lo));
                    s.lo = imp.value;
                }
                if s.has_room() {
                    kept.push(i);
                }
            }
            if !kept.is_empty() && !out.contains(&kept) {
                out.push(kept);
            }
        }
        (out, raised)
    }

    /// The bounds every node's own validation implies, those that are needed: every site with
    /// a safe value at it (the round figure, else the implied value itself), then the ones not
    /// needed lifted, then each kept implied value raised to its round figure where that fits.
    /// `None` when the safe values together do not fit.
    pub(super) fn safe_group(&mut self) -> Result<Option<Group>, Stop> {
        let n = self.sites.len();
        let safe: Vec<usize> = (0..n)
            .filter(|&i| self.sites[i].safe_value().is_some())
            .collect();
        if safe.is_empty() {
            return Ok(None);
        }
        let mut round = vec![None; n];
        let mut exact = vec![None; n];
        for &i in &safe {
            let s = &self.sites[i];
            round[i] = s.safe_value();
            exact[i] = s
                .implied
                .as_ref()
                .map(|imp| imp.value.max(s.lo))
                .filter(|&v| s.current.is_none_or(|c| v < c));
        }
        let start = if self.fits_at(&round)? {
            round.clone()
        } else if exact != round && exact.iter().any(Option::is_some) && self.fits_at(&exact)? {
            exact
        } else {
            return Ok(None);
        };
        let units: Vec<Vec<usize>> = safe.iter().map(|&i| vec![i]).collect();
        let mut values = self.lift_unneeded(&units, start);
        for &i in &safe {
            if let (Some(v), Some(r)) = (values[i], round[i])
                && v < r
            {
                let mut w = values.clone();
                w[i] = Some(r);
                if self.fits_at(&w)? {
                    values = w;
                }
            }
        }
        Ok(Group::of(&values))
    }

    /// The search over `units`: each alone, then the ones that matter together (see the
    /// module's documentation); nothing when even every unit at its smallest does not fit
    /// (`lowest`: that cost, when known already).
    pub(super) fn search_units(
        &mut self,
        units: &[Vec<usize>],
        lowest: Option<u64>,
    ) -> Result<Vec<Group>, Stop> {
        if units.is_empty() {
            return Ok(Vec::new());
        }
        let n = self.sites.len();
        let none = vec![None; n];
        let unit_refs: Vec<&Vec<usize>> = units.iter().collect();
        let mut all_lo = none.clone();
        self.at_lo(&unit_refs, &mut all_lo);
        let lowest = match lowest {
            Some(c) => c,
            None => self.cost(&all_lo)?,
        };
        if !self.fits(lowest) {
            return Ok(Vec::new());
        }
        if units.len() > MAX_WEIGHED_UNITS {
            let every: Vec<usize> = (0..units.len()).collect();
            return Ok(match self.common_value(units, &every)? {
                Some((values, _)) => vec![Group {
                    bounds: self
                        .lift_unneeded(units, values)
                        .iter()
                        .enumerate()
                        .filter_map(|(i, v)| v.map(|v| (i, v)))
                        .collect(),
                }],
                None => Vec::new(),
            });
        }
        // Each unit: its cost alone at its smallest value (the biggest driver lowers most), and
        // whether it matters once everything else is at its smallest. One pass for each, so
        // that a probe changes only two units from the one before.
        let mut alone = Vec::new();
        let mut v = none.clone();
        for (ui, u) in units.iter().enumerate() {
            for &i in u {
                v[i] = Some(self.sites[i].lo);
            }
            alone.push((self.cost(&v)?, ui));
            for &i in u {
                v[i] = None;
            }
        }
        let mut relevant = vec![false; units.len()];
        let mut w = all_lo.clone();
        for (ui, u) in units.iter().enumerate() {
            for &i in u {
                w[i] = None;
            }
            relevant[ui] = self.cost(&w)? != lowest;
            for &i in u {
                w[i] = all_lo[i];
            }
        }
        alone.sort();
        let order: Vec<usize> = alone.iter().map(|(_, ui)| *ui).collect();
        let mut groups = Vec::new();
        for &(c, ui) in &alone {
            if groups.len() >= MAX_SUGGESTIONS {
                break;
            }
            if self.fits(c)
                && let Some(g) = self.shape(units, &[ui])?
            {
                groups.push(g);
            }
        }
        let mut together: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&ui| relevant[ui])
            .take(MAX_COMBINED_UNITS)
            .collect();
        if together.len() >= 2 {
            let mut v = none.clone();
            let refs: Vec<&Vec<usize>> = together.iter().map(|&ui| &units[ui]).collect();
            self.at_lo(&refs, &mut v);
            if !self.fits_at(&v)? {
                // Jointly relevant units the one-at-a-time test missed: all of them.
                together = order.clone();
            }
            if let Some(g) = self.shape(units, &together)?
                && !groups.contains(&g)
            {
                groups.push(g);
            }
        }
        Ok(groups)
    }

    /// The bounds of `chosen` units (in driver order): the largest common value, then the
    /// bounds not needed dropped, then each raised to its largest fitting value.
    pub(super) fn shape(
        &mut self,
        units: &[Vec<usize>],
        chosen: &[usize],
    ) -> Result<Option<Group>, Stop> {
        let Some((mut values, members)) = self.common_value(units, chosen)? else {
            return Ok(None);
        };
        // Drop what is not needed, the smallest drivers first.
        if chosen.len() > 1 {
            for &ui in chosen.iter().rev() {
                let mut w = values.clone();
                for &i in &units[ui] {
                    w[i] = None;
                }
                if w.iter().any(Option::is_some) && self.fits_at(&w)? {
                    values = w;
                }
            }
        }
        // Raise each, the biggest driver first.
        for &i in &members {
            let Some(v) = values[i] else { continue };
            let site = &self.sites[i];
            let mut above: Vec<i64> = candidates(v, site.ceiling())
                .into_iter()
                .chain(site.implied_candidates())
                .filter(|&x| x > v)
                .collect();
            above.sort_unstable();
            above.dedup();
            let mut w = values.clone();
            if let Some(best) = largest_fitting(&above, |x| {
                w[i] = Some(x);
                self.fits_at(&w)
            })? {
                values[i] = Some(best);
            }
        }
        Ok(Group::of(&values))
    }

    /// The sites of `chosen` units at the largest common value that fits (each left where it
    /// is when lower, and within its smallest sensible value and cap), and the sites in them;
    /// `None` when no value fits.
    #[allow(clippy::type_complexity)]
    pub(super) fn common_value(
        &mut self,
        units: &[Vec<usize>],
        chosen: &[usize],
    ) -> Result<Option<(Vec<Option<i64>>, Vec<usize>)>, Stop> {
        let n = self.sites.len();
        let mut members: Vec<usize> = Vec::new();
        let mut member = vec![false; n];
        for &ui in chosen {
            for &i in &units[ui] {
                if !member[i] {
                    member[i] = true;
                    members.push(i);
                }
            }
        }
        if members.is_empty() {
            return Ok(None);
        }
        budget::charge(members.len() as u64);
        let assign = |sites: &[Site], c: i64| -> Vec<Option<i64>> {
            let mut v = vec![None; n];
            for &i in &members {
                let s = &sites[i];
                if s.current.is_none_or(|cur| c < cur) {
                    v[i] = Some(s.cap.map_or(c, |cap| c.min(cap)).max(s.lo));
                }
            }
            v
        };
        let min_lo = members.iter().map(|&i| self.sites[i].lo).min().unwrap_or(1);
        let mut cands: Vec<i64> = series_125().into_iter().filter(|&v| v > min_lo).collect();
        cands.extend(members.iter().map(|&i| self.sites[i].lo));
        cands.extend(
            members
                .iter()
                .flat_map(|&i| self.sites[i].implied_candidates()),
        );
        cands.push(min_lo);
        cands.sort_unstable();
        cands.dedup();
        let Some(c) = largest_fitting(&cands, |c| {
            let v = assign(&self.sites, c);
            Ok(v.iter().any(Option::is_some) && self.fits_at(&v)?)
        })?
        else {
            return Ok(None);
        };
        Ok(Some((assign(&self.sites, c), members)))
    }

    /// Over [`MAX_WEIGHED_UNITS`]: `values` (every unit at the common value, which fits) with
    /// the units that need no bound lifted, left as they are. From the first unit on, the
    /// longest run of units that can be lifted together is found by bisection (lifting a bound
    /// never lowers the cost); the unit after it is needed and kept, and the next round starts
    /// past it, for at most [`MAX_LIFT_ROUNDS`] needed units (the ones after stay bounded), and
    /// not after a round that lifted nothing. Out of probes, what was lifted so far stands:
    /// every step was a probe that fits.
    pub(super) fn lift_unneeded(
        &mut self,
        units: &[Vec<usize>],
        mut values: Vec<Option<i64>>,
    ) -> Vec<Option<i64>> {
        let lifted = |values: &[Option<i64>], run: &[Vec<usize>]| {
            let mut v = values.to_vec();
            for &i in run.iter().flatten() {
                v[i] = None;
            }
            v
        };
        let mut start = 0;
        for _ in 0..MAX_LIFT_ROUNDS {
            let rest = &units[start..];
            if rest.is_empty() {
                break;
            }
            // The longest run rest[..k] that can be lifted: k = 0 fits (it is `values`).
            let (mut lo, mut hi) = (0, rest.len());
            while lo < hi {
                let mid = if lo == 0 && hi == rest.len() {
                    hi // the whole rest first: often nothing more is needed
                } else {
                    lo + (hi - lo).div_ceil(2)
                };
                match self.fits_at(&lifted(&values, &rest[..mid])) {
                    Ok(true) => lo = mid,
                    Ok(false) => hi = mid - 1,
                    Err(Stop::Evaluations) => return lifted(&values, &rest[..lo]),
                }
            }
            values = lifted(&values, &rest[..lo]);
            // All lifted; or none: the units are alike (nested lists) more often than not, and
            // a next round would lift no more.
            if lo == rest.len() || lo == 0 {
                break;
            }
            start += lo + 1;
        }
        values
    }

    pub(super) fn what(&self) -> &'static str {
        match self.target {
            Target::Rule => "the rule",
            Target::Total => "the total",
        }
    }

    pub(super) fn no_bound_helps(
        &self,
        units: &[Vec<usize>],
        base: u64,
        lowest: u64,
        notes: &[String],
    ) -> String {
        let limit = self.limit;
        let share = |c: u64| celcost_core::report::format::percent(c, limit);
        if units.is_empty() && self.sites.iter().all(|s| !s.has_room()) && !notes.is_empty() {
            // What the cost depends on is out of the schema's reach: say that first.
            return format!(
                "no bound helps: {}; so {}'s cost ({} = {} of {}) cannot be lowered with a schema bound",
                notes.join("; "),
                self.what(),
                num(base),
                share(base),
                num(limit)
            );
        }
        let mut why = if units.is_empty() && !self.sites.is_empty() {
            let sites: Vec<String> = self
                .sites
                .iter()
                .map(|s| {
                    format!(
                        "{} {} on {}",
                        s.keyword.name(),
                        s.current.unwrap_or_default(),
                        schema_path(&s.node)
                    )
                })
                .collect();
            format!(
                "no bound helps: the bounds {} depends on ({}) are as low as they sensibly go, and the rest of its cost ({} = {} of {}) is in fixed parts (literals, regexes, fixed-size values)",
                self.what(),
                some_of(&sites, 3),
                num(base),
                share(base),
                num(limit)
            )
        } else if units.is_empty() {
            match self.target {
                Target::Rule => format!(
                    "no bound helps: nothing the rule reads has a size a schema bound sets, and it is in no list or map: its cost ({} = {} of {}) is in fixed parts (literals, regexes, fixed-size values)",
                    num(base),
                    share(base),
                    num(limit)
                ),
                Target::Total => format!(
                    "no bound helps: nothing the rules of this schema read has a size a schema bound sets, and none is in a list or map: the total ({} = {} of {}) is in fixed parts",
                    num(base),
                    share(base),
                    num(limit)
                ),
            }
        } else if lowest == base {
            let sites: Vec<String> = self.sites.iter().map(Site::label).collect();
            format!(
                "no bound helps: even {} at its smallest does not change {}'s cost ({} = {} of {}): it is in fixed parts (literals, regexes, fixed-size values)",
                some_of(&sites, 3),
                self.what(),
                num(base),
                share(base),
                num(limit)
            )
        } else {
            let sites: Vec<String> = units
                .iter()
                .flatten()
                .map(|&i| {
                    let s = &self.sites[i];
                    format!("{}: {} on {}", s.keyword.name(), s.lo, schema_path(&s.node))
                })
                .collect();
            format!(
                "no bound helps: even with {} {} would cost {} = {} of {} (now {}): the rest is in fixed parts (literals, regexes, fixed-size values)",
                some_of(&sites, 3),
                self.what(),
                num(lowest),
                share(lowest),
                num(limit),
                num(base)
            )
        };
        for n in notes {
            why.push_str("; ");
            why.push_str(n);
        }
        why
    }
}

pub(super) fn some_of(items: &[String], n: usize) -> String {
    if items.len() <= n {
        items.join(", ")
    } else {
        format!("{}, and {} more", items[..n].join(", "), items.len() - n)
    }
}
