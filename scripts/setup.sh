#!/usr/bin/env bash
# Installs what strait's build and tests need on a fresh Debian machine (idempotent):
# - Debian packages to build librdkafka from source (the rdkafka dev-dependency, cmake-build);
# - chromium, the headless browser of the status page test (tests/observe.rs);
# - Apache Kafka (the reference broker of the tests), fetched with Maven into
#   ~/.cache/strait/kafka-<version>/libs, unless KAFKA_HOME names a distribution (its libs/);
# - nisshi, the Kafka-compatible test broker, into ~/.cargo/bin (about 15 minutes the first time).
set -euo pipefail
cd "$(dirname "$0")/.."

NISSHI_VERSION=0.8.1
packages=(cmake g++ pkg-config libcurl4-openssl-dev libssl-dev libsasl2-dev zlib1g-dev chromium)
# Apache Kafka 4 needs Java 17 or newer.
java_major() { java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1; }
if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ] 2>/dev/null; then
  packages+=(openjdk-17-jre-headless)
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
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Apache Kafka: the version pinned in scripts/kafka/pom.xml, copied with its dependencies.
KAFKA_VERSION=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' scripts/kafka/pom.xml)
kafka_libs="$HOME/.cache/strait/kafka-$KAFKA_VERSION/libs"
if [ -n "${KAFKA_HOME:-}" ] && ls "$KAFKA_HOME"/libs/kafka_2.13-*.jar >/dev/null 2>&1; then
  echo "setup: using Apache Kafka from KAFKA_HOME=$KAFKA_HOME"
elif ls "$kafka_libs"/kafka_2.13-"$KAFKA_VERSION".jar >/dev/null 2>&1; then
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

export PATH="$HOME/.cargo/bin:$PATH"
have_nisshi() {
  command -v nisshi >/dev/null 2>&1 && nisshi --version 2>/dev/null | grep -q "$NISSHI_VERSION"
}
if [ -n "${STRAIT_SKIP_NISSHI:-}" ]; then
  echo "setup: ready (Apache Kafka $KAFKA_VERSION; nisshi not needed here)"
  exit 0
fi
if ! have_nisshi; then
  echo "setup: installing nisshi $NISSHI_VERSION (one time, about 15 minutes)"
  cargo install "nisshi@$NISSHI_VERSION" --locked --ignore-rust-version \
    --no-default-features --features dynostore,libsql
fi
echo "setup: ready ($(nisshi --version 2>/dev/null | head -n1); Apache Kafka $KAFKA_VERSION)"
