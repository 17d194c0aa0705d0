#!/usr/bin/env bash
# Print the path of a Python 3.12 interpreter ($PYTHON312 when set, else pyenv's newest 3.12,
# else python3.12 on PATH), or nothing when there is none. Used by venv312.sh and
# install_check.sh.
pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}
for cand in ${PYTHON312:-} $(ls -d "$pyenv_root"/versions/3.12*/bin/python3.12 2>/dev/null | sort -V | tail -1) python3.12; do
  if "$cand" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then
    command -v "$cand"
    exit 0
  fi
done
