# Toolchain steps of scripts/test.sh, one function a step; sourced, run from the repository root.
#
# Each step builds what the non-Python client tests need: npm ci (kafkajs), the Maven resolve of
# kafka-clients (Java clients, writes cp.txt), go build (franz-go), the Maven resolve of Spark's Kafka
# connector (PySpark tests, writes tests/integration/spark/cp.txt), the Maven resolve of a real Kafka
# broker and its command-line tools (side-by-side tests, writes bench/realkafka/cp-4.4.0.txt), the apt-get install of Chromium and
# chromedriver (the report.html browser test, test_report_html.py), the apt-get install of podman with
# its base image (the container image and compose test, test_container.py).  When a toolchain is missing or
# its step fails, the step warns that those tests will be skipped and returns 0 -- unless CI is set
# (to anything but empty, 0, false, no or off, as tests/toolchains.py reads it): then it prints an
# error naming the step and returns 1, because CI must run every client's tests.
# Downloads go to the usual per-user caches (~/.npm, ~/.m2, ~/go/pkg/mod, ~/.cache/go-build); Chromium
# is a system package (Debian's chromium and chromium-driver), installed as root or with sudo -n; podman
# too, and its base image lives in root's podman storage (scripts/container_engine.sh).

# ci_enabled: whether CI is set to a value that means CI.
ci_enabled() {
  local ci=${CI:-}
  case "${ci,,}" in
    "" | 0 | false | no | off) return 1 ;;
    *) return 0 ;;
  esac
}

# toolchain_unavailable STEP PROBLEM TESTS: under CI an error and status 1, otherwise a warning and 0.
toolchain_unavailable() {
  local step=$1 problem=$2 tests=$3
  if ci_enabled; then
    echo "ERROR: toolchain step '$step' failed: $problem; $tests cannot run, and with CI=$CI they must" >&2
    return 1
  fi
  echo "WARNING: toolchain step '$step': $problem; $tests will be skipped" >&2
  return 0
}

# missing_tools TOOL...: prints the TOOLs not on PATH; status 0 when some are missing, 1 when none is.
missing_tools() {
  local tool absent=()
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || absent+=("$tool")
  done
  [ "${#absent[@]}" -ne 0 ] || return 1
  echo "${absent[*]}"
}

# npm ci in tests/integration/js: kafkajs and its codec plugins into node_modules.
toolchain_npm() {
  local step="npm ci" dir=tests/integration/js rc=0
  local tests="the kafkajs tests (test_kafkajs.py, test_kafkajs_group.py, test_control_kafkajs.py)"
  local absent
  if absent=$(missing_tools node npm); then
    toolchain_unavailable "$step" "not found on PATH: $absent" "$tests"
    return
  fi
  if [ ! -f "$dir/package-lock.json" ]; then
    toolchain_unavailable "$step" "$dir/package-lock.json is missing" "$tests"
    return
  fi
  # kafkajs-lz4 builds a native module: point node-gyp at the system Node headers (no download)
  (
    cd "$dir" || exit
    if [ -f /usr/include/node/node.h ]; then export npm_config_nodedir=/usr; fi
    npm ci --no-audit --no-fund --loglevel=error
  ) || rc=$?
  if [ "$rc" -ne 0 ]; then
    toolchain_unavailable "$step" "npm ci in $dir exited $rc" "$tests"
    return
  fi
  if [ ! -f "$dir/node_modules/kafkajs/package.json" ]; then
    toolchain_unavailable "$step" "npm ci in $dir left no node_modules/kafkajs" "$tests"
    return
  fi
}

# maven_resolve STEP DIR WHAT TESTS TOOL...: in DIR, Maven resolves the pom's dependencies into ~/.m2 and
# writes their classpath to cp.txt (so the tests then run offline); TOOLs must be on PATH.  MAVEN_CP names
# another classpath file, MAVEN_PROPS (-Dname=value ...) sets the pom's properties.
maven_resolve() {
  local step=$1 dir=$2 what=$3 tests=$4 rc=0 absent cp=${MAVEN_CP:-cp.txt} props=()
  read -r -a props <<< "${MAVEN_PROPS:-}"
  shift 4
  if absent=$(missing_tools "$@"); then
    toolchain_unavailable "$step" "not found on PATH: $absent" "$tests"
    return
  fi
  (
    cd "$dir" || exit
    mvn -q -B "${props[@]}" dependency:resolve dependency:build-classpath -Dmdep.outputFile="$cp"
  ) || rc=$?
  if [ "$rc" -ne 0 ]; then
    toolchain_unavailable "$step" "mvn could not resolve $what in $dir (exit $rc)" "$tests"
    return
  fi
  if [ ! -s "$dir/$cp" ]; then
    toolchain_unavailable "$step" "mvn left no classpath in $dir/$cp" "$tests"
    return
  fi
}

