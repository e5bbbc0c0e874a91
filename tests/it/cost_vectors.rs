//! The test vectors of `shared/docs/cel-cost-model.md` §13 (from upstream's
//! `compilation_test.go` `TestCostEstimation`, `celcoststability_test.go`, `cost_test.go`,
//! `validation_test.go` `TestCostInfo`, all confirmed against Kubernetes v1.36.2), each run as a
//! rule on `spec` of a minimal CRD, the way the API server compiles it.

use celcost::Estimator;
use celcost::report::RuleReport;
use serde_json::{Value, json};

/// A CRD whose `spec` has the given schema; `rules` are attached to `spec`.
fn crd(spec: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "vectors.test.example.com"},
        "spec": {
            "group": "test.example.com",
            "scope": "Namespaced",
            "names": {"plural": "vectors", "kind": "Vector"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}]
        }
    })
}

fn rules_of(crd: &Value) -> Vec<RuleReport> {
    let r = Estimator::default().estimate(crd, "test").expect("a CRD");
    r.schemas.into_iter().flat_map(|s| s.rules).collect()
}

/// MaxCost of `rule` on a `spec` node with schema `spec`.
fn max_cost(mut spec: Value, rule: &str) -> u64 {
    spec["x-kubernetes-validations"] = json!([{"rule": rule}]);
    let rules = rules_of(&crd(spec));
    let r = rules.iter().find(|r| r.path == "^.spec").expect("the rule");
    assert_eq!(r.compile_error, None, "`{rule}` should compile");
    r.max_cost
}

fn string(max: Option<i64>) -> Value {
    match max {
        Some(m) => json!({"type": "string", "maxLength": m}),
        None => json!({"type": "string"}),
    }
}

fn array(items: Value, max: Option<i64>) -> Value {
    let mut a = json!({"type": "array", "items": items});
    if let Some(m) = max {
        a["maxItems"] = json!(m);
    }
    a
}

fn map(values: Value, max: Option<i64>) -> Value {
    let mut m = json!({"type": "object", "additionalProperties": values});
    if let Some(x) = max {
        m["maxProperties"] = json!(x);
    }
    m
}

fn object(props: Value) -> Value {
    json!({"type": "object", "properties": props})
}

#[test]
fn lists_and_maps_with_all() {
    // #1–#10: `self.all(x, true)` = 3n + 2 over the (estimated) number of items.
    let num = json!({"type": "number"});
    assert_eq!(
        max_cost(array(num.clone(), None), "self.all(x, true)"),
        4_718_591
    );
    assert_eq!(
        max_cost(array(num.clone(), Some(10)), "self.all(x, true)"),
        32
    );
    assert_eq!(
        max_cost(array(string(None), None), "self.all(x, true)"),
        3_145_727
    );
    assert_eq!(
        max_cost(array(string(None), Some(20)), "self.all(x, true)"),
        62
    );
    assert_eq!(
        max_cost(array(json!({"type": "boolean"}), None), "self.all(x, true)"),
        1_887_437
    );
    assert_eq!(
        max_cost(array(array(num.clone(), None), None), "self.all(x, true)"),
        3_145_727
    );
    let item = json!({"type": "object", "required": ["required"], "properties": {"required": {"type": "string"}, "optional": {"type": "string"}}});
    assert_eq!(
        max_cost(array(item.clone(), None), "self.all(x, true)"),
        555_128
    );
    assert_eq!(max_cost(array(item, Some(50)), "self.all(x, true)"), 152);
    assert_eq!(
        max_cost(map(num.clone(), None), "self.all(x, true)"),
        1_348_169
    );
    assert_eq!(
        max_cost(map(string(None), None), "self.all(x, true)"),
        1_179_647
    );
    assert_eq!(
        max_cost(
            map(json!({"type": "boolean"}), Some(100)),
            "self.all(x, true)"
        ),
        302
    );
    let fmt = |f: &str| json!({"type": "string", "format": f});
    assert_eq!(
        max_cost(map(fmt("date"), None), "self.all(x, true)"),
        524_288
    );
    assert_eq!(
        max_cost(map(fmt("date-time"), None), "self.all(x, true)"),
        349_526
    );
    assert_eq!(
        max_cost(map(fmt("duration"), None), "self.all(x, true)"),
        1_048_577
    );
    assert_eq!(
        max_cost(array(fmt("date"), None), "self.all(x, true)"),
        725_936
    );
    assert_eq!(
        max_cost(array(fmt("date-time"), None), "self.all(x, true)"),
        428_963
    );
    assert_eq!(
        max_cost(array(fmt("duration"), None), "self.all(x, true)"),
        2_359_295
    );
    assert_eq!(
        max_cost(array(num, Some(10)), "self.all(x, self.all(y, true))"),
        352
    );
}

