"""Synthetic request journals with known answers (docs/report.md), for the report's tests and benchmark.

``write_journal(dir, clients, ...)`` writes one run's journal (docs/journal.md, schema 1) in which
every client sends ``requests`` Produce requests per connection over ``connections`` connections.
A client's ``behaviour`` says what it does after a throttled response (``throttle_mode`` observe,
``throttle_ms`` each):

* ``deadline``: its next request arrives exactly at the deadline (sent + throttle): honours;
* ``early``: its next request arrives ``early_ms`` (100) before the deadline every time: ignores;
* ``never``: it is never throttled; its requests come ``gap_ms`` apart.

The expected answers follow from the parameters: ``expected(clients, requests, connections)``.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

START_WALL_MS = 1_790_000_000_000
PRODUCE_BYTE_RATE = 1_048_576.0


@dataclass(frozen=True)
class SyntheticClient:
    client_id: str
    behaviour: str  # deadline | early | never
    software_name: str = "synthetic"
    software_version: str = "1.0"
    principal: str = "ANONYMOUS"
    api_version: int = 9  # Produce v9: client_throttles (KIP-219)


def _record(seq: int, conn: int, c: SyntheticClient, api: tuple[int, str, int], arrived: int,
            throttle_ms: int, request_bytes: int, mode: str = "observe") -> dict[str, Any]:
    sent = arrived + 1_000_000  # answered 1 ms after arrival
    key, name, version = api
    produce = key == 0
    return {
        "schema_version": 1, "broker": 1, "connection": conn, "peer": f"127.0.0.1:{40000 + conn}",
        "client_id": c.client_id, "principal": c.principal,
        "client_software_name": c.software_name, "client_software_version": c.software_version,
        "api_key": key, "api": name, "api_version": version, "correlation_id": seq,
        "request_bytes": request_bytes, "arrived_clock_ns": arrived, "received_clock_ns": arrived,
        "received_wall_ns": START_WALL_MS * 1_000_000 + arrived, "handled_clock_ns": sent,
        "handled_wall_ns": START_WALL_MS * 1_000_000 + sent, "sent_clock_ns": sent,
        "sent_wall_ns": START_WALL_MS * 1_000_000 + sent, "outcome": "response", "response_bytes": 60,
        "throttle_time_ms": throttle_ms, "throttle_mode": mode if throttle_ms else "",
        "quota_type": "Produce" if throttle_ms else "", "client_throttles": version >= 6 if produce else True,
        "mute_start_clock_ns": sent if throttle_ms and mode == "mute" else None,
        "mute_end_clock_ns": sent + throttle_ms * 1_000_000 if throttle_ms and mode == "mute" else None, "parked_ms": None, "purgatory": None,
        "completed_by": None, "error_code": 0,
        "partitions": [{"topic": "t", "partition": 0, "error_code": 0, "bytes": request_bytes - 100}] if produce else [],
        "quota_entity": {"user": "", "client_id": c.client_id},
        "quotas": {"producer_byte_rate": PRODUCE_BYTE_RATE},
        "fault_rule": None, "details": {"acks": 1, "timeout_ms": 30000} if produce else {}, "seq": seq,
    }


def records(clients: list[SyntheticClient], requests: int, connections: int = 1, throttle_ms: int = 500,
            early_ms: int = 100, gap_ms: int = 10, request_bytes: int = 1100,
            mode: str = "observe", after_throttle: bool = False) -> Iterator[dict[str, Any]]:
    """The records, in seq order: per connection an ApiVersions request, then ``requests`` Produce
    throttled in ``mode`` (``observe`` or ``mute``: in mute mode an early client's requests still
    arrive when the mute ends, as the broker stamps them, so the clocks cannot tell it early).
    ``after_throttle``: the request after a throttled response carries the broker's own verdict
    (docs/journal.md), as journals written since it was added do."""
    seq = 0
    conn = 0
    for c in clients:
        for _ in range(connections):
            conn += 1
            t = 1_000_000_000 * conn
            seq += 1
            yield _record(seq, conn, c, (18, "API_VERSIONS", 3), t, 0, 50)
            t += 5_000_000
            prev: dict[str, Any] | None = None
            for _ in range(requests):
                throttle = 0 if c.behaviour == "never" else throttle_ms
                seq += 1
                rec = _record(seq, conn, c, (0, "PRODUCE", c.api_version), t, throttle, request_bytes, mode)
                if after_throttle and prev is not None and prev["throttle_time_ms"]:
                    early = early_ms if c.behaviour == "early" else 0
                    rec["after_throttle"] = {"throttle_ms": throttle_ms, "mode": mode, "client_throttles": True,
                                             "gap_ms": throttle_ms - early, "early_ms": early, "pipelined": False,
                                             "violation": early > 0}
                prev = rec
                yield rec
                sent = t + 1_000_000
                if c.behaviour == "deadline" or (c.behaviour == "early" and mode == "mute"):
                    t = sent + throttle_ms * 1_000_000
                elif c.behaviour == "early":
                    t = sent + (throttle_ms - early_ms) * 1_000_000
                else:
                    t = sent + gap_ms * 1_000_000


def write_journal(directory: str | os.PathLike[str], clients: list[SyntheticClient], requests: int,
                  connections: int = 1, gzip_segments: bool = False, segment_records: int = 0,
                  start_wall_ms: int = START_WALL_MS, **kw: Any) -> list[str]:
    """Write the journal into ``directory`` (segments of ``segment_records`` records, 0: one),
    streaming (10 million records need no memory); returns the files written."""
    os.makedirs(directory, exist_ok=True)
    files: list[str] = []
    recs = records(clients, requests, connections, **kw)
    rec = next(recs, None)
    while rec is not None:
        name = os.path.join(directory, f"journal-{start_wall_ms}-{len(files):06d}.jsonl")
        name += ".gz" if gzip_segments else ""
        with (gzip.open(name, "wt", encoding="ascii") if gzip_segments else
              open(name, "w", encoding="ascii")) as f:
            n = 0
            while rec is not None and not (segment_records and n == segment_records):
                f.write(json.dumps(rec, separators=(",", ":")) + "\n")
                n += 1
                rec = next(recs, None)
        files.append(name)
    return files


def expected(clients: list[SyntheticClient], requests: int, connections: int = 1) -> dict[str, dict[str, int | str]]:
    """Per client id: requests, throttles, throttles followed by a next request, violations, verdict.
    The last Produce of each connection has no next request."""
    out: dict[str, dict[str, int | str]] = {}
    for c in clients:
        throttled = c.behaviour != "never"
        throttles = requests * connections if throttled else 0
        with_next = (requests - 1) * connections if throttled else 0
        out[c.client_id] = {
            "requests": (requests + 1) * connections,
            "throttles": throttles,
            "with_next": with_next,
            "violations": with_next if c.behaviour == "early" else 0,
            "verdict": {"deadline": "honours", "early": "ignores", "never": "not throttled"}[c.behaviour],
        }
    return out
