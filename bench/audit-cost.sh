#!/usr/bin/env bash
# What the audit trail costs a plain call, before and after a change
# (issue 36 item 2), in one interleaved run.
#
# Starts four gateways in front of ONE bench/echoserver: the old binary with
# audit off and on, the new binary with audit off and on (each its own
# config, store (SQLite unless GATEWAY_STORE says otherwise, as for
# bench/gateway.sh) and port; defaults otherwise), and measures them in
# ROUNDS rounds, each running the four once, one after the other, in an
# order rotated from round to round. The figure is the gateway process's CPU
# per plain tools/call (user+system from /proc/PID/stat over the measured
# window, divided by the calls: mcpload -rss-pid), as in bench/guard.sh. It
# prints, for each binary, the median of its rounds with audit on over off
# (and the round-by-round median, and the rounds' pairs as a mean and its
# standard error), and new over old with audit on. The same binary given as
# both shows what the run's noise is (the two slots differ only by it) and
# pools the two slots' pairs.
#
#   go build -o /tmp/gh-old ./cmd/gatehouse     # at the commit before
#   go build -o /tmp/gh-new ./cmd/gatehouse     # at the change
#   AUDIT_OLD_BIN=/tmp/gh-old AUDIT_NEW_BIN=/tmp/gh-new bench/audit-cost.sh
#
# Environment: AUDIT_OLD_BIN, AUDIT_NEW_BIN (required, built binaries);
# ROUNDS (default 7), DURATION (default 4s) after WARMUP (1s), SESSIONS
# (default 4), PAYLOAD bytes (default 64), PORT_BASE (the gateways listen
# on 127.0.0.1:PORT_BASE to +3; default 24000 + this shell's PID mod 20000),
# PARALLEL=1 (each round loads a binary's off and on gateways at the same
# time, each from its own mcpload with SESSIONS sessions, then the other
# binary's: a pair then shares the machine's state, and its on/off ratio
# is several times steadier than from two windows one after the other),
# BENCH_KEEP (keep the work directory), GATEWAY_STORE (bench/gateway.sh's: a
# postgres:// DSN puts the four gateways on PostgreSQL, each its own
# instance). Everything stays on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

ROUNDS=${ROUNDS:-7}
DURATION=${DURATION:-4s}
WARMUP=${WARMUP:-1s}
SESSIONS=${SESSIONS:-4}
PAYLOAD=${PAYLOAD:-64}
PARALLEL=${PARALLEL:-0}
PORT_BASE=${PORT_BASE:-$((24000 + $$ % 20000))}
: "${AUDIT_OLD_BIN:?set AUDIT_OLD_BIN to the binary before the change}" "${AUDIT_NEW_BIN:?set AUDIT_NEW_BIN to the binary after it}"
[[ $ROUNDS =~ ^[1-9][0-9]?$ ]] || { echo "ROUNDS must be 1 to 99" >&2; exit 2; }
[[ $PARALLEL =~ ^[01]$ ]] || { echo "PARALLEL must be 0 or 1" >&2; exit 2; }
[[ $PORT_BASE =~ ^[1-9][0-9]{3,4}$ ]] && [ "$PORT_BASE" -le 65500 ] || { echo "PORT_BASE must be 1000 to 65500" >&2; exit 2; }

. bench/lib.sh

log "building mcpload, echoserver"
go build -o "$work/mcpload" ./bench/mcpload
go build -o "$work/echoserver" ./bench/echoserver
start_echo -addr 127.0.0.1:0

labels=(old-off old-on new-off new-on)
declare -A pid url
for i in 0 1 2 3; do
  l=${labels[$i]}
  bin=$AUDIT_OLD_BIN
  [[ $l == new-* ]] && bin=$AUDIT_NEW_BIN
  noaudit=0
  [[ $l == *-off ]] && noaudit=1
  url[$l]="http://127.0.0.1:$((PORT_BASE + i))/mcp"
  start_gateway "env GATEHOUSE_BIN=$(printf %q "$bin") GATEWAY_DIR=$work/gw-$l GATEWAY_NOAUDIT=$noaudit bench/gateway.sh" "${url[$l]}" "gateway-$l"
  pid[$l]=$started_pid
done

# store_name names the gateways' store without a DSN's credentials.
store_name() {
  case "${GATEWAY_STORE:-sqlite}" in
    postgres://*|postgresql://*) echo "PostgreSQL" ;;
    *) echo "${GATEWAY_STORE:-sqlite}" ;;
  esac
}

