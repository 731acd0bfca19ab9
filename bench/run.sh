#!/usr/bin/env bash
# Measures MCP tool-call throughput and latency on this machine with
# bench/mcpload against bench/echoserver (a plain go-sdk server, "direct"),
# and, when GATEWAY_CMD is set, through a gateway fronting the same echo
# server in the same run, then prints markdown tables (and ratios).
#
# Matrix: SESSIONS x PAYLOADS, each cell DURATION after WARMUP, closed loops,
# every answer verified. The direct and gateway runs of a cell run back to
# back. Everything listens and connects on 127.0.0.1 only.
#
# Environment (all optional):
#   DURATION       measured time per cell (default 5s)
#   WARMUP         unmeasured time before it (default 1s)
#   SESSIONS       concurrent sessions, space separated (default "1 8 32")
#   PAYLOADS       payload bytes, space separated (default "64 16384")
#   JSON_RESPONSE  1: the echo server answers with JSON, not SSE (default 0)
#   PROTOCOL       protocol version mcpload requests (default: go-sdk latest,
#                  which falls back to 2025-11-25 on a stateful server)
#   GATEWAY_CMD    a command that starts a gateway in front of $ECHO_URL and
#                  listens on $GATEWAY_URL (both exported to it). It is run
#                  with `exec` through bash, so its PID is the gateway's (for
#                  RSS and CPU); a single command, e.g. "gatehouse serve -c f".
#   GATEWAY_URL    where the gateway listens (default http://127.0.0.1:18181/mcp)
#   GATEWAY_LABEL  its name in the tables (default gateway)
#   GATEWAY2_CMD, GATEWAY2_URL (default http://127.0.0.1:18182/mcp), GATEWAY2_LABEL
#                  (default gateway2): a second gateway measured in the same run,
#                  each cell right after the first (before/after comparisons:
#                  GATEWAY2_CMD="env GATEHOUSE_BIN=/tmp/old bench/gateway.sh"); its
#                  command gets its own URL as $GATEWAY_URL
#   IDLE_SESSIONS  if > 0, also hold this many idle sessions on each target
#                  and report its RSS (e.g. 10000; default 0, skipped)
#   IDLE_HOLD      how long to hold them (default 10s)
#   RESULTS        also copy the JSON results (one object a line) here
#   BENCH_KEEP     keep the work directory (binaries, logs) when set
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-1s}
SESSIONS=${SESSIONS:-"1 8 32"}
PAYLOADS=${PAYLOADS:-"64 16384"}
JSON_RESPONSE=${JSON_RESPONSE:-0}
PROTOCOL=${PROTOCOL:-}
GATEWAY_CMD=${GATEWAY_CMD:-}
GATEWAY_URL=${GATEWAY_URL:-http://127.0.0.1:18181/mcp}
GATEWAY_LABEL=${GATEWAY_LABEL:-gateway}
GATEWAY2_CMD=${GATEWAY2_CMD:-}
GATEWAY2_URL=${GATEWAY2_URL:-http://127.0.0.1:18182/mcp}
GATEWAY2_LABEL=${GATEWAY2_LABEL:-gateway2}
IDLE_SESSIONS=${IDLE_SESSIONS:-0}
IDLE_HOLD=${IDLE_HOLD:-10s}

work=$(mktemp -d /tmp/gatehouse-bench.XXXXXX)
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    # Bounded: a process that ignores TERM for 5 s gets KILL.
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ -n "${BENCH_KEEP:-}" ]; then
    echo "work directory kept: $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
log() { printf '%s\n' "$*" >&2; }

log "building mcpload and echoserver"
go build -o "$work/mcpload" ./bench/mcpload
go build -o "$work/echoserver" ./bench/echoserver

echo_flags=(-addr 127.0.0.1:0)
[ "$JSON_RESPONSE" = 1 ] && echo_flags+=(-json)
"$work/echoserver" "${echo_flags[@]}" >"$work/echo.out" 2>"$work/echo.log" &
echo_pid=$!
pids+=("$echo_pid")
ECHO_URL=
for _ in $(seq 100); do
  ECHO_URL=$(sed -n 's/^url=//p' "$work/echo.out")
  [ -n "$ECHO_URL" ] && break
  kill -0 "$echo_pid" 2>/dev/null || { cat "$work/echo.log" >&2; log "echoserver died"; exit 1; }
  sleep 0.1
done
[ -n "$ECHO_URL" ] || { log "echoserver did not start"; exit 1; }
export ECHO_URL GATEWAY_URL
log "echo server: $ECHO_URL (pid $echo_pid)"

# start_gateway CMD URL LOGNAME: starts CMD (with $GATEWAY_URL set to URL)
# and waits until URL accepts connections; sets $started_pid.
start_gateway() {
  local cmd=$1 url=$2 name=$3 hostport gw_host gw_port pid up=
  hostport=${url#*://}
  hostport=${hostport%%/*}
  gw_host=${hostport%:*}
  gw_port=${hostport##*:}
  case "$gw_host" in
    127.*|localhost) ;;
    *) log "$name URL must be on 127.0.0.1"; exit 1 ;;
  esac
  GATEWAY_URL=$url bash -c "exec $cmd" >"$work/$name.log" 2>&1 &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 300); do
    kill -0 "$pid" 2>/dev/null || break
    if (exec 3<>"/dev/tcp/$gw_host/$gw_port") 2>/dev/null; then up=1; break; fi
    sleep 0.1
  done
  if [ -z "$up" ]; then
    tail -n 50 "$work/$name.log" >&2
    log "$name did not listen on $url within 30s"
    exit 1
  fi
  log "$name: $url (pid $pid)"
  started_pid=$pid
}

gw_pid=
gw2_pid=
if [ -n "$GATEWAY_CMD" ]; then
  start_gateway "$GATEWAY_CMD" "$GATEWAY_URL" gateway
  gw_pid=$started_pid
fi
if [ -n "$GATEWAY2_CMD" ]; then
  start_gateway "$GATEWAY2_CMD" "$GATEWAY2_URL" gateway2
  gw2_pid=$started_pid
fi

results="$work/results.jsonl"
: >"$results"
common=(-duration "$DURATION" -warmup "$WARMUP" -verify -json)
[ -n "$PROTOCOL" ] && common+=(-protocol "$PROTOCOL")

# load LABEL URL PID FLAGS...: one mcpload run appended to the results. A run
# with failed calls (exit 3) is kept: its errors show in the table.
load() {
  local label=$1 url=$2 pid=$3
  shift 3
  local rc=0
  "$work/mcpload" -url "$url" -rss-pid "$pid" -label "$label" "$@" >>"$results" 2>>"$work/mcpload.log" || rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != 3 ]; then
    tail -n 20 "$work/mcpload.log" >&2
    log "mcpload failed (exit $rc) for $label $*"
    exit 1
  fi
  [ "$rc" = 3 ] && log "  $label: some calls failed (see errors column)"
  return 0
}

for payload in $PAYLOADS; do
  for s in $SESSIONS; do
    log "cell: $s sessions, $payload B"
    load direct "$ECHO_URL" "$echo_pid" "${common[@]}" -sessions "$s" -payload "$payload"
    if [ -n "$gw_pid" ]; then
      load "$GATEWAY_LABEL" "$GATEWAY_URL" "$gw_pid" "${common[@]}" -sessions "$s" -payload "$payload"
    fi
    if [ -n "$gw2_pid" ]; then
      load "$GATEWAY2_LABEL" "$GATEWAY2_URL" "$gw2_pid" "${common[@]}" -sessions "$s" -payload "$payload"
    fi
  done
done

if [ "$IDLE_SESSIONS" -gt 0 ]; then
  idle=(-idle "$IDLE_SESSIONS" -hold "$IDLE_HOLD" -payload 64 -verify -json -protocol "${PROTOCOL:-2025-11-25}" -timeout 60s)
  log "idle: $IDLE_SESSIONS sessions for $IDLE_HOLD"
  load direct "$ECHO_URL" "$echo_pid" "${idle[@]}"
  [ -n "$gw_pid" ] && load "$GATEWAY_LABEL" "$GATEWAY_URL" "$gw_pid" "${idle[@]}"
  [ -n "$gw2_pid" ] && load "$GATEWAY2_LABEL" "$GATEWAY2_URL" "$gw2_pid" "${idle[@]}"
fi

[ -n "${RESULTS:-}" ] && cp "$results" "$RESULTS"

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
echo "## MCP echo calls: direct${gw_pid:+ vs $GATEWAY_LABEL}${gw2_pid:+ vs $GATEWAY2_LABEL}"
echo
echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores ($cpu), $(go version | cut -d' ' -f3), kernel $(uname -r)."
echo "mcpload closed loops, $DURATION per cell after $WARMUP warmup, answers verified; echo server: go-sdk"
echo "streamable HTTP, stateful, $([ "$JSON_RESPONSE" = 1 ] && echo "JSON responses" || echo "SSE responses");"
echo "client, server${gw_pid:+ and gateway} share the machine. Latencies are exact (nearest rank) over all"
echo "measured calls; machine CPU is all cores from /proc/stat; target is the echo server (direct) or the gateway."
echo
"$work/mcpload" -report "$results"
