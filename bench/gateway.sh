#!/usr/bin/env bash
# GATEWAY_CMD helper for bench/run.sh: writes a config that fronts $ECHO_URL with
# `gatehouse serve` listening on $GATEWAY_URL (prefix "", so the tool keeps its
# name), then execs the gateway so its PID is the one measured.
#   go build -o /tmp/gatehouse ./cmd/gatehouse
#   GATEHOUSE_BIN=/tmp/gatehouse GATEWAY_CMD=bench/gateway.sh bench/run.sh
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
exec "$bin" serve --config "$dir/gatehouse.yaml" --log-format json 2>>"$dir/gateway.log"
