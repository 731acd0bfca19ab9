# The pieces bench/run.sh and bench/hardened.sh share; sourced, not run.
# Sourcing it makes a work directory ($work), kills every process started
# through it (pids+=) when the script exits, TERM then KILL after 5 s, and
# removes $work unless BENCH_KEEP is set. A script may define bench_after_kill,
# run by the exit trap once the processes are gone (e.g. to drop a schema).
# Everything listens and connects on 127.0.0.1 only.

work=$(mktemp -d /tmp/gatehouse-bench.XXXXXX)
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    # Bounded: a process that ignores TERM for 5 s gets KILL.
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if declare -F bench_after_kill >/dev/null; then
    bench_after_kill || true
  fi
  if [ -n "${BENCH_KEEP:-}" ]; then
    echo "work directory kept: $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
log() { printf '%s\n' "$*" >&2; }

# start_echo FLAGS...: starts bench/echoserver ($work/echoserver) with FLAGS
# on a free loopback port; sets ECHO_URL and echo_pid.
start_echo() {
  "$work/echoserver" "$@" >"$work/echo.out" 2>"$work/echo.log" &
  echo_pid=$!
  pids+=("$echo_pid")
  ECHO_URL=
  for _ in $(seq 100); do
    ECHO_URL=$(sed -n 's/^url=//p' "$work/echo.out")
    [ -n "$ECHO_URL" ] && break
    kill -0 "$echo_pid" 2>/dev/null || { cat "$work/echo.log" >&2; log "echoserver died"; exit 1; }
    sleep 0.1
  done
  [ -n "$ECHO_URL" ] || { log "echoserver did not start"; exit 1; }
  export ECHO_URL
  log "echo server: $ECHO_URL (pid $echo_pid)"
}

# check_loopback URL NAME: exits unless URL's host is a loopback address.
check_loopback() {
  local hostport=${1#*://}
  hostport=${hostport%%/*}
  case "${hostport%:*}" in
    127.*|localhost) ;;
    *) log "$2 URL must be on 127.0.0.1"; exit 1 ;;
  esac
}

# start_gateway CMD URL LOGNAME: starts CMD (with $GATEWAY_URL set to URL)
# and waits until URL accepts connections; sets $started_pid.
start_gateway() {
  local cmd=$1 url=$2 name=$3 hostport gw_host gw_port pid up=
  check_loopback "$url" "$name"
  hostport=${url#*://}
  hostport=${hostport%%/*}
  gw_host=${hostport%:*}
  gw_port=${hostport##*:}
  GATEWAY_URL=$url bash -c "exec $cmd" >"$work/$name.log" 2>&1 &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 300); do
    kill -0 "$pid" 2>/dev/null || break
    if (exec 3<>"/dev/tcp/$gw_host/$gw_port") 2>/dev/null; then up=1; break; fi
    sleep 0.1
  done
  if [ -z "$up" ]; then
    tail -n 50 "$work/$name.log" >&2
    log "$name did not listen on $url within 30s"
    exit 1
  fi
  log "$name: $url (pid $pid)"
  started_pid=$pid
}

# load LABEL URL PID FLAGS...: one $work/mcpload run appended to $results,
# bounded by LOAD_BOUND (default 300 s). A run with failed calls (exit 3) is
# kept: its errors show in the table.
load() {
  local label=$1 url=$2 pid=$3
  shift 3
  local rc=0
  timeout -k 5 "${LOAD_BOUND:-300}" "$work/mcpload" -url "$url" -rss-pid "$pid" -label "$label" "$@" \
    >>"$results" 2>>"$work/mcpload.log" || rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != 3 ]; then
    tail -n 20 "$work/mcpload.log" >&2
    log "mcpload failed (exit $rc) for $label $*"
    exit 1
  fi
  [ "$rc" = 3 ] && log "  $label: some calls failed (see errors column)"
  return 0
}

# machine_line prints when and on what the run was made.
machine_line() {
  local cpu
  cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
  echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores ($cpu), $(go version | cut -d' ' -f3), kernel $(uname -r)."
}

# build_keyed_bins builds mcpload and the echo server into $work, and sets
# bin_names and bin_paths to the gatehouse binaries to compare: KEYED_BINS'
# NAME=PATH words, or one built from this checkout, named "new".
build_keyed_bins() {
  log "building mcpload, echoserver"
  go build -o "$work/mcpload" ./bench/mcpload
  go build -o "$work/echoserver" ./bench/echoserver
  bin_names=() bin_paths=()
  if [ -n "${KEYED_BINS:-}" ]; then
    for w in $KEYED_BINS; do
      [[ $w =~ ^([A-Za-z0-9_.-]+)=(.+)$ ]] || { log "KEYED_BINS: want NAME=PATH words, got $w"; exit 2; }
      [ -x "${BASH_REMATCH[2]}" ] || { log "KEYED_BINS: ${BASH_REMATCH[2]} is not an executable"; exit 2; }
      bin_names+=("${BASH_REMATCH[1]}") bin_paths+=("${BASH_REMATCH[2]}")
    done
  else
    log "building gatehouse from this checkout"
    go build -o "$work/gatehouse" ./cmd/gatehouse
    bin_names+=(new) bin_paths+=("$work/gatehouse")
  fi
}
