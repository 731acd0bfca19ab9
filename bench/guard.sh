#!/usr/bin/env bash
# The plain path's regression guard (issue 36), run by .ci/run.
#
# Builds gatehouse twice, the base commit's and this checkout's, starts both in
# front of ONE bench/echoserver (each its own config, SQLite store and port,
# defaults otherwise: audit on), and measures them in ROUNDS short rounds that
# alternate old and new (the order flipped each round). The figure is the
# gateway process's CPU per plain tools/call (user+system from /proc/PID/stat
# over the measured window, divided by the calls: mcpload -rss-pid), steadier
# on a busy machine than calls/s. It fails (exit 1) when the median of the new
# binary's rounds is more than LIMIT (default 10%) above the old one's; when
# the first set of rounds fails, a second set is run and both must fail, so
# that one noisy burst on the machine does not fail CI.
#
# The base (GUARD_BASE, any git revision) defaults to:
#   1. git merge-base HEAD origin/main, when origin/main exists and the
#      merge-base is not HEAD itself (a branch is compared with where it left
#      main);
#   2. else HEAD~1, the previous landed commit (CI on main compares each commit
#      with the one before it).
# A fresh clone with full history has both. A slow creep below LIMIT a commit
# passes this guard; GUARD_BASE=<an older commit or a release tag> measures a
# longer span (e.g. GUARD_BASE=002e1b2, the binary of 2026-12-01).
#
# "New" is this checkout's working tree as it is (uncommitted changes
# included; the output says so), or GUARD_NEW_SRC, another source tree (the
# guard's own test, bench/guard-selftest.sh, builds a deliberately slowed
# copy that way). GUARD_OLD_BIN / GUARD_NEW_BIN skip a build.
# GUARD_OLD_ENV / GUARD_NEW_ENV add bench/gateway.sh settings to one side
# (e.g. GUARD_NEW_BIN=$GUARD_OLD_BIN GUARD_OLD_ENV=GATEWAY_NOAUDIT=1: what the
# audit trail costs), words without blanks.
#
# Environment (all optional):
#   GUARD_BASE     the base revision (default above)
#   ROUNDS         rounds per set (default 5): each runs old and new once
#   DURATION       measured window of one run (default 3s), after WARMUP (1s)
#   SESSIONS       mcpload sessions (default 4), PAYLOAD bytes (default 64)
#   LIMIT          the tolerated excess, in percent (default 10)
#   PORT_BASE      the gateways listen on 127.0.0.1:PORT_BASE and +1
#                  (default: 20000 + this shell's PID mod 20000)
#   BENCH_KEEP     keep the work directory (binaries, configs, logs, results)
#   GUARD_LOAD_BOUND  seconds the rounds of both sets may take together
#                  (default 110): past it no new round starts
# Takes about 70 s with a warm build cache (two builds, 2 x 5 x 4 s of load),
# about 115 s when the second set runs.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-3s}
WARMUP=${WARMUP:-1s}
SESSIONS=${SESSIONS:-4}
PAYLOAD=${PAYLOAD:-64}
LIMIT=${LIMIT:-10}
PORT_BASE=${PORT_BASE:-$((20000 + $$ % 20000))}
GUARD_LOAD_BOUND=${GUARD_LOAD_BOUND:-110}
[[ $ROUNDS =~ ^[1-9][0-9]?$ ]] || { echo "ROUNDS must be 1 to 99" >&2; exit 2; }
[[ $LIMIT =~ ^[0-9]{1,3}$ ]] || { echo "LIMIT must be a whole percentage" >&2; exit 2; }
[[ $PORT_BASE =~ ^[1-9][0-9]{3,4}$ ]] && [ "$PORT_BASE" -le 65500 ] || { echo "PORT_BASE must be 1000 to 65500" >&2; exit 2; }
began=$(date +%s)

. bench/lib.sh

# The base revision.
if [ -n "${GUARD_BASE:-}" ]; then
  base_how="GUARD_BASE=$GUARD_BASE"
  base=$(git rev-parse --verify "$GUARD_BASE^{commit}") || { log "guard: no commit $GUARD_BASE"; exit 2; }
else
  base=
  if git rev-parse --verify -q origin/main >/dev/null; then
    mb=$(git merge-base HEAD origin/main || true)
    if [ -n "$mb" ] && [ "$mb" != "$(git rev-parse HEAD)" ]; then
      base=$mb base_how="merge-base of HEAD and origin/main"
    fi
  fi
  if [ -z "$base" ]; then
    base=$(git rev-parse --verify -q HEAD~1) ||
      { log "guard: no HEAD~1 (a shallow clone?): fetch the history or set GUARD_BASE"; exit 2; }
    base_how="HEAD~1, the previous commit"
  fi
fi
short() { git log -1 --format='%h %cs %s' "$1" | cut -c1-100; }

log "building mcpload, echoserver"
go build -o "$work/mcpload" ./bench/mcpload
go build -o "$work/echoserver" ./bench/echoserver

if [ -n "${GUARD_OLD_BIN:-}" ]; then
  old_bin=$GUARD_OLD_BIN
else
  log "building gatehouse at $(short "$base")"
  mkdir "$work/src-old"
  git archive "$base" | tar -x -C "$work/src-old"
  (cd "$work/src-old" && go build -o "$work/gatehouse-old" ./cmd/gatehouse)
  old_bin=$work/gatehouse-old
fi
if [ -n "${GUARD_NEW_BIN:-}" ]; then
  new_bin=$GUARD_NEW_BIN new_what="GUARD_NEW_BIN=$GUARD_NEW_BIN"
