//! Upgrade day on the real API server: a CRD stored with a rule that the cluster's minor
//! refuses on create, left as an upgrade leaves it. The CRD is created with a cheap rule, then
//! its stored object is rewritten in etcd with a rule the API server costs over the per-rule
//! limit (what an older minor, which costed it lower, would have stored): the storage decoder
//! reads the JSON the API server wrote, whatever changed in it. Then the API server's answers to
//! updates are compared with `celcost diff` and with the operator's report:
//!
//! - an update that keeps the schema (a short name more) is accepted, and `celcost diff` says
//!   so (exit 0);
//! - an update that changes the schema (an unrelated field's description) is refused with the
//!   per-rule cost error, the same field errors `celcost diff` prints (exit 1);
//! - a create of the same object under another name is refused with the errors `celcost`
//!   gives for a create;
//! - the operator's report says the CRD is stored and served, that updates keeping its schema
//!   pass and a schema change is refused until the rule fits (`SchemaUpdatable=False`,
//!   `SchemaFrozen`), with a Warning Event and `celcost_schema_frozen` = 1.
//!
//! etcd is reached through its v3 JSON gateway over plain HTTP: `CELCOST_E2E_ETCD`
//! (`host:port`), else `127.0.0.1:$CELCOST_CLUSTER_ETCD_PORT` (12379), where
//! `../shared/k8s/cluster.sh` runs it. No tool is needed.

use super::*;

/// A rule the API server of 1.36 costs 6,291,452 (accepted).
const CHEAP: &str = "self.all(x, x.size() < 10)";
/// One it costs 18,874,356 (1.9 times the per-rule limit).
const COSTLY: &str =
    "self.all(x, x.size() < 10) && self.all(x, x.size() >= 0) && self.exists(x, x == 'a')";

fn etcd_addr() -> String {
    std::env::var("CELCOST_E2E_ETCD").unwrap_or_else(|_| {
        let port =
            std::env::var("CELCOST_CLUSTER_ETCD_PORT").unwrap_or_else(|_| "12379".to_string());
        format!("127.0.0.1:{port}")
    })
}

/// One HTTP/1.0 request to etcd; the response body.
fn etcd_http(method: &str, path: &str, body: &str) -> Result<String, String> {
    let addr = etcd_addr();
    let mut s = TcpStream::connect(&addr).map_err(|e| format!("etcd at {addr}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .map_err(|e| e.to_string())?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).map_err(|e| e.to_string())?;
    let (head, body) = buf.split_once("\r\n\r\n").ok_or("no HTTP response")?;
    if !head.starts_with("HTTP/1.0 200") && !head.starts_with("HTTP/1.1 200") {
        return Err(format!("etcd {path}: {head}"));
    }
    Ok(body.to_string())
}

const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn b64(data: &[u8]) -> String {
    let mut out = String::new();
    for c in data.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn unb64(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let (mut n, mut bits) = (0u32, 0);
    for b in s.bytes().filter(|b| *b != b'=') {
        let Some(v) = B64.iter().position(|x| *x == b) else {
            continue;
        };
        n = (n << 6) | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((n >> bits) as u8);
        }
    }
    out
}

fn etcd_key(name: &str) -> String {
    format!("/registry/apiextensions.k8s.io/customresourcedefinitions/{name}")
}

fn etcd_get(key: &str) -> Result<Option<Vec<u8>>, String> {
    let body = etcd_http(
        "POST",
        "/v3/kv/range",
        &json!({"key": b64(key.as_bytes())}).to_string(),
    )?;
    let v: Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
    Ok(v["kvs"][0]["value"].as_str().map(unb64))
}

fn etcd_put(key: &str, value: &[u8]) -> Result<(), String> {
    etcd_http(
        "POST",
        "/v3/kv/put",
        &json!({"key": b64(key.as_bytes()), "value": b64(value)}).to_string(),
    )
    .map(|_| ())
}

/// Replaces every string `from` in a JSON value by `to`; how many.
fn replace_strings(v: &mut Value, from: &str, to: &str) -> usize {
    match v {
        Value::String(s) if s == from => {
            *s = to.to_string();
            1
        }
        Value::Array(a) => a.iter_mut().map(|x| replace_strings(x, from, to)).sum(),
        Value::Object(o) => o.values_mut().map(|x| replace_strings(x, from, to)).sum(),
        _ => 0,
    }
}

fn gadgets(group: &str, plural: &str, kind: &str, rule: &str) -> Value {
    gadgets_with(group, plural, kind, &[rule])
}

/// The CRD with `rules` on `tags`.
fn gadgets_with(group: &str, plural: &str, kind: &str, rules: &[&str]) -> Value {
    let rules: Vec<Value> = rules.iter().map(|r| json!({"rule": r})).collect();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}"), "labels": {"celcost.io/e2e": "true"}},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase(), "listKind": format!("{kind}List")},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "tags": {"type": "array", "items": {"type": "string"},
                                 "x-kubernetes-validations": rules},
                        "note": {"type": "string"},
                    }
                }}
            }]
        }
    })
}

