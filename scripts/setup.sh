#!/usr/bin/env bash
# Installs what strait's build and tests need on a fresh Debian machine (idempotent):
# - Debian packages to build librdkafka from source (the rdkafka dev-dependency, cmake-build);
# - chromium, the headless browser of the status page test (tests/observe.rs);
# - MIT Kerberos: the GSS-API library and headers the default `gssapi` feature links
#   (libkrb5-dev; libclang and clang for libgssapi-sys's bindgen), and the KDC, its admin tool
#   and kinit/klist for the test realm of tests/kerberos.rs (krb5-kdc, krb5-admin-server,
#   krb5-user);
# - Apache Kafka (the reference broker of the tests), fetched with Maven into
#   ~/.cache/strait/kafka-<version>/libs, unless KAFKA_HOME names a distribution (its libs/).
# - the Rust target x86_64-unknown-linux-musl and musl-tools, for the container image's static
#   binary (scripts/image.sh, tests/image.rs);
# - a nightly Rust toolchain and cargo-fuzz, for the fuzz targets in fuzz/ (libFuzzer).
# - helm and promtool (tests/deploy.rs: the Helm chart, the Prometheus rules), built once with
#   `go install` from the Go module proxy into ~/.cache/strait/tools/<tool>-<version>/ and
#   linked from ~/.cache/strait/bin (a few minutes the first time, nothing after).
# nisshi (the optional `--broker nisshi` of `strait demo` and `strait bench`) is not installed:
# no test needs it.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake g++ pkg-config libcurl4-openssl-dev libssl-dev libsasl2-dev zlib1g-dev chromium
  libkrb5-dev libclang-dev clang krb5-kdc krb5-admin-server krb5-user)
# The container image (scripts/image.sh): musl-gcc for the static binary's C code, the CA bundle.
packages+=(musl-tools ca-certificates)
# Apache Kafka 4 needs Java 17 or newer; tests/mm2_interop.rs compiles a Java program (javac);
# tests/stores.rs makes JKS and PKCS12 stores with the JDK's keytool.
java_major() { java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1; }
if ! command -v java >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1 \
  || [ "$(java_major)" -lt 17 ] 2>/dev/null; then
  packages+=(openjdk-17-jdk-headless)
fi
command -v mvn >/dev/null 2>&1 || packages+=(maven)

missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  # krb5-config (pulled in by the Kerberos packages) asks for a default realm: no prompt, the
  # tests write their own krb5.conf.
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Apache Kafka: the version pinned in scripts/kafka/pom.xml, copied with its dependencies.
KAFKA_VERSION=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' scripts/kafka/pom.xml)
kafka_libs="$HOME/.cache/strait/kafka-$KAFKA_VERSION/libs"
if [ -n "${KAFKA_HOME:-}" ] && ls "$KAFKA_HOME"/libs/kafka_2.13-*.jar >/dev/null 2>&1; then
  echo "setup: using Apache Kafka from KAFKA_HOME=$KAFKA_HOME"
elif ls "$kafka_libs"/kafka_2.13-"$KAFKA_VERSION".jar "$kafka_libs"/connect-mirror-"$KAFKA_VERSION".jar >/dev/null 2>&1; then
  :
else
  echo "setup: fetching Apache Kafka $KAFKA_VERSION with Maven into $kafka_libs"
  tmp="$kafka_libs.tmp"
  rm -rf "$tmp"
  mvn -q -B -f scripts/kafka/pom.xml dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$tmp"
  rm -rf "$kafka_libs"
  mv "$tmp" "$kafka_libs"
fi

# The fuzz targets build with nightly Rust (sanitizers) and cargo-fuzz; the container image's
# static binary (scripts/image.sh) with the musl target.
export PATH="$HOME/.cargo/bin:$PATH"
if ! rustup target list --installed | grep -qx x86_64-unknown-linux-musl; then
  echo "setup: adding the Rust target x86_64-unknown-linux-musl (container image)"
  rustup target add x86_64-unknown-linux-musl
fi
if ! rustup toolchain list | grep -q '^nightly'; then
  echo "setup: installing the nightly Rust toolchain (fuzz targets)"
  rustup toolchain install nightly --profile minimal
fi
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  echo "setup: installing cargo-fuzz"
  cargo install cargo-fuzz --locked --version 0.13.2
fi

# helm and promtool, pinned; built from source by `go install` (no prebuilt download).
HELM_VERSION=v4.3.2
PROMTOOL_VERSION=v0.316.0 # the Go module version of Prometheus 3.16.0
tools="$HOME/.cache/strait/tools"
mkdir -p "$tools" "$HOME/.cache/strait/bin"
go_tool() { # name version package
  local dir="$tools/$1-$2"
  if [ ! -x "$dir/$1" ]; then
    if ! command -v go >/dev/null 2>&1; then
      [ -x /usr/local/go/bin/go ] && export PATH="$PATH:/usr/local/go/bin"
    fi
    command -v go >/dev/null 2>&1 || { echo "setup: Go is needed to build $1" >&2; exit 1; }
    echo "setup: building $1 $2 with go install (once; cached in $dir)"
    rm -rf "$dir.tmp"
    GOBIN="$dir.tmp" GOFLAGS=-buildvcs=false go install "$3@$2"
    rm -rf "$dir"
    mv "$dir.tmp" "$dir"
  fi
  ln -sfn "$dir/$1" "$HOME/.cache/strait/bin/$1"
}
go_tool helm "$HELM_VERSION" helm.sh/helm/v4/cmd/helm
go_tool promtool "$PROMTOOL_VERSION" github.com/prometheus/prometheus/cmd/promtool

echo "setup: ready (Apache Kafka $KAFKA_VERSION, helm $HELM_VERSION, promtool $PROMTOOL_VERSION)"
