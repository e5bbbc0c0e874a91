//! The Helm chart `charts/celcost` and `config/` are one install: the chart rendered with
//! `helm-lite template` (Helm v4's own rendering, `../shared/helm`) is compared object by object
//! with what `kubectl kustomize` renders of config/default, config/no-webhook, the cert-manager
//! component and config/prometheus, Helm's labels and the release's naming aside, so a change to
//! one side without the other fails. Also: `helm-lite lint --strict` is clean, values.schema.json
//! refuses bad values with Helm's message and agrees with the operator's own flag parsing, the
//! chart's CRD, dashboard and version are the repository's.
//!
//! Without helm-lite or kubectl the tests that need them print SKIPPED and pass, unless
//! `CELCOST_REQUIRE_HELM=1` (CI), which fails them instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;
use serde_json::{Value, json};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// The release name and namespace under which the chart's names are config/default's.
const RELEASE: &str = "celcost";
const NAMESPACE: &str = "celcost-system";

fn chart_dir() -> PathBuf {
    Path::new(ROOT).join("charts/celcost")
}

/// Whether helm-lite and kubectl can run; prints SKIPPED when one cannot, or fails under
/// `CELCOST_REQUIRE_HELM=1`.
fn tools(test: &str) -> bool {
    for (tool, install) in [
        (
            "helm-lite",
            "xz -dc ../shared/helm/bin/helm-lite.xz > /usr/local/bin/helm-lite && chmod +x /usr/local/bin/helm-lite",
        ),
        ("kubectl", "install kubectl"),
    ] {
        if let Err(e) = Command::new(tool).arg("--help").output() {
            let why = format!("{tool} cannot run ({e}): {install}");
            assert!(
                std::env::var_os("CELCOST_REQUIRE_HELM").is_none_or(|v| v != "1"),
                "{test}: {why} (CELCOST_REQUIRE_HELM=1: nothing may be skipped)"
            );
            println!("SKIPPED {test}: {why}");
            return false;
        }
    }
    true
}

fn parse_docs(text: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).expect("a YAML document"))
        .filter(|v| !v.is_null())
        .collect()
}

/// `helm-lite template RELEASE CHART -n NS --include-crds ARGS`: the objects, or Helm's error.
fn helm_template_in(
    chart: &Path,
    release: &str,
    ns: &str,
    args: &[&str],
) -> Result<Vec<Value>, String> {
    let out = Command::new("helm-lite")
        .arg("template")
        .arg(release)
        .arg(chart)
        .args(["-n", ns, "--include-crds"])
        .args(args)
        .output()
        .expect("run helm-lite");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(parse_docs(&String::from_utf8(out.stdout).unwrap()))
}

/// The chart rendered as `helm install celcost charts/celcost -n celcost-system` would, with
/// `--set`/`--set-string`/... `args`.
fn helm_template(args: &[&str]) -> Vec<Value> {
    helm_template_in(&chart_dir(), RELEASE, NAMESPACE, args)
        .unwrap_or_else(|e| panic!("helm-lite template {args:?}: {e}"))
}

fn kustomize(dir: &Path) -> Vec<Value> {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("run kubectl");
    assert!(
        out.status.success(),
        "kubectl kustomize {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    parse_docs(&String::from_utf8(out.stdout).unwrap())
}

fn config(dir: &str) -> Vec<Value> {
    kustomize(&Path::new(ROOT).join("config").join(dir))
}

/// Labels Helm's conventions add (the standard labels; `instance` also in selectors).
const HELM_LABELS: [&str; 4] = [
    "helm.sh/chart",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
];

/// Removes Helm's labels wherever they are (labels, selectors, spread constraints), and puts
/// a container's environment in the order of its names: the API server keys it by name, and
/// kustomize's strategic merge (config/components/no-webhook) moves the variable it patches
/// first.
fn normalize(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for l in HELM_LABELS {
                m.shift_remove(l);
            }
            if let Some(Value::Array(env)) = m.get_mut("env") {
                env.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
            }
            m.values_mut().for_each(normalize);
        }
        Value::Array(a) => a.iter_mut().for_each(normalize),
        _ => {}
    }
}

fn key(o: &Value) -> String {
    let ns = o["metadata"]["namespace"].as_str().unwrap_or("");
    format!(
        "{} {}{}{}",
        o["kind"].as_str().unwrap_or("?"),
        ns,
        if ns.is_empty() { "" } else { "/" },
        o["metadata"]["name"].as_str().unwrap_or("?")
    )
}

/// Where `a` (the chart's) and `b` (config's) differ, one line per JSON path.
fn diff(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                match y.get(k) {
                    Some(vb) => diff(&format!("{path}.{k}"), va, vb, out),
                    None => out.push(format!("{path}.{k}: only in the chart: {va}")),
                }
            }
            for (k, vb) in y {
                if !x.contains_key(k) {
                    out.push(format!("{path}.{k}: only in config/: {vb}"));
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                diff(&format!("{path}[{i}]"), va, vb, out);
            }
        }
        _ if a == b => {}
        // `0.0` in a file, `0` once kustomize has written it out: the same number to the API server.
        (Value::Number(x), Value::Number(y)) if x.as_f64() == y.as_f64() => {}
        _ => out.push(format!("{path}: the chart has {a}, config/ has {b}")),
    }
}

/// The differences between the chart's objects and config's, Helm's labels aside: objects only
/// on one side, and each field that differs (by kind, namespace and name).
fn compare(chart: &[Value], config: &[Value]) -> Vec<String> {
    let index = |objs: &[Value]| -> BTreeMap<String, Value> {
        let mut m = BTreeMap::new();
        for o in objs {
            let mut o = o.clone();
            normalize(&mut o);
            let k = key(&o);
            assert!(m.insert(k.clone(), o).is_none(), "two objects named {k}");
        }
        m
    };
    let (chart, config) = (index(chart), index(config));
    let mut out = Vec::new();
    for (k, a) in &chart {
        match config.get(k) {
            Some(b) => diff(k, a, b, &mut out),
            None => out.push(format!("{k}: only in the chart")),
        }
    }
    for k in config.keys().filter(|k| !chart.contains_key(*k)) {
        out.push(format!("{k}: only in config/"));
    }
    out
}

