//! Estimating one object for a range of Kubernetes minors, each distinct estimate once: the
//! estimators of the range, and which minors cannot differ on an object. The reports are
//! compared by [`crate::report::versions`].

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::{Estimator, Shared};
use crate::cel::decls::{Declarations, Version};
use crate::cel::minor::Minor;
use crate::cel::parse::ParserOptions;
use crate::cel::version::consulted;
use crate::report::{Keyword, ObjectReport};
use crate::schema::catalog::SchemaCatalog;

/// What differs between two minors' rules, as far as an object can tell.
#[derive(Debug, Default)]
struct Differences {
    /// Words that make an expression that has them read something declared differently: every
    /// segment of an identifier's name, the namespaces of a function's (`lists` of
    /// `lists.range`), and every segment of an internal function's (`cel.@mapInsert`, reached
    /// through macros, not by name).
    names: HashSet<String>,
    /// The names by which a function declared differently is called (`format`, `isIP`, `range`
    /// of `lists.range`): they matter only before a `(`; a field `self.duration` calls nothing.
    calls: HashSet<String>,
    /// Operators declared differently (`_>=_` of cross-type numeric comparisons): they matter
    /// to an object whose CEL may call them ([`Profile::operators`]).
    operators: HashSet<&'static str>,
    /// An operator-like function this module has no mark for: every CEL text may call it.
    unknown_operator: bool,
    /// An internal function (`@sortByAssociatedKeys`) declared differently: reached through a
    /// macro only.
    internal_function: bool,
    /// Operators whose overloads differ only by ones an estimate tells it could not have
    /// matched (bits of [`consulted`]: [`consulted::CROSS_NUMERIC_OVERLOADS`],
    /// [`consulted::OPTIONAL_ARGUMENT_OVERLOADS`]; [`guards_between`]).
    overload_guards: u64,
    /// Parser options differ (the two-variable macros, `sortBy`, quoted names): they matter to
    /// an estimate that noted a parse depending on them ([`consulted::PARSER_OPTIONS`]).
    parser_options: bool,
    /// Whether literals and `?` parse alike: every CEL text depends on it.
    optional_syntax: bool,
    /// cel-go's estimator differs: it matters to an estimate whose costs it may change (noted
    /// [`consulted::COST_ALGORITHM`]) of an object whose CEL it may cost otherwise
    /// ([`algorithm_dependent`]).
    cost_algorithm: bool,
    /// cel-go v0.17.8's comprehension result sizes: it matters to an estimate that costed a
    /// comprehension with cel-go's estimator before v0.23 (noted
    /// [`consulted::COMPREHENSION_RESULT_SIZE`]) of an object whose CEL may have one
    /// ([`algorithm_dependent`] words).
    comprehension_result_size: bool,
    /// What a presence test costs: it matters to an object whose CEL calls `has`.
    presence_test_cost: bool,
    /// Whether a cost factor past 2^64 is clamped: it matters to an estimate that noted one.
    cost_factor_clamped: bool,
    /// cel-go v0.16's checker: any compile of the object may word its errors otherwise.
    untyped_member_calls: bool,
    optional_old_self: bool,
    optional_macros: bool,
    format_validator: bool,
    kubernetes_type_equality: bool,
    url_result_size: bool,
    quantity_parse_cost: bool,
    keywords_as_field_names: bool,
    type_meta_additional_properties: bool,
    int_or_string_max_length: bool,
    enum_string_max_length: bool,
    global_matches: bool,
    affix_runtime_cost: bool,
    object_meta_names: bool,
    /// cel-go v0.17's homogeneous-literal validator exempts `format`'s list only as a literal
    /// ([`Minor::homogeneous_exemption_through_literals_only`]).
    homogeneous_exemption: bool,
}

