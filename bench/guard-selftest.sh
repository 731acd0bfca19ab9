#!/usr/bin/env bash
# The test of bench/guard.sh: it must fail on a deliberately slowed build.
#
# Copies HEAD (git archive) to a temporary directory, adds a busy loop of
# SPIN (default 120µs, about half of a plain call's gateway CPU on a 2-core
# machine) at the top of the one pipeline every tools/call goes through,
# whichever front read it (pipeline.call in gateway/pipeline.go; a front's
# own handler is not enough: a client of another protocol revision takes
# another front), and runs the guard twice:
#   1. that copy as "new" against HEAD as the base and HEAD~1 as the
#      release (GUARD_RELEASE overrides it): the guard must fail;
#   2. a creep: the slowed binary as both the base and "new" (each commit
#      within 10% of the one before) and HEAD as the release: the guard must
#      fail against the release, and only against it.
# Exits 0 when the guard failed both as it should, 1 otherwise (or when the
# patch no longer applies: the function moved; update the sed below). The
# product never carries the knob: the slowdown exists only in the temporary
# copy. Takes what the guard takes twice (about 5 minutes: second sets run).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
SPIN=${SPIN:-120µs}
tmp=$(mktemp -d /tmp/gatehouse-guard-selftest.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
git archive HEAD | tar -x -C "$tmp"
f=$tmp/gateway/pipeline.go
sig='func (p \*pipeline) call(ctx context.Context, req \*callRequest) (out callOutcome) {'
grep -q "^$sig\$" "$f" || { echo "guard-selftest: pipeline.call not found in gateway/pipeline.go: update the patch" >&2; exit 1; }
sed -i "s/^$sig\$/&\n\tguardSelftestSpin()/" "$f"
cat >"$tmp/gateway/zz_guard_selftest.go" <<EOF
package gateway

import "time"

// guardSelftestSpin burns CPU on every call: bench/guard-selftest.sh's
// deliberately slowed build, never committed.
func guardSelftestSpin() {
	d, _ := time.ParseDuration("$SPIN")
	for t := time.Now(); time.Since(t) < d; {
	}
}
EOF
(cd "$tmp" && go build -o /dev/null ./cmd/gatehouse) || { echo "guard-selftest: the slowed copy does not build" >&2; exit 1; }
# Case 1, what .ci/run does: the slowed copy against HEAD (as the base) and
# the release, which must fail.
echo "guard-selftest: case 1: HEAD + a ${SPIN} busy loop per request, against HEAD and the release"
rc=0
GUARD_BASE=HEAD GUARD_RELEASE=${GUARD_RELEASE:-HEAD~1} GUARD_NEW_SRC=$tmp bash bench/guard.sh | tee "$tmp/case1.out" || rc=$?
if [ "$rc" != 1 ]; then
  echo "guard-selftest: FAIL, the guard passed a build slowed by ${SPIN} a request (exit $rc)"
  exit 1
fi
# Case 2, a creep: the commit before is as slow as the new one (the slowed
# binary is both), so only the release can catch it.
echo "guard-selftest: case 2: the same slowed build as the base and as new, against HEAD as the release"
(cd "$tmp" && go build -o "$tmp/gatehouse-slowed" ./cmd/gatehouse)
rc=0
GUARD_BASE=HEAD GUARD_OLD_BIN=$tmp/gatehouse-slowed GUARD_NEW_BIN=$tmp/gatehouse-slowed GUARD_RELEASE=HEAD~0 \
  bash bench/guard.sh | tee "$tmp/case2.out" || rc=$?
if [ "$rc" != 1 ] || ! grep -q '^FAIL: .*(rel)' "$tmp/case2.out" || grep -q '^FAIL: .*(old)' "$tmp/case2.out"; then
  echo "guard-selftest: FAIL, the guard did not fail the creep against the release alone (exit $rc)"
  exit 1
fi
echo "guard-selftest: ok, the guard failed the slowed build, and the creep against the release alone"
exit 0
