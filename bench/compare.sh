#!/usr/bin/env bash
# Runs Punctual (its fast stream unordered, then ordered) and its peers on the shared workload,
# interleaved, verifies every checksum, and prints events per CPU second and per wall second
# with the ratios.
#   bench/compare.sh                          all three queries, 5 repetitions a process, 3 rounds
#   REPS=3 ROUNDS=1 bench/compare.sh window   one query, one round
#   CLUSTER=1 bench/compare.sh window join    also the cluster executor (`--workers 1` and
#                                             `2`) against timely with as many workers, and
#                                             one worker against the local runtime run in
#                                             the same rounds
# Peers and data come from ../shared/bench (built into $BENCH_WORK, default /tmp/punctual-bench).
# Flink runs too when its venv exists ($BENCH_WORK/flink-venv; `peers.sh setup-flink` makes it).
#
# Each round runs every program once (one process each, REPS repetitions, its median), one
# after the other; a program's figure is the median over the rounds, with the lowest and
# highest round beside it, and the ratios are those medians' ratios. This machine's speed drifts
# from minute to minute and from process to process: only figures from one invocation are
# compared, and several rounds keep one unlucky process from deciding a ratio. A checksum that
# differs from the workload's published one (Punctual's, timely's or Flink's, in any
# repetition) stops the run with exit code 1.
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
EVENTS=$(( $(stat -c %s "$DATA/events.bin") / 24 ))
FLINK=0
if [ -x "$BENCH_WORK/flink-venv/bin/python" ]; then FLINK=1; fi

# The workload's published checksums (10 M events): "out checksum".
published() {
  [ "$EVENTS" = 10000000 ] || { echo "-"; return; }
  case "$1" in
    filter) echo "4999874 3750355147595" ;;
    window) echo "999964 5000969865020" ;;
    join) echo "10000000 2561554183133202" ;;
  esac
}
field() { sed -n "s/.*[ ^]$1=\([0-9]*\).*/\1/p" | head -1; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else print v[int((NR + 1) / 2)] }'; }
spread() { sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR == 0) print "-"; else printf "%.0f-%.0f", lo / 1e6, hi / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'; }
mev() { awk -v a="$1" 'BEGIN { if (a == "-") print "-"; else printf "%.1f", a / 1e6 }'; }
fail() { echo "$1" >&2; exit 1; }

# Checks one peer's out/checksum pairs (one per line) against the published ones.
check() { # peer query pairs
  local want; want="$(published "$2")"
  [ "$want" = "-" ] && return 0
  [ -n "$3" ] || fail "$1 $2: no checksum printed"
  while read -r pair; do
    [ "$pair" = "$want" ] || fail "$1 $2: out/checksum $pair, published $want"
  done <<< "$3"
}

run_punctual() { # query order -> "cpu wall"
  local out; out="$("$BIN" --query "$1" --order "$2" --data "$DATA" --reps "$REPS" 2>/dev/null)"
  if echo "$out" | grep -q MISMATCH; then echo "$out" >&2; fail "punctual $1 --order $2: checksum mismatch"; fi
  check "punctual($2)" "$1" "$(echo "$out" | grep '^query=' | sed -n 's/.* out=\([0-9]*\) checksum=\([0-9]*\).*/\1 \2/p')"
  local s; s="$(echo "$out" | grep SUMMARY)"
  echo "$(echo "$s" | field median_events_per_cpu_s) $(echo "$s" | field median_events_per_s)"
}

run_cluster() { # query order workers -> "cpu wall"
  local out; out="$("$BIN" --query "$1" --order "$2" --workers "$3" --data "$DATA" --reps "$REPS" 2>/dev/null)"
  if echo "$out" | grep -q MISMATCH; then echo "$out" >&2; fail "punctual-cluster $1 --order $2 --workers $3: checksum mismatch"; fi
  check "punctual-cluster($2, $3)" "$1" "$(echo "$out" | grep '^query=' | sed -n 's/.* out=\([0-9]*\) checksum=\([0-9]*\).*/\1 \2/p')"
  local s; s="$(echo "$out" | grep SUMMARY)"
  echo "$(echo "$s" | field median_events_per_cpu_s) $(echo "$s" | field median_events_per_s)"
}

run_timely() { # query [workers] -> "cpu wall"
  local s; s="$("$SHARED/peers.sh" timely "$1" --workers "${2:-1}")"
  check timely "$1" "$(echo "$s" | sed -n 's/.* out=\([0-9]*\) checksum=\([0-9]*\).*/\1 \2/p')"
  echo "$(echo "$s" | field median_events_per_cpu_s) $(echo "$s" | field median_events_per_s)"
}

