//! Why a minor moved a number: every rule in which two minors differ ([`between`]), with the
//! upstream change behind it and a reference, and which of them a number's estimate consulted
//! ([`Difference::consulted_by`]).
//!
//! The rules are the data of [`crate::cel::minor`] (each field of [`Minor`], destructured so that a
//! new field cannot be added without saying what it changes and why), the library sections of
//! the `.decl` files (what a minor's environments have, [`crate::cel::decls::section_present`]), the
//! parser options a minor's environments parse with, and the error-wording rules of
//! `crd::fielderr`. Which of them a rule's, a messageExpression's or a policy expression's
//! estimate read is told by the estimator as it goes ([`crate::cel::version::consulted`]: a bit per
//! rule where it decides something, and the library sections a compile resolved a name in):
//! a cause is never found by reading the CEL text.

use crate::cel::decls::{section_functions, section_names, section_present};
use crate::cel::minor::{CostAlgorithm, Distribution, Minor};
use crate::cel::parse::ParserOptions;
use crate::cel::version::{Version, consulted};

/// What of a number a difference between two minors can move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aspect {
    /// Whether (and with which error) an expression compiles.
    Compile,
    /// The cost of an expression that compiles on both.
    Cost,
    /// The object's errors beyond its expressions' costs and compile errors (rules on
    /// defaults, field errors).
    Errors,
}

/// One rule in which two minors differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// What the newer of the two does (or the second, for two minors in any order).
    pub change: String,
    /// Where upstream made the change: a pull request (`cel-expr/cel-go#1350`), a commit, or
    /// the file and version it was read from.
    pub reference: String,
    /// What it can move.
    pub aspects: &'static [Aspect],
    /// The consulted bits that say an estimate read it (any of them).
    bits: u64,
    /// The library sections that say it (any of them), bits by section index.
    libraries: u64,
}

impl Difference {
    fn rule(
        change: impl Into<String>,
        reference: &str,
        aspects: &'static [Aspect],
        bits: u64,
    ) -> Self {
        Difference {
            change: change.into(),
            reference: reference.to_string(),
            aspects,
            bits,
            libraries: 0,
        }
    }

    /// Whether an estimate that consulted `rules` (bits of [`consulted`]) and resolved names in
    /// the library sections `libraries` read this difference.
    pub fn consulted_by(&self, rules: u64, libraries: u64) -> bool {
        rules & self.bits != 0 || libraries & self.libraries != 0
    }

    /// Whether it can move `aspect`.
    pub fn moves(&self, aspect: Aspect) -> bool {
        self.aspects.contains(&aspect)
    }
}

const COMPILE: &[Aspect] = &[Aspect::Compile];
const COST: &[Aspect] = &[Aspect::Cost];
const COMPILE_AND_COST: &[Aspect] = &[Aspect::Compile, Aspect::Cost];
const ERRORS: &[Aspect] = &[Aspect::Errors];

