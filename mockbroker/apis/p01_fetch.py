"""Fetch (key 1): v4-18.

Behavior:
* Fetch sessions from v7 (KIP-227, ``fetch_session.FetchManager``): create,
  incremental, close; FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH
  and FETCH_SESSION_TOPIC_ID_ERROR in the top-level error.
* The handler maps the wire to one call, ``ReplicaManager.fetch_messages``
  (reading, and waiting in the fetch purgatory), and builds the response in
  its callback.  As in Kafka's ``handleFetchRequest`` the quotas are decided
  before the session is touched: the session is updated or created
  (``FetchContext.updateAndGenerateResponseData``) only for a response no quota
  throttles; a throttled one is answered empty (``getThrottledResponse``) and
  creates no session.
* The request's partitions are ``FetchRequest.fetchData``, a LinkedHashMap: one listed twice is
  fetched once, at its first place, with its last entry's offsets.  An isolation level other than
  0 or 1 is UNKNOWN_SERVER_ERROR for the whole request once some partition exists to be read, and so
  is a session id outside the fetch session cache's shards (``FetchRequest.getErrorResponse``:
  below v13 every partition as listed with the error, from v13 none).
* A replica id of 0 or more is a follower's fetch (``isFromFollower``): a replica id that is not
  one of the partition's followers is NOT_LEADER_OR_FOLLOWER (UNKNOWN_LEADER_EPOCH with a current
  leader epoch), and its answer has no node endpoints.
* The last fetched epoch (v12+, 0 or more) is checked as ``Partition.readRecords`` does: an epoch
  the log cannot place, or an offset below the log start, is OFFSET_OUT_OF_RANGE; an epoch that
  ended before the fetch offset answers its end as the diverging epoch, with no records.
* Per partition (``ReplicaManager.readFromLocalLog``): unknown topic
  (UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID from v13), not the leader
  (NOT_LEADER_OR_FOLLOWER, with the leader from v16), current leader epoch
  (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH from v9), an offset below the
  log start or above the log end (OFFSET_OUT_OF_RANGE).  A read error answers every offset -1
  (``createLogReadResult``) and null aborted transactions; a partition KafkaApis answers itself
  (unknown, refused) an empty list of them.  Reads stop at the
  high watermark, or the last stable offset for read_committed, which also
  gets the aborted transactions overlapping the range read
  (``collectAbortedTransactions``; null for read_uncommitted and errors).
* Sizes as Kafka: the response is bounded by min(max_bytes, fetch.max.bytes,
  the consumer byte quota's window), each partition by partition_max_bytes and what is left; the first partition
  with data returns at least one whole batch (KIP-74); a later partition may
  end with a truncated batch, as a slab read from a segment file does.
* Batches are served as the stored bytes, never decoded, nor joined: the response goes to the
  socket as segments (``fetch_response.py``); the fetches one append completes share one encoding.
* An injected error (``faults.py``) goes to the partitions its rule names
  (every partition when it names none); the fetch is answered at once with
  what the others have.
* With an authorizer: READ on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions, not read);
  a fetch from a follower (replica id 0 or more) CLUSTER_ACTION on the cluster instead, without which
  every partition is TOPIC_AUTHORIZATION_FAILED.
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

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from protocol.codec import timedelta_ms
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from .fetch_response import encoder
from ..server.fetch_session import CachedPartition, FetchContext
from ..observe.journal import PartitionRecord
from ..state.metadata import ClusterMetadata
from ..server.replica_manager import FetchParams, LogReadResult
from ..request import Body, Deferred, Outcome, RequestContext, Response
from ..common.shared_encodings import SharedEncodings
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from .common import ZERO_UUID, authorized, leader_info, node_endpoints, partition_errors

if TYPE_CHECKING:
    from protocol.request_types import FetchRequest

API_KEY = ApiKey.FETCH


def _requested(req: FetchRequest, by_id: bool, metadata: ClusterMetadata) -> list[CachedPartition]:
    """``FetchRequest.fetchData``: a LinkedHashMap by topic (id) and partition, so a partition listed
    twice is asked once, at its first place, with its last entry's parameters."""
    out: dict[tuple[Any, int], CachedPartition] = {}
    for t in req.topics:
        topic_id = t.topic_id
        name: str = t.topic
        if by_id:
            topic = metadata.topics_by_id.get(topic_id) if topic_id is not None else None
            name = topic.name if topic else ""
        for p in t.partitions:
            out[(topic_id if by_id else name, p.partition)] = CachedPartition(
                topic=name or "",
                topic_id=topic_id,
                partition=p.partition,
                fetch_offset=p.fetch_offset,
                max_bytes=p.partition_max_bytes,
                log_start_offset=p.log_start_offset,
                current_leader_epoch=p.current_leader_epoch,
                last_fetched_epoch=p.last_fetched_epoch,
            )
    return list(out.values())


