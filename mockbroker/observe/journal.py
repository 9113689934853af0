"""The request journal: one record per request, in completion order.

Each record says which broker and connection handled which API and version
for which client, when the request arrived, was handled and was answered (or
why it was not), how large request and response were, the throttle it
carried and the mute it started, how long it waited in a purgatory and why it
completed, the error codes it answered, the bytes appended or fetched per
partition, and the client's quota entity with the quotas in force.  Tests
assert timing on it (a long-poll Fetch held for max_wait), the admin API
serves it, the on-disk journal writes it as JSON Lines (``mock.journal.dir``,
schema in docs/journal.md) and the throttle-conformance report reads it.

Times: ``*_clock_ns`` are the broker's clock (monotonic, the injectable one:
a ManualClock's in tests), ``*_wall_ns`` the host's wall clock (to line
records up with client logs).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

SCHEMA_VERSION = 1

# Outcomes: response: answered.  no_response: nothing is sent by design (acks=0).  closed: the connection
# closed instead of an answer (it was gone, an error on acks=0, or a fault rule).  dropped: a fault
# rule dropped it before it took effect.  lost: a fault rule dropped or closed after it took effect.


@dataclass(slots=True)
class PartitionRecord:
    topic: str
    partition: int
    error_code: int = 0
    bytes: int = 0  # appended (Produce) or fetched (Fetch)


@dataclass(slots=True)
class RequestRecord:
    broker: int
    connection: int
    peer: str
    client_id: str
    principal: str
    client_software_name: str | None
    client_software_version: str | None
    api_key: int
    api: str
    api_version: int
    correlation_id: int
    request_bytes: int
    arrived_clock_ns: int            # the request was complete on the connection (observe: before any hold)
    received_clock_ns: int           # taken off the connection and decoded
    received_wall_ns: int
    handled_clock_ns: int = 0        # the handler returned (it may have parked the request)
    handled_wall_ns: int = 0
    sent_clock_ns: int | None = None  # the response was written (None: no response)
    sent_wall_ns: int | None = None
    outcome: str = "response"
    response_bytes: int | None = None
    throttle_time_ms: int = 0
    throttle_mode: str = ""
    quota_type: str = ""             # the quota that throttled (Produce, Fetch, Request, ControllerMutation)
    client_throttles: bool = False   # KIP-219: this response version makes clients back off themselves
    mute_start_clock_ns: int | None = None  # the throttle mute this response started (mute mode)
    mute_end_clock_ns: int | None = None
    parked_ms: float | None = None   # time answered after the handler returned (purgatory, coordinator)
    purgatory: str | None = None     # Produce, Fetch, ... when a delayed operation held it
    completed_by: str | None = None  # condition | timeout
    error_code: int | None = None    # top-level error code (None when the response has none)
    partitions: list[PartitionRecord] = field(default_factory=list)
    quota_entity: tuple[str | None, str | None] | None = None  # (user, client-id) tags of this client's quotas
    quotas: dict[str, float] = field(default_factory=dict)      # the quotas in force for that entity
    fault_rule: int | None = None    # the fault rule that acted on this request
    details: dict[str, Any] = field(default_factory=dict)      # per API: acks, max_wait_ms, min_bytes, ...
    seq: int = 0                     # 1, 2, 3, ... over the cluster's records: a gap on disk is a dropped record
    # the first request on a connection after a throttled response: what came of that throttle
    after_throttle: dict[str, Any] | None = None

    # -- compatibility with the first journal's names (tests and bench read these) ---------------
    @property
    def node_id(self) -> int:
        return self.broker

    @property
    def conn_id(self) -> int:
        return self.connection

    @property
    def received_ns(self) -> int:
        return self.received_clock_ns

    @property
    def responded_ns(self) -> int:
        return self.sent_clock_ns if self.sent_clock_ns is not None else self.handled_clock_ns

    @property
    def held_ms(self) -> float:
        """Time from reading the request to its answer (or the decision not to answer)."""
        return (self.responded_ns - self.received_clock_ns) / 1e6

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (docs/journal.md), plus the first journal's names for in-process callers."""
        d: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "partitions":
                v = [{"topic": p.topic, "partition": p.partition, "error_code": p.error_code, "bytes": p.bytes}
                     for p in v]
            elif f.name == "quota_entity":
                v = None if v is None else {"user": v[0], "client_id": v[1]}
            d[f.name] = v
        d.update(node_id=self.broker, conn_id=self.connection, received_ns=self.received_clock_ns,
                 responded_ns=self.responded_ns, held_ms=self.held_ms)
        return d


class RequestJournal:
    """The records kept in memory (``mock.journal.max.entries``) and the sinks told of each one
    (the on-disk journal)."""

    def __init__(self, max_entries: int) -> None:
        self.entries: deque[RequestRecord] = deque(maxlen=max_entries if max_entries > 0 else None)
        self.sinks: list[Callable[[RequestRecord], None]] = []
        self.recorded = 0

    def record(self, entry: RequestRecord) -> None:
        self.recorded += 1
        entry.seq = self.recorded
        self.entries.append(entry)
        for sink in self.sinks:
            sink(entry)

    def record_many(self, entries: list[RequestRecord]) -> None:
        """``record`` each of ``entries`` in order (a completion pass's, in one step)."""
        seq = self.recorded
        for entry in entries:
            seq += 1
            entry.seq = seq
        self.recorded = seq
        self.entries.extend(entries)
        sinks = self.sinks
        if sinks:
            for entry in entries:
                for sink in sinks:
                    sink(entry)

    def select(self, api_key: int | None = None, client_id: str | None = None,
               since_clock_ns: int | None = None, until_clock_ns: int | None = None,
               limit: int | None = None) -> list[RequestRecord]:
        """Records oldest first, filtered by API, client id and received time (broker clock); with
        ``limit`` the newest ``limit`` of them."""
        out = [e for e in self.entries
               if (api_key is None or e.api_key == api_key) and (client_id is None or e.client_id == client_id)
               and (since_clock_ns is None or e.received_clock_ns >= since_clock_ns)
               and (until_clock_ns is None or e.received_clock_ns < until_clock_ns)]
        if limit is not None and 0 <= limit < len(out):
            out = out[len(out) - limit:]
        return out
