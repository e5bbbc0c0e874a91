#!/usr/bin/env bash
# Builds celcost's container image without a Docker daemon: the release binary that
# `cargo build --release --locked` makes on this machine (the Dockerfile builds the same kind:
# glibc, dynamically linked) and the shared libraries `ldd` lists for it, in one layer FROM
# scratch, run as 65532:65532 with `/celcost controller` — the Dockerfile's image. Writes an OCI
# archive that `podman load`, `skopeo`, `ctr -n k8s.io images import` or `cluster.sh load-image`
# read.
#
# Usage: hack/image.sh [-o OUT.tar] [--binary PATH] NAME
#   NAME      the image reference, e.g. celcost:0.1.0 or localhost/celcost:dev
#   -o        the archive (default target/celcost-image.tar)
#   --binary  pack this binary instead of building target/release/celcost
# Needs: cargo (unless --binary), ldd, python3.
set -euo pipefail
cd "$(dirname "$0")/.."

out=target/celcost-image.tar
binary=
while [ $# -gt 0 ]; do
  case $1 in
    -o) out=$2; shift 2 ;;
    --binary) binary=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "hack/image.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || { echo "usage: hack/image.sh [-o OUT.tar] [--binary PATH] NAME" >&2; exit 2; }
name=$1

if [ -z "$binary" ]; then
  cargo build --release --locked --features system-allocator --bin celcost >&2
  binary=target/release/celcost
fi
[ -x "$binary" ] || { echo "hack/image.sh: $binary is not an executable" >&2; exit 2; }

# The libraries the dynamic loader will look for, at the paths it looks for them.
libs=$(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u)
mkdir -p "$(dirname "$out")"

python3 - "$name" "$binary" "$out" $libs <<'PY'
import hashlib, io, json, os, sys, tarfile, time

name, binary, out, libs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]

def normalized(ref):
    """The full reference a kubelet resolves `ref` to (celcost:dev → docker.io/library/celcost:dev)."""
    first, _, rest = ref.partition("/")
    if not rest:
        return "docker.io/library/" + ref
    if "." in first or ":" in first or first == "localhost":
        return ref
    return "docker.io/" + ref

full = normalized(name if ":" in name.rsplit("/", 1)[-1] or "@" in name else name + ":latest")
epoch = 0  # reproducible: the same binary gives the same image

def add_bytes(tar, path, data, mode=0o644):
    info = tarfile.TarInfo(path)
    info.size, info.mode, info.mtime = len(data), mode, epoch
    tar.addfile(info, io.BytesIO(data))

def add_dir(tar, path, mode=0o755):
    info = tarfile.TarInfo(path)
    info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode, epoch
    tar.addfile(info)

def add_file(tar, src, path, mode):
    with open(src, "rb") as f:
        info = tarfile.TarInfo(path)
        info.size, info.mode, info.mtime = os.path.getsize(src), mode, epoch
        tar.addfile(info, f)

# The layer: the binary, its libraries (the links resolved), users and a writable /tmp.
layer = io.BytesIO()
with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as tar:
    dirs = {"etc", "tmp"}
    for lib in libs:
        parts = lib.strip("/").split("/")[:-1]
        dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    for d in sorted(dirs):
        add_dir(tar, d, 0o1777 if d == "tmp" else 0o755)
    add_file(tar, binary, "celcost", 0o755)
    for lib in libs:
        add_file(tar, os.path.realpath(lib), lib.lstrip("/"), 0o755)
    add_bytes(tar, "etc/passwd", b"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")
    add_bytes(tar, "etc/group", b"root:x:0:\nnonroot:x:65532:\n")
layer = layer.getvalue()
diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()

config = json.dumps({
    "architecture": "amd64", "os": "linux",
    "config": {"User": "65532:65532", "Entrypoint": ["/celcost"], "Cmd": ["controller"],
               "Env": ["PATH=/"], "WorkingDir": "/"},
    "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    "history": [{"created_by": "hack/image.sh"}],
}, sort_keys=True).encode()

def desc(media, data, **extra):
    return {"mediaType": media, "digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data), **extra}

layer_d = desc("application/vnd.oci.image.layer.v1.tar", layer)
config_d = desc("application/vnd.oci.image.config.v1+json", config)
manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "config": config_d, "layers": [layer_d]}, sort_keys=True).encode()
index = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                    "manifests": [desc("application/vnd.oci.image.manifest.v1+json", manifest,
                                       annotations={"io.containerd.image.name": full,
                                                    "org.opencontainers.image.ref.name": full})]},
                   sort_keys=True).encode()

tmp = out + ".part"
with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as tar:
    add_bytes(tar, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
    add_bytes(tar, "index.json", index)
    add_dir(tar, "blobs")
    add_dir(tar, "blobs/sha256")
    for data in (layer, config, manifest):
        add_bytes(tar, "blobs/sha256/" + hashlib.sha256(data).hexdigest(), data)
os.replace(tmp, out)
print(f"{out}: {full} ({len(layer) / 1048576:.1f} MiB layer: /celcost and {len(libs)} libraries)", file=sys.stderr)
PY
