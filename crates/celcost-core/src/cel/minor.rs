//! What each supported Kubernetes minor does differently, in one place.
//!
//! The estimator follows the code of one API server minor. Most of it is the same from 1.28 to
//! 1.36; what differs is kept here as data — one [`Minor`] per release, with named rules — and
//! read where the formula it changes is computed (the cost algorithm in `cost.rs`, Kubernetes
//! call costs in `k8s_cost.rs`, schema sizes in `schema/decltype.rs`, libraries in `decls.rs`,
//! compile-time validators in `env.rs`). A reader sees in the tables below what, say, 1.31 did
//! differently, and why.
//!
//! Two builds of each minor are described: upstream Kubernetes ([`Distribution::Kubernetes`],
//! the `k8s.io/apiserver` tags), and OpenShift's (`openshift/kubernetes`, as vendored by
//! openshift/microshift release-4.15 … release-4.22 and main), which carries a few CEL changes
//! ahead of upstream ([`OPENSHIFT`]). The public corpus's per-minor expected values were computed
//! with the OpenShift builds.

use super::version::Version;

/// Which cel-go `checker/cost.go` the API server links.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CostAlgorithm {
    /// cel-go v0.16.1 – v0.22.0 (Kubernetes 1.28 – 1.32). Iteration variables carry only a field
    /// path (`@items` for lists, `@keys` for maps, nothing for other range types), appended at
    /// every reference; they have no size of their own, so an element of a literal list is of
    /// unknown size. Every comprehension's result gets the range's size. List and map literals
    /// have no entry sizes, `cel.bind` is costed as any comprehension, `dyn(x)` as any call, and
    /// the nodes handed to Kubernetes carry only computed and literal sizes (no schema or scalar
    /// sizes: Kubernetes looks those up itself).
    IterRanges,
    /// cel-go v0.23.2 and later (Kubernetes 1.33+): local-variable scopes with sizes and entry
    /// sizes, binds costed as binds, `dyn(x)` transparent, comprehension result sizes only for
    /// literal accumulators, `@indices`/`@values` for two-variable comprehensions.
    ScopedLocals,
}

/// Whose build of a Kubernetes minor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Distribution {
    /// Upstream Kubernetes (k8s.io/apiserver and k8s.io/apiextensions-apiserver tags).
    #[default]
    Kubernetes,
    /// OpenShift's Kubernetes (openshift/kubernetes; OpenShift and MicroShift clusters).
    OpenShift,
}