/// Every rule in which minors `a` and `b` (of one distribution) differ, with what `b` does.
pub fn between(a: &Minor, b: &Minor) -> Vec<Difference> {
    use Difference as D;
    let mut out = Vec::new();
    // Every field, so that a new one cannot be added without deciding here what it changes.
    let Minor {
        // Names of the minor, and where its rules were read: no rule of their own.
        kubernetes: _,
        distribution,
        checked_against: _,
        // Read through its derived rule below (`homogeneous_exemption_through_literals_only`);
        // what else a cel-go version changes is in the other fields.
        cel_go,
        // Read through the libraries, parser options, field-name escaping and validators of
        // new expressions below.
        compatibility,
        // Read through the libraries below.
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
        optional_type_name,
        global_matches_cost,
        affix_runtime_cost_by_argument,
        object_meta_name_max_length,
        // Read through the parser options below.
        ident_escape_syntax: _,
        stored_message_expressions_by_rule,
    } = *b;
    if a.cost_algorithm != cost_algorithm {
        out.push(D::rule(
            match cost_algorithm {
                CostAlgorithm::ScopedLocals => format!(
                    "cel-go {cel_go} estimates costs with scoped local variables: comprehensions, \
                     cel.bind and literals carry sizes, a comprehension's result is sized only \
                     from its accumulator"
                ),
                CostAlgorithm::IterRanges => {
                    format!("cel-go {cel_go} estimates costs by iteration ranges (before v0.23)")
                }
            },
            "cel-expr/cel-go#1104",
            COST,
            consulted::ALGORITHM_PATHS,
        ));
    }
    if a.comprehension_result_size != comprehension_result_size {
        out.push(D::rule(
            if comprehension_result_size {
                format!("cel-go {cel_go} gives a comprehension's result the size of its range")
            } else {
                format!(
                    "cel-go {cel_go} gives a comprehension's result no size: what is called on it is costed as over a list of unbounded size"
                )
            },
            "google/cel-go v0.17.8 checker/cost.go (costComprehension)",
            COST,
            consulted::COMPREHENSION_RESULT_SIZE,
        ));
    }
    if a.presence_test_cost != presence_test_cost {
        out.push(D::rule(
            format!("a presence test has(x.f) is estimated at {presence_test_cost} beside its operand"),
            "k8s.io/apiserver v0.29 pkg/cel/environment/base.go (checker.PresenceTestHasCost(false))",
            COST,
            consulted::PRESENCE_TEST_COST,
        ));
    }
    if a.cost_factor_clamped != cost_factor_clamped {
        out.push(D::rule(
            if cost_factor_clamped {
                format!("cel-go {cel_go} clamps a cost factor's product of 2^64 or more at 2^64 - 1")
            } else {
                format!("cel-go {cel_go} converts a cost factor's product of 2^64 or more unchecked (2^63 on amd64)")
            },
            "google/cel-go v0.17 checker/cost.go (multiplyByCostFactor, doubleTwoTo64)",
            COST,
            consulted::COST_FACTOR_CLAMP,
        ));
    }
    if a.untyped_undeclared_member_calls != untyped_undeclared_member_calls {
        out.push(D::rule(
            if untyped_undeclared_member_calls {
                format!("cel-go {cel_go}'s checker leaves a call of an undeclared member function untyped, so the calls around it fail too, and checks && and || as any overload")
            } else {
                format!("cel-go {cel_go}'s checker gives a call of an undeclared member function the error type, which the calls around it take")
            },
            "google/cel-go v0.17 checker/checker.go (checkCall)",
            COMPILE,
            consulted::UNTYPED_MEMBER_CALLS,
        ));
    }
    if a.optional_old_self != optional_old_self {
        out.push(D::rule(
            if optional_old_self {
                "a rule's optionalOldSelf makes oldSelf optional (CRDValidationRatcheting on by default)"
            } else {
                "a rule's optionalOldSelf is dropped on create (CRDValidationRatcheting off, or no such field)"
            },
            "kubernetes/enhancements#4008 (KEP-4008: CRD validation ratcheting, beta in 1.30)",
            COMPILE_AND_COST,
            consulted::OPTIONAL_OLD_SELF,
        ));
    }
    if a.global_matches_cost != global_matches_cost {
        out.push(D::rule(
            if global_matches_cost {
                format!(
                    "cel-go {cel_go} estimates the global matches(string, string) like the receiver form"
                )
            } else {
                "the global matches(string, string) costs 1 plus its arguments".to_string()
            },
            "cel-expr/cel-go#1350",
            COST,
            consulted::GLOBAL_MATCHES,
        ));
    }
    if a.affix_runtime_cost_by_argument != affix_runtime_cost_by_argument {
        out.push(D::rule(
            format!(
                "cel-go {cel_go} counts the runtime cost of startsWith and endsWith by the size of \
                 {} (rules evaluated on defaults)",
                if affix_runtime_cost_by_argument {
                    "the argument"
                } else {
                    "the receiver"
                }
            ),
            "cel-expr/cel-go#1351",
            ERRORS,
            consulted::AFFIX_RUNTIME_COST,
        ));
    }
    if a.kubernetes_type_equality != kubernetes_type_equality {
        out.push(D::rule(
            if kubernetes_type_equality {
                "== on Kubernetes types (quantity, ip, cidr, semver, format, authorizer: 1; url: by size) is costed by the type, not by the size of its operands"
            } else {
                "== on Kubernetes types is costed by the size of its operands"
            },
            "kubernetes/kubernetes#126359",
            COST,
            consulted::KUBERNETES_TYPE_EQUALITY,
        ));
    }
    if a.url_result_size != url_result_size {
        out.push(D::rule(
            if url_result_size {
                "url(s) has the size of s as its result size"
            } else {
                "url(s) has no result size"
            },
            "kubernetes/kubernetes#126359 (pkg/cel/library/cost.go)",
            COST,
            consulted::URL_RESULT_SIZE,
        ));
    }
    if a.quantity_parse_cost != quantity_parse_cost {
        out.push(D::rule(
            if quantity_parse_cost {
                "quantity(s) and isQuantity(s) are costed by the size of s"
            } else {
                "quantity(s) and isQuantity(s) cost 1, like any call"
            },
            "k8s.io/apiserver v0.30 pkg/cel/library/cost.go (quantity, isQuantity)",
            COST,
            consulted::QUANTITY_PARSE_COST,
        ));
    }
    if a.int_or_string_max_length != int_or_string_max_length {
        out.push(D::rule(
            if int_or_string_max_length {
                "an x-kubernetes-int-or-string value is sized by its maxLength (4 bytes a character), not by the request size"
            } else {
                "an x-kubernetes-int-or-string value is sized by the request size, whatever its maxLength"
            },
            match distribution {
                Distribution::OpenShift => "openshift/kubernetes#2375 (kubernetes/kubernetes#132837)",
                Distribution::Kubernetes => "kubernetes/kubernetes#132837",
            },
            COST,
            consulted::INT_OR_STRING_MAX_LENGTH,
        ));
    }
    if a.enum_string_max_length != enum_string_max_length {
        out.push(D::rule(
            if enum_string_max_length {
                "a string with an enum and no maxLength is sized by its longest value, not by the request size"
            } else {
                "a string with an enum and no maxLength is sized by the request size"
            },
            "k8s.io/apiserver v0.29 pkg/cel/common/schemas.go (estimateMaxStringEnumLength)",
            COST,
            consulted::ENUM_STRING_SIZES,
        ));
    }
    if a.object_meta_name_max_length != object_meta_name_max_length {
        out.push(D::rule(
            if object_meta_name_max_length {
                "a CRD's rules see metadata.name bounded by maxLength 253 and generateName by 252 (or the schema's smaller maxLength)"
            } else {
                "a CRD's rules see metadata.name and generateName unbounded"
            },
            "kubernetes/apiextensions-apiserver@1f3023483",
            COST,
            consulted::OBJECT_META_NAMES,
        ));
    }
    if a.type_meta_keeps_additional_properties != type_meta_keeps_additional_properties {
        out.push(D::rule(
            if type_meta_keeps_additional_properties {
                "a resource root keeps its additionalProperties in the type its rules are compiled against (WithTypeAndObjectMeta)"
            } else {
                "a resource root loses its additionalProperties in the type its rules are compiled against (WithTypeAndObjectMeta)"
            },
            "k8s.io/apiextensions-apiserver v0.31 pkg/apiserver/schema/cel/model/schemas.go",
            COMPILE_AND_COST,
            consulted::TYPE_META_ADDITIONAL_PROPERTIES,
        ));
    }
    if a.format_string_validator != format_string_validator {
        out.push(D::rule(
            if format_string_validator {
                format!("cel-go {cel_go}'s strings extension checks '…'.format([…]) calls when an expression is compiled")
            } else {
                "'…'.format([…]) calls are not checked when an expression is compiled".to_string()
            },
            "google/cel-go v0.20.0 ext/strings.go (stringFormatValidator)",
            COMPILE,
            consulted::FORMAT_STRING_VALIDATOR,
        ));
    }
    if a.optional_macros_copy_their_receiver != optional_macros_copy_their_receiver {
        out.push(D::rule(
            if optional_macros_copy_their_receiver {
                format!("cel-go {cel_go}'s optMap and optFlatMap copy their receiver, so one typed with a fresh type parameter type-checks")
            } else {
                "optMap and optFlatMap type-check their receiver twice (incompatible type already exists)".to_string()
            },
            "google/cel-go v0.22.0 cel/library.go (optMap, optFlatMap)",
            COMPILE,
            consulted::OPTIONAL_MACROS_SHARED_RECEIVER,
        ));
    }
    if a.optional_type_name != optional_type_name {
        out.push(D::rule(
            format!(
                "cel-go {cel_go} names the optional type {optional_type_name}(…) in its messages"
            ),
            "google/cel-go v0.20.0 common/types/optional.go",
            COMPILE,
            consulted::OPTIONAL_TYPE_NAME,
        ));
    }
    if a.homogeneous_exemption_through_literals_only()
        != b.homogeneous_exemption_through_literals_only()
    {
        out.push(D::rule(
            if b.homogeneous_exemption_through_literals_only() {
                format!("cel-go {cel_go}'s homogeneous-literal validator exempts format's list only where it is a literal")
            } else {
                format!("cel-go {cel_go}'s homogeneous-literal validator exempts format's list wherever it is built")
            },
            "google/cel-go v0.20.0 cel/validator.go (homogeneousAggregateLiteralValidator)",
            COMPILE,
            consulted::HOMOGENEOUS_LITERALS,
        ));
    }
    if a.stored_message_expressions_by_rule != stored_message_expressions_by_rule {
        out.push(D::rule(
            if stored_message_expressions_by_rule {
                "an update compiles a messageExpression as a stored one when the stored object has its text as a rule"
            } else {
                "an update compiles a messageExpression as a stored one when the stored object has it as a messageExpression (before: as a rule)"
            },
            "kubernetes/apiextensions-apiserver@5d129eee2",
            COMPILE,
            consulted::STORED_MESSAGE_EXPRESSIONS,
        ));
    }
    // Compatibility: what new expressions may use.
    let keywords = crate::schema::decltype::keywords_as_field_names;
    if keywords(a.compatibility) != keywords(compatibility) {
        out.push(D::rule(
            if keywords(compatibility) {
                "new expressions find a field named by a CEL reserved word (namespace, …) by its escaped name"
            } else {
                "new expressions do not find a field named by a CEL reserved word"
            },
            "k8s.io/apiserver v0.31 pkg/cel/common/schemas.go (escaped reserved words, compatibility 1.31)",
            COMPILE,
            consulted::KEYWORDS_AS_FIELD_NAMES,
        ));
    }
    let validators = |c: Version| c >= Version::new(1, 29);
    if validators(a.compatibility) != validators(compatibility) {
        out.push(D::rule(
            "new expressions are checked by the AST validators Kubernetes adds at 1.29 (homogeneous literals, format strings, literal regexes)",
            "k8s.io/apiserver v0.29 pkg/cel/environment/base.go",
            COMPILE,
            consulted::HOMOGENEOUS_LITERALS | consulted::FORMAT_STRING_VALIDATOR,
        ));
    }
    parser_differences(a, b, &mut out);
    library_differences(a, b, &mut out);
    wording_differences(a.kubernetes, b.kubernetes, &mut out);
    out
}

