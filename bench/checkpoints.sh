#!/usr/bin/env bash
# What checkpoints cost: the files benchmark's window job (`punctual job`, CSV in, JSON lines
# out, one thread) run with and without `--checkpoint DIR --checkpoint-every 1s`, interleaved,
# events per CPU second of the whole process (median of REPS runs each), and the outputs
# compared byte for byte; WORKERS=2 runs both on two workers (each snapshot cut across them).
#   bench/checkpoints.sh            REPS=5 WORKERS=1
# Needs the files workload (bench/files.sh sets it up).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PEERS="${PEERS:-$ROOT/../shared/bench/files/peers.sh}"
export BENCH_WORK="${BENCH_WORK:-/tmp/punctual-bench}"
REPS="${REPS:-5}"
EVERY="${EVERY:-1s}"
WORKERS="${WORKERS:-1}"
"$PEERS" setup > /dev/null
D="$("$PEERS" data)"
cargo build --release -q --bin punctual --manifest-path "$ROOT/Cargo.toml"
BIN="$ROOT/target/release/punctual"
EVENTS=$(( $(wc -l < "$D/events.csv") - 1 ))
job() {
  {
    echo 'query = "SELECT key, COUNT(*) + CAST(SUM(value) AS bigint) AS x FROM events TIMESTAMP BY ts GROUP BY key, TumblingWindow(second, 1)"'
    printf '[inputs.events]\npath = "events.csv"\ntime = "ts"\ntime_format = "epoch-ms"\n'
    printf 'generate = { every = 1000, delay = "2s" }\n'
    printf '[outputs.output]\npath = "%s"\ntime_format = "rfc3339"\n' "$1"
  } > "$2"
}
job "$D/ckpt-plain.jsonl" "$D/ckpt-plain.toml"
job "$D/ckpt-snap.jsonl" "$D/ckpt-snap.toml"
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
: > /tmp/ckpt-plain; : > /tmp/ckpt-snap
for _ in $(seq "$REPS"); do
  /usr/bin/time -f "%U %S" "$BIN" job "$D/ckpt-plain.toml" --workers "$WORKERS" > /dev/null \
    2> /tmp/ckpt-err
  echo "$EVENTS / $(tail -1 /tmp/ckpt-err | awk '{print $1 + $2}')" | bc -l >> /tmp/ckpt-plain
  rm -rf "$D/ckpt-state"
  /usr/bin/time -f "%U %S" "$BIN" job "$D/ckpt-snap.toml" --workers "$WORKERS" \
    --checkpoint "$D/ckpt-state" --checkpoint-every "$EVERY" > /dev/null 2> /tmp/ckpt-err
  echo "$EVENTS / $(tail -1 /tmp/ckpt-err | awk '{print $1 + $2}')" | bc -l >> /tmp/ckpt-snap
  cmp -s "$D/ckpt-plain.jsonl" "$D/ckpt-snap.jsonl" || { echo "the outputs differ" >&2; exit 1; }
done
plain=$(median < /tmp/ckpt-plain); snap=$(median < /tmp/ckpt-snap)
printf '| window job, CSV, %s events, %s worker(s) | M events/CPU s |\n|---|---|\n' \
  "$EVENTS" "$WORKERS"
printf '| without checkpoints | %.2f |\n' "$(echo "$plain / 1000000" | bc -l)"
printf '| --checkpoint-every %s | %.2f |\n' "$EVERY" "$(echo "$snap / 1000000" | bc -l)"
printf 'cost: %.1f%% of the events per CPU second; snapshot file %s bytes\n' \
  "$(echo "(1 - $snap / $plain) * 100" | bc -l)" "$(stat -c %s "$D/ckpt-state/snapshot")"
