"""Fetch (key 1): v4-18.

Behavior:
* Fetch sessions from v7 (KIP-227, ``fetch_session.FetchManager``): create,
  incremental, close; FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH
  and FETCH_SESSION_TOPIC_ID_ERROR in the top-level error.
* The handler maps the wire to one call, ``ReplicaManager.fetch_messages``
  (reading, and waiting in the fetch purgatory), and builds the response in
  its callback, where the session is updated
  (``FetchContext.updateAndGenerateResponseData``), as Kafka's
  ``handleFetchRequest`` does.
* Per partition (``ReplicaManager.readFromLocalLog``): unknown topic
  (UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID from v13), not the leader
  (NOT_LEADER_OR_FOLLOWER, with the leader from v16), current leader epoch
  (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH from v9), an offset below the
  log start or above the log end (OFFSET_OUT_OF_RANGE).  Reads stop at the
  high watermark, or the last stable offset for read_committed, which also
  gets the aborted transactions overlapping the range read
  (``collectAbortedTransactions``; null for read_uncommitted and errors).
* Sizes as Kafka: the response is bounded by min(max_bytes, fetch.max.bytes,
  the consumer byte quota's window), each partition by partition_max_bytes and what is left; the first partition
  with data returns at least one whole batch (KIP-74); a later partition may
  end with a truncated batch, as a slab read from a segment file does.
* Batches are served as the stored bytes, never decoded.
* An injected error (``faults.py``) goes to the partitions its rule names
  (every partition when it names none); the fetch is answered at once with
  what the others have.
* Long poll (``DelayedFetch``): unless max_wait is 0, min_bytes are readable,
  a partition has an error or nothing was asked, the fetch waits in the fetch
  purgatory until min_bytes become readable (an append or a high-watermark
  move wakes it) or max_wait passes, then reads again and answers.

Version notes:
* v4 isolation level, last stable offset, aborted transactions.  v5 log start offset.
* v7 sessions.  v8 clients back off on throttle (KIP-219).  v9 current leader epoch.
* v11 rack id, preferred read replica.  v12 flexible, diverging epoch.
* v13 topic ids.  v15 replica state.  v16 node endpoints.  v17 replica directory id.
* v18 high watermark in the request (share/KRaft followers; ignored for consumers).
"""

from __future__ import annotations

from typing import Any

from protocol.codec import timedelta_ms
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..fetch_session import CachedPartition, FetchContext
from ..metadata import ClusterMetadata
from ..replica_manager import FetchParams, LogReadResult
from ..request import Deferred, RequestContext, Result
from .common import ZERO_UUID, leader_info, node_endpoints

API_KEY = ApiKey.FETCH


def _requested(req: Any, by_id: bool, metadata: ClusterMetadata) -> list[CachedPartition]:
    out = []
    for t in req.topics:
        topic_id = getattr(t, "topic_id", None)
        name = getattr(t, "topic", None)
        if by_id:
            topic = metadata.topics_by_id.get(topic_id)
            name = topic.name if topic else ""
        for p in t.partitions:
            out.append(CachedPartition(
                topic=name or "",
                topic_id=topic_id,
                partition=p.partition,
                fetch_offset=p.fetch_offset,
                max_bytes=p.partition_max_bytes,
                log_start_offset=getattr(p, "log_start_offset", -1),
                current_leader_epoch=getattr(p, "current_leader_epoch", -1),
            ))
    return out


def _forgotten(req: Any, by_id: bool) -> list[tuple[Any, int]]:
    out = []
    for t in getattr(req, "forgotten_topics_data", ()) or ():
        key = t.topic_id if by_id else t.topic
        out.extend((key, p) for p in t.partitions)
    return out


def _partition_entry(cp: CachedPartition, r: LogReadResult, read_committed: bool,
                     leaders: dict[int, Any], metadata: ClusterMetadata) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "partition_index": cp.partition,
        "error_code": r.error,
        "high_watermark": r.high_watermark,
        "last_stable_offset": r.last_stable_offset,
        "log_start_offset": r.log_start_offset,
        # read_committed: (producer id, first offset) of the aborted transactions in the range read
        "aborted_transactions": None if not read_committed or r.aborted_transactions is None else [
            {"producer_id": t.producer_id, "first_offset": t.first_offset} for t in r.aborted_transactions],
        "preferred_read_replica": -1,
        "records": r.records,
    }
    if r.error is ErrorCode.not_leader_or_follower and r.partition is not None:
        p = r.partition
        entry["current_leader"] = leader_info(p)
        node = metadata.brokers.get(p.leader_id)
        if node is not None and node.alive:
            leaders[node.node_id] = node
    return entry