/// The parser options of `a`'s and `b`'s environments (new expressions', stored ones').
fn parser_differences(a: &Minor, b: &Minor, out: &mut Vec<Difference>) {
    let options = |m: &Minor| {
        [
            ParserOptions::for_minor(m, m.compatibility),
            ParserOptions::for_minor(m, m.kubernetes),
        ]
    };
    let (pa, pb) = (options(a), options(b));
    let ParserOptions {
        optional_syntax: _,
        two_var_comprehensions: _,
        lists_sort_by: _,
        ident_escape_syntax: _,
    } = pb[0];
    type Option_ = (
        fn(&ParserOptions) -> bool,
        &'static str,
        &'static str,
        &'static str,
    );
    let all: [Option_; 4] = [
        (
            |o| o.optional_syntax,
            "the optional syntax (?. [? {?: …})",
            "k8s.io/apiserver v0.28 pkg/cel/environment/base.go (cel.OptionalTypes)",
            "",
        ),
        (
            |o| o.two_var_comprehensions,
            "the two-variable comprehensions (all, exists, existsOne with two variables, transformList, transformMap, transformMapEntry)",
            "k8s.io/apiserver v0.32 pkg/cel/environment/base.go (ext.TwoVarComprehensions)",
            "cel.lib.ext.comprev2",
        ),
        (
            |o| o.lists_sort_by,
            "sortBy (the lists extension)",
            "k8s.io/apiserver v0.34 pkg/cel/environment/base.go (ext.Lists)",
            "",
        ),
        (
            |o| o.ident_escape_syntax,
            "backtick-quoted field names (self.`a-b`)",
            "cel-expr/cel-go#1295",
            "",
        ),
    ];
    for (get, what, reference, _) in all {
        let (new_a, new_b) = (get(&pa[0]), get(&pb[0]));
        let (stored_a, stored_b) = (get(&pa[1]), get(&pb[1]));
        if new_a == new_b && stored_a == stored_b {
            continue;
        }
        let change = match (new_a != new_b, new_b, stored_b) {
            (true, true, _) => format!("new expressions may use {what}"),
            (true, false, _) => format!("new expressions may no longer use {what}"),
            (false, _, true) => {
                format!("stored expressions (rules on defaults, updates) may use {what}")
            }
            (false, _, false) => format!("stored expressions may no longer use {what}"),
        };
        out.push(Difference::rule(
            change,
            reference,
            COMPILE,
            consulted::PARSER_OPTIONS,
        ));
    }
}