fn find<'a>(objs: &'a [Value], kind: &str, name: &str) -> Option<&'a Value> {
    objs.iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
}

fn container(objs: &[Value]) -> &Value {
    let deployment = objs
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("a Deployment");
    &deployment["spec"]["template"]["spec"]["containers"][0]
}

/// The container's environment: name → value (or valueFrom), in order.
fn env(objs: &[Value]) -> Vec<(String, Value)> {
    container(objs)["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let v = e.get("value").or(e.get("valueFrom")).cloned();
            (
                e["name"].as_str().unwrap().to_string(),
                v.unwrap_or(Value::Null),
            )
        })
        .collect()
}

fn app_version() -> String {
    let chart: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(chart_dir().join("Chart.yaml")).unwrap())
            .unwrap();
    chart["appVersion"].as_str().unwrap().to_string()
}

/// The chart's image is `celcost:<appVersion>`, config/default's `celcost:latest`: checked,
/// then both set to the repository alone for the comparison.
fn untag_images(chart: &mut [Value], config: &mut [Value]) {
    for (objs, tag) in [(chart, app_version()), (config, "latest".to_string())] {
        let d = objs
            .iter_mut()
            .find(|o| o["kind"] == "Deployment")
            .expect("a Deployment");
        let image = &mut d["spec"]["template"]["spec"]["containers"][0]["image"];
        assert_eq!(*image, json!(format!("celcost:{tag}")));
        *image = json!("celcost");
    }
}

/// config's Namespace (the chart leaves it to `--create-namespace`): checked, then removed.
fn without_namespace(mut config: Vec<Value>) -> Vec<Value> {
    let before = config.len();
    config.retain(|o| o["kind"] != "Namespace");
    assert_eq!(before - config.len(), 1, "config/ has one Namespace");
    config
}

fn assert_same(what: &str, chart: &[Value], config: &[Value]) {
    let d = compare(chart, config);
    assert!(
        d.is_empty(),
        "{what}: the chart and config/ differ (change both, or neither):\n{}",
        d.join("\n")
    );
}

#[test]
fn chart_version_follows_cargo_toml() {
    let chart: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(chart_dir().join("Chart.yaml")).unwrap())
            .unwrap();
    assert_eq!(chart["apiVersion"], "v2");
    assert_eq!(chart["name"], "celcost");
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        chart["version"], version,
        "Chart.yaml version = Cargo.toml's"
    );
    assert_eq!(
        chart["appVersion"], version,
        "Chart.yaml appVersion = Cargo.toml's (the image tag by default)"
    );
}

/// The Artifact Hub annotations: each YAML one parses as Artifact Hub reads it, and says what
/// the chart has — its CRDs (crds/), the image values.yaml and appVersion give, a category and
/// change kinds Artifact Hub knows.
#[test]
fn artifact_hub_annotations_describe_the_chart() {
    let chart: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(chart_dir().join("Chart.yaml")).unwrap())
            .unwrap();
    let a = &chart["annotations"];
    let yaml = |key: &str| -> Vec<Value> {
        let text = a[key].as_str().unwrap_or_else(|| panic!("no {key}"));
        serde_yaml_ng::from_str(text).unwrap_or_else(|e| panic!("{key}: {e}"))
    };
    let categories = [
        "ai-machine-learning",
        "database",
        "integration-delivery",
        "monitoring-logging",
        "networking",
        "security",
        "storage",
        "streaming-messaging",
    ];
    assert!(categories.contains(&a["artifacthub.io/category"].as_str().unwrap()));
    let changes = yaml("artifacthub.io/changes");
    assert!(!changes.is_empty());
    for c in &changes {
        let kinds = [
            "added",
            "changed",
            "deprecated",
            "removed",
            "fixed",
            "security",
        ];
        assert!(kinds.contains(&c["kind"].as_str().unwrap()), "{c}");
        assert!(
            c["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{c}"
        );
    }
    let crds: Vec<Value> = std::fs::read_dir(chart_dir().join("crds"))
        .unwrap()
        .flat_map(|e| parse_docs(&std::fs::read_to_string(e.unwrap().path()).unwrap()))
        .collect();
    let listed = yaml("artifacthub.io/crds");
    assert_eq!(listed.len(), crds.len());
    for crd in &crds {
        let l = listed
            .iter()
            .find(|l| l["name"] == crd["metadata"]["name"])
            .unwrap_or_else(|| panic!("{} is not in artifacthub.io/crds", crd["metadata"]["name"]));
        assert_eq!(l["kind"], crd["spec"]["names"]["kind"]);
        let served: Vec<&Value> = crd["spec"]["versions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| v["storage"] == true)
            .map(|v| &v["name"])
            .collect();
        assert_eq!(served, [&l["version"]]);
        assert!(l["displayName"].is_string() && l["description"].is_string());
    }
    let values: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(chart_dir().join("values.yaml")).unwrap())
            .unwrap();
    let image = format!(
        "{}:{}",
        values["image"]["repository"].as_str().unwrap(),
        app_version()
    );
    let images = yaml("artifacthub.io/images");
    assert_eq!(images.len(), 1);
    assert_eq!(images[0]["image"], image.as_str());
}

