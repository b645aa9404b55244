#!/usr/bin/env bash
# The test command: installs what the tests need, then format check, lints and every test
# (unit, property, protocol conformance, integration against real nisshi brokers).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings
cargo test --locked --all-targets
