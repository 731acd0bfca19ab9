#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# `server --suite all`) against examples/conformance-server (our package
# server with every protection on), against `gatehouse serve` fronting the
# go-sdk's conformance everything-server (an inline `servers:` entry with
# `prefix: ""`, over stdio; a plugin with skills loaded beside it), and, as
# the baseline in the same run,
# straight against that everything-server. Fails unless ours and the gateway
# each pass every check the baseline passes.
#
# Then the client suite (`client --suite all`): examples/conformance-client
# (the scenarios through toolset and its OAuth client, identity/upstream)
# and, as the baseline in the same run, the go-sdk's conformance
# everything-client. Fails unless every scenario the baseline passes passes
# through Gatehouse (the auth/* scenarios included); both pass counts are
# printed.
#
# Needs Go, npm/npx and network access to the npm registry (Node >= 22 is
# installed from npm into a temporary prefix when the system's is older).
#
# Environment:
#   CONFORMANCE_VERSION  npm version of the suite (default 0.1.16)
#   GO_SDK_VERSION       go-sdk version of the baseline server (default v1.8.0)
#   CONFORMANCE_KEEP     keep the work directory (logs, results) when set
#   CONFORMANCE_TIMEOUT  seconds allowed for each suite run (default 600)
#   CONFORMANCE_PART     all (default), server or client: which suites run
set -euo pipefail
cd "$(dirname "$0")/.."

CONFORMANCE_VERSION=${CONFORMANCE_VERSION:-0.1.16}
GO_SDK_VERSION=${GO_SDK_VERSION:-v1.8.0}
SUITE_TIMEOUT=${CONFORMANCE_TIMEOUT:-600}
PART=${CONFORMANCE_PART:-all}
case "$PART" in all|server|client) ;; *) echo "conformance: CONFORMANCE_PART is all, server or client, not $PART" >&2; exit 2;; esac
export PATH="/usr/local/go/bin:$PATH"

work=$(mktemp -d /tmp/gatehouse-conformance.XXXXXX)
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  if [ -n "${CONFORMANCE_KEEP:-}" ]; then
    echo "conformance: work directory kept: $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { printf 'conformance: %s\n' "$*" >&2; }

