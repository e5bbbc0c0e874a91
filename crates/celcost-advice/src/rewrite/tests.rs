//! One positive case per pattern (offered, cheaper, the numbers the estimator gives the
//! rewritten CRD), and a near miss the equivalence check must catch.

use serde_json::{Value, json};

use super::check::{self, Subject, Verdict};
use super::site::{NodePath, Site};
use super::*;
use celcost_core::cel::parse::parse_unexpanded;
use celcost_core::estimate::Estimator;

/// A CRD whose `spec.f` is `node`.
fn crd(node: Value) -> Value {
    celcost_core::fixtures::widgets(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"f": node}}}
    }))
}

fn with_rule(mut node: Value, rule: &str) -> Value {
    node["x-kubernetes-validations"] = json!([{"rule": rule}]);
    node
}

/// The report of `spec.f` carrying `rule`, with its rewrites.
fn rule_report(node: Value, rule: &str) -> RuleReport {
    let e = Estimator::default();
    let c = crd(with_rule(node, rule));
    let mut report = e.estimate_crd(&c, "test");
    assert_eq!(report.schemas[0].rules[0].compile_error, None, "{rule}");
    offer_rewrites(&e, &c, &mut report);
    report.schemas[0].rules[0].clone()
}

/// The cost the estimator gives `rule` at `spec.f`: (per call, × cardinality).
fn cost_of(node: Value, rule: &str) -> (u64, u64) {
    let e = Estimator::default();
    let report = e.estimate_crd(&crd(with_rule(node, rule)), "test");
    let r = &report.schemas[0].rules[0];
    assert_eq!(r.compile_error, None, "{rule}");
    (r.max_cost, r.cost)
}

/// The one rewrite offered, checked against an estimate of the rewritten CRD.
fn offered(node: Value, rule: &str, pattern: &str, expected: &str) -> Rewrite {
    let r = rule_report(node.clone(), rule);
    let [rw] = r.rewrites.as_slice() else {
        panic!("one rewrite of {rule}: {:?}", r.rewrites);
    };
    assert_eq!(rw.pattern, pattern);
    assert_eq!(rw.rule, expected);
    assert_eq!(rw.checked_cases, 200);
    assert_eq!((rw.max_cost_before, rw.cost_before), (r.max_cost, r.cost));
    assert!(rw.cost_after < rw.cost_before);
    if rw.schema_change.is_none() {
        assert_eq!(cost_of(node, expected), (rw.max_cost_after, rw.cost_after));
    }
    rw.clone()
}

/// The check of `candidate` as a rewrite of `rule` at `spec.f`.
fn verdict(node: Value, rule: &str, candidate: &str) -> Verdict {
    let e = Estimator::default();
    let env = e.env();
    let c = crd(with_rule(node, rule));
    let path = NodePath::parse("spec.validation.openAPIV3Schema.properties[spec].properties[f]")
        .expect("path");
    let root = Schema::from_json(path.roots(&c)[0], "x").expect("schema");
    let site = Site::locate(env, &root, &path).expect("site");
    let interp = Interpreter::new(env.parser);
    let subject = Subject {
        interpreter: &interp,
        schema: &site.node,
        decl: &site.decl,
        uses_old_self: rule.contains("oldSelf"),
        cases: 200,
        seed: 1,
    };
    let a = parse_unexpanded(rule, env.parser).expect("parses").expr;
    let b = parse_unexpanded(candidate, env.parser)
        .expect("parses")
        .expr;
    check::same_results(&subject, (rule, &a), (candidate, &b))
}

fn strings() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

fn objects(required: &[&str]) -> Value {
    json!({"type": "array", "items": {
        "type": "object",
        "required": required,
        "properties": {
            "name": {"type": "string", "maxLength": 63},
            "type": {"type": "string", "maxLength": 63},
            "n": {"type": "integer"},
            "value": {"type": "string", "maxLength": 63}
        }
    }})
}

fn different(v: Verdict) {
    assert!(matches!(v, Verdict::Different { .. }), "{v:?}");
}

/// A near miss: `rule` gets no rewrite, and the check tells `wrong` from it.
fn not_offered(node: Value, rule: &str, wrong: &str) {
    assert_eq!(rule_report(node.clone(), rule).rewrites, vec![], "{rule}");
    different(verdict(node, rule, wrong));
}

