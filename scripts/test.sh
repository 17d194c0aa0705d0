#!/usr/bin/env bash
# Every leg of the suite; fails if any leg fails. Under CI a leg that cannot run fails too:
# a missing Python 3.12 / Django 6 environment, or a leg that collects nothing.
#
#   django52-postgres  Python 3.11, Django 5.2, PostgreSQL: everything, including the suites
#                      with real processes (marker `services`: Celery worker races, SIGKILL,
#                      duplicate delivery, websocket and browser e2e) and the schema fuzz.
#   django52-sqlite    Python 3.11, Django 5.2, SQLite: everything not marked `postgres`.
#   django6-postgres   Python 3.12, Django 6.x, PostgreSQL: everything not marked `services`.
#   django6-sqlite     Python 3.12, Django 6.x, SQLite: everything not marked `postgres`.
#
# The real-process suites run once, on the deployment's base (PostgreSQL, Django 5.2 LTS):
# they test processes and the database, not Django's version, and they are most of the time.
#
# Overrides (README, "What make test runs"): PG_URL (the database the PostgreSQL legs'
# test databases are named after), REDIS_URL (the Redis database the tests flush and use),
# CHROMIUM (the browser the browser tests drive).
set -u
cd "$(dirname "$0")/.."
PG_URL=${PG_URL:-postgres://postgres@127.0.0.1:5432/symfonic}
REDIS_URL_TEST=${REDIS_URL:-redis://127.0.0.1:6379/9}
mkdir -p artifacts
status=0
legs=()

run_leg() {  # name python database_url markers [pytest args...]
  local name=$1 py=$2 db=$3 markers=$4
  shift 4
  echo
  echo "=== leg: $name (-m \"$markers\" $*) ==="
  local started=$SECONDS
  # REDIS_URL is the tests' Redis, not the example's channel layer: the suite's settings
  # choose their layers themselves.
  env -u REDIS_URL DATABASE_URL="$db" SYMFONIC_TEST_REDIS_URL="$REDIS_URL_TEST" \
    "$py" -m pytest -p no:cacheprovider -m "$markers" --junitxml="artifacts/junit-$name.xml" "$@"
  local rc=$?
  # pytest exits 5 when it collected nothing: that is a failure here, never a pass.
  legs+=("$name=$rc($((SECONDS - started))s)")
  [ $rc -eq 0 ] || status=1
}

# Decided before any leg runs, so CI fails at once rather than after the other legs.
django6=yes
if ! .venv312/bin/python -c 'import django, sys; sys.exit(django.VERSION[0] != 6)' 2>/dev/null; then
  if [ -n "${CI:-}" ]; then
    echo "FAIL: .venv312 (Python 3.12, Django 6) is missing, and CI is set: the Django 6 legs"
    echo "cannot be skipped. Run scripts/venv312.sh (it needs python3.12)."
    exit 1
  fi
  echo "NOTE: .venv312 (Python 3.12, Django 6) is missing, so the Django 6 legs will not run"
  echo "(under CI this fails)."
  django6=no
fi

run_leg django52-postgres .venv/bin/python "$PG_URL" ""
run_leg django52-sqlite .venv/bin/python "" "not postgres"
if [ $django6 = yes ]; then
  run_leg django6-postgres .venv312/bin/python "$PG_URL" "not services"
  run_leg django6-sqlite .venv312/bin/python "" "not postgres"
else
  legs+=("django6=not-run")
fi
echo
echo "legs: ${legs[*]}"
exit $status