/// Calls `add` with every name declared differently in `a` and `b`, or in one of them only.
fn differing<V: PartialEq>(
    a: &std::collections::HashMap<String, V>,
    b: &std::collections::HashMap<String, V>,
    add: &mut impl FnMut(&str),
) {
    for (n, v) in a {
        if b.get(n) != Some(v) {
            add(n);
        }
    }
    for n in b.keys() {
        if !a.contains_key(n) {
            add(n);
        }
    }
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
        let (mut names, mut calls, mut operators) =
            (HashSet::new(), HashSet::new(), HashSet::new());
        let (mut unknown_operator, mut internal_function) = (false, false);
        let mut overload_guards = 0;
        // And the stored-expressions environments (rules on defaults compile there).
        let stored = (
            Declarations::for_minor_stored(ma),
            Declarations::for_minor_stored(mb),
        );
        for (da, db) in [(&da, &db), (&stored.0, &stored.1)] {
            differing(
                &da.functions,
                &db.functions,
                &mut |name: &str| match name.rsplit_once('.') {
                    None if !name.starts_with(char::is_alphabetic) => {
                        let known = OPERATORS.iter().find(|(o, _)| *o == name);
                        match (
                            known,
                            guards_between(da.functions.get(name), db.functions.get(name)),
                        ) {
                            (Some(_), Some(guards)) => overload_guards |= guards,
                            (Some((o, _)), None) => {
                                operators.insert(*o);
                            }
                            // Reached only through the macro that expands to it.
                            _ if name == "@sortByAssociatedKeys" => {
                                calls.insert("sortBy".to_string());
                            }
                            _ if name.starts_with('@') => internal_function = true,
                            _ => unknown_operator = true,
                        }
                    }
                    _ if name.contains('@') => {
                        names.extend(name.split('.').map(str::to_string));
                    }
                    Some((namespace, called)) => {
                        names.extend(namespace.split('.').map(str::to_string));
                        calls.insert(called.to_string());
                    }
                    None => {
                        calls.insert(name.to_string());
                    }
                },
            );
            differing(&da.idents, &db.idents, &mut |name: &str| {
                names.extend(name.split('.').map(str::to_string));
            });
        }
        let keywords = |m: &Minor| m.compatibility >= Version::new(1, 31);
        // The options of every environment of the minor: the new expressions' and the stored
        // ones'.
        let (pa, pb) = (
            [ea.parser, ParserOptions::for_minor(ma, ma.kubernetes)],
            [eb.parser, ParserOptions::for_minor(mb, mb.kubernetes)],
        );
        // Every field of a minor, so that a new one cannot be added without deciding here how
        // an object tells whether it matters (issue 48: sharing fails closed).
        let Minor {
            // Names of the minor and where its rules were read.
            kubernetes: _,
            distribution: _,
            checked_against: _,
            // Its one rule of its own, `homogeneous_exemption_through_literals_only`, below.
            cel_go: _,
            // Libraries (the declarations above), parser options, keywords: below.
            compatibility: _,
            library_introduced: _,
            missing_libraries: _,
            cost_algorithm,
            comprehension_result_size,
            presence_test_cost,
            cost_factor_clamped,
            untyped_undeclared_member_calls,
            optional_old_self,
            format_string_validator,
            optional_macros_copy_their_receiver,
            kubernetes_type_equality,
            url_result_size,
            quantity_parse_cost,
            type_meta_keeps_additional_properties,
            int_or_string_max_length,
            enum_string_max_length,
            // A wording rule (`crd::fielderr`, the optional type's name): the report's errors
            // are worded again or estimated anew where they name it.
            optional_type_name: _,
            global_matches_cost,
            affix_runtime_cost_by_argument,
            object_meta_name_max_length,
            // The parser options (`pa`, `pb`).
            ident_escape_syntax: _,
            // Read by an update's verdict only, which a range does not share.
            stored_message_expressions_by_rule: _,
        } = *mb;
        Differences {
            names,
            calls,
            operators,
            unknown_operator,
            internal_function,
            overload_guards,
            parser_options: pa != pb,
            optional_syntax: pa
                .iter()
                .zip(&pb)
                .any(|(a, b)| a.optional_syntax != b.optional_syntax),
            cost_algorithm: ma.cost_algorithm != cost_algorithm,
            comprehension_result_size: ma.comprehension_result_size != comprehension_result_size,
            presence_test_cost: ma.presence_test_cost != presence_test_cost,
            cost_factor_clamped: ma.cost_factor_clamped != cost_factor_clamped,
            untyped_member_calls: ma.untyped_undeclared_member_calls
                != untyped_undeclared_member_calls,
            optional_old_self: ma.optional_old_self != optional_old_self,
            optional_macros: ma.optional_macros_copy_their_receiver
                != optional_macros_copy_their_receiver,
            format_validator: ma.format_string_validator != format_string_validator,
            kubernetes_type_equality: ma.kubernetes_type_equality != kubernetes_type_equality,
            url_result_size: ma.url_result_size != url_result_size,
            quantity_parse_cost: ma.quantity_parse_cost != quantity_parse_cost,
            keywords_as_field_names: keywords(ma) != keywords(mb),
            type_meta_additional_properties: ma.type_meta_keeps_additional_properties
                != type_meta_keeps_additional_properties,
            int_or_string_max_length: ma.int_or_string_max_length != int_or_string_max_length,
            enum_string_max_length: ma.enum_string_max_length != enum_string_max_length,
            global_matches: ma.global_matches_cost != global_matches_cost,
            affix_runtime_cost: ma.affix_runtime_cost_by_argument != affix_runtime_cost_by_argument,
            object_meta_names: ma.object_meta_name_max_length != object_meta_name_max_length,
            homogeneous_exemption: ma.homogeneous_exemption_through_literals_only()
                != mb.homogeneous_exemption_through_literals_only(),
        }
    }

    /// Whether an object with this profile gets the same estimate from both minors (apart from
    /// error wording, which [`RangeEstimator`] checks on the report), given the rules an estimate
    /// of it consulted (`consulted`, bits of [`consulted`]; all of them where none was made).
    fn irrelevant_to(&self, p: &Profile, consulted: u64) -> bool {
        self.irrelevant_to_with(p, consulted, true)
    }

    /// Whether both minors type-check the CEL of an object with this profile alike, given what
    /// the checks consulted: [`Differences::irrelevant_to`] but for the differences that change
    /// only costs and sizes (the cost algorithms, comprehension result sizes, presence tests,
    /// clamped factors, `url` and `quantity` costs, the sizes of int-or-string, enum and
    /// `metadata.name` strings, the global `matches`, runtime costs).
    fn checks_alike(&self, p: &Profile, consulted: u64) -> bool {
        self.irrelevant_to_with(p, consulted, false)
    }

    /// [`Differences::irrelevant_to`], weighing the differences of costs and sizes where
    /// `costs`.
    fn irrelevant_to_with(&self, p: &Profile, consulted: u64, costs: bool) -> bool {
        let any = |words: &[&str]| words.iter().any(|w| p.tokens.contains(*w));
        let calls = |words: &[&str]| words.iter().any(|w| p.called.contains(*w));
        let noted = |bit: u64| consulted & bit != 0;
        if p.has_cel
            && (self.optional_syntax && p.optional_syntax
                || costs
                    && self.cost_algorithm
                    && p.algorithm_dependent
                    && noted(consulted::COST_ALGORITHM)
                || costs
                    && self.comprehension_result_size
                    && p.algorithm_dependent
                    && noted(consulted::COMPREHENSION_RESULT_SIZE)
                || self.untyped_member_calls && noted(consulted::UNTYPED_MEMBER_CALLS)
                || self.parser_options && noted(consulted::PARSER_OPTIONS)
                || p.tokens.iter().any(|t| self.names.contains(t))
                || p.called.iter().any(|t| self.calls.contains(t))
                || self.unknown_operator
                || self.internal_function && p.macros
                || noted(self.overload_guards)
                || self.operators.iter().any(|o| p.operators.contains(o)))
        {
            return false;
        }
        let types = self.optional_macros && any(&["optMap", "optFlatMap"])
            || (self.format_validator || self.homogeneous_exemption) && any(&["format"])
            || self.kubernetes_type_equality
                && (calls(KUBERNETES_TYPE_CONSTRUCTORS) || any(KUBERNETES_TYPE_NAMESPACES))
            || self.optional_old_self && p.optional_old_self
            || self.keywords_as_field_names && selects_reserved_word(p)
            || self.type_meta_additional_properties && p.resource_with_additional_properties;
        let sizes = self.url_result_size && calls(&["url"])
            || self.quantity_parse_cost && calls(&["quantity", "isQuantity"])
            || self.presence_test_cost && calls(&["has"]) && noted(consulted::PRESENCE_TEST_COST)
            || self.cost_factor_clamped && noted(consulted::COST_FACTOR_CLAMP)
            || self.int_or_string_max_length && p.int_or_string_with_max_length
            || self.enum_string_max_length
                && p.enum_strings_without_max_length > 0
                && noted(consulted::ENUM_STRING_SIZES)
            || self.global_matches && noted(consulted::GLOBAL_MATCHES)
            || self.affix_runtime_cost && noted(consulted::AFFIX_RUNTIME_COST)
            || self.object_meta_names && p.root_rule_reads_metadata;
        !(types || costs && sizes)
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
/// Every value of a Kubernetes CEL type comes from calling one of these constructors (a
/// field named `url` makes none)...
const KUBERNETES_TYPE_CONSTRUCTORS: &[&str] = &["quantity", "ip", "cidr", "url", "semver"];
/// ... or from one of these namespaces or variables (`format.named(…)`, `authorizer.…`).
const KUBERNETES_TYPE_NAMESPACES: &[&str] = &["format", "authorizer"];

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
#[derive(Clone, Debug, Default, PartialEq)]
struct Profile {
    /// Identifier-like tokens of every CEL expression of the object.
    tokens: HashSet<String>,
    /// The tokens of them followed by a `(`: the names of calls.
    called: HashSet<String>,
    /// The operators' functions ([`OPERATORS`]) some CEL text may call.
    operators: HashSet<&'static str>,
    /// Some CEL text may call a macro (or its literals cannot be told apart).
    macros: bool,
    has_cel: bool,
    /// A backtick in some CEL text (a quoted name, or in a literal).
    backtick: bool,
    /// Some CEL text may use the optional syntax (`.?f`, `[?i]`, `{?k: v}`, `[?e]`), which
    /// parses only where the parser has it on ([`optional_syntax`]).
    optional_syntax: bool,
    /// Some CEL of the object may be costed differently by cel-go's two estimators
    /// ([`algorithm_dependent`]).
    algorithm_dependent: bool,
    /// A MutatingAdmissionPolicy: its `apiVersion` (the minors serve its versions differently,
    /// and a report says how).
    map_api_version: Option<String>,
    /// A ValidatingAdmissionPolicy: its `apiVersion` (`v1` is not served before 1.30).
    vap_api_version: Option<String>,
    int_or_string_with_max_length: bool,
    /// The nodes with `enum` and no `maxLength` (over-approximated: whatever their type), how
    /// many (a copy with a `maxLength` set on each has none: [`Profile::with_bounds`]; a
    /// policy's typed roots that have some count as one).
    enum_strings_without_max_length: usize,
    /// A rule with `optionalOldSelf`.
    optional_old_self: bool,
    resource_with_additional_properties: bool,
    /// A call of the global `matches(s, re)` (the word not after a `.`).
    global_matches: bool,
    /// A schema node with a `default` (its rules are evaluated on it, their runtime cost
    /// counted).
    has_default: bool,
    /// A CRD rule or messageExpression on a resource root (the root, or an
    /// `x-kubernetes-embedded-resource` node), the only ones whose `self` has `metadata`, that
    /// names it.
    root_rule_reads_metadata: bool,
}

impl Profile {
    /// The profile of `v`; a policy's includes what its typed roots (from `catalog`) read of a
    /// minor.
    fn of(v: &Value, catalog: &SchemaCatalog) -> Profile {
        let kind = v.get("kind").and_then(Value::as_str);
        let mut p = Profile {
            map_api_version: (kind == Some("MutatingAdmissionPolicy")).then(|| {
                v.get("apiVersion")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            }),
            vap_api_version: (kind == Some("ValidatingAdmissionPolicy")).then(|| {
                v.get("apiVersion")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            }),
            ..Profile::default()
        };
        p.walk(v, true);
        if matches!(
            kind,
            Some("ValidatingAdmissionPolicy" | "MutatingAdmissionPolicy")
        ) {
            let reads =
                crate::vap::conversion_reads(v.get("spec").unwrap_or(&Value::Null), catalog);
            p.int_or_string_with_max_length |= reads.int_or_string_max_length;
            p.enum_strings_without_max_length += usize::from(reads.enum_string_without_max_length);
            p.resource_with_additional_properties |= reads.resource_additional_properties;
        }
        p
    }

    /// The rules an estimate of the object may consult, as far as its words tell, for a
    /// comparison no estimate informs: every wording rule and the cost algorithm, and the
    /// parser options where some text names a gated macro or has a backtick.
    fn presumed_consulted(&self) -> u64 {
        let any = |words: &[&str]| words.iter().any(|w| self.tokens.contains(*w));
        let unless = |may: bool, bit: u64| if may { 0 } else { bit };
        let gated = any(TWO_VARIABLE_MACROS) || any(&["sortBy"]);
        // Runtime costs are counted only where a rule is evaluated on a default.
        let affixes = self.has_default && any(&["startsWith", "endsWith"]);
        !(unless(gated || self.backtick, consulted::PARSER_OPTIONS)
            | unless(self.global_matches, consulted::GLOBAL_MATCHES)
            | unless(affixes, consulted::AFFIX_RUNTIME_COST))
    }

    /// The profile of a copy of the object with bounds set on some of its schema nodes
    /// (`bounded`: each node as the object has it, and the keyword set there), without walking
    /// the copy: of what a profile reads, a bound changes only whether a node has a
    /// `maxLength` (an int-or-string node gets one; an enum node without one no longer counts).
    /// The same profile as [`Profile::of`] the copy (`with_bounds_is_the_copys_profile`).
    fn with_bounds(&self, bounded: &[(&Value, Keyword)]) -> std::borrow::Cow<'_, Profile> {
        let lengths = || {
            bounded
                .iter()
                .filter(|(n, k)| *k == Keyword::MaxLength && n.get("maxLength").is_none())
                .map(|(n, _)| *n)
        };
        let int_or_string =
            lengths().any(|n| n.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)));
        let mut enums: Vec<*const Value> = lengths()
            .filter(|n| n.get("enum").is_some())
            .map(|n| n as *const Value)
            .collect();
        enums.sort_unstable();
        enums.dedup();
        if (!int_or_string || self.int_or_string_with_max_length) && enums.is_empty() {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut p = self.clone();
        p.int_or_string_with_max_length |= int_or_string;
        p.enum_strings_without_max_length = p
            .enum_strings_without_max_length
            .saturating_sub(enums.len());
        std::borrow::Cow::Owned(p)
    }

    /// What a CEL text of the object tells.
    fn add_text(&mut self, s: &str) {
        let text = CelText::of(s);
        self.has_cel = true;
        self.backtick |= s.contains('`');
        self.algorithm_dependent |= algorithm_dependent(&text);
        self.optional_syntax |= optional_syntax(&text);
        self.global_matches |= calls_global(&text, "matches");
        let (operators, macros) = operators_called(&text);
        self.operators.extend(operators);
        self.macros |= macros;
        for (word, call) in text.tokens {
            if call {
                self.called.insert(word.clone());
            }
            self.tokens.insert(word);
        }
    }

    /// The profile of one CRD rule of the object this is the profile of, for sharing its
    /// compilation between minors ([`crate::crd::mark_rules_usable`]): the words of its texts
    /// (the rule and its messageExpression; an empty one is none), whether it has
    /// `optionalOldSelf`, and what the object's schema has that minors convert differently
    /// (the rule's `self` is part of it). A rule compiles alike wherever the object would by
    /// these words alone: a compilation depends on its texts, its node's type and the minor.
    fn of_rule(&self, texts: [&str; 2], optional_old_self: bool) -> Profile {
        let mut p = Profile {
            map_api_version: self.map_api_version.clone(),
            vap_api_version: self.vap_api_version.clone(),
            int_or_string_with_max_length: self.int_or_string_with_max_length,
            enum_strings_without_max_length: self.enum_strings_without_max_length,
            optional_old_self,
            resource_with_additional_properties: self.resource_with_additional_properties,
            has_default: self.has_default,
            ..Profile::default()
        };
        for t in texts.into_iter().filter(|t| !t.is_empty()) {
            p.add_text(t);
        }
        p.root_rule_reads_metadata = self.root_rule_reads_metadata && p.tokens.contains("metadata");
        p
    }

    fn walk(&mut self, v: &Value, resource_root: bool) {
        match v {
            Value::Object(m) => {
                // What the node says of itself, in one pass over its keys.
                let (mut embedded, mut int_or_string, mut max_length, mut additional) =
                    (false, false, false, false);
                let mut has_enum = false;
                let mut rules = None;
                for (k, x) in m {
                    match k.as_str() {
                        "default" => self.has_default = true,
                        "x-kubernetes-embedded-resource" => embedded = *x == Value::Bool(true),
                        "x-kubernetes-int-or-string" => int_or_string = *x == Value::Bool(true),
                        "maxLength" => max_length = true,
                        "additionalProperties" => additional = true,
                        "enum" => has_enum = true,
                        "optionalOldSelf" => self.optional_old_self = true,
                        "x-kubernetes-validations" => rules = x.as_array(),
                        _ => {}
                    }
                }
                let root = resource_root || embedded;
                if root && let Some(rules) = rules {
                    self.root_rule_reads_metadata |= rules.iter().any(|r| {
                        ["rule", "messageExpression"].iter().any(|k| {
                            r.get(*k).and_then(Value::as_str).is_some_and(|s| {
                                identifier_tokens(s).iter().any(|(t, _)| t == "metadata")
                            })
                        })
                    });
                }
                self.int_or_string_with_max_length |= int_or_string && max_length;
                self.enum_strings_without_max_length += usize::from(has_enum && !max_length);
                self.resource_with_additional_properties |= additional && root;
                for (k, x) in m {
                    match (k.as_str(), x) {
                        (
                            "rule" | "messageExpression" | "expression" | "valueExpression",
                            Value::String(s),
                        ) => self.add_text(s),
                        _ => self.walk(x, k == "openAPIV3Schema"),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| self.walk(x, false)),
            _ => {}
        }
    }
}

/// Whether cel-go's estimators before and from v0.23 ([`crate::cel::cost::CostAlgorithm`]) may
/// cost a CEL text differently, or read different sizes of it: they differ on what holds a
/// value (comprehensions, `cel.bind`, the macros that expand to them, policy variables), on
/// sizes carried through `dyn`, optional values and the elements of list and map literals
/// (indexed: `][`, `}[`). Straight-line CEL otherwise reads the same sizes at the same calls
/// (tests/it/range.rs compares them). Over-approximates: any such word or mark, anywhere.
fn algorithm_dependent(text: &CelText<'_>) -> bool {
    const WORDS: &[&str] = &["optional", "dyn", "variables"];
    let Some(code) = &text.compact else {
        return true;
    };
    ["][", "}[", ".?", "[?", "{?", ",?"]
        .iter()
        .any(|m| code.contains(m))
        || text
            .tokens
            .iter()
            .any(|(t, _)| COMPREHENSION_MACROS.contains(&t.as_str()) || WORDS.contains(&t.as_str()))
}

/// The macros that expand to a comprehension (or, `optMap` and `optFlatMap`, to a conditional
/// over one's variable): cel-go `parser/macro.go`, `ext/comprehensions.go`, `ext/bindings.go`,
/// `ext/lists.go` `sortBy`, `cel/macro.go`.
const COMPREHENSION_MACROS: &[&str] = &[
    "all",
    "exists",
    "exists_one",
    "existsOne",
    "map",
    "filter",
    "transformList",
    "transformMap",
    "transformMapEntry",
    "bind",
    "sortBy",
    "optMap",
    "optFlatMap",
];

/// [`crate::cel::parse::may_use_optional_syntax`] of a text.
fn optional_syntax(text: &CelText<'_>) -> bool {
    crate::cel::parse::may_use_optional_syntax(text.text, text.code.as_deref())
}

/// The functions of CEL's operators, each with the marks one of its calls has in a text: a
/// difference in their declarations (1.29's cross-type numeric comparisons) matters to a text
/// with the mark only.
const OPERATORS: &[(&str, &[&str])] = &[
    ("_?_:_", &["?"]),
    ("_||_", &["||"]),
    ("_&&_", &["&&"]),
    ("_<_", &["<"]),
    ("_<=_", &["<="]),
    ("_>_", &[">"]),
    ("_>=_", &[">="]),
    ("_==_", &["=="]),
    ("_!=_", &["!="]),
    ("@in", &["in"]),
    ("_+_", &["+"]),
    ("_-_", &["-"]),
    ("_*_", &["*"]),
    ("_/_", &["/"]),
    ("_%_", &["%"]),
    ("!_", &["!"]),
    ("-_", &["-"]),
    ("_[_]", &["["]),
    ("_[?_]", &["[?"]),
    ("_?._", &[".?"]),
    ("@not_strictly_false", &[]),
];

/// The operators' functions ([`OPERATORS`]) a CEL text may call, and whether it may call a
/// macro: those whose mark it has outside literals (blanks aside), and where it names a macro
/// those its expansion calls ([`MACRO_OPERATORS`]); every one where its literals cannot be told
/// apart.
fn operators_called(text: &CelText<'_>) -> (Vec<&'static str>, bool) {
    let Some(code) = &text.compact else {
        return (OPERATORS.iter().map(|(o, _)| *o).collect(), true);
    };
    let macros = text
        .tokens
        .iter()
        .any(|(t, _)| t == "has" || COMPREHENSION_MACROS.contains(&t.as_str()));
    let called = OPERATORS
        .iter()
        .filter(|(o, marks)| {
            macros && MACRO_OPERATORS.contains(o)
                || match *o {
                    "@in" => text.tokens.iter().any(|(t, _)| t == "in"),
                    _ => marks.iter().any(|m| code.contains(m)),
                }
        })
        .map(|(o, _)| *o)
        .collect();
    (called, macros)
}

/// The operators the macros' expansions call (cel-go `parser/macro.go`, `ext/comprehensions.go`,
/// `ext/lists.go` `sortBy`, `cel/macro.go` `optMap`/`optFlatMap`): the quantifiers' `_&&_`,
/// `_||_`, `!_` and `@not_strictly_false`, `exists_one`'s `_==_` and `_+_`, `filter`'s and the
/// optional macros' `_?_:_`, the list builders' `_+_`; no comparison, index or arithmetic
/// other than `_+_`.
const MACRO_OPERATORS: &[&str] = &[
    "_&&_",
    "_||_",
    "!_",
    "@not_strictly_false",
    "_==_",
    "_+_",
    "_?_:_",
];

/// The guards ([`consulted`] bits) under which operator `a` and `b` (one minor's and another's
/// declaration of it) resolve a call alike: where they keep their common overloads in one order
/// and every overload only one declares is a cross-type numeric comparison (two different
/// numeric types: [`consulted::CROSS_NUMERIC_OVERLOADS`]) or takes an optional value first
/// ([`consulted::OPTIONAL_ARGUMENT_OVERLOADS`]), which a checker notes wherever a call's
/// arguments could match one. `None` otherwise.
fn guards_between(
    a: Option<&crate::cel::decls::Function>,
    b: Option<&crate::cel::decls::Function>,
) -> Option<u64> {
    use crate::cel::types::Type;
    let (a, b) = (a?, b?);
    fn common<'f>(
        x: &'f crate::cel::decls::Function,
        y: &crate::cel::decls::Function,
    ) -> Vec<&'f crate::cel::decls::Overload> {
        x.overloads
            .iter()
            .filter(|o| y.overloads.contains(o))
            .collect()
    }
    if common(a, b) != common(b, a) {
        return None;
    }
    let numeric = |t: &Type| matches!(t, Type::Int | Type::Uint | Type::Double);
    let only = a
        .overloads
        .iter()
        .filter(|o| !b.overloads.contains(o))
        .chain(b.overloads.iter().filter(|o| !a.overloads.contains(o)));
    let mut guards = 0;
    for o in only {
        guards |= match &o.args[..] {
            [x, y] if numeric(x) && numeric(y) && x != y => consulted::CROSS_NUMERIC_OVERLOADS,
            [x, ..] if x.is_optional() => consulted::OPTIONAL_ARGUMENT_OVERLOADS,
            _ => return None,
        };
    }
    Some(guards)
}