#[test]
fn strings() {
    assert_eq!(max_cost(string(None), "self.contains('test')"), 314_574);
    assert_eq!(max_cost(string(Some(10)), "self.contains('test')"), 5);
    assert_eq!(max_cost(string(Some(3)), "self.startsWith('test')"), 2);
    assert_eq!(
        max_cost(string(None), "size(self + \"hello\") > size(\"hello\")"),
        314_578
    );
    assert_eq!(
        max_cost(string(Some(4)), "size(self + \"hello\") > size(\"hello\")"),
        7
    );
    assert_eq!(max_cost(string(None), "self.matches(\"x\")"), 314_574);
    assert_eq!(max_cost(string(Some(50)), "self.matches(\"x\")"), 22);
    assert_eq!(
        max_cost(string(None), "\"\".matches(\"(((((((((())))))))))[0-9]\")"),
        7
    );
    assert_eq!(max_cost(string(None), "self.matches(\"\")"), 1);
    assert_eq!(max_cost(string(None), "self == \"x\""), 2);
    assert_eq!(max_cost(string(Some(0)), "self == \"x\""), 1);
    assert_eq!(max_cost(string(None), "self.find('[0-9]+') == ''"), 629_147);
    assert_eq!(max_cost(string(Some(10)), "self.find('[0-9]+') == ''"), 11);
    assert_eq!(
        max_cost(string(None), "self.lowerAscii() == 'lower!'"),
        314_575
    );
    let e = json!({"type": "string", "enum": ["A", "B", "C", "LongValue"]});
    assert_eq!(max_cost(e, "self.contains('A')"), 2);
    let ios = json!({"x-kubernetes-int-or-string": true, "maxLength": 20});
    assert_eq!(max_cost(ios, "isQuantity(self)"), 9);
    let bytes = json!({"type": "string", "format": "byte"});
    assert_eq!(max_cost(bytes, "self == b\"x\""), 2);
}

#[test]
fn objects_and_composition() {
    let two = object(json!({"val1": string(None), "val2": string(None)}));
    assert_eq!(
        max_cost(two.clone(), "self.val1.matches('^[^0-9]*$')"),
        943_721
    );
    assert_eq!(
        max_cost(two.clone(), "!self.val1.matches('^[0-9]*$')"),
        629_149
    );
    assert_eq!(
        max_cost(two.clone(), "self.val1.indexOf('o') == 1"),
        314_576
    );
    assert_eq!(max_cost(two.clone(), "self.val1.charAt(3) == 'k'"), 4);
    assert_eq!(
        max_cost(two.clone(), "self.val1.substring(4, 10).trim() == 'takes'"),
        629_149
    );
    assert_eq!(
        max_cost(
            two.clone(),
            "self.val1.split(' ') == ['Rook', 'takes', '👑']"
        ),
        629_159
    );
    assert_eq!(
        max_cost(
            two.clone(),
            "quantity(self.val1).isLessThan(quantity(self.val2))"
        ),
        629_151
    );
    assert_eq!(
        max_cost(
            two,
            "quantity(\"200M\") == quantity(\"0.2G\") && quantity(\"0.2G\") == quantity(\"200M\")"
        ),
        6
    );
    let lists = object(
        json!({"val1": array(json!({"type": "integer"}), None), "val2": array(json!({"type": "integer"}), None)}),
    );
    assert_eq!(max_cost(lists.clone(), "1 in self.val1"), 1_572_865);
    assert_eq!(
        max_cost(lists.clone(), "self.val1.exists_one(k, self.val1 == [2])"),
        23_592_949
    );
    assert_eq!(
        max_cost(lists, "size(self.val1.filter(k, size(self.val1) > 1)) == 1"),
        26_738_686
    );
    let maps = object(json!({"val1": map(string(None), None), "val2": map(string(None), None)}));
    assert_eq!(max_cost(maps.clone(), "self.val1 == self.val2"), 39_326);
    assert_eq!(
        max_cost(maps.clone(), "self.val1 == {'k1': 'a', 'k2': 'b'}"),
        33
    );
    assert_eq!(max_cost(maps, "'k1' in self.val1"), 3);
    let list_map = object(json!({"listMap": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
        "items": {"type": "object", "properties": {"k": {"type": "string", "default": "x"}, "v": string(None), "v2": string(None)}}
    }}));
    assert_eq!(
        max_cost(
            list_map.clone(),
            "self.listMap.map(m, m.v).exists(v, v == 'b1')"
        ),
        19_922_939
    );
    assert_eq!(
        max_cost(
            list_map,
            "self.listMap.filter(m, has(m.v2) && m.v2 == 'z').map(m, m.v2).size() == 1"
        ),
        32_505_851
    );
    assert_eq!(
        max_cost(object(json!({})), "type(self) == type(self)"),
        1_844_674_407_370_955_268
    );
}