/// crds/costreport.yaml and the Grafana dashboard are copied into the chart (Helm reads
/// nothing outside it); the copies must be the repository's, byte for byte.
/// `CELCOST_UPDATE_CRDS=1` (as tests/it/crd_sync.rs) writes the CRD's copy.
#[test]
fn chart_copies_are_the_repositorys_files() {
    let chart = chart_dir();
    for (original, copy) in [
        ("crds/costreport.yaml", chart.join("crds/costreport.yaml")),
        (
            "config/grafana/celcost-dashboard.json",
            chart.join("dashboards/celcost-dashboard.json"),
        ),
    ] {
        let original_text = std::fs::read(Path::new(ROOT).join(original)).unwrap();
        if std::env::var_os("CELCOST_UPDATE_CRDS").is_some() {
            std::fs::write(&copy, &original_text).unwrap();
        }
        let copy_text = std::fs::read(&copy).unwrap();
        assert!(
            copy_text == original_text,
            "{} differs from {original}: cp {original} {} (`just generate` copies the CRD)",
            copy.display(),
            copy.display()
        );
    }
    // The chart's crds/ holds the CostReport CRD and nothing else.
    let entries: Vec<String> = std::fs::read_dir(chart.join("crds"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries, ["costreport.yaml"]);
}

#[test]
fn lint_strict_is_clean() {
    if !tools("lint_strict_is_clean") {
        return;
    }
    for sets in [
        &[][..],
        &["--set", "webhook.enabled=false"],
        &["--set", "webhook.certManager.enabled=true"],
        &[
            "--set",
            "metrics.serviceMonitor.enabled=true",
            "--set",
            "metrics.prometheusRule.enabled=true",
            "--set",
            "metrics.dashboard.enabled=true",
        ],
        &[
            "--set",
            "networkPolicy.enabled=true",
            "--set",
            "metrics.secure=true",
            "--set",
            "metrics.serviceMonitor.enabled=true",
        ],
        &[
            "--set",
            "metrics.secure=false",
            "--set",
            "metrics.serviceMonitor.enabled=true",
            "--set",
            "networkPolicy.enabled=true",
            "--set",
            "webhook.enabled=false",
        ],
    ] {
        let out = Command::new("helm-lite")
            .args(["lint", "--strict"])
            .arg(chart_dir())
            .args(sets)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "helm-lite lint --strict {sets:?}:\n{text}"
        );
        assert!(
            !text.contains("[ERROR]") && !text.contains("[WARNING]"),
            "helm-lite lint --strict {sets:?}:\n{text}"
        );
        assert!(
            text.contains("1 chart(s) linted, 0 chart(s) failed"),
            "{text}"
        );
    }
    let notes = std::fs::read_to_string(chart_dir().join("templates/NOTES.txt")).unwrap();
    assert!(notes.contains("kubectl get costreports"), "{notes}");
}

/// The one source of truth: `helm install celcost charts/celcost -n celcost-system` installs
/// what `kubectl apply -k config/default` does, but for the Namespace (Helm's
/// `--create-namespace`), Helm's labels and the image's tag (the chart's appVersion).
#[test]
fn defaults_render_what_config_default_renders() {
    if !tools("defaults_render_what_config_default_renders") {
        return;
    }
    let mut chart = helm_template(&[]);
    let mut config = without_namespace(config("default"));
    untag_images(&mut chart, &mut config);
    assert_same("defaults vs config/default", &chart, &config);
    // The CRD comes from the chart's crds/ (`--include-crds`), unchanged.
    let crd = find(&chart, "CustomResourceDefinition", "costreports.celcost.io").unwrap();
    let repo: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(Path::new(ROOT).join("crds/costreport.yaml")).unwrap(),
    )
    .unwrap();
    assert_eq!(*crd, repo);
    // Helm's standard labels on everything the chart renders from templates/.
    for o in chart
        .iter()
        .filter(|o| o["kind"] != "CustomResourceDefinition")
    {
        let labels = &o["metadata"]["labels"];
        assert_eq!(labels["app.kubernetes.io/name"], "celcost", "{}", key(o));
        assert_eq!(labels["app.kubernetes.io/instance"], RELEASE, "{}", key(o));
        assert_eq!(labels["app.kubernetes.io/managed-by"], "Helm", "{}", key(o));
        assert_eq!(
            labels["app.kubernetes.io/version"],
            json!(app_version()),
            "{}",
            key(o)
        );
        assert_eq!(
            labels["helm.sh/chart"],
            json!(format!("celcost-{}", env!("CARGO_PKG_VERSION"))),
            "{}",
            key(o)
        );
    }
}

/// `webhook.enabled=false` is config/no-webhook: no webhook configuration, Service, Secret
/// rights or caBundle rights, no volumes, the operator told (CELCOST_WEBHOOK=false), the same
/// arguments.
#[test]
fn webhook_off_renders_what_config_no_webhook_renders() {
    if !tools("webhook_off_renders_what_config_no_webhook_renders") {
        return;
    }
    let mut chart = helm_template(&["--set", "webhook.enabled=false"]);
    let mut config = without_namespace(config("no-webhook"));
    untag_images(&mut chart, &mut config);
    assert_same("webhook off vs config/no-webhook", &chart, &config);
    // What that means, spelled out.
    for o in &chart {
        let name = o["metadata"]["name"].as_str().unwrap();
        assert!(o["kind"] != "ValidatingWebhookConfiguration", "{}", key(o));
        assert!(!name.contains("webhook"), "{}", key(o));
        for rule in o["rules"].as_array().into_iter().flatten() {
            let res = rule["resources"].to_string();
            assert!(
                !res.contains("secrets") && !res.contains("webhookconfigurations"),
                "{}: {rule}",
                key(o)
            );
        }
    }
    let c = container(&chart);
    assert_eq!(c["args"], json!(["controller"]));
    assert!(c.get("volumeMounts").is_none());
    let pod = &find(&chart, "Deployment", "celcost").unwrap()["spec"]["template"]["spec"];
    assert!(pod.get("volumes").is_none());
    let webhook: Vec<_> = env(&chart)
        .into_iter()
        .filter(|(n, _)| n.starts_with("CELCOST_WEBHOOK"))
        .collect();
    assert_eq!(webhook, [("CELCOST_WEBHOOK".to_string(), json!("false"))]);
}

