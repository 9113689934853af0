"""Start-up time and idle memory of mockbroker, next to the interpreter's floor and a real Kafka.

Measured, N runs each, interleaved so that machine noise hits all alike (medians printed):

* ``python -c pass``: the interpreter floor; ``ratio`` is each row's median / this median;
* ``python -c "import mockbroker"`` (the package: its names load on first use),
  ``python -c "from mockbroker import MockBroker"`` (the broker's modules) and
  ``python -c "import mockbroker.cli"`` (what ``mockbroker`` loads before parsing its arguments),
  each spawned and waited for until exit;
* ``mockbroker serve --port 0``: spawn -> its ``mockbroker ready bootstrap=...`` stdout line (and
  the process's CPU time, user+system, read when that line arrives: steadier than the wall time
  when other processes share the cores), and
  spawn -> the complete Metadata v12 response (all topics) on a raw socket connected after it;
  the same with the admin listener on (``-c mock.admin.listener=127.0.0.1:0``: aiohttp and
  prometheus_client are imported then, and only then);
* in-process: a fresh interpreter times itself from before ``import mockbroker`` to a started
  ``MockBroker()`` having answered that Metadata request (and the import's share), with and without
  the admin listener; and, on its own clock reading, from ``MockBroker()`` (the modules imported)
  to that answer: what a test that already imported mockbroker waits for each broker.  The spawn of that interpreter is not in it (the floor row is).

Child interpreters cache bytecode in a temporary ``PYTHONPYCACHEPREFIX`` (as an installed package
would have its ``.pyc``; nothing is written into the tree), after one warm-up run.  An environment
with ``PYTHONDONTWRITEBYTECODE=1`` compiles every project module on every start instead: the row
``... no .pyc`` shows that cost.

Then, unless ``--no-kafka``: Apache Kafka 4.4.0 (single-node KRaft broker+controller from the
jars bench/realkafka/pom.xml resolves, started by bench/brokers.py as the other benches, same JVM
options) for ``--kafka-runs`` runs: spawn of the broker's JVM -> its "Kafka Server started" log
line, and spawn -> first Metadata v12 answered (polling connect).  The storage format before it
(``kafka-storage format``, a JVM of its own) is timed apart.  Without java/mvn, or when Maven
cannot resolve Kafka, the reason is printed and that part skipped.

Idle memory: RSS (psutil) of each broker process ``--idle`` seconds after it answered that
Metadata request: mockbroker serve, with and without the admin listener, and Kafka's JVM.

``--baseline DIR`` adds the import, spawn -> ready and CPU at ready of another checkout (run from DIR).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from protocol.client import metadata_all_topics_request

N = 10
KAFKA_RUNS = 3
IDLE_S = 3.0
PYTHON = str(ROOT / ".venv" / "bin" / "python")
ADMIN = ("-c", "mock.admin.listener=127.0.0.1:0")
METADATA_V12 = metadata_all_topics_request(12, "bench")

# Run by a fresh interpreter: seconds from before `import mockbroker` to the Metadata answer, the
# import's share, and from `MockBroker()` to the answer (timed on its own, not as a difference of
# two medians).  argv: the Metadata request (hex), "admin" or "plain".
IN_PROCESS = """
import time
t0 = time.perf_counter()
import mockbroker
from mockbroker import MockBroker
t_import = time.perf_counter() - t0
import socket, struct, sys
config = {"mock.admin.listener": "127.0.0.1:0"} if sys.argv[2] == "admin" else {}
t1 = time.perf_counter()
broker = MockBroker(config=config).start()
host, _, port = broker.bootstrap_servers.split(",")[0].rpartition(":")
with socket.create_connection((host.strip("[]"), int(port)), timeout=10) as s:
    s.sendall(bytes.fromhex(sys.argv[1]))
    def recv(n):
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return buf
    recv(struct.unpack(">i", recv(4))[0])
t_end = time.perf_counter()
print(t_end - t0, t_import, t_end - t1)
broker.stop()
"""


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        buf += chunk
    return bytes(buf)


def ask_metadata(host: str, port: int) -> None:
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.sendall(METADATA_V12)
        (size,) = struct.unpack(">i", recv_exact(sock, 4))
        recv_exact(sock, size)


def child_env(pycache: Path | None) -> dict[str, str]:
    """The children's environment: bytecode cached under ``pycache`` (None: none written)."""
    env = dict(os.environ)
    if pycache is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