/// Where upstream added or removed a library section, for those whose reference is not the
/// `base.go` entry that adds it.
fn library_reference(section: &str) -> &'static str {
    match section {
        "stdlib.intToDuration" => "cel-expr/cel-go#1300",
        "kubernetes.lists.v1" => "kubernetes/apiserver@443aab145",
        "cel.lib.optional.v2" => {
            "google/cel-go v0.23.0 cel/library.go (optional library version 2)"
        }
        "cel.lib.ext.comprev2" => {
            "k8s.io/apiserver v0.32 pkg/cel/environment/base.go (ext.TwoVarComprehensions)"
        }
        "kubernetes.net.ip" | "kubernetes.net.cidr" | "kubernetes.format" => {
            "k8s.io/apiserver pkg/cel/environment/base.go (IntroducedVersion of the library)"
        }
        _ => "k8s.io/apiserver pkg/cel/environment/base.go (IntroducedVersion of the library)",
    }
}

/// The library sections `a`'s and `b`'s environments have differently.
fn library_differences(a: &Minor, b: &Minor, out: &mut Vec<Difference>) {
    for (i, name) in section_names().into_iter().enumerate() {
        let new = |m: &Minor| section_present(m, i, m.compatibility, true);
        let stored = |m: &Minor| section_present(m, i, m.kubernetes, true);
        if new(a) == new(b) && stored(a) == stored(b) {
            continue;
        }
        let functions = section_functions(i);
        let shown: Vec<&str> = functions.iter().take(4).copied().collect();
        let what = format!(
            "{name} ({}{})",
            shown.join(", "),
            if functions.len() > shown.len() {
                ", …"
            } else {
                ""
            }
        );
        let change = match (new(a) != new(b), new(b), stored(b)) {
            (true, true, _) => format!("new expressions may use {what}"),
            (true, false, true) => format!("new expressions may no longer use {what}"),
            (true, false, false) => format!("{what} is gone"),
            (false, _, true) => {
                format!("stored expressions (rules on defaults, updates) may use {what}")
            }
            (false, _, false) => format!("stored expressions may no longer use {what}"),
        };
        out.push(Difference {
            change,
            reference: library_reference(name).to_string(),
            aspects: COMPILE,
            bits: 0,
            libraries: 1 << i,
        });
    }
}