impl Distribution {
    pub fn parse(s: &str) -> Result<Distribution, String> {
        match s.to_ascii_lowercase().as_str() {
            "kubernetes" | "upstream" | "k8s" => Ok(Distribution::Kubernetes),
            "openshift" | "microshift" | "okd" => Ok(Distribution::OpenShift),
            _ => Err(format!(
                "unknown distribution {s:?}: expected kubernetes or openshift"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Distribution::Kubernetes => "kubernetes",
            Distribution::OpenShift => "openshift",
        }
    }
}

/// One Kubernetes minor's behaviour, as far as estimates, compile results and errors go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Minor {
    pub kubernetes: Version,
    pub distribution: Distribution,
    /// The patch release whose code the rules were read from.
    pub checked_against: &'static str,
    /// cel-go version the minor links.
    pub cel_go: &'static str,
    /// `environment.DefaultCompatibilityVersion()`: the version whose libraries new expressions
    /// (every expression of a created object) may use. 1.30 hard-codes 1.29; later minors use the
    /// binary's minimum compatibility version, one minor lower.
    pub compatibility: Version,
    /// `IntroducedVersion`s of `environment/base.go` that differ in this minor from the ones the
    /// `.decl` files carry (1.36's), by library section name.
    pub library_introduced: &'static [(&'static str, Version)],
    /// Library sections of the `.decl` files that this minor's code does not have at all.
    pub missing_libraries: &'static [&'static str],
    pub cost_algorithm: CostAlgorithm,
    /// cel-go's estimator gives a comprehension's result the size of its range
    /// (`checker/cost.go` `costComprehension`, `computedSizes[e.GetId()] = rangeCnt`: cel-go
    /// v0.17.8, Kubernetes 1.30); before, a comprehension's result has no computed size, so a
    /// call on it (`.map(…).sum()`, `x in l.map(…)`) is costed as over a list of unbounded size.
    pub comprehension_result_size: bool,
    /// What cel-go's estimator charges for a presence test `has(x.f)` beside its operand: 1 by
    /// default (`checker/cost.go` `presenceTestCost`), 0 from Kubernetes 1.29, whose `base.go`
    /// sets `checker.PresenceTestHasCost(false)` as it moves to cel-go v0.17.7. (The runtime
    /// cost of a presence test is the same in every minor: cel-go v0.16's, kept by
    /// `interpreter.PresenceTestHasCost(false)`.)
    pub presence_test_cost: u64,
    /// cel-go's `multiplyByCostFactor` clamps a product whose ceiling is 2^64 or more at
    /// 2^64 − 1 (`checker/cost.go`, `doubleTwoTo64`: cel-go v0.17, Kubernetes 1.29); v0.16.1
    /// converts it to `uint64` unchecked, which Go on amd64 makes 2^63 (`x in l.map(…)` over an
    /// unsized comprehension: 2^63 plus the rest).
    pub cost_factor_clamped: bool,
    /// cel-go v0.16's checker (`checker/checker.go` `checkCall`): a call of an undeclared
    /// member function (`format.dns1123Label()`, `x.hasValue()` without the optional library)
    /// is left without a type, so every call it is an argument of fails too ("found no
    /// matching overload for '!_' applied to '(<nil>)'"), and `_&&_` / `_||_` are resolved as
    /// any other overload; v0.17 gives it the error type, which every overload takes.
    pub untyped_undeclared_member_calls: bool,
    /// A CRD rule's `optionalOldSelf` is honoured (`oldSelf` optional, transition rules run on
    /// create): the `CRDValidationRatcheting` gate is on by default from Kubernetes 1.30
    /// (beta). 1.29 drops the field on create (the gate off), 1.28 has no such field.
    pub optional_old_self: bool,
    /// cel-go's `ext.Strings` (v1+) installs a compile-time check of `'…'.format([…])` calls
    /// (cel-go v0.20, Kubernetes 1.31).
    pub format_string_validator: bool,
    /// cel-go's `optMap`/`optFlatMap` expansion copies its receiver for the second use (v0.22).
    /// Before, both uses were the same nodes, type-checked twice: a receiver whose type has a
    /// fresh type parameter (`optional.none()`, `[]`, `{}`, or a `map`/`filter` over its `[]`
    /// accumulator) fails with "incompatible type already exists".
    pub optional_macros_copy_their_receiver: bool,
    /// Kubernetes prices `_==_` on its own types (Quantity, IP, CIDR, Semver, authz → 1;
    /// NamedFormat ≤ 7; URL by size) instead of cel-go's size-based equality (library/cost.go,
    /// 1.32).
    pub kubernetes_type_equality: bool,
    /// `url(s)` has the size of `s` as its result size (library/cost.go, 1.32).
    pub url_result_size: bool,
    /// Kubernetes prices `quantity(s)` and `isQuantity(s)` by the size of `s` (× 0.1), in its
    /// estimate and its runtime cost (`library/cost.go` `EstimateCallCost` and `CallCost`,
    /// Kubernetes 1.30); before, they cost 1 like any call.
    pub quantity_parse_cost: bool,
    /// `WithTypeAndObjectMeta` keeps `additionalProperties` of a resource root (1.31; 1.30 built
    /// the copy from `Generic`, `Extensions` and `ValueValidation` only).
    pub type_meta_keeps_additional_properties: bool,
    /// `SchemaDeclType` bounds an `x-kubernetes-int-or-string` value by `maxLength` (× 4 bytes)
    /// instead of the request size (apiserver `common/schemas.go`: upstream 1.34, OpenShift 1.33).
    pub int_or_string_max_length: bool,
    /// `SchemaDeclType` bounds a string with `enum` and no `maxLength` by its longest value
    /// (apiserver `common/schemas.go` `estimateMaxStringEnumLength`, Kubernetes 1.29); before,
    /// by the request size.
    pub enum_string_max_length: bool,
    /// The name cel-go gives the optional type in its messages: `optional(int)` in v0.17
    /// (`types.NewOptionalType` = `NewOpaqueType("optional", …)`), `optional_type(int)` from
    /// v0.20.
    pub optional_type_name: &'static str,
    /// cel-go estimates and counts the global form `matches(s, re)` as it does `s.matches(re)`
    /// (`checker/cost.go`, `interpreter/runtimecost.go`; cel-expr/cel-go#1350, v0.29: Kubernetes
    /// 1.37). Before, the global form cost 1 plus its arguments, like any call.
    pub global_matches_cost: bool,
    /// cel-go's runtime cost of `startsWith` / `endsWith` is the size of the argument (the
    /// prefix or suffix), as its estimate always was (`interpreter/runtimecost.go`;
    /// cel-expr/cel-go#1351, v0.29: Kubernetes 1.37); before, the size of the receiver.
    /// Read where celcost counts runtime cost (rules on defaults).
    pub affix_runtime_cost_by_argument: bool,
    /// `WithTypeAndObjectMeta` bounds `metadata.name` by `maxLength` 253 and `generateName` by
    /// 252, or by the schema's own `maxLength` where it is smaller (apiextensions-apiserver
    /// 1f3023483, `schema/cel/model/schemas.go`: Kubernetes 1.37). The CRD schema adaptor only;
    /// the OpenAPI one that types policies (`apiserver/pkg/cel/common/schemas.go`) is unchanged.
    pub object_meta_name_max_length: bool,
    /// cel-go's parser reads backtick-quoted field names (`` self.`a-b` ``) by default
    /// (`parser/parser.go` `NewParser`: cel-expr/cel-go#1295, v0.28: Kubernetes 1.37); before,
    /// only with `cel.EnableIdentifierEscapeSyntax()`, which Kubernetes does not set, so a
    /// backtick was a syntax error.
    pub ident_escape_syntax: bool,
    /// On UPDATE of a CRD, a messageExpression is compiled in the stored-expressions
    /// environment when the stored object has the same text as a *rule* (of an entry with a
    /// messageExpression): apiextensions `findPreexistingExpressionsInSchema` inserted `v.Rule`
    /// into the messageExpression set until 5d129eee2 (1.31) made it `v.MessageExpression`.
    pub stored_message_expressions_by_rule: bool,
}

