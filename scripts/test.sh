#!/usr/bin/env bash
# The test command: installs what the tests need, then format check, lints and every test
# (unit, property, protocol conformance, integration against Apache Kafka and nisshi brokers).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings
# One test at a time within each test binary: the integration tests start Apache Kafka
# clusters and time group sessions, which two at once on a 2-core machine would make flaky.
RUST_TEST_THREADS=1 cargo test --locked --all-targets --no-fail-fast
