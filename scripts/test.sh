#!/usr/bin/env bash
# Install mockbroker with its test dependencies (pip, npm) and run the whole test suite.
# Downloads are cached in the usual per-user caches (~/.cache/pip, ~/.npm).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet -e '.[test]'
if command -v npm >/dev/null 2>&1 && [ -f tests/integration/js/package-lock.json ]; then
  # kafkajs-lz4 builds a native module: point node-gyp at the system Node headers (no download)
  if [ -f /usr/include/node/node.h ]; then export npm_config_nodedir=/usr; fi
  (cd tests/integration/js && npm ci --no-audit --no-fund --loglevel=error)
else
  echo "npm not found: the kafkajs tests will be skipped" >&2
fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