def _forgotten(req: FetchRequest, by_id: bool) -> list[tuple[Any, int]]:
    out: list[tuple[Any, int]] = []
    for t in req.forgotten_topics_data:
        key = t.topic_id if by_id else t.topic
        out.extend((key, p) for p in t.partitions)
    return out


_LEADER_ERRORS = (ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch)


def _partition_entry(cp: CachedPartition, r: LogReadResult, read_committed: bool,
                     leaders: dict[int, Any], metadata: ClusterMetadata, version: int) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "partition_index": cp.partition,
        "error_code": r.error,
        "high_watermark": r.high_watermark,
        "last_stable_offset": r.last_stable_offset,
        "log_start_offset": r.log_start_offset,
        # read_committed: (producer id, first offset) of the aborted transactions in the range read;
        # a partition KafkaApis answers itself (FetchResponse.partitionResponse: unknown, refused)
        # has the schema's default, an empty list
        "aborted_transactions": [] if r.partition is None and r.error is not ErrorCode.none else (
            None if not read_committed or r.aborted_transactions is None else [
                {"producer_id": t.producer_id, "first_offset": t.first_offset} for t in r.aborted_transactions]),
        "preferred_read_replica": -1,
        "records": r.records,
    }
    if r.diverging_epoch is not None:
        entry["diverging_epoch"] = {"epoch": r.diverging_epoch[0], "end_offset": r.diverging_epoch[1]}
    if version >= 16 and r.error in _LEADER_ERRORS and r.partition is not None:
        # KafkaApis' processResponseCallback (v16+, KIP-951): the current leader and its endpoint
        p = r.partition
        entry["current_leader"] = leader_info(p)
        node = metadata.brokers.get(p.leader_id)
        if node is not None and node.alive:
            leaders[node.node_id] = node
    return entry


def _respond(ctx: RequestContext, fctx: FetchContext, by_id: bool, read_committed: bool,
             results: list[LogReadResult], follower: bool = False) -> Response:
    """The response (``FetchContext.updateAndGenerateResponseData``), built without touching the
    session: its ``finish`` updates an incremental session or creates a full fetch's, and runs only
    when no quota throttles the response; ``if_throttled`` is ``getThrottledResponse`` (no
    partitions; a full or sessionless fetch answers session id 0, an incremental one keeps its id),
    as Kafka decides the quota before the session is touched."""
    broker = ctx.broker
    pairs = list(zip(fctx.partitions, results))
    session = fctx.session if fctx.kind == "incremental" else None
    if session is not None:  # only the partitions with news (CachedPartition.maybeUpdateResponseData)
        sent = [cp.needs_response(r.error, r.high_watermark, r.log_start_offset, r.size_bytes > 0) for cp, r in pairs]
        session_id = session.session_id
    else:
        sent, session_id = [True] * len(pairs), 0
    # The fetches one completion pass answers from the same results (ReplicaManager shares them
    # by identity) build their topics, journal partitions and encoder once (``shared_encodings``);
    # the key names each result by identity and the entry holds them, so no id is reused in the pass
    shared = broker.replica_manager.shared_encodings
    topics, node_list, partitions, encode, _held = shared.get(
        ("respond", by_id, read_committed, ctx.listener_name, follower,
         tuple((cp.topic, cp.topic_id, cp.partition, id(r), s) for (cp, r), s in zip(pairs, sent))),
        lambda: _topics(ctx, pairs, sent, by_id, read_committed, shared, follower))
    body = {
        "error_code": ErrorCode.none,
        "session_id": session_id,
        "responses": topics,
        "node_endpoints": node_list,
    }

    def finish() -> Body:
        for cp, r in pairs:
            cp.maybe_update_response(r.error, r.high_watermark, r.log_start_offset, r.size_bytes > 0)
        if session is not None:
            for cp, r in pairs:
                if r.size_bytes:
                    session.partitions.move_to_end((cp.topic_id if by_id else cp.topic, cp.partition))
            return body
        if fctx.kind == "full" and ctx.version >= 7:
            new = broker.fetch_manager.maybe_create_session(fctx.partitions, by_id, broker.clock.monotonic_ms())
            if new is not None:
                return {**body, "session_id": new.session_id}
        return body

    def if_throttled() -> Body:
        return {"error_code": ErrorCode.none, "session_id": session_id, "responses": []}

    return Response(body, partitions, finish=finish, if_throttled=if_throttled, encode=encode)


