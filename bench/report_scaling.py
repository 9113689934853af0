"""The throttle-conformance report (`mockbroker report`, docs/report.md) on a large synthetic journal:
Spark local[1] against local[2] (the scaling on two cores), and a single-process reference (DuckDB)
computing the same aggregates from the same files, in one run.

Input: ``mockbroker.report.synthetic`` writes one run's journal of ``--requests`` records (default
10,000,000) over ``--connections`` connections (default 1,000): ten clients (four send every request
at the throttle deadline, three 100 ms early, three are never throttled), each on a tenth of the
connections, every connection an ApiVersions request then Produce v9 requests throttled 500 ms in
observe mode; plain segments of 500,000 records (about 0.9 KB a record).  The journal is written
once into ``--dir`` and reused while its parameters match (``bench.json`` there).

Each measured run is a child process, its peak memory taken by polling the resident set size of
the process and its children every 0.2 s:

* ``spark local[N]``: ``python -m mockbroker report DIR --out ... --master local[N]``, the JVM
  started with ``--driver-memory`` (``--driver-memory``, default 4g, the same for both); wall time
  from start to exit (JVM start-up included, stated separately: the wall time of the same command
  on a 1-record journal), records/s, peak RSS of the Python driver and of the JVM (the driver: in
  local mode the executors are threads of it);
* ``duckdb``: this file with ``--reference``: DuckDB reads the same segments and computes the
  ``verdicts`` and ``requests`` tables with the job's rules (the next request on each connection
  by a window, pipelined, judged, early, the verdict thresholds); its threads are set to 2.

Then the Spark tables (read back from the report's Parquet output) are compared with DuckDB's row
by row: the bench fails if they differ.

Usage: .venv/bin/python bench/report_scaling.py [--requests 10000000] [--connections 1000]
       [--dir /tmp/mockbroker-report-bench] [--driver-memory 4g] [--only spark1,spark2,duckdb]
Needs the report and bench extras (pip install -e '.[report,bench]') and a JDK; without them it
says why and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from mockbroker.report import synthetic as S

SEGMENT_RECORDS = 500_000
CLIENTS = ([S.SyntheticClient(f"deadline-{i}", "deadline", "kafka-python", "3.0.12") for i in range(4)]
           + [S.SyntheticClient(f"early-{i}", "early", "librdkafka", "2.11.1") for i in range(3)]
           + [S.SyntheticClient(f"quiet-{i}", "never", "librdkafka", "2.11.1") for i in range(3)])
VERDICT_COLS = ["client_id", "requests", "throttles", "judged", "violations_obliged", "verdict"]


def journal(directory: str, total: int, connections: int) -> tuple[int, float]:
    """Write (or reuse) the journal: returns (records, seconds spent writing, 0 when reused)."""
    per_client = connections // len(CLIENTS)
    requests = total // (per_client * len(CLIENTS)) - 1  # Produce per connection, after its ApiVersions
    params = {"clients": [c.client_id for c in CLIENTS], "connections": per_client, "requests": requests,
              "segment_records": SEGMENT_RECORDS, "version": 1}
    n = (requests + 1) * per_client * len(CLIENTS)
    marker = os.path.join(directory, "bench.json")
    if os.path.exists(marker):
        with open(marker) as f:
            if json.load(f) == params:
                return n, 0.0
    shutil.rmtree(directory, ignore_errors=True)
    t = time.monotonic()
    S.write_journal(directory, CLIENTS, requests, connections=per_client, segment_records=SEGMENT_RECORDS)
    with open(marker, "w") as f:
        json.dump(params, f)
    return n, time.monotonic() - t


def measure(cmd: list[str], env: dict[str, str], cwd: str | None = None) -> dict[str, Any]:
    """Run ``cmd`` (in ``cwd``); wall seconds, peak RSS (MiB) of the Python process and of its java
    children, and the CPU seconds of each (as last seen by the 0.2 s poll: a process's last 0.2 s
    may be missed)."""
    import psutil
    t = time.monotonic()
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc = psutil.Process(p.pid)
    peak = {"python": 0, "jvm": 0, "total": 0}
    cpu: dict[int, tuple[str, float]] = {}  # pid -> (python | jvm, user + system seconds)
    out: list[str] = []
    err: list[str] = []
    import threading
    readers = [threading.Thread(target=lambda s, b: b.extend(s), args=(p.stdout, out), daemon=True),
               threading.Thread(target=lambda s, b: b.extend(s), args=(p.stderr, err), daemon=True)]
    for r in readers:
        r.start()
    while p.poll() is None:
        try:
            procs = [proc, *proc.children(recursive=True)]
            rss = {"python": 0, "jvm": 0}
            for q in procs:
                try:
                    kind = "jvm" if "java" in q.name() else "python"
                    rss[kind] += q.memory_info().rss
                    times = q.cpu_times()
                    cpu[q.pid] = (kind, times.user + times.system)
                except psutil.Error:
                    pass
            for k in ("python", "jvm"):
                peak[k] = max(peak[k], rss[k])
            peak["total"] = max(peak["total"], rss["python"] + rss["jvm"])
        except psutil.Error:
            pass
        time.sleep(0.2)
    wall = time.monotonic() - t
    for r in readers:
        r.join()
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {''.join(err)[-2000:]}")
    return {"wall": wall, "stdout": "".join(out), "stderr": "".join(err),
            **{f"peak_{k}_mib": v / 2**20 for k, v in peak.items()},
            **{f"cpu_{k}_s": sum(c for kind, c in cpu.values() if kind == k) for k in ("python", "jvm")}}


def spark_env(driver_memory: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": ROOT, "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_SUBMIT_ARGS": f"--driver-memory {driver_memory} pyspark-shell"}


def run_spark(directory: str, master: str, out: str, driver_memory: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "mockbroker", "report", directory, "--out", out, "--master", master,
           "--progress-every", "60"]
    return measure(cmd, spark_env(driver_memory))


# The reference: the job's rules (mockbroker/report/job.py) in DuckDB SQL.
REFERENCE_SQL = """
CREATE VIEW raw AS SELECT * FROM read_json({files}, format='newline_delimited', filename=true, columns={{
  'broker': 'BIGINT', 'connection': 'BIGINT', 'client_id': 'VARCHAR', 'principal': 'VARCHAR',
  'client_software_name': 'VARCHAR', 'client_software_version': 'VARCHAR', 'api': 'VARCHAR',
  'api_version': 'BIGINT', 'request_bytes': 'BIGINT', 'arrived_clock_ns': 'BIGINT',
  'sent_clock_ns': 'BIGINT', 'throttle_time_ms': 'BIGINT', 'throttle_mode': 'VARCHAR',
  'client_throttles': 'BOOLEAN', 'mute_end_clock_ns': 'BIGINT', 'seq': 'BIGINT',
  'after_throttle': 'STRUCT(pipelined BOOLEAN, judged BOOLEAN, violation BOOLEAN)'}});
