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

. bench/lib.sh

log "building mcpload and echoserver"
go build -o "$work/mcpload" ./bench/mcpload
go build -o "$work/echoserver" ./bench/echoserver

echo_flags=(-addr 127.0.0.1:0)
[ "$JSON_RESPONSE" = 1 ] && echo_flags+=(-json)
start_echo "${echo_flags[@]}"
export GATEWAY_URL

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

echo "## MCP echo calls: direct${gw_pid:+ vs $GATEWAY_LABEL}${gw2_pid:+ vs $GATEWAY2_LABEL}"
echo
machine_line
echo "mcpload closed loops, $DURATION per cell after $WARMUP warmup, answers verified; echo server: go-sdk"
echo "streamable HTTP, stateful, $([ "$JSON_RESPONSE" = 1 ] && echo "JSON responses" || echo "SSE responses");"
echo "client, server${gw_pid:+ and gateway} share the machine. Latencies are exact (nearest rank) over all"
echo "measured calls; machine CPU is all cores from /proc/stat; target is the echo server (direct) or the gateway."
echo
"$work/mcpload" -report "$results"
