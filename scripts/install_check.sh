#!/usr/bin/env bash
# The README's install path, followed as a newcomer would, on what `pip install` would give them:
#   1. build the sdist and the wheel (no setuptools deprecation warning), `twine check` them,
#      and check what the wheel holds (the app with templates, static files and migrations;
#      no example_project);
#   2. in a fresh virtualenv, run the README's `pip install` lines with the built wheel where
#      the README says to put a checkout or a wheel (the other packages come from PyPI), make
#      a project with `django-admin startproject proj`, and write the README's "Installing it
#      in your project" snippets into it;
#   3. on a PostgreSQL database of its own (made here, dropped at the end) and with DEBUG off
#      as the README's settings leave it: `manage.py check` (warnings fail), then the README's
#      step 6 as written (`migrate`, `collectstatic`, `createsuperuser`, `drf_create_token`),
#      no missing migration, the templates loading;
#   4. the README's Celery worker and beat and, in turn, its daphne and uvicorn lines serving
#      the project; under each: start -> pause -> approve (HTTP API, Token header) -> completed,
#      streamed over the run's websocket (tests/install/drive.py), then in headless Chromium
#      the admin's review page of a pause (styled: the admin's CSS applied, no static file
#      missing, WhiteNoise's hashed files), the pause approved there, the continuation
#      streaming in the live viewer, and Swagger UI with its operations
#      (tests/install/browse.py), with screenshots.
# Prints PASS or FAIL; exits non-zero on failure. The logs and the screenshots stay in the
# run's temp dir (printed at the end; the virtualenv and the project are removed) and are
# copied to artifacts/install-check/.
#
# Overrides: INSTALL_CHECK_REDIS_URL (default redis://127.0.0.1:6379/15; the check empties
# that db), PG_URL (the PostgreSQL server, default postgres://postgres@127.0.0.1:5432),
# INSTALL_CHECK_DB (the database it creates and drops, default symfonic_install_check),
# CHROMIUM (default /usr/bin/chromium), BUILD_PY (a Python with build, twine and playwright),
# INSTALL_CHECK_PYTHON (the virtualenv's Python, default a 3.12).
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD_PY=${BUILD_PY:-$ROOT/.venv/bin/python}
REDIS_URL=${INSTALL_CHECK_REDIS_URL:-redis://127.0.0.1:6379/15}
PG_URL=${PG_URL:-postgres://postgres@127.0.0.1:5432}
CHECK_DB=${INSTALL_CHECK_DB:-symfonic_install_check}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
# A newcomer's pip picks the newest Django their Python allows: on 3.12 that is Django 6.
VENV_PYTHON=${INSTALL_CHECK_PYTHON:-$(bash scripts/python312.sh)}
VENV_PYTHON=${VENV_PYTHON:-python3}
WORK=$(mktemp -d -t install-check.XXXXXX)
SITE=$WORK/site
VENV=$WORK/venv
SHOTS=$WORK/screenshots
ARTIFACTS=$ROOT/artifacts/install-check
started=$SECONDS
groups=()
db_made=""

stop_group() {  # pid: TERM the process group, KILL it after 5 s
  kill -TERM -- "-$1" 2>/dev/null
  for _ in $(seq 1 50); do kill -0 -- "-$1" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL -- "-$1" 2>/dev/null
}
cleanup() {
  local pid
  for pid in "${groups[@]}"; do stop_group "$pid"; done
  if [ -n "$db_made" ]; then
    "$VENV/bin/python" - "$CHECK_DB" <<'EOF' || echo "install check: could not drop database $CHECK_DB"
import sys, psycopg
from psycopg import sql
with psycopg.connect(dbname="postgres", autocommit=True) as conn:
    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(sys.argv[1])))
EOF
  fi
  keep_artifacts
  # Deleting a virtualenv's thousands of files takes this machine's disk half a minute.
  nohup rm -rf "$VENV" "$SITE" "$WORK/dist" >/dev/null 2>&1 &
}
trap cleanup EXIT
keep_artifacts() {
  mkdir -p "$ARTIFACTS"
  cp "$WORK"/*.log "$ARTIFACTS/" 2>/dev/null
  [ -d "$SHOTS" ] && cp -r "$SHOTS"/. "$ARTIFACTS/"
}

step() { echo; echo "--- $* ($((SECONDS - started)) s)"; }
fail() {
  echo
  local log
  for log in "$WORK"/*.log; do
    [ -s "$log" ] && { echo "=== last lines of $(basename "$log") ==="; tail -n 40 "$log"; }
  done
  echo "install check: FAIL: $* (after $((SECONDS - started)) s; logs and screenshots in" \
       "$WORK and artifacts/install-check/)"
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
free_port() {
  "$PY" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
}
wait_for_port() {  # name port: until something accepts connections there (60 s)
  for _ in $(seq 1 300); do
    "$PY" -c "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 1)" \
      "$2" 2>/dev/null && return 0
    sleep 0.2
  done
  fail "$1 did not listen on port $2"
}

rm -rf "$ARTIFACTS"
[ -x "$CHROMIUM" ] || fail "no Chromium at $CHROMIUM (scripts/chromium.sh installs Debian's; or set CHROMIUM)"

step "build the sdist and the wheel"
run build "$BUILD_PY" -m build --outdir "$WORK/dist" .
if grep -i "deprecat" "$WORK/build.log"; then fail "the build warns of deprecations (above)"; fi
run twine "$BUILD_PY" -m twine check --strict "$WORK"/dist/*
cat "$WORK/twine.log"
"$BUILD_PY" tests/install/check_wheel.py "$WORK/dist" || fail "the distributions hold the wrong files"
wheel=$(ls "$WORK"/dist/*.whl)

step "a fresh virtualenv ($("$VENV_PYTHON" --version)) with the README's pip install lines"
run venv "$VENV_PYTHON" -m venv "$VENV"
for n in 0 1 2 3; do
  mapfile -t pip_args < <("$VENV/bin/python" tests/install/readme_snippets.py pip-args README.md "$wheel" "$n")
  [ "${#pip_args[@]}" -gt 0 ] || break
  echo "  pip install ${pip_args[*]}"
  run "pip$n" "$VENV/bin/python" -m pip install --disable-pip-version-check "${pip_args[@]}"
done
[ -f "$WORK/pip0.log" ] || fail "no pip install line in the README's install section"
"$VENV/bin/python" -m pip list --disable-pip-version-check 2>/dev/null \
  | grep -i -E "^(django|djangorestframework|drf-spectacular|channels|channels-redis|celery|daphne|uvicorn|whitenoise|psycopg|redis|symfonic-django) "

step "django-admin startproject proj, then the README's snippets"
run startproject "$VENV/bin/django-admin" startproject proj "$SITE"
"$VENV/bin/python" tests/install/readme_snippets.py apply README.md "$SITE" || fail "applying the README"

cd "$SITE" || fail "no project directory"
PY=$VENV/bin/python
# The settings' environment, as the README's snippets read it (and nothing else of the caller's).
unset DJANGO_DEBUG DJANGO_ALLOWED_HOSTS DATABASE_URL
eval "$("$PY" - "$PG_URL" <<'EOF'
import shlex, sys
from urllib.parse import unquote, urlsplit
url = urlsplit(sys.argv[1])
for name, value in [("HOST", url.hostname or "127.0.0.1"), ("PORT", url.port or 5432),
                    ("USER", unquote(url.username or "postgres")),
                    ("PASSWORD", unquote(url.password or ""))]:
    print(f"export POSTGRES_{name}={shlex.quote(str(value))}")
EOF
)"
# libpq's own names, for the psycopg lines below that make and drop the database.
export PGHOST=$POSTGRES_HOST PGPORT=$POSTGRES_PORT PGUSER=$POSTGRES_USER PGPASSWORD=$POSTGRES_PASSWORD
export POSTGRES_DB=$CHECK_DB REDIS_URL DJANGO_SETTINGS_MODULE=proj.settings PYTHONPATH=$SITE

# Step 6 of the README, its commands as written: `python` is the virtualenv's; the check adds
# only what a terminal would ask (createsuperuser's password) and where a server listens.
mapfile -t readme_commands < <("$PY" "$ROOT/tests/install/readme_snippets.py" commands "$ROOT/README.md")
[ "${#readme_commands[@]}" -gt 0 ] \
  || fail "no step 6 (a bash block running manage.py migrate) in the README's install section"
readme_command() {  # prefix: the README's command that starts with it, as words in $words
  local line
  for line in "${readme_commands[@]}"; do
    if [[ "$line" == "$1"* ]]; then read -ra words <<<"$line"; return 0; fi
  done
  fail "the README's step 6 has no command starting with '$1'"
}

step "createdb $CHECK_DB on $POSTGRES_HOST:$POSTGRES_PORT (the README's createdb, on a name of the check's own)"
readme_command "createdb "
"$PY" - "$CHECK_DB" >"$WORK/createdb.log" 2>&1 <<'EOF' || fail "createdb: could not make the database"
import sys, psycopg
from psycopg import sql
name = sql.Identifier(sys.argv[1])
with psycopg.connect(dbname="postgres", autocommit=True) as conn:
    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))
    conn.execute(sql.SQL("CREATE DATABASE {}").format(name))
EOF
db_made=1

step "manage.py check; the README's step 6: migrate, collectstatic, createsuperuser, drf_create_token"
run check "$PY" manage.py check --fail-level WARNING
cat "$WORK/check.log"
"$PY" -c "from django.conf import settings; import django; django.setup(); \
print('  DEBUG', settings.DEBUG, '| database', settings.DATABASES['default']['ENGINE'], \
settings.DATABASES['default']['NAME'], '| static files', settings.STORAGES['staticfiles']['BACKEND'])"
password=reviewer-pw-$$
for line in "${readme_commands[@]}"; do
  [[ "$line" == "python manage.py "* ]] || continue
  read -ra words <<<"$line"
  name=${words[2]}
  echo "  $line"
  case $name in
    createsuperuser)  # asks for a password on a terminal; the same with --noinput
      DJANGO_SUPERUSER_PASSWORD=$password run "$name" \
        "$PY" "${words[@]:1}" --noinput --email reviewer@example.com ;;
    *) run "$name" "$PY" "${words[@]:1}" </dev/null ;;
  esac
done
for name in migrate collectstatic createsuperuser drf_create_token; do
  [ -f "$WORK/$name.log" ] || fail "the README's step 6 does not run manage.py $name"
done
grep -c "Applying symfonic_django" "$WORK/migrate.log" | sed 's/^/  symfonic_django migrations applied: /'
echo "  collectstatic: $(tail -n 1 "$WORK/collectstatic.log")"
[ -f "$SITE/staticfiles/staticfiles.json" ] || fail "collectstatic wrote no manifest"
token=$(sed -n 's/^Generated token \([0-9a-f]*\) for user reviewer$/\1/p' "$WORK/drf_create_token.log")
[ -n "$token" ] || fail "drf_create_token printed no token"
run makemigrations "$PY" manage.py makemigrations --check --dry-run symfonic_django

step "the README's Celery worker and beat on Redis $REDIS_URL"
run redis "$PY" -c "import redis, sys; redis.Redis.from_url(sys.argv[1]).flushdb()" "$REDIS_URL"
readme_command "celery -A proj worker"
echo "  ${words[*]} --concurrency 2"
start worker "$VENV/bin/${words[0]}" "${words[@]:1}" --concurrency 2
readme_command "celery -A proj beat"
echo "  ${words[*]} --schedule \$WORK/celerybeat-schedule"
start beat "$VENV/bin/${words[0]}" "${words[@]:1}" --schedule "$WORK/celerybeat-schedule"
for _ in $(seq 1 300); do grep -q " ready\.$" "$WORK/worker.log" && break; sleep 0.2; done
grep -q " ready\.$" "$WORK/worker.log" || fail "the worker did not become ready"
for _ in $(seq 1 100); do grep -q "beat v.* is starting" "$WORK/beat.log" && break; sleep 0.2; done
grep -q "beat v.* is starting" "$WORK/beat.log" || fail "celery beat did not start"
run shipped "$PY" "$ROOT/tests/install/drive.py" shipped
cat "$WORK/shipped.log"

# Under one ASGI server: the API's turn, then the browser's. server: daphne or uvicorn.
serve_and_browse() {
  local server=$1 port base pause
  port=$(free_port)
  base="http://127.0.0.1:$port"
  step "$server serving the project on $base: start -> pause -> approve (API) -> completed"
  readme_command "$server "
  if [ "$server" = daphne ]; then
    words+=(-b 127.0.0.1 -p "$port")
  else
    words+=(--host 127.0.0.1 --port "$port")
  fi
  echo "  ${words[*]}"
  start "$server" "$VENV/bin/${words[0]}" "${words[@]:1}"
  local group=${groups[-1]}
  wait_for_port "$server" "$port"
  "$PY" "$ROOT/tests/install/drive.py" api "$base" "$token" || fail "driving a turn under $server"

  step "$server, in Chromium: the review page, an answer in the admin, the live viewer, Swagger UI"
  pause=$("$PY" "$ROOT/tests/install/drive.py" pause "$base" "$token") \
    || fail "no pending pause to review under $server"
  "$BUILD_PY" "$ROOT/tests/install/browse.py" --chromium "$CHROMIUM" --base "$base" \
    --user reviewer --password "$password" --pause "$pause" --shots "$SHOTS/$server" \
    || fail "the browser's review under $server"
  if grep -n -E "Traceback|Error" "$WORK/$server.log" | grep -v -i "warning"; then
    fail "$server logged errors (above)"
  fi
  stop_group "$group"
}
serve_and_browse daphne
serve_and_browse uvicorn

cd "$ROOT" || exit 1
echo
echo "  screenshots: $(cd "$SHOTS" && find . -name '*.png' | sed 's|^\./||' | sort | tr '\n' ' ')"
echo "  in $SHOTS and $ARTIFACTS"
echo "install check: PASS ($((SECONDS - started)) s)"
