#!/usr/bin/env bash
# What a keyed call costs the gateway process over a plain one (issue 36
# item 5), as "keyed − plain µs CPU per call", on SQLite NORMAL and on
# PostgreSQL.
#
# Starts one bench/echoserver and, for each binary and each store, one
# `gatehouse serve` (bench/gateway.sh: defaults, audit on, no auth, its own
# store and port). Each round measures every gateway twice back to back:
# plain calls, then calls with a unique _meta.idempotencyKey each (mcpload
# -keys unique: a journal claim and a completion with its audit entry per
# call), the pair's order flipped and the gateways' order rotated every
# round. The figure is the gateway process's CPU (user+system from
# /proc/PID/stat over the measured window, mcpload -rss-pid) per call; a
# round's keyed − plain is taken within the pair, so a burst of load on the
# machine moves both halves; the median over the rounds is printed.
#
#   bench/keyed.sh                                  # this checkout, sqlite and postgres
#   KEYED_BINS="old=/tmp/gh-old new=/tmp/gh-new" bench/keyed.sh   # two binaries, interleaved
#
# Environment (all optional):
#   KEYED_BINS     NAME=PATH words: the binaries to measure (default: one,
#                  "new", built from this checkout's working tree)
#   STORES         "sqlite postgres" (default); postgres needs BENCH_POSTGRES
#                  or GATEHOUSE_TEST_POSTGRES and psql (a schema per gateway,
#                  dropped at exit), else it is skipped with a message
#   ROUNDS         rounds (default 5), DURATION (3s) after WARMUP (1s) each
#   SESSIONS       mcpload sessions (default 4), PAYLOAD bytes (default 64)
#   PORT_BASE      the gateways listen on 127.0.0.1:PORT_BASE+i
#                  (default: 22000 + this shell's PID mod 20000)
#   BENCH_KEEP     keep the work directory
# Takes about ROUNDS x gateways x 2 x (DURATION + WARMUP + ~0.5 s): 2
# minutes for one binary on both stores at the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-3s}
WARMUP=${WARMUP:-1s}
SESSIONS=${SESSIONS:-4}
PAYLOAD=${PAYLOAD:-64}
STORES=${STORES:-"sqlite postgres"}
PORT_BASE=${PORT_BASE:-$((22000 + $$ % 20000))}
PG=${BENCH_POSTGRES:-${GATEHOUSE_TEST_POSTGRES:-}}
[[ $ROUNDS =~ ^[1-9][0-9]?$ ]] || { echo "ROUNDS must be 1 to 99" >&2; exit 2; }
[[ $PORT_BASE =~ ^[1-9][0-9]{3,4}$ ]] && [ "$PORT_BASE" -le 65500 ] || { echo "PORT_BASE must be 1000 to 65500" >&2; exit 2; }

. bench/lib.sh

build_keyed_bins

start_echo -addr 127.0.0.1:0

# PostgreSQL: a schema per gateway, dropped at exit.
schemas=()
want_pg=
if [[ " $STORES " == *" postgres "* ]]; then
  if [ -z "$PG" ]; then
    log "postgres skipped: set BENCH_POSTGRES or GATEHOUSE_TEST_POSTGRES to a PostgreSQL DSN"
  elif ! command -v psql >/dev/null; then
    log "postgres skipped: psql is not installed (it makes the run's schemas)"
  else
    want_pg=1
    bench_after_kill() {
      local s
      for s in "${schemas[@]}"; do psql "$PG" -qc "DROP SCHEMA IF EXISTS $s CASCADE" >/dev/null 2>&1; done
    }
  fi
fi
pg_dsn_for() {
  local s
  s=bench_$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')
  psql "$PG" -v ON_ERROR_STOP=1 -qc "CREATE SCHEMA $s" >/dev/null
  schemas+=("$s")
  case "$PG" in *\?*) echo "$PG&search_path=$s" ;; *) echo "$PG?search_path=$s" ;; esac
}

