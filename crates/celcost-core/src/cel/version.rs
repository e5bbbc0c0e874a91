//! A Kubernetes minor version, below both the declarations (`decls`) and the minors' rules
//! (`minor`), which name it.

/// A Kubernetes minor version (`1.NN`), used for library availability and cost-rule gates.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
}

impl Version {
    pub const fn new(major: u32, minor: u32) -> Self {
        Version { major, minor }
    }

    pub fn parse(s: &str) -> Option<Version> {
        let s = s.trim().trim_start_matches('v');
        let mut it = s.split('.');
        let major = it.next()?.parse().ok()?;
        let minor = it.next()?.parse().ok()?;
        Some(Version { major, minor })
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Which of a minor's rules the current estimate consulted, on this thread, a bit each: its
/// error-wording rules (`crd::fielderr::wording`, bit = index), whether some parse depended on
/// the parser options ([`PARSER_OPTIONS`]), whether some cost may differ under cel-go's other
/// cost estimator ([`COST_ALGORITHM`]), the cost rules cel-go v0.29 changed
/// ([`GLOBAL_MATCHES`], [`AFFIX_RUNTIME_COST`]), and the other rules of a minor an estimate
/// reads where they decide something ([`KUBERNETES_TYPE_EQUALITY`] … [`HOMOGENEOUS_LITERALS`]);
/// beside them, the library sections its compiles resolved a name in ([`note_libraries`]). A
/// report depends on those rules only, as far as they go: a range shares it between minors that
/// agree on the ones it consulted, and names what changed a number between two minors
/// (`estimate::causes`) among the ones the number's estimate consulted.
pub mod consulted {
    use std::cell::Cell;

    /// Some CEL text of the estimate parses differently with other parser options (a gated
    /// macro, a quoted name).
    pub const PARSER_OPTIONS: u64 = 1 << 30;
    /// Some cost of the estimate may differ under the other cost algorithm
    /// ([`crate::cel::cost::CostAlgorithm`]).
    pub const COST_ALGORITHM: u64 = 1 << 31;
    /// Some cost of a global `matches(s, re)` was made ([`super::super::minor::Minor::global_matches_cost`]).
    pub const GLOBAL_MATCHES: u64 = 1 << 29;
    /// Some runtime cost of `s.startsWith(p)` / `s.endsWith(p)` was counted
    /// ([`super::super::minor::Minor::affix_runtime_cost_by_argument`]).
    pub const AFFIX_RUNTIME_COST: u64 = 1 << 28;
    /// The rules the estimate tells of as it goes, beside the wording rules.
    pub const ESTIMATE_RULES: u64 =
        PARSER_OPTIONS | COST_ALGORITHM | GLOBAL_MATCHES | AFFIX_RUNTIME_COST | COST_FACTOR_CLAMP;

    // What the estimate notes of the other rules of a minor, where they decide something: told
    // only to name what changed a number (`estimate::causes`); a range's sharing reads them not.
    /// `_==_` costed on a Kubernetes type ([`super::super::minor::Minor::kubernetes_type_equality`]).
    pub const KUBERNETES_TYPE_EQUALITY: u64 = 1 << 27;
    /// A cost read the result size of `url(s)` ([`super::super::minor::Minor::url_result_size`]).
    pub const URL_RESULT_SIZE: u64 = 1 << 26;
    /// A cost read the size of an `x-kubernetes-int-or-string` node with `maxLength`
    /// ([`super::super::minor::Minor::int_or_string_max_length`]).
    pub const INT_OR_STRING_MAX_LENGTH: u64 = 1 << 25;
    /// A cost read the size of a resource root's `metadata.name` or `generateName`
    /// ([`super::super::minor::Minor::object_meta_name_max_length`]).
    pub const OBJECT_META_NAMES: u64 = 1 << 24;
    /// A rule was compiled against a resource root with `additionalProperties`
    /// ([`super::super::minor::Minor::type_meta_keeps_additional_properties`]).
    pub const TYPE_META_ADDITIONAL_PROPERTIES: u64 = 1 << 23;
    /// A field named by a CEL reserved word was found by its escaped name (compatibility 1.31).
    pub const KEYWORDS_AS_FIELD_NAMES: u64 = 1 << 22;
    /// The `'…'.format([…])` validator reported something
    /// ([`super::super::minor::Minor::format_string_validator`]).
    pub const FORMAT_STRING_VALIDATOR: u64 = 1 << 21;
    /// `optMap` / `optFlatMap` over a receiver with a fresh type parameter was type-checked as
    /// cel-go before v0.22 does it
    /// ([`super::super::minor::Minor::optional_macros_copy_their_receiver`]).
    pub const OPTIONAL_MACROS_SHARED_RECEIVER: u64 = 1 << 20;
    /// A checker message named the optional type
    /// ([`super::super::minor::Minor::optional_type_name`]).
    pub const OPTIONAL_TYPE_NAME: u64 = 1 << 19;
    /// On an update, a messageExpression was looked up among the stored object's expressions
    /// ([`super::super::minor::Minor::stored_message_expressions_by_rule`]).
    pub const STORED_MESSAGE_EXPRESSIONS: u64 = 1 << 18;
    /// The homogeneous-literal validator reported something (cel-go v0.17 exempts `format`'s
    /// list only through literals: [`super::super::minor::Minor::homogeneous_exemption_through_literals_only`]).
    pub const HOMOGENEOUS_LITERALS: u64 = 1 << 17;

    /// A cost read the size of a string node with `enum` and no `maxLength`
    /// ([`super::super::minor::Minor::enum_string_max_length`]).
    pub const ENUM_STRING_SIZES: u64 = 1 << 15;
    /// `quantity(s)` or `isQuantity(s)` was costed
    /// ([`super::super::minor::Minor::quantity_parse_cost`]).
    pub const QUANTITY_PARSE_COST: u64 = 1 << 14;
    /// A comprehension was costed by cel-go's estimator before v0.23
    /// ([`super::super::minor::Minor::comprehension_result_size`]).
    pub const COMPREHENSION_RESULT_SIZE: u64 = 1 << 13;
    /// A presence test `has(x.f)` was costed
    /// ([`super::super::minor::Minor::presence_test_cost`]).
    pub const PRESENCE_TEST_COST: u64 = 1 << 12;
    /// A cost factor's product reached 2^64
    /// ([`super::super::minor::Minor::cost_factor_clamped`]).
    pub const COST_FACTOR_CLAMP: u64 = 1 << 32;
    /// An undeclared member function or a logical operator was type-checked
    /// ([`super::super::minor::Minor::untyped_undeclared_member_calls`]).
    pub const UNTYPED_MEMBER_CALLS: u64 = 1 << 11;
    /// A rule with `optionalOldSelf` was compiled
    /// ([`super::super::minor::Minor::optional_old_self`]).
    pub const OPTIONAL_OLD_SELF: u64 = 1 << 33;
    /// An operator was resolved over two arguments that a cross-type numeric overload
    /// (`less_int64_double`, 1.29's new expressions on) could take: each `int`, `uint`,
    /// `double` or unknown (`dyn`, a type parameter, an error), not both of one concrete type.
    pub const CROSS_NUMERIC_OVERLOADS: u64 = 1 << 34;
    /// An operator was resolved whose first argument an overload on an optional value
    /// (`optional_list_index_int`) could take: optional, or unknown.
    pub const OPTIONAL_ARGUMENT_OVERLOADS: u64 = 1 << 35;

    /// The estimate costed something cel-go's two estimators cost by different paths: a
    /// comprehension, a local variable, a list or map literal with entries, `dyn`, an optional
    /// value, a policy variable. Where only [`COST_ALGORITHM`] is noted (every cost notes it
    /// unless a range found both agree), straight-line CEL costs alike under both.
    pub const ALGORITHM_PATHS: u64 = 1 << 16;

    thread_local! {
        /// The rule bits, and the library sections (bits by index, `cel::decls`).
        static CONSULTED: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    }

    /// Notes the rules of `bits`.
    pub fn note(bits: u64) {
        CONSULTED.with(|c| {
            let (r, l) = c.get();
            c.set((r | bits, l))
        });
    }

    /// Notes that a compile resolved a name in the library sections of `sections` (bits by
    /// section index, `cel::decls::section_names`).
    pub fn note_libraries(sections: u64) {
        CONSULTED.with(|c| {
            let (r, l) = c.get();
            c.set((r, l | sections))
        });
    }

    /// Whether the call under way has consulted a rule of `bits` (since the innermost
    /// [`tracking`] or [`holding_back`] began).
    pub fn noted(bits: u64) -> bool {
        CONSULTED.with(Cell::get).0 & bits != 0
    }

    /// Notes that wording rule `rule` decided some text.
    pub fn note_wording(rule: usize) {
        note(1 << rule);
    }

    /// Puts back what the enclosing call had consulted, beside what `keep` says of the inner
    /// call's (also when it unwinds: an estimate stopped by its work budget).
    struct Restore<K: Fn((u64, u64)) -> (u64, u64)> {
        outer: (u64, u64),
        keep: K,
    }
    impl<K: Fn((u64, u64)) -> (u64, u64)> Drop for Restore<K> {
        fn drop(&mut self) {
            CONSULTED.with(|c| {
                let (r, l) = (self.keep)(c.get());
                c.set((self.outer.0 | r, self.outer.1 | l))
            });
        }
    }

    /// `f`'s result and the rules it consulted. Nested calls see their own; the enclosing one
    /// sees theirs too.
    pub fn tracking<R>(f: impl FnOnce() -> R) -> (R, u64) {
        let (r, (rules, _)) = tracking_all(f);
        (r, rules)
    }

    /// [`tracking`], with the library sections `f`'s compiles resolved names in.
    pub fn tracking_all<R>(f: impl FnOnce() -> R) -> (R, (u64, u64)) {
        let _outer = Restore {
            outer: CONSULTED.with(|c| c.replace((0, 0))),
            keep: |inner| inner,
        };
        let r = f();
        (r, CONSULTED.with(Cell::get))
    }

    /// `f`'s result, what it consults not noted (comparing minors' rules decides no text).
    pub fn ignoring<R>(f: impl FnOnce() -> R) -> R {
        let _outer = Restore {
            outer: CONSULTED.with(Cell::get),
            keep: |_| (0, 0),
        };
        f()
    }

    /// `f`'s result and whether it consulted a rule of `bits`, which the enclosing call does not
    /// see noted (the caller notes them, or not, once it knows more); the others it does.
    pub fn holding_back<R>(bits: u64, f: impl FnOnce() -> R) -> (R, bool) {
        let _outer = Restore {
            outer: CONSULTED.with(|c| c.replace((0, 0))),
            keep: move |(r, l)| (r & !bits, l),
        };
        let r = f();
        (r, CONSULTED.with(Cell::get).0 & bits != 0)
    }
}