const fn v(minor: u32) -> Version {
    Version::new(1, minor)
}

/// cel-go before v0.23 has optional library version 1: no `first`, `last`, `optional.unwrap`,
/// `unwrapOpt`.
const CEL_GO_BEFORE_0_23: &[&str] = &["cel.lib.optional.v2"];

/// Upstream Kubernetes 1.28 (k8s.io/apiserver v0.28, cel-go v0.16.1; read in openshift/microshift
/// release-4.15's vendored copy). `DefaultCompatibilityVersion` is 1.27, so new expressions have
/// neither the optional types, quantities and cross-type comparisons (1.28) nor strings v2, sets
/// and the literal validators (1.29) of the `.decl` files; no IP, CIDR or Format library at all
/// upstream (IP and CIDR: `since 1.30`).
const K1_28: Minor = Minor {
    kubernetes: v(28),
    checked_against: "v1.28.15",
    cel_go: "v0.16.1",
    compatibility: v(27),
    enum_string_max_length: false,
    presence_test_cost: 1,
    cost_factor_clamped: false,
    untyped_undeclared_member_calls: true,
    ..K1_29
};

/// Upstream Kubernetes 1.29 (cel-go v0.17.7; release-4.16's vendored copy):
/// `DefaultCompatibilityVersion` is 1.28; no Format library (1.31).
const K1_29: Minor = Minor {
    kubernetes: v(29),
    checked_against: "v1.29.14",
    cel_go: "v0.17.7",
    compatibility: v(28),
    quantity_parse_cost: false,
    comprehension_result_size: false,
    optional_old_self: false,
    ..K1_30
};