class Bench:
    def __init__(self, pycache: Path) -> None:
        self.env = child_env(pycache)
        self.no_pyc_env = child_env(None)

    def python_exit_seconds(self, code: str, cwd: Path = ROOT) -> float:
        """Spawn -> exit of ``python -c code`` (run from ``cwd``: that checkout's package)."""
        t0 = time.perf_counter()
        subprocess.run([PYTHON, "-c", code], check=True, cwd=cwd, env=self.env)
        return time.perf_counter() - t0

    def in_process(self, mode: str) -> tuple[float, float, float]:
        """(import mockbroker -> Metadata answered, import's share, MockBroker() -> Metadata answered),
        as the child timed them."""
        out = subprocess.run([PYTHON, "-c", IN_PROCESS, METADATA_V12.hex(), mode], check=True, cwd=ROOT,
                             env=self.env, capture_output=True, text=True).stdout.split()
        return float(out[0]), float(out[1]), float(out[2])

    def broker(self, extra: tuple[str, ...] = (), cwd: Path = ROOT, idle_s: float = 0.0,
               pyc: bool = True) -> tuple[float, float, int, float]:
        """(spawn -> ready line, spawn -> first Metadata response, RSS after ``idle_s`` idle, the
        process's CPU seconds at the ready line) of one ``mockbroker serve`` (RSS 0 when ``idle_s``
        is 0)."""
        import psutil

        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [PYTHON, "-m", "mockbroker", "serve", "--port", "0", "--log-level", "WARNING", *extra],
            stdout=subprocess.PIPE, text=True, cwd=cwd, env=self.env if pyc else self.no_pyc_env,
        )  # stderr (warnings and errors) passes through
        try:
            line = proc.stdout.readline()
            t_ready = time.perf_counter() - t0
            cpu = psutil.Process(proc.pid).cpu_times()
            if not line.startswith("mockbroker ready bootstrap="):
                raise RuntimeError(f"unexpected first line: {line!r}")
            host, _, port = line.split("=", 1)[1].split()[0].split(",")[0].rpartition(":")
            ask_metadata(host.strip("[]"), int(port))
            t_meta = time.perf_counter() - t0
            rss = 0
            if idle_s:
                time.sleep(idle_s)
                rss = psutil.Process(proc.pid).memory_info().rss
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        return t_ready, t_meta, rss, cpu.user + cpu.system


def kafka_runs(runs: int, idle_s: float) -> dict[str, list[float]] | str:
    """Kafka's start-up rows, or why Kafka could not be measured."""
    import psutil

    sys.path.insert(0, str(ROOT / "bench"))
    import brokers  # bench/brokers.py

    try:
        cp = brokers.kafka_classpath()
    except brokers.Unavailable as e:
        return str(e)
    log4j = brokers.KAFKA_DIR / "log4j2-startup.properties"
    opts = [o for o in brokers.JVM_OPTS if not o.startswith("-Dlog4j2.configurationFile=")]
    opts.append(f"-Dlog4j2.configurationFile={log4j}")
    rows: dict[str, list[float]] = {"format": [], "ready": [], "meta": [], "rss": []}
    for _ in range(runs):
        kafka = brokers.RealKafka(cp)
        try:
            t = time.perf_counter()
            kafka.format()
            rows["format"].append(time.perf_counter() - t)
            started = threading.Event()
            ready_at: list[float] = []
            t0 = time.perf_counter()
            kafka.spawn(opts, stdout=subprocess.PIPE)
            proc = kafka.proc

            def read_stdout(proc=proc, started=started, ready_at=ready_at, t0=t0) -> None:
                for raw in proc.stdout:  # drained to the end: a full pipe would block the JVM
                    if not started.is_set() and b"Kafka Server started" in raw:
                        ready_at.append(time.perf_counter() - t0)
                        started.set()

            reader = threading.Thread(target=read_stdout, daemon=True)
            reader.start()
            deadline = t0 + brokers.KAFKA_READY_TIMEOUT_S
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"Kafka exited {proc.returncode}:\n{kafka.log_tail()}")
                try:
                    ask_metadata("127.0.0.1", kafka.port)
                    break
                except OSError:
                    if time.perf_counter() > deadline:
                        raise RuntimeError(f"no Metadata answer in {brokers.KAFKA_READY_TIMEOUT_S}s:\n{kafka.log_tail()}")
                    time.sleep(0.02)
            rows["meta"].append(time.perf_counter() - t0)
            if not started.wait(max(0.0, deadline - time.perf_counter())):
                raise RuntimeError(f"no 'Kafka Server started' line:\n{kafka.log_tail()}")
            rows["ready"].append(ready_at[0])
            time.sleep(idle_s)
            rows["rss"].append(psutil.Process(proc.pid).memory_info().rss)
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            return f"Kafka did not start: {e}"
        finally:
            kafka.stop()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description="start-up time and idle memory of mockbroker (and Kafka)")
    ap.add_argument("--baseline", type=Path, help="another checkout to measure in the same run")
    ap.add_argument("-n", type=int, default=N, help=f"runs of each (default {N})")
    ap.add_argument("--kafka-runs", type=int, default=KAFKA_RUNS, help=f"Kafka starts (default {KAFKA_RUNS})")
    ap.add_argument("--no-kafka", action="store_true", help="skip Kafka")
    ap.add_argument("--idle", type=float, default=IDLE_S, help=f"seconds idle before RSS (default {IDLE_S})")
    args = ap.parse_args()
    pycache = Path(tempfile.mkdtemp(prefix="startup-bench-pycache-"))
    bench = Bench(pycache)
    try:
        report(bench, args)
    finally:
        shutil.rmtree(pycache, ignore_errors=True)