/// `webhook.certManager.enabled=true` is config/default with the component
/// config/components/cert-manager.
#[test]
fn cert_manager_renders_what_the_cert_manager_component_renders() {
    if !tools("cert_manager_renders_what_the_cert_manager_component_renders") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rel = |p: &str| {
        // kustomize wants paths relative to the overlay.
        let depth = dir.path().components().count() - 1;
        format!(
            "{}{}",
            "../".repeat(depth),
            Path::new(ROOT).join(p).display()
        )
        .replace("//", "/")
    };
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
             resources: [{}]\ncomponents: [{}]\n",
            rel("config/default"),
            rel("config/components/cert-manager")
        ),
    )
    .unwrap();
    let mut chart = helm_template(&["--set", "webhook.certManager.enabled=true"]);
    let mut config = without_namespace(kustomize(dir.path()));
    untag_images(&mut chart, &mut config);
    assert_same(
        "cert-manager vs the cert-manager component",
        &chart,
        &config,
    );
    assert!(find(&chart, "Certificate", "celcost-webhook").is_some());
}

/// `networkPolicy.enabled=true` is config/default with the component config/network-policy;
/// without the webhook only the metrics policy remains; `metrics.secure=false` scrapes in plain
/// HTTP and turns the operator's TLS off.
#[test]
fn network_policy_renders_what_the_network_policy_component_renders() {
    if !tools("network_policy_renders_what_the_network_policy_component_renders") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rel = |p: &str| {
        let depth = dir.path().components().count() - 1;
        format!(
            "{}{}",
            "../".repeat(depth),
            Path::new(ROOT).join(p).display()
        )
        .replace("//", "/")
    };
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
             resources: [{}]\ncomponents: [{}]\n",
            rel("config/default"),
            rel("config/network-policy")
        ),
    )
    .unwrap();
    let mut chart = helm_template(&["--set", "networkPolicy.enabled=true"]);
    let mut config = without_namespace(kustomize(dir.path()));
    untag_images(&mut chart, &mut config);
    assert_same(
        "networkPolicy vs the network-policy component",
        &chart,
        &config,
    );
    let policies = |objs: &[Value]| -> Vec<String> {
        objs.iter()
            .filter(|o| o["kind"] == "NetworkPolicy")
            .map(key)
            .collect()
    };
    assert_eq!(policies(&chart).len(), 2);
    assert!(policies(&helm_template(&[])).is_empty());
    assert_eq!(
        policies(&helm_template(&[
            "--set",
            "networkPolicy.enabled=true",
            "--set",
            "webhook.enabled=false"
        ])),
        ["NetworkPolicy celcost-system/celcost-allow-metrics"]
    );

    let plain = helm_template(&[
        "--set",
        "metrics.secure=false",
        "--set",
        "metrics.serviceMonitor.enabled=true",
    ]);
    assert!(
        env(&plain).contains(&("CELCOST_METRICS_SECURE".into(), json!("false"))),
        "{:?}",
        env(&plain)
    );
    let sm = find(&plain, "ServiceMonitor", "celcost").unwrap();
    assert_eq!(sm["spec"]["endpoints"][0]["port"], "http-metrics");
    assert!(sm["spec"]["endpoints"][0]["scheme"].is_null());
    assert!(find(&plain, "Secret", "celcost-metrics-scraper-token").is_none());
    let svc = find(&plain, "Service", "celcost-metrics").unwrap();
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], "http-metrics");

    // Without the webhook there is no Secret: the certificate is self-signed, not verified.
    let no_webhook = helm_template(&[
        "--set",
        "webhook.enabled=false",
        "--set",
        "metrics.serviceMonitor.enabled=true",
    ]);
    let sm = find(&no_webhook, "ServiceMonitor", "celcost").unwrap();
    assert_eq!(sm["spec"]["endpoints"][0]["scheme"], "https");
    assert_eq!(
        sm["spec"]["endpoints"][0]["tlsConfig"],
        json!({"insecureSkipVerify": true})
    );
}