/// Upstream Kubernetes 1.30.
const K1_30: Minor = Minor {
    kubernetes: v(30),
    distribution: Distribution::Kubernetes,
    checked_against: "v1.30.14",
    cel_go: "v0.17.8",
    compatibility: v(29),
    library_introduced: &[],
    // No Format library in 1.30 (added in 1.31, introduced at 1.31).
    missing_libraries: &["cel.lib.optional.v2", "kubernetes.format"],
    cost_algorithm: CostAlgorithm::IterRanges,
    comprehension_result_size: true,
    presence_test_cost: 0,
    cost_factor_clamped: true,
    untyped_undeclared_member_calls: false,
    optional_old_self: true,
    optional_macros_copy_their_receiver: false,
    format_string_validator: false,
    kubernetes_type_equality: false,
    url_result_size: false,
    quantity_parse_cost: true,
    type_meta_keeps_additional_properties: false,
    int_or_string_max_length: false,
    enum_string_max_length: true,
    optional_type_name: "optional",
    global_matches_cost: false,
    affix_runtime_cost_by_argument: false,
    object_meta_name_max_length: false,
    ident_escape_syntax: false,
    stored_message_expressions_by_rule: true,
};

const K1_31: Minor = Minor {
    kubernetes: v(31),
    checked_against: "v1.31.14",
    cel_go: "v0.20.1",
    compatibility: v(30),
    missing_libraries: CEL_GO_BEFORE_0_23,
    format_string_validator: true,
    type_meta_keeps_additional_properties: true,
    optional_type_name: super::types::OPTIONAL_TYPE,
    stored_message_expressions_by_rule: false,
    ..K1_30
};

const K1_32: Minor = Minor {
    kubernetes: v(32),
    checked_against: "v1.32.13",
    cel_go: "v0.22.0",
    compatibility: v(31),
    optional_macros_copy_their_receiver: true,
    kubernetes_type_equality: true,
    url_result_size: true,
    ..K1_31
};

const K1_33: Minor = Minor {
    kubernetes: v(33),
    checked_against: "v1.33.13",
    cel_go: "v0.23.2",
    compatibility: v(32),
    missing_libraries: &[],
    cost_algorithm: CostAlgorithm::ScopedLocals,
    ..K1_32
};

const K1_34: Minor = Minor {
    kubernetes: v(34),
    checked_against: "v1.34.9",
    cel_go: "v0.26.0",
    compatibility: v(33),
    int_or_string_max_length: true,
    ..K1_33
};

const K1_35: Minor = Minor {
    kubernetes: v(35),
    checked_against: "v1.35.6",
    compatibility: v(34),
    ..K1_34
};

const K1_36: Minor = Minor {
    kubernetes: v(36),
    checked_against: "v1.36.2",
    compatibility: v(35),
    ..K1_35
};

/// Kubernetes 1.37: cel-go v0.29.2 (apiextensions-apiserver b51744f36), new expressions at
/// compatibility 1.36, the Kubernetes lists library at version 1 in the stored-expressions
/// environment (`includes`, `kubernetes.lists.v1` since 1.37), and bounded object names.
const K1_37: Minor = Minor {
    kubernetes: v(37),
    checked_against: "master of 2026-07-23 (after v0.37.0-beta.0)",
    cel_go: "v0.29.2",
    compatibility: v(36),
    global_matches_cost: true,
    affix_runtime_cost_by_argument: true,
    object_meta_name_max_length: true,
    ident_escape_syntax: true,
    // cel-go v0.28.1 dropped `duration(int)` (`int64_to_duration`, which only ever failed at
    // runtime: cel-expr/cel-go#1300), so the call no longer type-checks.
    missing_libraries: &["stdlib.intToDuration"],
    ..K1_36
};

// A 1.38 entry would start from `..K1_37` with its compatibility (v(37): `includes` for new
// expressions), its cel-go, and the rules that minor changes as fields above, read where their
// formula is computed. Known so far: cel-go 0.32 costs `optMap` / `optFlatMap` by a versioned
// rule (cel-expr/cel-go#1476, #1487), a field read in `cost.rs` beside `global_matches_cost`.

/// Upstream Kubernetes, oldest first.
pub const KUBERNETES: [Minor; 10] = [
    K1_28, K1_29, K1_30, K1_31, K1_32, K1_33, K1_34, K1_35, K1_36, K1_37,
];

/// OpenShift's build of an upstream minor: upstream's rules, plus the carries a minor's entry
/// below sets.
const fn openshift(upstream: Minor) -> Minor {
    Minor {
        distribution: Distribution::OpenShift,
        ..upstream
    }
}

