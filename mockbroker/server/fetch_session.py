"""Fetch sessions, KIP-227 (Kafka's ``FetchManager``, ``FetchSession``, ``FetchSessionCache``).

Request metadata (``FetchMetadata``): session id 0 with epoch -1 is
sessionless; epoch 0 is a full fetch that (re)creates a session; epoch -1 with
an id closes that session; epoch > 0 is an incremental fetch of that session.

* Full fetch: the response has every requested partition; a new session is
  created when the cache has a free slot (or an entry idle for more than
  ``MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS`` can be evicted), epoch 1.
* Incremental fetch: unknown id -> FETCH_SESSION_ID_NOT_FOUND, wrong epoch ->
  INVALID_FETCH_SESSION_EPOCH, topic-id use changed -> FETCH_SESSION_TOPIC_ID_ERROR;
  otherwise the request's partitions are added/updated, forgotten ones
  removed, and the response carries only partitions with news (records, a
  changed high watermark / log start offset, or an error).  Partitions that
  returned data move to the end of the session's order.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from protocol.errors import ErrorCode

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS = 120_000
INT_MAX = (1 << 31) - 1
# BrokerServer: KafkaBroker.NumFetchSessionCacheShards (8) shards, each a range of session ids
NUM_SHARDS = 8
SESSION_ID_RANGE = INT_MAX // NUM_SHARDS


def next_epoch(epoch: int) -> int:
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == INT_MAX else epoch + 1


@dataclass(slots=True)
class CachedPartition:
    topic: str
    topic_id: Any
    partition: int
    fetch_offset: int
    max_bytes: int
    log_start_offset: int = -1
    high_watermark: int = -1
    last_log_start: int = -1
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1  # v12+; below 0: none (FetchRequest.optionalEpoch)

    def needs_response(self, error: ErrorCode, high_watermark: int, log_start_offset: int,
                       has_records: bool) -> bool:
        """Whether an incremental response needs it, nothing updated
        (``maybeUpdateResponseData`` with ``updateFetchContextAndRemoveUnselected`` false)."""
        return (has_records or error is not ErrorCode.none or high_watermark != self.high_watermark
                or log_start_offset != self.last_log_start)

    def maybe_update_response(self, error: ErrorCode, high_watermark: int, log_start_offset: int,
                              has_records: bool) -> bool:
        """CachedPartition.maybeUpdateResponseData: whether an incremental response needs it."""
        must = has_records
        if error is not ErrorCode.none:
            must = True
            self.high_watermark = -1  # re-send once the error clears
        elif high_watermark != self.high_watermark:
            must = True
            self.high_watermark = high_watermark
        if log_start_offset != self.last_log_start:
            must = True
            self.last_log_start = log_start_offset
        return must


@dataclass(slots=True)
class FetchSession:
    session_id: int
    uses_topic_ids: bool
    created_ms: int
    last_used_ms: int
    epoch: int = 1
    partitions: "OrderedDict[tuple[Any, int], CachedPartition]" = field(default_factory=OrderedDict)


@dataclass(slots=True)
class FetchContext:
    kind: str  # "sessionless" | "full" | "incremental" | "error"
    error: ErrorCode = ErrorCode.none
    session: FetchSession | None = None
    # (key, CachedPartition-like request entry) in response order
    partitions: list[CachedPartition] = field(default_factory=list)


class FetchManager:
    def __init__(self, max_slots: int, rng: random.Random | None = None) -> None:
        self.max_slots = max_slots
        self.sessions: dict[int, FetchSession] = {}
        self._rng = rng or random.Random()

    def new_context(
        self,
        session_id: int,
        epoch: int,
        requested: list[CachedPartition],
        forgotten: list[tuple[Any, int]],
        uses_topic_ids: bool,
        now_ms: int,
    ) -> FetchContext:
        if (epoch not in (INITIAL_EPOCH, FINAL_EPOCH) or session_id != INVALID_SESSION_ID) \
                and not 0 <= int(session_id / SESSION_ID_RANGE) < NUM_SHARDS:
            # FetchSessionCache.getCacheShard: sessionId / range indexes the shards (Java's division,
            # toward zero); an id outside them throws IndexOutOfBoundsException, which Kafka answers
            # as UNKNOWN_SERVER_ERROR for the whole request
            return FetchContext("error", ErrorCode.unknown_server_error)
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self.sessions.pop(session_id, None)
            kind = "full" if epoch == INITIAL_EPOCH else "sessionless"
            return FetchContext(kind, partitions=requested)
        session = self.sessions.get(session_id)
        if session is None:
            return FetchContext("error", ErrorCode.fetch_session_id_not_found)
        if session.epoch != epoch:
            return FetchContext("error", ErrorCode.invalid_fetch_session_epoch)
        if session.uses_topic_ids != uses_topic_ids:
            return FetchContext("error", ErrorCode.fetch_session_topic_id_error)
        # FetchSession.update: the request's partitions added or updated first, then the forgotten
        # ones removed (a partition both asked and forgotten is gone)
        for cp in requested:
            key = (cp.topic_id if uses_topic_ids else cp.topic, cp.partition)
            old = session.partitions.get(key)
            if old is None:
                session.partitions[key] = cp
            else:
                old.fetch_offset = cp.fetch_offset
                old.max_bytes = cp.max_bytes
                old.log_start_offset = cp.log_start_offset
                old.current_leader_epoch = cp.current_leader_epoch
                old.last_fetched_epoch = cp.last_fetched_epoch
        for key in forgotten:
            session.partitions.pop(key, None)
        session.epoch = next_epoch(session.epoch)
        session.last_used_ms = now_ms
        if not session.partitions:
            # An empty session is removed and the request served sessionless.
            del self.sessions[session.session_id]
            return FetchContext("sessionless", partitions=[])
        return FetchContext("incremental", session=session, partitions=list(session.partitions.values()))

    def maybe_create_session(
        self, partitions: list[CachedPartition], uses_topic_ids: bool, now_ms: int
    ) -> FetchSession | None:
        if self.max_slots <= 0:
            return None
        if len(self.sessions) >= self.max_slots:
            stale = min(self.sessions.values(), key=lambda s: s.last_used_ms)
            if now_ms - stale.last_used_ms < MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS:
                return None
            del self.sessions[stale.session_id]
        sid = 0
        while sid == 0 or sid in self.sessions:
            sid = self._rng.randint(1, INT_MAX)
        s = FetchSession(sid, uses_topic_ids, now_ms, now_ms)
        for cp in partitions:
            s.partitions[(cp.topic_id if uses_topic_ids else cp.topic, cp.partition)] = cp
        self.sessions[sid] = s
        return s