def report(bench: Bench, args: argparse.Namespace) -> None:
    rows: dict[str, list[float]] = {
        "python -c pass (floor)": [],
        "python -c 'import mockbroker'": [],
        "python -c 'from mockbroker import MockBroker'": [],
        "python -c 'import mockbroker.cli'": [],
        "serve: spawn -> ready line": [],
        "serve: CPU of the process at its ready line": [],
        "serve: spawn -> Metadata answered": [],
        "serve + admin: spawn -> ready line": [],
        "serve + admin: spawn -> Metadata answered": [],
        "in-process: import -> MockBroker answered": [],
        "  of which: import mockbroker, MockBroker": [],
        "in-process: MockBroker() -> Metadata answered": [],
        "in-process + admin: import -> answered": [],
        "serve, no .pyc: spawn -> ready line": [],
    }
    if args.baseline:
        rows["baseline checkout: import mockbroker.cli"] = []
        rows["baseline checkout: spawn -> ready line"] = []
        rows["baseline checkout: CPU at its ready line"] = []
    names = list(rows)
    # warm-up: bytecode caches written, files in the page cache
    bench.python_exit_seconds("import mockbroker.cli")
    bench.broker(ADMIN)
    bench.in_process("admin")
    if args.baseline:
        bench.broker(cwd=args.baseline.resolve())
    for _ in range(args.n):
        rows[names[0]].append(bench.python_exit_seconds("pass"))
        rows[names[1]].append(bench.python_exit_seconds("import mockbroker"))
        rows[names[2]].append(bench.python_exit_seconds("from mockbroker import MockBroker"))
        rows[names[3]].append(bench.python_exit_seconds("import mockbroker.cli"))
        ready, meta, _, cpu = bench.broker()
        rows[names[4]].append(ready)
        rows[names[5]].append(cpu)
        rows[names[6]].append(meta)
        ready, meta, _, _ = bench.broker(ADMIN)
        rows[names[7]].append(ready)
        rows[names[8]].append(meta)
        total, imported, served = bench.in_process("plain")
        rows[names[9]].append(total)
        rows[names[10]].append(imported)
        rows[names[11]].append(served)
        rows[names[12]].append(bench.in_process("admin")[0])
        rows[names[13]].append(bench.broker(pyc=False)[0])
        if args.baseline:
            rows[names[14]].append(bench.python_exit_seconds("import mockbroker.cli", args.baseline.resolve()))
            ready, _, _, cpu = bench.broker(cwd=args.baseline.resolve())
            rows[names[15]].append(ready)
            rows[names[16]].append(cpu)

    rss: dict[str, list[float]] = {"mockbroker serve": [], "mockbroker serve + admin": []}
    for _ in range(3):
        rss["mockbroker serve"].append(bench.broker(idle_s=args.idle)[2])
        rss["mockbroker serve + admin"].append(bench.broker(ADMIN, idle_s=args.idle)[2])

    kafka: dict[str, list[float]] | str = "skipped (--no-kafka)"
    if not args.no_kafka:
        kafka = kafka_runs(args.kafka_runs, args.idle)
    if isinstance(kafka, dict):
        rows["Kafka 4.4.0: storage format (own JVM)"] = kafka["format"]
        rows["Kafka 4.4.0: spawn -> 'Kafka Server started'"] = kafka["ready"]
        rows["Kafka 4.4.0: spawn -> Metadata answered"] = kafka["meta"]
        rss["Kafka 4.4.0 JVM (-Xms1g -Xmx1g)"] = kafka["rss"]

    floor = statistics.median(rows[names[0]])
    print(f"N={args.n} runs each, interleaved (Kafka: {args.kafka_runs}); median and min; "
          "ratio = median / median of 'python -c pass'")
    head = f"{'measure':<46} {'median ms':>10} {'min ms':>9} {'ratio':>8}"
    print(head)
    print("-" * len(head))
    for name, samples in rows.items():
        med = statistics.median(samples)
        print(f"{name:<46} {med * 1e3:>10.1f} {min(samples) * 1e3:>9.1f} {med / floor:>8.2f}")
    if isinstance(kafka, str):
        print(f"Kafka: {kafka}")
    else:
        mock_ready = statistics.median(rows["serve: spawn -> ready line"])
        mock_meta = statistics.median(rows["serve: spawn -> Metadata answered"])
        print(f"Kafka / mockbroker: spawn -> ready {statistics.median(kafka['ready']) / mock_ready:.1f}x, "
              f"spawn -> Metadata answered {statistics.median(kafka['meta']) / mock_meta:.1f}x")
    print()
    print(f"idle RSS, {args.idle:.0f} s after the first Metadata answer (median of {len(rss['mockbroker serve'])})")
    base = statistics.median(rss["mockbroker serve"])
    head = f"{'process':<46} {'RSS MiB':>10} {'ratio':>8}"
    print(head)
    print("-" * len(head))
    for name, samples in rss.items():
        med = statistics.median(samples)
        print(f"{name:<46} {med / 2**20:>10.1f} {med / base:>8.2f}")
    print("(ratio = median / mockbroker serve's)")


if __name__ == "__main__":
    main()
