//! The image without a Docker daemon (hack/image.sh) is the Dockerfile's image: the same kind
//! of binary (glibc, dynamically linked, `cargo build --release --locked`), with the libraries
//! it loads, run as 65532 with `/celcost controller`; an OCI archive containerd and podman read.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn tar_list(archive: &Path) -> Vec<String> {
    let out = Command::new("tar")
        .arg("tvf")
        .arg(archive)
        .output()
        .expect("tar");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Unpacks `archive` into a new directory.
fn unpack(archive: &Path, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let st = Command::new("tar")
        .arg("xf")
        .arg(archive)
        .arg("-C")
        .arg(dir)
        .status()
        .expect("tar");
    assert!(st.success());
}

fn blob(dir: &Path, digest: &str) -> Vec<u8> {
    std::fs::read(
        dir.join("blobs/sha256")
            .join(digest.strip_prefix("sha256:").unwrap()),
    )
    .unwrap()
}

/// Runs hack/image.sh on a small dynamically linked binary (the packing is what is tested;
/// the release build it does by default is the Dockerfile's `cargo build`).
fn pack(name: &str, out: &Path) -> std::process::Output {
    Command::new("bash")
        .arg(root().join("hack/image.sh"))
        .args(["--binary", "/bin/true", "-o"])
        .arg(out)
        .arg(name)
        .output()
        .expect("run hack/image.sh")
}

#[test]
fn the_daemonless_image_is_the_dockerfiles() {
    if Command::new("ldd").arg("/bin/true").output().is_err() {
        crate::common::skip(
            "CELCOST_REQUIRE_LDD",
            "the_daemonless_image_is_the_dockerfiles",
            "no ldd on this machine",
        );
        return;
    }
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("image-test");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let archive = tmp.join("image.tar");
    let out = pack("localhost/celcost:dev", &archive);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // An OCI layout: the index names the image in full, as the kubelet resolves it.
    let dir = tmp.join("oci");
    unpack(&archive, &dir);
    assert!(dir.join("oci-layout").exists());
    let index: Value =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
    let m = &index["manifests"][0];
    assert_eq!(
        m["annotations"]["io.containerd.image.name"],
        "localhost/celcost:dev"
    );
    let manifest: Value =
        serde_json::from_slice(&blob(&dir, m["digest"].as_str().unwrap())).unwrap();
    let config: Value =
        serde_json::from_slice(&blob(&dir, manifest["config"]["digest"].as_str().unwrap()))
            .unwrap();

    // The Dockerfile's user, entrypoint and command.
    let dockerfile = std::fs::read_to_string(root().join("Dockerfile")).unwrap();
    assert!(dockerfile.contains("USER 65532:65532"));
    assert!(dockerfile.contains(r#"ENTRYPOINT ["/celcost"]"#));
    assert!(dockerfile.contains(r#"CMD ["controller"]"#));
    assert_eq!(config["config"]["User"], "65532:65532");
    assert_eq!(
        config["config"]["Entrypoint"],
        serde_json::json!(["/celcost"])
    );
    assert_eq!(config["config"]["Cmd"], serde_json::json!(["controller"]));
    // The same kind of binary: the Dockerfile builds with cargo on Debian 12 and runs on a
    // glibc base (distroless/cc), as hack/image.sh does here.
    assert!(
        dockerfile
            .contains("cargo build --release --locked --features system-allocator --bin celcost")
    );
    assert!(dockerfile.contains("FROM rust:1.95-bookworm"));
    assert!(dockerfile.contains("FROM gcr.io/distroless/cc-debian12:nonroot"));

    // The layer: the binary, every library ldd names (the loader at its absolute path), users
    // with 65532, a writable /tmp.
    let layer = dir.join("blobs/sha256").join(
        manifest["layers"][0]["digest"]
            .as_str()
            .unwrap()
            .strip_prefix("sha256:")
            .unwrap(),
    );
    let entries = tar_list(&layer);
    let has = |path: &str| entries.iter().any(|e| e.ends_with(&format!(" {path}")));
    assert!(has("celcost"), "{entries:?}");
    let ldd = String::from_utf8(
        Command::new("ldd")
            .arg("/bin/true")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    for lib in ldd
        .lines()
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with('/')))
    {
        assert!(
            has(lib.trim_start_matches('/')),
            "{lib} missing: {entries:?}"
        );
    }
    assert!(
        entries
            .iter()
            .any(|e| e.starts_with("drwxrwxrwt") && e.trim_end_matches('/').ends_with(" tmp")),
        "{entries:?}"
    );
    let layer_dir = tmp.join("layer");
    unpack(&layer, &layer_dir);
    let passwd = std::fs::read_to_string(layer_dir.join("etc/passwd")).unwrap();
    assert!(passwd.contains(":65532:65532:"), "{passwd}");
    assert_eq!(
        std::fs::read(layer_dir.join("celcost")).unwrap(),
        std::fs::read("/bin/true").unwrap()
    );

    // Reproducible, and a short name is normalized as the kubelet does it.
    let again = tmp.join("again.tar");
    assert!(pack("localhost/celcost:dev", &again).status.success());
    assert_eq!(
        std::fs::read(&archive).unwrap(),
        std::fs::read(&again).unwrap()
    );
    let short = tmp.join("short.tar");
    assert!(pack("celcost:0.1.0", &short).status.success());
    let d2 = tmp.join("short");
    unpack(&short, &d2);
    let index: Value =
        serde_json::from_slice(&std::fs::read(d2.join("index.json")).unwrap()).unwrap();
    assert_eq!(
        index["manifests"][0]["annotations"]["io.containerd.image.name"],
        "docker.io/library/celcost:0.1.0"
    );

    // Bad usage is an error, not an archive.
    let out = Command::new("bash")
        .arg(root().join("hack/image.sh"))
        .args(["--binary", "/nonexistent", "x:y"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
