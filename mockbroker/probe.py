"""``mockbroker probe [--bootstrap HOST:PORT] [--timeout S]``: a health check (the container image's
HEALTHCHECK, docs/container.md) that asks the broker for its ApiVersions and exits 0 when it answers
with error_code 0, else 1 with one line on stderr.

A real Kafka round trip, not a TCP connect: a listener that accepts connections but whose broker does
not answer requests (still starting, wedged, not a Kafka broker) is unhealthy.  The request is
ApiVersions v0, which every Kafka release and every ``mock.kafka.version`` serves, encoded and decoded
by the wire layer's kio codecs (``protocol.client``); they are imported by the probe itself, not by
the CLI, so ``--version`` and ``admin`` stay light.  A probe costs about 0.1-0.2 s of CPU, against the
seconds of a JVM that Kafka's own ``kafka-broker-api-versions.sh`` health checks start.
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
from typing import Any

API_VERSIONS = 18
CLIENT_ID = "mockbroker-probe"
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


class ProbeError(Exception):
    """The broker did not answer ApiVersions with error_code 0; the message says what happened."""


def split_host_port(bootstrap: str) -> tuple[str, int]:
    """The first ``HOST:PORT`` of a bootstrap list (``[::1]:PORT`` for IPv6)."""
    first = bootstrap.split(",")[0].strip()
    host, sep, port = first.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise ProbeError(f"--bootstrap {bootstrap!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def probe(bootstrap: str, timeout: float) -> int:
    """One ApiVersions v0 round trip within ``timeout`` seconds; the number of APIs the broker listed.
    Raises ProbeError, socket.timeout or OSError when it did not answer with error_code 0."""
    host, port = split_host_port(bootstrap)
    from protocol.client import RawKafkaClient  # the codecs: only when a probe runs

    deadline = time.monotonic() + timeout
    with RawKafkaClient(host, port, client_id=CLIENT_ID, timeout=timeout) as client:
        client.sock.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            response = client.request(API_VERSIONS, 0, {})
        except ConnectionError as e:
            raise ProbeError("the broker closed the connection before answering ApiVersions") from e
        except (socket.timeout, OSError):
            raise
        except Exception as e:  # noqa: BLE001 - anything that does not decode as ApiVersions v0
            raise ProbeError(f"not an ApiVersions v0 answer ({type(e).__name__}: {e})") from e
    if response.error_code != 0:
        raise ProbeError(f"ApiVersions answered error_code {response.error_code}")
    return len(response.api_keys)


def build_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser("probe", help="health check: an ApiVersions round trip (exit 0 when the broker answers)")
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