/// `reports=off` is config/default with the component config/components/no-reports: no
/// policy-report RBAC, the operator told (CELCOST_REPORTS=off); each other value grants the
/// APIs it may write to, and the operator accepts every value the schema does.
#[test]
fn reports_values_render_their_rbac_and_off_is_the_no_reports_component() {
    if !tools("reports_values_render_their_rbac_and_off_is_the_no_reports_component") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rel = |p: &str| {
        let depth = dir.path().components().count() - 1;
        format!(
            "{}{}",
            "../".repeat(depth),
            Path::new(ROOT).join(p).display()
        )
        .replace("//", "/")
    };
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
             resources: [{}]\ncomponents: [{}]\n",
            rel("config/default"),
            rel("config/components/no-reports")
        ),
    )
    .unwrap();
    let mut chart = helm_template(&["--set", "reports=off"]);
    let mut no_reports = without_namespace(kustomize(dir.path()));
    untag_images(&mut chart, &mut no_reports);
    assert_same(
        "reports off vs the no-reports component",
        &chart,
        &no_reports,
    );
    let granted = |objs: &[Value]| -> Vec<String> {
        let mut out: Vec<String> = objs
            .iter()
            .filter(|o| o["kind"] == "ClusterRole")
            .flat_map(|o| o["rules"].as_array().cloned().unwrap_or_default())
            .filter(|r| {
                r["apiGroups"].as_array().is_some_and(|g| {
                    g.iter()
                        .any(|g| g == "openreports.io" || g == "wgpolicyk8s.io")
                })
            })
            .map(|r| format!("{}/{}", r["resources"][0].as_str().unwrap(), r["verbs"]))
            .collect();
        out.sort();
        out
    };
    assert!(granted(&chart).is_empty());
    assert!(find(&chart, "ClusterRoleBinding", "celcost-reports").is_none());
    let verbs = r#"["get","create","patch"]"#;
    let both = vec![
        format!("clusterpolicyreports/{verbs}"),
        format!("clusterreports/{verbs}"),
    ];
    for (value, want, var) in [
        ("auto", both.clone(), None),
        ("both", both.clone(), Some("both")),
        ("openreports", vec![both[1].clone()], Some("openreports")),
        (
            "policyreports",
            vec![both[0].clone()],
            Some("policyreports"),
        ),
        ("off", vec![], Some("off")),
    ] {
        let objs = helm_template(&["--set", &format!("reports={value}")]);
        assert_eq!(granted(&objs), want, "reports={value}");
        let env_var: Vec<Value> = env(&objs)
            .into_iter()
            .filter(|(n, _)| n == "CELCOST_REPORTS")
            .map(|(_, v)| v)
            .collect();
        assert_eq!(
            env_var,
            var.map(|v| json!(v)).into_iter().collect::<Vec<_>>()
        );
        assert!(operator_accepts("CELCOST_REPORTS", value), "{value}");
        if !want.is_empty() {
            let b = find(&objs, "ClusterRoleBinding", "celcost-reports").unwrap();
            assert_eq!(b["roleRef"]["name"], "celcost-reports");
        }
    }
    // config/default grants what auto needs.
    let mut default = config("default");
    assert_eq!(granted(&default), both);
    default.retain(|o| {
        o["kind"] == "ClusterRoleBinding" && o["metadata"]["name"] == "celcost-reports"
    });
    assert_eq!(default.len(), 1);
    assert!(!operator_accepts("CELCOST_REPORTS", "sometimes"));
    let err = helm_template_in(
        &chart_dir(),
        RELEASE,
        NAMESPACE,
        &["--set", "reports=sometimes"],
    )
    .expect_err("refused");
    assert!(
        err.contains("- at '/reports': value must be one of"),
        "{err}"
    );
}

/// Metrics on: config/prometheus's ServiceMonitor and PrometheusRule, and config/grafana's
/// dashboard in a ConfigMap for Grafana's sidecar; the memory alert follows the memory limit.
#[test]
fn metrics_on_render_config_prometheus_and_the_dashboard() {
    if !tools("metrics_on_render_config_prometheus_and_the_dashboard") {
        return;
    }
    let on = [
        "--set",
        "metrics.serviceMonitor.enabled=true",
        "--set",
        "metrics.prometheusRule.enabled=true",
        "--set",
        "metrics.dashboard.enabled=true",
    ];
    let mut chart = helm_template(&on);
    let dashboard = find(&chart, "ConfigMap", "celcost-dashboard")
        .expect("the dashboard's ConfigMap")
        .clone();
    chart.retain(|o| o["kind"] != "ConfigMap");
    let mut config = without_namespace(config("default"));
    config.extend(config_prometheus());
    untag_images(&mut chart, &mut config);
    assert_same(
        "metrics on vs config/default + config/prometheus",
        &chart,
        &config,
    );
    for kind in ["ServiceMonitor", "PrometheusRule"] {
        assert!(find(&chart, kind, "celcost").is_some(), "{kind}");
    }

    assert_eq!(dashboard["metadata"]["namespace"], NAMESPACE);
    assert_eq!(dashboard["metadata"]["labels"]["grafana_dashboard"], "1");
    let json_text = dashboard["data"]["celcost-dashboard.json"]
        .as_str()
        .unwrap();
    let shipped: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(ROOT).join("config/grafana/celcost-dashboard.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(json_text).unwrap(),
        shipped,
        "config/grafana's dashboard"
    );

    // Off by default; each switch alone; extra labels for Prometheus' selectors.
    let kinds = |objs: &[Value]| -> Vec<String> {
        let mut k: Vec<String> = objs
            .iter()
            .filter(|o| {
                matches!(
                    o["kind"].as_str(),
                    Some("ServiceMonitor" | "PrometheusRule" | "ConfigMap")
                )
            })
            .map(key)
            .collect();
        k.sort();
        k
    };
    assert!(kinds(&helm_template(&[])).is_empty());
    assert_eq!(
        kinds(&helm_template(&[
            "--set",
            "metrics.serviceMonitor.enabled=true",
            "--set",
            "metrics.serviceMonitor.labels.release=prometheus",
            "--set",
            "metrics.serviceMonitor.interval=30s"
        ])),
        ["ServiceMonitor celcost-system/celcost"]
    );
    let sm = helm_template(&[
        "--set",
        "metrics.serviceMonitor.enabled=true",
        "--set",
        "metrics.serviceMonitor.labels.release=prometheus",
        "--set",
        "metrics.serviceMonitor.interval=30s",
    ]);
    let sm = find(&sm, "ServiceMonitor", "celcost").unwrap();
    assert_eq!(sm["metadata"]["labels"]["release"], "prometheus");
    assert_eq!(sm["spec"]["endpoints"][0]["interval"], "30s");

    // The memory alert follows resources.limits.memory.
    let memory_alert = |args: &[&str]| -> Option<Value> {
        let mut a = vec!["--set", "metrics.prometheusRule.enabled=true"];
        a.extend(args);
        let objs = helm_template(&a);
        let rule = find(&objs, "PrometheusRule", "celcost").unwrap();
        rule["spec"]["groups"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["rules"].as_array().unwrap())
            .find(|r| r["alert"] == "CelCostMemoryNearLimit")
            .cloned()
    };
    let alert = memory_alert(&["--set", "resources.limits.memory=1Gi"]).unwrap();
    assert_eq!(
        alert["expr"],
        "max by (pod) (celcost_process_resident_memory_bytes) > 0.9 * 1024 * 1024 * 1024"
    );
    assert!(
        alert["annotations"]["summary"]
            .as_str()
            .unwrap()
            .ends_with("near the Deployment's 1024 MiB limit"),
        "{alert}"
    );
    assert!(
        memory_alert(&["--set", "resources.limits.memory=null"]).is_none(),
        "no memory limit, no alert about it"
    );
}