echo "## bench/audit-cost.sh: gateway CPU per plain tools/call, audit off and on, old and new"
machine_line
echo "old: $AUDIT_OLD_BIN; new: $AUDIT_NEW_BIN"
mode="one after the other, in an order rotated from round to round"
[ "$PARALLEL" = 1 ] && mode="a binary's off and on at the same time, each by its own mcpload"
echo "$ROUNDS rounds x 4 gateways ($mode), $DURATION after $WARMUP warmup each, $SESSIONS sessions, $PAYLOAD B, store $(store_name); load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
results=$work/results.jsonl
: >"$results"
# measure LABEL: one window of LABEL's gateway.
measure() {
  LOAD_BOUND=60 load "$1" "${url[$1]}" "${pid[$1]}" -duration "$DURATION" -warmup "$WARMUP" -verify -json \
    -sessions "$SESSIONS" -payload "$PAYLOAD"
}
for round in $(seq "$ROUNDS"); do
  if [ "$PARALLEL" = 1 ]; then
    # A binary's off and on gateways loaded at the same time, each by its
    # own mcpload: a pair shares the machine's state (its other load, its
    # clock speed), which one window after the other does not.
    order=(old new) modes=(off on)
    [ $((round % 2)) = 0 ] && order=(new old) modes=(on off)
    for b in "${order[@]}"; do
      measure "$b-${modes[0]}" & m1=$!
      measure "$b-${modes[1]}" & m2=$!
      wait "$m1" || exit 1
      wait "$m2" || exit 1
    done
    continue
  fi
  for k in 0 1 2 3; do
    measure "${labels[$(((k + round) % 4))]}"
  done
done
if grep -q '"errors":[1-9]' "$results"; then
  log "calls failed:"; grep '"errors":[1-9]' "$results" >&2
  exit 1
fi
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

cpu_of() {
  grep "\"label\":\"$1\"" "$results" |
    sed -n 's/.*"target_cpu_ms_per_call":\([0-9.eE+-]*\).*/\1/p' |
    awk '{ printf "%.1f\n", $1 * 1000 }'
}
median() {
  sort -g | awk -v d="${1:-1}" '{ v[NR] = $1 } END { if (NR == 0) exit 1; m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.*f\n", d, m }'
}
calls_of() {
  grep "\"label\":\"$1\"" "$results" | sed -n 's/.*"calls_per_sec":\([0-9.]*\).*/\1/p' | median 0
}
echo "gateway CPU µs per plain call, round by round (median; calls/s median):"
for l in "${labels[@]}"; do
  printf '  %-8s %s   (median %s; %s calls/s)\n' "$l" "$(cpu_of "$l" | paste -sd' ')" "$(cpu_of "$l" | median)" "$(calls_of "$l")"
done
# ratio A B: median(A)/median(B), and the median of the rounds' A/B.
ratio() {
  local a b
  a=$(cpu_of "$1" | median) b=$(cpu_of "$2" | median)
  printf '%.3f (round by round %s)' "$(awk -v a="$a" -v b="$b" 'BEGIN { print a / b }')" \
    "$(paste -d' ' <(cpu_of "$1") <(cpu_of "$2") | awk '{ printf "%.3f\n", $1 / $2 }' | median 3)"
}
# pairs ON OFF...: the rounds' on/off ratios (each round's on over its off,
# of each pair of labels given) as their mean and its standard error, the
# steadier figure when the rounds move together (n pairs, mean ± se).
pairs() {
  local on off
  while [ $# -ge 2 ]; do
    on=$1 off=$2
    shift 2
    paste -d' ' <(cpu_of "$on") <(cpu_of "$off")
  done | awk '{ r = $1 / $2; s += r; ss += r * r; n++ }
    END { m = s / n; v = n > 1 ? (ss - n * m * m) / (n - 1) : 0; if (v < 0) v = 0
          printf "%.3f ± %.3f (mean of %d pairs ± its standard error)", m, sqrt(v / n), n }'
}
echo "audit on/off, old: $(ratio old-on old-off); pairs $(pairs old-on old-off)"
echo "audit on/off, new: $(ratio new-on new-off); pairs $(pairs new-on new-off)"
if [ "$(realpath "$AUDIT_OLD_BIN")" = "$(realpath "$AUDIT_NEW_BIN")" ]; then
  # One binary in both slots: the two slots' figures measure the same
  # thing (their difference is the run's noise), and their pairs pool.
  echo "audit on/off, one binary, both slots' pairs: $(pairs old-on old-off new-on new-off)"
fi
echo "new/old, audit on: $(ratio new-on old-on)"
echo "new/old, audit off: $(ratio new-off old-off)"
