#!/usr/bin/env bash
# Runs a deploy/check script with the Python packages of deploy/check/requirements.txt,
# installing them with pip (from PyPI) only when one is missing.
#
#   scripts/deploy-python.sh deploy/check/deploy.py check
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" - <<'PY' 2>/dev/null
import importlib.metadata as m, re, sys
for line in open("deploy/check/requirements.txt"):
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, op, version = re.match(r"([A-Za-z0-9_.-]+)\s*(==|>=)?\s*(\S*)", line).groups()
    have = m.version(name)  # raises when missing
    if op == "==" and have != version:
        sys.exit(1)
PY
then
  echo "deploy-python: installing deploy/check/requirements.txt" >&2
  "$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
    -r deploy/check/requirements.txt
fi
exec "$PYTHON" "$@"
