#!/usr/bin/env bash
# Measures what users run: the gateway with identity, a rate limit and keyed
# calls, against the echo server alone ("direct") and the plain gateway, in
# ONE run against one echo server, and prints one markdown table of medians.
#
# Configurations (each gateway its own gatehouse process, own store, own port):
#   direct              bench/echoserver, no gateway
#   plain               gatehouse serve, no auth, no limit (SQLite NORMAL)
#   token               a static bearer token, no rate limit (what oauth is
#                       compared with)
#   token+rl            a static bearer token and rateLimit
#   +keys sqlite        the same, every call with a unique _meta.idempotencyKey
#                       (journaled: claim and completion), SQLite NORMAL
#   +keys sqlite-power  the same on SQLite durability=power (synchronous=FULL)
#   +keys postgres      the same on PostgreSQL (BENCH_POSTGRES, else
#                       GATEHOUSE_TEST_POSTGRES; skipped, with a message, when
#                       neither is set or psql is missing), a schema of its own
#   +replays sqlite     token+rl with keys from a pool of POOL per session:
#                       after the first POOL calls of a session every call is
#                       answered from the journal (0 or empty POOL skips it)
#   oauth               an OAuth JWT (bench/authserver, RS256) instead of the
#                       static token, requiredScopes [mcp], no rate limit
#   oauth+rl            the same with the rate limit
# Two more, run only when ONLY names them, bound what the keyed rows pay for:
#   +keys memory        +keys sqlite on the memory store (nothing durable):
#                       the keyed path without the store's cost
#   +keys sqlite-noaudit +keys sqlite with audit.enabled false: the keyed
#                       path without the audit entry its completion commits
# Each at SESSIONS (default "1 8") sessions, PAYLOAD bytes (default 64), for
# ROUNDS rounds (default 3) of DURATION (default 4s) after WARMUP (default 1s);
# within a round every configuration runs once per cell, the order rotated
# each round so that no configuration always follows the same one. The table
# is the median over the rounds: calls/s, p50, p99, the measured process's CPU
# per call (the echo server for direct, else the gateway alone), and calls/s
# against direct and against plain. A second table gives each row's calls/s
# over plain's round by round (median, lowest, highest): the spread says how
# far one round is to be trusted.
#
# Environment (all optional): DURATION, WARMUP, ROUNDS, SESSIONS, PAYLOAD,
#   GATEHOUSE_BIN   a built gatehouse (default: built from this checkout)
#   RATELIMIT       the rateLimit of the *rl configurations (default
#                   1000000/60s: a limit never reached, so its cost is measured,
#                   not its refusals)
#   POOL            the pool of +replays sqlite (default 16)
#   ONLY            a space-separated subset of the labels above (direct and
#                   plain always run: they are the baselines)
#   PORT_BASE       the gateways listen on 127.0.0.1:PORT_BASE+i (default 18300)
#   BENCH_POSTGRES  a PostgreSQL DSN (default: GATEHOUSE_TEST_POSTGRES)
#   RESULTS         also copy the JSON results (one object a line) here
#   BENCH_KEEP      keep the work directory (binaries, configs, logs)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

DURATION=${DURATION:-4s}
WARMUP=${WARMUP:-1s}
ROUNDS=${ROUNDS:-3}
SESSIONS=${SESSIONS:-"1 8"}
PAYLOAD=${PAYLOAD:-64}
RATELIMIT=${RATELIMIT:-1000000/60s}
POOL=${POOL:-16}
ONLY=${ONLY:-}
PORT_BASE=${PORT_BASE:-18300}
PG=${BENCH_POSTGRES:-${GATEHOUSE_TEST_POSTGRES:-}}
[[ $ROUNDS =~ ^[1-9][0-9]?$ ]] || { echo "ROUNDS must be 1 to 99" >&2; exit 2; }
[[ $PORT_BASE =~ ^[1-9][0-9]{3,4}$ ]] && [ "$PORT_BASE" -le 65500 ] || { echo "PORT_BASE must be 1000 to 65500" >&2; exit 2; }

. bench/lib.sh

log "building mcpload, echoserver, authserver${GATEHOUSE_BIN:+ (gatehouse: $GATEHOUSE_BIN)}"
go build -o "$work/mcpload" ./bench/mcpload
go build -o "$work/echoserver" ./bench/echoserver
go build -o "$work/authserver" ./bench/authserver
if [ -z "${GATEHOUSE_BIN:-}" ]; then
  log "building gatehouse"
  go build -o "$work/gatehouse" ./cmd/gatehouse
  GATEHOUSE_BIN=$work/gatehouse
fi
export GATEHOUSE_BIN

start_echo -addr 127.0.0.1:0

# The static token: random, in a file (never on a command line).
token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
(umask 077 && printf '%s\n' "$token" >"$work/static.token")

# PostgreSQL: a schema of this run's, dropped at exit.
pg_schema=
pg_dsn=
if [ -n "$PG" ] && command -v psql >/dev/null; then
  pg_schema=bench_$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')
  psql "$PG" -v ON_ERROR_STOP=1 -qc "CREATE SCHEMA $pg_schema" >/dev/null
  case "$PG" in *\?*) pg_dsn="$PG&search_path=$pg_schema" ;; *) pg_dsn="$PG?search_path=$pg_schema" ;; esac
  bench_after_kill() { psql "$PG" -qc "DROP SCHEMA IF EXISTS $pg_schema CASCADE" >/dev/null 2>&1; }
