//! Tests of the suggested bounds on small CRDs: the candidate values and the search over them,
//! what is bounded and by how much, the findings no bound helps, the implied bounds first and a
//! lowering named as breaking, and hostile shapes that end within the search's budget.

use celcost_core::cel::decls::Version;
use celcost_core::cel::minor::{Distribution, Minor};
use celcost_core::report::{Suggestion, suggestion_groups};
use serde_json::json;

use super::candidates::candidates;
use super::search::Site;
use super::verify::{apply_bounds, with_bounds};
use super::*;

fn estimator(minor: u32) -> Estimator {
    Estimator::for_minor(
        Minor::of_distribution(Version::new(1, minor), Distribution::Kubernetes).unwrap(),
    )
}

/// A CRD whose `spec` has the given properties (and rules on `spec`).
fn crd(spec_props: Value, spec_rules: Value) -> Value {
    let spec = json!({
        "type": "object",
        "properties": spec_props,
        "x-kubernetes-validations": spec_rules,
    });
    let schema = json!({"type": "object", "properties": {"spec": spec}});
    let versions = json!([celcost_core::fixtures::version("v1", true, schema)]);
    celcost_core::fixtures::crd("example.com", "things", "Thing", "Namespaced", versions)
}

fn run(minor: u32, object: &Value, settings: &Settings) -> ObjectReport {
    let e = estimator(minor);
    let r = e.estimate(object, "t").unwrap();
    suggest(&e, object, r, settings)
}

/// The rules and totals that got something: (suggestions, reason).
fn findings(r: &ObjectReport) -> Vec<(Vec<Suggestion>, Option<String>)> {
    let mut out = Vec::new();
    for s in &r.schemas {
        for x in &s.rules {
            if !x.suggestions.is_empty() || x.no_suggestion.is_some() {
                out.push((x.suggestions.clone(), x.no_suggestion.clone()));
            }
        }
        if !s.suggestions.is_empty() || s.no_suggestion.is_some() {
            out.push((s.suggestions.clone(), s.no_suggestion.clone()));
        }
    }
    out
}

fn is_round(v: i64) -> bool {
    series_125().contains(&v)
}