/// OpenShift 4.15 (release-4.15 `base.go`): IP and CIDR introduced at 1.27, so in the
/// environment of new expressions too; no Format library.
const OS1_28: Minor = Minor {
    library_introduced: &[("kubernetes.net.ip", v(27)), ("kubernetes.net.cidr", v(27))],
    ..openshift(K1_28)
};

/// OpenShift 4.16 (release-4.16 `base.go`): IP and CIDR introduced at 1.27; no Format library.
const OS1_29: Minor = Minor {
    library_introduced: &[("kubernetes.net.ip", v(27)), ("kubernetes.net.cidr", v(27))],
    ..openshift(K1_29)
};

const OS1_30: Minor = Minor {
    // base.go introduces IP and CIDR at 1.27 (so they are in the 1.29 environment) and
    // carries the Format library, introduced at 1.30.
    library_introduced: &[
        ("kubernetes.net.ip", v(27)),
        ("kubernetes.net.cidr", v(27)),
        ("kubernetes.format", v(30)),
    ],
    missing_libraries: CEL_GO_BEFORE_0_23,
    ..openshift(K1_30)
};

const OS1_31: Minor = Minor {
    // Format introduced at 1.30, so new expressions of 1.31 have it.
    library_introduced: &[("kubernetes.format", v(30))],
    ..openshift(K1_31)
};

const OS1_33: Minor = Minor {
    // The int-or-string maxLength change (upstream 1.34) is carried in 1.33.
    int_or_string_max_length: true,
    ..openshift(K1_33)
};

/// OpenShift's builds: upstream plus the CEL carries of openshift/kubernetes, oldest first.
/// OpenShift has not shipped 1.37 (no openshift/kubernetes 1.37 is vendored anywhere reachable):
/// upstream's rules stand in for it, and every output says so ([`Minor::stand_in_note`]).
pub const OPENSHIFT: [Minor; 10] = [
    OS1_28,
    OS1_29,
    OS1_30,
    OS1_31,
    openshift(K1_32),
    OS1_33,
    openshift(K1_34),
    openshift(K1_35),
    openshift(K1_36),
    openshift(K1_37),
];

/// The newest minor OpenShift has shipped (release-4.22: Kubernetes 1.36); newer OpenShift
/// entries are upstream's rules standing in.
pub const OPENSHIFT_SHIPPED: Version = v(36);

/// The rules of the newest supported minor (upstream).
pub const NEWEST_MINOR: &Minor = &KUBERNETES[KUBERNETES.len() - 1];

/// The oldest and newest supported minors.
pub const OLDEST: Version = v(28);
pub const NEWEST: Version = v(37);

/// How many minors upstream supports at a time (the newest three: Kubernetes' version skew
/// policy), and so how many every command judges against by default.
pub const SUPPORTED_MINORS: usize = 3;

/// The minors upstream supports among those celcost knows, oldest first: the default of every
/// command without `--kubernetes-version` (1.35..1.37). For OpenShift, the newest three it has
/// shipped (a minor it has not shipped is upstream's rules standing in).
pub fn supported_window(d: Distribution) -> Vec<Version> {
    let newest = match d {
        Distribution::Kubernetes => NEWEST,
        Distribution::OpenShift => OPENSHIFT_SHIPPED,
    };
    let known: Vec<Version> = table(d)
        .iter()
        .map(|m| m.kubernetes)
        .filter(|v| *v <= newest)
        .collect();
    known[known.len().saturating_sub(SUPPORTED_MINORS)..].to_vec()
}

fn table(d: Distribution) -> &'static [Minor] {
    match d {
        Distribution::Kubernetes => &KUBERNETES,
        Distribution::OpenShift => &OPENSHIFT,
    }
}