fn config_prometheus() -> Vec<Value> {
    config("prometheus")
}

/// A release of another name in another namespace is the same install, renamed: every name
/// derives from the release, every reference follows, and the operator is told the names that
/// are not its defaults (the Lease, the webhook's Service, Secret and configuration).
#[test]
fn another_release_is_the_same_install_renamed() {
    if !tools("another_release_is_the_same_install_renamed") {
        return;
    }
    let default = helm_template(&[]);
    let mut other = helm_template_in(&chart_dir(), "acme", "tools", &[]).unwrap();
    // The operator is told the names.
    let told: Vec<(String, Value)> = env(&other)
        .into_iter()
        .filter(|(n, _)| !env(&default).iter().any(|(d, _)| d == n))
        .collect();
    assert_eq!(
        told,
        [
            (
                "CELCOST_LEADER_ELECTION_LEASE_NAME".into(),
                json!("acme-celcost")
            ),
            (
                "CELCOST_WEBHOOK_SERVICE".into(),
                json!("acme-celcost-webhook")
            ),
            (
                "CELCOST_WEBHOOK_SECRET".into(),
                json!("acme-celcost-webhook-tls")
            ),
            (
                "CELCOST_WEBHOOK_CONFIGURATION".into(),
                json!("acme-celcost")
            ),
            (
                "CELCOST_METRICS_SERVICE".into(),
                json!("acme-celcost-metrics")
            ),
        ]
    );
    // Those objects exist under those names, and the rights name them.
    assert!(find(&other, "Service", "acme-celcost-webhook").is_some());
    assert!(find(&other, "ValidatingWebhookConfiguration", "acme-celcost").is_some());
    let role = find(&other, "Role", "acme-celcost-webhook").unwrap();
    assert_eq!(
        role["rules"][0]["resourceNames"],
        json!(["acme-celcost-webhook-tls"])
    );
    let lease = find(&other, "Role", "acme-celcost-leader-election").unwrap();
    assert_eq!(lease["rules"][0]["resourceNames"], json!(["acme-celcost"]));
    // Renamed back, without those variables, it is the default install.
    fn rename(v: &mut Value) {
        match v {
            Value::String(s) => {
                *s = s.replace("acme-celcost", "celcost");
                if s == "tools" {
                    *s = NAMESPACE.to_string();
                }
            }
            Value::Array(a) => a.iter_mut().for_each(rename),
            Value::Object(m) => m.values_mut().for_each(rename),
            _ => {}
        }
    }
    other.iter_mut().for_each(rename);
    for o in &mut other {
        if o["kind"] == "Deployment" {
            let env = o["spec"]["template"]["spec"]["containers"][0]["env"]
                .as_array_mut()
                .unwrap();
            env.retain(|e| !told.iter().any(|(n, _)| e["name"] == json!(n)));
        }
    }
    assert_same("release acme in tools, renamed", &other, &default);
}

