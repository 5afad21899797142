#!/usr/bin/env bash
# Starts (or stops) throw-away PostgreSQL and Redis servers on loopback high ports under var/,
# for tests and benchmarks. Idempotent: a running server is left alone.
#   scripts/services.sh start   -> prints the env lines to export
#   scripts/services.sh stop
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VAR="$ROOT/var/services"
PG_PORT="${PG_PORT:-54329}"
REDIS_PORT="${REDIS_PORT:-63790}"
PG_BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
PGDATA="$VAR/pg"
as_pg() { if [ "$(id -u)" -eq 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }

start() {
  mkdir -p "$VAR"
  if [ ! -s "$PGDATA/PG_VERSION" ]; then
    mkdir -p "$PGDATA"
    [ "$(id -u)" -eq 0 ] && chown -R postgres:postgres "$VAR" && chmod 755 "$ROOT/var" "$VAR"
    as_pg "$PG_BIN/initdb -D '$PGDATA' -U postgres --auth=trust -E UTF8 >/dev/null"
  fi
  if ! as_pg "$PG_BIN/pg_ctl -D '$PGDATA' status" >/dev/null 2>&1; then
    as_pg "$PG_BIN/pg_ctl -D '$PGDATA' -l '$PGDATA/server.log' -w -o \"-p $PG_PORT -k '$VAR' -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300\" start" >/dev/null
  fi
  if ! redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; then
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --daemonize yes --save '' --appendonly no \
      --pidfile "$VAR/redis.pid" --logfile "$VAR/redis.log" >/dev/null
  fi
  echo "export TEST_DATABASE_URL=postgres://postgres@127.0.0.1:$PG_PORT/vlmeval"
  echo "export TEST_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0"
}

stop() {
  as_pg "$PG_BIN/pg_ctl -D '$PGDATA' -m fast stop" >/dev/null 2>&1 || true
  redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
