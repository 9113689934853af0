"""Broker memory per connection: RSS of ``mockbroker serve`` per idle and per half-sent connection,
without and with a request memory pool, side by side in one run.

For each pool setting (none: ``queued.max.request.bytes=-1``, the default; a 256 MiB pool, above
socket.request.max.bytes) and each state, a fresh broker (``mockbroker serve``, a subprocess) is started, its RSS read (psutil) once
it is idle, then CONNECTIONS connections are opened from this process and left in the state:

* idle: connected, nothing sent;
* prefix: 1 byte of a request's 4-byte size prefix sent (Kafka holds a 4-byte buffer for it);
* body: the size prefix of a 1,024-byte request and 100 bytes of its body sent (Kafka holds the
  request's buffer: 1,024 bytes, from the pool when there is one).

RSS is read again once it has settled (two readings 0.5 s apart within 1 %, at most 10 s); the
difference divided by CONNECTIONS is printed, then what a half-sent connection costs over an
idle one.  Every connection is closed and the broker stopped before the next state.
tests/unit/network/test_connection_memory.py holds the figure with a generous bound.
"""

from __future__ import annotations

import argparse
import socket
import struct
import sys
import time
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "bench"))
from brokers import serve_mockbroker  # bench/brokers.py

CONNECTIONS = 2000
POOL = 256 << 20


def settled_rss(proc: psutil.Process, time_limit_s: float = 10.0) -> int:
    deadline = time.monotonic() + time_limit_s
    last = proc.memory_info().rss
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = proc.memory_info().rss
        if abs(now - last) <= last / 100:
            return now
        last = now
    return last


def open_connections(bootstrap: str, n: int, state: str) -> list[socket.socket]:
    host, port = bootstrap.rsplit(":", 1)
    socks = []
    for _ in range(n):
        s = socket.create_connection((host, int(port)), timeout=10)
        if state == "prefix":
            s.sendall(b"\x00")
        elif state == "body":
            s.sendall(struct.pack(">i", 1024) + b"\x00" * 100)
        socks.append(s)
    return socks


def measure(pool: bool, state: str, n: int) -> tuple[int, int]:
    """(RSS before, RSS after) of a fresh broker with ``n`` connections in ``state``."""
    config = [f"queued.max.request.bytes={POOL}"] if pool else []
    with serve_mockbroker(config) as (proc, bootstrap):
        broker = psutil.Process(proc.pid)
        before = settled_rss(broker)
        socks = open_connections(bootstrap, n, state)
        try:
            after = settled_rss(broker)
        finally:
            for s in socks:
                s.close()
    return before, after


def main() -> None:
    ap = argparse.ArgumentParser(description="broker RSS per idle and half-sent connection, with and without a pool")
    ap.add_argument("--connections", type=int, default=CONNECTIONS, help=f"connections per state (default {CONNECTIONS})")
    args = ap.parse_args()
    n = args.connections
    print(f"{n} connections per state; RSS of mockbroker serve, a fresh broker per row")
    head = f"{'pool':<10} {'state':<8} {'RSS before MiB':>15} {'RSS after MiB':>14} {'bytes/connection':>17}"
    print(head)
    print("-" * len(head))
    per: dict[tuple[str, str], float] = {}
    for pool in (False, True):
        for state in ("idle", "prefix", "body"):
            before, after = measure(pool, state, n)
            label = "256 MiB" if pool else "none"
            per[(label, state)] = (after - before) / n
            print(f"{label:<10} {state:<8} {before / 2**20:>15.1f} {after / 2**20:>14.1f} {per[(label, state)]:>17,.0f}")
    print()
    for state in ("prefix", "body"):
        print(f"{state}: extra bytes per connection over idle: without pool "
              f"{per[('none', state)] - per[('none', 'idle')]:,.0f}, with pool "
              f"{per[('256 MiB', state)] - per[('256 MiB', 'idle')]:,.0f}")


if __name__ == "__main__":
    main()
