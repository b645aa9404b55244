#!/usr/bin/env bash
# The test command: installs what the tests need, then format check, lints and every test
# (unit, property, protocol conformance, integration against Apache Kafka clusters).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$HOME/.cargo/bin:$HOME/.cache/strait/bin:$PATH"
# The deployment files (seconds): the Helm chart lints and renders with every values file, and
# the Prometheus alert rules pass their unit tests (tests/deploy.rs checks the rendered
# manifests, and the rules' and dashboard's series against a running strait).
for values in "" deploy/helm/strait/ci/*-values.yaml; do
  helm lint --strict deploy/helm/strait ${values:+-f "$values"} >/dev/null
  helm template strait deploy/helm/strait ${values:+-f "$values"} >/dev/null
done
promtool check rules deploy/prometheus/strait-rules.yml
promtool test rules deploy/prometheus/strait-rules.test.yml
cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings
# The library as a program embedding it builds it (default features off: no command, bench or
# launchers; docs/embedding.md), with each optional SASL mechanism, and its examples with it.
cargo clippy --lib --examples --locked --no-default-features -- -D warnings
cargo clippy --lib --examples --locked --no-default-features --features aws-msk-iam,gssapi -- -D warnings
# The API documentation builds without a warning (every public item documented), and its
# examples compile.
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --lib --locked
cargo test --doc --locked
# One test at a time within each test binary: the integration tests start Apache Kafka
# clusters and time group sessions, which two at once on a 2-core machine would make flaky.
RUST_TEST_THREADS=1 cargo test --locked --all-targets --no-fail-fast
# The container image (tests/image.rs, as root): built from scratch and run from its unpacked
# files against Apache Kafka. Opt-in: its static release build takes about 24 minutes cold
# here (seconds when target-static/ is kept), so it runs only with STRAIT_IMAGE_TEST=1.
if [ "${STRAIT_IMAGE_TEST:-0}" = 1 ]; then
  RUST_TEST_THREADS=1 cargo test --locked --test image -- --include-ignored
fi
# Every fuzz target for a few seconds from its committed corpus (a long run: see scripts/fuzz.sh).
bash scripts/fuzz.sh
