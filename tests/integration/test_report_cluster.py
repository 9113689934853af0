"""The report on a real Spark cluster (docs/report.md, "On a Spark cluster"): a standalone master and two
workers started from PySpark's own jars on loopback (``spark-class org.apache.spark.deploy.master.Master``
and ``org.apache.spark.deploy.worker.Worker``, one core each, bound to 127.0.0.1), and ``mockbroker
report --master spark://127.0.0.1:PORT`` over the same journals as ``--master local[2]``: every table
has the same rows in the same order, byte for byte, and report.md and report.html are the same bytes.

The tables are compared as their rows (JSON lines, in the file's order) and schema, not as the
Parquet files' bytes: parquet-mr writes each column chunk's encodings from a hash set whose order
differs between JVMs, so two writes of the same rows differ in those bytes only.

The cluster's processes run in process groups of their own and are ended (SIGTERM, then SIGKILL)
by a finalizer, whatever the test's outcome; every wait is bounded.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mockbroker.report import synthetic as S
from tests.toolchains import unavailable

CLIENTS = [S.SyntheticClient("at-deadline", "deadline", "kafka-python", "3.0.12"),
           S.SyntheticClient("early", "early", "librdkafka", "2.11"),
           S.SyntheticClient("half", "partly", "aiokafka", "0.14.0"),
           S.SyntheticClient("quiet", "never", "librdkafka", "2.11")]
START_S = 120       # the master and a worker each take a few seconds; a loaded machine, more
REPORT_S = 420


def _spark_home() -> str:
    try:
        import pyspark
    except ImportError:
        unavailable("the report's cluster test cannot run: pyspark is not installed (pip install -e '.[report]')")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        unavailable("the report's cluster test cannot run: java not found on PATH (Spark needs a JDK 17+)")
    home = os.path.dirname(pyspark.__file__)
    if not os.path.exists(os.path.join(home, "bin", "spark-class")):
        unavailable(f"the report's cluster test cannot run: no bin/spark-class in {home}")
    return home


def _env(home: str) -> dict[str, str]:
    """Everything on loopback; the executors' Python is this one; no REST server (its port is fixed)."""
    return {**os.environ, "SPARK_HOME": home, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_HOSTNAME": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": os.getcwd(),
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false", "SPARK_NO_DAEMONIZE": "1"}


def _wait_for(log: Path, pattern: str, proc: subprocess.Popen[bytes], timeout_s: float) -> re.Match[str]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        m = re.search(pattern, log.read_text(errors="replace")) if log.exists() else None
        if m:
            return m
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args[2]} exited {proc.returncode}: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.2)
    raise AssertionError(f"no {pattern!r} in {log} within {timeout_s} s: {log.read_text(errors='replace')[-2000:]}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, request) -> str:
    """spark://127.0.0.1:PORT of a standalone master with two one-core workers, ended after the module."""
    home = _spark_home()
    root = tmp_path_factory.mktemp("spark-cluster")
    env = _env(home)
    procs: list[subprocess.Popen[bytes]] = []

    def end() -> None:
        for p in reversed(procs):  # the workers (and their executors) first, then the master
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
        for p in reversed(procs):
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(10)
    request.addfinalizer(end)

    def start(name: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        log = root / f"{name}.log"
        with open(log, "wb") as out:
            p = subprocess.Popen([os.path.join(home, "bin", "spark-class"), *args], env=env, stdout=out,
                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        procs.append(p)
        return p, log

    master, log = start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "0",
                        "--webui-port", "0")
    url = _wait_for(log, r"Starting Spark master at (spark://127\.0\.0\.1:\d+)", master, START_S).group(1)
    workers = []
    for i in (1, 2):
        work = root / f"worker-{i}"
        work.mkdir()
        workers.append(start(f"worker-{i}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                             "--port", "0", "--webui-port", "0", "--cores", "1", "--memory", "2g",
                             "--work-dir", str(work), url))
    for p, wlog in workers:
        _wait_for(wlog, r"Successfully registered with master", p, START_S)
    return url


def _report(journal: Path, out: Path, master: str) -> str:
    env = _env(os.path.dirname(__import__("pyspark").__file__))
    p = subprocess.run([sys.executable, "-m", "mockbroker", "report", str(journal), "--out", str(out), "--master",
                        master, "--progress-every", "0"], check=False, capture_output=True, text=True,
                       timeout=REPORT_S, env=env)
    assert p.returncode == 0, p.stderr[-4000:]
    return p.stderr


#: Run in a child process (a SparkSession of its own, beside the tests' shared one): for each
#: tables directory named, each table's schema and rows as JSON lines in the file's order.
_READ = """
import json, os, sys
from mockbroker.report import job
spark = job.spark_session("local[1]", "test-report-cluster-read")
out = []
for tables in sys.argv[1:]:
    out.append({})
    for t in sorted(os.listdir(tables)):
        files = [f for f in os.listdir(os.path.join(tables, t)) if f.endswith(".parquet")]
        df = spark.read.parquet(*(os.path.join(tables, t, f) for f in files))
        out[-1][t] = [len(files), df.schema.json(), df.toJSON().collect()]
print(json.dumps(out))
"""


def _tables(*outs: Path) -> list[dict[str, tuple[str, list[str]]]]:
    """For each report directory, each table's schema and rows, from its one Parquet file (one JVM)."""
    env = _env(os.path.dirname(__import__("pyspark").__file__))
    p = subprocess.run([sys.executable, "-c", _READ, *(str(out / "tables") for out in outs)], check=False,
                       capture_output=True, text=True, timeout=REPORT_S, env=env)
    assert p.returncode == 0, p.stderr[-4000:]
    read = []
    for got in json.loads(p.stdout.strip().splitlines()[-1]):
        assert all(n == 1 for n, _, _ in got.values()), {t: n for t, (n, _, _) in got.items()}
        read.append({t: (schema, rows) for t, (_, schema, rows) in got.items()})
    return read


@pytest.mark.timeout(900)  # the cluster's start and two reports on a loaded two-core machine
def test_the_report_on_a_standalone_cluster_equals_local(cluster, tmp_path):
    journal = tmp_path / "journal"
    S.write_journal(journal, CLIENTS, requests=20, connections=2, gzip_segments=True, segment_records=25,
                    bootstrap=True)
    S.write_journal(journal, CLIENTS[:3], requests=15, start_wall_ms=S.START_WALL_MS + 900_000, mode="mute",
                    after_throttle=True)
    local, remote = tmp_path / "local", tmp_path / "cluster"
    _report(journal, local, "local[2]")
    err = _report(journal, remote, cluster)
    assert f"Spark master {cluster}" in err
    a, b = _tables(local, remote)
    assert set(a) == {"acks_all", "api_verdicts", "connections", "error_codes", "long_poll", "quota_rates", "rate",
                      "requests", "throttles", "verdicts", "windowed_rate"}
    assert a == b
    verdicts = [json.loads(r) for r in a["verdicts"][1]]
    assert {(v["client_id"], v["verdict"]) for v in verdicts} == \
           {("at-deadline", "honours"), ("early", "ignores"), ("half", "partly"), ("quiet", "not throttled")}
    assert len(a["windowed_rate"][1]) > 100  # the quota sensors were replayed on the executors
    for name in ("report.md", "report.html"):
        assert (local / name).read_bytes() == (remote / name).read_bytes(), name