#[test]
fn go_slice_aliasing_and_root_path_quirks() {
    // H-1/H-2: the iteration path of `x` has a spare slot that `x.name` overwrites.
    let inner = json!({"type": "array", "maxItems": 5, "items": {"type": "object", "properties": {
        "name": string(Some(10)),
        "items": array(string(Some(3)), Some(7))}}});
    let h1 = object(json!({"l": inner.clone()}));
    assert_eq!(
        max_cost(h1.clone(), "self.l.all(x, x.items.all(y, x.name == 'a'))"),
        1_233
    );
    assert_eq!(
        max_cost(h1, "self.l.all(x, x.name == 'a' && x.items.all(y, true))"),
        153
    );
    let h2 = object(json!({"a": object(json!({"l": inner}))}));
    assert_eq!(
        max_cost(h2, "self.a.l.all(x, x.items.all(y, x.name == 'a'))"),
        244
    );
    // H-6: iteration variables over literals are sized as the rule node.
    assert_eq!(
        max_cost(string(Some(256)), "['a','b'].exists(x, x == self)"),
        229
    );
    assert_eq!(
        max_cost(string(Some(256)), "['a','b'].all(x, self.contains(x))"),
        21_239
    );
    // H-7: type identifiers too.
    assert_eq!(
        max_cost(object(json!({"name": string(None)})), "type(self) == int"),
        3
    );
    assert_eq!(max_cost(string(Some(10)), "type(self) == int"), 7);
    // §7.3: keyword field names resolve, but the size lookup uses the literal name.
    let ns = object(json!({"namespace": string(Some(10))}));
    assert_eq!(
        max_cost(ns.clone(), "self.namespace.contains('x')"),
        1_844_674_407_370_955_266
    );
    assert_eq!(max_cost(ns, "self.__namespace__.contains('x')"), 6);
}

