#!/usr/bin/env bash
# GATEWAY_CMD helper for bench/run.sh: writes a config that fronts $ECHO_URL with
# `gatehouse serve` listening on $GATEWAY_URL (prefix "", so the tool keeps its
# name), then execs the gateway so its PID is the one measured.
#   go build -o /tmp/gatehouse ./cmd/gatehouse
#   GATEHOUSE_BIN=/tmp/gatehouse GATEWAY_CMD=bench/gateway.sh bench/run.sh
# Optional: GATEWAY_GOGC and GATEWAY_GOMEMLIMIT set GOGC and GOMEMLIMIT for
# the gateway process only (the echo server and mcpload keep the defaults;
# either turns serve's heap floor off), GATEWAY_HEAP_FLOOR its
# --heap-floor-mib (a binary without the flag refuses it);
# GATEWAY_JSON=1 sets http.jsonResponse: true (plain JSON answers instead of
# SSE streams). See docs/BENCHMARKS.md for what they change.
#
# The hardened configurations (bench/hardened.sh sets these):
#   GATEWAY_DIR           where the config, the SQLite store and the log go
#                         (default: a new directory under /tmp)
#   GATEWAY_TOKEN         a static bearer token: auth.tokens gets its sha256 and
#                         the subject GATEWAY_SUBJECT (default bench)
#   GATEWAY_RATELIMIT     MAXCALLS/WINDOW, e.g. 1000000/60s: rateLimit {maxCalls,
#                         window}; pick a maxCalls the run never reaches to
#                         measure the limit's cost, not its refusals
#   GATEWAY_STORE         sqlite (default: SQLite, durability process, i.e.
#                         synchronous=NORMAL), sqlite-power (durability=power,
#                         synchronous=FULL), a postgres:// DSN used as given,
#                         or memory (nothing durable: what the store costs is
#                         the difference to the same configuration on sqlite)
#   GATEWAY_NOAUDIT=1     audit: {enabled: false} (what the audit trail costs)
#   GATEWAY_OAUTH_ISSUER  an issuer URL (bench/authserver prints it): auth.resource
#                         is $GATEWAY_URL and auth.oauth verifies JWTs of that
#                         issuer, requiredScopes [mcp]
set -euo pipefail
bin=${GATEHOUSE_BIN:?set GATEHOUSE_BIN to a built gatehouse binary}
: "${ECHO_URL:?}" "${GATEWAY_URL:?}"
die() { printf 'gateway.sh: %s\n' "$*" >&2; exit 2; }
dir=${GATEWAY_DIR:-}
if [ -z "$dir" ]; then
  dir=$(mktemp -d /tmp/gatehouse-bench.XXXXXX)
fi
mkdir -p "$dir"
hostport=${GATEWAY_URL#http://}
hostport=${hostport%%/*}

case "${GATEWAY_STORE:-sqlite}" in
  sqlite) store="sqlite:$dir/gatehouse.db" ;;
  sqlite-power) store="sqlite:$dir/gatehouse.db?durability=power" ;;
  memory) store="memory:" ;;
  postgres://*|postgresql://*)
    store=$GATEWAY_STORE
    # The instance lock of a gateway on PostgreSQL lives under the user's
    # cache directory: keep the benchmark's beside its config.
    export XDG_CACHE_HOME="$dir/cache"
    ;;
  *) die "GATEWAY_STORE must be sqlite, sqlite-power, memory or a postgres:// DSN" ;;
esac

# The store is this config's, whatever the caller's shell holds.
unset GATEHOUSE_STORE
cat >"$dir/gatehouse.yaml" <<EOF
listen: $hostport
store: '${store//\'/\'\'}'
servers:
  echo:
    type: streamable-http
    url: $ECHO_URL
    prefix: ""
EOF
if [ "${GATEWAY_NOAUDIT:-0}" = 1 ]; then
  printf 'audit: {enabled: false}\n' >>"$dir/gatehouse.yaml"
fi
if [ "${GATEWAY_JSON:-0}" = 1 ]; then
  printf 'http:\n  jsonResponse: true\n' >>"$dir/gatehouse.yaml"
fi
if [ -n "${GATEWAY_RATELIMIT:-}" ]; then
  [[ $GATEWAY_RATELIMIT =~ ^([1-9][0-9]{0,9})/([1-9][0-9]*(ms|s|m|h))$ ]] ||
    die "GATEWAY_RATELIMIT must be MAXCALLS/WINDOW, e.g. 1000000/60s"
  printf 'rateLimit: {maxCalls: %s, window: %s}\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" >>"$dir/gatehouse.yaml"
fi
if [ -n "${GATEWAY_TOKEN:-}" ] || [ -n "${GATEWAY_OAUTH_ISSUER:-}" ]; then
  printf 'auth:\n' >>"$dir/gatehouse.yaml"
fi
if [ -n "${GATEWAY_TOKEN:-}" ]; then
  subject=${GATEWAY_SUBJECT:-bench}
  [[ $subject =~ ^[A-Za-z0-9._-]+$ ]] || die "GATEWAY_SUBJECT must be letters, digits, '.', '_' or '-'"
  sum=$(printf %s "$GATEWAY_TOKEN" | sha256sum)
  printf '  tokens:\n    - sha256: %s\n      subject: %s\n' "${sum%% *}" "$subject" >>"$dir/gatehouse.yaml"
fi
if [ -n "${GATEWAY_OAUTH_ISSUER:-}" ]; then
  [[ $GATEWAY_OAUTH_ISSUER =~ ^http://(127\.[0-9.]+|localhost|\[::1\]):[0-9]+$ ]] ||
    die "GATEWAY_OAUTH_ISSUER must be http://127.0.0.1:PORT (a local issuer)"
  printf '  resource: %s\n  oauth:\n    issuer: %s\n    requiredScopes: [mcp]\n' \
    "$GATEWAY_URL" "$GATEWAY_OAUTH_ISSUER" >>"$dir/gatehouse.yaml"
fi
if [ -n "${GATEWAY_GOGC:-}" ]; then
  export GOGC=$GATEWAY_GOGC
fi
if [ -n "${GATEWAY_GOMEMLIMIT:-}" ]; then
  export GOMEMLIMIT=$GATEWAY_GOMEMLIMIT
fi
floor=()
if [ -n "${GATEWAY_HEAP_FLOOR:-}" ]; then
  [[ $GATEWAY_HEAP_FLOOR =~ ^[0-9]+$ ]] || die "GATEWAY_HEAP_FLOOR must be a number of MiB"
  floor=(--heap-floor-mib "$GATEWAY_HEAP_FLOOR")
fi
exec "$bin" serve --config "$dir/gatehouse.yaml" --log-format json "${floor[@]}" 2>>"$dir/gateway.log"
