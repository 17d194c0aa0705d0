#!/usr/bin/env bash
# Start PostgreSQL and Redis when they are not running (the commands of this
# machine kind, python-svc). Exits non-zero if either cannot be reached.
set -u
pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

if ! pg_up; then
  echo "services: starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start || true
fi
if ! redis_up; then
  echo "services: starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
fi
for _ in $(seq 1 60); do pg_up && redis_up && break; sleep 0.5; done
ok=0
pg_up || { echo "services: PostgreSQL is not reachable on 127.0.0.1:5432"; ok=1; }
redis_up || { echo "services: Redis is not reachable on 127.0.0.1:6379"; ok=1; }
exit $ok