#[test]
fn the_125_series_and_rounding_down() {
    let s = series_125();
    assert_eq!(&s[..7], &[1, 2, 5, 10, 20, 50, 100]);
    assert!(s.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(*s.last().unwrap(), 5_000_000_000_000_000_000);
    assert_eq!(round_down_125(0), None);
    assert_eq!(round_down_125(-3), None);
    assert_eq!(round_down_125(1), Some(1));
    assert_eq!(round_down_125(4), Some(2));
    assert_eq!(round_down_125(64), Some(50));
    assert_eq!(round_down_125(99), Some(50));
    assert_eq!(round_down_125(100), Some(100));
    assert_eq!(round_down_125(241_979), Some(200_000));
    assert_eq!(round_down_125(i64::MAX), Some(5_000_000_000_000_000_000));
    // Every value rounds to the largest series value not above it.
    for n in 1..5000i64 {
        let r = round_down_125(n).unwrap();
        assert!(r <= n && is_round(r));
        assert!(s.iter().all(|&v| v <= r || v > n), "{n} → {r}");
    }
}

#[test]
fn candidates_run_from_the_smallest_value_below_the_ceiling() {
    assert_eq!(candidates(3, Some(60)), vec![3, 5, 10, 20, 50]);
    assert_eq!(candidates(1, Some(2)), vec![1]);
    assert!(candidates(5, Some(5)).is_empty());
    assert!(candidates(7, Some(2)).is_empty());
    let all = candidates(1, None);
    assert_eq!(all.len(), series_125().len());
}

#[test]
fn the_binary_search_finds_the_largest_fitting_value_in_few_probes() {
    for n in 0..=60usize {
        let cands: Vec<i64> = (0..n as i64).map(|i| i * 3 + 1).collect();
        let max_probes = (usize::BITS - n.leading_zeros()) as usize + 1;
        for t in 0..=n {
            // The first `t` candidates fit (the cost is monotone in the bound).
            let mut probes = 0;
            let got = largest_fitting(&cands, |v| {
                probes += 1;
                Ok::<_, ()>(((v - 1) / 3) < t as i64)
            })
            .unwrap();
            assert_eq!(got, t.checked_sub(1).map(|i| cands[i]), "n={n} t={t}");
            assert!(probes <= max_probes, "n={n} t={t}: {probes} probes");
        }
        // A predicate that is not monotone (a broken model) still ends, in as many probes.
        let mut probes = 0;
        let got = largest_fitting(&cands, |v| {
            probes += 1;
            Ok::<_, ()>(v % 2 == 0)
        })
        .unwrap();
        assert!(probes <= max_probes);
        assert!(got.is_none_or(|g| cands.contains(&g)));
    }
    // The predicate's error stops the search at once.
    let mut probes = 0;
    let r = largest_fitting(&[1, 2, 3, 4], |_| {
        probes += 1;
        Err::<bool, _>("spent")
    });
    assert_eq!(r, Err("spent"));
    assert_eq!(probes, 1);
}

#[test]
fn fits_means_below_the_threshold_and_within_the_limit() {
    let s = Settings::new(80.0);
    assert!(s.fits(7_999_999, 10_000_000));
    assert!(!s.fits(8_000_000, 10_000_000));
    assert!(!s.fits(u64::MAX, 10_000_000));
    // A threshold above 100% still asks for the limit.
    let over = Settings::new(150.0);
    assert!(over.fits(10_000_000, 10_000_000));
    assert!(!over.fits(10_000_001, 10_000_000));
    // Nonsense thresholds fall back to the default.
    assert_eq!(Settings::new(f64::NAN).near_budget_percent, 80.0);
    assert_eq!(Settings::new(-1.0).near_budget_percent, 80.0);
}

/// An unbounded list of unbounded strings, each checked by a regex: bounds to add.
fn unbounded_tags() -> Value {
    crd(
        json!({"tags": {"type": "array", "items": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]+$')"}]}}}),
        json!([]),
    )
}

#[test]
fn an_unbounded_list_of_unbounded_strings_gets_verified_round_bounds() {
    let o = unbounded_tags();
    let settings = Settings::default();
    let r = run(36, &o, &settings);
    let f = findings(&r);
    assert!(!f.is_empty());
    for (sugg, none) in &f {
        assert!(none.is_none(), "{none:?}");
        assert!(!sugg.is_empty());
        for b in sugg {
            assert!(b.current.is_none());
            assert!(is_round(b.value), "{b:?}");
            assert!(settings.fits(b.cost_after, PER_SCHEMA_COST_LIMIT));
            // The schema every version shares, as the estimate names it.
            assert!(
                b.path == "spec.validation.openAPIV3Schema.properties[spec].properties[tags]"
                    || b.path
                        == "spec.validation.openAPIV3Schema.properties[spec].properties[tags].items",
                "{}",
                b.path
            );
            assert_eq!(b.marker_on, ".spec.tags");
        }
        // The rule's cardinality and its string: each alone can do it, and together they
        // are balanced (both larger than either alone).
        let rule_sugg = &r.schemas[0].rules[0].suggestions;
        let groups = suggestion_groups(rule_sugg);
        assert!(
            groups
                .iter()
                .any(|g| g.len() == 1 && g[0].keyword == Keyword::MaxItems)
        );
        if let Some(both) = groups.iter().find(|g| g.len() == 2) {
            let alone = groups
                .iter()
                .find(|g| g.len() == 1 && g[0].keyword == Keyword::MaxItems)
                .unwrap();
            let items = both
                .iter()
                .find(|b| b.keyword == Keyword::MaxItems)
                .unwrap();
            assert!(items.value > alone[0].value);
        }
    }
    // The text: an actionable line with the kubebuilder marker.
    let line = suggestion_text(&r.schemas[0].rules[0]).unwrap();
    assert!(line.contains("+kubebuilder:validation:"), "{line}");
    assert!(line.contains("^.spec.tags"), "{line}");
    assert!(line.contains(" → "), "{line}");
}

/// A list of host names already bounded, far too long for its rule: only a lowering helps.
fn bounded_hosts() -> Value {
    crd(
        json!({"hosts": {"type": "array", "maxItems": 1_000_000, "items": {"type": "string", "maxLength": 253},
            "x-kubernetes-validations": [{"rule": "self.all(h, h.matches('^[a-z.]+$'))"}]}}),
        json!([]),
    )
}

#[test]
fn a_bound_that_is_too_large_is_lowered() {
    let o = bounded_hosts();
    let r = run(36, &o, &Settings::default());
    let rule = &r.schemas[0].rules[0];
    assert!(!rule.suggestions.is_empty(), "{:?}", rule.no_suggestion);
    let lowered: Vec<&Suggestion> = rule
        .suggestions
        .iter()
        .filter(|b| b.current.is_some())
        .collect();
    assert!(!lowered.is_empty());
    for b in lowered {
        assert!(b.value < b.current.unwrap());
    }
    assert!(suggestion_text(rule).unwrap().contains("lower "));
}

#[test]
fn fixed_costs_say_no_bound_helps() {
    let ten = "[1,2,3,4,5,6,7,8,9,10]";
    let rule = format!(
        "{ten}.all(a, {ten}.all(b, {ten}.all(c, {ten}.all(d, {ten}.all(e, {ten}.all(f, {ten}.all(g, a+b+c+d+e+f+g > 0)))))))"
    );
    let o = crd(
        json!({"fixed": {"type": "string", "maxLength": 1,
            "x-kubernetes-validations": [{"rule": rule}]}}),
        json!([]),
    );
    let r = run(36, &o, &Settings::default());
    let rule = &r.schemas[0].rules[0];
    assert!(rule.suggestions.is_empty());
    let why = rule.no_suggestion.as_deref().unwrap();
    assert!(why.starts_with("no bound helps"), "{why}");
    assert!(why.contains("fixed parts"), "{why}");
    assert!(r.schemas[0].no_suggestion.is_some());
}

#[test]
fn int_or_string_max_length_before_1_34_cannot_help() {
    let rule = "type(self) == string ? self.matches('^[a-z]+$') && self.matches('^[b-z]+$') && self.matches('^[c-z]+$') && self.matches('^[d-z]+$') : true";
    let o = crd(
        json!({"ios": {"x-kubernetes-int-or-string": true,
            "x-kubernetes-validations": [{"rule": rule}]}}),
        json!([]),
    );
    let settings = Settings::new(10.0);
    let old = run(33, &o, &settings);
    let why = old.schemas[0].rules[0].no_suggestion.as_deref().unwrap();
    assert!(why.contains("int-or-string"), "{why}");
    assert!(why.contains("1.33"), "{why}");
    // From 1.34 on its maxLength counts: a bound helps.
    let new = run(34, &o, &settings);
    let s = &new.schemas[0].rules[0].suggestions;
    assert!(
        s.iter().any(|b| b.keyword == Keyword::MaxLength),
        "{:?}",
        new.schemas[0].rules[0].no_suggestion
    );
}

#[test]
fn an_embedded_resource_with_unknown_fields_says_the_api_server_types_it() {
    let o = crd(
        json!({"template": {"type": "object", "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true,
            "x-kubernetes-validations": [{"rule": "self.kind.matches('^[a-z]+$') && self.apiVersion.matches('^[a-z]+$')"}]}}),
        json!([]),
    );
    let r = run(36, &o, &Settings::new(1.0));
    let why = r.schemas[0].rules[0].no_suggestion.as_deref().unwrap();
    assert!(why.starts_with("no bound helps: "), "{why}");
    assert!(why.contains("resource root"), "{why}");
    assert!(
        why.contains("x-kubernetes-preserve-unknown-fields"),
        "{why}"
    );
    assert!(r.schemas[0].rules[0].suggestions.is_empty());
}

#[test]
fn findings_that_fit_get_nothing_and_other_kinds_pass_through() {
    let o = crd(
        json!({"name": {"type": "string", "maxLength": 10,
            "x-kubernetes-validations": [{"rule": "self.startsWith('a')"}]}}),
        json!([]),
    );
    let r = run(36, &o, &Settings::default());
    assert!(findings(&r).is_empty());
    let e = estimator(36);
    let vap = ObjectReport {
        kind: "ValidatingAdmissionPolicy".into(),
        ..ObjectReport::default()
    };
    assert_eq!(
        suggest(&e, &json!({}), vap.clone(), &Settings::default()),
        vap
    );
}

#[test]
fn over_64_units_the_bounds_not_needed_are_lifted() {
    // 100 nested lists of `maxItems: 2`, a rule at the bottom: 100 units, each doubling the
    // cardinality. The common value bounds all 100 at 1; only enough of them to fit are needed.
    let mut items = json!({"type": "string", "maxLength": 64,
        "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]+$')"}]});
    for _ in 0..100 {
        items = json!({"type": "array", "maxItems": 2, "items": items});
    }
    let o = crd(json!({"deep": items}), json!([]));
    let settings = Settings::default();
    let r = run(36, &o, &settings);
    let rule = r.schemas.iter().flat_map(|s| &s.rules).next().unwrap();
    assert!(rule.no_suggestion.is_none(), "{:?}", rule.no_suggestion);
    let s = &rule.suggestions;
    let group: Vec<&Suggestion> = s.iter().filter(|b| b.group == s[0].group).collect();
    let kv: Vec<(&str, i64)> = group.iter().map(|b| (b.keyword.name(), b.value)).collect();
    assert!(
        group
            .iter()
            .all(|b| b.keyword == Keyword::MaxItems && b.value == 1
                || b.keyword == Keyword::MaxLength && b.value <= 64),
        "{kv:?}"
    );
    // Fewer than every level, and none more could be lifted: each doubles the cost.
    assert!(group.len() < 100, "{} bounds", group.len());
    let after = group[0].cost_after;
    let limit = PER_RULE_COST_LIMIT;
    assert!(settings.fits(after, limit), "{after}");
    assert!(
        !settings.fits(after.saturating_mul(2), limit),
        "{after}: {} bounds",
        group.len()
    );
}

#[test]
fn deep_nesting_and_hostile_bounds_end_with_an_answer() {
    // 150 nested unbounded lists, a rule at the bottom: one unit of 150 ancestors.
    let mut items = json!({"type": "string",
        "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]+$')"}]});
    for _ in 0..150 {
        items = json!({"type": "array", "items": items});
    }
    let o = crd(json!({"deep": items}), json!([]));
    let t = std::time::Instant::now();
    let r = run(36, &o, &Settings::default());
    assert!(t.elapsed().as_secs() < 60);
    let f = findings(&r);
    assert!(!f.is_empty());
    for (s, none) in f {
        assert!(!s.is_empty() || none.is_some());
    }
    // Negative and huge bounds, a maxLength below minLength: no panic, an answer.
    let o = crd(
        json!({
            "neg": {"type": "array", "maxItems": -5, "items": {"type": "string", "maxLength": i64::MAX,
                "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]+$')"}]}},
            "odd": {"type": "array", "minItems": 100, "items": {"type": "string", "minLength": 50, "maxLength": 10,
                "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]+$') && self.matches('^[b-z]+$')"}]}}
        }),
        json!([]),
    );
    let r = run(36, &o, &Settings::new(1.0));
    for (s, none) in findings(&r) {
        assert!(!s.is_empty() || none.is_some());
        for b in s {
            assert!(b.value >= 0);
        }
    }
}