/// Rewrites the stored object of `name` in etcd with each string of `swaps` replaced (each
/// found once), and waits until the API server reads it; returns the object as it serves it.
/// `None` when the etcd reached does not hold it (not the cluster's etcd).
async fn store_as_an_older_minor(
    client: &Client,
    name: &str,
    swaps: &[(&str, &str)],
) -> Option<Value> {
    let key = etcd_key(name);
    let stored = etcd_get(&key).unwrap_or_else(|e| panic!("read {key} from etcd: {e}"))?;
    let mut object: Value = serde_json::from_slice(&stored)
        .unwrap_or_else(|e| panic!("the API server stored {name} as JSON: {e}"));
    println!(
        "{name}: stored by the API server as {}",
        object["apiVersion"]
    );
    for (from, to) in swaps {
        assert_eq!(
            replace_strings(&mut object, from, to),
            1,
            "{from} in {object}"
        );
    }
    etcd_put(&key, &serde_json::to_vec(&object).unwrap()).expect("write to etcd");
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let last = swaps.last().map(|s| s.1.to_string()).unwrap_or_default();
    Some(
        eventually(
            "the API server reads the rewritten object",
            Duration::from_secs(30),
            || async {
                let v = serde_json::to_value(api.get(name).await.ok()?).unwrap();
                let rules = &v["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
                    ["tags"]["x-kubernetes-validations"];
                rules
                    .as_array()?
                    .iter()
                    .any(|r| r["rule"] == json!(last))
                    .then_some(v)
            },
        )
        .await,
    )
}

/// A write of a CRD as raw JSON (POST, or PUT of `name`): the status code and the field errors
/// of a refusal (`<field>: <message>` of the Status's causes, as `field.Error` renders them).
async fn write_crd(client: &Client, name: Option<&str>, body: &Value) -> (u16, Vec<String>) {
    let path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let req = match name {
        Some(n) => http::Request::put(format!("{path}/{n}")),
        None => http::Request::post(path),
    }
    .header("content-type", "application/json")
    .body(kube::client::Body::from(serde_json::to_vec(body).unwrap()))
    .unwrap();
    let resp = client.send(req).await.expect("the API server answers");
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect_bytes().await.unwrap();
    let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let mut causes: Vec<String> = v["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{}: {}",
                c["field"].as_str().unwrap_or_default(),
                c["message"].as_str().unwrap_or_default()
            )
        })
        .collect();
    causes.sort();
    (code, causes)
}