impl Minor {
    /// The rules of a supported upstream minor.
    pub fn of(kubernetes: Version) -> Option<&'static Minor> {
        Minor::of_distribution(kubernetes, Distribution::Kubernetes)
    }

    pub fn of_distribution(kubernetes: Version, d: Distribution) -> Option<&'static Minor> {
        table(d).iter().find(|m| m.kubernetes == kubernetes)
    }

    /// The supported minor closest to `kubernetes` (the newest for newer servers, the oldest
    /// for older ones).
    pub fn nearest(kubernetes: Version, d: Distribution) -> &'static Minor {
        let t = table(d);
        Minor::of_distribution(kubernetes, d).unwrap_or(if kubernetes > NEWEST {
            &t[t.len() - 1]
        } else {
            &t[0]
        })
    }

    /// The minor after this one, if supported.
    pub fn next(&self) -> Option<&'static Minor> {
        Minor::of_distribution(v(self.kubernetes.minor + 1), self.distribution)
    }

    /// The `IntroducedVersion` of a library section in this minor's `base.go`, when it differs
    /// from the one the `.decl` files carry.
    pub fn library_introduced(&self, section: &str) -> Option<Version> {
        self.library_introduced
            .iter()
            .find(|(s, _)| *s == section)
            .map(|(_, v)| *v)
    }

    /// cel-go v0.16 and v0.17's homogeneous-literal validator exempts the list of a `format`
    /// call only where the list is a literal argument (`Exemption::through_literals_only`); from
    /// v0.20, wherever it is built. Read from [`Minor::cel_go`].
    pub fn homogeneous_exemption_through_literals_only(&self) -> bool {
        self.cel_go.starts_with("v0.16.") || self.cel_go.starts_with("v0.17.")
    }

    /// Whether this minor's code has a library section at all.
    pub fn has_library(&self, section: &str) -> bool {
        !self.missing_libraries.contains(&section)
    }

    /// When this entry is another build's rules standing in for one not known (OpenShift's
    /// 1.37: upstream's), what to tell the user.
    pub fn stand_in_note(&self) -> Option<String> {
        (self.distribution == Distribution::OpenShift && self.kubernetes > OPENSHIFT_SHIPPED).then(
            || {
                format!(
                    "OpenShift has not shipped Kubernetes {k} (its newest is {OPENSHIFT_SHIPPED}): \
                     these are upstream Kubernetes {k}'s rules, exact for OpenShift only if it \
                     carries no CEL change of its own",
                    k = self.kubernetes
                )
            },
        )
    }

    /// `1.36`, or `1.33 (openshift)`.
    pub fn label(&self) -> String {
        match self.distribution {
            Distribution::Kubernetes => self.kubernetes.to_string(),
            d => format!("{} ({})", self.kubernetes, d.name()),
        }
    }
}

/// Parses one version, `1.N` (or `v1.N`), of a supported minor.
pub fn parse_version(s: &str) -> Result<Version, String> {
    let t = s.trim().trim_start_matches('v');
    let ok = t.split('.').count() == 2
        && t.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let version = Version::parse(t).filter(|_| ok).ok_or_else(|| {
        format!("invalid Kubernetes version {s:?}: expected MAJOR.MINOR, e.g. 1.36")
    })?;
    if Minor::of(version).is_none() {
        return Err(format!(
            "Kubernetes {version} is not supported: celcost has the rules of {OLDEST} to {NEWEST}"
        ));
    }
    Ok(version)
}

/// `1.N`, `1.A..1.B` (inclusive) or `all`: the supported minors meant, oldest first.
pub fn parse_range(s: &str) -> Result<Vec<Version>, String> {
    parse_range_or_constraint(s).map(|(v, _)| v)
}

/// [`parse_range`], or a version constraint as Helm's `kubeVersion` writes it (`">= 1.29.0-0"`,
/// `">=1.30 <1.37"`, `"~1.33"`: [`super::constraint`]) clipped to the minors celcost knows, with
/// what to tell the user where it was clipped.
pub fn parse_range_or_constraint(s: &str) -> Result<(Vec<Version>, Option<String>), String> {
    let t = s.trim();
    let plain = t.eq_ignore_ascii_case("all")
        || t.contains("..")
        || t.trim_start_matches('v').split('.').count() == 2
            && t.trim_start_matches('v')
                .bytes()
                .all(|b| b.is_ascii_digit() || b == b'.');
    if plain {
        return parse_plain_range(t).map(|v| (v, None));
    }
    let known: Vec<Version> = KUBERNETES.iter().map(|m| m.kubernetes).collect();
    super::constraint::minors_meeting(t, &known)
}

