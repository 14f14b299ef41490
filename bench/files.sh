#!/usr/bin/env bash
# What users run on files: `punctual job` (the command line, one thread) against Polars and
# DuckDB (one thread each) on ../shared/bench/files' workload, CSV and JSON-lines inputs, JSON
# lines out, events per CPU second (the job's whole process), every output's checksum checked
# against Polars'.
#   bench/files.sh                 both formats, three queries, REPS=5 runs each, interleaved
#   REPS=3 FORMATS=csv bench/files.sh filter
# Prints one line per run and a table of medians (markdown) at the end; exit 1 on a checksum
# that differs.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PEERS="${PEERS:-$ROOT/../shared/bench/files/peers.sh}"
export BENCH_WORK="${BENCH_WORK:-/tmp/punctual-bench}"
REPS="${REPS:-5}"
FORMATS="${FORMATS:-csv jsonl}"
QUERIES="${*:-filter window join}"

"$PEERS" setup
D="$("$PEERS" data)"
PY="$BENCH_WORK/files-venv/bin/python"
export PEERS_DIR="$(cd "$(dirname "$PEERS")" && pwd)"
[ -f "$D/events.jsonl" ] || "$PY" "$ROOT/bench/files_jsonl_peers.py" make "$D"
cargo build --release -q --bin punctual --manifest-path "$ROOT/Cargo.toml"
BIN="$ROOT/target/release/punctual"
EVENTS=$(( $(wc -l < "$D/events.csv") - 1 ))

query_text() {
  case "$1" in
    filter) echo "SELECT value FROM events TIMESTAMP BY ts WHERE value >= 500000" ;;
    window) echo "SELECT key, COUNT(*) + CAST(SUM(value) AS bigint) AS x FROM events TIMESTAMP BY ts GROUP BY key, TumblingWindow(second, 1)" ;;
    join) echo "SELECT e.value * r.value AS x FROM events e TIMESTAMP BY ts JOIN reference r ON e.key = r.key" ;;
  esac
}

# The job file of a query over events in a format.
job() {
  local q="$1" f="$2" out="$D/punctual-$2-$1.jsonl"
  {
    echo "query = \"$(query_text "$q")\""
    printf '[inputs.events]\npath = "events.%s"\ntime = "ts"\ntime_format = "epoch-ms"\n' "$f"
    printf 'generate = { every = 1000, delay = "2s" }\n'
    if [ "$q" = join ]; then
      printf '[inputs.reference]\npath = "reference.csv"\ntime = "valid_from"\nend = "valid_to"\ntime_format = "epoch-ms"\n'
    fi
    printf '[outputs.output]\npath = "%s"\ntime_format = "rfc3339"\n' "$out"
  } > "$D/punctual-$f-$q.toml"
  echo "$D/punctual-$f-$q.toml"
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A RATE SUM
for f in $FORMATS; do
  for q in $QUERIES; do
    toml="$(job "$q" "$f")"
    for peer in punctual polars duckdb; do : > "/tmp/files-bench-$peer"; done
    for _ in $(seq "$REPS"); do
      /usr/bin/time -f "%U %S" "$BIN" job "$toml" > /dev/null 2>/tmp/files-bench-err
      cpu=$(tail -1 /tmp/files-bench-err | awk '{print $1 + $2}')
      echo "$EVENTS / $cpu" | bc -l >> /tmp/files-bench-punctual
      SUM[punctual]="$("$PEERS" checksum "$q" "$D/punctual-$f-$q.jsonl")"
      for peer in polars duckdb; do
        if [ "$f" = csv ]; then line="$("$PEERS" "$peer" "$q")"; else
          line="$(OMP_NUM_THREADS=1 POLARS_MAX_THREADS=1 "$PY" "$ROOT/bench/files_jsonl_peers.py" run "$peer" "$q" "$D")"; fi
        echo "$line"
        echo "$line" | sed 's/.*events_per_cpu_s=\([0-9]*\).*/\1/' >> "/tmp/files-bench-$peer"
        SUM[$peer]="$(echo "$line" | sed 's/.*\(out=.*\)/\1/')"
      done
      echo "punctual format=$f query=$q cpu_s=$cpu ${SUM[punctual]}"
      for peer in polars duckdb; do
        [ "${SUM[$peer]}" = "${SUM[punctual]}" ] || { echo "CHECKSUM DIFFERS: $peer ${SUM[$peer]} punctual ${SUM[punctual]}"; exit 1; }
      done
    done
    for peer in punctual polars duckdb; do RATE[$f-$q-$peer]="$(median < "/tmp/files-bench-$peer")"; done
  done
done
echo
echo "| input | query | \`punctual job\` | Polars | DuckDB | job / Polars | job / DuckDB |"
echo "|---|---|---|---|---|---|---|"
for f in $FORMATS; do
  for q in $QUERIES; do
    p="${RATE[$f-$q-punctual]}"; pl="${RATE[$f-$q-polars]}"; dk="${RATE[$f-$q-duckdb]}"
    printf '| %s | %s | %.2f M | %.2f M | %.2f M | %.2f | %.2f |\n' "$f" "$q" \
      "$(echo "$p / 1000000" | bc -l)" "$(echo "$pl / 1000000" | bc -l)" "$(echo "$dk / 1000000" | bc -l)" \
      "$(echo "$p / $pl" | bc -l)" "$(echo "$p / $dk" | bc -l)"
  done
done
