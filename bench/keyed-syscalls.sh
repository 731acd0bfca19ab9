#!/usr/bin/env bash
# The system calls a keyed call costs the gateway process over a plain one
# (issue 36 item 5), counted by the kernel's tracepoints (perf stat): a
# deterministic figure where CPU time on a shared machine is not.
#
# Starts one bench/echoserver and, for each binary, one `gatehouse serve`
# (bench/gateway.sh: defaults, audit on, no auth, its own store and port),
# warms it up with both kinds of calls, then counts the gateway's system
# calls over CALLS plain calls and over CALLS keyed ones (mcpload -calls,
# no warmup inside the count) and prints them per call, by call, and the
# gateway's CPU per call over the same windows (perf's task-clock; noisy).
#
#   bench/keyed-syscalls.sh                                            # this checkout, SQLite
#   KEYED_BINS="old=/tmp/gh-old new=/tmp/gh-new" STORE=postgres bench/keyed-syscalls.sh
#
# Environment (all optional):
#   KEYED_BINS  NAME=PATH words (default: one, "new", built from this checkout)
#   STORE       sqlite (default), sqlite-power, memory, or postgres (needs
#               BENCH_POSTGRES or GATEHOUSE_TEST_POSTGRES and psql: a schema
#               per gateway, dropped at exit)
#   CALLS       calls counted per kind (default 4000); SESSIONS (4), PAYLOAD (64)
#   PORT_BASE   the gateways listen on 127.0.0.1:PORT_BASE+i
# Needs perf with the syscalls tracepoints (root, or perf_event_paranoid <= 1).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

CALLS=${CALLS:-4000}
SESSIONS=${SESSIONS:-4}
PAYLOAD=${PAYLOAD:-64}
STORE=${STORE:-sqlite}
PORT_BASE=${PORT_BASE:-$((24000 + $$ % 20000))}
PG=${BENCH_POSTGRES:-${GATEHOUSE_TEST_POSTGRES:-}}
[[ $CALLS =~ ^[1-9][0-9]{2,6}$ ]] || { echo "CALLS must be 100 to 9999999" >&2; exit 2; }
[[ $PORT_BASE =~ ^[1-9][0-9]{3,4}$ ]] && [ "$PORT_BASE" -le 65500 ] || { echo "PORT_BASE must be 1000 to 65500" >&2; exit 2; }
command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 2; }
perf stat -e raw_syscalls:sys_enter -- true >/dev/null 2>&1 ||
  { echo "perf cannot count the syscalls tracepoints here (run as root, or lower perf_event_paranoid)" >&2; exit 2; }

. bench/lib.sh

build_keyed_bins

schemas=()
case "$STORE" in
  sqlite|sqlite-power|memory) ;;
  postgres)
    [ -n "$PG" ] || { log "STORE=postgres needs BENCH_POSTGRES or GATEHOUSE_TEST_POSTGRES"; exit 2; }
    command -v psql >/dev/null || { log "STORE=postgres needs psql (it makes the run's schemas)"; exit 2; }
    bench_after_kill() {
      local s
      for s in "${schemas[@]}"; do psql "$PG" -qc "DROP SCHEMA IF EXISTS $s CASCADE" >/dev/null 2>&1; done
    }
    ;;
  *) log "STORE: sqlite, sqlite-power, memory or postgres, got $STORE"; exit 2 ;;
esac

start_echo -addr 127.0.0.1:0

events=task-clock,raw_syscalls:sys_enter
names="pwrite64 pread64 fcntl futex nanosleep epoll_pwait read write"
for s in $names; do events+=",syscalls:sys_enter_$s"; done

echo "## bench/keyed-syscalls.sh: gateway system calls per call, keyed and plain"
machine_line
echo "$CALLS calls a kind, $SESSIONS sessions, $PAYLOAD B, store $STORE, audit on"
echo
echo "| binary | kind | CPU µs/call | all | $(sed 's/ / | /g' <<<"$names") |"
echo "|---|---|---:|---:|$(sed 's/[a-z0-9_]*/---:/g; s/ /|/g' <<<"$names")|"
for b in "${!bin_names[@]}"; do
  store=$STORE
  if [ "$STORE" = postgres ]; then
    s=bench_$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')
    psql "$PG" -v ON_ERROR_STOP=1 -qc "CREATE SCHEMA $s" >/dev/null
    schemas+=("$s")
    case "$PG" in *\?*) store="$PG&search_path=$s" ;; *) store="$PG?search_path=$s" ;; esac
  fi
  url="http://127.0.0.1:$((PORT_BASE + b))/mcp"
  start_gateway "env GATEHOUSE_BIN=$(printf %q "${bin_paths[$b]}") GATEWAY_DIR=$work/gw$b GATEWAY_STORE=$(printf %q "$store") bench/gateway.sh" \
    "$url" "gateway$b"
  pid=$started_pid
  "$work/mcpload" -url "$url" -sessions "$SESSIONS" -payload "$PAYLOAD" -duration 2s -keys unique >/dev/null 2>>"$work/mcpload.log"
  "$work/mcpload" -url "$url" -sessions "$SESSIONS" -payload "$PAYLOAD" -duration 1s >/dev/null 2>>"$work/mcpload.log"
  for kind in plain keyed; do
    keys=()
    [ "$kind" = keyed ] && keys=(-keys unique)
    perf stat -x, -e "$events" -p "$pid" -o "$work/perf-$b-$kind" &
    ppid=$!
    sleep 0.3 # perf attached
    timeout -k 5 300 "$work/mcpload" -url "$url" -sessions "$SESSIONS" -payload "$PAYLOAD" -calls "$CALLS" -warmup 0s -duration 120s \
      "${keys[@]}" >/dev/null 2>>"$work/mcpload.log"
    kill -INT "$ppid"
    wait "$ppid" || true
    awk -F, -v n="$CALLS" -v label="${bin_names[$b]}" -v kind="$kind" -v names="$names" '
      $3 ~ /task-clock/ { cpu = $1 * 1000 / n }
      $3 ~ /sys_enter/ { e = $3; sub(/.*sys_enter_?/, "", e); if (e == "") e = "all"; v[e] = $1 / n }
      END {
        printf "| %s | %s | %.0f | %.2f |", label, kind, cpu, v["all"]
        split(names, ns, " ")
        for (i = 1; i in ns; i++) printf " %.2f |", v[ns[i]]
        printf "\n"
      }' "$work/perf-$b-$kind"
  done
  kill "$pid" 2>/dev/null || true
done