/// `celcost diff -o json BASE HEAD` (BASE and HEAD written to files): the exit status and the
/// first object's line.
fn celcost_diff(dir: &std::path::Path, tag: &str, base: &Value, head: &Value) -> (i32, Value) {
    let (b, h) = (
        dir.join(format!("{tag}-base.json")),
        dir.join(format!("{tag}-head.json")),
    );
    std::fs::write(&b, serde_json::to_vec_pretty(base).unwrap()).unwrap();
    std::fs::write(&h, serde_json::to_vec_pretty(head).unwrap()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_celcost"))
        .args(["diff", "-o", "json"])
        .arg(&b)
        .arg(&h)
        .output()
        .expect("run celcost diff");
    let text = String::from_utf8_lossy(&out.stdout);
    let line: Value = serde_json::from_str(text.lines().next().unwrap_or("null")).unwrap();
    (out.status.code().unwrap_or(-1), line)
}

fn sorted(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| e.as_str().unwrap_or_default().to_string())
        .collect();
    out.sort();
    out
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG, and its etcd"]
async fn a_stored_crd_over_the_limit_keeps_its_schema_and_nothing_else() {
    let _serial = SERIAL.lock().await;
    let test = "a_stored_crd_over_the_limit_keeps_its_schema_and_nothing_else";
    let Some(client) = cluster(test).await else {
        return;
    };
    if let Err(e) = etcd_http("GET", "/health", "") {
        skip(
            test,
            &format!("no etcd of the cluster to write to ({e}); set CELCOST_E2E_ETCD=host:port"),
        );
        return;
    }
    install_crd(&client).await;
    let info = client.apiserver_version().await.unwrap();
    let minor = model_version(&info.major, &info.minor);
    let group = format!("upd-{}.e2e.celcost.io", suffix());
    let name = format!("gadgets.{group}");
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());

    // Created with the cheap rule: accepted.
    create_crd(&client, &gadgets(&group, "gadgets", "Gadget", CHEAP)).await;
    wait_established(&client, &name).await;

    // Stored as an older minor would have stored it: the costly rule in place of the cheap one.
    let Some(base) = store_as_an_older_minor(&client, &name, &[(CHEAP, COSTLY)]).await else {
        delete_crd(&client, &name).await;
        skip(
            test,
            &format!("the etcd at {} is not this cluster's", etcd_addr()),
        );
        return;
    };

    let dir = tempfile::tempdir().unwrap();
    let estimator = Estimator::new(minor);
    let create = estimator.estimate_crd(&base, "cluster");
    assert!(
        !create.valid,
        "{minor} refuses the rule on create: {create:?}"
    );

    // A create of the same object under another name: refused, with celcost's create errors.
    let copy = gadgets(&group, "gizmos", "Gizmo", COSTLY);
    let (code, api_create) = write_crd(&client, None, &copy).await;
    let mut ours = estimator.estimate_crd(&copy, "copy").errors;
    ours.sort();
    println!("create: the API server answers {code}: {api_create:#?}");
    assert_eq!(code, 422);
    assert_eq!(api_create, ours, "create errors");

    // An update that keeps the schema (a short name more): accepted.
    let (exit, diff, code, causes) = loop {
        let base = serde_json::to_value(api.get(&name).await.unwrap()).unwrap();
        let mut keep = base.clone();
        keep["spec"]["names"]["shortNames"] = json!(["gd"]);
        let (exit, diff) = celcost_diff(dir.path(), "keep", &base, &keep);
        match write_crd(&client, Some(&name), &keep).await {
            (409, _) => tokio::time::sleep(Duration::from_millis(200)).await,
            (code, causes) => break (exit, diff, code, causes),
        }
    };
    println!(
        "keep the schema: the API server answers {code}; celcost diff exits {exit}, create {} / update {}",
        diff["validAfter"], diff["update"]["valid"]
    );
    assert_eq!(code, 200, "{causes:?}");
    assert_eq!(exit, 0, "{diff}");
    assert_eq!(diff["validAfter"], false);
    assert_eq!(diff["update"]["valid"], true);
    assert_eq!(diff["update"]["versions"][0]["schemaUnchanged"], true);

    // An update that changes the schema (an unrelated description): refused until the rule fits.
    // (The API server's own controllers write the status after the update: a 409 is read again.)
    let (exit, diff, code, causes) = loop {
        let base = serde_json::to_value(api.get(&name).await.unwrap()).unwrap();
        let mut change = base.clone();
        change["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["note"]["description"] =
            json!("a note");
        let (exit, diff) = celcost_diff(dir.path(), "change", &base, &change);
        match write_crd(&client, Some(&name), &change).await {
            (409, _) => tokio::time::sleep(Duration::from_millis(200)).await,
            (code, causes) => break (exit, diff, code, causes),
        }
    };
    println!(
        "change the schema: the API server answers {code}: {causes:#?}; celcost diff exits {exit}: {:#?}",
        diff["update"]["errors"]
    );
    assert_eq!(code, 422);
    assert_eq!(exit, 1, "{diff}");
    assert_eq!(sorted(&diff["update"]["errors"]), causes, "update errors");
    assert!(
        causes[0].contains("x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 1.9x"),
        "{causes:?}"
    );

    // Six such rules: the total, over 100,000,000, is still checked: every update is refused.
    let total_name = format!("widgets.{group}");
    let cheap: Vec<String> = (0..6)
        .map(|i| CHEAP.replace("10", &format!("1{i}")))
        .collect();
    let costly: Vec<String> = (0..6)
        .map(|i| COSTLY.replace("10", &format!("1{i}")))
        .collect();
    create_crd(
        &client,
        &gadgets_with(
            &group,
            "widgets",
            "Widget",
            &cheap.iter().map(String::as_str).collect::<Vec<_>>(),
        ),
    )
    .await;
    wait_established(&client, &total_name).await;
    let swaps: Vec<(&str, &str)> = cheap
        .iter()
        .map(String::as_str)
        .zip(costly.iter().map(String::as_str))
        .collect();
    store_as_an_older_minor(&client, &total_name, &swaps)
        .await
        .expect("the same etcd");
    let (exit, diff, code, total_causes) = loop {
        let total_base = serde_json::to_value(api.get(&total_name).await.unwrap()).unwrap();
        let mut keep = total_base.clone();
        keep["spec"]["names"]["shortNames"] = json!(["wd"]);
        let (exit, diff) = celcost_diff(dir.path(), "total", &total_base, &keep);
        match write_crd(&client, Some(&total_name), &keep).await {
            (409, _) => tokio::time::sleep(Duration::from_millis(200)).await,
            (code, causes) => break (exit, diff, code, causes),
        }
    };
    println!(
        "keep the schema, total over: the API server answers {code}: {total_causes:#?}; celcost diff exits {exit}"
    );
    assert_eq!(code, 422);
    assert_eq!(exit, 1, "{diff}");
    assert_eq!(
        sorted(&diff["update"]["errors"]),
        total_causes,
        "update errors"
    );
    assert!(
        total_causes.iter().any(|c| c.starts_with(
            "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget"
        )),
        "{total_causes:?}"
    );
    assert!(
        !total_causes
            .iter()
            .any(|c| c.contains("Forbidden: estimated rule cost exceeds budget")),
        "no per-rule error for an unchanged schema: {total_causes:?}"
    );

    // The operator, started on the upgraded cluster: stored and served, schema frozen.
    let mut op = Operator::start("upgrade-day", &[]);
    op.wait_ready(Duration::from_secs(60)).await;
    let generation = api.get(&name).await.unwrap().metadata.generation.unwrap();
    let report_name = format!("crd.{name}");
    let r = report_for(&client, &report_name, generation).await;
    let status = r.status.as_ref().unwrap();
    assert_eq!(status.valid, Some(false));
    let u = status.update.as_ref().expect("status.update");
    assert!(u.valid, "{u:?}");
    assert_eq!(
        (u.held[0].path.as_str(), u.held[0].cost),
        ("^.tags", 18_874_356)
    );
    assert_eq!(u.held[0].error, causes[0], "the error a schema change gets");
    assert_eq!(condition(&r, "SchemaUpdatable"), ("False", "SchemaFrozen"));
    let message = |t: &str| {
        status
            .conditions
            .iter()
            .find(|c| c.type_ == t)
            .map(|c| c.message.clone())
            .unwrap()
    };
    let frozen = message("SchemaUpdatable");
    println!("SchemaUpdatable: {frozen}");
    assert!(
        frozen.contains("The cluster stores and serves this object"),
        "{frozen}"
    );
    assert!(
        frozen.contains("Updates that keep the schema of v1 pass"),
        "{frozen}"
    );
    assert!(
        frozen.contains(
            "an update that changes the schema of v1 is refused until ^.tags [0] (rule 18,874,356"
        ),
        "{frozen}"
    );
    for t in ["Ready", "SchemaUpdatable"] {
        assert!(
            !message(t).to_lowercase().contains("reject"),
            "{t}: {}",
            message(t)
        );
    }
    let ev = eventually("a SchemaFrozen event", Duration::from_secs(30), || async {
        events_about(&client, &name)
            .await
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("SchemaFrozen"))
    })
    .await;
    assert_eq!(ev.type_.as_deref(), Some("Warning"));
    assert_eq!(ev.note.as_deref(), Some(frozen.as_str()));
    eventually(
        "celcost_schema_frozen = 1",
        Duration::from_secs(30),
        || async {
            (op.metric_with("celcost_schema_frozen", &format!("name=\"{name}\"")) == 1.0)
                .then_some(())
        },
    )
    .await;
    println!(
        "operator: SchemaUpdatable=False/SchemaFrozen, event {:?}",
        ev.reason
    );
    // Every update refused: UpdatesRefused, its event and gauge.
    let r = report_for(&client, &format!("crd.{total_name}"), 1).await;
    assert_eq!(
        condition(&r, "SchemaUpdatable"),
        ("False", "UpdatesRefused")
    );
    let refused = eventually(
        "an UpdatesRefused event",
        Duration::from_secs(30),
        || async {
            events_about(&client, &total_name)
                .await
                .into_iter()
                .find(|e| e.reason.as_deref() == Some("UpdatesRefused"))
        },
    )
    .await;
    println!("operator: UpdatesRefused: {:?}", refused.note);
    assert!(
        refused
            .note
            .as_deref()
            .unwrap_or_default()
            .contains("It refuses every update of it too, even one that keeps its schemas: spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total"),
        "{refused:?}"
    );
    eventually(
        "celcost_updates_refused = 1",
        Duration::from_secs(30),
        || async {
            (op.metric_with("celcost_updates_refused", &format!("name=\"{total_name}\"")) == 1.0)
                .then_some(())
        },
    )
    .await;
    drop(op);
    delete_crd(&client, &name).await;
    delete_crd(&client, &total_name).await;
}