/// Whether a CEL text calls `name` as a global function: the word outside literals and comments,
/// not after a `.` (a receiver call) — or the text's literals cannot be told apart.
fn calls_global(text: &CelText<'_>, name: &str) -> bool {
    if !text.text.contains(name) {
        return false;
    }
    let Some(code) = &text.code else {
        return true;
    };
    let word = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(name).any(|(i, _)| {
        let before = code[..i].trim_end();
        let after = &code[i + name.len()..];
        !before.ends_with(word) && !before.ends_with('.') && !after.starts_with(word)
    })
}

/// The identifier-like words of a CEL text, outside its string and bytes literals and comments:
/// what is in a literal names nothing a minor declares (`'… in range'` calls no `range`); each
/// with whether it is a call's name (a `(` follows, after blanks and comments). A text whose
/// literals cannot be told apart (an unterminated one, an unknown prefix) gives every word, each
/// as a call.
fn identifier_tokens(s: &str) -> Vec<(String, bool)> {
    CelText::of(s).tokens
}

/// A CEL text as a profile reads it, read once: its code outside literals and comments
/// ([`crate::cel::parse::code_outside_literals`]) and its words ([`identifier_tokens`]).
struct CelText<'s> {
    text: &'s str,
    code: Option<String>,
    /// `code` without its blanks (marks such as `.?` or `][` read across them).
    compact: Option<String>,
    tokens: Vec<(String, bool)>,
}