# --- Node >= 22 --------------------------------------------------------------
node_major() { node --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/'; }
if [ "$(node_major || echo 0)" -lt 22 ] 2>/dev/null || ! command -v node >/dev/null; then
  log "node $(node --version 2>/dev/null || echo missing) is older than 22: installing node@22 from npm into $work/node"
  timeout 600 npm install --silent --no-audit --no-fund --prefix "$work/node" node@22 >&2
  export PATH="$work/node/node_modules/.bin:$PATH"
fi
log "node $(node --version)"
export npm_config_cache="${npm_config_cache:-$work/npm-cache}"
npm_config_update_notifier=false
export npm_config_update_notifier

# --- servers -----------------------------------------------------------------
mkdir -p "$work/bin"

# free_port prints a TCP port nothing listens on at 127.0.0.1, below the
# kernel's ephemeral range (32768 and up by default), so that no client
# socket of this machine holds it either.
free_port() {
  local p i
  for i in $(seq 1 100); do
    p=$(( 20000 + RANDOM % 12000 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"; return 0
    fi
  done
  return 1
}

# serve NAME COMMAND...: starts COMMAND (where @PORT@ stands for the port)
# on a free port, output in $work/NAME.log, and waits until it accepts
# connections; a command that dies (the port was taken meanwhile) is tried
# again on another port. Sets $port; the process is stopped at exit.
serve() {
  local name=$1 attempt pid i arg
  shift
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    local argv=()
    for arg in "$@"; do argv+=("${arg//@PORT@/$port}"); done
    "${argv[@]}" >"$work/$name.log" 2>&1 &
    pid=$!
    for i in $(seq 1 200); do
      if ! kill -0 "$pid" 2>/dev/null; then break; fi
      if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        pids+=("$pid"); return 0
      fi
      sleep 0.05
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    log "$name did not start on port $port (attempt $attempt)"
  done
  cat "$work/$name.log" >&2
  exit 1
}

# run_suite NAME URL: runs the suite, keeps its output in $work/NAME.out.
run_suite() {
  local name=$1 url=$2
  log "running the suite against $name ($url)"
  set +e
  timeout "$SUITE_TIMEOUT" npx -y "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" \
    server --suite all --url "$url" -o "$work/$name-results" >"$work/$name.out" 2>&1
  local rc=$?
  set -e
  if [ "$rc" = 124 ]; then log "$name: the suite timed out after ${SUITE_TIMEOUT}s"; fi
  if ! grep -q '^Total: ' "$work/$name.out"; then
    log "$name: the suite printed no summary (exit $rc); its output:"
    cat "$work/$name.out" >&2
    exit 1
  fi
}

# scenarios FILE: prints "scenario passed failed" for each summary line.
scenarios() {
  sed -E 's/\x1b\[[0-9;]*m//g' "$1" |
    sed -nE 's/^[^A-Za-z0-9]*([A-Za-z0-9_./-]+): ([0-9]+) passed, ([0-9]+) failed.*$/\1 \2 \3/p' |
    grep -v '^Total ' || true
}

totals() {
  sed -E 's/\x1b\[[0-9;]*m//g' "$1" | sed -nE 's/^Total: ([0-9]+) passed, ([0-9]+) failed.*$/\1 \2/p' | tail -1
}

# run_client_suite NAME COMMAND: runs the client suite with COMMAND as the
# client, keeps its output in $work/NAME.out.
run_client_suite() {
  local name=$1 cmd=$2
  log "running the client suite with $name ($cmd)"
  set +e
  timeout "$SUITE_TIMEOUT" npx -y "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" \
    client --command "$cmd" --suite all -o "$work/$name-results" >"$work/$name.out" 2>&1
  local rc=$?
  set -e
  if [ "$rc" = 124 ]; then log "$name: the suite timed out after ${SUITE_TIMEOUT}s"; fi
  if ! grep -q '^Total: ' "$work/$name.out"; then
    log "$name: the suite printed no summary (exit $rc); its output:"
    cat "$work/$name.out" >&2
    exit 1
  fi
}

# compare NAME [BASE]: every check the baseline (BASE, default baseline)
# passes must pass against NAME: per scenario, at least as many passed and
# no more failed. Prints the number of regressions.
compare() {
  local name=$1 base=${2:-baseline} regressions=0 scen bp bf line op of base_pass base_fail
  while read -r scen bp bf; do
    line=$(scenarios "$work/$name.out" | awk -v s="$scen" '$1 == s' | head -1)
    if [ -z "$line" ]; then
      log "REGRESSION ($name): scenario $scen did not run"
      regressions=$((regressions + 1)); continue
    fi
    read -r _ op of <<<"$line"
    if [ "$op" -lt "$bp" ] || [ "$of" -gt "$bf" ]; then
      log "REGRESSION ($name): $scen: $op passed, $of failed; baseline $bp passed, $bf failed"
      regressions=$((regressions + 1))
    fi
  done < <(scenarios "$work/$base.out")
  read -r base_pass base_fail < <(totals "$work/$base.out")
  local pass fail
  read -r pass fail < <(totals "$work/$name.out")
  if [ "$pass" -lt "$base_pass" ] && [ "$regressions" -eq 0 ]; then regressions=1; fi
  if [ "$regressions" -gt 0 ]; then
    log "$name: suite output:"
    cat "$work/$name.out" >&2
  fi
  echo "conformance: $name: $pass passed, $fail failed (baseline: $base_pass passed, $base_fail failed)"
  return "$regressions"
}

failed=0

# --- the server suite ---------------------------------------------------------
if [ "$PART" != client ]; then
log "building examples/conformance-server and gatehouse"
go build -o "$work/bin/ours" ./examples/conformance-server
go build -o "$work/bin/gatehouse" ./cmd/gatehouse
log "installing the go-sdk everything-server $GO_SDK_VERSION (baseline)"
GOBIN="$work/bin" GOFLAGS= timeout 600 go install "github.com/modelcontextprotocol/go-sdk/conformance/everything-server@$GO_SDK_VERSION"

# Baseline: the go-sdk's own server, stateful (sampling and elicitation need
# server-to-client requests).
serve baseline-server "$work/bin/everything-server" -http "127.0.0.1:@PORT@" -stateless=false
run_suite baseline "http://127.0.0.1:$port/mcp"

# Ours, the same way.
serve ours-server "$work/bin/ours" -http "127.0.0.1:@PORT@"
run_suite ours "http://127.0.0.1:$port/mcp"

# Every gateway below also serves a plugin with skills and no server (issue
# 21): its skills are resources and prompts beside the upstream's, and the
# suite must pass as well with them loaded.
skills_plugin="$work/skills-plugin"
mkdir -p "$skills_plugin/skills/incident/references"
cat >"$skills_plugin/plugin.json" <<'JSON'
{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "handbook", "version": "1.0.0",
 "description": "Skills served beside the conformance server's resources and prompts."}
JSON
cat >"$skills_plugin/skills/incident/SKILL.md" <<'MD'
---
name: incident
description: Run an incident by the handbook.
---

# Incident

Open references/checklist.md and work through it in order.
MD
printf '# Checklist\n\n1. Page the owner.\n' >"$skills_plugin/skills/incident/references/checklist.md"

# The gateway in front of the baseline server (a second instance, so the
# runs share no state), with prefix "" so every name is the server's own,
# first over stdio: the gateway asks it for 2025-11-25 (its default
# upstreamProtocol), over which sampling, elicitation and log levels are
# forwarded.
mkdir -p "$work/gateway/bin"
cp "$work/bin/everything-server" "$work/gateway/bin/everything-server"
cat >"$work/gateway/gatehouse.yaml" <<YAML
store: sqlite:$work/gateway/gatehouse.db
plugins: [$skills_plugin]
servers:
  everything:
    type: stdio
    command: ./bin/everything-server
    prefix: ""
YAML
serve gateway-server "$work/bin/gatehouse" serve --config "$work/gateway/gatehouse.yaml" --listen "127.0.0.1:@PORT@"
run_suite gateway "http://127.0.0.1:$port/mcp"

# And in front of a third instance over streamable HTTP (-stateless=false,
# as the baseline runs): the gateway's own upstream client, its raw
# tools/call path and its handling of response streams an upstream ends
# early (docs/gateway.md); then once more with the byte path off.
serve upstream-http "$work/bin/everything-server" -http "127.0.0.1:@PORT@" -stateless=false
mkdir -p "$work/gateway-http"
cat >"$work/gateway-http/gatehouse.yaml" <<YAML
store: sqlite:$work/gateway-http/gatehouse.db
plugins: [$skills_plugin]
servers:
  everything:
    type: streamable-http
    url: http://127.0.0.1:$port/mcp
    prefix: ""
YAML
serve gateway-http-server "$work/bin/gatehouse" serve --config "$work/gateway-http/gatehouse.yaml" --listen "127.0.0.1:@PORT@"
run_suite gateway-http "http://127.0.0.1:$port/mcp"

# The same with the byte path off (http.bytePath: false): every call read by
# the go-sdk's server and carried by its client, through the same pipeline.
serve upstream-http-sdk "$work/bin/everything-server" -http "127.0.0.1:@PORT@" -stateless=false
mkdir -p "$work/gateway-sdk"
cat >"$work/gateway-sdk/gatehouse.yaml" <<YAML
store: sqlite:$work/gateway-sdk/gatehouse.db
http: {bytePath: false}
plugins: [$skills_plugin]
servers:
  everything:
    type: streamable-http
    url: http://127.0.0.1:$port/mcp
    prefix: ""
YAML
serve gateway-sdk-server "$work/bin/gatehouse" serve --config "$work/gateway-sdk/gatehouse.yaml" --listen "127.0.0.1:@PORT@"
run_suite gateway-sdk "http://127.0.0.1:$port/mcp"

# The skills were loaded: each gateway logged one skill when ready.
for name in gateway-server gateway-http-server gateway-sdk-server; do
  if ! grep -Eq 'gateway: ready.*skills[=":]+1\b' "$work/$name.log"; then
    log "$name did not load the skills plugin; its log:"
    cat "$work/$name.log" >&2
    exit 1
  fi
done

read -r base_pass base_fail < <(totals "$work/baseline.out")
log "baseline (go-sdk everything-server $GO_SDK_VERSION): $base_pass passed, $base_fail failed"

failed=0
compare ours || { echo "conformance: FAIL: ours: scenario(s) pass on the baseline but not here"; failed=1; }
compare gateway || { echo "conformance: FAIL: gateway: scenario(s) pass on the baseline but not through the gateway"; failed=1; }
compare gateway-http || { echo "conformance: FAIL: gateway-http: scenario(s) pass on the baseline but not through the gateway over HTTP"; failed=1; }
compare gateway-sdk || { echo "conformance: FAIL: gateway-sdk: scenario(s) pass on the baseline but not through the gateway with the byte path off"; failed=1; }
if [ "$failed" -eq 0 ]; then
  echo "conformance: OK: every check the baseline passes passes on ours and through the gateway (stdio and HTTP upstreams, byte path on and off)"
fi
fi # server part

# --- the client suite ---------------------------------------------------------
if [ "$PART" != server ]; then
log "building examples/conformance-client; installing the go-sdk everything-client $GO_SDK_VERSION (baseline)"
go build -o "$work/bin/client" ./examples/conformance-client
GOBIN="$work/bin" GOFLAGS= timeout 600 go install "github.com/modelcontextprotocol/go-sdk/conformance/everything-client@$GO_SDK_VERSION"
run_client_suite client-baseline "$work/bin/everything-client"
run_client_suite client-ours "$work/bin/client"
read -r cb_pass cb_fail < <(totals "$work/client-baseline.out")
log "client baseline (go-sdk everything-client $GO_SDK_VERSION): $cb_pass passed, $cb_fail failed"
if compare client-ours client-baseline; then
  echo "conformance: OK: every client scenario the baseline passes passes through toolset and identity/upstream"
else
  echo "conformance: FAIL: client-ours: scenario(s) pass with the go-sdk everything-client but not through Gatehouse"; failed=1
fi
fi # client part

if [ "$failed" -ne 0 ]; then exit 1; fi
