#!/usr/bin/env bash
# Install mockbroker with its test dependencies (pip, npm, Maven, Go modules) and run the whole test suite.
# Downloads are cached in the usual per-user caches (~/.cache/pip, ~/.npm, ~/.m2, ~/go/pkg/mod).
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
if command -v mvn >/dev/null 2>&1 && command -v javac >/dev/null 2>&1; then
  # kafka-clients for the Java Admin client test, into ~/.m2 once: the test itself then runs offline
  (cd tests/integration/java && mvn -q -B dependency:resolve dependency:build-classpath -Dmdep.outputFile=cp.txt) \
    || echo "Maven could not resolve kafka-clients: the Java Admin client test will be skipped" >&2
else
  echo "mvn or javac not found: the Java Admin client test will be skipped" >&2
fi
if command -v go >/dev/null 2>&1; then
  # franz-go for the Go consumer-group test: modules from the Go proxy into ~/go/pkg/mod, build cache ~/.cache/go-build
  (cd tests/integration/go && go build -o bin/groupconsumers .) \
    || echo "go build failed: the franz-go test will be skipped" >&2
else
  echo "go not found: the franz-go test will be skipped" >&2
fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
