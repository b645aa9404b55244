#!/usr/bin/env python3
"""Writes strait's container image as an OCI image layout, without a container engine.

Called by scripts/image.sh (which builds the static binary first); standard library only.

    oci_image.py --binary PATH --etc DIR --ca-certs FILE --out DIR --version V
                 [--source URL] [--revision SHA] [--epoch SECONDS]

Writes DIR/strait-oci/ (oci-layout, index.json, blobs/sha256/...) and DIR/strait-oci.tar (the
same layout as one tar, which is also a docker-archive: it carries the manifest.json that
`docker load` reads). One layer, from scratch:

    /strait                               the static binary (0755)
    /etc/passwd, /etc/group               root, and strait (65532:65532), the user it runs as
    /etc/hosts, /etc/nsswitch.conf        localhost, for a runtime that does not mount its own
    /etc/ssl/certs/ca-certificates.crt    the CA bundle, for TLS to brokers and token endpoints
    /etc/strait/                          where the configuration is mounted (read-only)
    /tmp/                                 an empty mount point (1777); strait does not write it

Deterministic: every entry owned by 0:0 with mtime --epoch (SOURCE_DATE_EPOCH), entries sorted,
gzip without a name or time, JSON with sorted keys: the same inputs give the same digests.
"""

import argparse
import datetime
import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile

USER = "65532:65532"
STATUS_PORT = "8083/tcp"
CONFIG_PATH = "/etc/strait/strait.toml"
ETC_FILES = ["group", "hosts", "nsswitch.conf", "passwd"]


def layer_entries(args):
    """(path, mode, bytes or None for a directory), sorted by path."""
    def read(path):
        with open(path, "rb") as f:
            return f.read()

    entries = [
        ("etc", 0o755, None),
        ("etc/ssl", 0o755, None),
        ("etc/ssl/certs", 0o755, None),
        ("etc/ssl/certs/ca-certificates.crt", 0o644, read(args.ca_certs)),
        ("etc/strait", 0o755, None),
        ("strait", 0o755, read(args.binary)),
        ("tmp", 0o1777, None),
    ]
    entries += [("etc/" + name, 0o644, read(os.path.join(args.etc, name))) for name in ETC_FILES]
    return sorted(entries, key=lambda e: e[0])


def layer_tar(entries, epoch):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path, mode, data in entries:
            info = tarfile.TarInfo(path)
            info.mode = mode
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mtime = epoch
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def gzipped(data):
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(data)
    return buf.getvalue()


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--binary", required=True)
    p.add_argument("--etc", required=True, help="folder with passwd, group, hosts, nsswitch.conf")
    p.add_argument("--ca-certs", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--version", required=True)
    p.add_argument("--source", default="")
    p.add_argument("--revision", default="")
    p.add_argument("--epoch", type=int, default=int(os.environ.get("SOURCE_DATE_EPOCH", "0")))
    args = p.parse_args()

    created = datetime.datetime.fromtimestamp(args.epoch, datetime.timezone.utc)
    created = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    tar = layer_tar(layer_entries(args), args.epoch)
    layer = gzipped(tar)

    labels = {
        "org.opencontainers.image.title": "strait",
        "org.opencontainers.image.description":
            "Kafka cross-cluster replicator that forwards record batches byte-for-byte",
        "org.opencontainers.image.version": args.version,
        "org.opencontainers.image.licenses": "Apache-2.0",
        "org.opencontainers.image.created": created,
    }
    if args.source:
        labels["org.opencontainers.image.source"] = args.source
    if args.revision:
        labels["org.opencontainers.image.revision"] = args.revision
    config = canonical({
        "architecture": "amd64",
        "os": "linux",
        "created": created,
        "config": {
            "User": USER,
            "Entrypoint": ["/strait"],
            "Cmd": ["run", "--config", CONFIG_PATH],
            "Env": ["PATH=/", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"],
            "WorkingDir": "/",
            "ExposedPorts": {STATUS_PORT: {}},
            "Labels": labels,
        },
        "rootfs": {"type": "layers", "diff_ids": [sha256(tar)]},
        "history": [{"created": created, "created_by": "scripts/image.sh"}],
    })
    manifest = canonical({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": sha256(config),
            "size": len(config),
        },
        "layers": [{
            "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
            "digest": sha256(layer),
            "size": len(layer),
        }],
        "annotations": {"org.opencontainers.image.version": args.version},
    })
    name = "strait:" + args.version
    index = canonical({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": sha256(manifest),
            "size": len(manifest),
            "platform": {"architecture": "amd64", "os": "linux"},
            "annotations": {
                # The tag (skopeo, podman: oci-archive:strait-oci.tar), and the full name
                # Docker 25+ and containerd give the image they load.
                "org.opencontainers.image.ref.name": args.version,
                "io.containerd.image.name": "docker.io/library/" + name,
            },
        }],
    })
    blob = lambda data: "blobs/sha256/" + sha256(data).split(":")[1]
    # docker-archive (`docker load` before Docker 25 reads only this): the same blobs.
    docker_manifest = canonical([{
        "Config": blob(config),
        "RepoTags": [name],
        "Layers": [blob(layer)],
    }])
    files = {
        "oci-layout": canonical({"imageLayoutVersion": "1.0.0"}),
        "index.json": index,
        "manifest.json": docker_manifest,
        blob(config): config,
        blob(manifest): manifest,
        blob(layer): layer,
    }

    layout = os.path.join(args.out, "strait-oci")
    shutil.rmtree(layout, ignore_errors=True)
    for path, data in files.items():
        full = os.path.join(layout, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)
    dirs = {"blobs", "blobs/sha256"}
    archive = os.path.join(args.out, "strait-oci.tar")
    with tarfile.open(archive + ".tmp", mode="w", format=tarfile.USTAR_FORMAT) as out:
        for path in sorted(set(files) | dirs):
            info = tarfile.TarInfo(path)
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mtime = args.epoch
            if path in dirs:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                out.addfile(info)
            else:
                info.mode, info.size = 0o644, len(files[path])
                out.addfile(info, io.BytesIO(files[path]))
    os.replace(archive + ".tmp", archive)

    print(json.dumps({
        "manifest": sha256(manifest),
        "config": sha256(config),
        "layer": sha256(layer),
        "layer_bytes": len(layer),
        "unpacked_bytes": sum(len(e[2]) for e in layer_entries(args) if e[2] is not None),
        "layout": layout,
        "archive": archive,
    }, indent=2))


if __name__ == "__main__":
    main()