impl<'s> CelText<'s> {
    fn of(text: &'s str) -> Self {
        let code = crate::cel::parse::code_outside_literals(text);
        let tokens = tokens_of(code.as_deref(), text);
        let compact = code
            .as_deref()
            .map(|c| c.chars().filter(|c| !c.is_whitespace()).collect());
        CelText {
            text,
            code,
            compact,
            tokens,
        }
    }
}

/// [`identifier_tokens`] of `s`, whose code outside literals is `code`.
fn tokens_of(code: Option<&str>, s: &str) -> Vec<(String, bool)> {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let (code, readable) = match code {
        Some(code) => (code, true),
        None => (s, false),
    };
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(start) = rest.find(word) {
        let after = &rest[start..];
        let end = after.find(|c: char| !word(c)).unwrap_or(after.len());
        let call = !readable || after[end..].trim_start().starts_with('(');
        out.push((after[..end].to_string(), call));
        rest = &after[end..];
    }
    out
}

/// What of one object can make two minors estimate it differently ([`RangeEstimator::profile`]),
/// kept for the copies of it that differ only by bounds
/// ([`RangeEstimator::estimate_alike_bounded`]).
pub struct ObjectProfile {
    /// The address of the object it is of.
    of: usize,
    profile: Profile,
}

/// Estimators of a range of minors (oldest first) that estimate each object once per group of
/// minors that cannot differ on it: the object's CEL words, schema features and the minors'
/// rules decide the groups ([`Differences`]). A report with errors is shared only between minors
/// that word errors alike.
pub struct RangeEstimator {
    estimators: Vec<Estimator>,
    differences: Mutex<HashMap<(usize, usize), Arc<Differences>>>,
    /// Estimates [`RangeEstimator::estimate_each`] made (not copied), over its life.
    made: std::sync::atomic::AtomicUsize,
    /// What its estimates took from another minor's estimate of the same CRD instead of making
    /// it ([`crate::crd::with_rules_across_minors`]), over its life.
    taken: Mutex<crate::crd::Taken>,
}

