#!/usr/bin/env bash
# GATEWAY_CMD helper for bench/run.sh: writes a config that fronts $ECHO_URL with
# `gatehouse serve` listening on $GATEWAY_URL (prefix "", so the tool keeps its
# name), then execs the gateway so its PID is the one measured.
#   go build -o /tmp/gatehouse ./cmd/gatehouse
#   GATEHOUSE_BIN=/tmp/gatehouse GATEWAY_CMD=bench/gateway.sh bench/run.sh
# Optional: GATEWAY_GOGC and GATEWAY_GOMEMLIMIT set GOGC and GOMEMLIMIT for
# the gateway process only (the echo server and mcpload keep the defaults);
# GATEWAY_JSON=1 sets http.jsonResponse: true (plain JSON answers instead of
# SSE streams). See docs/BENCHMARKS.md for what they change.
set -euo pipefail
bin=${GATEHOUSE_BIN:?set GATEHOUSE_BIN to a built gatehouse binary}
: "${ECHO_URL:?}" "${GATEWAY_URL:?}"
dir=$(mktemp -d /tmp/gatehouse-bench.XXXXXX)
hostport=${GATEWAY_URL#http://}
hostport=${hostport%%/*}
cat >"$dir/gatehouse.yaml" <<EOF
listen: $hostport
store: sqlite:$dir/gatehouse.db
servers:
  echo:
    type: streamable-http
    url: $ECHO_URL
    prefix: ""
EOF
if [ "${GATEWAY_JSON:-0}" = 1 ]; then
  printf 'http:\n  jsonResponse: true\n' >>"$dir/gatehouse.yaml"
fi
if [ -n "${GATEWAY_GOGC:-}" ]; then
  export GOGC=$GATEWAY_GOGC
fi
if [ -n "${GATEWAY_GOMEMLIMIT:-}" ]; then
  export GOMEMLIMIT=$GATEWAY_GOMEMLIMIT
fi
exec "$bin" serve --config "$dir/gatehouse.yaml" --log-format json 2>>"$dir/gateway.log"
