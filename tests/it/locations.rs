//! `file:line:column` of every rule, messageExpression and policy expression of
//! `../shared/corpus` (crds, vaps, maps, fixtures) and of `examples/`: the location points at
//! the start of that expression's scalar in its file, and the scalar there, read as YAML reads it
//! (unquoted, folded), is the expression. Every API server error is located too.
//!
//! The check reads the file on its own: the line and column of the location, the character
//! there (the opening quote, the `|` or `>` indicator, or the first character of a plain
//! scalar), and the YAML parser's scalar that starts there (its events, not celcost's tree).

use crate::common;

use common::{corpus_dir, files_under};
use std::path::{Path, PathBuf};

use celcost::Estimator;
use celcost::cli::{Outcome, Run};
use celcost::report::SourceLocation;
use saphyr_parser::{Event, Parser, ScalarStyle};

/// A scalar as the YAML parser reads it: where its span starts and ends (1-based line,
/// 0-based column), its style and its value.
struct Scalar {
    start: (usize, usize),
    end: (usize, usize),
    style: ScalarStyle,
    value: String,
}

/// Every scalar of a file, in order (documents split as celcost splits them are also split by
/// the parser at their `---` lines).
fn scalars(text: &str) -> Vec<Scalar> {
    let mut out = Vec::new();
    let mut p = Parser::new_from_str(text);
    while let Some(Ok((ev, span))) = p.next_event() {
        if let Event::Scalar(v, style, _, _) = ev {
            out.push(Scalar {
                start: (span.start.line(), span.start.col()),
                end: (span.end.line(), span.end.col()),
                style,
                value: v.to_string(),
            });
        }
    }
    out
}

/// Checks that `loc` points at a scalar of `file` whose value is `expected`; the problem if not.
fn check(
    kind: &str,
    what: &str,
    loc: Option<&SourceLocation>,
    expected: &str,
    lines: &[&str],
    scalars: &[Scalar],
) -> Result<(), String> {
    let Some(loc) = loc else {
        return Err(format!("{what}: no location"));
    };
    let (line, col) = (loc.line as usize, loc.column as usize);
    let Some(text) = lines.get(line.wrapping_sub(1)) else {
        return Err(format!("{what}: line {line} is past the end"));
    };
    if col == 0 {
        return Err(format!("{what}: column 0 at {loc}"));
    }
    let at: String = text.chars().skip(col - 1).collect();
    // The scalar the location is in or just before (a block scalar's content starts on the
    // next line, after its indicator).
    let pos = (line, col - 1);
    let i = scalars.partition_point(|s| s.end <= pos);
    let Some(s) = scalars.get(i) else {
        return Err(format!("{what}: no scalar at or after {loc}"));
    };
    let first = at.chars().next().unwrap_or(' ');
    let token_ok = match s.style {
        ScalarStyle::DoubleQuoted => first == '"',
        ScalarStyle::SingleQuoted => first == '\'',
        ScalarStyle::Literal => first == '|',
        ScalarStyle::Folded => first == '>',
        ScalarStyle::Plain => {
            let word = s.value.split_whitespace().next().unwrap_or_default();
            at.starts_with(word) && s.start <= pos
        }
    };
    if !token_ok {
        return Err(format!(
            "{what}: at {loc} the text `{}` does not start a {:?} scalar",
            at.chars().take(40).collect::<String>(),
            s.style
        ));
    }
    // A MutatingAdmissionPolicy's expressions are reported trimmed, as the API server
    // compiles them (`strings.TrimSpace`).
    if s.value != expected && !(kind == "MutatingAdmissionPolicy" && s.value.trim() == expected) {
        // From the first difference on.
        let d = s
            .value
            .char_indices()
            .zip(expected.chars())
            .find(|((_, a), b)| a != b)
            .map(|((i, _), _)| i)
            .unwrap_or(s.value.len().min(expected.len()));
        return Err(format!(
            "{what}: the scalar at {loc} differs from byte {d}: {:?}, not {:?}",
            s.value
                .get(d..)
                .unwrap_or_default()
                .chars()
                .take(60)
                .collect::<String>(),
            expected
                .get(d..)
                .unwrap_or_default()
                .chars()
                .take(60)
                .collect::<String>()
        ));
    }
    Ok(())
}

