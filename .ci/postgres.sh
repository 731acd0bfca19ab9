#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster for tests and prints its DSN on stdout.
# Usage: eval "$(bash .ci/postgres.sh start DIR)"   -> exports GATEHOUSE_TEST_POSTGRES
#        bash .ci/postgres.sh stop DIR
# It runs the cluster as the `postgres` user (initdb refuses root), listening on
# 127.0.0.1 only, on a free port, with fsync off (tests, not data).
set -euo pipefail
cmd=${1:?start|stop}
dir=${2:?directory}
bindir=""
for d in /usr/lib/postgresql/*/bin; do [ -x "$d/initdb" ] && bindir=$d; done
if [ -z "$bindir" ]; then
  if command -v initdb >/dev/null; then bindir=$(dirname "$(command -v initdb)"); fi
fi
if [ -z "$bindir" ]; then
  echo "postgres.sh: no initdb found; installing postgresql from Debian" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) >&2
  for d in /usr/lib/postgresql/*/bin; do [ -x "$d/initdb" ] && bindir=$d; done
fi
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
case "$cmd" in
start)
  mkdir -p "$dir"
  [ "$(id -u)" = 0 ] && chown postgres "$dir"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 55432)
  as_pg "'$bindir/initdb' -D '$dir/data' -U postgres -A trust --no-sync -E UTF8" >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
  as_pg "'$bindir/pg_ctl' -D '$dir/data' -l '$dir/server.log' -w -t 60 -o \"-c listen_addresses=127.0.0.1 -p $port -k '$dir' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200\" start" >&2 \
    || { cat "$dir/server.log" >&2; exit 1; }
  as_pg "'$bindir/createdb' -h 127.0.0.1 -p $port -U postgres gatehouse_test" >&2
  echo "export GATEHOUSE_TEST_POSTGRES='postgres://postgres@127.0.0.1:$port/gatehouse_test?sslmode=disable'"
  ;;
stop)
  [ -d "$dir/data" ] && as_pg "'$bindir/pg_ctl' -D '$dir/data' -m immediate stop" >/dev/null 2>&1 || true
  ;;
esac
