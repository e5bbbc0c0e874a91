//! The fuzzer: structured generators (CEL expressions from the grammar and the environment's
//! declarations, schemas with random bounds and nesting, policies with variables) and
//! byte-level mutations of corpus files, each case driven through parse → check → estimate →
//! report (JSON, table, markdown). Shared by the fuzz binary (`cargo bench --bench fuzz`) and a
//! short run in `cargo test`.
//!
//! A case fails when the estimator panics (a report stopped with `InternalError`, or a panic
//! anywhere else on the path), when a small generated input goes over the default work budget,
//! or when it takes longer than [`SLOW_CASE`].

// Shared by the test and bench binaries that include this file: `pub` for them, not an API.
#![allow(unreachable_pub)]
#![allow(dead_code)]

use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use celcost::Estimator;
use celcost::cel::decls::{Declarations, Version};
use celcost::cli::{Outcome, Run};
use celcost::output::{json::render_json, markdown::render_markdown, table::render_table};
use celcost::report::StopReason;

/// A case slower than this is a finding (a hang in the making).
pub const SLOW_CASE: Duration = Duration::from_secs(2);

/// SplitMix64: small, fast, and the same sequence for a seed on every platform and version.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// What a case was made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Crd,
    Policy,
    Mutation,
}

/// A failed case.
#[derive(Debug)]
pub struct Finding {
    pub seed: u64,
    pub kind: Kind,
    pub what: String,
    pub input: String,
}

/// The generator's context: the environment's functions, and corpus files to mutate.
pub struct Fuzzer {
    functions: Vec<(String, bool, usize)>,
    corpus: Vec<String>,
    estimator: Estimator,
}

const KINDS: &[Kind] = &[
    Kind::Crd,
    Kind::Crd,
    Kind::Policy,
    Kind::Policy,
    Kind::Mutation,
];

impl Fuzzer {
    /// `corpus`: texts of manifests to mutate (may be empty).
    pub fn new(corpus: Vec<String>) -> Fuzzer {
        let decls = Declarations::for_version(Version::new(1, 35));
        let mut functions: Vec<(String, bool, usize)> = Vec::new();
        for f in decls.functions.values() {
            for o in &f.overloads {
                let args = if o.member {
                    o.args.len().saturating_sub(1)
                } else {
                    o.args.len()
                };
                let e = (f.name.to_string(), o.member, args);
                if !functions.contains(&e) {
                    functions.push(e);
                }
            }
        }
        functions.sort();
        Fuzzer {
            functions,
            corpus,
            estimator: Estimator::default(),
        }
    }

    /// The input of case `seed`.
    pub fn case(&self, seed: u64) -> (Kind, String) {
        let mut r = Rng::new(seed);
        let mut kind = *r.pick(KINDS);
        if kind == Kind::Mutation && self.corpus.is_empty() {
            kind = Kind::Crd;
        }
        let text = match kind {
            Kind::Crd => self.crd(&mut r),
            Kind::Policy => self.policy(&mut r),
            Kind::Mutation => self.mutation(&mut r),
        };
        (kind, text)
    }

    /// Runs case `seed`; a finding if it failed.
    pub fn run(&self, seed: u64) -> Option<Finding> {
        let (kind, input) = self.case(seed);
        let started = Instant::now();
        let result = catch_unwind(AssertUnwindSafe(|| {
            let mut o = Outcome::default();
            Run::new(&self.estimator).text("fuzz.yaml", &input, &mut o);
            let _ = render_json(&o.reports);
            let _ = render_table(&o.reports);
            let _ = render_markdown(&o.reports);
            o
        }));
        let elapsed = started.elapsed();
        let what = match result {
            Err(p) => Some(format!(
                "panic outside the estimator: {}",
                p.downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_default()
            )),
            Ok(o) => o.reports.iter().find_map(|r| {
                let st = r.stopped.as_ref()?;
                match st.reason {
                    StopReason::InternalError => Some(format!("estimator panic: {}", st.message)),
                    StopReason::WorkBudgetExceeded
                        if kind != Kind::Mutation || input.len() < 64 << 10 =>
                    {
                        Some(format!("budget overrun on a small input: {}", st.message))
                    }
                    _ => None,
                }
            }),
        }
        .or_else(|| (elapsed > SLOW_CASE).then(|| format!("slow: {:.1} s", elapsed.as_secs_f64())));
        what.map(|what| Finding {
            seed,
            kind,
            what,
            input,
        })
    }