/// The error-wording rules of `crd::fielderr` that `a` and `b` apply differently.
fn wording_differences(a: Version, b: Version, out: &mut Vec<Difference>) {
    let (wa, wb) = (
        crate::crd::fielderr::wording(a),
        crate::crd::fielderr::wording(b),
    );
    // (index in `wording`, what the newer minor says, reference, what it moves); the optional
    // type's name is the Minor field above.
    let rules: [(usize, &str, &str, &'static [Aspect]); 10] = [
        (
            0,
            "a stored version removed from spec.versions is explained",
            "kubernetes/apiextensions-apiserver@567b50c9c",
            ERRORS,
        ),
        (
            1,
            "a too-long name part is said in bytes",
            "k8s.io/apimachinery v0.35 pkg/api/validate/content",
            ERRORS,
        ),
        (
            2,
            "a bad value that is not a string, number or boolean is shown as JSON",
            "kubernetes/kubernetes#132314",
            ERRORS,
        ),
        (
            3,
            "an error's detail no longer repeats its field",
            "kubernetes/kubernetes#132513",
            ERRORS,
        ),
        (
            4,
            "field.TooLong and field.TooMany say 1 byte, 1 item",
            "k8s.io/apimachinery v0.34 pkg/util/validation/field/errors.go",
            ERRORS,
        ),
        (
            5,
            "field.TooLong says may not be more than N bytes",
            "k8s.io/apimachinery v0.32 pkg/util/validation/field/errors.go",
            ERRORS,
        ),
        (
            6,
            "a policy expression of the wrong output type is told what it evaluates to",
            "k8s.io/apiserver v0.32 pkg/admission/plugin/cel/compile.go",
            COMPILE,
        ),
        (
            7,
            "a rule that fails on a default shows the value, not the schema type",
            "k8s.io/apiextensions-apiserver v0.35 pkg/apiserver/schema/cel/validation.go",
            ERRORS,
        ),
        (
            9,
            "an error that shows a CRD version shows its SelectableFields, and a rule its OptionalOldSelf as set",
            "k8s.io/apiextensions-apiserver v0.30 pkg/apis/apiextensions/types.go",
            ERRORS,
        ),
        (
            10,
            "an error that shows a validation rule shows its OptionalOldSelf field",
            "k8s.io/apiextensions-apiserver v0.29 pkg/apis/apiextensions/types.go",
            ERRORS,
        ),
    ];
    for (i, change, reference, aspects) in rules {
        if wa[i] != wb[i] {
            out.push(Difference::rule(change, reference, aspects, 1 << i));
        }
    }
}

/// What `a` and `b` make of a MutatingAdmissionPolicy of `api_version`, where they serve it
/// differently (by default, off by default, not at all): the difference, if any.
pub fn map_serving(api_version: &str, a: &Minor, b: &Minor) -> Option<Difference> {
    use crate::vap::{MapApiVersion, map_api_version};
    let (sa, sb) = (
        map_api_version(api_version, a.kubernetes),
        map_api_version(api_version, b.kubernetes),
    );
    if sa == sb {
        return None;
    }
    let version = api_version
        .strip_prefix("admissionregistration.k8s.io/")
        .unwrap_or(api_version);
    let change = match sb {
        MapApiVersion::Served => format!("MutatingAdmissionPolicy {version} is served by default"),
        MapApiVersion::OffByDefault(_) => {
            format!("MutatingAdmissionPolicy {version} is served only where the cluster enables it")
        }
        MapApiVersion::NotServed(_) => format!("MutatingAdmissionPolicy {version} is not served"),
    };
    Some(Difference::rule(
        change,
        "kubernetes/enhancements#3962 (KEP-3962: MutatingAdmissionPolicy v1alpha1 1.32, v1beta1 1.34, v1 1.36)",
        ERRORS,
        0,
    ))
}

/// Where `a` and `b` serve a ValidatingAdmissionPolicy of `api_version` differently (`v1` from
/// 1.30): the difference, if any.
pub fn vap_serving(api_version: &str, a: &Minor, b: &Minor) -> Option<Difference> {
    use crate::vap::vap_not_served;
    let (na, nb) = (
        vap_not_served(api_version, a.kubernetes),
        vap_not_served(api_version, b.kubernetes),
    );
    if na.is_some() == nb.is_some() {
        return None;
    }
    Some(Difference::rule(
        if nb.is_none() {
            "ValidatingAdmissionPolicy admissionregistration.k8s.io/v1 is served"
        } else {
            "ValidatingAdmissionPolicy admissionregistration.k8s.io/v1 is not served"
        },
        "kubernetes/enhancements#3488 (KEP-3488: ValidatingAdmissionPolicy v1 in 1.30)",
        ERRORS,
        0,
    ))
}

/// The differences between `a` and `b` that an estimate which consulted `rules` and
/// `libraries` read, among those that move `aspect`.
pub fn consulted_between(
    a: &Minor,
    b: &Minor,
    aspect: Aspect,
    rules: u64,
    libraries: u64,
) -> Vec<Difference> {
    let mut out: Vec<Difference> = Vec::new();
    for d in between(a, b) {
        if d.moves(aspect)
            && d.consulted_by(rules, libraries)
            && !out
                .iter()
                .any(|o| o.change == d.change && o.reference == d.reference)
        {
            out.push(d);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::minor::{KUBERNETES, OPENSHIFT};

    #[test]
    fn every_difference_of_consecutive_minors_is_named_referenced_and_told() {
        for t in [&KUBERNETES, &OPENSHIFT] {
            for w in t.windows(2) {
                // (1.35 → 1.36 differ only in a compatibility version that changes nothing.)
                let d = between(&w[0], &w[1]);
                for x in &d {
                    assert!(!x.change.is_empty() && !x.reference.is_empty(), "{x:?}");
                    assert!(x.bits != 0 || x.libraries != 0, "{x:?} is told by nothing");
                }
            }
            for m in t.iter() {
                assert!(between(m, m).is_empty(), "{}", m.label());
            }
        }
    }

    #[test]
    fn the_1_37_differences() {
        let (a, b) = (
            Minor::of(Version::new(1, 36)).unwrap(),
            Minor::of(Version::new(1, 37)).unwrap(),
        );
        let d = consulted_between(a, b, Aspect::Cost, consulted::GLOBAL_MATCHES, 0);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].reference, "cel-expr/cel-go#1350");
        assert_eq!(
            d[0].change,
            "cel-go v0.29.2 estimates the global matches(string, string) like the receiver form"
        );
        // Not a compile difference; nothing where it was not consulted.
        assert!(consulted_between(a, b, Aspect::Compile, consulted::GLOBAL_MATCHES, 0).is_empty());
        assert!(consulted_between(a, b, Aspect::Cost, consulted::COST_ALGORITHM, 0).is_empty());
    }

    const SEMVER_AT_1_36: &[(&str, Version)] = &[("kubernetes.Semver", Version::new(1, 36))];

    #[test]
    fn every_field_of_a_minor_is_a_difference_when_it_alone_differs() {
        // One minor, each field flipped alone: each must be told, by some bit.
        let base = *Minor::of(Version::new(1, 36)).unwrap();
        let flipped: Vec<(&str, Minor)> = vec![
            (
                "cost_algorithm",
                Minor {
                    cost_algorithm: CostAlgorithm::IterRanges,
                    ..base
                },
            ),
            (
                "format_string_validator",
                Minor {
                    format_string_validator: false,
                    ..base
                },
            ),
            (
                "optional_macros",
                Minor {
                    optional_macros_copy_their_receiver: false,
                    ..base
                },
            ),
            (
                "kubernetes_type_equality",
                Minor {
                    kubernetes_type_equality: false,
                    ..base
                },
            ),
            (
                "url_result_size",
                Minor {
                    url_result_size: false,
                    ..base
                },
            ),
            (
                "type_meta",
                Minor {
                    type_meta_keeps_additional_properties: false,
                    ..base
                },
            ),
            (
                "int_or_string",
                Minor {
                    int_or_string_max_length: false,
                    ..base
                },
            ),
            (
                "comprehension_result_size",
                Minor {
                    comprehension_result_size: false,
                    cost_algorithm: CostAlgorithm::IterRanges,
                    ..base
                },
            ),
            (
                "optional_old_self",
                Minor {
                    optional_old_self: false,
                    ..base
                },
            ),
            (
                "untyped_undeclared_member_calls",
                Minor {
                    untyped_undeclared_member_calls: true,
                    ..base
                },
            ),
            (
                "cost_factor_clamped",
                Minor {
                    cost_factor_clamped: false,
                    ..base
                },
            ),
            (
                "presence_test_cost",
                Minor {
                    presence_test_cost: 1,
                    ..base
                },
            ),
            (
                "quantity_parse_cost",
                Minor {
                    quantity_parse_cost: false,
                    ..base
                },
            ),
            (
                "enum_string",
                Minor {
                    enum_string_max_length: false,
                    ..base
                },
            ),
            (
                "optional_type_name",
                Minor {
                    optional_type_name: "optional",
                    ..base
                },
            ),
            (
                "global_matches",
                Minor {
                    global_matches_cost: true,
                    ..base
                },
            ),
            (
                "affix",
                Minor {
                    affix_runtime_cost_by_argument: true,
                    ..base
                },
            ),
            (
                "object_meta",
                Minor {
                    object_meta_name_max_length: true,
                    ..base
                },
            ),
            (
                "ident_escape",
                Minor {
                    ident_escape_syntax: true,
                    ..base
                },
            ),
            (
                "stored_message",
                Minor {
                    stored_message_expressions_by_rule: true,
                    ..base
                },
            ),
            (
                "cel_go",
                Minor {
                    cel_go: "v0.17.8",
                    ..base
                },
            ),
            (
                "compatibility",
                Minor {
                    compatibility: Version::new(1, 28),
                    ..base
                },
            ),
            (
                "missing_libraries",
                Minor {
                    missing_libraries: &["kubernetes.format"],
                    ..base
                },
            ),
            (
                "library_introduced",
                Minor {
                    library_introduced: SEMVER_AT_1_36,
                    ..base
                },
            ),
        ];
        for (field, m) in flipped {
            let d = between(&base, &m);
            assert!(!d.is_empty(), "{field}: no difference");
            assert!(
                d.iter().all(|x| x.bits != 0 || x.libraries != 0),
                "{field}: {d:?}"
            );
        }
    }
}
