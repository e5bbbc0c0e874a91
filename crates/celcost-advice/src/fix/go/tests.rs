//! Tests of the Go side on the fixture module `tests/data/fix-go` (written for these tests; its
//! CRD generated from it by controller-tools v0.20.0): where each kind of node's marker goes,
//! never raising one, and gofmt's alignment after an inserted comment line.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::fix::yaml::{TextEdit, apply_edits};
use crate::fix::{Bound, FixOptions, FixOutcome, Step};
use crate::suggest::Keyword;

use super::edit::realign;
use super::*;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/fix-go")
}

fn crd() -> Value {
    let text =
        std::fs::read_to_string(fixture().join("config/widgets.example.com_widgets.yaml")).unwrap();
    celcost_core::input::parse_documents(&text)
        .remove(0)
        .value
        .unwrap()
}

fn bound(steps: &[Step], keyword: Keyword, value: i64) -> Bound {
    Bound {
        roots: vec!["/spec/versions/0/schema/openAPIV3Schema".into()],
        versions: vec!["v1".into()],
        steps: steps.to_vec(),
        keyword,
        value,
        current: None,
        implied_by: None,
        node_type: String::new(),
    }
}

fn prop(names: &[&str]) -> Vec<Step> {
    names.iter().map(|n| Step::Prop(n.to_string())).collect()
}

/// Where a bound goes: `marker on host`, or the refusal.
fn place(g: &GoTypes, b: &Bound) -> Result<Vec<String>, String> {
    let roots = g.types.root_of(&crd())?.expect("a root type");
    Ok(g.types
        .place(&roots, b)?
        .iter()
        .map(|p| {
            format!(
                "+{}={} on {}",
                p.marker,
                p.value,
                g.types.host_name(&p.host)
            )
        })
        .collect())
}

/// The file changes of placing `bounds` (as [`GoTypes::finish`] makes them).
fn changes(g: GoTypes, bounds: &[Bound]) -> FixOutcome {
    let mut g = g;
    let roots = g.types.root_of(&crd()).unwrap().unwrap();
    for b in bounds {
        for p in g.types.place(&roots, b).unwrap() {
            let pl = g.types.host_place(&p.host).unwrap();
            g.edits
                .entry(g.types.host_file(&p.host))
                .or_default()
                .push((p, pl));
        }
    }
    let mut out = FixOutcome::default();
    g.finish(&[], &crate::suggest::Settings::default(), &mut out);
    out
}

#[test]
fn the_root_type_is_found_by_group_version_and_kind() {
    let g = GoTypes::load(&[fixture().join("api")]).unwrap();
    let roots = g.types.root_of(&crd()).unwrap().unwrap();
    assert_eq!(g.types.decl_name(roots["v1"]), "v1.Widget");
    let mut other = crd();
    other["spec"]["group"] = "other.example.com".into();
    assert!(g.types.root_of(&other).unwrap().is_none());
}

#[test]
fn each_kind_of_node_gets_its_marker_where_controller_gen_reads_it() {
    let g = GoTypes::load(&[fixture().join("api")]).unwrap();
    let one = |steps: &[Step], k, v| place(&g, &bound(steps, k, v)).map(|x| x.join("; "));
    let below = |names: &[&str], step: Step| {
        let mut p = prop(names);
        p.push(step);
        p
    };
    let cases = [
        // A list field: MaxItems on the field.
        (
            prop(&["spec", "hosts"]),
            Keyword::MaxItems,
            20,
            "+kubebuilder:validation:MaxItems=20 on field v1.WidgetSpec.Hosts",
        ),
        // Its items, of a named type (through the alias Host): on the type's declaration.
        (
            below(&["spec", "hosts"], Step::Items),
            Keyword::MaxLength,
            64,
            "+kubebuilder:validation:MaxLength=64 on type v1.Hostname",
        ),
        // The items of an unnamed list of strings: items: on the field.
        (
            below(&["spec", "paths"], Step::Items),
            Keyword::MaxLength,
            64,
            "+kubebuilder:validation:items:MaxLength=64 on field v1.WidgetSpec.Paths",
        ),
        // A field of an inlined embedded struct of another package.
        (
            prop(&["spec", "tags"]),
            Keyword::MaxItems,
            9,
            "+kubebuilder:validation:MaxItems=9 on field common.Shared.Tags",
        ),
        // A named list type's field takes no MaxItems: on the list type.
        (
            prop(&["spec", "aliases"]),
            Keyword::MaxItems,
            9,
            "+kubebuilder:validation:MaxItems=9 on type v1.Hostnames",
        ),
        // Map values of a named type: on the type (of `string`: refused, below).
        (
            below(&["spec", "labels"], Step::Values),
            Keyword::MaxLength,
            63,
            "+kubebuilder:validation:MaxLength=63 on type v1.LabelValue",
        ),
        // The map field itself: MaxProperties on the field.
        (
            prop(&["spec", "notes"]),
            Keyword::MaxProperties,
            5,
            "+kubebuilder:validation:MaxProperties=5 on field v1.WidgetSpec.Notes",
        ),
    ];
    for (steps, k, v, want) in cases {
        let got = one(&steps, k, v).unwrap();
        assert!(got.starts_with(want), "{got}");
    }
    let e = one(
        &below(&["spec", "notes"], Step::Values),
        Keyword::MaxLength,
        63,
    )
    .unwrap_err();
    assert!(e.contains("no named type of their own"), "{e}");
    // A pointer to a named string type.
    assert!(
        one(&prop(&["spec", "primary"]), Keyword::MaxLength, 5)
            .unwrap()
            .contains("on type v1.Hostname")
    );
    // What the types do not have.
    let e = one(&prop(&["spec", "nothing"]), Keyword::MaxLength, 5).unwrap_err();
    assert!(e.contains("json name `nothing`"), "{e}");
    let e = one(&prop(&["spec", "port"]), Keyword::MaxLength, 5).unwrap_err();
    assert!(e.contains("`int32`"), "{e}");
    let e = one(&prop(&["metadata", "name"]), Keyword::MaxLength, 5).unwrap_err();
    assert!(e.contains("outside the Go packages"), "{e}");
}