#[test]
fn libraries_of_1_34_and_later() {
    let s = object(json!({
        "name": string(Some(63)),
        "tags": array(string(Some(20)), Some(10)),
        "labels": map(string(Some(63)), Some(16)),
    }));
    assert_eq!(max_cost(s.clone(), "self.labels.foo == 'x'"), 4);
    assert_eq!(max_cost(s.clone(), "self.labels['foo'] == 'x'"), 4);
    assert_eq!(
        max_cost(s.clone(), "self.labels.exists(k, k.startsWith('app'))"),
        99
    );
    assert_eq!(max_cost(s.clone(), "self.tags.sort() == self.tags"), 226);
    assert_eq!(max_cost(s.clone(), "self.tags.slice(1, 3).size() == 2"), 17);
    assert_eq!(max_cost(s.clone(), "self.tags.distinct().size() == 2"), 215);
    assert_eq!(max_cost(s.clone(), "lists.range(5).size() == 5"), 18);
    assert_eq!(
        max_cost(s.clone(), "sets.contains(self.tags, ['a', 'b'])"),
        33
    );
    assert_eq!(
        max_cost(s.clone(), "self.tags.all(i, t, i < 5 && t != '')"),
        63
    );
    assert_eq!(
        max_cost(
            s.clone(),
            "optional.of(self.name).optMap(n, n.size()).orValue(0) > 0"
        ),
        23
    );
    assert_eq!(max_cost(s.clone(), "matches(self.name, 'a')"), 3);
    assert_eq!(max_cost(s, "self.name.matches('a')"), 28);
    assert_eq!(
        max_cost(object(json!({})), "sets.equivalent([1, 2, 3], [3, 2, 1])"),
        39
    );
    assert_eq!(
        max_cost(
            object(json!({})),
            "cidr('192.168.0.0/16').containsCIDR(cidr('192.0.0.0/30'))"
        ),
        11
    );
    assert_eq!(
        max_cost(
            object(json!({})),
            "url('https:://kubernetes.io/') == url('http://x.b')"
        ),
        5
    );
    assert_eq!(
        max_cost(
            object(json!({})),
            "format.named(\"dns1123Subdomain\").value().validate(\"my-name\").hasValue()"
        ),
        35
    );
}

#[test]
fn cardinality() {
    // C-1: rules on the items of an unbounded string list fall back to 3 MiB / 3.
    let spec = object(
        json!({"tags": array(json!({"type": "string", "x-kubernetes-validations": [{"rule": "self.size() > 1"}]}), None)}),
    );
    let r = rules_of(&crd(spec));
    assert_eq!(r[0].cardinality_used, 1_048_576);
    assert_eq!(r[0].schema_max_cardinality, None);
    // C-2: map(4) inside an object inside an array(2) → 8.
    let leaf = json!({"type": "string", "maxLength": 5, "x-kubernetes-validations": [{"rule": "self.size() > 1"}]});
    let spec = object(json!({"l": array(object(json!({"m": map(leaf, Some(4))})), Some(2))}));
    let r = rules_of(&crd(spec));
    assert_eq!(r[0].cardinality_used, 8);
    // C-3: overflow saturates.
    let leaf = json!({"type": "string", "maxLength": 5, "x-kubernetes-validations": [{"rule": "self.size() > 1"}]});
    let spec = object(json!({"l": array(array(leaf, Some(100)), Some(i64::MAX))}));
    let r = rules_of(&crd(spec));
    assert_eq!(r[0].cardinality_used, u64::MAX);
    // C-4: an integer property of items of an unbounded list of objects: 3 MiB / 2.
    let spec = object(
        json!({"l": array(object(json!({"n": {"type": "integer", "x-kubernetes-validations": [{"rule": "self > 1"}]}})), None)}),
    );
    let r = rules_of(&crd(spec));
    assert_eq!(r[0].cardinality_used, 1_572_864);
}

#[test]
fn budget_errors_read_like_the_api_server() {
    // §12: the KubeCon talk's list of unbounded strings: 302.8x the budget.
    let re = "a".repeat(112);
    let spec = array(string(Some(256)), None);
    let mut s = spec.clone();
    s["x-kubernetes-validations"] = json!([{"rule": format!("self.all(x, x.matches('{re}'))")}]);
    let report = Estimator::default().estimate(&crd(s), "t").unwrap();
    let r = &report.schemas[0].rules[0];
    assert_eq!(r.max_cost, 3_028_284_602);
    assert!(!report.valid);
    assert!(report.errors.iter().any(|e| e
        == "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"));
    // 9 per item of an unbounded string list is the most the budget allows.
    let mut ok = json!({"type": "string", "x-kubernetes-validations": [{"rule": "self.size() < 3 || true"}]});
    ok["maxLength"] = json!(1);
    let report = Estimator::default()
        .estimate(&crd(object(json!({"l": array(ok, None)}))), "t")
        .unwrap();
    let r = &report.schemas[0].rules[0];
    assert_eq!(r.cost, r.max_cost * 1_048_576);
    assert_eq!(report.valid, r.cost <= 10_000_000);
}
