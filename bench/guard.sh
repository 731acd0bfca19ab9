#!/usr/bin/env bash
# The plain path's regression guard (issue 36), run by .ci/run.
#
# Builds gatehouse at the base commit, at the release (below) and from this
# checkout, starts them in front of ONE bench/echoserver (each its own config,
# SQLite store and port, defaults otherwise: audit on), and measures them in
# ROUNDS short rounds that take each once (the order rotated each round). The
# figure is the gateway process's CPU per plain tools/call (user+system from
# /proc/PID/stat over the measured window, divided by the calls: mcpload
# -rss-pid), steadier on a busy machine than calls/s. It fails (exit 1) when
# the median of the new binary's rounds is more than LIMIT (default 10%)
# above the base's or the release's; when the first set of rounds is over
# against one, a second set measures new against that one again and both
# must be over, so that one noisy burst on the machine does not fail CI.
#
# The base (GUARD_BASE, any git revision) defaults to:
#   1. git merge-base HEAD origin/main, when origin/main exists and the
#      merge-base is not HEAD itself (a branch is compared with where it left
#      main);
#   2. else HEAD~1, the previous landed commit (CI on main compares each commit
#      with the one before it).
# A fresh clone with full history has both.
#
# The release: a creep below LIMIT a commit would pass a guard that only
# looks one commit back, and ten of them add up (the plain path grew that
# way while features landed). So, unless GUARD_BASE is set, a second base
# runs in the same rounds: the newest tag v* reachable from HEAD, else the
# commit bench/guard-release pins (GUARD_RELEASE=REV or none overrides
# both). The guard fails against either. The release is not measured when
# it is the base itself (and the base is built from it as it is). A cost
# accepted on purpose moves the pin, in the commit that accepts it, with
# its measurement in docs/BENCHMARKS.md.
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
#   GUARD_RELEASE  the release revision, or none (default above)
#   ROUNDS         rounds per set (default 5): each runs old, the release
#                  and new once
#   DURATION       measured window of one run (default 3s), after WARMUP (1s)
#   SESSIONS       mcpload sessions (default 4), PAYLOAD bytes (default 64)
#   LIMIT          the tolerated excess, in percent (default 10)
#   PORT_BASE      the gateways listen on 127.0.0.1:PORT_BASE, +1 and +2
#                  (default: 20000 + this shell's PID mod 20000)
#   BENCH_KEEP     keep the work directory (binaries, configs, logs, results)
#   GUARD_RESOLVE_ONLY  print the base and the release and exit
#   GUARD_LOAD_BOUND  seconds the rounds of both sets may take together
#                  (default 120): past it no new round starts
# Takes about 100 s with a warm build cache (three builds, 3 x 5 x 4 s of
# load), up to about 160 s when the second set runs.
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
GUARD_LOAD_BOUND=${GUARD_LOAD_BOUND:-120}
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

# The release: a second base that does not move with every commit, so that
# a creep of a few percent a commit adds up to a failure instead of passing
# each time. GUARD_RELEASE (a revision, or "none"); else, when GUARD_BASE is
# not set, the newest tag v* reachable from HEAD, else the revision
# bench/guard-release names. Skipped when it is the base itself.
release= release_how=
if [ -n "${GUARD_RELEASE:-}" ]; then
  if [ "$GUARD_RELEASE" != none ]; then
    release=$(git rev-parse --verify "$GUARD_RELEASE^{commit}") || { log "guard: no commit $GUARD_RELEASE (GUARD_RELEASE)"; exit 2; }
    release_how="GUARD_RELEASE=$GUARD_RELEASE"
  fi