#[derive(Default)]
struct Tally {
    rules: usize,
    message_expressions: usize,
    expressions: usize,
    errors: usize,
    problems: Vec<String>,
}

fn check_files(files: &[PathBuf], tally: &mut Tally) {
    let estimator = Estimator::default();
    for f in files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        let name = f.display().to_string();
        let mut outcome = Outcome::default();
        Run::new(&estimator).text(&name, &text, &mut outcome);
        let lines: Vec<&str> = text.lines().collect();
        let scalars = scalars(&text);
        for r in &outcome.reports {
            if r.location.is_none() {
                tally
                    .problems
                    .push(format!("{}: the object has no location", r.source));
                continue;
            }
            for s in &r.schemas {
                if s.location.is_none() {
                    tally.problems.push(format!(
                        "{}: {}: no location",
                        r.source, s.schema_field_path
                    ));
                }
                for rule in &s.rules {
                    tally.rules += 1;
                    let what = format!("{}: {}", r.source, rule.rule_field_path);
                    if let Err(e) = check(
                        &r.kind,
                        &what,
                        rule.location.as_ref(),
                        &rule.rule,
                        &lines,
                        &scalars,
                    ) {
                        tally.problems.push(e);
                    }
                    if let Some(m) = &rule.message_expression {
                        tally.message_expressions += 1;
                        if let Err(e) = check(
                            &r.kind,
                            &format!("{what} messageExpression"),
                            rule.message_expression_location.as_ref(),
                            m,
                            &lines,
                            &scalars,
                        ) {
                            tally.problems.push(e);
                        }
                    }
                }
            }
            for e in &r.expressions {
                tally.expressions += 1;
                let what = format!("{}: {}", r.source, e.field_path);
                if let Err(p) = check(
                    &r.kind,
                    &what,
                    e.location.as_ref(),
                    &e.expression,
                    &lines,
                    &scalars,
                ) {
                    tally.problems.push(p);
                }
            }
            tally.errors += r.errors.len();
            for (i, _) in r.errors.iter().enumerate() {
                match r.error_locations.iter().find(|l| l.error as usize == i) {
                    Some(l) if l.location.file == name && l.location.line >= 1 => {}
                    _ => tally
                        .problems
                        .push(format!("{}: error {i} has no location", r.source)),
                }
            }
        }
    }
}

fn report(tally: &Tally, label: &str) {
    eprintln!(
        "{label}: located {} rules, {} messageExpressions, {} policy expressions, {} errors; {} problems",
        tally.rules,
        tally.message_expressions,
        tally.expressions,
        tally.errors,
        tally.problems.len()
    );
    assert!(
        tally.problems.is_empty(),
        "{} problems, the first: {:#?}",
        tally.problems.len(),
        &tally.problems[..tally.problems.len().min(20)]
    );
}

#[test]
fn every_corpus_expression_is_located_at_its_text() {
    let Some(corpus) = corpus_dir() else {
        if std::env::var("CELCOST_REQUIRE_CORPUS").is_ok() {
            panic!("../shared/corpus not found beside the checkout (set CELCOST_CORPUS)");
        }
        eprintln!("SKIPPED: ../shared/corpus not found beside the checkout (set CELCOST_CORPUS)");
        return;
    };
    let mut files = Vec::new();
    for sub in ["crds", "vaps", "maps", "fixtures"] {
        files_under(&corpus.join(sub), &mut files);
    }
    let mut tally = Tally::default();
    check_files(&files, &mut tally);
    report(&tally, "corpus");
    assert!(tally.rules > 3_000, "only {} rules", tally.rules);
    assert!(
        tally.expressions > 300,
        "only {} expressions",
        tally.expressions
    );
}

