#!/usr/bin/env bash
# usage: scripts/scale-out-measure.sh N [RECORDS]  -- replicate RECORDS (default 500 000) x 1 KB, 16-partition backlog with N strait instances
# Fills the source with examples/fill, starts N `strait run` under /usr/bin/time -v, polls the
# target until every record is there, prints the times, `strait members`, and each instance's
# CPU time and peak RSS. Runs on two nisshi brokers: needs nisshi on PATH, which scripts/setup.sh
# does not install (`cargo install nisshi@0.8.1 --locked --ignore-rust-version
# --no-default-features --features dynostore,libsql`, about 15 minutes).
set -u
N=$1
RECORDS=${2:-500000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$HOME/.cargo/bin:$PATH"
(cd "$ROOT" && cargo build --release --bin strait --example fill -q)
S=$ROOT/target/release/strait
W=$ROOT/target/scale-out/w$N
rm -rf "$W" && mkdir -p "$W" && cd "$W"
A=$((39800 + N*10)); B=$((A+1))
nisshi broker --cluster-id A$N --listener-url tcp://127.0.0.1:$A --advertised-listener-url tcp://127.0.0.1:$A --storage-engine memory://A$N/ > a.log 2>&1 & PA=$!
nisshi broker --cluster-id B$N --listener-url tcp://127.0.0.1:$B --advertised-listener-url tcp://127.0.0.1:$B --storage-engine memory://B$N/ > b.log 2>&1 & PB=$!
sleep 1
$ROOT/target/release/examples/fill 127.0.0.1:$A bench 16 $RECORDS 1000 none > fill.log 2>&1
printf '[clusters.a]\nbootstrap_servers = "127.0.0.1:%s"\n[clusters.b]\nbootstrap_servers = "127.0.0.1:%s"\n[[flows]]\nsource = "a"\ntarget = "b"\ntopics = ["bench"]\n' $A $B > c.toml
start=$(date +%s.%N)
for i in $(seq 1 $N); do /usr/bin/time -v $S --log warn run --config c.toml > s$i.out 2> s$i.err & done
sum=0
first=""
while [ "$sum" -lt $RECORDS ]; do
  sleep 0.1
  if [ -z "$first" ] && [ "$sum" -gt 0 ]; then first=$(date +%s.%N); fi
  sum=$($S probe --bootstrap 127.0.0.1:$B 2>/dev/null | awk '/^  a.bench/{t=1;next} /^  [^ ]/{t=0} t && $1 ~ /^[0-9]+$/ {s+=$4} END{print s+0}')
done
end=$(date +%s.%N)
echo "instances=$N records=$RECORDS from-start=$(echo "$end - $start" | bc) s, first-to-last=$(echo "$end - $first" | bc) s"
$S members --config c.toml
pkill -TERM -f "^$S --log warn run"
sleep 4
for i in $(seq 1 $N); do grep -E "Elapsed|Maximum resident|User time|System time" s$i.err | tr '\n' ' '; echo; done
kill $PA $PB
