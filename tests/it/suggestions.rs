//! Suggested bounds (`celcost::suggest`) over `examples/` and the public corpus
//! (`../shared/corpus`, skipped when absent unless `CELCOST_REQUIRE_CORPUS` is set): every CRD
//! rule and schema total over its limit or at the near-budget threshold gets either suggestions
//! or the reason none helps. Each suggested alternative is applied to the CRD document as a JSON
//! edit at its `path` (independently of the library's own path code), the whole object is
//! estimated again from scratch, and the finding must now fit with exactly the `costAfter` the
//! suggestion claims; with the first alternative of every finding applied together, the object
//! is accepted and everything is below the threshold. Prints the counts.

use crate::common;

use common::{corpus_dir, files_under};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use celcost::Estimator;
use celcost::input::{objects_of, parse_documents};
use celcost::report::{
    Keyword, ObjectReport, PER_RULE_COST_LIMIT, PER_SCHEMA_COST_LIMIT, RuleReport, Suggestion,
    suggestion_groups,
};
use celcost::suggest::{Settings, suggest};
use serde_json::Value;

/// What the API server compares with the per-rule limit.
fn judged(r: &RuleReport) -> u64 {
    r.cost.max(r.message_expression_cost.unwrap_or(0))
}

fn is_cost_error(e: &str) -> bool {
    e.contains("estimated rule cost") || e.contains("estimated messageExpression cost")
}

/// The JSON node a `nodeFieldPath`-style path names below one schema root
/// (`.properties[a].items.additionalProperties`), property names matched against the document.
fn node_at<'v>(mut v: &'v mut Value, mut rest: &str) -> Option<&'v mut Value> {
    let ends = |r: &str| r.is_empty() || r.starts_with('.');
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix(".items").filter(|r| ends(r)) {
            v = v.get_mut("items")?;
            rest = r;
        } else if let Some(r) = rest
            .strip_prefix(".additionalProperties")
            .filter(|r| ends(r))
        {
            v = v.get_mut("additionalProperties")?;
            rest = r;
        } else {
            let r = rest.strip_prefix(".properties[")?;
            let props = v.get_mut("properties")?.as_object_mut()?;
            let name = props
                .keys()
                .filter(|k| {
                    r.strip_prefix(k.as_str())
                        .and_then(|t| t.strip_prefix(']'))
                        .is_some_and(ends)
                })
                .max_by_key(|k| k.len())?
                .clone();
            rest = &r[name.len() + 1..];
            v = props.get_mut(&name)?;
        }
    }
    Some(v)
}

/// Sets `keyword: value` at `path` in the CRD document; a path under
/// `spec.validation.openAPIV3Schema` (a schema the versions share) goes in every version named.
fn apply(object: &mut Value, s: &Suggestion, versions: &[String]) {
    let mut roots: Vec<(String, String)> = Vec::new();
    if let Some(rest) = s.path.strip_prefix("spec.validation.openAPIV3Schema") {
        let vs = object["spec"]["versions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for (i, v) in vs.iter().enumerate() {
            if versions.iter().any(|n| v["name"].as_str() == Some(n)) {
                roots.push((
                    format!("/spec/versions/{i}/schema/openAPIV3Schema"),
                    rest.into(),
                ));
            }
        }
    } else {
        let rest = s
            .path
            .strip_prefix("spec.versions[")
            .expect("a version's path");
        let (i, rest) = rest.split_once(']').unwrap();
        let rest = rest
            .strip_prefix(".schema.openAPIV3Schema")
            .expect("the version's schema");
        roots.push((
            format!("/spec/versions/{i}/schema/openAPIV3Schema"),
            rest.into(),
        ));
    }
    assert!(!roots.is_empty(), "{}: no schema to apply it to", s.path);
    for (pointer, rest) in roots {
        let root = object.pointer_mut(&pointer).expect("the schema root");
        let node =
            node_at(root, &rest).unwrap_or_else(|| panic!("{} is not in the document", s.path));
        node.as_object_mut()
            .expect("a schema node is an object")
            .insert(s.keyword.name().to_string(), Value::from(s.value));
    }
}

#[derive(Default)]
struct Counts {
    rules_suggested: usize,
    totals_suggested: usize,
    rules_none: usize,
    totals_none: usize,
    alternatives_checked: usize,
    combined: usize,
    objects_fixed: usize,
    reasons: BTreeMap<String, usize>,
    /// Alternatives by what they change: every bound safe, some added, some lowered.
    safe: usize,
    additions: usize,
    lowerings: usize,
    /// Rule findings of the form `matches(self, RE)` / `self.matches(RE)` on a string without
    /// `maxLength` whose RE has a finite longest match; those whose first alternative bounds the
    /// string at that length (or its round figure above), safe.
    regex_rules: usize,
    regex_first: usize,
}