#[test]
fn a_spent_search_budget_says_so() {
    let o = unbounded_tags();
    let settings = Settings {
        max_evaluations: 2,
        ..Settings::default()
    };
    let r = run(36, &o, &settings);
    let f = findings(&r);
    assert!(!f.is_empty());
    assert!(
        f.iter()
            .any(|(_, n)| n.as_deref().is_some_and(|n| n.contains("spent"))),
        "{f:?}"
    );
    let none_verified = Settings {
        max_verifications: 0,
        ..Settings::default()
    };
    let r = run(36, &o, &none_verified);
    for (s, n) in findings(&r) {
        assert!(s.is_empty(), "an unverified suggestion is never shown");
        assert!(n.is_some());
    }
}

/// A verification sets its bounds on the object's one copy and puts it back as it was: members
/// replaced get their value back in their place, members added go, so the copy serializes as
/// the object does; what the estimate saw is the object with the bounds (as `apply_bounds`
/// makes it); a node not in the object is an error and changes nothing either.
#[test]
fn bounds_are_set_on_the_copy_and_put_back() {
    let object = crd(
        json!({
            "tags": {"type": "array", "maxItems": 10, "description": "d",
                     "items": {"type": "string"}},
            "name": {"type": "string"}
        }),
        json!([]),
    );
    let site = |node: Vec<Step>, keyword| Site {
        node,
        keyword,
        current: None,
        lo: 0,
        cap: None,
        cardinality: false,
        implied: None,
    };
    let tags = site(vec![Step::Prop("tags".into())], Keyword::MaxItems);
    let items = site(
        vec![Step::Prop("tags".into()), Step::Items],
        Keyword::MaxLength,
    );
    let gone = site(vec![Step::Prop("nothing".into())], Keyword::MaxLength);
    let pointers = vec!["/spec/versions/0/schema/openAPIV3Schema/properties/spec".to_string()];
    let bounds = [(&tags, 5), (&items, 64)];
    let mut copy = object.clone();
    let seen = with_bounds(&mut copy, &object, &pointers, &bounds, |v| v.clone()).unwrap();
    assert_eq!(seen, apply_bounds(&object, &pointers, &bounds).unwrap());
    assert_eq!(
        seen.pointer(
            "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/tags/maxItems"
        ),
        Some(&json!(5))
    );
    assert_eq!(
        serde_json::to_string(&copy).unwrap(),
        serde_json::to_string(&object).unwrap()
    );
    let bounds = [(&tags, 5), (&gone, 1)];
    let err = with_bounds(&mut copy, &object, &pointers, &bounds, |_| ()).unwrap_err();
    assert!(err.contains("is not in the object"), "{err}");
    assert_eq!(
        serde_json::to_string(&copy).unwrap(),
        serde_json::to_string(&object).unwrap()
    );
}