# Maven resolve in tests/integration/java: kafka-clients for the Java client tests.
toolchain_maven() {
  maven_resolve "Maven resolve" tests/integration/java kafka-clients \
    "the Java client tests (test_java_admin_quotas.py, test_java_consumer_groups.py, test_kafka_messages_java.py, test_admin_kafka44.py)" \
    java javac mvn
}

# The Kafka release of the side-by-side tests and the benchmarks (bench/brokers.py's KAFKA_VERSION).
REALKAFKA_VERSION=4.4.0

# Maven resolve in bench/realkafka: a real Kafka broker (kafka_2.13) and Kafka's command-line tools
# (kafka-tools) for the side-by-side tests (tests/integration/realkafka.py) and the benchmarks; writes
# bench/realkafka/cp-4.4.0.txt, which bench/brokers.py's kafka_classpath() then reads offline.
toolchain_realkafka() {
  MAVEN_CP="cp-$REALKAFKA_VERSION.txt" MAVEN_PROPS="-Dkafka.version=$REALKAFKA_VERSION" \
    maven_resolve "Kafka resolve" bench/realkafka "kafka_2.13 and kafka-tools $REALKAFKA_VERSION" \
    "the side-by-side tests with a real Kafka (test_kafka_tools.py)" java mvn
}

# go build in tests/integration/go: the franz-go program, bin/groupconsumers (modules from the Go proxy);
# main.go is the group test's command, control.go the `groupconsumers control` one, txn.go `groupconsumers txn`.
toolchain_go() {
  local step="go build" dir=tests/integration/go rc=0
  local tests="the franz-go tests (test_franz_go_group.py, test_control_franz_go.py, test_transactions_franz_go.py)"
  local absent
  if absent=$(missing_tools go); then
    toolchain_unavailable "$step" "not found on PATH: $absent" "$tests"
    return
  fi
  (
    cd "$dir" || exit
    go build -o bin/groupconsumers .
  ) || rc=$?
  if [ "$rc" -ne 0 ]; then
    toolchain_unavailable "$step" "go build in $dir exited $rc" "$tests"
    return
  fi
  if [ ! -x "$dir/bin/groupconsumers" ]; then
    toolchain_unavailable "$step" "go build in $dir left no bin/groupconsumers" "$tests"
    return
  fi
}

# Maven resolve in tests/integration/spark: Spark's Kafka connector (spark-sql-kafka-0-10) and its
# dependencies; the PySpark tests pass those jars to Spark as local files (spark.jars), so they run
# offline.  PySpark itself comes from pip (the `spark` extra).
toolchain_spark() {
  maven_resolve "Spark connector resolve" tests/integration/spark spark-sql-kafka-0-10 \
    "the PySpark tests (test_spark_*.py, examples/spark)" java mvn
}