def _respond(ctx: RequestContext, fctx: FetchContext, by_id: bool, read_committed: bool,
             results: list[LogReadResult]) -> dict[str, Any]:
    """The response, with the session updated (FetchContext.updateAndGenerateResponseData)."""
    now = ctx.broker.clock.monotonic_ms()
    pairs = list(zip(fctx.partitions, results))
    ctx.partition_bytes = {(cp.topic, cp.partition): r.size_bytes for cp, r in pairs if r.size_bytes}
    if fctx.kind == "incremental":
        session = fctx.session
        assert session is not None
        out_session = session.session_id
        kept = []
        for cp, r in pairs:
            if cp.maybe_update_response(r.error, r.high_watermark, r.log_start_offset, r.size_bytes > 0):
                kept.append((cp, r))
            if r.size_bytes:
                session.partitions.move_to_end((cp.topic_id if by_id else cp.topic, cp.partition))
        pairs = kept
    elif fctx.kind == "full" and ctx.version >= 7:
        for cp, r in pairs:
            cp.maybe_update_response(r.error, r.high_watermark, r.log_start_offset, r.size_bytes > 0)
        new = ctx.broker.fetch_manager.maybe_create_session(fctx.partitions, by_id, now)
        out_session = new.session_id if new else 0
    else:
        out_session = 0

    # group partition entries by topic, keeping request order
    metadata = ctx.metadata
    leaders: dict[int, Any] = {}
    topics: list[dict[str, Any]] = []
    index: dict[Any, dict[str, Any]] = {}
    for cp, r in pairs:
        key = cp.topic_id if by_id else cp.topic
        t = index.get(key)
        if t is None:
            t = index[key] = {"topic": cp.topic, "topic_id": cp.topic_id or ZERO_UUID, "partitions": []}
            topics.append(t)
        t["partitions"].append(_partition_entry(cp, r, read_committed, leaders, metadata))
    return {
        "error_code": ErrorCode.none,
        "session_id": out_session,
        "responses": topics,
        "node_endpoints": node_endpoints(leaders.values(), ctx.conn.listener_name),
    }


def handle(ctx: RequestContext, req: Any) -> Result:
    v = ctx.version
    by_id = v >= 13
    session_id = getattr(req, "session_id", 0)
    epoch = getattr(req, "session_epoch", -1)
    ctx.fetch_session_epoch = epoch
    broker = ctx.broker
    now = broker.clock.monotonic_ms()
    fctx: FetchContext = broker.fetch_manager.new_context(
        session_id, epoch, _requested(req, by_id, ctx.metadata), _forgotten(req, by_id), by_id, now
    )
    if fctx.kind == "error":
        return {"error_code": fctx.error, "session_id": 0, "responses": []}
    # KafkaApis.handleFetchRequest: min(request max_bytes, fetch.max.bytes, the consumer quota's window)
    quota_max = broker.quotas.fetch.max_value_in_quota_window(ctx.principal, ctx.client_id)
    max_bytes = int(min(req.max_bytes, ctx.metadata.config["fetch.max.bytes"], quota_max))
    params = FetchParams(max_wait_ms=timedelta_ms(req.max_wait), min_bytes=min(req.min_bytes, req.max_bytes),
                         max_bytes=max_bytes, isolation_level=req.isolation_level, by_topic_id=by_id)
    read_committed = req.isolation_level == 1
    injected = ctx.injected
    if injected is not None:
        # an injected error answers at once, as a partition error does in ReplicaManager.fetchMessages
        results = broker.replica_manager.read_from_local_log(params, fctx.partitions)
        for i, cp in enumerate(fctx.partitions):
            if injected.applies(cp.topic, cp.partition):
                results[i] = LogReadResult(injected.error, partition=ctx.metadata.partition(cp.topic, cp.partition))
        return _respond(ctx, fctx, by_id, read_committed, results)
    deferred = Deferred()
    ctx.delayed = broker.replica_manager.fetch_messages(params, fctx.partitions, lambda results: deferred.complete_with(
        lambda: _respond(ctx, fctx, by_id, read_committed, results)))
    return deferred


# Fetch gives an injected error to the partitions it applies to and serves the others.
HANDLES_INJECTED_ERRORS = True
