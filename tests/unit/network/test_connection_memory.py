"""What a connection costs the broker before its request is known: Kafka's ``NetworkReceive``
reads the 4-byte size prefix into a 4-byte buffer and allocates the request's size only once it is
known, pool or not.  A connection that sent part of a size prefix holds those 4 bytes, one that
sent a prefix and part of a body holds the request's buffer; before issue 21 a connection without
a pool held a 64 KiB staging buffer from its first byte (2,000 of them: +125 MiB of RSS).

bench/connection_memory.py prints the RSS per idle and half-sent connection with and without a
pool; the second test here holds it with a generous bound.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import time

import psutil
import pytest

from mockbroker import MockBroker
from tests.polling import until

POOL = {"queued.max.request.bytes": 200 << 20}


def _connections(b: MockBroker) -> list:
    return b.call(lambda cl: [c for br in cl.brokers.values() for c in br.connections])


@pytest.mark.parametrize("config", [{}, POOL], ids=["no-pool", "pool"])
def test_half_sent_connections_hold_only_what_kafka_holds(config):
    with MockBroker(config=config) as b:
        host, port = b.bootstrap_servers.split(":")
        prefix_only = [socket.create_connection((host, int(port))) for _ in range(20)]
        with_body = [socket.create_connection((host, int(port))) for _ in range(20)]
        try:
            for s in prefix_only:
                s.sendall(b"\x00\x00")  # half of a size prefix
            for s in with_body:
                s.sendall(struct.pack(">i", 1000) + b"\x01" * 10)  # a 1,000-byte request, 10 bytes of it
            # the 4-byte size buffer, and once the size is known the request's own buffer
            until(lambda: sorted(c.read_buffer_bytes for c in _connections(b)) == [4] * 20 + [4 + 1000] * 20,
                  "every connection read what it was sent")
        finally:
            for s in prefix_only + with_body:
                s.close()


def _settled_rss(proc: psutil.Process, time_limit_s: float = 10.0) -> int:
    """RSS once two readings 0.3 s apart are within 1 % (bounded in time)."""
    deadline = time.monotonic() + time_limit_s
    last = proc.memory_info().rss
    while time.monotonic() < deadline:
        time.sleep(0.3)
        now = proc.memory_info().rss
        if abs(now - last) <= last / 100:
            return now
        last = now
    return last


def test_rss_per_connection_with_a_byte_of_a_prefix_stays_small():
    """1,000 connections that each sent one byte grow a ``mockbroker serve`` process (no pool) by
    under 16 KiB each: about 2.5 KiB is the connection itself (bench/connection_memory.py), the
    64 KiB staging buffer each held before is gone."""
    n = 1000
    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", "serve", "--port", "0", "--log-level", "WARNING"],
                            stdout=subprocess.PIPE, text=True)
    socks: list[socket.socket] = []
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith("mockbroker ready bootstrap="), line
        host, port = line.split("=", 1)[1].strip().rsplit(":", 1)
        broker = psutil.Process(proc.pid)
        before = _settled_rss(broker)
        for _ in range(n):
            s = socket.create_connection((host, int(port)), timeout=10)
            s.sendall(b"\x00")
            socks.append(s)
        grown = _settled_rss(broker) - before
        assert grown / n < 16 * 1024, f"{grown / n:,.0f} bytes of RSS per connection"
    finally:
        for s in socks:
            s.close()
        proc.terminate()
        proc.wait(timeout=10)