/// Every value users tune reaches the pod, and the operator's flags only as the environment
/// variables `celcost controller --help` lists.
#[test]
fn values_reach_the_pod_and_the_operators_flags() {
    if !tools("values_reach_the_pod_and_the_operators_flags") {
        return;
    }
    let objs = helm_template(&[
        "--set",
        "image.repository=registry.example/celcost",
        "--set",
        "image.tag=v9",
        "--set",
        "image.pullPolicy=Always",
        "--set",
        "replicaCount=3",
        "--set",
        "imagePullSecrets[0].name=regcred",
        "--set",
        "resources.limits.memory=512Mi",
        "--set",
        "nodeSelector.kubernetes\\.io/os=linux",
        "--set-json",
        r#"tolerations=[{"key":"dedicated","operator":"Exists","effect":"NoSchedule"}]"#,
        "--set-json",
        r#"affinity={"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"x","operator":"Exists"}]}]}}}"#,
        "--set",
        "controller.logLevel=info\\,celcost=debug",
        "--set",
        "controller.logFormat=text",
        "--set",
        "controller.nearBudgetPercent=90",
        "--set",
        "controller.kubernetesVersion=1.37",
        "--set",
        "controller.estimateMaxSteps=5000000",
        "--set",
        "controller.estimateMaxMemoryMiB=32",
        "--set",
        "controller.memoryBudgetMiB=8",
        "--set",
        "controller.watchBufferMiB=2",
        "--set",
        "controller.concurrency=4",
        "--set",
        "extraEnv[0].name=CELCOST_RESYNC_SECONDS",
        "--set-string",
        "extraEnv[0].value=600",
    ]);
    let d = find(&objs, "Deployment", "celcost").unwrap();
    assert_eq!(d["spec"]["replicas"], 3);
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["imagePullSecrets"], json!([{"name": "regcred"}]));
    assert_eq!(pod["nodeSelector"], json!({"kubernetes.io/os": "linux"}));
    assert_eq!(pod["tolerations"][0]["key"], "dedicated");
    assert!(pod["affinity"]["nodeAffinity"].is_object());
    let c = container(&objs);
    assert_eq!(c["image"], "registry.example/celcost:v9");
    assert_eq!(c["imagePullPolicy"], "Always");
    assert_eq!(c["resources"]["limits"]["memory"], "512Mi");
    assert_eq!(
        c["resources"]["requests"]["memory"], "64Mi",
        "merged with the defaults"
    );
    assert_eq!(
        d["metadata"]["labels"]["app.kubernetes.io/version"], "v9",
        "the version label is the image's"
    );
    let env: BTreeMap<String, Value> = env(&objs).into_iter().collect();
    for (name, value) in [
        ("RUST_LOG", "info,celcost=debug"),
        ("CELCOST_LOG_FORMAT", "text"),
        ("CELCOST_NEAR_BUDGET_PERCENT", "90"),
        ("CELCOST_KUBERNETES_VERSION", "1.37"),
        ("CELCOST_ESTIMATE_MAX_STEPS", "5000000"),
        ("CELCOST_ESTIMATE_MAX_MEMORY_MIB", "32"),
        ("CELCOST_MEMORY_BUDGET_MIB", "8"),
        ("CELCOST_WATCH_BUFFER_MIB", "2"),
        ("CELCOST_CONCURRENCY", "4"),
        ("CELCOST_RESYNC_SECONDS", "600"),
    ] {
        assert_eq!(env.get(name), Some(&json!(value)), "{name}");
    }
    // The PDB goes with one replica (it would block every drain).
    assert!(find(&objs, "PodDisruptionBudget", "celcost").is_some());
    let one = helm_template(&["--set", "replicaCount=1"]);
    assert!(find(&one, "PodDisruptionBudget", "celcost").is_none());

    // No invented flag: every variable but RUST_LOG is one the operator reads.
    let help = Command::new(env!("CARGO_BIN_EXE_celcost"))
        .args(["controller", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for name in env.keys().filter(|n| *n != "RUST_LOG") {
        assert!(
            help.contains(&format!("[env: {name}=")),
            "{name} is not a flag's variable in `celcost controller --help`"
        );
    }
    let other = helm_template_in(&chart_dir(), "acme", "tools", &[]).unwrap();
    for (name, _) in self::env(&other) {
        assert!(
            name == "RUST_LOG" || help.contains(&format!("[env: {name}=")),
            "{name}"
        );
    }
}

/// `celcost controller` with `name=value` in its environment and no cluster: whether its flag
/// parsing accepted the value (it then stops at the missing cluster, exit 1; clap's refusal is
/// exit 2).
fn operator_accepts(name: &str, value: &str) -> bool {
    let out = Command::new(env!("CARGO_BIN_EXE_celcost"))
        .arg("controller")
        .env(name, value)
        .env("KUBECONFIG", "/nonexistent/celcost-helm-test")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .unwrap();
    match out.status.code() {
        Some(2) => false,
        Some(1) => true,
        other => panic!(
            "celcost controller with {name}={value}: {other:?}\n{}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// values.schema.json refuses bad values with Helm's own message, and accepts exactly what the
/// operator's flags accept at their bounds.
#[test]
fn bad_values_are_refused_with_helms_message() {
    if !tools("bad_values_are_refused_with_helms_message") {
        return;
    }
    const HELM: &str = "values don't meet the specifications of the schema(s) in the following chart(s):\ncelcost:\n";
    for (args, message) in [
        (
            &["--set", "replicaCount=two"][..],
            "- at '/replicaCount': got string, want integer",
        ),
        (
            &["--set", "controller.nearBudgetPercent=500"],
            "- at '/controller/nearBudgetPercent': maximum: got 500, want 100",
        ),
        (
            &["--set", "replicas=2"],
            "- at '': additional properties 'replicas' not allowed",
        ),
        (
            &["--set", "webhook.enable=false"],
            "- at '/webhook': additional properties 'enable' not allowed",
        ),
        (
            &["--set", "webhook.enabled=yes"],
            "- at '/webhook/enabled': got string, want boolean",
        ),
        (
            &["--set", "image.pullPolicy=Sometimes"],
            "- at '/image/pullPolicy': value must be one of 'Always', 'IfNotPresent', 'Never'",
        ),
        (
            &["--set", "controller.kubernetesVersion=1.27"],
            "- at '/controller/kubernetesVersion': '1.27' does not match pattern",
        ),
        (
            &["--set", "controller.logFormat=yaml"],
            "- at '/controller/logFormat': value must be one of 'json', 'text'",
        ),
        (
            &["--set", "metrics.dashboard.enabled=1"],
            "- at '/metrics/dashboard/enabled': got number, want boolean",
        ),
    ] {
        let err = helm_template_in(&chart_dir(), RELEASE, NAMESPACE, args)
            .err()
            .unwrap_or_else(|| panic!("{args:?} accepted"));
        assert!(err.contains(HELM), "{args:?}: {err}");
        assert!(
            err.contains(message),
            "{args:?}: expected {message:?} in:\n{err}"
        );
    }

    // The bounds are the operator's: what the schema accepts, its flags accept, and a value
    // just outside is refused by both.
    for (value, var, ok, refused) in [
        (
            "nearBudgetPercent",
            "CELCOST_NEAR_BUDGET_PERCENT",
            &["1", "100"][..],
            &["0", "101"][..],
        ),
        (
            "concurrency",
            "CELCOST_CONCURRENCY",
            &["1", "64"],
            &["0", "65"],
        ),
        (
            "memoryBudgetMiB",
            "CELCOST_MEMORY_BUDGET_MIB",
            &["1", "1024"],
            &["0", "1025"],
        ),
        (
            "watchBufferMiB",
            "CELCOST_WATCH_BUFFER_MIB",
            &["1", "1024"],
            &["0", "1025"],
        ),
        (
            "estimateMaxMemoryMiB",
            "CELCOST_ESTIMATE_MAX_MEMORY_MIB",
            &["1", "65536"],
            &["0", "65537"],
        ),
        (
            "estimateMaxSteps",
            "CELCOST_ESTIMATE_MAX_STEPS",
            &["1", "1000000000000"],
            &["-1"],
        ),
        (
            "logFormat",
            "CELCOST_LOG_FORMAT",
            &["json", "text"],
            &["yaml"],
        ),
    ] {
        for v in ok {
            let set = format!("controller.{value}={v}");
            let objs = helm_template_in(&chart_dir(), RELEASE, NAMESPACE, &["--set", &set])
                .unwrap_or_else(|e| panic!("{set}: {e}"));
            let rendered = env(&objs)
                .into_iter()
                .find(|(n, _)| n == var)
                .map(|(_, v)| v.as_str().unwrap().to_string())
                .unwrap_or_else(|| panic!("{set}: no {var}"));
            assert_eq!(rendered, *v, "{set}");
            assert!(
                operator_accepts(var, &rendered),
                "{var}={rendered}: the operator refuses what the schema accepts"
            );
        }
        for v in refused {
            let set = format!("controller.{value}={v}");
            let err = helm_template_in(&chart_dir(), RELEASE, NAMESPACE, &["--set", &set]).err();
            assert!(
                err.is_some_and(|e| e.contains(&format!("- at '/controller/{value}'"))),
                "{set}: the schema accepts it"
            );
            assert!(
                !operator_accepts(var, v),
                "{var}={v}: the operator accepts it"
            );
        }
    }
    // estimateMaxSteps 0 (every estimate stopped at once): the operator takes it, the schema
    // does not.
    assert!(
        helm_template_in(
            &chart_dir(),
            RELEASE,
            NAMESPACE,
            &["--set", "controller.estimateMaxSteps=0"]
        )
        .is_err()
    );
    // kubernetesVersion: exactly the minors the operator has rules for (each side of both
    // ends, the forms it takes and some it does not).
    let (oldest, newest) = (
        celcost::cel::minor::OLDEST.minor,
        celcost::cel::minor::NEWEST.minor,
    );
    for minor in [
        oldest - 1,
        oldest,
        oldest + 1,
        newest - 1,
        newest,
        newest + 1,
        3,
        300,
    ] {
        for v in [
            format!("1.{minor}"),
            format!("v1.{minor}"),
            format!("1.{minor}.2"),
        ] {
            let schema = helm_template_in(
                &chart_dir(),
                RELEASE,
                NAMESPACE,
                &["--set-string", &format!("controller.kubernetesVersion={v}")],
            )
            .is_ok();
            let operator = celcost::cel::minor::parse_version(&v).is_ok();
            assert_eq!(
                schema, operator,
                "kubernetesVersion {v}: schema {schema}, operator {operator}"
            );
        }
    }
}

/// The comparison fails when either side changes: a chart whose templates or values differ,
/// and a config/ whose manifests differ, each rendered for real.
#[test]
fn a_change_on_either_side_fails_the_comparison() {
    if !tools("a_change_on_either_side_fails_the_comparison") {
        return;
    }
    let config_default = || {
        let mut c = without_namespace(config("default"));
        for d in c.iter_mut().filter(|o| o["kind"] == "Deployment") {
            d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("celcost");
        }
        c
    };
    let untag = |mut objs: Vec<Value>| {
        for d in objs.iter_mut().filter(|o| o["kind"] == "Deployment") {
            d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("celcost");
        }
        objs
    };

    // The chart: one more verb on the Lease, three replicas by default.
    let tmp = tempfile::tempdir().unwrap();
    let chart = tmp.path().join("celcost");
    copy_dir(&chart_dir(), &chart);
    edit(
        &chart.join("templates/rbac.yaml"),
        r#"verbs: ["get", "update"]"#,
        r#"verbs: ["get", "update", "delete"]"#,
    );
    edit(
        &chart.join("values.yaml"),
        "replicaCount: 2",
        "replicaCount: 3",
    );
    let changed = untag(helm_template_in(&chart, RELEASE, NAMESPACE, &[]).unwrap());
    let d = compare(&changed, &config_default());
    assert_eq!(
        d,
        [
            "Deployment celcost-system/celcost.spec.replicas: the chart has 3, config/ has 2",
            r#"Role celcost-system/celcost-leader-election.rules[0].verbs: the chart has ["get","update","delete"], config/ has ["get","update"]"#,
        ]
    );

    // config/: the webhook's timeout, and a new object.
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&Path::new(ROOT).join("config"), &tmp.path().join("config"));
    copy_dir(&Path::new(ROOT).join("crds"), &tmp.path().join("crds"));
    edit(
        &tmp.path()
            .join("config/webhook/validating_webhook_configuration.yaml"),
        "timeoutSeconds: 5",
        "timeoutSeconds: 10",
    );
    std::fs::write(
        tmp.path().join("config/manager/extra.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: celcost-extra, namespace: celcost-system}\n",
    )
    .unwrap();
    edit(
        &tmp.path().join("config/manager/kustomization.yaml"),
        "  - pdb.yaml",
        "  - pdb.yaml\n  - extra.yaml",
    );
    let mut changed = without_namespace(kustomize(&tmp.path().join("config/default")));
    for d in changed.iter_mut().filter(|o| o["kind"] == "Deployment") {
        d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("celcost");
    }
    let d = compare(&untag(helm_template(&[])), &changed);
    assert_eq!(
        d,
        [
            "ValidatingWebhookConfiguration celcost.webhooks[0].timeoutSeconds: the chart has 5, config/ has 10",
            "ConfigMap celcost-system/celcost-extra: only in config/",
        ]
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

fn edit(file: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    assert_eq!(
        text.matches(from).count(),
        1,
        "{}: {from:?}",
        file.display()
    );
    std::fs::write(file, text.replace(from, to)).unwrap();
}