def _topics(ctx: RequestContext, pairs: list[tuple[CachedPartition, LogReadResult]], sent: list[bool], by_id: bool,
            read_committed: bool, shared: SharedEncodings, follower: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                                                     list[PartitionRecord],
                                                                     Callable[[RequestContext, Body], Any], list[Any]]:
    """What a response says of the partitions it sends (grouped by topic, in request order), its
    node endpoints, the journal's partitions (each read partition with its bytes, sent or not) and
    its encoder.  A follower's response has no node endpoints (KafkaApis answers it with none)."""
    metadata = ctx.metadata
    leaders: dict[int, Any] = {}
    topics: list[dict[str, Any]] = []
    index: dict[Any, dict[str, Any]] = {}
    for (cp, r), s in zip(pairs, sent):
        if not s:
            continue
        key = cp.topic_id if by_id else cp.topic
        t = index.get(key)
        if t is None:
            t = index[key] = {"topic": cp.topic, "topic_id": cp.topic_id or ZERO_UUID, "partitions": []}
            topics.append(t)
        t["partitions"].append(_partition_entry(cp, r, read_committed, leaders, metadata, ctx.version))
    sizes = {(cp.topic, cp.partition): r.size_bytes for cp, r in pairs if r.size_bytes}
    partitions = partition_errors(topics, "partitions", topic="topic", sizes=sizes)
    listed = {(p.topic, p.partition) for p in partitions}
    # read but not in the response (an incremental fetch): the bytes, no error
    partitions += [PartitionRecord(t, i, 0, n) for (t, i), n in sizes.items() if (t, i) not in listed]
    return (topics, [] if follower else node_endpoints(leaders.values(), ctx.listener_name), partitions,
            encoder(shared, topics),
            [r for _, r in pairs])


def _exists(metadata: ClusterMetadata, cp: CachedPartition, by_id: bool) -> bool:
    """``metadataCache.contains``: the partition exists (KafkaApis reads only those)."""
    topic = metadata.topics_by_id.get(cp.topic_id) if by_id else metadata.topics.get(cp.topic)
    return topic is not None and 0 <= cp.partition < len(topic.partitions)


def error_response(ctx: RequestContext, req: FetchRequest, error: ErrorCode) -> Response:
    """``FetchRequest.getErrorResponse``: below v13 every partition the request lists (as listed)
    with the error, from v13 none; the top-level error, and the request's session id."""
    topics = [] if ctx.version >= 13 else [
        {"topic": t.topic, "topic_id": t.topic_id or ZERO_UUID, "partitions": [
            {"partition_index": p.partition, "error_code": error, "high_watermark": -1, "last_stable_offset": -1,
             "log_start_offset": -1, "aborted_transactions": [], "preferred_read_replica": -1, "records": b""}
            for p in t.partitions]} for t in req.topics]
    return Response({"error_code": error, "session_id": req.session_id, "responses": topics},
                    partition_errors(topics, "partitions", topic="topic"))


def _replica_id(ctx: RequestContext, req: FetchRequest) -> int:
    """FetchRequest.replicaId (v15+: the replica state's); 0 or more: from a follower (isFromFollower)."""
    if ctx.version >= 15:
        return req.replica_state.replica_id if req.replica_state is not None else -1
    return int(req.replica_id)