#[test]
fn a_type_shared_by_several_fields_is_noted() {
    let g = GoTypes::load(&[fixture().join("api")]).unwrap();
    let roots = g.types.root_of(&crd()).unwrap().unwrap();
    let hostname = g.types.find_decl(roots["v1"].pkg, "Hostname").unwrap();
    let uses = g.types.uses_of(hostname);
    for u in [
        "type v1.Host",
        "type v1.Hostnames",
        "v1.WidgetSpec.Primary",
        "v1.WidgetStatus.Served",
    ] {
        assert!(uses.iter().any(|x| x == u), "{u} not in {uses:?}");
    }
    // The CRD the edited types generate has the bound at every use.
    let mut items = prop(&["spec", "hosts"]);
    items.push(Step::Items);
    let placed = g
        .types
        .place(&roots, &bound(&items, Keyword::MaxLength, 64))
        .unwrap();
    let generated = g.generated(&crd(), &roots, &placed);
    let s = &generated["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
    for at in [
        &s["spec"]["properties"]["hosts"]["items"],
        &s["spec"]["properties"]["primary"],
        &s["spec"]["properties"]["aliases"]["items"],
        &s["status"]["properties"]["served"]["items"],
    ] {
        assert_eq!(at["maxLength"], 64, "{at}");
    }
    assert!(
        s["spec"]["properties"]["paths"]["items"]
            .get("maxLength")
            .is_none()
    );
}

#[test]
fn a_bound_is_lowered_where_it_is_and_never_raised() {
    let g = GoTypes::load(&[fixture().join("api")]).unwrap();
    // Owner has MaxLength=1000 on its field, Paths MaxItems=100000.
    let out = changes(
        g,
        &[bound(&prop(&["spec", "owner"]), Keyword::MaxLength, 5000)],
    );
    assert!(out.files.is_empty(), "raised: {:?}", out.files);
    let g = GoTypes::load(&[fixture().join("api")]).unwrap();
    let out = changes(
        g,
        &[
            bound(&prop(&["spec", "owner"]), Keyword::MaxLength, 100),
            bound(&prop(&["spec", "paths"]), Keyword::MaxItems, 200),
            // The same marker asked twice: the lower value.
            bound(&prop(&["spec", "paths"]), Keyword::MaxItems, 300),
        ],
    );
    let text = |name: &str| {
        out.files
            .iter()
            .find(|f| f.path.ends_with(name))
            .map(|f| (f.before.clone(), f.after.clone()))
            .unwrap()
    };
    let (before, after) = text("shared.go");
    assert_eq!(
        after,
        before.replace("MaxLength=1000", "MaxLength=100"),
        "lowered in place, nothing else"
    );
    let (before, after) = text("widget_types.go");
    assert_eq!(after, before.replace("MaxItems=100000", "MaxItems=200"));
}

#[test]
fn markers_are_inserted_above_the_field_after_its_doc_comment() {
    let g = GoTypes::load(&[fixture().join("api")]).unwrap();
    let mut items = prop(&["spec", "paths"]);
    items.push(Step::Items);
    let out = changes(
        g,
        &[
            bound(&items, Keyword::MaxLength, 256),
            bound(&prop(&["spec", "labels"]), Keyword::MaxProperties, 64),
        ],
    );
    let f = &out.files[0];
    assert!(f.after.contains(
        "\t// Paths served.\n\t// +kubebuilder:validation:MaxItems=100000\n\t// +optional\n\t// +kubebuilder:validation:items:MaxLength=256\n\tPaths []string `json:\"paths,omitempty\"`\n"
    ), "{}", f.after);
    assert!(f.after.contains(
        "\t// +optional\n\t// +kubebuilder:validation:MaxProperties=64\n\tLabels map[string]LabelValue"
    ));
    // Nothing else changed: the edit only adds lines.
    let mut after_lines: Vec<&str> = f.after.lines().collect();
    after_lines.retain(|l| !l.contains("MaxProperties=64") && !l.contains("items:MaxLength=256"));
    assert_eq!(after_lines, f.before.lines().collect::<Vec<_>>());
}

#[test]
fn fields_aligned_with_their_neighbours_are_aligned_again_as_gofmt_does() {
    // gofmt's output for this file with a comment line inserted above `Long` (a comment line
    // ends an alignment section): checked with gofmt 1.27.
    let src = "package x\n\ntype T struct {\n\tA    string `json:\"a\"`\n\tLong string `json:\"long\"`\n\tB    int    `json:\"b\"`\n\tCC   bool\n}\n";
    let parsed = syntax::parse(src).unwrap();
    let Expr::Struct(fields) = &parsed.decls[0].expr else {
        panic!()
    };
    let long = &fields[1];
    let mut edits = realign(src, &parsed, &[long.place.line]).unwrap();
    edits.push(TextEdit {
        start: long.place.line_start,
        end: long.place.line_start,
        text: "\t// +kubebuilder:validation:MaxLength=5\n".into(),
    });
    let after = apply_edits(src, &edits).unwrap();
    assert_eq!(
        after,
        "package x\n\ntype T struct {\n\tA string `json:\"a\"`\n\t// +kubebuilder:validation:MaxLength=5\n\tLong string `json:\"long\"`\n\tB    int    `json:\"b\"`\n\tCC   bool\n}\n"
    );
}

#[test]
fn the_fixture_is_fixed_in_go_and_a_second_run_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture(), dir.path());
    let options = FixOptions {
        settings: crate::suggest::Settings::default(),
        go: vec![dir.path().join("api")],
    };
    let estimators = [celcost_core::Estimator::default()];
    let paths = [dir.path().join("config")];
    let first = crate::fix::fix_paths(&estimators, &paths, &options);
    assert!(first.input_errors.is_empty(), "{:?}", first.input_errors);
    assert_eq!(first.objects.len(), 1);
    let o = &first.objects[0];
    assert_eq!(o.target, super::super::FixTarget::Go);
    assert!(o.refused.is_empty(), "{:?}", o.refused);
    assert!(!o.accepted_before && o.accepted_after);
    assert!(o.left.is_empty(), "{:?}", o.left);
    assert!(
        o.costs
            .iter()
            .all(|c| c.after.is_some_and(|a| a < c.before))
    );
    // The map of strings takes the alternative that bounds the map, and says why.
    assert!(
        o.notes
            .iter()
            .any(|n| n.contains("no named type of their own"))
    );
    assert!(o.notes.iter().any(|n| n.contains("type v1.Hostname")));
    // Only Go files change; the CRD is regenerated by the author.
    assert!(
        first
            .files
            .iter()
            .all(|f| f.path.extension().is_some_and(|e| e == "go"))
    );
    assert_eq!(first.exit_code(), 0);
    first.write().unwrap();
    let second = crate::fix::fix_paths(&estimators, &paths, &options);
    assert!(
        second.files.is_empty(),
        "{:?}",
        second.files.iter().map(|f| &f.path).collect::<Vec<_>>()
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        let t = to.join(e.file_name());
        if p.is_dir() {
            copy_dir(&p, &t);
        } else {
            std::fs::copy(&p, &t).unwrap();
        }
    }
}

