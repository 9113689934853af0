"""Start-up time of ``mockbroker serve`` up to its first answered Metadata request.

Measured, N runs each, interleaved so that machine noise hits all alike:

* spawn -> ready: from ``subprocess.Popen`` of ``mockbroker serve --port 0``
  to reading its ``mockbroker ready bootstrap=...`` stdout line;
* spawn -> Metadata: from the same spawn to the complete Metadata v12
  response (all topics) read from a raw socket connected after the ready line.

Baselines, spawned the same way with the venv's interpreter and waited for
until exit, in the same run: ``python -c pass`` (the interpreter floor) and
``python -c "import mockbroker.cli"`` (the import share of start-up).
``ratio`` is the median of each row / the median of ``python -c pass``.

Also measured: the same broker with the admin listener on (``-c
mock.admin.listener=127.0.0.1:0``: aiohttp is imported then, and only then),
and with ``--baseline DIR`` the import and spawn -> ready of another
checkout (``python -m mockbroker`` run from DIR), to show a change left
start-up as it was.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from protocol.codec import build_request, encode_request  # noqa: E402
from protocol.registry import ApiKey, any_spec  # noqa: E402

N = 10
PYTHON = str(ROOT / ".venv" / "bin" / "python")
METADATA_V12 = encode_request(
    ApiKey.METADATA, 12, 1, "bench",
    build_request(ApiKey.METADATA, 12, {
        "topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False,
    }),
    any_spec(ApiKey.METADATA),
)


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        buf += chunk
    return bytes(buf)


def python_exit_seconds(code: str, cwd: Path = ROOT) -> float:
    """Spawn -> exit of ``python -c code`` (run from ``cwd``: that checkout's package)."""
    t0 = time.perf_counter()
    subprocess.run([PYTHON, "-c", code], check=True, cwd=cwd)
    return time.perf_counter() - t0


def broker_seconds(extra: tuple[str, ...] = (), cwd: Path = ROOT) -> tuple[float, float]:
    """(spawn -> ready line, spawn -> first Metadata response) of one broker process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [PYTHON, "-m", "mockbroker", "serve", "--port", "0", "--log-level", "WARNING", *extra],
        stdout=subprocess.PIPE, text=True, cwd=cwd,  # stderr (warnings and errors) passes through
    )
    try:
        line = proc.stdout.readline()
        t_ready = time.perf_counter() - t0
        if not line.startswith("mockbroker ready bootstrap="):
            raise RuntimeError(f"unexpected first line: {line!r}")
        host, _, port = line.split("=", 1)[1].split()[0].rpartition(":")
        with socket.create_connection((host.strip("[]"), int(port)), timeout=10) as sock:
            sock.sendall(METADATA_V12)
            (size,) = struct.unpack(">i", recv_exact(sock, 4))
            recv_exact(sock, size)
        t_meta = time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return t_ready, t_meta


def main() -> None:
    ap = argparse.ArgumentParser(description="start-up time of mockbroker serve")
    ap.add_argument("--baseline", type=Path, help="another checkout to measure in the same run")
    ap.add_argument("-n", type=int, default=N, help=f"runs of each (default {N})")
    args = ap.parse_args()
    rows: dict[str, list[float]] = {
        "python -c pass (baseline)": [],
        "python -c 'import mockbroker.cli'": [],
        "mockbroker: spawn -> ready line": [],
        "mockbroker: spawn -> Metadata v12 answered": [],
        "mockbroker + admin listener: spawn -> ready": [],
    }
    if args.baseline:
        rows["baseline checkout: import mockbroker.cli"] = []
        rows["baseline checkout: spawn -> ready line"] = []
    names = list(rows)
    for _ in range(args.n):
        rows[names[0]].append(python_exit_seconds("pass"))
        rows[names[1]].append(python_exit_seconds("import mockbroker.cli"))
        ready, meta = broker_seconds()
        rows[names[2]].append(ready)
        rows[names[3]].append(meta)
        rows[names[4]].append(broker_seconds(("-c", "mock.admin.listener=127.0.0.1:0"))[0])
        if args.baseline:
            rows[names[5]].append(python_exit_seconds("import mockbroker.cli", args.baseline.resolve()))
            rows[names[6]].append(broker_seconds(cwd=args.baseline.resolve())[0])

    base = statistics.median(rows[names[0]])
    print(f"N={args.n} runs each, interleaved; ratio = median / median of 'python -c pass'")
    head = f"{'measure':<44} {'median ms':>10} {'min ms':>8} {'ratio':>7}"
    print(head)
    print("-" * len(head))
    for name, samples in rows.items():
        med = statistics.median(samples)
        print(f"{name:<44} {med * 1e3:>10.1f} {min(samples) * 1e3:>8.1f} {med / base:>7.2f}")


if __name__ == "__main__":
    main()