/// What an alternative changes: 0 every bound safe, 1 some bound added, 2 some lowered.
fn change(group: &[&Suggestion]) -> u8 {
    group
        .iter()
        .map(|b| match (b.safe, b.current) {
            (true, _) => 0,
            (false, None) => 1,
            (false, Some(_)) => 2,
        })
        .max()
        .unwrap_or(0)
}

/// The RE of a rule that is exactly `matches(self, 'RE')` or `self.matches('RE')`.
fn matches_self(rule: &str) -> Option<String> {
    use celcost::cel::ast::{ExprKind, Literal};
    let opts =
        celcost::cel::parse::ParserOptions::for_version(celcost::cel::version::Version::new(1, 36));
    let e = celcost::cel::parse::parse_unexpanded(rule, opts).ok()?.expr;
    let ExprKind::Call {
        function,
        target,
        args,
    } = &e.kind
    else {
        return None;
    };
    let (t, re) = match (function.as_str(), target.as_deref(), args.as_slice()) {
        ("matches", Some(t), [re]) | ("matches", None, [t, re]) => (t, re),
        _ => return None,
    };
    match (&t.kind, &re.kind) {
        (ExprKind::Ident(n), ExprKind::Literal(Literal::String(re))) if n == "self" => {
            Some(re.clone())
        }
        _ => None,
    }
}

/// The kind of reason a "no bound helps" gives (its first clause, numbers left out).
fn reason_kind(why: &str) -> String {
    for (needle, kind) in [
        (
            "the bounds raise",
            "every bound that fits raises another rule past the threshold",
        ),
        (
            "preserve-unknown-fields",
            "x-kubernetes-preserve-unknown-fields below",
        ),
        (
            "int-or-string",
            "x-kubernetes-int-or-string ignored by the minor",
        ),
        (
            "resource root",
            "typed by the API server at a resource root",
        ),
        ("fixed parts", "cost in fixed parts"),
        ("does not compile", "the rule does not compile"),
        ("spent", "search budget spent"),
    ] {
        if why.contains(needle) {
            return kind.to_string();
        }
    }
    why.chars().take(60).collect()
}

/// A rule (its index) or the total (`None`): cost, limit, suggestions, reason.
type Finding<'a> = (Option<usize>, u64, u64, &'a [Suggestion], Option<&'a str>);