def handle(ctx: RequestContext, req: FetchRequest) -> Outcome:
    v = ctx.version
    by_id = v >= 13
    session_id = req.session_id
    epoch = req.session_epoch
    broker = ctx.broker
    now = broker.clock.monotonic_ms()
    if by_id and any((t.topic_id or ZERO_UUID) == ZERO_UUID for t in req.topics):
        # Kafka 4.4.0 fails the whole request for a topic id of zeros (an exception out of the handler,
        # FetchRequest.getErrorResponse: UNKNOWN_SERVER_ERROR, no partitions); an unknown id that is not
        # zero is the partition's UNKNOWN_TOPIC_ID
        return error_response(ctx, req, ErrorCode.unknown_server_error)
    fctx: FetchContext = broker.fetch_manager.new_context(
        session_id, epoch, _requested(req, by_id, ctx.metadata), _forgotten(req, by_id), by_id, now
    )
    if fctx.kind == "error":
        if fctx.error is ErrorCode.unknown_server_error:  # an exception in FetchManager.newContext
            return error_response(ctx, req, fctx.error)
        return Response({"error_code": fctx.error, "session_id": 0, "responses": []})
    # KafkaApis.handleFetchRequest: min(request max_bytes, fetch.max.bytes, the consumer quota's window)
    quota_max = broker.quotas.fetch.max_value_in_quota_window(ctx.principal, ctx.client_id)
    max_bytes = int(min(req.max_bytes, ctx.metadata.config["fetch.max.bytes"], quota_max))
    replica_id = _replica_id(ctx, req)
    follower = replica_id >= 0
    params = FetchParams(max_wait_ms=timedelta_ms(req.max_wait), min_bytes=min(req.min_bytes, req.max_bytes),
                         max_bytes=max_bytes, isolation_level=req.isolation_level, by_topic_id=by_id,
                         replica_id=replica_id)
    read_committed = req.isolation_level == 1
    injected = ctx.injected
    if injected is not None:
        # an injected error answers at once, as a partition error does in ReplicaManager.fetchMessages
        results = broker.replica_manager.read_from_local_log(params, fctx.partitions)
        for i, cp in enumerate(fctx.partitions):
            if injected.applies(cp.topic, cp.partition):
                results[i] = LogReadResult(injected.error, partition=ctx.metadata.partition(cp.topic, cp.partition))
        return _respond(ctx, fctx, by_id, read_committed, results)
    # KafkaApis.handleFetchRequest: a topic the client may not READ is answered
    # TOPIC_AUTHORIZATION_FAILED and not read; the others are read; a fetch from a follower needs
    # CLUSTER_ACTION instead, without which every partition is refused
    # (no authorizer: nothing to check per partition on the hot path)
    if ctx.broker.authorizer is None:
        denied: set[int] = set()
    elif follower:
        denied = set() if authorized(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME) else \
            set(range(len(fctx.partitions)))
    else:
        denied = {i for i, cp in enumerate(fctx.partitions)
                  if cp.topic and not authorized(ctx, AclOperation.READ, ResourceType.TOPIC, cp.topic)}
    wanted = [cp for i, cp in enumerate(fctx.partitions) if i not in denied] if denied else fctx.partitions
    if req.isolation_level not in (0, 1) and any(_exists(ctx.metadata, cp, by_id) for cp in wanted):
        # FetchIsolation.of -> IsolationLevel.forId throws IllegalArgumentException once some
        # partition is to be read: UNKNOWN_SERVER_ERROR for the whole request
        return error_response(ctx, req, ErrorCode.unknown_server_error)

    def respond(results: list[LogReadResult]) -> Response:
        if denied:
            read = iter(results)
            results = [LogReadResult(ErrorCode.topic_authorization_failed) if i in denied else next(read)
                       for i in range(len(fctx.partitions))]
        return _respond(ctx, fctx, by_id, read_committed, results, follower)

    deferred = Deferred()
    deferred.delayed = broker.replica_manager.fetch_messages(
        params, wanted, lambda results: deferred.complete_with(lambda: respond(results)))
    return deferred


# Fetch gives an injected error to the partitions it applies to and serves the others.
HANDLES_INJECTED_ERRORS = True