#[test]
fn every_example_expression_is_located_at_its_text() {
    let mut files = Vec::new();
    files_under(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples"),
        &mut files,
    );
    let mut tally = Tally::default();
    check_files(&files, &mut tally);
    report(&tally, "examples");
    assert!(tally.rules > 0 && tally.expressions > 0);
}

/// Quoted, block, folded, tagged, anchored and aliased expressions, several documents, a List,
/// JSON, and a schema all versions share.
#[test]
fn every_scalar_style_is_located_at_its_token() {
    let crd = |name: &str, rules: &str| {
        format!(
            r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: {name}s.example.com}}
spec:
  group: example.com
  scope: Namespaced
  names: {{plural: {name}s, kind: {name}}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              a: {{type: string, maxLength: 10}}
            x-kubernetes-validations:
{rules}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              a: {{type: string, maxLength: 10}}
            x-kubernetes-validations:
{rules}
"#
        )
    };
    let rules = r#"            - rule: self.a == 'x' ||
                self.a == 'y'
            - rule: "self.a != \"z\""
              messageExpression: 'self.a + '' is bad'''
            - rule: |
                self.a.size() < 5
            - rule: >-
                self.a.startsWith('a')
                || true
            - rule: !!str self.a != 'q'
            - rule: &r self.a != 'w'
              message: m
            - rule: *r"#;
    let text = format!(
        "{}---\n# a comment\n{}---\n{}",
        crd("Widget", rules),
        "kind: List\napiVersion: v1\nitems:\n- apiVersion: admissionregistration.k8s.io/v1\n  kind: ValidatingAdmissionPolicy\n  metadata: {name: p}\n  spec:\n    validations:\n    - expression: |-\n        object.metadata.name != 'x'\n      messageExpression: >\n        'name ' +\n        object.metadata.name\n    variables:\n    - {name: v, expression: \"1 + 2\"}\n",
        r#"{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
 "metadata": {"name": "j"}, "spec": {"validations": [{"expression": "true"},
   {"expression": "object.metadata.name.size() \u003c 10"}]}}
"#
    );
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("styles.yaml");
    std::fs::write(&path, &text).unwrap();
    let mut tally = Tally::default();
    check_files(&[path], &mut tally);
    report(&tally, "styles");
    // Seven rules on the shared schema (the last an alias), one messageExpression, the List's two expressions and
    // variable, the JSON policy's two.
    assert_eq!(
        (tally.rules, tally.message_expressions, tally.expressions),
        (7, 1, 5)
    );
}

/// The API server's cost errors carry which limit they are about, and every error its field:
/// the outputs read those, not the text.
#[test]
fn errors_carry_their_field_and_which_cost_limit() {
    let crd = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              names:
                type: array
                items: {type: string}
                x-kubernetes-validations:
                - rule: "self.all(x, self.all(y, x.matches(y)))"
                  messageExpression: "self.map(x, self.map(y, x + y).join(',')).join(',')"
"#;
    let mut o = Outcome::default();
    Run::new(&Estimator::default()).text("in.yaml", crd, &mut o);
    let r = &o.reports[0];
    assert!(!r.valid);
    assert_eq!(r.errors.len(), r.error_parts.len());
    let rules = "spec.validation.openAPIV3Schema.properties[spec].properties[names].x-kubernetes-validations[0]";
    let mut kinds = Vec::new();
    for (i, e) in r.errors.iter().enumerate() {
        let parts = &r.error_parts[i];
        assert_eq!(e, &format!("{}: {}", parts.field, parts.message));
        if parts.cost.is_some() {
            assert_eq!(parts.kind, "Forbidden", "{e}");
        }
        kinds.push((parts.field.clone(), parts.cost));
    }
    use celcost::report::CostError;
    assert!(
        kinds.contains(&(format!("{rules}.rule"), Some(CostError::Rule))),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&(
            format!("{rules}.messageExpression"),
            Some(CostError::MessageExpression)
        )),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&(
            "spec.validation.openAPIV3Schema".to_string(),
            Some(CostError::Total)
        )),
        "{kinds:?}"
    );
}