/// Checks every finding of one CRD; returns nothing, counts into `c`.
fn check_object(
    estimator: &Estimator,
    settings: &Settings,
    object: &Value,
    source: &str,
    c: &mut Counts,
) {
    let before = estimator.estimate(object, source);
    let Some(before) = before.filter(|r| r.kind == "CustomResourceDefinition") else {
        return;
    };
    if before.stopped.is_some() {
        return;
    }
    let report: ObjectReport = suggest(estimator, object, before.clone(), settings);
    assert_eq!(
        report.schemas.len(),
        before.schemas.len(),
        "{source}: suggest changed the report's shape"
    );
    let mut all_fixable = true;
    let mut any = false;
    for (si, s) in report.schemas.iter().enumerate() {
        let mut findings: Vec<Finding<'_>> = s
            .rules
            .iter()
            .enumerate()
            .filter(|(_, r)| !settings.fits(judged(r), PER_RULE_COST_LIMIT))
            .map(|(ri, r)| {
                (
                    Some(ri),
                    judged(r),
                    PER_RULE_COST_LIMIT,
                    r.suggestions.as_slice(),
                    r.no_suggestion.as_deref(),
                )
            })
            .collect();
        if !settings.fits(s.total_cost, PER_SCHEMA_COST_LIMIT) {
            findings.push((
                None,
                s.total_cost,
                PER_SCHEMA_COST_LIMIT,
                s.suggestions.as_slice(),
                s.no_suggestion.as_deref(),
            ));
        }
        // Nothing that fits gets a suggestion.
        let flagged = s
            .rules
            .iter()
            .filter(|r| !r.suggestions.is_empty() || r.no_suggestion.is_some())
            .count()
            + usize::from(!s.suggestions.is_empty() || s.no_suggestion.is_some());
        assert_eq!(
            flagged,
            findings.len(),
            "{source}: suggestions on findings that fit"
        );
        for (ri, cost, limit, suggestions, none) in findings {
            any = true;
            let what = match ri {
                Some(ri) => format!("{source}: rule {}", s.rules[ri].rule_field_path),
                None => format!("{source}: total of {}", s.schema_field_path),
            };
            match (suggestions.is_empty(), none) {
                (false, None) => match ri {
                    Some(_) => c.rules_suggested += 1,
                    None => c.totals_suggested += 1,
                },
                (true, Some(why)) => {
                    assert!(
                        (why.starts_with("no bound helps") || why.starts_with("no suggestion"))
                            && !why.contains("internal"),
                        "{what}: {why}"
                    );
                    match ri {
                        Some(_) => c.rules_none += 1,
                        None => c.totals_none += 1,
                    }
                    *c.reasons.entry(reason_kind(why)).or_default() += 1;
                    all_fixable = false;
                    continue;
                }
                _ => {
                    panic!("{what}: either suggestions or a reason, not {suggestions:?} / {none:?}")
                }
            }
            // Bounds that break nobody first: safe, then added, then lowered.
            let groups = suggestion_groups(suggestions);
            let changes: Vec<u8> = groups.iter().map(|g| change(g)).collect();
            assert!(
                changes.windows(2).all(|w| w[0] <= w[1]),
                "{what}: alternatives not gentlest first: {changes:?}"
            );
            for ch in &changes {
                match ch {
                    0 => c.safe += 1,
                    1 => c.additions += 1,
                    _ => c.lowerings += 1,
                }
            }
            // A regex the string must match: its longest match, as the first suggestion.
            if let Some(ri) = ri
                && let Some(re) = matches_self(&s.rules[ri].rule)
                && let Some(n) = celcost::goregexp::longest_match(&re)
            {
                let r = &s.rules[ri];
                let mut copy = object.clone();
                let pointer = s
                    .schema_field_path
                    .strip_prefix("spec.versions[")
                    .and_then(|x| x.split_once(']'))
                    .map(|(i, _)| format!("/spec/versions/{i}/schema/openAPIV3Schema"));
                let unbounded = pointer
                    .and_then(|p| copy.pointer_mut(&p))
                    .and_then(|root| {
                        node_at(
                            root,
                            r.node_field_path
                                .strip_prefix(s.schema_field_path.as_str())
                                .unwrap_or_default(),
                        )
                    })
                    .is_some_and(|node| node.get("maxLength").is_none());
                if unbounded {
                    c.regex_rules += 1;
                    let n = n as i64;
                    let first = &groups[0];
                    let got = first
                        .iter()
                        .find(|b| b.path == r.node_field_path && b.keyword == Keyword::MaxLength);
                    assert!(
                        got.is_some_and(|b| b.safe
                            && b.value >= n
                            && (b.value == n || b.value == (n as u64).next_power_of_two() as i64)),
                        "{what}: the regex `{re}` accepts at most {n} characters; first suggestion {first:?}"
                    );
                    c.regex_first += 1;
                }
            }
            for group in groups {
                c.alternatives_checked += 1;
                if group.len() > 1 {
                    c.combined += 1;
                }
                let after_claimed = group[0].cost_after;
                assert!(
                    group.iter().all(|b| b.cost_after == after_claimed),
                    "{what}: one group, one costAfter"
                );
                for b in &group {
                    assert!(
                        ["maxItems", "maxProperties", "maxLength"].contains(&b.keyword.name()),
                        "{what}: keyword {}",
                        b.keyword
                    );
                    assert!(
                        b.value >= 1 || b.keyword == Keyword::MaxLength,
                        "{what}: {b:?}"
                    );
                    if let Some(cur) = b.current {
                        assert!(b.value < cur, "{what}: lowering {cur} to {}", b.value);
                    }
                    assert!(
                        b.marker.starts_with("+kubebuilder:validation:")
                            && b.marker.ends_with(&format!("={}", b.value)),
                        "{what}: marker {}",
                        b.marker
                    );
                }
                let mut copy = object.clone();
                for b in &group {
                    apply(&mut copy, b, &s.versions);
                }
                let after = estimator.estimate(&copy, source).expect("a report");
                assert!(after.stopped.is_none(), "{what}: the estimate stopped");
                for e in &after.errors {
                    assert!(
                        is_cost_error(e) || before.errors.contains(e),
                        "{what}: the bounds {group:?} bring a new error: {e}"
                    );
                }
                let now = &after.schemas[si];
                assert_eq!(now.schema_field_path, s.schema_field_path, "{what}");
                let got = match ri {
                    Some(ri) => {
                        let r = &s.rules[ri];
                        let x = now
                            .rules
                            .iter()
                            .find(|x| x.rule_field_path == r.rule_field_path)
                            .unwrap_or_else(|| panic!("{what}: the rule is gone"));
                        assert!(!x.exceeds_cost_limit, "{what}: still over the limit");
                        judged(x)
                    }
                    None => {
                        assert!(!now.exceeds_total_limit, "{what}: still over the limit");
                        now.total_cost
                    }
                };
                assert_eq!(got, after_claimed, "{what}: costAfter is not the estimate");
                assert!(
                    settings.fits(got, limit) && got < cost,
                    "{what}: {cost} → {got} does not fit"
                );
            }
        }
    }
    // Every finding's first alternative together (where two set the same bound, the lower
    // value): accepted, everything below the threshold.
    if any && all_fixable {
        let mut copy = object.clone();
        for s in &report.schemas {
            let mut wanted: BTreeMap<(String, String), Suggestion> = BTreeMap::new();
            let firsts = s
                .rules
                .iter()
                .map(|r| &r.suggestions)
                .chain(std::iter::once(&s.suggestions))
                .filter_map(|v| suggestion_groups(v).into_iter().next());
            for g in firsts {
                for b in g {
                    let w = wanted
                        .entry((b.path.clone(), b.keyword.name().to_string()))
                        .or_insert_with(|| b.clone());
                    w.value = w.value.min(b.value);
                }
            }
            for b in wanted.values() {
                apply(&mut copy, b, &s.versions);
            }
        }
        let after = estimator.estimate(&copy, source).expect("a report");
        let only_costs = before.errors.iter().all(|e| is_cost_error(e));
        if only_costs {
            assert!(after.valid, "{source}: not accepted: {:?}", after.errors);
        }
        for s in &after.schemas {
            assert!(
                settings.fits(s.total_cost, PER_SCHEMA_COST_LIMIT),
                "{source}: total of {} {}",
                s.schema_field_path,
                s.total_cost
            );
            for r in &s.rules {
                assert!(
                    settings.fits(judged(r), PER_RULE_COST_LIMIT),
                    "{source}: {} {}",
                    r.rule_field_path,
                    judged(r)
                );
            }
        }
        c.objects_fixed += 1;
    }
}

