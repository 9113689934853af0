"""``mockbroker probe [--bootstrap HOST:PORT] [--timeout S]``: a health check (the container image's
HEALTHCHECK, docs/container.md) that asks the broker for its ApiVersions and exits 0 when it answers
with error_code 0, else 1 with one line on stderr.

A real Kafka round trip, not a TCP connect: a listener that accepts connections but whose broker does
not answer requests (still starting, wedged, not a Kafka broker) is unhealthy.

It runs every few seconds, so it imports the standard library only: ``protocol`` loads kio's schemas
(about 0.6 s of CPU).  The request is ApiVersions v0, which every Kafka release and every
``mock.kafka.version`` serves, with request header v1 and response header v0 -- a few fixed bytes;
tests/unit/test_probe.py checks them against ``protocol.codec``'s encoding and decoding.
"""

from __future__ import annotations

import argparse
import socket
import struct
import sys
import time
from typing import Any

API_VERSIONS = 18
CLIENT_ID = "mockbroker-probe"
CORRELATION_ID = 0x70726F62  # "prob"
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


class ProbeError(Exception):
    """The broker did not answer ApiVersions with error_code 0; the message says what happened."""


def request_bytes(correlation_id: int = CORRELATION_ID, client_id: str = CLIENT_ID) -> bytes:
    """An ApiVersions v0 request with its size prefix: header v1 (api_key, api_version, correlation_id,
    client_id as a nullable int16 string), empty body."""
    cid = client_id.encode()
    payload = struct.pack(">hhih", API_VERSIONS, 0, correlation_id, len(cid)) + cid
    return struct.pack(">i", len(payload)) + payload


def parse_response(payload: bytes, correlation_id: int = CORRELATION_ID) -> tuple[int, int]:
    """An ApiVersions v0 response payload (without its size prefix) -> (error_code, number of APIs)."""
    if len(payload) < 10:
        raise ProbeError(f"ApiVersions response too short ({len(payload)} bytes)")
    corr, error_code, count = struct.unpack_from(">ihi", payload)
    if corr != correlation_id:
        raise ProbeError(f"ApiVersions response has correlation id {corr}, sent {correlation_id}")
    return error_code, count


def split_host_port(bootstrap: str) -> tuple[str, int]:
    """The first ``HOST:PORT`` of a bootstrap list (``[::1]:PORT`` for IPv6)."""
    first = bootstrap.split(",")[0].strip()
    host, sep, port = first.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise ProbeError(f"--bootstrap {bootstrap!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def _recv_exact(sock: socket.socket, n: int, deadline: float) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout()
        sock.settimeout(left)
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ProbeError("the broker closed the connection before answering ApiVersions")
        buf += chunk
    return bytes(buf)


def probe(bootstrap: str, timeout: float) -> int:
    """One ApiVersions round trip within ``timeout`` seconds; the number of APIs the broker listed.
    Raises ProbeError (or OSError) when it did not answer with error_code 0."""
    host, port = split_host_port(bootstrap)
    deadline = time.monotonic() + timeout
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        sock.sendall(request_bytes())
        size = struct.unpack(">i", _recv_exact(sock, 4, deadline))[0]
        if not 10 <= size <= 1 << 20:
            raise ProbeError(f"ApiVersions response frame of {size} bytes")
        error_code, count = parse_response(_recv_exact(sock, size, deadline))
    if error_code != 0:
        raise ProbeError(f"ApiVersions answered error_code {error_code}")
    return count


def build_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("probe", help="health check: an ApiVersions round trip (exit 0 when the broker answers)")
    p.add_argument("--bootstrap", default=DEFAULT_BOOTSTRAP, metavar="HOST:PORT",
                   help=f"the broker to ask (default {DEFAULT_BOOTSTRAP})")
    p.add_argument("--timeout", type=float, default=5.0, metavar="S",
                   help="seconds for the connect and the answer together (default 5)")
    return p


def run(args: argparse.Namespace) -> int:
    try:
        probe(args.bootstrap, args.timeout)
    except socket.timeout:
        print(f"mockbroker probe: {args.bootstrap}: no ApiVersions answer within {args.timeout:g} s", file=sys.stderr)
        return 1
    except (ProbeError, OSError) as e:
        what = e.strerror if isinstance(e, OSError) and e.strerror else str(e) or type(e).__name__
        print(f"mockbroker probe: {args.bootstrap}: {what}", file=sys.stderr)
        return 1
    return 0
