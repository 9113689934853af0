#!/usr/bin/env bash
# Install mockbroker into ./.venv (if needed) and start it. Extra arguments go to `mockbroker serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/mockbroker ]; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --upgrade pip
  .venv/bin/pip install --quiet -e .
fi
exec .venv/bin/mockbroker serve "$@"