fn run(files: &[PathBuf], base: &Path, percent: f64) -> Counts {
    let estimator = Estimator::default();
    let settings = Settings::new(percent);
    let mut c = Counts::default();
    for file in files {
        let rel = file
            .strip_prefix(base)
            .unwrap_or(file)
            .display()
            .to_string();
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for doc in parse_documents(&text) {
            let Ok(v) = doc.value else { continue };
            for o in objects_of(&format!("{rel}#{}", doc.index), v) {
                check_object(&estimator, &settings, &o.value, &o.source, &mut c);
            }
        }
    }
    println!(
        "near budget at {percent}%: {} rules and {} totals got suggestions ({} alternatives verified, {} of several bounds); {} rules and {} totals: no bound helps; {} objects fixed whole",
        c.rules_suggested,
        c.totals_suggested,
        c.alternatives_checked,
        c.combined,
        c.rules_none,
        c.totals_none,
        c.objects_fixed
    );
    for (why, n) in &c.reasons {
        println!("  no bound helps, {n}: {why}");
    }
    println!(
        "  alternatives: {} safe, {} adding a bound, {} lowering one; rules `matches(self, RE)` on an unbounded string with a finite longest match: {}, with that bound first: {}",
        c.safe, c.additions, c.lowerings, c.regex_rules, c.regex_first
    );
    c
}

#[test]
fn examples_get_verified_suggestions() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    files_under(&root.join("examples/crds"), &mut files);
    files_under(&root.join("examples/rejected"), &mut files);
    assert!(!files.is_empty());
    let c = run(&files, root, 80.0);
    // The rejected example (an unbounded list of unbounded strings) needs its rule and its total
    // fixed; the near-budget widget rule too.
    assert!(c.rules_suggested >= 2, "{}", c.rules_suggested);
    assert!(c.totals_suggested >= 1, "{}", c.totals_suggested);
    assert!(c.objects_fixed >= 2);
    // A lower threshold: more findings, all checked the same way.
    let low = run(&files, root, 20.0);
    assert!(low.rules_suggested + low.rules_none >= c.rules_suggested + c.rules_none);
}

