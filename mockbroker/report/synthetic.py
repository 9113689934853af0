"""Synthetic request journals with known answers (docs/report.md), for the report's tests and benchmark.

``write_journal(dir, clients, ...)`` writes one run's journal (docs/journal.md, schema 1) in which
every client sends ``requests`` Produce requests per connection over ``connections`` connections.
A client's ``behaviour`` says what it does after a throttled response (``throttle_mode`` observe,
``throttle_ms`` each):

* ``deadline``: its next request arrives exactly at the deadline (sent + throttle): honours;
* ``early``: its next request arrives ``early_ms`` (100) before the deadline every time: ignores;
* ``partly``: early after the first, third, fifth ... throttle of a connection, at the deadline
  after the others: partly;
* ``never``: it is never throttled; its requests come ``gap_ms`` apart.

With ``bootstrap``, every client first opens a bootstrap connection (ApiVersions, Metadata) as a
real client does before it knows the brokers by their node ids.

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
    behaviour: str  # deadline | early | partly | never
    software_name: str = "synthetic"
    software_version: str = "1.0"
    principal: str = "ANONYMOUS"
    api_version: int = 9  # Produce v9: client_throttles (KIP-219)
    quotas: tuple[tuple[str, float], ...] = (("producer_byte_rate", PRODUCE_BYTE_RATE),)  # in force for it


def _record(seq: int, conn: int, c: SyntheticClient, api: tuple[int, str, int], arrived: int,
            throttle_ms: int, request_bytes: int, mode: str = "observe",
            start_wall_ms: int = START_WALL_MS) -> dict[str, Any]:
    wall = start_wall_ms * 1_000_000  # the wall clock when the broker clock read 0
    sent = arrived + 1_000_000  # answered 1 ms after arrival
    key, name, version = api
    produce = key == 0
    return {
        "schema_version": 1, "broker": 1, "connection": conn, "peer": f"127.0.0.1:{40000 + conn}",
        "client_id": c.client_id, "principal": c.principal,
        "client_software_name": c.software_name, "client_software_version": c.software_version,
        "api_key": key, "api": name, "api_version": version, "correlation_id": seq,
        "request_bytes": request_bytes, "arrived_clock_ns": arrived, "received_clock_ns": arrived,
        "received_wall_ns": wall + arrived, "handled_clock_ns": sent,
        "handled_wall_ns": wall + sent, "sent_clock_ns": sent,
        "sent_wall_ns": wall + sent, "outcome": "response", "response_bytes": 60,
        "throttle_time_ms": throttle_ms, "throttle_mode": mode if throttle_ms else "",
        "quota_type": "Produce" if throttle_ms else "", "client_throttles": version >= 6 if produce else True,
        "mute_start_clock_ns": sent if throttle_ms and mode == "mute" else None,
        "mute_end_clock_ns": sent + throttle_ms * 1_000_000 if throttle_ms and mode == "mute" else None, "parked_ms": None, "purgatory": None,
        "completed_by": None, "error_code": 0,
        "partitions": [{"topic": "t", "partition": 0, "error_code": 0, "bytes": request_bytes - 100}] if produce else [],
        "quota_entity": {"user": "", "client_id": c.client_id},
        "quotas": dict(c.quotas),
        "fault_rule": None, "details": {"acks": 1, "timeout_ms": 30000} if produce else {}, "seq": seq,
    }


def records(clients: list[SyntheticClient], requests: int, connections: int = 1, throttle_ms: int = 500,
            early_ms: int = 100, gap_ms: int = 10, request_bytes: int = 1100,
            mode: str = "observe", after_throttle: bool = False, bootstrap: bool = False,
            start_wall_ms: int = START_WALL_MS) -> Iterator[dict[str, Any]]:
    """The records, in seq order: per connection an ApiVersions request, then ``requests`` Produce
    throttled in ``mode`` (``observe`` or ``mute``: in mute mode an early client's requests still
    arrive when the mute ends, as the broker stamps them, so the clocks cannot tell it early).
    ``after_throttle``: the request after a throttled response carries the broker's own verdict
    (docs/journal.md), as journals written since it was added do."""
    seq = 0
    conn = 0
    for c in clients:
        if bootstrap:  # before its data connections: ApiVersions and Metadata on a bootstrap connection
            conn += 1
            t = 1_000_000_000 * conn - 500_000_000
            for api in ((18, "API_VERSIONS", 3), (3, "METADATA", 12)):
                seq += 1
                yield _record(seq, conn, c, api, t, 0, 50, start_wall_ms=start_wall_ms)
                t += 2_000_000
        for _ in range(connections):
            conn += 1
            t = 1_000_000_000 * conn
            seq += 1
            yield _record(seq, conn, c, (18, "API_VERSIONS", 3), t, 0, 50, start_wall_ms=start_wall_ms)
            t += 5_000_000
            prev: dict[str, Any] | None = None
            for i in range(requests):
                throttle = 0 if c.behaviour == "never" else throttle_ms
                seq += 1
                rec = _record(seq, conn, c, (0, "PRODUCE", c.api_version), t, throttle, request_bytes, mode,
                              start_wall_ms)
                if after_throttle and prev is not None and prev["throttle_time_ms"]:
                    early = early_ms if _early(c, i - 1) else 0
                    rec["after_throttle"] = {"throttle_ms": throttle_ms, "mode": mode, "client_throttles": True,
                                             "gap_ms": throttle_ms - early, "early_ms": early, "pipelined": False,
                                             "violation": early > 0}
                prev = rec
                yield rec
                sent = t + 1_000_000
                if c.behaviour == "never":
                    t = sent + gap_ms * 1_000_000
                elif _early(c, i) and mode != "mute":
                    t = sent + (throttle_ms - early_ms) * 1_000_000
                else:  # at the deadline (in mute mode an early request is read when the mute ends)
                    t = sent + throttle_ms * 1_000_000


def _early(c: SyntheticClient, throttle: int) -> bool:
    """Whether ``c`` sends its next request early after its connection's ``throttle``-th throttle (from 0)."""
    return c.behaviour == "early" or (c.behaviour == "partly" and throttle % 2 == 0)


