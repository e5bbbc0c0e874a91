//! The public corpus's CRDs, for the benchmarks and the end-to-end tests that need many real
//! ones (the fleet benchmark, the scale tests): every `apiextensions.k8s.io/v1`
//! CustomResourceDefinition with a group under `$CELCOST_CORPUS` (the corpus or its `crds`),
//! by default `../shared/corpus/crds` beside the checkout, in file order.

// Shared by the test and bench binaries that include this file: `pub` for them, not an API.
#![allow(unreachable_pub)]

use std::path::PathBuf;

use serde_json::Value;

pub fn corpus_crds() -> Vec<Value> {
    let dir = std::env::var("CELCOST_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/crds")
        });
    let dir = if dir.join("crds").is_dir() {
        dir.join("crds")
    } else {
        dir
    };
    let mut files = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for doc in celcost::input::parse_documents(&text) {
            let Ok(v) = doc.value else { continue };
            for o in celcost::input::objects_of("", v) {
                if o.value["kind"] == "CustomResourceDefinition"
                    && o.value["apiVersion"] == "apiextensions.k8s.io/v1"
                    && o.value["spec"]["group"].is_string()
                {
                    out.push(o.value);
                }
            }
        }
    }
    out
}
