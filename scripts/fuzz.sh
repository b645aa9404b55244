#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets/, libFuzzer through cargo-fuzz, nightly Rust) for
# FUZZ_SECONDS each (default 10) from its committed corpus in fuzz/corpus/<target>, and fails on
# the first crash, panic, timeout or allocation past 1 GiB (the input is left in
# fuzz/artifacts/<target>/). New inputs that add coverage are written to a scratch copy of the
# corpus, not to the repository; `FUZZ_KEEP=1` keeps them in fuzz/corpus.
#   bash scripts/fuzz.sh                      # the short run of the test command
#   FUZZ_SECONDS=600 bash scripts/fuzz.sh     # a long run
#   FUZZ_SECONDS=600 bash scripts/fuzz.sh batches responses   # chosen targets
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
export PATH="$HOME/.cargo/bin:$PATH"
seconds="${FUZZ_SECONDS:-10}"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo +nightly fuzz list)
fi
cargo +nightly fuzz build -O
for t in "${targets[@]}"; do
  corpus="corpus/$t"
  if [ "${FUZZ_KEEP:-0}" != "1" ]; then
    scratch="$(mktemp -d)"
    cp -r "corpus/$t/." "$scratch/"
    corpus="$scratch"
  fi
  echo "fuzz: $t for ${seconds}s"
  log="$(mktemp)"
  if ! cargo +nightly fuzz run -O "$t" "$corpus" -- \
    -max_total_time="$seconds" -rss_limit_mb=1024 -malloc_limit_mb=1024 -timeout=10 \
    -max_len=65536 -print_final_stats=1 >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "fuzz: $t failed; the input is in fuzz/artifacts/$t/" >&2
    exit 1
  fi
  grep -E '^stat::(number_of_executed_units|peak_rss_mb|new_units_added)|^#[0-9]+[[:space:]]+DONE' "$log" || true
done
echo "fuzz: every target ran ${seconds}s without a finding"