# apt-get install of Debian's chromium and chromium-driver (chromium and chromedriver on PATH), which
# the report.html test drives headless through Selenium.  Nothing to do when both are on PATH already
# (the usual case: this runs at every CI start).  apt-get runs as root, or through passwordless sudo;
# the package lists are fetched (apt-get update) only when the install cannot find the packages, as
# in a fresh image whose lists are absent or older than the mirror.
toolchain_chromium() {
  local step="Chromium install" rc=0
  local tests="the report.html browser test (test_report_html.py)"
  local absent apt=(apt-get)
  absent=$(missing_tools chromium chromedriver) || return 0
  if ! command -v apt-get >/dev/null 2>&1; then
    toolchain_unavailable "$step" "not found on PATH: $absent (and no apt-get to install chromium chromium-driver)" "$tests"
    return
  fi
  if [ "$EUID" -ne 0 ]; then
    if ! { command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; }; then
      toolchain_unavailable "$step" "not found on PATH: $absent (installing chromium chromium-driver needs root or passwordless sudo)" "$tests"
      return
    fi
    apt=(sudo -n DEBIAN_FRONTEND=noninteractive apt-get)  # sudo drops the caller's environment
  fi
  local install=(install -y -qq --no-install-recommends chromium chromium-driver)
  # first with the package lists there are (its errors are the retry's to report), then once more after
  # apt-get update
  if ! DEBIAN_FRONTEND=noninteractive "${apt[@]}" "${install[@]}" >/dev/null 2>&1; then
    { DEBIAN_FRONTEND=noninteractive "${apt[@]}" update -qq &&
      DEBIAN_FRONTEND=noninteractive "${apt[@]}" "${install[@]}"; } || rc=$?
  fi
  if [ "$rc" -ne 0 ]; then
    toolchain_unavailable "$step" "apt-get could not install chromium chromium-driver (exit $rc)" "$tests"
    return
  fi
  hash -r
  if absent=$(missing_tools chromium chromedriver); then
    toolchain_unavailable "$step" "apt-get installed chromium chromium-driver but left $absent off PATH" "$tests"
    return
  fi
}

# apt-get install of the container path's packages (scripts/container_engine.sh's CE_PACKAGES: podman,
# podman-compose, runc, debootstrap, netavark, aardvark-dns, iptables), then the base image the container
# test builds on (containers.conf, debootstrap of bookworm with python3-venv, podman import; about 40 s,
# once).  As root only: the test runs podman as root.  Nothing is installed when all of it is there;
# apt-get update runs only when the install needs it.
toolchain_podman() {
  local step="podman install" rc=0 uid absent
  local tests="the container image and compose test (test_container.py)"
  uid=$(id -u 2>/dev/null) || uid=$EUID
  if [ "$uid" != 0 ]; then
    toolchain_unavailable "$step" "podman runs as root for the container test (its storage, networks, debootstrap), and this is uid $uid" "$tests"
    return
  fi
  local here=${BASH_SOURCE[0]%/*}
  [ "$here" = "${BASH_SOURCE[0]}" ] && here=.
  # shellcheck source=scripts/container_engine.sh
  source "$here/container_engine.sh"
  if absent=$(ce_missing) && ! command -v apt-get >/dev/null 2>&1; then
    toolchain_unavailable "$step" "not found: $absent (and no apt-get to install ${CE_PACKAGES[*]})" "$tests"
    return
  fi
  absent=$(ce_install 2>&1 >/dev/null) || rc=$?
  if [ "$rc" -eq 200 ]; then
    toolchain_unavailable "$step" "apt-get installed ${CE_PACKAGES[*]} but left $absent missing" "$tests"
    return
  elif [ "$rc" -ne 0 ]; then
    [ -n "$absent" ] && echo "$absent" >&2
    toolchain_unavailable "$step" "apt-get could not install ${CE_PACKAGES[*]} (exit $rc)" "$tests"
    return
  fi
  if ! ce_conf >/dev/null; then
    toolchain_unavailable "$step" "could not write $CE_WORK/containers.conf" "$tests"
    return
  fi
  ce_base || rc=$?
  if [ "$rc" -ne 0 ]; then
    toolchain_unavailable "$step" "could not make the base image $CE_BASE (exit $rc)" "$tests"
    return
  fi
  if ! podman image exists "$CE_BASE"; then
    toolchain_unavailable "$step" "podman has no base image $CE_BASE after making it" "$tests"
    return
  fi
}

# toolchain_steps: every step (each reports its own problem); under CI, status 1 when any failed.
toolchain_steps() {
  local failed=()
  toolchain_npm || failed+=("npm ci")
  toolchain_maven || failed+=("Maven resolve")
  toolchain_go || failed+=("go build")
  toolchain_spark || failed+=("Spark connector resolve")
  toolchain_realkafka || failed+=("Kafka resolve")
  toolchain_chromium || failed+=("Chromium install")
  toolchain_podman || failed+=("podman install")
  if [ "${#failed[@]}" -ne 0 ]; then
    local joined
    joined=$(printf "'%s', " "${failed[@]}")
    echo "ERROR: CI=${CI:-} and toolchain step(s) ${joined%, } failed (see above): not running the tests" >&2
    return 1
  fi
}