/// A duration string checked by the Gateway API regex, in a list of 64, on 1.37 (over the
/// limit): the first suggestion is the regex's 28 characters rounded up (32), safe, saying why.
#[test]
fn the_bound_the_rule_implies_comes_first_and_safe() {
    let o = crd(
        json!({"retries": {"type": "array", "maxItems": 64, "items": {"type": "object",
            "properties": {"timeout": {"type": "string", "x-kubernetes-validations": [
                {"rule": "matches(self, '^([0-9]{1,5}(h|m|s|ms)){1,4}$')"}]}}}}}),
        json!([]),
    );
    let r = run(37, &o, &Settings::default());
    let rule = &r.schemas[0].rules[0];
    let groups = suggestion_groups(&rule.suggestions);
    let first = groups.first().expect("a suggestion");
    assert_eq!(first.len(), 1, "{first:?}");
    let b = first[0];
    assert_eq!(
        (b.keyword.name(), b.value, b.current),
        ("maxLength", 32, None)
    );
    assert!(b.safe);
    assert!(
        b.implied_by
            .as_deref()
            .is_some_and(|w| w.contains("at most 28 characters")),
        "{b:?}"
    );
    // No alternative lowers the list's bound: adding one to the string fits.
    assert!(
        rule.suggestions.iter().all(|s| s.current.is_none()),
        "{groups:?}"
    );
    let line = suggestion_text(rule).unwrap();
    assert!(
        line.ends_with(
            "; safe: its rule's regex `^([0-9]{1,5}(h|m|s|ms)){1,4}$` accepts at most 28 characters"
        ),
        "{line}"
    );
}

