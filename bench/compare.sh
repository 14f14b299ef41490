#!/usr/bin/env bash
# Runs Punctual and its peers on the shared workload, interleaved, and prints the ratios.
#   bench/compare.sh                 all three queries, 5 repetitions each
#   REPS=3 bench/compare.sh window   one query
# Peers and data come from ../shared/bench (built into $BENCH_WORK, default /tmp/punctual-bench).
# Flink runs too when its venv exists ($BENCH_WORK/flink-venv; `peers.sh setup-flink` makes it).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SHARED="${SHARED:-$ROOT/../shared/bench}"
export BENCH_WORK="${BENCH_WORK:-/tmp/punctual-bench}"
export REPS="${REPS:-5}"
QUERIES="${*:-filter window join}"

"$SHARED/peers.sh" setup
cargo build --release -q -p punctual-samples --bin punctual-bench --manifest-path "$ROOT/Cargo.toml"
BIN="$ROOT/target/release/punctual-bench"
DATA="$("$SHARED/peers.sh" data)"
rate() { sed -n 's/.*median_events_per_s=\([0-9]*\).*/\1/p' | head -1; }

printf '%-8s %14s %14s %14s %10s %10s\n' query punctual timely flink p/timely p/flink
for q in $QUERIES; do
  p_out="$("$BIN" --query "$q" --data "$DATA" --reps "$REPS" 2>/dev/null)"
  if echo "$p_out" | grep -q MISMATCH; then
    echo "$p_out" >&2
    echo "checksum mismatch for $q" >&2
    exit 1
  fi
  p="$(echo "$p_out" | grep SUMMARY | rate)"
  t="$("$SHARED/peers.sh" timely "$q" | rate)"
  f="-"
  if [ -x "$BENCH_WORK/flink-venv/bin/python" ]; then
    f="$("$SHARED/peers.sh" flink "$q" | rate || echo -)"
  fi
  pt="$(awk -v a="$p" -v b="$t" 'BEGIN { printf "%.2f", a / b }')"
  pf="-"
  if [ "$f" != "-" ] && [ -n "$f" ]; then pf="$(awk -v a="$p" -v b="$f" 'BEGIN { printf "%.2f", a / b }')"; fi
  printf '%-8s %14s %14s %14s %10s %10s\n' "$q" "$p" "$t" "${f:--}" "$pt" "$pf"
done
