# make demo  - set up from nothing and serve the example on 127.0.0.1:8000 (SQLite, no services)
# make smoke - the demo's headless mode: start -> pause -> approve -> continuation -> completed
# make test  - set up from nothing and run every test (PostgreSQL, SQLite, Django 5.2 and 6.x),
#              the packaging and README install check included; under CI no leg may be skipped
# make install-check - only the wheel + README install path (scripts/install_check.sh)
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install install312 services chromium node test install-check demo smoke bench lint clean

# The app with its extras, and the dependency group the target needs (pip >= 25.1 reads
# [dependency-groups]; the first step brings it): `demo` is the server and the URL parser,
# `dev` everything the tests, linters and benchmarks use.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[redis,postgres,langgraph,pydantic-ai,openai-agents]" --group dev
	touch $(VENV)/.demo-installed $@

$(VENV)/.demo-installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[langgraph]" --group demo
	touch $@

install: $(VENV)/.installed

.venv312/.installed: pyproject.toml
	bash scripts/venv312.sh

install312: .venv312/.installed

services:
	bash scripts/services.sh

chromium:
	bash scripts/chromium.sh

# The real @ag-ui/client the AG-UI Node test drives (tests/ag_ui/client, its lock committed).
tests/ag_ui/client/node_modules/.installed: tests/ag_ui/client/package-lock.json
	npm ci --prefix tests/ag_ui/client --no-audit --no-fund
	touch $@

node: tests/ag_ui/client/node_modules/.installed

test: install install312 services chromium node
	$(VENV)/bin/ruff check symfonic_django example_project tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	SYMFONIC_DEMO=1 $(PY) manage.py check --fail-level WARNING
	SYMFONIC_DEMO=1 $(PY) manage.py makemigrations --check --dry-run
	bash scripts/install_check.sh
	bash scripts/test.sh

install-check: install services chromium
	bash scripts/install_check.sh

# The demo runs with DEBUG on and the built-in (public) key; nothing else does.
demo: export SYMFONIC_DEMO = 1
demo: $(VENV)/.demo-installed
	$(PY) manage.py migrate --noinput -v0
	$(PY) manage.py seed_demo --pauses 3 --showcase > .demo-seed.txt
	@echo
	@echo "symfonic_django demo on http://$(HOST):$(PORT)/ (the reviewers' inbox)"
	@echo "  inbox:  http://$(HOST):$(PORT)/admin/symfonic_django/pause/inbox/"
	@echo "  admin:  http://$(HOST):$(PORT)/admin/"
	@echo "  API:    http://$(HOST):$(PORT)/api/symfonic/schema/swagger-ui/"
	@echo "  a turn to watch: approve the slow_refund pause (Refund 42, below) as alice"
	@echo "  logins: admin / admin-demo-pw   alice / alice-demo-pw (acme)   bob / bob-demo-pw (globex)"
	@cat .demo-seed.txt
	@echo
	$(VENV)/bin/daphne -b $(HOST) -p $(PORT) example_project.asgi:application

# Its own database, so a smoke run never leaves its answered pause in the demo's.
smoke: export SYMFONIC_DEMO = 1
smoke: export SQLITE_PATH = smoke.sqlite3
smoke: $(VENV)/.demo-installed
	rm -f smoke.sqlite3
	$(PY) manage.py migrate --noinput -v0
	$(PY) manage.py demo --smoke

bench: install services
	$(PY) bench/bench_tokens.py
	$(PY) bench/bench_continuations.py
	$(PY) bench/bench_pause_list.py
	$(PY) bench/bench_ws_latency.py
	$(PY) bench/bench_ws_fanout.py
	$(PY) bench/bench_scale.py
	$(PY) bench/bench_checkpoint.py

lint: install
	$(VENV)/bin/ruff check symfonic_django example_project tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

clean:
	rm -rf $(VENV) .venv312 demo.sqlite3 smoke.sqlite3 artifacts .demo-seed.txt