/// An existing bound larger than what the node's validation accepts: lowering it to the
/// implied length refuses nothing (safe), and comes before anything else.
#[test]
fn lowering_to_the_implied_bound_is_safe() {
    let o = crd(
        json!({"names": {"type": "array", "maxItems": 1000, "items": {"type": "string", "maxLength": 100000,
            "x-kubernetes-validations": [
                {"rule": "!format.dns1123Label().validate(self).hasValue()"},
                {"rule": "self.matches('^[a-z]+$')"}]}}}),
        json!([]),
    );
    let r = run(36, &o, &Settings::default());
    let rule = r.schemas[0]
        .rules
        .iter()
        .find(|x| x.rule.contains("matches"))
        .unwrap();
    let groups = suggestion_groups(&rule.suggestions);
    let b = groups.first().expect("a suggestion")[0];
    assert_eq!((b.value, b.current), (63, Some(100000)), "{groups:?}");
    assert!(b.safe && !b.breaks());
    assert!(
        suggestion_text(rule)
            .unwrap()
            .contains("; safe: its rule's format.dns1123Label()")
    );
}

/// Where a bound can be added, no bound there is lowered; where only lowering helps, the
/// suggestion lowers one and says what that refuses from then on.
#[test]
fn additions_before_lowerings_and_lowerings_named() {
    // Bounded list, unbounded strings: add maxLength; never lower maxItems.
    let o = crd(
        json!({"hosts": {"type": "array", "maxItems": 100, "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "self.all(h, h.matches('^[a-z.]+$'))"}]}}),
        json!([]),
    );
    let r = run(36, &o, &Settings::default());
    let rule = &r.schemas[0].rules[0];
    assert!(!rule.suggestions.is_empty(), "{:?}", rule.no_suggestion);
    assert!(
        rule.suggestions.iter().all(|b| b.current.is_none()),
        "{:?}",
        rule.suggestions
    );
    // Everything bounded already: only a lowering helps, and it is named as breaking.
    let o = bounded_hosts();
    let r = run(36, &o, &Settings::default());
    let rule = &r.schemas[0].rules[0];
    let first = suggestion_groups(&rule.suggestions)[0].clone();
    assert!(first.iter().any(|b| b.breaks()), "{first:?}");
    let line = suggestion_text(rule).unwrap();
    assert!(line.contains("; breaking: "), "{line}");
    assert!(
        line.contains("accepted today, are refused from then on"),
        "{line}"
    );
}

/// A rule modeled again (its total's finding after its own) is the model kept: made once, and
/// charged the steps its making took each time, so that a budget stops where it would; where
/// fewer steps are left than that, it is made again (and stops as it would).
#[test]
fn a_model_kept_is_made_once_and_charged_each_time() {
    use super::object::KeptModels;
    use celcost_core::budget::{self, Limits};
    let made = std::cell::Cell::new(0);
    let make = || {
        made.set(made.get() + 1);
        budget::charge(70);
        (None, None, Vec::new())
    };
    let limits = Limits {
        steps: 1_000,
        ..Limits::default()
    };
    let mut kept = KeptModels::default();
    let (_, usage) = budget::run_measured(limits, || {
        kept.model(0, 3, make);
        kept.model(0, 3, make);
        kept.model(0, 4, make);
    });
    assert_eq!((made.get(), usage.steps), (2, 210));
    let (_, usage) = budget::run_measured(
        Limits {
            steps: 69,
            ..limits
        },
        || kept.model(0, 3, make),
    );
    assert_eq!(
        made.get(),
        3,
        "made again with fewer steps left than it took"
    );
    assert_eq!(usage.steps, 69);
}
