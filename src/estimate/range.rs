//! Estimating one object for a range of Kubernetes minors, each distinct estimate once: the
//! estimators of the range, and which minors cannot differ on an object. The reports are
//! compared by [`crate::report::versions`].

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::{Estimator, Shared};
use crate::cel::decls::{Declarations, Version};
use crate::cel::minor::Minor;
use crate::report::ObjectReport;

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

    /// One report per minor, oldest first; `None` when the kind is not estimable. `estimate`
    /// makes one minor's report, sharing with the others what they make alike ([`Shared`] of `v`).
    pub fn estimate_each(
        &self,
        v: &Value,
        estimate: impl Fn(&Estimator, &Shared<'_>) -> Option<ObjectReport>,
    ) -> Option<Vec<ObjectReport>> {
        let n = self.estimators.len();
        let object = Shared::new(v);
        if n == 1 {
            return Some(vec![estimate(&self.estimators[0], &object)?]);
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
                    out.push(estimate(&self.estimators[i], &object)?);
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