CREATE TABLE rec AS
  WITH r AS (SELECT *, regexp_extract(filename, 'journal-(\\d+)-\\d+\\.jsonl', 1) AS run FROM raw)
  SELECT r.* REPLACE (
      coalesce(r.client_software_name, sw.sn, 'unknown') AS client_software_name,
      coalesce(r.client_software_version, sw.sv, 'unknown') AS client_software_version,
      coalesce(r.client_id, '') AS client_id, coalesce(r.principal, '') AS principal)
  FROM r LEFT JOIN (SELECT run, broker, connection, max(client_software_name) sn,
                           max(client_software_version) sv FROM r GROUP BY ALL) sw
    USING (run, broker, connection);
CREATE TABLE req AS SELECT run, client_id, api, api_version, count(*) AS requests,
  sum(request_bytes) AS request_bytes FROM rec GROUP BY ALL;
CREATE TABLE th AS
  WITH n AS (SELECT *, lead(arrived_clock_ns) OVER w AS next_arrived, lead(after_throttle) OVER w AS nxt_at
             FROM rec WINDOW w AS (PARTITION BY run, broker, connection ORDER BY arrived_clock_ns, seq)),
  t AS (SELECT *, CASE throttle_mode WHEN 'mute' THEN mute_end_clock_ns WHEN 'delay' THEN sent_clock_ns
                  ELSE sent_clock_ns + throttle_time_ms * 1000000 END AS deadline,
               next_arrived IS NOT NULL AS has_next, next_arrived IS NOT NULL AND nxt_at IS NOT NULL AS has_at
        FROM n WHERE throttle_time_ms > 0 AND sent_clock_ns IS NOT NULL),
  p AS (SELECT *, CASE WHEN has_at THEN coalesce(nxt_at.pipelined, false)
                       ELSE has_next AND next_arrived < sent_clock_ns + {pipelined_ns} END AS pipelined FROM t),
  j AS (SELECT *, CASE WHEN has_at AND nxt_at.judged IS NOT NULL THEN nxt_at.judged
                       ELSE has_next AND NOT pipelined AND (throttle_mode = 'observe' OR (throttle_mode = 'mute' AND has_at))
                       END AS judged FROM p)
  SELECT run, client_id, client_throttles, has_next, pipelined, judged,
         has_next AND NOT pipelined AND throttle_mode = 'mute' AND NOT has_at AS undetermined,
         judged AND CASE WHEN has_at THEN coalesce(nxt_at.violation, false)
                         ELSE deadline - next_arrived > {early_ns} END AS early FROM j;
