"""Request statistics of one broker, for ``/metrics``: Kafka's ``RequestMetrics``
(``RequestsPerSec``, ``ErrorsPerSec`` and the ``TotalTimeMs`` histogram per request type), kept
as plain counters so recording costs a few dictionary updates per request."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from .journal import RequestRecord

# Upper bounds (ms) of the TotalTimeMs histogram buckets; the last bucket is +Inf.
LATENCY_BUCKETS_MS = (0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)


@dataclass(slots=True)
class LatencyHistogram:
    counts: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_BUCKETS_MS) + 1))
    total_ms: float = 0.0
    count: int = 0

    def observe(self, ms: float) -> None:
        self.counts[bisect.bisect_left(LATENCY_BUCKETS_MS, ms)] += 1
        self.total_ms += ms
        self.count += 1

    def observe_many(self, values: list[float]) -> None:
        counts, total = self.counts, self.total_ms
        for ms in values:
            counts[bisect.bisect_left(LATENCY_BUCKETS_MS, ms)] += 1
            total += ms  # in order: the same sum as one observe at a time
        self.total_ms = total
        self.count += len(values)


class RequestStats:
    def __init__(self) -> None:
        self.requests: dict[tuple[str, int], int] = {}            # (api, version) -> requests
        self.errors: dict[tuple[str, int], int] = {}              # (api, error code) -> responses/partitions
        self.latency: dict[tuple[str, int], LatencyHistogram] = {}  # (api, version) -> received..answered

    def record(self, rec: RequestRecord) -> None:
        key = (rec.api, rec.api_version)
        self.requests[key] = self.requests.get(key, 0) + 1
        if rec.error_code:
            ek = (rec.api, rec.error_code)
            self.errors[ek] = self.errors.get(ek, 0) + 1
        for p in rec.partitions:
            if p.error_code:
                ek = (rec.api, p.error_code)
                self.errors[ek] = self.errors.get(ek, 0) + 1
        h = self.latency.get(key)
        if h is None:
            h = self.latency[key] = LatencyHistogram()
        h.observe(rec.held_ms)

    def record_many(self, recs: list[RequestRecord]) -> None:
        """``record`` each of ``recs`` (a completion pass's): the same counts, a dictionary step per
        request type rather than per request."""
        if len(recs) < 2:
            for rec in recs:
                self.record(rec)
            return
        counts: dict[tuple[str, int], list[float]] = {}
        errors = self.errors
        for rec in recs:
            key = (rec.api, rec.api_version)
            held = counts.get(key)
            if held is None:
                held = counts[key] = []
            held.append(rec.held_ms)
            if rec.error_code:
                ek = (rec.api, rec.error_code)
                errors[ek] = errors.get(ek, 0) + 1
            for p in rec.partitions:
                if p.error_code:
                    ek = (rec.api, p.error_code)
                    errors[ek] = errors.get(ek, 0) + 1
        for key, held in counts.items():
            self.requests[key] = self.requests.get(key, 0) + len(held)
            h = self.latency.get(key)
            if h is None:
                h = self.latency[key] = LatencyHistogram()
            h.observe_many(held)
