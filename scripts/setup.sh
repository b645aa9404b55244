#!/usr/bin/env bash
# Installs what strait's build and tests need on a fresh Debian machine (idempotent):
# - Debian packages to build librdkafka from source (the rdkafka dev-dependency, cmake-build);
# - chromium, the headless browser of the status page test (tests/observe.rs);
# - nisshi, the Kafka-compatible test broker, into ~/.cargo/bin (about 15 minutes the first time).
set -euo pipefail

NISSHI_VERSION=0.8.1
packages=(cmake g++ pkg-config libcurl4-openssl-dev libssl-dev libsasl2-dev zlib1g-dev chromium)

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

export PATH="$HOME/.cargo/bin:$PATH"
have_nisshi() {
  command -v nisshi >/dev/null 2>&1 && nisshi --version 2>/dev/null | grep -q "$NISSHI_VERSION"
}
if ! have_nisshi; then
  echo "setup: installing nisshi $NISSHI_VERSION (one time, about 15 minutes)"
  cargo install "nisshi@$NISSHI_VERSION" --locked --ignore-rust-version \
    --no-default-features --features dynostore,libsql
fi
echo "setup: ready ($(nisshi --version 2>/dev/null | head -n1))"
