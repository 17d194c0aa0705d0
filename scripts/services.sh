#!/usr/bin/env bash
# PostgreSQL and Redis for `make test`. By default they are the local servers on
# 127.0.0.1:5432 (user postgres, trust auth) and 127.0.0.1:6379, started here when they are
# not running, with Debian's commands (pg_ctlcluster, redis-server; as root). With PG_URL
# or REDIS_URL set (postgres://user@host:port/db, redis://host:port/db), those servers are
# used as they are: only checked, never started. Exits non-zero if either cannot be reached.
set -u
PG_URL=${PG_URL:-postgres://postgres@127.0.0.1:5432/symfonic}
REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/9}
pg_up() { pg_isready -q -d "$PG_URL" 2>/dev/null; }
redis_up() { redis-cli -u "$REDIS_URL" ping 2>/dev/null | grep -q PONG; }
local_pg() { [[ $PG_URL == postgres://postgres@127.0.0.1:5432/* ]]; }
local_redis() { [[ $REDIS_URL == redis://127.0.0.1:6379/* ]]; }

if ! pg_up && local_pg && command -v pg_ctlcluster >/dev/null; then
  echo "services: starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start || true
fi
if ! redis_up && local_redis && command -v redis-server >/dev/null; then
  echo "services: starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
fi
for _ in $(seq 1 60); do pg_up && redis_up && break; sleep 0.5; done
ok=0
pg_up || { echo "services: PostgreSQL is not reachable at $PG_URL (set PG_URL)"; ok=1; }
redis_up || { echo "services: Redis is not reachable at $REDIS_URL (set REDIS_URL)"; ok=1; }
exit $ok