elif [ -z "${GUARD_BASE:-}" ]; then
  if tag=$(git describe --tags --abbrev=0 --match 'v[0-9]*' HEAD 2>/dev/null); then
    release=$(git rev-parse --verify "$tag^{commit}") release_how="the newest release tag, $tag"
  elif [ -f bench/guard-release ]; then
    rel=$(sed -e 's/#.*//' -e 's/[[:space:]]//g' bench/guard-release | grep -m1 . || true)
    [[ $rel =~ ^[0-9a-f]{7,40}$ ]] ||
      { log "guard: bench/guard-release must name a commit (hex), one line besides # comments; it names '${rel}'"; exit 2; }
    release=$(git rev-parse --verify -q "$rel^{commit}") ||
      { log "guard: bench/guard-release names $rel, which this clone does not have (a shallow clone? fetch the history, or set GUARD_RELEASE)"; exit 2; }
    git merge-base --is-ancestor "$release" HEAD ||
      { log "guard: bench/guard-release names $rel, which is not an ancestor of HEAD: pin a commit of this history"; exit 2; }
    release_how="pinned in bench/guard-release"
  fi
fi
if [ -n "$release" ] && [ "$release" = "$base" ] && [ -z "${GUARD_OLD_BIN:-}${GUARD_OLD_ENV:-}" ]; then
  log "guard: the release ($release_how) is the base itself: measured once"
  release=
fi
short() { git log -1 --format='%h %cs %s' "$1" | cut -c1-100; }
if [ -n "${GUARD_RESOLVE_ONLY:-}" ]; then # the resolution alone (its test)
  echo "base=$base ($base_how)"
  echo "release=${release:-none}${release:+ ($release_how)}"
  exit 0
fi

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
if [ -n "$release" ]; then
  log "building gatehouse at $(short "$release")"
  mkdir "$work/src-rel"
  git archive "$release" | tar -x -C "$work/src-rel"
  (cd "$work/src-rel" && go build -o "$work/gatehouse-rel" ./cmd/gatehouse)
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
old_pid=$started_pid old_url="http://127.0.0.1:$PORT_BASE/mcp"
start_gateway "env GATEHOUSE_BIN=$(printf %q "$new_bin") GATEWAY_DIR=$work/gw-new ${GUARD_NEW_ENV:-} bench/gateway.sh" \
  "http://127.0.0.1:$((PORT_BASE + 1))/mcp" gateway-new
new_pid=$started_pid new_url="http://127.0.0.1:$((PORT_BASE + 1))/mcp"
bases=(old)
if [ -n "$release" ]; then
  start_gateway "env GATEHOUSE_BIN=$(printf %q "$work/gatehouse-rel") GATEWAY_DIR=$work/gw-rel bench/gateway.sh" \
    "http://127.0.0.1:$((PORT_BASE + 2))/mcp" gateway-rel
  rel_pid=$started_pid rel_url="http://127.0.0.1:$((PORT_BASE + 2))/mcp"
  bases+=(rel)
fi
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
calls_of() { grep "\"label\":\"$2\"" "$1" | sed -n 's/.*"calls_per_sec":\([0-9.]*\).*/\1/p' | median | cut -d. -f1; }
commit_of() { if [ "$1" = rel ]; then git rev-parse --short "$release"; else git rev-parse --short "$base"; fi; }
limit_ratio=$(awk -v l="$LIMIT" 'BEGIN { printf "%.2f", 1 + l / 100 }')

