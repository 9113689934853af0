"""The request journal: one entry per request, bounded, in completion order.

Each entry says which broker and connection handled which API and version,
when the request was read and when its response left (or why none did), and
the throttle time it carried.  Tests assert timing on it (a long-poll Fetch
held for max_wait); the throttle-conformance report is computed from it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(slots=True)
class JournalEntry:
    node_id: int
    conn_id: int
    peer: str
    client_id: str
    api_key: int
    api_version: int
    correlation_id: int
    received_ns: int
    responded_ns: int
    outcome: str  # "response" | "no_response" | "closed" | "lost"
    throttle_time_ms: int = 0

    @property
    def held_ms(self) -> float:
        return (self.responded_ns - self.received_ns) / 1e6

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["held_ms"] = self.held_ms
        return d


class RequestJournal:
    def __init__(self, max_entries: int) -> None:
        self.entries: deque[JournalEntry] = deque(maxlen=max_entries if max_entries > 0 else None)

    def record(self, entry: JournalEntry) -> None:
        self.entries.append(entry)

    def select(self, api_key: int | None = None, client_id: str | None = None) -> list[JournalEntry]:
        return [e for e in self.entries
                if (api_key is None or e.api_key == api_key) and (client_id is None or e.client_id == client_id)]
