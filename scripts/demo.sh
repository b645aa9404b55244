#!/usr/bin/env bash
# The demo command: installs what is needed, builds strait, and runs `strait demo` (two local
# clusters, a replication, the result). Extra arguments go to `strait demo` (e.g. --keep).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --locked --bin strait
exec ./target/release/strait demo "$@"