fn parse_plain_range(s: &str) -> Result<Vec<Version>, String> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("all") {
        return Ok(KUBERNETES.iter().map(|m| m.kubernetes).collect());
    }
    let (a, b) = match s.split_once("..") {
        Some((a, b)) => (parse_version(a)?, parse_version(b)?),
        None => {
            let one = parse_version(s)?;
            (one, one)
        }
    };
    if a > b {
        return Err(format!(
            "empty Kubernetes version range {s:?}: the first version must not be newer than the last"
        ));
    }
    Ok(KUBERNETES
        .iter()
        .map(|m| m.kubernetes)
        .filter(|v| *v >= a && *v <= b)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_window_is_the_newest_three_minors() {
        assert_eq!(
            supported_window(Distribution::Kubernetes),
            vec![v(35), v(36), v(37)]
        );
        assert_eq!(
            supported_window(Distribution::OpenShift),
            vec![v(34), v(35), v(36)]
        );
    }

    #[test]
    fn minors_are_consecutive_and_their_compatibility_is_older() {
        for t in [&KUBERNETES, &OPENSHIFT] {
            for w in t.windows(2) {
                assert_eq!(w[1].kubernetes.minor, w[0].kubernetes.minor + 1);
            }
            for m in t.iter() {
                assert!(m.compatibility < m.kubernetes);
                assert_eq!(m.compatibility.minor + 1, m.kubernetes.minor);
            }
            assert_eq!(t[0].kubernetes, OLDEST);
            assert_eq!(t[t.len() - 1].kubernetes, NEWEST);
        }
        assert!(
            OPENSHIFT
                .iter()
                .all(|m| m.distribution == Distribution::OpenShift)
        );
        assert!(
            KUBERNETES
                .iter()
                .all(|m| m.distribution == Distribution::Kubernetes)
        );
    }

    #[test]
    fn distributions_differ_only_where_openshift_carries_changes() {
        let differ: Vec<u32> = KUBERNETES
            .iter()
            .zip(OPENSHIFT.iter())
            .filter(|(k, o)| {
                Minor {
                    distribution: Distribution::Kubernetes,
                    ..**o
                } != **k
            })
            .map(|(k, _)| k.kubernetes.minor)
            .collect();
        assert_eq!(differ, [28, 29, 30, 31, 33]);
    }

    #[test]
    fn versions_outside_the_range_are_refused_by_name() {
        assert_eq!(parse_version("1.31").unwrap(), v(31));
        assert_eq!(parse_version("v1.36").unwrap(), v(36));
        assert_eq!(parse_version("1.29").unwrap(), v(29));
        assert_eq!(parse_version("1.28").unwrap(), v(28));
        let e = parse_version("1.27").unwrap_err();
        assert!(e.contains("1.28 to 1.37"), "{e}");
        assert_eq!(parse_version("1.37").unwrap(), v(37));
        assert!(parse_version("1.38").unwrap_err().contains("not supported"));
        for bad in ["one.two", "1.31.2", "", "1.", ".3", "1.3x", "1..3"] {
            assert!(parse_version(bad).unwrap_err().contains("invalid"), "{bad}");
        }
    }

    #[test]
    fn ranges() {
        assert_eq!(parse_range("1.30..1.36").unwrap().len(), 7);
        assert_eq!(parse_range("1.30..1.37").unwrap().len(), 8);
        assert_eq!(
            parse_range("all").unwrap(),
            parse_range("1.28..1.37").unwrap()
        );
        assert_eq!(parse_range("all").unwrap().len(), 10);
        assert_eq!(parse_range("1.28..1.29").unwrap(), [v(28), v(29)]);
        assert_eq!(parse_range("1.36..1.37").unwrap(), [v(36), v(37)]);
        assert_eq!(parse_range("1.32..1.33").unwrap(), [v(32), v(33)]);
        assert_eq!(parse_range("1.34").unwrap(), [v(34)]);
        assert!(parse_range("1.35..1.31").unwrap_err().contains("empty"));
        assert!(
            parse_range("1.27..1.31")
                .unwrap_err()
                .contains("not supported")
        );
        assert!(parse_range("1.30..").unwrap_err().contains("invalid"));
        // Constraints as Helm's kubeVersion writes them, clipped to the minors known.
        let (got, note) = parse_range_or_constraint(">= 1.29.0-0").unwrap();
        assert_eq!(got, parse_range("1.29..1.37").unwrap());
        assert!(note.unwrap().contains("judged against 1.29..1.37"));
        let (got, note) = parse_range_or_constraint(">=1.30 <1.37").unwrap();
        assert_eq!(got, parse_range("1.30..1.36").unwrap());
        assert_eq!(note, None);
        assert_eq!(parse_range("~1.33").unwrap(), [v(33)]);
        assert!(parse_range(">= 1.x.y").unwrap_err().contains("invalid"));
        assert_eq!(parse_range_or_constraint("1.31").unwrap().1, None);
    }

    #[test]
    fn nearest_clamps_to_the_range() {
        let k = Distribution::Kubernetes;
        assert_eq!(Minor::nearest(v(40), k).kubernetes, NEWEST);
        assert_eq!(Minor::nearest(v(25), k).kubernetes, OLDEST);
        assert_eq!(Minor::nearest(v(33), k).kubernetes, v(33));
        let o = Minor::nearest(v(33), Distribution::OpenShift);
        assert_eq!(o.next().unwrap().distribution, Distribution::OpenShift);
        assert!(Minor::of(NEWEST).unwrap().next().is_none());
        assert_eq!(o.label(), "1.33 (openshift)");
        // A 1.38 API server gets the newest rules, and no next minor.
        let newest = Minor::nearest(v(38), k);
        assert_eq!(newest.kubernetes, v(37));
        assert!(newest.next().is_none());
        assert_eq!(Minor::of(v(36)).unwrap().next().unwrap().kubernetes, v(37));
    }

    #[test]
    fn openshift_1_37_is_upstreams_and_says_so() {
        let os = Minor::of_distribution(v(37), Distribution::OpenShift).unwrap();
        let k8s = Minor::of(v(37)).unwrap();
        assert_eq!(
            Minor {
                distribution: Distribution::Kubernetes,
                ..*os
            },
            *k8s
        );
        let note = os.stand_in_note().expect("a note");
        assert!(
            note.contains("OpenShift has not shipped Kubernetes 1.37"),
            "{note}"
        );
        assert!(note.contains("upstream Kubernetes 1.37's rules"), "{note}");
        assert!(k8s.stand_in_note().is_none());
        for m in OPENSHIFT
            .iter()
            .filter(|m| m.kubernetes <= OPENSHIFT_SHIPPED)
        {
            assert!(m.stand_in_note().is_none(), "{}", m.label());
        }
    }

    #[test]
    fn the_1_28_and_1_29_deltas() {
        for d in [Distribution::Kubernetes, Distribution::OpenShift] {
            let (m28, m29) = (
                Minor::of_distribution(v(28), d).unwrap(),
                Minor::of_distribution(v(29), d).unwrap(),
            );
            assert_eq!((m28.cel_go, m29.cel_go), ("v0.16.1", "v0.17.7"));
            assert_eq!((m28.compatibility, m29.compatibility), (v(27), v(28)));
            assert!(!m28.enum_string_max_length && m29.enum_string_max_length);
            for m in [m28, m29] {
                assert!(!m.has_library("kubernetes.format"), "{}", m.label());
                // OpenShift carries IP and CIDR, introduced at 1.27; upstream has them from 1.30.
                let carried = m.library_introduced("kubernetes.net.ip");
                assert_eq!(carried, (d == Distribution::OpenShift).then_some(v(27)));
                assert_eq!(m.library_introduced("kubernetes.net.cidr"), carried);
            }
        }
        assert!(
            KUBERNETES
                .iter()
                .filter(|m| m.kubernetes >= v(29))
                .all(|m| m.enum_string_max_length)
        );
    }

    #[test]
    fn the_1_37_deltas_are_on_from_1_37_only() {
        for m in KUBERNETES.iter().chain(OPENSHIFT.iter()) {
            let on = m.kubernetes >= v(37);
            assert_eq!(m.global_matches_cost, on, "{}", m.label());
            assert_eq!(m.affix_runtime_cost_by_argument, on, "{}", m.label());
            assert_eq!(m.object_meta_name_max_length, on, "{}", m.label());
            assert_eq!(m.ident_escape_syntax, on, "{}", m.label());
            assert_eq!(m.has_library("stdlib.intToDuration"), !on, "{}", m.label());
        }
        assert_eq!(Minor::of(v(37)).unwrap().compatibility, v(36));
        assert_eq!(Minor::of(v(37)).unwrap().cel_go, "v0.29.2");
    }
}
