"""Fetch (key 1): v4-18.

Behavior:
* Fetch sessions from v7 (KIP-227, ``fetch_session.FetchManager``): create,
  incremental, close; FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH
  and FETCH_SESSION_TOPIC_ID_ERROR in the top-level error.
* Per partition (``ReplicaManager.readFromLog``): unknown topic
  (UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID from v13), not the leader
  (NOT_LEADER_OR_FOLLOWER, with the leader from v16), current leader epoch
  (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH from v9), an offset below the
  log start or above the log end (OFFSET_OUT_OF_RANGE).  Reads stop at the
  high watermark, or the last stable offset for read_committed.
* Sizes as Kafka: the response is bounded by min(max_bytes, fetch.max.bytes),
  each partition by partition_max_bytes and what is left; the first partition
  with data returns at least one whole batch (KIP-74); a later partition may
  end with a truncated batch, as a slab read from a segment file does.
* Batches are served as the stored bytes, never decoded.
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

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from protocol.codec import timedelta_ms

from ..delayed_fetch import DelayedFetch
from ..fetch_session import CachedPartition, FetchContext
from ..kafka_apis import Deferred
from .common import ZERO_UUID, leader_info, node_endpoint

API_KEY = ApiKey.FETCH

READ_COMMITTED = 1


def _requested(req: Any, by_id: bool, cluster: Any) -> list[CachedPartition]:
    out = []
    for t in req.topics:
        topic_id = getattr(t, "topic_id", None)
        name = getattr(t, "topic", None)
        if by_id:
            topic = cluster.topics_by_id.get(topic_id)
            name = topic.name if topic else ""
        for p in t.partitions:
            cp = CachedPartition(
                topic=name or "",
                topic_id=topic_id,
                partition=p.partition,
                fetch_offset=p.fetch_offset,
                max_bytes=p.partition_max_bytes,
                log_start_offset=getattr(p, "log_start_offset", -1),
                current_leader_epoch=getattr(p, "current_leader_epoch", -1),
            )
            out.append(cp)
    return out


def _forgotten(req: Any, by_id: bool) -> list[tuple[Any, int]]:
    out = []
    for t in getattr(req, "forgotten_topics_data", ()) or ():
        key = t.topic_id if by_id else t.topic
        out.extend((key, p) for p in t.partitions)
    return out


def read_partition(
    ctx: Any, cp: CachedPartition, by_id: bool, isolation: int, limit: int, min_one: bool, leaders: dict
) -> dict:
    """One partition's response entry (``records_size`` is internal bookkeeping)."""
    cluster = ctx.cluster
    entry: dict[str, Any] = {
        "partition_index": cp.partition,
        "error_code": ErrorCode.none,
        "high_watermark": -1,
        "last_stable_offset": -1,
        "log_start_offset": -1,
        "aborted_transactions": [] if isolation == READ_COMMITTED else None,
        "preferred_read_replica": -1,
        "records": b"",
        "records_size": 0,
    }
    topic = cluster.topics_by_id.get(cp.topic_id) if by_id else cluster.topics.get(cp.topic)
    if topic is None:
        entry["error_code"] = ErrorCode.unknown_topic_id if by_id else ErrorCode.unknown_topic_or_partition
        return entry
    if not 0 <= cp.partition < len(topic.partitions):
        entry["error_code"] = ErrorCode.unknown_topic_or_partition
        return entry
    p = topic.partitions[cp.partition]
    if p.leader_id != ctx.node_id:
        entry["error_code"] = ErrorCode.not_leader_or_follower
        entry["current_leader"] = leader_info(p)
        node = cluster.brokers.get(p.leader_id)
        if node is not None and node.alive:
            leaders[node.node_id] = node
        return entry
    req_epoch = cp.current_leader_epoch
    if req_epoch >= 0 and req_epoch != p.leader_epoch:
        entry["error_code"] = (
            ErrorCode.fenced_leader_epoch if req_epoch < p.leader_epoch else ErrorCode.unknown_leader_epoch
        )
        return entry
    log = p.log
    entry["high_watermark"] = log.high_watermark
    entry["last_stable_offset"] = log.last_stable_offset
    entry["log_start_offset"] = log.log_start_offset
    if cp.fetch_offset < log.log_start_offset or cp.fetch_offset > log.log_end_offset:
        entry["error_code"] = ErrorCode.offset_out_of_range
        return entry
    upper = log.last_stable_offset if isolation == READ_COMMITTED else log.high_watermark
    sl = log.read(cp.fetch_offset, min(cp.max_bytes, limit), upper, min_one)
    if sl.size_bytes:
        entry["records"] = sl.chunks[0] if len(sl.chunks) == 1 else b"".join(sl.chunks)
        entry["records_size"] = sl.size_bytes
    return entry