#[test]
fn filter_size_to_exists() {
    let rw = offered(
        strings(),
        "self.filter(x, x == 'b').size() > 0",
        "filter-size-to-exists",
        "self.exists(x, x == 'b')",
    );
    assert_eq!((rw.cost_before, rw.cost_after), (15_728_639, 6_291_452));
    offered(
        strings(),
        "size(self.filter(x, x.startsWith('b'))) == 0",
        "filter-size-to-exists",
        "!self.exists(x, x.startsWith('b'))",
    );
    // Near miss: `x.type` is absent on some items. `filter` fails there, `exists` is true when
    // another item matches: not offered.
    not_offered(
        objects(&[]),
        "self.filter(x, x.type == 'b').size() > 0",
        "self.exists(x, x.type == 'b')",
    );
}

#[test]
fn filter_size_to_exists_one() {
    let rw = offered(
        objects(&["type"]),
        "self.filter(x, x.type == 'b').size() == 1",
        "filter-size-to-exists-one",
        "self.exists_one(x, x.type == 'b')",
    );
    assert!(rw.max_cost_after < rw.max_cost_before);
    // Near miss: `exists_one` for "at most one".
    different(verdict(
        objects(&["type"]),
        "self.filter(x, x.type == 'b').size() <= 1",
        "self.exists_one(x, x.type == 'b')",
    ));
}

#[test]
fn filter_size_at_most_one() {
    offered(
        objects(&["type"]),
        "self.filter(f, f.type == 'A').size() <= 1",
        "filter-size-at-most-one",
        "!self.exists(f, f.type == 'A') || self.exists_one(f, f.type == 'A')",
    );
    // Equivalent even where the filter can fail (both fail).
    assert!(matches!(
        verdict(
            objects(&[]),
            "self.filter(f, f.type == 'A').size() <= 1",
            "!self.exists(f, f.type == 'A') || self.exists_one(f, f.type == 'A')",
        ),
        Verdict::Equivalent { cases: 200 }
    ));
    // Near miss: "none" forgotten.
    different(verdict(
        objects(&["type"]),
        "self.filter(f, f.type == 'A').size() <= 1",
        "!self.exists(f, f.type == 'A')",
    ));
}

#[test]
fn map_then_quantifier() {
    offered(
        objects(&["n"]),
        "self.map(x, x.n).exists(y, y > 5)",
        "map-then-quantifier",
        "self.exists(x, x.n > 5)",
    );
    offered(
        objects(&["name"]),
        "'a' in self.map(x, x.name)",
        "map-then-quantifier",
        "self.exists(x, x.name == 'a')",
    );
    // Near miss: `n` is optional; `map` fails on an item without it, `exists` does not when
    // another item is over 5.
    not_offered(
        objects(&[]),
        "self.map(x, x.n).exists(y, y > 5)",
        "self.exists(x, x.n > 5)",
    );
}

#[test]
fn regex_alternatives_to_in() {
    let s = json!({"type": "string"});
    let rw = offered(
        s.clone(),
        "self.matches('^(Linux|LVM|NTFS)$')",
        "regex-alternatives-to-in",
        "self in ['Linux', 'LVM', 'NTFS']",
    );
    assert!(rw.cost_after * 100 < rw.cost_before);
    offered(
        s.clone(),
        "self.matches('^(Linux|LinuxSwap|LinuxRAID|LVM|Fat32|NTFS|[0-9A-Fa-f]{8}(-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12})$')",
        "regex-alternatives-to-in",
        "self in ['Linux', 'LinuxSwap', 'LinuxRAID', 'LVM', 'Fat32', 'NTFS'] || self.matches('^(?:[0-9A-Fa-f]{8}(-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12})$')",
    );
    // Near miss: not anchored at the end (`Linuxx` matches): the pattern does not apply, and
    // the check catches the rewrite.
    not_offered(
        s,
        "self.matches('^(Linux|LVM)')",
        "self in ['Linux', 'LVM']",
    );
}

#[test]
fn keys_not_in_literals() {
    let m = json!({"type": "object", "additionalProperties": {"type": "string"}});
    let rw = offered(
        m.clone(),
        "self.all(x, !(x in ['cpu', 'memory', 'pods']))",
        "keys-not-in-literals-to-lookups",
        "!('cpu' in self) && !('memory' in self) && !('pods' in self)",
    );
    assert!(rw.max_cost_after < 20);
    // Near miss: "one of them is no key" is not "none is a key".
    different(verdict(
        m,
        "self.all(x, !(x in ['cpu', 'memory']))",
        "!('cpu' in self) || !('memory' in self)",
    ));
}

