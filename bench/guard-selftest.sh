#!/usr/bin/env bash
# The test of bench/guard.sh: it must fail on a deliberately slowed build.
#
# Copies HEAD (git archive) to a temporary directory, adds a busy loop of
# SPIN_STEPS dependent multiply-adds (default 100,000: about 125 µs of CPU
# here, half of a plain call's gateway CPU on a 2-core machine) at the top of the one pipeline every tools/call goes through,
# whichever front read it (pipeline.call in gateway/pipeline.go; a front's
# own handler is not enough: a client of another protocol revision takes
# another front), and runs the guard twice:
#   1. that copy as "new" against HEAD as the base and HEAD~1 as the
#      release (GUARD_RELEASE overrides it): the guard must fail;
#   2. a creep: the slowed binary as both the base and "new" (each commit
#      within 10% of the one before) and HEAD as the release: the guard must
#      fail against the release (against the base it measures one binary
#      twice).
# GUARD_SELFTEST_CASES picks the cases (default "1 2"; .ci/run runs case 2
# with ROUNDS=3, which the guard reads too). Exits 0 when the guard failed
# as it should, 1 otherwise (or when the patch no longer applies: the
# function moved; update the sed below). The product never carries the
# knob: the slowdown exists only in the temporary copy. Takes what the
# guard takes twice (about 5 minutes: second sets run); case 2 alone at 3
# rounds about 2 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
SPIN_STEPS=${SPIN_STEPS:-100000}
[[ $SPIN_STEPS =~ ^[1-9][0-9]{0,8}$ ]] || { echo "SPIN_STEPS must be a whole number of steps" >&2; exit 2; }
CASES=${GUARD_SELFTEST_CASES:-1 2}
tmp=$(mktemp -d /tmp/gatehouse-guard-selftest.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
git archive HEAD | tar -x -C "$tmp"
f=$tmp/gateway/pipeline.go
sig='func (p \*pipeline) call(ctx context.Context, req \*callRequest) (out callOutcome) {'
grep -q "^$sig\$" "$f" || { echo "guard-selftest: pipeline.call not found in gateway/pipeline.go: update the patch" >&2; exit 1; }
sed -i "s/^$sig\$/&\n\tguardSelftestSpin()/" "$f"
cat >"$tmp/gateway/zz_guard_selftest.go" <<EOF
package gateway

import "sync/atomic"

var guardSelftestSink atomic.Uint64

// guardSelftestSpin burns CPU on every call: bench/guard-selftest.sh's
// deliberately slowed build, never committed. A fixed number of dependent
// multiply-adds, so that the CPU it adds does not depend on how often the
// goroutine is descheduled (a spin on the clock adds less CPU on a busy
// machine).
func guardSelftestSpin() {
	x := guardSelftestSink.Load()
	for i := 0; i < $SPIN_STEPS; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	guardSelftestSink.Store(x)
}
EOF
(cd "$tmp" && go build -o "$tmp/gatehouse-slowed" ./cmd/gatehouse) || { echo "guard-selftest: the slowed copy does not build" >&2; exit 1; }
slowed=$tmp/gatehouse-slowed
for c in $CASES; do
  case $c in
  1)
    # The slowed build against HEAD (as the base) and HEAD~1 (as the
    # release): the guard must fail.
    echo "guard-selftest: case 1: HEAD + a ${SPIN_STEPS}-step busy loop per call, against HEAD and the release"
    rc=0
    GUARD_BASE=HEAD GUARD_RELEASE=${GUARD_RELEASE:-HEAD~1} GUARD_NEW_BIN=$slowed bash bench/guard.sh | tee "$tmp/case1.out" || rc=$?
    if [ "$rc" != 1 ]; then
      echo "guard-selftest: FAIL, the guard passed a build slowed by ${SPIN_STEPS} steps a call (exit $rc)"
      exit 1
    fi
    ;;
  2)
    # A creep: the commit before is as slow as the new one (the slowed
    # binary is both), so only the release can catch it. The base against
    # new is the same binary twice: over the limit there is noise, said
    # but not failed on (a loaded machine makes it, rarely).
    echo "guard-selftest: case 2: the same slowed build as the base and as new, against HEAD as the release"
    rc=0
    GUARD_BASE=HEAD GUARD_OLD_BIN=$slowed GUARD_NEW_BIN=$slowed GUARD_RELEASE=HEAD~0 \
      bash bench/guard.sh | tee "$tmp/case2.out" || rc=$?
    if [ "$rc" != 1 ] || ! grep -q '^FAIL: .*(rel)' "$tmp/case2.out"; then
      echo "guard-selftest: FAIL, the guard did not fail the creep against the release (exit $rc)"
      exit 1
    fi
    if grep -q '^FAIL: .*(old)' "$tmp/case2.out"; then
      echo "guard-selftest: note: the same binary measured over the limit against itself (noise)"
    fi
    ;;
  *)
    echo "guard-selftest: GUARD_SELFTEST_CASES takes 1 and 2 (got $c)" >&2
    exit 2
    ;;
  esac
done
echo "guard-selftest: ok, the guard failed what it should (cases $CASES)"
exit 0