CREATE TABLE verdicts AS
  WITH g AS (SELECT run, client_id, count(*) AS throttles,
                    count(*) FILTER (WHERE client_throttles AND judged) AS judged,
                    count(*) FILTER (WHERE client_throttles AND early) AS violations_obliged,
                    count(*) FILTER (WHERE undetermined) AS undetermined
             FROM th GROUP BY ALL),
  c AS (SELECT run, client_id, sum(requests) AS requests FROM req GROUP BY ALL)
  SELECT c.run, c.client_id, c.requests, coalesce(throttles, 0) AS throttles, coalesce(judged, 0) AS judged,
         coalesce(violations_obliged, 0) AS violations_obliged,
         CASE WHEN coalesce(throttles, 0) = 0 THEN 'not throttled'
              WHEN judged = 0 THEN CASE WHEN undetermined > 0 THEN 'undetermined' ELSE 'no judged throttles' END
              WHEN violations_obliged = 0 THEN 'honours'
              WHEN violations_obliged >= judged * {ignores_share} THEN 'ignores'
              ELSE 'partly' END AS verdict
  FROM c LEFT JOIN g USING (run, client_id);
"""


def reference(directory: str, threads: int) -> dict[str, Any]:
    """The reference's tables, as lists of rows (run in a child process by ``--reference``)."""
    import duckdb

    from mockbroker.quota import verdict
    from mockbroker.report import job
    files = sorted(os.path.join(directory, f) for f in os.listdir(directory) if f.endswith(".jsonl"))
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    con.execute(f"SET temp_directory = '{tempfile.gettempdir()}/mockbroker-bench-duckdb'")
    con.execute(REFERENCE_SQL.format(files=json.dumps(files).replace('"', "'"), pipelined_ns=job.PIPELINED_NS,
                                     early_ns=job.EARLY_TOLERANCE_NS, ignores_share=verdict.IGNORES_SHARE))
    return {"verdicts": con.execute(f"SELECT {', '.join(VERDICT_COLS)} FROM verdicts ORDER BY client_id").fetchall(),
            "requests": con.execute("SELECT client_id, api, api_version, requests, request_bytes FROM req "
                                    "ORDER BY ALL").fetchall(),
            "records": con.execute("SELECT count(*) FROM rec").fetchone()[0]}


def spark_tables(out: str) -> dict[str, Any]:
    """The report's Parquet tables, read back (DuckDB reads Parquet; hive partitions give client_id)."""
    import duckdb
    con = duckdb.connect()

    def q(table: str, cols: str, order: str) -> list[tuple]:
        path = os.path.join(out, "tables", table, "**", "*.parquet")
        return con.execute(f"SELECT {cols} FROM read_parquet('{path}', hive_partitioning=true) "
                           f"ORDER BY {order}").fetchall()
    return {"verdicts": q("verdicts", ", ".join(VERDICT_COLS), "client_id"),
            "requests": q("requests", "client_id, api, api_version, requests, request_bytes", "ALL")}


def _line(n: int, m: dict[str, Any]) -> str:
    return (f"{m['wall']:.1f} s, {n / m['wall']:,.0f} records/s, peak RSS python {m['peak_python_mib']:,.0f} MiB, "
            f"JVM {m['peak_jvm_mib']:,.0f} MiB")