#[test]
fn bool_list_count() {
    let node = json!({"type": "object", "properties": {
        "a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}}});
    // A rule on the items of a list, so that the cardinality makes the saving count.
    let list = json!({"type": "array", "items": with_rule(node.clone(),
        "[has(self.a), has(self.b), has(self.c)].filter(x, x == true).size() == 1")});
    let e = Estimator::default();
    let c = crd(list);
    let mut report = e.estimate_crd(&c, "test");
    offer_rewrites(&e, &c, &mut report);
    let r = &report.schemas[0].rules[0];
    let [rw] = r.rewrites.as_slice() else {
        panic!("{:?}", r.rewrites)
    };
    assert_eq!(rw.pattern, "bool-list-count-to-sum");
    assert_eq!(
        rw.rule,
        "(has(self.a) ? 1 : 0) + (has(self.b) ? 1 : 0) + (has(self.c) ? 1 : 0) == 1"
    );
    assert!(rw.cost_after < rw.cost_before);
    // Near miss: "at least one" for "exactly one".
    different(verdict(
        node,
        "[has(self.a), has(self.b)].filter(x, x == true).size() == 1",
        "has(self.a) || has(self.b)",
    ));
}

#[test]
fn uniqueness_to_list_type() {
    let rw = offered(
        objects(&["name"]),
        "self.all(x, self.exists_one(y, x.name == y.name))",
        "uniqueness-to-list-type",
        "",
    );
    assert_eq!(rw.cost_after, 0);
    assert_eq!(
        rw.schema_change.as_deref(),
        Some(
            "set x-kubernetes-list-type: map and x-kubernetes-list-map-keys: [name] on ^.spec.f (server-side apply merges the list by key instead of replacing it), and remove this rule: the API server rejects duplicate keys itself"
        )
    );
    let rw = offered(
        strings(),
        "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0",
        "uniqueness-to-list-type",
        "",
    );
    assert!(
        rw.schema_change
            .as_deref()
            .is_some_and(|c| c.starts_with("set x-kubernetes-list-type: set"))
    );
    // Near misses: an optional key (a list map's keys must be required or defaulted), and a
    // rule that is not the uniqueness of its keys.
    assert_eq!(
        rule_report(
            objects(&[]),
            "self.all(x, self.exists_one(y, x.name == y.name))"
        )
        .rewrites,
        vec![]
    );
    assert_eq!(
        rule_report(
            objects(&["name", "type"]),
            "self.all(x, x.type != 'a' || self.exists_one(y, x.name == y.name))"
        )
        .rewrites,
        vec![]
    );
}

#[test]
fn uniqueness_already_enforced() {
    let mut list = objects(&["name"]);
    list["x-kubernetes-list-type"] = json!("map");
    list["x-kubernetes-list-map-keys"] = json!(["name"]);
    let rw = offered(
        list,
        "self.all(x, self.exists_one(y, x.name == y.name))",
        "uniqueness-already-enforced",
        "",
    );
    assert_eq!(
        rw.schema_change.as_deref(),
        Some("remove this rule: the x-kubernetes-list-type of ^.spec.f already rejects duplicates")
    );
    // Keys that do not imply the rule: a change of keys, not "already enforced".
    let mut list = objects(&["name", "value"]);
    list["x-kubernetes-list-type"] = json!("map");
    list["x-kubernetes-list-map-keys"] = json!(["name", "value"]);
    let r = rule_report(list, "self.all(x, self.exists_one(y, x.name == y.name))");
    assert_eq!(r.rewrites.len(), 1);
    assert_eq!(r.rewrites[0].pattern, "uniqueness-to-list-type");
    assert!(
        r.rewrites[0]
            .schema_change
            .as_deref()
            .is_some_and(|c| c.contains("was map with keys [name, value]"))
    );
}

#[test]
fn functions_the_interpreter_lacks_are_not_rewritten() {
    // `isQuantity` is a Kubernetes function the interpreter does not have: no check, no
    // rewrite.
    assert_eq!(
        rule_report(strings(), "self.filter(x, isQuantity(x)).size() > 0").rewrites,
        vec![]
    );
    // `isURL` it evaluates as the API server does (Go's `net/url`): checked, rewritten.
    let r = rule_report(strings(), "self.filter(x, isURL(x)).size() > 0");
    assert_eq!(r.rewrites.len(), 1);
    assert_eq!(r.rewrites[0].rule, "self.exists(x, isURL(x))");
}

#[test]
fn transition_rules_are_checked_with_old_self() {
    offered(
        strings(),
        "self == oldSelf || self.filter(x, x == 'b').size() == 0",
        "filter-size-to-exists",
        "self == oldSelf || !self.exists(x, x == 'b')",
    );
}

#[test]
fn one_line_for_other_outputs() {
    let r = rule_report(strings(), "self.filter(x, x == 'b').size() > 0");
    assert_eq!(
        rewrite_text(&r).as_deref(),
        Some(
            "`self.exists(x, x == 'b')` costs 6,291,452 instead of 15,728,639 (filter-size-to-exists, equivalent on 200 generated values)"
        )
    );
    assert_eq!(rewrite_text(&RuleReport::default()), None);
    let s = celcost_core::report::SchemaReport {
        rules: vec![r.clone(), RuleReport::default(), r],
        ..Default::default()
    };
    assert_eq!(
        schema_rewrites_text(&s).as_deref(),
        Some("2 rules have cheaper forms that save 18,874,374 of the total (see the rules)")
    );
    assert_eq!(
        schema_rewrites_text(&celcost_core::report::SchemaReport::default()),
        None
    );
}

#[test]
fn hostile_rules_stay_bounded() {
    // Deeply nested comprehensions over an unbounded list: generation shrinks, the budget
    // bounds the rest; whatever happens, the estimate's numbers stay and nothing hangs.
    let rule = "self.all(a, self.all(b, self.all(c, self.all(d, self.all(e, self.all(f, self.filter(g, g == a + b + c + d + e + f).size() > 0))))))";
    let r = rule_report(strings(), rule);
    assert!(r.rewrites.len() <= 1);
}

#[test]
fn hostile_schemas_stay_bounded() {
    let rule = "self.filter(x, x == 'b').size() > 0";
    let timed = |node: Value, rule: &str| {
        let t = std::time::Instant::now();
        let r = rule_report(node, rule);
        let took = t.elapsed();
        assert!(took.as_secs() < 30, "{rule}: {took:?}");
        r
    };
    // Strings that must be a billion characters long, lists of a billion items: no values are
    // generated, so nothing is checked and nothing offered.
    let long = json!({"type": "array", "items": {"type": "string", "minLength": 1_000_000_000}});
    assert_eq!(timed(long, rule).rewrites, vec![]);
    let many = json!({"type": "array", "minItems": 1_000_000_000, "items": {"type": "string"}});
    assert_eq!(timed(many, rule).rewrites, vec![]);
    // Required objects nested 100 deep in every item: too deep to generate.
    let mut deep = json!({"type": "string"});
    for _ in 0..100 {
        deep = json!({"type": "object", "required": ["a"], "properties": {"a": deep}});
    }
    let deep = json!({"type": "array", "items": deep});
    assert_eq!(
        timed(deep, "self.filter(x, has(x.a)).size() > 0").rewrites,
        vec![]
    );
    // 3,000 required fields in every item: the work budget stops the check.
    let props: serde_json::Map<String, Value> = (0..3000)
        .map(|i| (format!("f{i}"), json!({"type": "string", "maxLength": 10})))
        .collect();
    let required: Vec<String> = (0..3000).map(|i| format!("f{i}")).collect();
    let wide = json!({"type": "array", "items": {
        "type": "object", "required": required, "properties": props
    }});
    timed(wide, "self.filter(x, x.f1 == 'b').size() > 0");
    // A large regex (and one that makes backtracking engines blow up) among literal
    // alternatives: Go's regexps (linear time), compiled once, matched on short strings.
    let regex = json!({"type": "string", "maxLength": 2000});
    let r = timed(
        regex,
        "self.matches('^(aa|bb|(a|aa)*c|[a-z]{1000}[0-9]{1000})$')",
    );
    assert!(r.rewrites.iter().all(|rw| rw.cost_after < rw.cost_before));
}
