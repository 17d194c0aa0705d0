#!/usr/bin/env bash
# The README's install path, followed as a newcomer would, on what `pip install` would give them:
#   1. build the sdist and the wheel (no setuptools deprecation warning), `twine check` them,
#      and check what the wheel holds (the app with templates, static files and migrations;
#      no example_project);
#   2. install the wheel in a fresh virtualenv with the README's `pip install` line (the
#      dependencies come from PyPI), make a project with `django-admin startproject proj`,
#      and write the README's "Installing it in your project" snippets into it;
#   3. `manage.py check` (warnings fail), `migrate`, no missing migration, the static files
#      found, the templates loading;
#   4. a real Celery worker (`celery -A proj worker`) and daphne serving the project, and
#      start -> pause -> approve (HTTP API, Token header) -> completed, streamed over the
#      run's websocket (tests/install/drive.py).
# Prints PASS or FAIL; exits non-zero on failure. Redis: INSTALL_CHECK_REDIS_URL (db 12).
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD_PY=${BUILD_PY:-.venv/bin/python}
REDIS_URL=${INSTALL_CHECK_REDIS_URL:-redis://127.0.0.1:6379/12}
# A newcomer's pip picks the newest Django their Python allows: on 3.12 that is Django 6.
VENV_PYTHON=${INSTALL_CHECK_PYTHON:-$(bash scripts/python312.sh)}
VENV_PYTHON=${VENV_PYTHON:-python3}
WORK=$(mktemp -d)
SITE=$WORK/site
VENV=$WORK/venv
started=$SECONDS
groups=()

cleanup() {
  local pid
  for pid in "${groups[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
  for pid in "${groups[@]}"; do
    for _ in $(seq 1 50); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

step() { echo; echo "--- $* ($((SECONDS - started)) s)"; }
fail() {
  echo
  local log
  for log in "$WORK"/*.log; do
    [ -s "$log" ] && { echo "=== last lines of $(basename "$log") ==="; tail -n 40 "$log"; }
  done
  mkdir -p "$ROOT/artifacts/install-check" && cp "$WORK"/*.log "$ROOT/artifacts/install-check/" 2>/dev/null
  echo "install check: FAIL: $* (after $((SECONDS - started)) s; logs in artifacts/install-check/)"
  exit 1
}
run() {  # run a command quietly into $WORK/<name>.log; fail with its output otherwise
  local name=$1; shift
  "$@" >"$WORK/$name.log" 2>&1 || fail "$name: $* exited $?"
}
# Start a long-running process in a process group of its own (so cleanup stops its children).
start() {  # name command...
  local name=$1; shift
  setsid "$@" >"$WORK/$name.log" 2>&1 < /dev/null &
  groups+=($!)
}

step "build the sdist and the wheel"
run build "$BUILD_PY" -m build --outdir "$WORK/dist" .
if grep -i "deprecat" "$WORK/build.log"; then fail "the build warns of deprecations (above)"; fi
run twine "$BUILD_PY" -m twine check --strict "$WORK"/dist/*
cat "$WORK/twine.log"
"$BUILD_PY" tests/install/check_wheel.py "$WORK/dist" || fail "the distributions hold the wrong files"
wheel=$(ls "$WORK"/dist/*.whl)

step "a fresh virtualenv ($("$VENV_PYTHON" --version)) with the README's pip install line"
run venv "$VENV_PYTHON" -m venv "$VENV"
mapfile -t pip_args < <("$VENV/bin/python" tests/install/readme_snippets.py pip-args README.md "$wheel") \
  || fail "no pip install line in the README"
echo "  pip install ${pip_args[*]}"
run pip "$VENV/bin/python" -m pip install --disable-pip-version-check "${pip_args[@]}"
"$VENV/bin/python" -m pip list --disable-pip-version-check 2>/dev/null \
  | grep -i -E "^(django|djangorestframework|drf-spectacular|channels|channels-redis|celery|daphne|redis|symfonic-django) "

step "django-admin startproject proj, then the README's snippets"
run startproject "$VENV/bin/django-admin" startproject proj "$SITE"
"$VENV/bin/python" tests/install/readme_snippets.py apply README.md "$SITE" || fail "applying the README"

cd "$SITE" || fail "no project directory"
export REDIS_URL DJANGO_SETTINGS_MODULE=proj.settings PYTHONPATH=$SITE
PY=$VENV/bin/python

step "manage.py check, migrate, shipped migrations and static files"
run check "$PY" manage.py check --fail-level WARNING
cat "$WORK/check.log"
run migrate "$PY" manage.py migrate --noinput
grep -c "Applying symfonic_django" "$WORK/migrate.log" | sed 's/^/  symfonic_django migrations applied: /'
run makemigrations "$PY" manage.py makemigrations --check --dry-run symfonic_django
run findstatic "$PY" manage.py findstatic symfonic_django/admin.css
echo "  $(tail -n 1 "$WORK/findstatic.log" | sed 's/^ *//')"
DJANGO_SUPERUSER_PASSWORD=reviewer-pw-$$ run superuser \
  "$PY" manage.py createsuperuser --noinput --username reviewer --email reviewer@example.com
run token "$PY" manage.py drf_create_token reviewer
token=$(sed -n 's/^Generated token \([0-9a-f]*\) for user reviewer$/\1/p' "$WORK/token.log")
[ -n "$token" ] || fail "drf_create_token printed no token"

step "a Celery worker and daphne on Redis $REDIS_URL"
run redis "$PY" -c "import redis, sys; redis.Redis.from_url(sys.argv[1]).flushdb()" "$REDIS_URL"
start worker "$VENV/bin/celery" -A proj worker -l info --concurrency 2
port=$("$PY" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
start daphne "$VENV/bin/daphne" -b 127.0.0.1 -p "$port" proj.asgi:application
for _ in $(seq 1 300); do
  grep -q " ready\.$" "$WORK/worker.log" && "$PY" -c "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 1)" "$port" 2>/dev/null && break
  sleep 0.2
done
grep -q " ready\.$" "$WORK/worker.log" || fail "the worker did not become ready"

step "start -> pause -> approve -> completed"
"$PY" "$ROOT/tests/install/drive.py" "http://127.0.0.1:$port" "$token" || fail "driving a turn"
cd "$ROOT" || exit 1
echo
echo "install check: PASS ($((SECONDS - started)) s)"