def _read_all(ctx: Any, fctx: FetchContext, by_id: bool, isolation: int, max_bytes: int) -> tuple[list, dict]:
    """Read every partition of the context; pure (no session changes)."""
    # KafkaApis.handleFetchRequest: min(request max_bytes, fetch.max.bytes, the consumer quota's window)
    quota_max = ctx.broker.quotas.fetch.max_value_in_quota_window(ctx.principal, ctx.client_id)
    limit = int(min(max_bytes, ctx.cluster.config["fetch.max.bytes"], quota_max))
    min_one = True
    leaders: dict[int, Any] = {}
    results: list[tuple[CachedPartition, dict]] = []
    for cp in fctx.partitions:
        entry = read_partition(ctx, cp, by_id, isolation, max(limit, 0), min_one, leaders)
        if entry["records_size"]:
            min_one = False
            limit -= entry["records_size"]
        results.append((cp, entry))
    return results, leaders


def _respond(ctx: Any, fctx: FetchContext, by_id: bool, results: list, leaders: dict) -> dict:
    """Build the response and update the session (FetchContext.updateAndGenerateResponseData)."""
    now = ctx.broker.clock.monotonic_ms()
    if fctx.kind == "incremental":
        session = fctx.session
        assert session is not None
        out_session = session.session_id
        kept = []
        for cp, entry in results:
            if cp.maybe_update_response(entry):
                kept.append((cp, entry))
            if entry["records_size"]:
                session.partitions.move_to_end((cp.topic_id if by_id else cp.topic, cp.partition))
        results = kept
    elif fctx.kind == "full" and ctx.version >= 7:
        for cp, entry in results:
            cp.maybe_update_response(entry)
        session = ctx.broker.fetch_manager.maybe_create_session(fctx.partitions, by_id, now)
        out_session = session.session_id if session else 0
    else:
        out_session = 0

    # group partition entries by topic, keeping request order
    topics: list[dict] = []
    index: dict[Any, dict] = {}
    for cp, entry in results:
        key = cp.topic_id if by_id else cp.topic
        t = index.get(key)
        if t is None:
            t = index[key] = {"topic": cp.topic, "topic_id": cp.topic_id or ZERO_UUID, "partitions": []}
            topics.append(t)
        entry.pop("records_size", None)
        t["partitions"].append(entry)
    return {
        "error_code": ErrorCode.none,
        "session_id": out_session,
        "responses": topics,
        "node_endpoints": [node_endpoint(n) for n in leaders.values()],
    }


def handle(ctx: Any, req: Any) -> Any:
    v = ctx.version
    cluster = ctx.cluster
    by_id = v >= 13
    isolation = req.isolation_level
    session_id = getattr(req, "session_id", 0)
    epoch = getattr(req, "session_epoch", -1)
    ctx.fetch_session_epoch = epoch
    requested = _requested(req, by_id, cluster)
    now = ctx.broker.clock.monotonic_ms()
    fctx: FetchContext = ctx.broker.fetch_manager.new_context(
        session_id, epoch, requested, _forgotten(req, by_id), by_id, now
    )
    if fctx.kind == "error":
        return {"error_code": fctx.error, "session_id": 0, "responses": []}

    results, leaders = _read_all(ctx, fctx, by_id, isolation, req.max_bytes)
    max_wait_ms = timedelta_ms(req.max_wait)
    min_bytes = min(req.min_bytes, req.max_bytes)
    readable = sum(e["records_size"] for _, e in results)
    errors = any(e["error_code"] is not ErrorCode.none for _, e in results)
    # ReplicaManager.fetchMessages: answer at once when nothing is worth waiting for
    if max_wait_ms <= 0 or not fctx.partitions or readable >= min_bytes or errors:
        return _respond(ctx, fctx, by_id, results, leaders)

    deferred = Deferred()

    def respond() -> None:
        res, lead = _read_all(ctx, fctx, by_id, isolation, req.max_bytes)
        deferred.complete(_respond(ctx, fctx, by_id, res, lead))

    op = DelayedFetch(max_wait_ms, list(fctx.partitions), by_id, isolation, min_bytes, ctx.node_id, cluster, respond)
    keys = [(cp.topic, cp.partition) for cp in fctx.partitions]
    ctx.broker.fetch_purgatory.try_complete_else_watch(op, keys)
    return deferred
