#!/usr/bin/env bash
# Install mockbroker with its test dependencies (pip, npm, Maven, Go modules) and run the whole test suite.
# With CI set (CI=true), every client's toolchain must be there and build: no client's tests may skip for lack of it.
# Downloads are cached in the usual per-user caches (~/.cache/pip, ~/.npm, ~/.m2, ~/go/pkg/mod).
#
#   bash scripts/test.sh [PYTEST ARGS]           everything (what CI runs), the slowest tests listed at the end
#   bash scripts/test.sh --quick [PYTEST ARGS]   the edit loop: tests/unit on both cores with a smaller Hypothesis
#                                                profile, without the report's Spark runs, the project checks (types,
#                                                dead code, benchmarks, CI files) and the coverage-guided fuzzing;
#                                                about 3 minutes on 2 cores.  No toolchain is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == "--quick" ]]; then
    shift
    if [[ ! -x .venv/bin/python ]]; then
        python3 -m venv .venv
        .venv/bin/pip install --quiet --upgrade pip
        .venv/bin/pip install --quiet -e '.[test]'
    fi
    export HYPOTHESIS_PROFILE=quick
    exec .venv/bin/python -m pytest -q -p no:cacheprovider -n 2 tests/unit \
        --ignore=tests/unit/report --ignore=tests/unit/project \
        -k "not atheris and not every_endpoint_conforms" "$@"
fi
python3 -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet -e '.[test,spark,report]'
# npm ci (kafkajs), Maven resolve (Java clients), go build (franz-go), Maven resolve (Spark's Kafka
# connector), apt-get install of Chromium (report.html in a browser), apt-get install of podman and its
# debootstrapped base image (the container test, as root): see scripts/toolchains.sh.
# Without a toolchain those tests skip; with CI set a missing toolchain or a failed step stops here.
source scripts/toolchains.sh
toolchain_steps || exit 1
exec .venv/bin/python -m pytest -q -p no:cacheprovider --durations=30 "$@"
