#!/usr/bin/env bash
# Every leg of the suite: Django 5.2 / Python 3.11 on PostgreSQL and on SQLite,
# then Django 6.x / Python 3.12 on both. Fails if any leg fails.
set -u
cd "$(dirname "$0")/.."
PG_URL=${PG_URL:-postgres://postgres@127.0.0.1:5432/symfonic}
REDIS_URL_TEST=${REDIS_URL_TEST:-redis://127.0.0.1:6379/9}
mkdir -p artifacts
status=0
legs=()

run_leg() {  # name python database_url markers
  local name=$1 py=$2 db=$3 markers=$4
  echo
  echo "=== leg: $name ==="
  env DATABASE_URL="$db" SYMFONIC_TEST_REDIS_URL="$REDIS_URL_TEST" \
    "$py" -m pytest -p no:cacheprovider -m "$markers" --junitxml="artifacts/junit-$name.xml"
  local rc=$?
  # pytest exits 5 when it collected nothing: that is a failure here, not a pass.
  legs+=("$name=$rc")
  [ $rc -eq 0 ] || status=1
}

run_leg django52-postgres .venv/bin/python "$PG_URL" ""
run_leg django52-sqlite .venv/bin/python "" "not postgres"

if [ -x .venv312/bin/python ]; then
  run_leg django6-postgres .venv312/bin/python "$PG_URL" ""
  run_leg django6-sqlite .venv312/bin/python "" "not postgres"
else
  echo "NOTE: python3.12 was not found, so the Django 6 leg did not run."
  legs+=("django6=not-run")
fi
echo
echo "legs: ${legs[*]}"
exit $status