#[test]
fn corpus_findings_get_verified_suggestions_or_a_reason() {
    let Some(corpus) = corpus_dir() else {
        if std::env::var("CELCOST_REQUIRE_CORPUS").is_ok() {
            panic!("../shared/corpus not found beside the checkout (set CELCOST_CORPUS)");
        }
        eprintln!("SKIPPED: ../shared/corpus not found beside the checkout (set CELCOST_CORPUS)");
        return;
    };
    let mut files = Vec::new();
    for sub in ["crds", "fixtures"] {
        files_under(&corpus.join(sub), &mut files);
    }
    let c = run(&files, &corpus, 80.0);
    let findings = c.rules_suggested + c.totals_suggested + c.rules_none + c.totals_none;
    assert!(findings > 0, "the corpus has rules near or over budget");
    assert!(c.alternatives_checked >= c.rules_suggested + c.totals_suggested);
    // At 30%, many more findings, the harder ones among them.
    let low = run(&files, &corpus, 30.0);
    assert!(
        low.rules_suggested + low.totals_suggested + low.rules_none + low.totals_none > findings
    );
}

/// Every string node of the corpus without `maxLength` whose rule is `matches(self, RE)` /
/// `self.matches(RE)` with a finite longest match, placed as published (its whole schema: type,
/// pattern, enum, format, rules) in a list of 64 — the shape of the gateway CRDs that Kubernetes
/// 1.37 refused — gets that length (or its round figure) as its first suggestion on 1.37, safe.
#[test]
fn corpus_regex_rules_on_unbounded_strings_get_their_implied_bound_first() {
    let Some(corpus) = corpus_dir() else {
        if std::env::var("CELCOST_REQUIRE_CORPUS").is_ok() {
            panic!("../shared/corpus not found beside the checkout (set CELCOST_CORPUS)");
        }
        eprintln!("SKIPPED: ../shared/corpus not found beside the checkout (set CELCOST_CORPUS)");
        return;
    };
    fn walk(v: &Value, out: &mut Vec<(Value, String, u64)>) {
        match v {
            Value::Object(m) => {
                if m.get("type").and_then(Value::as_str) == Some("string")
                    && m.get("maxLength").is_none()
                    && let Some(rules) = m.get("x-kubernetes-validations").and_then(Value::as_array)
                {
                    for r in rules {
                        if let Some(re) =
                            r.get("rule").and_then(Value::as_str).and_then(matches_self)
                            && let Some(n) = celcost::goregexp::longest_match(&re)
                        {
                            out.push((v.clone(), re, n));
                        }
                    }
                }
                for x in m.values() {
                    walk(x, out);
                }
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut files = Vec::new();
    files_under(&corpus.join("crds"), &mut files);
    let mut nodes = Vec::new();
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        for d in parse_documents(&text) {
            if let Ok(v) = d.value {
                walk(&v, &mut nodes);
            }
        }
    }
    let estimator = Estimator::new(celcost::cel::version::Version::new(1, 37));
    let settings = Settings::default();
    let (mut rules, mut first) = (0, 0);
    for (node, re, n) in &nodes {
        let crd = serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "things.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "things", "kind": "Thing"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                        "type": "object", "properties": {"items": {
                            "type": "array", "maxItems": 64,
                            "items": {"type": "object", "properties": {"value": node}}}}}}}}}]}
        });
        let Some(report) = estimator.estimate(&crd, "t") else {
            continue;
        };
        let report = suggest(&estimator, &crd, report, &settings);
        let Some(rule) = report.schemas[0]
            .rules
            .iter()
            .find(|r| matches_self(&r.rule).as_deref() == Some(re.as_str()))
        else {
            continue;
        };
        if settings.fits(judged(rule), PER_RULE_COST_LIMIT) {
            continue; // cheap enough without a bound (a short regex on 1.36's cost rules)
        }
        rules += 1;
        let groups = suggestion_groups(&rule.suggestions);
        let n = *n as i64;
        let round = if n == 63 || n == 253 {
            n
        } else {
            (n.max(1) as u64).next_power_of_two() as i64
        };
        let ok = groups.first().is_some_and(|g| {
            g.iter().any(|b| {
                b.keyword == Keyword::MaxLength
                    && b.schema_path == "^.spec.items[*].value"
                    && b.safe
                    && (b.value == round || b.value == n)
            })
        });
        assert!(
            ok,
            "`{re}` (at most {n} characters): first suggestion {:?}, or {:?}",
            groups.first(),
            rule.no_suggestion
        );
        first += 1;
    }
    println!(
        "rules `matches(self, RE)` with a finite longest match on strings without maxLength: {} in the corpus, {rules} over the threshold in a list of 64 on 1.37, {first} with that bound first",
        nodes.len()
    );
    assert!(rules > 0, "the corpus has such rules");
}
