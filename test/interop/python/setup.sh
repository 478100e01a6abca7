#!/usr/bin/env bash
# Creates (or updates) the virtualenv of the Python interop suites in test/interop/.venv, installs the pinned
# requirements of the Python suite (this folder) and of the fuzz suite (../fuzz: Schemathesis) into it, and prints
# the path of its python as the last line. The interop runner calls it, then runs `<that python> -m pytest` in each
# suite's folder with the PORTCULLIS_* variables set.
# Needs python3 >= 3.11 (Schemathesis 4 needs it) with the venv module; PYTHON picks another interpreter.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$(cd "$here/.." && pwd)/.venv"
if [ ! -x "$venv/bin/python" ]; then
  "${PYTHON:-python3}" -m venv "$venv" >&2
fi
printf '*\n' > "$venv/.gitignore" # the whole virtualenv stays out of version control
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt" -r "$here/../fuzz/requirements.txt" >&2
echo "$venv/bin/python"
