#!/usr/bin/env bash
# Runs Punctual and its peers on the shared workload, interleaved, and prints the ratios.
#   bench/compare.sh                          all three queries, 5 repetitions a process, 3 rounds
#   REPS=3 ROUNDS=1 bench/compare.sh window   one query, one round
# Peers and data come from ../shared/bench (built into $BENCH_WORK, default /tmp/punctual-bench).
# Flink runs too when its venv exists ($BENCH_WORK/flink-venv; `peers.sh setup-flink` makes it).
#
# Each round runs every peer once (one process each, REPS repetitions, its median), one after
# the other, and prints that round's ratios too; a peer's figure is the median over the rounds,
# and the summary's ratios are those medians' ratios. This machine's speed drifts from
# minute to minute and from process to process, so only figures from one invocation are
# compared, and several rounds keep one unlucky process from deciding a ratio.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SHARED="${SHARED:-$ROOT/../shared/bench}"
export BENCH_WORK="${BENCH_WORK:-/tmp/punctual-bench}"
export REPS="${REPS:-5}"
ROUNDS="${ROUNDS:-3}"
QUERIES="${*:-filter window join}"

"$SHARED/peers.sh" setup
cargo build --release -q -p punctual-samples --bin punctual-bench --manifest-path "$ROOT/Cargo.toml"
BIN="$ROOT/target/release/punctual-bench"
DATA="$("$SHARED/peers.sh" data)"
FLINK=0
if [ -x "$BENCH_WORK/flink-venv/bin/python" ]; then FLINK=1; fi
rate() { sed -n 's/.*median_events_per_s=\([0-9]*\).*/\1/p' | head -1; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(date -u +%Y-%m-%dT%H:%MZ)"
echo "REPS=$REPS ROUNDS=$ROUNDS events=$(( $(stat -c %s "$DATA/events.bin") / 24 ))"
summary=""
for q in $QUERIES; do
  p_all=""; t_all=""; f_all=""
  for round in $(seq 1 "$ROUNDS"); do
    p_out="$("$BIN" --query "$q" --data "$DATA" --reps "$REPS" 2>/dev/null)"
    if echo "$p_out" | grep -q MISMATCH; then
      echo "$p_out" >&2
      echo "checksum mismatch for $q" >&2
      exit 1
    fi
    p="$(echo "$p_out" | grep SUMMARY | rate)"
    t="$("$SHARED/peers.sh" timely "$q" | rate)"
    f="-"
    if [ "$FLINK" = 1 ]; then f="$("$SHARED/peers.sh" flink "$q" | rate || true)"; f="${f:--}"; fi
    echo "round $round $q: punctual=$p timely=$t flink=$f (this round: p/timely $(ratio "$p" "$t"), p/flink $(ratio "$p" "$f"))"
    p_all="$p_all $p"; t_all="$t_all $t"
    if [ "$f" != "-" ]; then f_all="$f_all $f"; fi
  done
  p="$(echo $p_all | tr ' ' '\n' | median)"
  t="$(echo $t_all | tr ' ' '\n' | median)"
  f="-"
  if [ -n "$f_all" ]; then f="$(echo $f_all | tr ' ' '\n' | median)"; fi
  summary="$summary$(printf '%-8s %14s %14s %14s %10s %10s' "$q" "$p" "$t" "$f" "$(ratio "$p" "$t")" "$(ratio "$p" "$f")")
"
done
echo
printf '%-8s %14s %14s %14s %10s %10s\n' query punctual timely flink p/timely p/flink
printf '%s' "$summary"