def requirements(modules: tuple[tuple[str, str], ...]) -> str | None:
    """Why a report benchmark cannot run: a module of ``modules`` (module, extra) missing, or no JDK."""
    for mod, extra in modules:
        try:
            __import__(mod)
        except ImportError:
            return f"{mod} is not installed (pip install -e '.[{extra}]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "java not found (Spark needs a JDK 17+)"
    return None


def _requirements() -> str | None:
    return requirements((("pyspark", "report"), ("matplotlib", "report"), ("duckdb", "bench"), ("psutil", "test")))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=10_000_000)
    ap.add_argument("--connections", type=int, default=1_000)
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "mockbroker-report-bench"))
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--only", default="spark1,spark2,duckdb")
    ap.add_argument("--reference", metavar="DIR", help=argparse.SUPPRESS)  # the child process of the reference
    ap.add_argument("--threads", type=int, default=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.reference:
        print(json.dumps(reference(args.reference, args.threads)))
        return 0
    missing = _requirements()
    if missing:
        print(f"bench/report_scaling.py: skipped: {missing}")
        return 0
    n, gen_s = journal(args.dir, args.requests, args.connections)
    size = sum(os.path.getsize(os.path.join(args.dir, f)) for f in os.listdir(args.dir))
    print(f"journal: {n:,} records over {args.connections:,} connections, {size / 2**30:.2f} GiB in {args.dir}"
          + (f" (written in {gen_s:.0f} s)" if gen_s else " (reused)"))
    only = set(args.only.split(","))
    rows: list[tuple[str, dict[str, Any]]] = []
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tiny = os.path.join(tmp, "tiny")
        S.write_journal(tiny, CLIENTS[:1], 0)
        startup = measure([sys.executable, "-m", "mockbroker", "report", tiny, "--out", os.path.join(tmp, "t"),
                           "--master", "local[1]", "--progress-every", "0"], spark_env(args.driver_memory))
        print(f"spark start-up and fixed cost (a 1-record journal, local[1]): {startup['wall']:.1f} s")
        if "duckdb" in only:  # the quickest first; each run's figures are printed as it ends
            m = measure([sys.executable, os.path.abspath(__file__), "--reference", args.dir, "--threads", "2"],
                        {**os.environ, "PYTHONPATH": ROOT})
            results["duckdb"] = json.loads(m["stdout"])
            rows.append(("duckdb (2 threads)", m))
            print(f"  duckdb: {_line(n, m)}", flush=True)
        for label, master in (("spark2", "local[2]"), ("spark1", "local[1]")):
            if label not in only:
                continue
            out = os.path.join(tmp, label)
            m = run_spark(args.dir, master, out, args.driver_memory)
            results[label] = spark_tables(out)
            rows.append((f"spark {master}", m))
            print(f"  spark {master}: {_line(n, m)}", flush=True)
    print(f"\n{'run':<20} {'wall s':>8} {'records/s':>11} {'peak python MiB':>16} {'peak JVM MiB':>13}")
    for label, m in rows:
        print(f"{label:<20} {m['wall']:>8.1f} {n / m['wall']:>11,.0f} {m['peak_python_mib']:>16,.0f} "
              f"{m['peak_jvm_mib']:>13,.0f}")
    walls = {label: m["wall"] for label, m in rows}
    if "spark local[1]" in walls and "spark local[2]" in walls:
        print(f"scaling local[1] / local[2]: {walls['spark local[1]'] / walls['spark local[2]']:.2f}x")
    if "duckdb (2 threads)" in walls:
        for label in ("spark local[1]", "spark local[2]"):
            if label in walls:
                print(f"{label} / duckdb wall: {walls[label] / walls['duckdb (2 threads)']:.1f}x")
    # the same aggregates
    ok = True
    if "duckdb" in results:
        ref = results["duckdb"]
        for label in ("spark1", "spark2"):
            if label not in results:
                continue
            for table in ("verdicts", "requests"):
                got = [list(r) for r in results[label][table]]
                want = [list(r) for r in ref[table]]
                same = got == want
                ok &= same
                print(f"{label} {table} == duckdb {table}: {same} ({len(got)} rows)")
        print("verdicts:", {r[0]: r[5] for r in ref["verdicts"]})
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