def write_journal(directory: str | os.PathLike[str], clients: list[SyntheticClient], requests: int,
                  connections: int = 1, gzip_segments: bool = False, segment_records: int = 0,
                  start_wall_ms: int = START_WALL_MS, **kw: Any) -> list[str]:
    """Write the journal into ``directory`` (segments of ``segment_records`` records, 0: one),
    streaming (10 million records need no memory); returns the files written."""
    os.makedirs(directory, exist_ok=True)
    files: list[str] = []
    recs = records(clients, requests, connections, start_wall_ms=start_wall_ms, **kw)
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


def expected(clients: list[SyntheticClient], requests: int, connections: int = 1,
             bootstrap: bool = False) -> dict[str, dict[str, int | str]]:
    """Per client id: requests, throttles, throttles followed by a next request, violations, verdict,
    connections.  The last Produce of each connection has no next request."""
    out: dict[str, dict[str, int | str]] = {}
    for c in clients:
        throttled = c.behaviour != "never"
        throttles = requests * connections if throttled else 0
        with_next = (requests - 1) * connections if throttled else 0
        violations = {"early": with_next, "partly": requests // 2 * connections}.get(c.behaviour, 0)
        out[c.client_id] = {
            "requests": (requests + 1) * connections + (2 if bootstrap else 0),
            "throttles": throttles,
            "with_next": with_next,
            "violations": violations,
            "verdict": {"deadline": "honours", "early": "ignores", "partly": "partly",
                        "never": "not throttled"}[c.behaviour],
            "connections": connections + (1 if bootstrap else 0),
        }
    return out
