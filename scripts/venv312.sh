#!/usr/bin/env bash
# Build .venv312 (Python 3.12, Django 6.x) for the second leg, if python3.12 exists.
set -u
cd "$(dirname "$0")/.."
py=""
for cand in $(ls -d /root/.pyenv/versions/3.12*/bin/python3.12 2>/dev/null | sort -V | tail -1) python3.12; do
  if "$cand" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then py=$cand; break; fi
done
if [ -z "$py" ]; then
  echo "NOTE: python3.12 is not available; the Django 6 leg will not run."
  exit 0
fi
[ -x .venv312/bin/python ] || "$py" -m venv .venv312
.venv312/bin/python -m pip install -q --upgrade pip
.venv312/bin/python -m pip install -q -e ".[dev]" "Django>=6.0,<7"
touch .venv312/.installed