else
  src=${GUARD_NEW_SRC:-.}
  if [ -n "${GUARD_NEW_SRC:-}" ]; then
    new_what="the tree GUARD_NEW_SRC=$GUARD_NEW_SRC"
  else
    new_what="this checkout: $(short HEAD)"
    if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
      new_what="$new_what (+ uncommitted changes)"
    fi
  fi
  log "building gatehouse from ${src}"
  (cd "$src" && go build -o "$work/gatehouse-new" ./cmd/gatehouse)
  new_bin=$work/gatehouse-new
fi

start_echo -addr 127.0.0.1:0
start_gateway "env GATEHOUSE_BIN=$(printf %q "$old_bin") GATEWAY_DIR=$work/gw-old ${GUARD_OLD_ENV:-} bench/gateway.sh" \
  "http://127.0.0.1:$PORT_BASE/mcp" gateway-old
old_pid=$started_pid
start_gateway "env GATEHOUSE_BIN=$(printf %q "$new_bin") GATEWAY_DIR=$work/gw-new ${GUARD_NEW_ENV:-} bench/gateway.sh" \
  "http://127.0.0.1:$((PORT_BASE + 1))/mcp" gateway-new
new_pid=$started_pid
load_began=$(date +%s)

# cpu_of FILE LABEL: the target CPU µs per call of each of LABEL's runs in FILE.
cpu_of() {
  grep "\"label\":\"$2\"" "$1" |
    sed -n 's/.*"target_cpu_ms_per_call":\([0-9.eE+-]*\).*/\1/p' |
    awk '{ printf "%.1f\n", $1 * 1000 }'
}
# median [DIGITS]: of the numbers on stdin, DIGITS (default 1) decimals.
median() {
  sort -g | awk -v d="${1:-1}" '{ v[NR] = $1 } END { if (NR == 0) exit 1; m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.*f\n", d, m }'
}

# one_set N: ROUNDS rounds into $work/set-N.jsonl; sets old_med, new_med, ratio.
one_set() {
  results="$work/set-$1.jsonl"
  : >"$results"
  local round
  for round in $(seq "$ROUNDS"); do
    if [ "$round" -gt 1 ] && [ $(($(date +%s) - load_began)) -gt "$GUARD_LOAD_BOUND" ]; then
      echo "  (the rounds took over ${GUARD_LOAD_BOUND}s: stopped after $((round - 1)))"
      break
    fi
    local order="old new"
    [ $((round % 2)) = 0 ] && order="new old"
    local which
    for which in $order; do
      local url="http://127.0.0.1:$PORT_BASE/mcp" pid=$old_pid
      [ "$which" = new ] && url="http://127.0.0.1:$((PORT_BASE + 1))/mcp" pid=$new_pid
      LOAD_BOUND=60 load "$which" "$url" "$pid" -duration "$DURATION" -warmup "$WARMUP" -verify -json \
        -sessions "$SESSIONS" -payload "$PAYLOAD"
    done
  done
  if grep -q '"errors":[1-9]' "$results"; then
    log "guard: calls failed:"; grep '"errors":[1-9]' "$results" >&2
    exit 1
  fi
  old_runs=$(cpu_of "$results" old | paste -sd' ')
  new_runs=$(cpu_of "$results" new | paste -sd' ')
  old_med=$(cpu_of "$results" old | median)
  new_med=$(cpu_of "$results" new | median)
  ratio=$(awk -v n="$new_med" -v o="$old_med" 'BEGIN { printf "%.3f", n / o }')
  local calls_old calls_new
  calls_old=$(grep '"label":"old"' "$results" | sed -n 's/.*"calls_per_sec":\([0-9.]*\).*/\1/p' | median | cut -d. -f1)
  calls_new=$(grep '"label":"new"' "$results" | sed -n 's/.*"calls_per_sec":\([0-9.]*\).*/\1/p' | median | cut -d. -f1)
  echo "set $1: gateway CPU µs per plain call, round by round"
  echo "  old: $old_runs   (median $old_med; calls/s median $calls_old)"
  echo "  new: $new_runs   (median $new_med; calls/s median $calls_new)"
  local pairs
  pairs=$(paste -d' ' <(cpu_of "$results" old) <(cpu_of "$results" new) | awk '{ printf "%.3f\n", $2 / $1 }' | median 3)
  echo "  new/old: $ratio; round by round, median $pairs (limit $(awk -v l="$LIMIT" 'BEGIN { printf "%.2f", 1 + l / 100 }'))"
}
over() { awk -v r="$ratio" -v l="$LIMIT" 'BEGIN { exit !(r > 1 + l / 100) }'; }

echo "## bench/guard.sh: gateway CPU per plain tools/call, old vs new"
machine_line
echo "old: $(short "$base") ($base_how)${GUARD_OLD_BIN:+ [binary $GUARD_OLD_BIN]}${GUARD_OLD_ENV:+ [$GUARD_OLD_ENV]}"
echo "new: $new_what${GUARD_NEW_ENV:+ [$GUARD_NEW_ENV]}"
echo "$ROUNDS rounds x (old, new) of $DURATION after $WARMUP warmup, $SESSIONS sessions, $PAYLOAD B, audit on, SQLite"
one_set 1
verdict=pass
if over; then
  echo "over the limit: measuring a second set to rule out noise"
  one_set 2
  over && verdict=fail
fi
echo "took $(($(date +%s) - began)) s"
if [ "$verdict" = fail ]; then
  echo "FAIL: the gateway's CPU per plain call is more than $LIMIT% above $(git rev-parse --short "$base")'s in both sets"
  exit 1
fi
echo "ok: within $LIMIT% of $(git rev-parse --short "$base")"
