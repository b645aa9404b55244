#!/usr/bin/env bash
# Builds strait's container image without a container engine or a base image (docs/image.md):
# a static binary (Rust's x86_64-unknown-linux-musl target), then scripts/oci_image.py writes
# the image from scratch as an OCI image layout:
#   target/image/strait-oci/      the layout (oci-layout, index.json, blobs/sha256/...)
#   target/image/strait-oci.tar   the same as one file: `podman load -i`, `skopeo copy
#                                 oci-archive:...`, and `docker load -i` (it also carries the
#                                 docker-archive manifest.json)
# The image's files are those of the Dockerfile: keep both in step.
#
# Environment:
#   STRAIT_IMAGE_TARGET_DIR  cargo's target folder for the static build (default target-static:
#                            the musl target and its profile settings rebuild every crate, so
#                            they get a folder of their own; it is reused across runs)
#   SOURCE_DATE_EPOCH        the time of every file and of the image (default: the last
#                            commit's time), so that one commit always gives the same digest
#   STRAIT_IMAGE_SOURCE      the org.opencontainers.image.source label (default: Cargo.toml's
#                            `repository`, none if it has none)
set -euo pipefail
cd "$(dirname "$0")/.."
# Run from a test (tests/image.rs), the environment holds cargo's variables for the test
# (CARGO_PKG_NAME, CARGO_MANIFEST_DIR, ...); build scripts that watch them (ring's) would then
# rebuild, and again at the next run from a shell. The build sees neither.
while read -r v; do unset "$v"; done < <(compgen -e | grep -E '^CARGO_(PKG_|MANIFEST_|CRATE_|BIN_|PRIMARY_|TARGET_TMPDIR)' || true)
export PATH="$HOME/.cargo/bin:$PATH"

target=x86_64-unknown-linux-musl
target_dir=${STRAIT_IMAGE_TARGET_DIR:-target-static}
out=target/image

if ! rustup target list --installed | grep -qx "$target"; then
  echo "image: adding the Rust target $target"
  rustup target add "$target"
fi
# ring and zstd compile C: with musl-gcc (Debian's musl-tools), which the cc crate picks for
# this target.
if ! command -v musl-gcc >/dev/null 2>&1; then
  echo "image: musl-gcc not found: install Debian's musl-tools (scripts/setup.sh does)" >&2
  exit 1
fi

# Without the gssapi feature: it links the system's MIT krb5 shared libraries, which have no
# static build (docs/image.md). Debug info off and symbols stripped: a smaller image.
echo "image: building the static binary ($target, target folder $target_dir)"
CARGO_PROFILE_RELEASE_DEBUG=false CARGO_PROFILE_RELEASE_STRIP=symbols \
  cargo build --release --locked --target "$target" --target-dir "$target_dir" \
  --no-default-features --features cli,aws-msk-iam --bin strait
binary="$target_dir/$target/release/strait"

# Static: no program interpreter, no shared library.
if ! file -L "$binary" | grep -q 'statically linked\|static-pie linked'; then
  echo "image: $binary is not statically linked: $(file -L "$binary")" >&2
  exit 1
fi

ca_certs=/etc/ssl/certs/ca-certificates.crt
if [ ! -s "$ca_certs" ]; then
  echo "image: no CA bundle at $ca_certs: install Debian's ca-certificates" >&2
  exit 1
fi

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
source_url=${STRAIT_IMAGE_SOURCE:-$(sed -n 's/^repository = "\(.*\)"$/\1/p' Cargo.toml | head -n1)}
revision=$(git rev-parse HEAD 2>/dev/null || true)
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}

mkdir -p "$out"
python3 scripts/oci_image.py --binary "$binary" --etc deploy/image/rootfs/etc \
  --ca-certs "$ca_certs" --out "$out" --version "$version" --source "$source_url" \
  --revision "$revision" --epoch "$epoch"