impl RangeEstimator {
    pub fn new(estimators: Vec<Estimator>) -> Self {
        RangeEstimator {
            estimators,
            differences: Mutex::new(HashMap::new()),
            made: Default::default(),
            taken: Default::default(),
        }
    }

    /// How many estimates [`RangeEstimator::estimate_each`] has made, over every object and
    /// minor, rather than copied from another minor's (the benchmarks' measure of sharing).
    pub fn estimates_made(&self) -> usize {
        self.made.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// What its estimates took from another minor's estimate of the same CRD instead of making
    /// it (rule compilations, type checks), over its life.
    pub fn taken(&self) -> crate::crd::Taken {
        *self.taken.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Before minor `to` estimates a CRD (every minor serves CRDs alike) that an earlier minor
    /// estimated: the rules it may take
    /// that minor's compilation of ([`crate::crd::mark_rules_usable`]), by the rule's profile
    /// (`profile` is the object's; each rule's is made once, in `rule_profiles`). Where `to`'s
    /// estimate compares the cost algorithms (`compare`), a compilation that noted the cost
    /// algorithm is made again: the comparison may find that the next algorithm agrees, which
    /// lets the next minors share the whole report.
    fn mark_rules_usable(
        &self,
        to: usize,
        profile: &Profile,
        (rule_profiles, text_profiles): (&mut Vec<Option<Profile>>, &mut Vec<Option<Profile>>),
        compare: bool,
    ) {
        let differences: Vec<std::cell::OnceCell<Arc<Differences>>> =
            (0..to).map(|_| std::cell::OnceCell::new()).collect();
        let differences =
            |from: usize| differences[from].get_or_init(|| self.differences(from, to));
        crate::crd::mark_rules_usable(
            to,
            |id, texts, old_self, from, consulted| {
                if compare && consulted & consulted::COST_ALGORITHM != 0 {
                    return false;
                }
                let p = kept_profile(rule_profiles, id, || profile.of_rule(texts, old_self));
                differences(from).irrelevant_to(p, consulted)
            },
            |id, text, from, consulted| {
                let p = kept_profile(text_profiles, id, || profile.of_rule([text, ""], false));
                differences(from).checks_alike(p, consulted)
            },
        );
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

    /// Whether the estimators `a` and `b` (two of the range's) give `v` the same estimate but for
    /// the words of errors: the range would share one report between them.
    pub fn estimate_alike(
        &self,
        a: &Estimator,
        b: &Estimator,
        v: &Value,
        catalog: &SchemaCatalog,
    ) -> bool {
        self.estimate_alike_given(a, b, v, catalog, None)
    }

    /// As [`RangeEstimator::estimate_alike`], knowing (when `consulted` is given) what `a`'s
    /// estimate of `v` consulted (that report's `made_by.consulted.rules`): the range's own test
    /// for sharing a report it made (a parse that did not depend on the parser options does not
    /// tell the minors apart, though the text names a gated macro), not what the object's words
    /// may reach.
    pub fn estimate_alike_given(
        &self,
        a: &Estimator,
        b: &Estimator,
        v: &Value,
        catalog: &SchemaCatalog,
        consulted: Option<u64>,
    ) -> bool {
        self.alike_to_one_of(&[(a, consulted)], b, || {
            std::borrow::Cow::Owned(Profile::of(v, catalog))
        })
    }

    /// What of `v` can make two minors estimate it differently, for
    /// [`RangeEstimator::estimate_alike_bounded`] of copies of it with bounds set.
    pub fn profile(&self, v: &Value, catalog: &SchemaCatalog) -> ObjectProfile {
        ObjectProfile {
            of: v as *const Value as usize,
            profile: Profile::of(v, catalog),
        }
    }

    /// Whether `b` estimates a copy of `object` with bounds set as one of the `known` minors
    /// does ([`RangeEstimator::estimate_alike_given`] of each, with what its estimate of the
    /// copy consulted when given). `bounded` is each node a bound is set on, as `object` has it,
    /// and the keyword set there; `profile` is `object`'s ([`RangeEstimator::profile`]), and the
    /// copy is not walked again (a profile of a large CRD for each probe of its suggestions was
    /// 5 % of a run with them at 30 %). A profile of another object is made again.
    pub fn estimate_alike_bounded(
        &self,
        known: &[(&Estimator, Option<u64>)],
        b: &Estimator,
        object: &Value,
        profile: &ObjectProfile,
        bounded: &[(&Value, Keyword)],
        catalog: &SchemaCatalog,
    ) -> bool {
        let own;
        let base = if profile.of == object as *const Value as usize {
            &profile.profile
        } else {
            own = Profile::of(object, catalog);
            &own
        };
        self.alike_to_one_of(known, b, || base.with_bounds(bounded))
    }

    fn alike_to_one_of<'p>(
        &self,
        known: &[(&Estimator, Option<u64>)],
        b: &Estimator,
        profile: impl FnOnce() -> std::borrow::Cow<'p, Profile>,
    ) -> bool {
        let index = |e: &Estimator| self.estimators.iter().position(|x| std::ptr::eq(x, e));
        let Some(j) = index(b) else {
            return false;
        };
        // Made for the first known minor that is not `b`, once for all of them.
        let profile = std::cell::LazyCell::new(profile);
        known.iter().any(|&(a, consulted)| {
            let Some(i) = index(a) else {
                return false;
            };
            if i == j {
                return true;
            }
            let profile: &Profile = &profile;
            let consulted = consulted.unwrap_or_else(|| profile.presumed_consulted());
            self.served_alike(profile, i, j)
                && self
                    .differences(i.min(j), i.max(j))
                    .irrelevant_to(profile, consulted)
        })
    }

    /// Whether minors `a` and `b` serve the object alike: any object but a
    /// MutatingAdmissionPolicy; one of those when both serve its `apiVersion` by default (a
    /// report of a version off by default or not served says so, naming the minor).
    fn served_alike(&self, p: &Profile, a: usize, b: usize) -> bool {
        use crate::vap::{MapApiVersion, map_api_version};
        if let Some(api) = &p.vap_api_version {
            let not_served =
                |i: usize| crate::vap::vap_not_served(api, self.estimators[i].kubernetes_version());
            return not_served(a).is_none() && not_served(b).is_none();
        }
        let Some(api) = &p.map_api_version else {
            return true;
        };
        let served = |i: usize| {
            map_api_version(api, self.estimators[i].kubernetes_version()) == MapApiVersion::Served
        };
        served(a) && served(b)
    }

    /// Whether minor `i`'s estimate of an object with profile `p` compares its costs with the
    /// other cel-go estimator's ([`crate::cel::cost::comparing_algorithms`]): where the next minor
    /// that follows the other may share it, it and every minor before it agreeing with `i` on
    /// the object but for what the estimate tells ([`consulted::ESTIMATE_RULES`]).
    fn compares_algorithms(&self, i: usize, p: &Profile) -> bool {
        if !(p.has_cel && p.algorithm_dependent) {
            return false;
        }
        let algorithm = self.estimators[i].minor().cost_algorithm;
        let Some(j) = (i + 1..self.estimators.len())
            .find(|&j| self.estimators[j].minor().cost_algorithm != algorithm)
        else {
            return false;
        };
        let untold = !consulted::ESTIMATE_RULES;
        (i + 1..=j)
            .all(|k| self.served_alike(p, i, k) && self.differences(i, k).irrelevant_to(p, untold))
    }

    /// One report per minor, oldest first; `None` when the kind is not estimable. `estimate`
    /// makes one minor's report, sharing with the others what they make alike ([`Shared`] of `v`);
    /// `catalog` holds the schemas it types a policy over.
    pub fn estimate_each(
        &self,
        v: &Value,
        catalog: &SchemaCatalog,
        estimate: impl Fn(&Estimator, &Shared<'_>) -> Option<ObjectReport>,
    ) -> Option<Vec<ObjectReport>> {
        let n = self.estimators.len();
        let object = Shared::new(v);
        if n == 1 {
            self.made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return Some(vec![estimate(&self.estimators[0], &object)?]);
        }
        let profile = Profile::of(v, catalog);
        let crd = v.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition");
        if !crd {
            return self.estimate_each_of(&profile, &object, &estimate);
        }
        let envs = (self.estimators.iter())
            .map(|e| e.env() as *const crate::cel::env::Env as usize)
            .collect();
        let (out, taken) = crate::crd::with_rules_across_minors(envs, || {
            self.estimate_each_of(&profile, &object, &estimate)
        });
        let mut total = self.taken.lock().unwrap_or_else(|p| p.into_inner());
        total.compilations += taken.compilations;
        total.checks += taken.checks;
        out
    }

    /// [`RangeEstimator::estimate_each`] of an object with profile `profile`, with the range
    /// minors' rule compilations of a CRD kept ([`crate::crd::with_rules_across_minors`]).
    fn estimate_each_of(
        &self,
        profile: &Profile,
        object: &Shared<'_>,
        estimate: &impl Fn(&Estimator, &Shared<'_>) -> Option<ObjectReport>,
    ) -> Option<Vec<ObjectReport>> {
        let n = self.estimators.len();
        // Each rule's profile, by its number among those kept (made where first asked).
        let (mut rule_profiles, mut text_profiles): (Vec<Option<Profile>>, Vec<Option<Profile>>) =
            (Vec::new(), Vec::new());
        let mut out: Vec<ObjectReport> = Vec::with_capacity(n);
        // The wording rules each report's text depends on (bits by index of
        // `fielderr::wording`): those its estimate consulted.
        let mut rules: Vec<u64> = Vec::with_capacity(n);
        // The index of the minor whose report the last ones copy.
        let mut representative: Option<usize> = None;
        for i in 0..n {
            let to = self.estimators[i].kubernetes_version();
            let alike =
                representative.filter(|&r| self.differences(r, i).irrelevant_to(profile, rules[r]));
            // The representative's report, as it stands or with its errors in this minor's
            // words (rendered again from the field errors its estimate kept); a
            // MutatingAdmissionPolicy's with what this minor says of serving its version.
            let copy = alike.and_then(|r| {
                let from = self.estimators[r].kubernetes_version();
                if !self.served_alike(profile, r, i) {
                    return served_otherwise(profile, &out[r], (from, to), rules[r], || {
                        object.errors_worded_for(from, to)
                    });
                }
                if shareable(&out[r], from, to, rules[r]) {
                    Some(out[r].clone())
                } else if rewordable(&out[r], from, to, rules[r]) {
                    let (errors, parts) = object.errors_worded_for(from, to)?;
                    let mut copy = out[r].clone();
                    copy.errors = errors;
                    copy.error_parts = parts;
                    Some(copy)
                } else {
                    None
                }
            });
            match copy {
                Some(mut copy) => {
                    copy.kubernetes_version = format!("v{to}");
                    copy.made_by.minor = Some(self.estimators[i].minor());
                    rules.push(alike.map_or(u64::MAX, |r| rules[r]));
                    out.push(copy);
                }
                None => {
                    self.made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let compare = self.compares_algorithms(i, profile);
                    if representative.is_some() {
                        self.mark_rules_usable(
                            i,
                            profile,
                            (&mut rule_profiles, &mut text_profiles),
                            compare,
                        );
                    }
                    let (report, consulted) = consulted::tracking(|| {
                        if compare {
                            crate::cel::cost::comparing_algorithms(|| {
                                estimate(&self.estimators[i], object)
                            })
                        } else {
                            estimate(&self.estimators[i], object)
                        }
                    });
                    let report = report?;
                    rules.push(crate::crd::fielderr::wording_rules_of(
                        consulted,
                        &report.errors,
                    ));
                    out.push(report);
                    representative = Some(i);
                }
            }
        }
        Some(out)
    }
}

/// The profile numbered `id` of `profiles`, made by `make` where first asked.
fn kept_profile(
    profiles: &mut Vec<Option<Profile>>,
    id: usize,
    make: impl FnOnce() -> Profile,
) -> &Profile {
    if profiles.len() <= id {
        profiles.resize(id + 1, None);
    }
    profiles[id].get_or_insert_with(make)
}

/// A MutatingAdmissionPolicy's report of minor `from` as minor `to` makes it, where the two
/// serve its `apiVersion` differently (by default, off by default, not at all): what `from`
/// says of serving it (its one note, or its first error) replaced by what `to` says, the other
/// errors worded by `to` (as they stand where the two word them alike, `rules`, see
/// [`shareable`]; else rendered again from `from`'s field errors, `kept`). The estimate itself
/// does not depend on serving. `None` for a report with other notes or an API server panic, or
/// one of a minor that does not serve the version and kept no field errors (a panic it does not
/// report may stand where the version is served).
fn served_otherwise(
    p: &Profile,
    r: &ObjectReport,
    (from, to): (Version, Version),
    rules: u64,
    kept: impl FnOnce() -> Option<(Vec<String>, Vec<crate::report::ErrorParts>)>,
) -> Option<ObjectReport> {
    use crate::crd::fielderr::{RENDER_TIME_RULES, worded_alike};
    use crate::vap::{MapApiVersion, map_api_version};
    let api = p.map_api_version.as_ref()?;
    if r.stopped.is_some() || r.apiserver_panic.is_some() {
        return None;
    }
    let mut copy = r.clone();
    match map_api_version(api, from) {
        MapApiVersion::Served if r.notes.is_empty() => {}
        MapApiVersion::OffByDefault(a) if r.notes.len() == 1 && r.notes[0] == a => {
            copy.notes.clear()
        }
        MapApiVersion::NotServed(a) if r.notes.is_empty() && r.errors.first() == Some(&a) => {
            copy.errors.remove(0);
            copy.error_parts.remove(0);
        }
        _ => return None,
    }
    let reword = !copy.errors.is_empty() && !worded_alike(rules, from, to);
    if reword && !worded_alike(rules & !RENDER_TIME_RULES, from, to) {
        return None;
    }
    // Field errors are kept only where no expression panics.
    if reword || matches!(map_api_version(api, from), MapApiVersion::NotServed(_)) {
        let (errors, parts) = kept()?;
        if reword {
            (copy.errors, copy.error_parts) = (errors, parts);
        }
    }
    match map_api_version(api, to) {
        MapApiVersion::Served => {}
        MapApiVersion::OffByDefault(b) => copy.notes = vec![b],
        MapApiVersion::NotServed(b) => {
            copy.error_parts
                .insert(0, crate::report::ErrorParts::other("", &b));
            copy.errors.insert(0, b);
        }
    }
    copy.valid = copy.errors.is_empty();
    Some(copy)
}

/// Whether a report of minor `from` can stand for minor `to`'s once its errors are rendered
/// again in `to`'s words: the two agree on every wording rule its estimate consulted that
/// decides text when an error is made (which stored-versions detail, whether a detail repeats
/// its field, which bad value a failed rule on a default shows, how cel-go names the optional
/// type, the policy compiler's output-type message), however they render one.
fn rewordable(r: &ObjectReport, from: Version, to: Version, rules: u64) -> bool {
    use crate::crd::fielderr::{RENDER_TIME_RULES, worded_alike};
    r.stopped.is_none() && r.notes.is_empty() && worded_alike(rules & !RENDER_TIME_RULES, from, to)
}

/// Whether a report of minor `from` can stand for minor `to`'s: both word its errors alike (the
/// wording rules `rules` its estimate consulted, or there are no errors), and it has no notes
/// (they say what the minor serves).
fn shareable(r: &ObjectReport, from: Version, to: Version, rules: u64) -> bool {
    r.stopped.is_none()
        && r.notes.is_empty()
        && (r.errors.is_empty() || crate::crd::fielderr::worded_alike(rules, from, to))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where a range estimates a CRD again on a minor, a rule that compiles alike there is taken
    /// whole from the earlier minor, and one that the minor only costs otherwise is type-checked
    /// once; every report is the one the minor makes alone.
    #[test]
    fn a_range_compiles_a_rule_again_only_where_the_minors_differ_on_it() {
        use crate::estimate::Estimator;
        let crd = crate::fixtures::widgets(serde_json::json!({
            "type": "object",
            "properties": {"spec": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self.name.startsWith('a')"},
                    {"rule": "self.items.all(i, i.size() < 5)"},
                ],
                "properties": {
                    "name": {"type": "string", "maxLength": 10},
                    "items": {
                        "type": "array",
                        "maxItems": 10,
                        "items": {"type": "string", "maxLength": 10},
                    },
                },
            }},
        }));
        let minors = || {
            vec![
                Estimator::new(Version::new(1, 29)),
                Estimator::new(Version::new(1, 30)),
            ]
        };
        let range = RangeEstimator::new(minors());
        let catalog = SchemaCatalog::new();
        let reports = range
            .estimate_each(&crd, &catalog, |e, s| {
                Some(e.estimate_crd_shared(s, "w.yaml"))
            })
            .unwrap();
        assert_eq!(
            range.estimates_made(),
            2,
            "1.30 sizes comprehension results otherwise"
        );
        assert_eq!(
            range.taken(),
            crate::crd::Taken {
                compilations: 1,
                checks: 1
            }
        );
        for (e, r) in minors().iter().zip(&reports) {
            assert_eq!(
                serde_json::to_value(e.estimate_crd(&crd, "w.yaml")).unwrap(),
                serde_json::to_value(r).unwrap(),
                "{}",
                e.kubernetes_version()
            );
        }
    }

    fn tokens(s: &str) -> Vec<String> {
        let mut t: Vec<String> = identifier_tokens(s).into_iter().map(|(w, _)| w).collect();
        t.sort();
        t
    }

    fn calls(s: &str) -> Vec<String> {
        let mut t: Vec<String> = identifier_tokens(s)
            .into_iter()
            .filter_map(|(w, call)| call.then_some(w))
            .collect();
        t.sort();
        t
    }

    /// A profile worked out from the bounds set on a copy is the profile of the copy: bounds
    /// that give an int-or-string node a `maxLength`, give one or every enum node one, set
    /// another keyword there, or change a `maxLength` it has.
    #[test]
    fn with_bounds_is_the_copys_profile() {
        let object = serde_json::json!({
            "kind": "CustomResourceDefinition",
            "spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
                "type": "object",
                "x-kubernetes-validations": [{"rule": "self.e1 == 'a' && self.l.all(x, x == 'b')"}],
                "properties": {
                    "ios": {"x-kubernetes-int-or-string": true},
                    "e1": {"type": "string", "enum": ["a", "b"]},
                    "e2": {"type": "string", "enum": ["c"]},
                    "s": {"type": "string", "maxLength": 10},
                    "l": {"type": "array", "items": {"type": "string"}}
                }
            }}}]}
        });
        let node =
            |name: &str| format!("/spec/versions/0/schema/openAPIV3Schema/properties/{name}");
        let base = Profile::of(&object, &SchemaCatalog::new());
        assert!(base.enum_strings_without_max_length == 2 && !base.int_or_string_with_max_length);
        let cases: &[&[(&str, Keyword)]] = &[
            &[],
            &[("ios", Keyword::MaxLength)],
            &[("e1", Keyword::MaxLength)],
            &[("e1", Keyword::MaxLength), ("e1", Keyword::MaxLength)],
            &[("e1", Keyword::MaxLength), ("e2", Keyword::MaxLength)],
            &[("e1", Keyword::MaxItems), ("e2", Keyword::MaxProperties)],
            &[("s", Keyword::MaxLength), ("l", Keyword::MaxItems)],
            &[
                ("ios", Keyword::MaxLength),
                ("e1", Keyword::MaxLength),
                ("e2", Keyword::MaxLength),
            ],
        ];
        for &case in cases {
            let mut copy = object.clone();
            for (name, k) in case {
                let n = copy
                    .pointer_mut(&node(name))
                    .unwrap()
                    .as_object_mut()
                    .unwrap();
                n.insert(k.name().to_string(), Value::from(3));
            }
            let bounded: Vec<(&Value, Keyword)> = case
                .iter()
                .map(|(name, k)| (object.pointer(&node(name)).unwrap(), *k))
                .collect();
            assert_eq!(
                *base.with_bounds(&bounded),
                Profile::of(&copy, &SchemaCatalog::new()),
                "{case:?}"
            );
        }
    }

    #[test]
    fn straight_line_cel_is_costed_alike_by_both_algorithms() {
        for s in [
            "self.s.startsWith('all') && size(self.l) < 3",
            "self.a[0].b == 'x' // map(",
            "'exists' in self.l",
        ] {
            assert!(!algorithm_dependent(&CelText::of(s)), "{s}");
        }
        for s in [
            "self.l.all(x, x != '')",
            "cel.bind(n, self.s, n + n)",
            "variables.v > 1",
            "dyn(self.s).size() > 0",
            "self.?s.orValue('') != ''",
            "[self.a, self.b] [0].size() > 0",
            "{'a': self.s}['a'] == 'x'",
            "'unterminated",
        ] {
            assert!(algorithm_dependent(&CelText::of(s)), "{s}");
        }
    }

    #[test]
    fn calls_are_words_before_a_parenthesis() {
        assert_eq!(
            calls("self.duration == duration('1s') && lists.range (3).size() > 0"),
            ["duration", "range", "size"]
        );
        // Comments and line breaks between the name and its arguments.
        assert_eq!(
            calls("x.isIP // an address\n  (y) && self.format"),
            ["isIP"]
        );
        // In a literal: no call.
        assert_eq!(calls("self.a == 'duration(1)'"), Vec::<String>::new());
        // Unreadable literals: every word may be a call.
        assert_eq!(calls("self.duration + 'open"), ["duration", "open", "self"]);
    }

    #[test]
    fn literals_and_comments_name_nothing() {
        assert_eq!(
            tokens(r#"self.a + 'in range' + "x.url()" // comment's words"#),
            ["a", "self"]
        );
        assert_eq!(tokens(r#"b'sortBy' == r"\d" && c"#), ["b", "c", "r"]);
        // An escaped quote does not end a literal; in a raw one, a backslash escapes nothing.
        assert_eq!(tokens(r#"'it\'s format' + x"#), ["x"]);
        assert_eq!(tokens(r#"r'\' + format(x)"#), ["format", "r", "x"]);
        assert_eq!(
            tokens("'''multi\nline ' quote''' + \"\"\"also \" here\"\"\".size()"),
            ["size"]
        );
        assert_eq!(tokens("'naïve' + é"), ["é"]);
    }

    #[test]
    fn operators_are_told_by_their_marks() {
        let called = |text: &str| {
            let (mut o, _) = operators_called(&CelText::of(text));
            o.sort_unstable();
            o
        };
        // Over-approximated: a `>=` is a `>` too, a `-` both a negation and a subtraction.
        assert_eq!(called("-79.98 >= -501"), ["-_", "_-_", "_>=_", "_>_"]);
        assert_eq!(called("self.a < 1 ? 'x' : 'y'"), ["_<_", "_?_:_"]);
        assert_eq!(called("'a' in self.b && !self.c"), ["!_", "@in", "_&&_"]);
        assert_eq!(called("self.a[0] == '>= <'"), ["_==_", "_[_]"]);
        assert!(called("self.index").is_empty());
        // Macros expand to operators the text does not show; unreadable literals may hide any.
        assert_eq!(
            called("self.all(x, x > 1)"),
            [
                "!_",
                "@not_strictly_false",
                "_&&_",
                "_+_",
                "_==_",
                "_>_",
                "_?_:_",
                "_||_"
            ]
        );
        assert!(operators_called(&CelText::of("self.map(x, x)")).1);
        assert!(!operators_called(&CelText::of("self.a + 1")).1);
        assert_eq!(called("self.a == 'b").len(), OPERATORS.len());
    }

    #[test]
    fn operators_that_differ_by_guarded_overloads_only() {
        let decls = |minor: u32| {
            let m = Minor::of(Version::new(1, minor)).expect("a known minor");
            Declarations::for_minor(m, true)
        };
        let (a, b) = (decls(28), decls(29));
        let guards = |f: &str| guards_between(a.functions.get(f), b.functions.get(f));
        // 1.29's new expressions compare numbers across types and index optional values.
        for f in ["_<_", "_<=_", "_>_", "_>=_"] {
            assert_eq!(guards(f), Some(consulted::CROSS_NUMERIC_OVERLOADS), "{f}");
        }
        assert_eq!(guards("_[_]"), Some(consulted::OPTIONAL_ARGUMENT_OVERLOADS));
        // An overload of another shape (optional indexing's list form) has no guard.
        assert_eq!(guards("_[?_]"), None);
        assert_eq!(guards("_+_"), Some(0));
    }

    #[test]
    fn optional_syntax_is_told_from_the_conditional() {
        // (text, whether it may use the optional syntax)
        for (text, optional) in [
            ("self.?a.orValue(1) > 0", true),
            ("self.a[?0].hasValue()", true),
            ("[?self.a, 1].size() > 0", true),
            ("{?'k': self.a}.size() > 0", true),
            ("{'j': 1, ?'k': self.a}.size() > 0", true),
            ("self. // none\n  ?a == 1", true),
            ("self.a ? self.b : self.c", false),
            ("(self.a) ? 1 : 2", false),
            ("[self.a ? 1 : 2]", false),
            ("self.a == '.?x' // [?y", false),
            ("self.a > 0", false),
        ] {
            assert_eq!(optional_syntax(&CelText::of(text)), optional, "{text}");
        }
        // Unreadable literals: a `?` anywhere may be one.
        assert!(optional_syntax(&CelText::of("self.a ? 'b : c")));
    }

    #[test]
    fn global_calls_are_told_from_receiver_calls() {
        // (text, whether it calls the global `matches`)
        for (text, global) in [
            ("matches(self, '^a$')", true),
            ("!matches (self.x, 'b')", true),
            ("self.a.all(x, matches(x, 'c'))", true),
            ("self.matches('^a$')", false),
            ("self . matches('^a$')", false),
            ("self.x == 'matches(y)'", false),
            ("self.rematches == 1", false),
            // Unreadable literals: assumed.
            ("'open matches(x", true),
        ] {
            assert_eq!(
                calls_global(&CelText::of(text), "matches"),
                global,
                "{text:?}"
            );
        }
    }

    #[test]
    fn unreadable_literals_give_every_word() {
        // Unterminated, a line break in a one-line literal, an unknown prefix, a dangling escape.
        for s in ["x + 'open url", "'a\nb' + url", "url'x' + y", "'\\"] {
            assert_eq!(
                tokens(s),
                {
                    let mut all: Vec<String> = s
                        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .filter(|w| !w.is_empty())
                        .map(str::to_string)
                        .collect();
                    all.sort();
                    all
                },
                "{s:?}"
            );
        }
    }
}