# The gateways: label "BIN STORE", URL, PID. Parallel arrays.
labels=() urls=() tpids=()
i=0
for b in "${!bin_names[@]}"; do
  for st in $STORES; do
    case "$st" in
      sqlite) store=sqlite ;;
      postgres) [ -n "$want_pg" ] || continue; store=$(pg_dsn_for) ;;
      *) log "STORES: sqlite or postgres, got $st"; exit 2 ;;
    esac
    url="http://127.0.0.1:$((PORT_BASE + i))/mcp"
    start_gateway "env GATEHOUSE_BIN=$(printf %q "${bin_paths[$b]}") GATEWAY_DIR=$work/gw$i GATEWAY_STORE=$(printf %q "$store") bench/gateway.sh" \
      "$url" "gateway$i"
    labels+=("${bin_names[$b]} $st") urls+=("$url") tpids+=("$started_pid")
    i=$((i + 1))
  done
done
n=${#labels[@]}
[ "$n" -gt 0 ] || { log "no gateway to measure"; exit 2; }

results="$work/results.jsonl"
: >"$results"
for round in $(seq "$ROUNDS"); do
  log "round $round/$ROUNDS"
  for k in $(seq 0 $((n - 1))); do
    g=$(((k + round - 1) % n))
    order="plain keyed"
    [ $((round % 2)) = 0 ] && order="keyed plain"
    for kind in $order; do
      keys=()
      [ "$kind" = keyed ] && keys=(-keys unique)
      load "${labels[$g]} $kind" "${urls[$g]}" "${tpids[$g]}" -duration "$DURATION" -warmup "$WARMUP" -verify -json \
        -sessions "$SESSIONS" -payload "$PAYLOAD" "${keys[@]}"
    done
  done
done
if grep -q '"errors":[1-9]' "$results"; then
  log "keyed.sh: calls failed:"; grep '"errors":[1-9]' "$results" >&2
  exit 1
fi
[ -n "${BENCH_KEEP:-}" ] && cp "$results" "$work/keep-results.jsonl"

# field LABEL NAME: NAME of each of LABEL's runs, in round order.
field() {
  grep -F "\"label\":\"$1\"" "$results" | sed -n "s/.*\"$2\":\([0-9.eE+-]*\).*/\1/p"
}
cpu_us() { field "$1" target_cpu_ms_per_call | awk '{ printf "%.1f\n", $1 * 1000 }'; }
median() {
  sort -g | awk -v d="${1:-1}" '{ v[NR] = $1 } END { if (NR == 0) exit 1; m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.*f\n", d, m }'
}

echo "## bench/keyed.sh: gateway CPU per call, keyed − plain"
machine_line
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$ROUNDS rounds x (plain, keyed) per gateway, $DURATION after $WARMUP warmup, $SESSIONS sessions, $PAYLOAD B, audit on"
for b in "${!bin_names[@]}"; do echo "  ${bin_names[$b]}: ${bin_paths[$b]}"; done
echo
echo "| binary | store | plain µs/call | keyed µs/call | keyed − plain µs (median of rounds) | rounds | plain calls/s | keyed calls/s |"
echo "|---|---|---:|---:|---:|---|---:|---:|"
for l in "${labels[@]}"; do
  p=$(cpu_us "$l plain" | median)
  q=$(cpu_us "$l keyed" | median)
  d=$(paste -d' ' <(cpu_us "$l plain") <(cpu_us "$l keyed") | awk '{ printf "%.1f\n", $2 - $1 }')
  dm=$(median <<<"$d" | awk '{ printf "%+.1f", $1 }')
  pc=$(field "$l plain" calls_per_sec | median 0)
  kc=$(field "$l keyed" calls_per_sec | median 0)
  echo "| ${l% *} | ${l#* } | $p | $q | **$dm** | $(paste -sd' ' <<<"$d") | $pc | $kc |"
done
