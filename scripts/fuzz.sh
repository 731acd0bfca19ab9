#!/usr/bin/env bash
# Runs every fuzz target of the module and of its nested modules (adapters/*,
# deploy/helmcheck, ...) for a short time (FUZZTIME, default 5s each), not
# only its seed corpus: CI's check that no parser has started disagreeing
# with its oracle. A failing input is written under the package's
# testdata/fuzz/ by go test; commit it with the fix.
#
#   scripts/fuzz.sh                 # every target of every module, 5 s each
#   FUZZTIME=1m scripts/fuzz.sh ./gateway/internal/wire   # the root module's packages named
#
# Go 1.26's fuzz coordinator can report a bare "context deadline exceeded"
# when -fuzztime ends while a worker is mid-call (golang/go#75804, fixed in
# Go 1.27): no input is written and nothing of ours failed. Such a run is
# retried once; a second one in a row is reported as a toolchain flake, not a
# failure. Any run that writes an input, or fails any other way, fails.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-5s}
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s)
n=0
flaked=0

# inputs lists the corpus files of a target (empty when it has none).
inputs() { ls "$1" 2>/dev/null || true; }

# deadline_only says whether a failed run is the coordinator's race: its only
# failure line is "context deadline exceeded" and it wrote no input.
deadline_only() {
  grep -q '^    context deadline exceeded$' "$log" &&
    ! grep -q 'Failing input written to' "$log" &&
    [ "$(inputs "$2")" = "$1" ]
}

# fuzz_module runs the targets of the packages named (in the module of the
# working directory).
fuzz_module() {
  while read -r pkg dir; do
    for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
      printf '%-60s %s\n' "$pkg" "$target"
      corpus="$dir/testdata/fuzz/$target"
      for attempt in 1 2; do
        before=$(inputs "$corpus")
        if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" >"$log" 2>&1; then
          break
        fi
        if deadline_only "$before" "$corpus"; then
          if [ "$attempt" = 1 ]; then
            echo "fuzz.sh: $target: \"context deadline exceeded\" at the end of -fuzztime, no input written (golang/go#75804); once more" >&2
            continue
          fi
          echo "fuzz.sh: $target: the same toolchain race twice in a row; counted as a flake, not a failure" >&2
          flaked=$((flaked + 1))
          break
        fi
        cat "$log"
        echo "fuzz.sh: $target in $pkg failed (the input is under its testdata/fuzz/)" >&2
        exit 1
      done
      n=$((n + 1))
    done
  done < <(go list -f '{{.ImportPath}} {{.Dir}}' "$@")
}

if [ "$#" -gt 0 ]; then
  fuzz_module "${pkgs[@]}"
else
  fuzz_module ./...
  # The nested modules, each from its own directory (they have their own
  # go.mod and dependencies), but those in FUZZ_SKIP_MODULES: by default
  # deploy/helmcheck, whose fuzz build instruments the Kubernetes API types
  # and takes minutes (its targets' seed corpora run in its own CI step).
  skip=" ${FUZZ_SKIP_MODULES-deploy/helmcheck} "
  while read -r mod; do
    if [[ $skip == *" $mod "* ]]; then
      echo "fuzz.sh: module $mod skipped (FUZZ_SKIP_MODULES)"
      continue
    fi
    echo "fuzz.sh: module $mod"
    pushd "$mod" >/dev/null
    fuzz_module ./...
    popd >/dev/null
  done < <(git ls-files '*/go.mod' | grep -v /testdata/ | xargs -r -n1 dirname | sort)
fi
summary="fuzz.sh: $n targets, $FUZZTIME each, in $(( $(date +%s) - start ))s"
[ "$flaked" = 0 ] || summary="$summary; $flaked lost to the toolchain race"
echo "$summary"