    // -- CEL ----------------------------------------------------------------------------------

    fn literal(&self, r: &mut Rng) -> String {
        match r.below(12) {
            0 => r.below(1000).to_string(),
            1 => format!("-{}", r.below(1000)),
            2 => format!("{}u", r.below(1000)),
            3 => format!("{}.{}", r.below(100), r.below(100)),
            4 => r.pick(&["true", "false", "null"]).to_string(),
            5 => format!(
                "'{}'",
                r.pick(&[
                    "",
                    "a",
                    "abc",
                    "x.y",
                    "^[a-z]+$",
                    "10Mi",
                    "1.2.3",
                    "192.168.0.0/16",
                    "https://x",
                    "%s",
                    "é😀"
                ])
            ),
            6 => format!("b'{}'", r.pick(&["", "ab", "\\xff"])),
            7 => format!("\"{}\"", r.pick(&["(", "a{2,3}", "[0-9]+", "\\\\d", "a|b"])),
            8 => r
                .pick(&[
                    "duration('1s')",
                    "timestamp('2020-01-01T00:00:00Z')",
                    "duration('bad')",
                ])
                .to_string(),
            9 => r
                .pick(&[
                    "9223372036854775807",
                    "18446744073709551615u",
                    "1e308",
                    "0x10",
                ])
                .to_string(),
            10 => "'''multi\nline'''".to_string(),
            _ => format!("r'{}'", r.pick(&["\\d+", "a"])),
        }
    }

    /// A random expression over `vars` (identifiers in scope), at most `depth` deep.
    pub fn expr(&self, r: &mut Rng, vars: &[String], depth: usize) -> String {
        if depth == 0 || r.chance(25) {
            return if !vars.is_empty() && r.chance(70) {
                let v = r.pick(vars).clone();
                if r.chance(40) {
                    let fields = [
                        "a",
                        "b",
                        "l",
                        "m",
                        "name",
                        "spec",
                        "items",
                        "metadata",
                        "f0",
                        "namespace",
                        "x",
                    ];
                    format!("{v}.{}", r.pick(&fields))
                } else {
                    v
                }
            } else {
                self.literal(r)
            };
        }
        let d = depth - 1;
        match r.below(16) {
            0 | 1 => {
                let op = r.pick(&[
                    "+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "in",
                ]);
                format!("{} {op} {}", self.expr(r, vars, d), self.expr(r, vars, d))
            }
            2 => format!("!{}", self.expr(r, vars, d)),
            3 => format!("-{}", self.expr(r, vars, d)),
            4 => format!(
                "{} ? {} : {}",
                self.expr(r, vars, d),
                self.expr(r, vars, d),
                self.expr(r, vars, d)
            ),
            5 => format!("({})", self.expr(r, vars, d)),
            6 => {
                let n = r.below(4);
                let items: Vec<String> = (0..n).map(|_| self.expr(r, vars, d)).collect();
                format!("[{}]", items.join(", "))
            }
            7 => {
                let n = r.below(3);
                let items: Vec<String> = (0..n)
                    .map(|_| format!("{}: {}", self.expr(r, vars, d), self.expr(r, vars, d)))
                    .collect();
                format!("{{{}}}", items.join(", "))
            }
            8 => format!("{}[{}]", self.expr(r, vars, d), self.expr(r, vars, d)),
            9 => {
                let target = self.expr(r, vars, d);
                let m = r.pick(&["all", "exists", "exists_one", "existsOne", "map", "filter"]);
                let v = format!("x{}", r.below(3));
                let mut inner = vars.to_vec();
                inner.push(v.clone());
                if *m == "map" && r.chance(30) {
                    format!(
                        "{target}.map({v}, {}, {})",
                        self.expr(r, &inner, d),
                        self.expr(r, &inner, d)
                    )
                } else {
                    format!("{target}.{m}({v}, {})", self.expr(r, &inner, d))
                }
            }
            10 => {
                let target = self.expr(r, vars, d);
                let m = r.pick(&[
                    "all",
                    "exists",
                    "existsOne",
                    "transformList",
                    "transformMap",
                    "transformMapEntry",
                ]);
                let mut inner = vars.to_vec();
                inner.push("i".into());
                inner.push("v".into());
                format!("{target}.{m}(i, v, {})", self.expr(r, &inner, d))
            }
            11 => format!(
                "has({}.{})",
                self.expr(r, vars, d),
                r.pick(&["a", "b", "x", "name"])
            ),
            12 => {
                let target = self.expr(r, vars, d);
                match r.below(4) {
                    0 => format!("{target}.?{}", r.pick(&["a", "x"])),
                    1 => format!("{target}[?{}]", self.expr(r, vars, d)),
                    2 => format!(
                        "{target}.optMap(o, {})",
                        self.expr(r, &[vec!["o".to_string()], vars.to_vec()].concat(), d)
                    ),
                    _ => format!("{target}.orValue({})", self.expr(r, vars, d)),
                }
            }
            _ => {
                // A call of the environment (or a made-up one).
                let (name, member, argc) = if r.chance(5) {
                    ("frobnicate".to_string(), r.chance(50), r.below(3))
                } else {
                    r.pick(&self.functions).clone()
                };
                let argc = if r.chance(10) { r.below(4) } else { argc };
                let args: Vec<String> = (0..argc).map(|_| self.expr(r, vars, d)).collect();
                if name.starts_with('_') || name.starts_with('@') {
                    // Operators appear through their syntax above.
                    return format!(
                        "{}({})",
                        r.pick(&["size", "string", "int", "dyn", "type"]),
                        args.first().cloned().unwrap_or_default()
                    );
                }
                if member {
                    format!("{}.{name}({})", self.expr(r, vars, d), args.join(", "))
                } else {
                    format!("{name}({})", args.join(", "))
                }
            }
        }
    }