run_flink() { # query -> "cpu wall"
  local out; out="$("$SHARED/flink-peer/run.sh" --query "$1" --par 1 --reps "$(( REPS + 1 ))" --data "$DATA" 2>/dev/null || true)"
  check flink "$1" "$(echo "$out" | grep '^query=' | sed -n 's/.* out=\([0-9]*\) checksum=\([0-9]*\).*/\1 \2/p')"
  local s; s="$(echo "$out" | grep SUMMARY)"
  echo "$(echo "$s" | field median_events_per_cpu_s_incl_startup) $(echo "$s" | field median_events_per_s)"
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(date -u +%Y-%m-%dT%H:%MZ)"
echo "REPS=$REPS ROUNDS=$ROUNDS events=$EVENTS; figures in M events per CPU second (per wall second)"
table=""
for q in $QUERIES; do
  declare -A cpu=() wall=()
  for round in $(seq 1 "$ROUNDS"); do
    line="round $round $q:"
    for prog in arrival ordered timely flink; do
      case "$prog" in
        arrival|ordered) r="$(run_punctual "$q" "$prog")" ;;
        timely) r="$(run_timely "$q")" ;;
        flink) [ "$FLINK" = 1 ] || continue; r="$(run_flink "$q")" ;;
      esac
      c="${r% *}"; w="${r#* }"
      cpu[$prog]="${cpu[$prog]:-} $c"; wall[$prog]="${wall[$prog]:-} $w"
      line="$line $prog=$(mev "$c") ($(mev "$w"))"
    done
    echo "$line"
  done
  row="$q"
  declare -A med=()
  for prog in arrival ordered timely flink; do
    med[$prog]="$(echo ${cpu[$prog]:-} | tr ' ' '\n' | median)"
    w="$(echo ${wall[$prog]:-} | tr ' ' '\n' | median)"
    row="$row | $(mev "${med[$prog]}") ($(mev "$w")) [$(echo ${cpu[$prog]:-} | tr ' ' '\n' | spread)]"
  done
  row="$row | $(ratio "${med[arrival]}" "${med[timely]}") | $(ratio "${med[ordered]}" "${med[timely]}") | $(ratio "${med[arrival]}" "${med[flink]}") | $(ratio "${med[ordered]}" "${med[flink]}")"
  table="$table| $row |
"
  unset cpu wall med
done
if [ "${CLUSTER:-0}" = 1 ]; then
  ctable=""
  ltable=""
  for q in $QUERIES; do
    [ "$q" = filter ] && continue
    for w in 1 2; do
      declare -A cpu=() wall=()
      for round in $(seq 1 "$ROUNDS"); do
        line="round $round $q workers=$w:"
        progs="arrival ordered timely"
        # One worker is also compared with the local runtime, in the same round.
        [ "$w" = 1 ] && progs="$progs local-arrival local-ordered"
        for prog in $progs; do
          case "$prog" in
            arrival|ordered) r="$(run_cluster "$q" "$prog" "$w")" ;;
            timely) r="$(run_timely "$q" "$w")" ;;
            local-*) r="$(run_punctual "$q" "${prog#local-}")" ;;
          esac
          c="${r% *}"; wl="${r#* }"
          cpu[$prog]="${cpu[$prog]:-} $c"; wall[$prog]="${wall[$prog]:-} $wl"
          line="$line $prog=$(mev "$c") ($(mev "$wl"))"
        done
        echo "$line"
      done
      row="$q | $w"
      declare -A med=()
      for prog in arrival ordered timely; do
        med[$prog]="$(echo ${cpu[$prog]:-} | tr ' ' '\n' | median)"
        wl="$(echo ${wall[$prog]:-} | tr ' ' '\n' | median)"
        row="$row | $(mev "${med[$prog]}") ($(mev "$wl")) [$(echo ${cpu[$prog]:-} | tr ' ' '\n' | spread)]"
      done
      row="$row | $(ratio "${med[arrival]}" "${med[timely]}") | $(ratio "${med[ordered]}" "${med[timely]}")"
      ctable="$ctable| $row |
"
      if [ "$w" = 1 ]; then
        for prog in local-arrival local-ordered; do
          med[$prog]="$(echo ${cpu[$prog]:-} | tr ' ' '\n' | median)"
        done
        ltable="$ltable| $q | $(mev "${med[arrival]}") | $(mev "${med[local-arrival]}") | $(ratio "${med[arrival]}" "${med[local-arrival]}") | $(mev "${med[ordered]}") | $(mev "${med[local-ordered]}") | $(ratio "${med[ordered]}" "${med[local-ordered]}") |
"
      fi
      unset cpu wall med
    done
  done
fi
echo
echo "| query | Punctual arrival | Punctual ordered | timely | Flink | arrival / timely | ordered / timely | arrival / Flink | ordered / Flink |"
echo "|---|---|---|---|---|---|---|---|---|"
printf '%s' "$table"
echo
echo "(M events per CPU second, the median over rounds; in parentheses per wall second; in brackets the lowest and highest round per CPU second; ratios per CPU second)"
if [ "${CLUSTER:-0}" = 1 ]; then
  echo
  echo "The cluster executor (punctual-bench --workers W, the fast stream in W partitions) and timely with as many workers:"
  echo
  echo "| query | workers | cluster arrival | cluster ordered | timely | arrival / timely | ordered / timely |"
  echo "|---|---|---|---|---|---|---|"
  printf '%s' "$ctable"
  echo
  echo "One worker against the local runtime, run in the same rounds:"
  echo
  echo "| query | 1 worker arrival | local arrival | ratio | 1 worker ordered | local ordered | ratio |"
  echo "|---|---|---|---|---|---|---|"
  printf '%s' "$ltable"
fi
echo "SUMMARY compare all checksums matched"
