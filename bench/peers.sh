#!/usr/bin/env bash
# Measures Gatehouse against a peer proxy in ONE interleaved run, against one
# echo server, and prints one markdown table of medians.
#
# Usage: bench/peers.sh TBXARK_BIN
#
# TBXARK_BIN is a built TBXark/mcp-proxy (https://github.com/TBXark/mcp-proxy,
# Go, MIT): clone and `go build` it OUTSIDE this repository; none of its code
# is in this project. Its config is written here: one streamable-HTTP upstream
# (the echo server), served as streamable HTTP, logging off, no tokens.
#
# Rows, each its own process fronting the same echo server:
#   direct     bench/echoserver, no proxy
#   tbxark     the peer
#   gatehouse  gatehouse serve with its defaults (audit on, SQLite NORMAL
#              store, no auth), as bench/gateway.sh starts it
#   floor      bench/floorproxy: a bare httputil.ReverseProxy, the floor of
#              any proxy on net/http (no sessions, auth, audit or parsing)
# The "vs direct" column is each row's calls/s over direct's, the "vs
# tbxark" column each row's over the peer's (the second row): gatehouse's
# figure there is its calls/s over the peer's in the same cells.
#
# Matrix: SESSIONS (default "1 8 32") x PAYLOADS (default "64 16384"), ROUNDS
# rounds (default 3) of DURATION (default 4s) after WARMUP (default 1s); the
# order of the rows rotates each round. Environment (all optional): DURATION,
# WARMUP, ROUNDS, SESSIONS, PAYLOADS, GATEHOUSE_BIN (default: built from this
# checkout), PORT_BASE (default 18400), RESULTS, BENCH_KEEP.
# Everything listens and connects on 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

TBXARK_BIN=${1:-${TBXARK_BIN:-}}
[ -n "$TBXARK_BIN" ] && [ -x "$TBXARK_BIN" ] || {
  echo "usage: bench/peers.sh TBXARK_BIN (a built TBXark/mcp-proxy binary)" >&2
  exit 2
}
DURATION=${DURATION:-4s}
WARMUP=${WARMUP:-1s}
ROUNDS=${ROUNDS:-3}
SESSIONS=${SESSIONS:-"1 8 32"}
PAYLOADS=${PAYLOADS:-"64 16384"}
PORT_BASE=${PORT_BASE:-18400}
[[ $ROUNDS =~ ^[1-9][0-9]?$ ]] || { echo "ROUNDS must be 1 to 99" >&2; exit 2; }
[[ $PORT_BASE =~ ^[1-9][0-9]{3,4}$ ]] && [ "$PORT_BASE" -le 65500 ] || { echo "PORT_BASE must be 1000 to 65500" >&2; exit 2; }

. bench/lib.sh

log "building mcpload, echoserver${GATEHOUSE_BIN:+ (gatehouse: $GATEHOUSE_BIN)}"
go build -o "$work/mcpload" ./bench/mcpload
go build -o "$work/echoserver" ./bench/echoserver
go build -o "$work/floorproxy" ./bench/floorproxy
if [ -z "${GATEHOUSE_BIN:-}" ]; then
  log "building gatehouse"
  go build -o "$work/gatehouse" ./cmd/gatehouse
  GATEHOUSE_BIN=$work/gatehouse
fi
export GATEHOUSE_BIN

start_echo -addr 127.0.0.1:0

# The peer: its config names the upstream "echo", served at /echo/.
tbx_port=$((PORT_BASE + 1))
cat >"$work/tbxark.json" <<EOF
{
  "mcpProxy": {
    "baseURL": "http://127.0.0.1:$tbx_port",
    "addr": "127.0.0.1:$tbx_port",
    "name": "peer",
    "version": "1.0.0",
    "type": "streamable-http",
    "options": {"panicIfInvalid": true, "logEnabled": false}
  },
  "mcpServers": {
    "echo": {"url": "$ECHO_URL", "transportType": "streamable-http"}
  }
}
EOF
start_gateway "$(printf '%q' "$TBXARK_BIN") --config $(printf '%q' "$work/tbxark.json")" "http://127.0.0.1:$tbx_port/echo/" tbxark
tbx_pid=$started_pid

gh_url="http://127.0.0.1:$((PORT_BASE + 2))/mcp"
start_gateway "env GATEWAY_DIR=$(printf '%q' "$work/gh") bench/gateway.sh" "$gh_url" gatehouse
gh_pid=$started_pid

floor_port=$((PORT_BASE + 3))
echo_origin=${ECHO_URL%/mcp}
start_gateway "$(printf '%q' "$work/floorproxy") -addr 127.0.0.1:$floor_port -upstream $(printf '%q' "$echo_origin")" "http://127.0.0.1:$floor_port/mcp" floor
floor_pid=$started_pid

labels=(direct tbxark gatehouse floor)
urls=("$ECHO_URL" "http://127.0.0.1:$tbx_port/echo/" "$gh_url" "http://127.0.0.1:$floor_port/mcp")
tpids=("$echo_pid" "$tbx_pid" "$gh_pid" "$floor_pid")

results="$work/results.jsonl"
: >"$results"
n=${#labels[@]}
for round in $(seq "$ROUNDS"); do
  for payload in $PAYLOADS; do
    for s in $SESSIONS; do
      log "round $round/$ROUNDS, $s sessions, $payload B"
      for k in $(seq 0 $((n - 1))); do
        i=$(((k + round - 1) % n))
        load "${labels[$i]}" "${urls[$i]}" "${tpids[$i]}" -duration "$DURATION" -warmup "$WARMUP" -verify -json \
          -sessions "$s" -payload "$payload"
      done
    done
  done
done

[ -n "${RESULTS:-}" ] && cp "$results" "$RESULTS"

echo "## Gatehouse and a peer proxy (TBXark/mcp-proxy $("$TBXARK_BIN" -version 2>/dev/null | head -n1 || true))"
echo
machine_line
echo "mcpload closed loops, $ROUNDS rounds of $DURATION per cell after $WARMUP warmup, answers verified, medians"
echo "over the rounds, the rows' order rotated each round; echo server: go-sdk streamable HTTP, stateful, SSE"
echo "responses. gatehouse: defaults (audit on, SQLite NORMAL); floor: a bare httputil.ReverseProxy. \"vs tbxark\" is calls/s over the peer's in the"
echo "same cell. CPU µs/call is the measured process's user+system time (/proc) per call."
echo
"$work/mcpload" -report -medians "$results"