elif [ -n "$PG" ]; then
  log "+keys postgres skipped: psql is not installed (it makes the run's schema)"
else
  log "+keys postgres skipped: set BENCH_POSTGRES or GATEHOUSE_TEST_POSTGRES to a PostgreSQL DSN"
fi

# The configurations: label, gateway environment, mcpload flags. Parallel
# arrays, in table order.
labels=() envs=() flags=() urls=() tpids=()
add() { labels+=("$1"); envs+=("$2"); flags+=("$3"); }
# named: the row is named in ONLY; want: it is, or ONLY is empty (the
# default rows). The opt-in rows below are added only when named.
named() { [[ " $ONLY " == *" $1 "* ]]; }
want() { [ -z "$ONLY" ] || named "$1"; }
static="GATEWAY_TOKEN=$token"
tf="-token-file $work/static.token"
add direct "" ""
add plain "" ""
want token && add token "$static" "$tf"
want token+rl && add token+rl "$static GATEWAY_RATELIMIT=$RATELIMIT" "$tf"
want "+keys sqlite" && add "+keys sqlite" "$static GATEWAY_RATELIMIT=$RATELIMIT" "$tf -keys unique"
want "+keys sqlite-power" && add "+keys sqlite-power" "$static GATEWAY_RATELIMIT=$RATELIMIT GATEWAY_STORE=sqlite-power" "$tf -keys unique"
if [ -n "$pg_dsn" ] && want "+keys postgres"; then
  add "+keys postgres" "$static GATEWAY_RATELIMIT=$RATELIMIT GATEWAY_STORE=$pg_dsn" "$tf -keys unique"
fi
if [ -n "$POOL" ] && [ "$POOL" != 0 ] && want "+replays sqlite"; then
  add "+replays sqlite" "$static GATEWAY_RATELIMIT=$RATELIMIT" "$tf -keys pool:$POOL"
fi
want oauth && add oauth "OAUTH" ""
want oauth+rl && add oauth+rl "OAUTH GATEWAY_RATELIMIT=$RATELIMIT" ""
named "+keys memory" && add "+keys memory" "$static GATEWAY_RATELIMIT=$RATELIMIT GATEWAY_STORE=memory" "$tf -keys unique"
named "+keys sqlite-noaudit" && add "+keys sqlite-noaudit" "$static GATEWAY_RATELIMIT=$RATELIMIT GATEWAY_NOAUDIT=1" "$tf -keys unique"

# Start every gateway (and, for OAuth, its issuer) before the first round.
for i in "${!labels[@]}"; do
  if [ "${labels[$i]}" = direct ]; then
    urls+=("$ECHO_URL") tpids+=("$echo_pid")
    continue
  fi
  url="http://127.0.0.1:$((PORT_BASE + i))/mcp"
  env_words=${envs[$i]}
  if [[ " $env_words " == *" OAUTH "* ]]; then
    # The issuer mints a token for this gateway's URL, its resource.
    tokfile="$work/oauth$i.token"
    "$work/authserver" -resource "$url" -token-file "$tokfile" -scope mcp >"$work/authserver$i.out" 2>"$work/authserver$i.log" &
    pids+=("$!")
    issuer=
    for _ in $(seq 300); do
      issuer=$(sed -n 's/^issuer=//p' "$work/authserver$i.out")
      [ -n "$issuer" ] && break
      sleep 0.1
    done
    [ -n "$issuer" ] || { cat "$work/authserver$i.log" >&2; log "authserver did not start"; exit 1; }
    env_words=${env_words/OAUTH/GATEWAY_OAUTH_ISSUER=$issuer}
    flags[i]="-token-file $tokfile"
  fi
  # The word list is ours (no blanks inside a value); each word is quoted
  # for the shell start_gateway runs (a DSN holds '?' and '&').
  read -ra words <<<"GATEWAY_DIR=$work/gw$i $env_words"
  start_gateway "env $(printf '%q ' "${words[@]}")bench/gateway.sh" "$url" "gateway$i"
  urls+=("$url") tpids+=("$started_pid")
done

results="$work/results.jsonl"
: >"$results"
n=${#labels[@]}
for round in $(seq "$ROUNDS"); do
  for s in $SESSIONS; do
    log "round $round/$ROUNDS, $s sessions"
    for k in $(seq 0 $((n - 1))); do
      i=$(((k + round - 1) % n))
      # shellcheck disable=SC2086
      load "${labels[$i]}" "${urls[$i]}" "${tpids[$i]}" -duration "$DURATION" -warmup "$WARMUP" -verify -json \
        -sessions "$s" -payload "$PAYLOAD" ${flags[$i]}
    done
  done
done

[ -n "${RESULTS:-}" ] && cp "$results" "$RESULTS"

echo "## The hardened path: direct, the plain gateway and the hardened configurations"
echo
machine_line
echo "mcpload closed loops, $ROUNDS rounds of $DURATION per cell after $WARMUP warmup, $PAYLOAD B, answers"
echo "verified, medians over the rounds; echo server: go-sdk streamable HTTP, stateful, SSE responses; rl ="
echo "rateLimit $RATELIMIT; the +keys and +replays rows are token+rl plus keyed calls. CPU µs/call is the"
echo "measured process's user+system time (/proc) over the measured window per call: the echo server for"
echo "direct, the gateway alone otherwise (the echo server's and PostgreSQL's work is not in it)."
echo
"$work/mcpload" -report -medians "$results"