fn gateway() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/fix-go-gateway")
}

/// Every file under `dir`, by its path below it.
fn texts(dir: &Path) -> std::collections::BTreeMap<PathBuf, String> {
    fn walk(root: &Path, d: &Path, out: &mut std::collections::BTreeMap<PathBuf, String>) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_path_buf();
                out.insert(rel, std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The gateway-shaped API (`tests/data/fix-go-gateway`, its README): timeouts of type
/// `*metav1.Duration`, a type of another module, that Kubernetes 1.37 refuses unbounded. The Go
/// fix puts `Type=string` + `MaxLength=32` (the regex's 28, rounded up) on every such field —
/// on the field, `items:` for the list — changes no marker there, exits 0, writes exactly
/// `fixed/api`; controller-tools v0.20.0 generated `fixed/config` from that, and the YAML fix
/// of the same CRDs writes exactly `fixed/config`.
#[test]
fn fields_of_another_modules_type_get_the_bound_on_the_field() {
    let v137 = celcost_core::Estimator::new(celcost_core::cel::version::Version::new(1, 37));
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&gateway(), dir.path());
    let options = FixOptions {
        settings: crate::suggest::Settings::default(),
        go: vec![dir.path().join("api")],
    };
    let estimators = [v137];
    let paths = [dir.path().join("config")];
    let out = crate::fix::fix_paths(&estimators, &paths, &options);
    assert!(out.input_errors.is_empty(), "{:?}", out.input_errors);
    assert_eq!(out.exit_code(), 0, "{}", out.summary("1.37"));
    assert_eq!(out.objects.len(), 2);
    for o in &out.objects {
        assert_eq!(o.target, super::super::FixTarget::Go);
        assert!(o.refused.is_empty(), "{:?}", o.refused);
        assert!(!o.accepted_before && o.accepted_after, "{}", o.name);
        for (b, at) in &o.bounds {
            assert_eq!(
                (b.keyword, b.value, b.current),
                (Keyword::MaxLength, 32, None)
            );
            assert!(
                b.implied_by
                    .as_deref()
                    .is_some_and(|w| w.contains("at most 28 characters")),
                "{b:?}"
            );
            assert!(at.contains("Type=string"), "{at}");
        }
    }
    // Lines added only (no marker there changed), gofmt's layout kept: exactly fixed/api.
    let expected = texts(&gateway().join("fixed/api"));
    assert_eq!(out.files.len(), 3);
    for f in &out.files {
        let rel = f.path.strip_prefix(dir.path().join("api")).unwrap();
        assert_eq!(f.after, expected[rel], "{}", rel.display());
        let before: Vec<&str> = f.before.lines().collect();
        let kept: Vec<&str> = f
            .after
            .lines()
            .filter(|l| !l.contains("Type=string") && !l.contains("MaxLength=32"))
            .collect();
        assert_eq!(
            kept,
            before,
            "{}: more than marker lines added",
            rel.display()
        );
    }
    // The YAML fix of the same CRDs is what controller-tools generates from the fixed types.
    let yaml = crate::fix::fix_paths(
        &estimators,
        &paths,
        &FixOptions {
            settings: crate::suggest::Settings::default(),
            go: Vec::new(),
        },
    );
    assert_eq!(yaml.exit_code(), 0);
    let generated = texts(&gateway().join("fixed/config"));
    assert_eq!(yaml.files.len(), generated.len());
    for f in &yaml.files {
        let rel = f.path.strip_prefix(dir.path().join("config")).unwrap();
        assert_eq!(f.after, generated[rel], "{}", rel.display());
    }
    // And what controller-tools generates is accepted by 1.37 with every rule well within.
    for text in generated.values() {
        let crd = celcost_core::input::parse_documents(text)
            .remove(0)
            .value
            .unwrap();
        let r = estimators[0].estimate_crd(&crd, "fixed");
        assert!(r.valid, "{:?}", r.errors);
    }
}

/// A field of another module's type whose schema says what it is: `Type=string` for strings,
/// `XIntOrString` for an int-or-string, none where the bound cannot apply.
#[test]
fn the_type_marker_follows_the_schema_of_another_modules_type() {
    let g = GoTypes::load(&[gateway().join("api")]).unwrap();
    let text =
        std::fs::read_to_string(gateway().join("config/gateway.example.io_retrypolicies.yaml"))
            .unwrap();
    let crd = celcost_core::input::parse_documents(&text)
        .remove(0)
        .value
        .unwrap();
    let roots = g.types.root_of(&crd).unwrap().unwrap();
    let at = |node_type: &str, k: Keyword| {
        let mut b = bound(&prop(&["spec", "retries"]), k, 32);
        b.steps.push(Step::Items);
        b.steps.push(Step::Prop("perTryTimeout".into()));
        b.versions = vec!["v1alpha1".into()];
        b.node_type = node_type.into();
        g.types.place(&roots, &b).map(|ps| {
            ps.iter()
                .map(|p| format!("{:?} +{}={}", p.requires, p.marker, p.value))
                .collect::<Vec<_>>()
                .join("; ")
        })
    };
    assert_eq!(
        at("string", Keyword::MaxLength).unwrap(),
        "[\"kubebuilder:validation:Type=string\"] +kubebuilder:validation:MaxLength=32"
    );
    assert!(
        at("int-or-string", Keyword::MaxLength)
            .unwrap()
            .contains("XIntOrString")
    );
    let e = at("string", Keyword::MaxItems).unwrap_err();
    assert!(
        e.contains("of another module") && e.contains("maxItems"),
        "{e}"
    );
}
