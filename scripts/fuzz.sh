#!/usr/bin/env bash
# Runs every fuzz target of the module for a short time (FUZZTIME, default
# 5s each), not only its seed corpus: CI's check that no parser has started
# disagreeing with its oracle. A failing input is written under the
# package's testdata/fuzz/ by go test; commit it with the fix.
#
#   scripts/fuzz.sh                 # every target, 5 s each
#   FUZZTIME=1m scripts/fuzz.sh ./gateway/internal/wire
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-5s}
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)
start=$(date +%s)
n=0
while read -r pkg; do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    printf '%-60s %s\n' "$pkg" "$target"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" >/tmp/gatehouse-fuzz.log 2>&1 || {
      cat /tmp/gatehouse-fuzz.log
      echo "fuzz.sh: $target in $pkg failed (the input is under its testdata/fuzz/)" >&2
      exit 1
    }
    n=$((n + 1))
  done
done < <(go list "${pkgs[@]}")
echo "fuzz.sh: $n targets, $FUZZTIME each, in $(( $(date +%s) - start ))s"