# one_set N BASE...: ROUNDS rounds of the BASEs (old, rel) and new, their
# order rotated every round, into $work/set-N.jsonl; prints each base's
# figures and sets over_BASE=1 for each base new is more than LIMIT above.
one_set() {
  local set=$1
  shift
  local measured=("$@" new)
  results="$work/set-$set.jsonl"
  : >"$results"
  local round i n=${#measured[@]}
  for round in $(seq "$ROUNDS"); do
    if [ "$round" -gt 1 ] && [ $(($(date +%s) - load_began)) -gt "$GUARD_LOAD_BOUND" ]; then
      echo "  (the rounds took over ${GUARD_LOAD_BOUND}s: stopped after $((round - 1)))"
      break
    fi
    for i in $(seq 0 $((n - 1))); do
      local which=${measured[$(((i + round - 1) % n))]}
      local url_var="${which}_url" pid_var="${which}_pid"
      LOAD_BOUND=60 load "$which" "${!url_var}" "${!pid_var}" -duration "$DURATION" -warmup "$WARMUP" -verify -json \
        -sessions "$SESSIONS" -payload "$PAYLOAD"
    done
  done
  if grep -q '"errors":[1-9]' "$results"; then
    log "guard: calls failed:"; grep '"errors":[1-9]' "$results" >&2
    exit 1
  fi
  local new_med new_runs
  new_runs=$(cpu_of "$results" new | paste -sd' ')
  new_med=$(cpu_of "$results" new | median)
  echo "set $set: gateway CPU µs per plain call, round by round"
  echo "  new: $new_runs   (median $new_med; calls/s median $(calls_of "$results" new))"
  local b
  for b in "$@"; do
    local b_runs b_med ratio pairs
    b_runs=$(cpu_of "$results" "$b" | paste -sd' ')
    b_med=$(cpu_of "$results" "$b" | median)
    ratio=$(awk -v n="$new_med" -v o="$b_med" 'BEGIN { printf "%.3f", n / o }')
    pairs=$(paste -d' ' <(cpu_of "$results" "$b") <(cpu_of "$results" new) | awk '{ printf "%.3f\n", $2 / $1 }' | median 3)
    echo "  $b: $b_runs   (median $b_med; calls/s median $(calls_of "$results" "$b"))"
    echo "  new/$b ($(commit_of "$b")): $ratio; round by round, median $pairs (limit $limit_ratio)"
    printf -v "over_$b" '%s' "$(awk -v r="$ratio" -v l="$LIMIT" 'BEGIN { print (r > 1 + l / 100) ? 1 : 0 }')"
  done
}

echo "## bench/guard.sh: gateway CPU per plain tools/call, old vs new"
machine_line
echo "old: $(short "$base") ($base_how)${GUARD_OLD_BIN:+ [binary $GUARD_OLD_BIN]}${GUARD_OLD_ENV:+ [$GUARD_OLD_ENV]}"
if [ -n "$release" ]; then
  echo "rel: $(short "$release") ($release_how)"
fi
echo "new: $new_what${GUARD_NEW_ENV:+ [$GUARD_NEW_ENV]}"
echo "$ROUNDS rounds x (${bases[*]} new, the order rotated) of $DURATION after $WARMUP warmup, $SESSIONS sessions, $PAYLOAD B, audit on, SQLite"
one_set 1 "${bases[@]}"
again=()
for b in "${bases[@]}"; do
  over_var="over_$b"
  [ "${!over_var}" = 1 ] && again+=("$b")
done
failed=()
if [ ${#again[@]} -gt 0 ]; then
  echo "over the limit against ${again[*]}: measuring a second set to rule out noise"
  one_set 2 "${again[@]}"
  for b in "${again[@]}"; do
    over_var="over_$b"
    [ "${!over_var}" = 1 ] && failed+=("$b")
  done
fi
echo "took $(($(date +%s) - began)) s"
if [ ${#failed[@]} -gt 0 ]; then
  for b in "${failed[@]}"; do
    echo "FAIL: the gateway's CPU per plain call is more than $LIMIT% above $(commit_of "$b")'s ($b) in both sets"
  done
  if [[ " ${failed[*]} " == *" rel "* ]]; then
    echo "(a cost accepted on purpose moves the release: pin the new commit in bench/guard-release, with the measurement in docs/BENCHMARKS.md)"
  fi
  exit 1
fi
oks="$(git rev-parse --short "$base")"
[ -n "$release" ] && oks="$oks and of $(git rev-parse --short "$release") (the release)"
echo "ok: within $LIMIT% of $oks"