    // -- schemas ------------------------------------------------------------------------------

    fn bound(&self, r: &mut Rng) -> String {
        match r.below(10) {
            0 => "0".into(),
            1 => "-1".into(),
            2 => "9223372036854775807".into(),
            3 => "1.5".into(),
            _ => (1 + r.below(1000)).to_string(),
        }
    }

    /// A schema node as JSON, `depth` levels at most, with rules here and there.
    pub fn schema(&self, r: &mut Rng, depth: usize) -> String {
        let mut fields: Vec<String> = Vec::new();
        let t = if depth == 0 {
            *r.pick(&["string", "integer", "number", "boolean"])
        } else {
            *r.pick(&[
                "object", "object", "array", "string", "integer", "number", "boolean", "", "bogus",
            ])
        };
        if !t.is_empty() {
            fields.push(format!(r#""type": "{t}""#));
        }
        match t {
            "object" => {
                if r.chance(20) {
                    fields.push(format!(
                        r#""additionalProperties": {}"#,
                        self.schema(r, depth - 1)
                    ));
                    if r.chance(50) {
                        fields.push(format!(r#""maxProperties": {}"#, self.bound(r)));
                    }
                } else {
                    let n = r.below(4);
                    let props: Vec<String> = (0..n)
                        .map(|i| {
                            let name = r
                                .pick(&[
                                    "a",
                                    "b",
                                    "l",
                                    "m",
                                    "name",
                                    "namespace",
                                    "f0",
                                    "x-y",
                                    "1st",
                                    "in",
                                ])
                                .to_string();
                            format!(
                                r#""{name}{}": {}"#,
                                if i > 0 { i.to_string() } else { String::new() },
                                self.schema(r, depth - 1)
                            )
                        })
                        .collect();
                    fields.push(format!(r#""properties": {{{}}}"#, props.join(", ")));
                    if r.chance(20) {
                        fields.push(r#""required": ["a", "name"]"#.into());
                    }
                }
                if r.chance(5) {
                    fields.push(r#""x-kubernetes-preserve-unknown-fields": true"#.into());
                }
                if r.chance(5) {
                    fields.push(r#""x-kubernetes-embedded-resource": true"#.into());
                }
                if r.chance(5) {
                    fields.push(r#""x-kubernetes-map-type": "atomic""#.into());
                }
            }
            "array" => {
                fields.push(format!(r#""items": {}"#, self.schema(r, depth - 1)));
                if r.chance(60) {
                    fields.push(format!(r#""maxItems": {}"#, self.bound(r)));
                }
                if r.chance(15) {
                    fields.push(r#""x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]"#.into());
                } else if r.chance(10) {
                    fields.push(r#""x-kubernetes-list-type": "set""#.into());
                }
            }
            "string" => {
                if r.chance(50) {
                    fields.push(format!(r#""maxLength": {}"#, self.bound(r)));
                }
                if r.chance(15) {
                    fields.push(r#""enum": ["a", "bb", "ccc"]"#.into());
                }
                if r.chance(15) {
                    fields.push(format!(
                        r#""format": "{}""#,
                        r.pick(&[
                            "byte",
                            "date",
                            "date-time",
                            "duration",
                            "int-or-string",
                            "uri",
                            "ipv4"
                        ])
                    ));
                }
                if r.chance(10) {
                    fields.push(format!(
                        r#""pattern": "{}""#,
                        r.pick(&["^[a-z]+$", "(", "a{1001}", ".*"])
                    ));
                }
                if r.chance(10) {
                    fields.push(r#""default": "a""#.into());
                }
            }
            "" => {
                if r.chance(50) {
                    fields.push(r#""x-kubernetes-int-or-string": true"#.into());
                    if r.chance(30) {
                        fields.push(format!(r#""maxLength": {}"#, self.bound(r)));
                    }
                } else {
                    fields.push(r#""x-kubernetes-preserve-unknown-fields": true"#.into());
                }
            }
            _ => {}
        }
        if r.chance(30) {
            let n = 1 + r.below(2);
            let rules: Vec<String> = (0..n)
                .map(|_| {
                    let vars = vec!["self".to_string(), "oldSelf".to_string()];
                    let depth = 1 + r.below(4);
                    let rule = self.expr(r, &vars, depth);
                    let mut x = format!(
                        r#"{{"rule": {}"#,
                        serde_json::to_string(&rule).expect("a string")
                    );
                    if r.chance(20) {
                        let me = self.expr(r, &vars, 2);
                        write!(
                            x,
                            r#", "messageExpression": {}"#,
                            serde_json::to_string(&me).expect("a string")
                        )
                        .unwrap();
                    }
                    if r.chance(10) {
                        x.push_str(r#", "optionalOldSelf": true"#);
                    }
                    x.push('}');
                    x
                })
                .collect();
            fields.push(format!(
                r#""x-kubernetes-validations": [{}]"#,
                rules.join(", ")
            ));
        }
        format!("{{{}}}", fields.join(", "))
    }

    fn crd(&self, r: &mut Rng) -> String {
        let versions = 1 + r.below(3);
        let vs: Vec<String> = (0..versions)
            .map(|i| {
                let schema = if i > 0 && r.chance(50) {
                    String::from(r#"{"type": "object"}"#)
                } else {
                    let depth = 1 + r.below(5);
                    self.schema(r, depth)
                };
                format!(
                    r#"{{"name": "v{i}", "served": true, "storage": {}, "schema": {{"openAPIV3Schema": {schema}}}{}}}"#,
                    i == 0,
                    if r.chance(20) { r#", "subresources": {"status": {}}"# } else { "" }
                )
            })
            .collect();
        format!(
            r#"{{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {{"name": "fuzzes.fuzz.example.com"}}, "spec": {{"group": "fuzz.example.com", "scope": "Namespaced", "names": {{"plural": "fuzzes", "kind": "Fuzz"}}, "versions": [{}]}}}}"#,
            vs.join(", ")
        )
    }

    fn policy(&self, r: &mut Rng) -> String {
        let mut vars: Vec<String> = vec!["object".into(), "oldObject".into(), "request".into()];
        let params = r.chance(30);
        if params {
            vars.push("params".into());
        }
        let mut out = String::new();
        // Sometimes over a CRD of the same input, which types `object`.
        let with_crd = r.chance(40);
        if with_crd {
            out.push_str(&self.crd(r));
            out.push_str("\n---\n");
        }
        let (group, resource) = if with_crd {
            ("fuzz.example.com", "fuzzes")
        } else {
            *r.pick(&[
                ("", "configmaps"),
                ("apps", "deployments"),
                ("", "pods"),
                ("*", "*"),
            ])
        };
        let mut variables = Vec::new();
        let nvars = r.below(6);
        for i in 0..nvars {
            let e = if i > 0 && r.chance(40) {
                // Chains of variables, the shape of the exponential case.
                let p = r.below(i);
                format!("variables.v{p} + variables.v{}", r.below(i))
            } else {
                let depth = 1 + r.below(3);
                self.expr(r, &vars, depth)
            };
            variables.push(format!(
                r#"{{"name": "v{i}", "expression": {}}}"#,
                serde_json::to_string(&e).expect("a string")
            ));
        }
        let mut vvars = vars.clone();
        if nvars > 0 {
            vvars.push("variables".into());
            for i in 0..nvars {
                vvars.push(format!("variables.v{i}"));
            }
        }
        let nval = r.below(3);
        let validations: Vec<String> = (0..nval)
            .map(|_| {
                let depth = 1 + r.below(4);
                let mut v = format!(
                    r#"{{"expression": {}"#,
                    serde_json::to_string(&self.expr(r, &vvars, depth)).expect("a string")
                );
                if r.chance(30) {
                    write!(
                        v,
                        r#", "messageExpression": {}"#,
                        serde_json::to_string(&self.expr(r, &vvars, 2)).expect("a string")
                    )
                    .unwrap();
                }
                v.push('}');
                v
            })
            .collect();
        let mut spec = vec![format!(
            r#""matchConstraints": {{"resourceRules": [{{"apiGroups": ["{group}"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["{resource}"]}}]}}"#
        )];
        if params {
            spec.push(r#""paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}"#.into());
        }
        if !variables.is_empty() {
            spec.push(format!(r#""variables": [{}]"#, variables.join(", ")));
        }
        spec.push(format!(r#""validations": [{}]"#, validations.join(", ")));
        if r.chance(20) {
            spec.push(format!(
                r#""matchConditions": [{{"name": "m", "expression": {}}}]"#,
                serde_json::to_string(&self.expr(r, &vars, 2)).expect("a string")
            ));
        }
        if r.chance(20) {
            spec.push(format!(
                r#""auditAnnotations": [{{"key": "k", "valueExpression": {}}}]"#,
                serde_json::to_string(&self.expr(r, &vvars, 2)).expect("a string")
            ));
        }
        write!(
            out,
            r#"{{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {{"name": "fuzz"}}, "spec": {{{}}}}}"#,
            spec.join(", ")
        )
        .unwrap();
        out
    }

    // -- mutations ----------------------------------------------------------------------------

    fn mutation(&self, r: &mut Rng) -> String {
        let mut bytes = r.pick(&self.corpus).clone().into_bytes();
        let n = 1 + r.below(8);
        for _ in 0..n {
            if bytes.is_empty() {
                break;
            }
            let at = r.below(bytes.len());
            match r.below(7) {
                0 => bytes[at] ^= 1 << r.below(8),
                1 => {
                    let end = (at + r.below(64)).min(bytes.len());
                    bytes.drain(at..end);
                }
                2 => {
                    let end = (at + r.below(256)).min(bytes.len());
                    let chunk = bytes[at..end].to_vec();
                    let to = r.below(bytes.len());
                    bytes.splice(to..to, chunk);
                }
                3 => {
                    let token = r.pick(&[
                        "{",
                        "}",
                        "[",
                        "]",
                        ":",
                        "- ",
                        "\n",
                        "  ",
                        "'",
                        "\"",
                        "&a ",
                        "*a",
                        "!!binary ",
                        "x-kubernetes-validations: [{rule: 'self.all(x, true)'}]",
                        "maxItems: -1",
                        "type: array",
                        "null",
                        "~",
                        "\t",
                        "\u{0}",
                    ]);
                    bytes.splice(at..at, token.bytes());
                }
                4 => bytes[at] = r.next() as u8,
                5 => {
                    // Splice a piece of another corpus file in.
                    let other = r.pick(&self.corpus).as_bytes();
                    if !other.is_empty() {
                        let from = r.below(other.len());
                        let end = (from + r.below(512)).min(other.len());
                        bytes.splice(at..at, other[from..end].iter().copied());
                    }
                }
                _ => bytes.truncate(at),
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// Corpus manifests small enough to mutate quickly (up to `max_bytes` each), sorted by path.
pub fn corpus_texts(root: &std::path::Path, max_bytes: u64) -> Vec<String> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                if p.file_name()
                    .is_some_and(|n| n != "expected" && n != "versions")
                {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml")
                && e.metadata().is_ok_and(|m| m.len() <= max_bytes)
            {
                files.push(p);
            }
        }
    }
    files.sort();
    files
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect()
}
