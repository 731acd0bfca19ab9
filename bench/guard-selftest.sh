#!/usr/bin/env bash
# The test of bench/guard.sh: it must fail on a deliberately slowed build.
#
# Copies HEAD (git archive) to a temporary directory, adds a busy loop of
# SPIN (default 120µs, about a quarter of a plain call's gateway CPU on a
# 2-core machine) at the top of the byte path's handler of every request
# (byteFront.serve in gateway/front_http.go), and runs the guard with
# GUARD_BASE=HEAD against that copy as "new". Exits 0 when the guard failed
# as it should, 1 when it passed the slowed build (or the patch no longer
# applies: the function moved; update the sed below). The product never
# carries the knob: the slowdown exists only in the temporary copy.
# Takes what the guard takes (about 2 minutes: both sets run).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
SPIN=${SPIN:-120µs}
tmp=$(mktemp -d /tmp/gatehouse-guard-selftest.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
git archive HEAD | tar -x -C "$tmp"
f=$tmp/gateway/front_http.go
sig='func (p \*byteFront) serve(w http.ResponseWriter, r \*http.Request, body \[\]byte) bool {'
grep -q "^$sig\$" "$f" || { echo "guard-selftest: byteFront.serve not found in gateway/front_http.go: update the patch" >&2; exit 1; }
sed -i "s/^$sig\$/&\n\tguardSelftestSpin()/" "$f"
cat >"$tmp/gateway/zz_guard_selftest.go" <<EOF
package gateway

import "time"

// guardSelftestSpin burns CPU on every request: bench/guard-selftest.sh's
// deliberately slowed build, never committed.
func guardSelftestSpin() {
	d, _ := time.ParseDuration("$SPIN")
	for t := time.Now(); time.Since(t) < d; {
	}
}
EOF
(cd "$tmp" && go build -o /dev/null ./cmd/gatehouse) || { echo "guard-selftest: the slowed copy does not build" >&2; exit 1; }
echo "guard-selftest: HEAD against HEAD + a ${SPIN} busy loop per request"
rc=0
GUARD_BASE=HEAD GUARD_NEW_SRC=$tmp bash bench/guard.sh || rc=$?
if [ "$rc" = 1 ]; then
  echo "guard-selftest: ok, the guard failed the slowed build"
  exit 0
fi
echo "guard-selftest: FAIL, the guard passed a build slowed by ${SPIN} a request (exit $rc)"
exit 1
