"""ShareFetch (key 78): v1-2 (KIP-932).

Behavior (Kafka 4.4's ``KafkaApis.handleShareFetchRequest`` and ``SharePartitionManager``,
``mockbroker/share/``):
* A null group id, or a member id null, empty or longer than 36 characters: INVALID_REQUEST; with an
  authorizer, no READ on the group: GROUP_AUTHORIZATION_FAILED (after the group id's check, before
  the member id's); a topic the client may not READ: TOPIC_AUTHORIZATION_FAILED for its partitions,
  fetched or acknowledged.
* Share sessions per (group, member) on this broker (``ShareSessionCache``): epoch 0 opens one
  (acknowledgements with it: INVALID_REQUEST), a later epoch must be the session's
  (INVALID_SHARE_SESSION_EPOCH; SHARE_SESSION_NOT_FOUND without one), -1 closes it and releases
  what the member holds.  With group.share.max.share.sessions sessions a new one is refused with
  SHARE_SESSION_LIMIT_REACHED once max_wait passed.  A session ends with its connection too.
* Piggy-backed acknowledgements are applied before the fetch; their outcome is each partition's
  acknowledge_error_code (INVALID_REQUEST for malformed batches, INVALID_RECORD_STATE for records
  not acquired by the member, UNKNOWN_TOPIC_ID).
* The fetch acquires records (``SharePartition.acquire``) under the group's
  share.record.lock.duration.ms, returned as acquired_records with their delivery counts; it
  waits in the ShareFetch purgatory (max_wait, min_bytes) until records can be acquired.
  Per partition: UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER with the
  current leader and its endpoint (otherwise the schema's 0, 0), and never an error message (the
  response is rebuilt without them).  An incremental session answers only the partitions with
  records or news.  A share_acquire_mode other than 0 or 1 with partitions to fetch:
  UNKNOWN_SERVER_ERROR for the whole request (ShareAcquireMode.forId throws in the handler).
* A whole-request error (getErrorResponse) carries its code only, never a message.
* The quotas as Fetch's: a response a quota throttles is sent without partitions (the records it
  acquired stay locked until their lock expires, as in Kafka).

Version notes:
* v1: the GA protocol (Kafka 4.1+).  v2 (KIP-1206, KIP-1222): share_acquire_mode (record_limit),
  is_renew_ack (RENEW acknowledgements only, no fetch; max_bytes, min_bytes, max_records and
  max_wait must then be 0: INVALID_REQUEST).
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

from protocol.codec import timedelta_ms
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..server.replica_manager import FetchParams
from ..request import Body, Deferred, Outcome, RequestContext, Response
from ..share.manager import READ_COMMITTED, PartitionResult, ShareFetch
from ..share.partition import ShareError
from ..share.session import FINAL_EPOCH, ShareFetchContext, SharePartitionId
from ..controller.features import SHARE_VERSION
from .common import ZERO_UUID, node_endpoints
from .share_acks import (
    AckResults,
    acknowledgements,
    current_leader,
    error_response_body,
    handle_acknowledgements,
    journal_partitions,
    readable_topics,
    refused,
)

if TYPE_CHECKING:
    from protocol.request_types import ShareFetchRequest

API_KEY = ApiKey.SHARE_FETCH
log = logging.getLogger("mockbroker.share")
ACQUIRE_MODES = (0, 1)  # ShareAcquireMode.forId: BATCH_OPTIMIZED, RECORD_LIMIT


def _requested(ctx: RequestContext, req: ShareFetchRequest) -> list[tuple[SharePartitionId, str | None]]:
    """shareFetchData: the partitions the request names, with their topic names (None: unknown id)."""
    out: list[tuple[SharePartitionId, str | None]] = []
    for t in req.topics:
        topic_id = t.topic_id or ZERO_UUID
        topic = ctx.metadata.topics_by_id.get(topic_id)
        for p in t.partitions:
            out.append(((topic_id, p.partition_index), topic.name if topic is not None else None))
    return out


def handle(ctx: RequestContext, req: ShareFetchRequest) -> Outcome:
    if not ctx.broker.features.enables(SHARE_VERSION):  # share groups off (4.1's default)
        return error_response_body(ErrorCode.unsupported_version)
    broker = ctx.broker
    group_id, member_id = req.group_id, req.member_id
    answer = refused(ctx, group_id, member_id)
    if answer is not None or group_id is None or member_id is None:
        return answer or error_response_body(ErrorCode.invalid_request)
    readable = readable_topics(ctx)
    epoch = req.share_session_epoch
    renew = ctx.version >= 2 and bool(getattr(req, "is_renew_ack", False))
    max_wait_ms = timedelta_ms(req.max_wait)
    if renew:
        wrong = [f"{name} must be set to 0, " for name, value in (
            ("maxBytes", req.max_bytes), ("minBytes", req.min_bytes), ("maxRecords", req.max_records),
            ("maxWaitMs", max_wait_ms)) if value != 0]
        if wrong:
            log.info("ShareFetch from %s refused: %sif isRenewAck is true.", ctx.client_id, "".join(wrong))  # as Kafka logs it
            return error_response_body(ErrorCode.invalid_request)
    acks_present = any(getattr(p, "acknowledgement_batches", ()) for t in req.topics for p in t.partitions)
    forgotten: list[SharePartitionId] = [(t.topic_id or ZERO_UUID, int(p)) for t in req.forgotten_topics_data
                                         for p in t.partitions]
    manager = broker.share_partitions
    requested = _requested(ctx, req)
    if len({key for key, _ in requested}) < len(requested):
        # a partition named twice (or a topic listed twice): Kafka 4.4.0's newContext throws building the
        # session's partitions, so the request fails as a whole (UNKNOWN_SERVER_ERROR) and opens no session
        log.info("ShareFetch from %s refused: a partition is named twice", ctx.client_id)
        return error_response_body(ErrorCode.unknown_server_error)
    try:
        fctx = manager.sessions.new_context(group_id, member_id, epoch, requested, forgotten,
                                            acks_present, ctx.conn_id)
    except ShareError as e:
        if e.error is ErrorCode.share_session_limit_reached:
            # createIdleShareFetchTimerTask: the refusal comes after max_wait
            deferred = Deferred()
            broker.clock.call_later(max_wait_ms, lambda: deferred.complete_with(lambda: error_response_body(e.error)))
            return deferred
        return error_response_body(e.error)
    erroneous: AckResults = {}
    ack_results: AckResults = {}
    if acks_present:
        batches = acknowledgements(req.topics, ctx.metadata, erroneous)
        ack_results = handle_acknowledgements(broker, group_id, member_id, batches, erroneous, ctx.version >= 2,
                                               readable)
    partitions = [] if renew else fctx.fetch_partitions()
    fetch_errors: dict[SharePartitionId, PartitionResult] = {}
    interested: list[tuple[SharePartitionId, str]] = []
    for key, topic in partitions:
        topic_id, index = key
        t = ctx.metadata.topics_by_id.get(topic_id)
        if topic is None or t is None:
            fetch_errors[key] = PartitionResult(ErrorCode.unknown_topic_id)
        elif not readable(topic):
            fetch_errors[key] = PartitionResult(ErrorCode.topic_authorization_failed)
        elif not 0 <= index < len(t.partitions):
            fetch_errors[key] = PartitionResult(ErrorCode.unknown_topic_or_partition)
        else:
            interested.append((key, topic))
    configs = manager.configs
    quota_max = broker.quotas.fetch.max_value_in_quota_window(ctx.principal, ctx.client_id)
    max_bytes = int(min(req.max_bytes, ctx.metadata.config["fetch.max.bytes"], quota_max))
    params = FetchParams(max_wait_ms=max_wait_ms, min_bytes=min(req.min_bytes, max_bytes), max_bytes=max_bytes,
                         isolation_level=READ_COMMITTED if configs.read_committed(group_id) else 0, by_topic_id=True)
    mode = int(getattr(req, "share_acquire_mode", 0))
    if interested and mode not in ACQUIRE_MODES:
        # new ShareFetch(...) throws IllegalArgumentException("Unknown share acquire mode id") out of the
        # handler, after the acknowledgements: KafkaApis.handleError, UNKNOWN_SERVER_ERROR for the request
        log.info("ShareFetch from %s refused: unknown share acquire mode id %d", ctx.client_id, mode)
        return error_response_body(ErrorCode.unknown_server_error)
    fetch = ShareFetch(group_id, member_id, params, mode, req.batch_size, req.max_records, interested)

    def respond() -> Response:
        results = {**fetch.results, **fetch_errors}
        return _respond(ctx, fctx, group_id, member_id, epoch, partitions, results, ack_results)

    if not interested:
        return respond()
    deferred = Deferred()
    deferred.delayed = manager.fetch_messages(fetch, epoch, lambda: deferred.complete_with(respond))
    return deferred


def _entry(ctx: RequestContext, index: int, r: PartitionResult, leaders: dict[int, Any],
           topic_id: uuid.UUID) -> dict[str, Any]:
    # createResponse (KafkaApis.getResponsePartitionData) rebuilds each partition from its index, error
    # code, records, acquired records and current leader: its error message never reaches the wire
    entry: dict[str, Any] = {"partition_index": index, "error_code": r.error, "error_message": None,
                             "acknowledge_error_code": ErrorCode.none, "acknowledge_error_message": None,
                             "current_leader": current_leader(ctx.metadata, topic_id, index, r.error, leaders),
                             "records": r.records,
                             "acquired_records": [{"first_offset": a.first_offset, "last_offset": a.last_offset,
                                                   "delivery_count": a.delivery_count} for a in r.acquired]}
    return entry


def _respond(ctx: RequestContext, fctx: ShareFetchContext, group_id: str, member_id: str, epoch: int,
             partitions: list[tuple[SharePartitionId, str | None]], results: dict[SharePartitionId, PartitionResult],
             ack_results: AckResults) -> Response:
    """processShareFetchResponse: the partitions the context answers (an incremental session's with
    records or news), then the acknowledgements' outcomes merged in; ``finish`` updates the session
    (only for a response no quota throttles) and closes it at epoch -1."""
    broker = ctx.broker
    order = [key for key, _ in partitions if key in results]
    flags = [(key, bool(results[key].acquired), int(results[key].error)) for key in order]
    selected = fctx.select(flags, update=False)
    leaders: dict[int, Any] = {}
    topics: list[dict[str, Any]] = []
    by_topic: dict[uuid.UUID, dict[str, Any]] = {}
    entries: dict[SharePartitionId, dict[str, Any]] = {}
    journal: list[tuple[uuid.UUID, int, int, int]] = []

    def topic_of(topic_id: uuid.UUID, into: list[dict[str, Any]], index: dict[uuid.UUID, dict[str, Any]]
                 ) -> dict[str, Any]:
        t = index.get(topic_id)
        if t is None:
            t = index[topic_id] = {"topic_id": topic_id, "partitions": []}
            into.append(t)
        return t

    for key in order:
        if key not in selected:
            continue
        r = results[key]
        e = _entry(ctx, key[1], r, leaders, key[0])
        entries[key] = e
        topic_of(key[0], topics, by_topic)["partitions"].append(e)
        journal.append((key[0], key[1], int(r.error), len(r.records)))

    def with_acks(base: list[dict[str, Any]], index: dict[uuid.UUID, dict[str, Any]],
                  have: dict[SharePartitionId, dict[str, Any]]) -> None:
        for key, (error, message) in ack_results.items():
            e = have.get(key)
            if e is None:
                e = _entry(ctx, key[1], PartitionResult(), leaders, key[0])
                topic_of(key[0], base, index)["partitions"].append(e)
            e["acknowledge_error_code"] = error
            e["acknowledge_error_message"] = message

    with_acks(topics, by_topic, entries)
    lock_ms = broker.share_partitions.configs.record_lock_duration_ms(group_id)
    body: Body = {"error_code": ErrorCode.none, "error_message": None, "acquisition_lock_timeout": lock_ms,
                  "responses": topics, "node_endpoints": node_endpoints(leaders.values(), ctx.listener_name)}

    def finish() -> Body:
        fctx.select(flags, update=True)
        if epoch == FINAL_EPOCH:
            broker.share_partitions.release_session(group_id, member_id)
        return body

    def if_throttled() -> Body:
        """ShareFetchContext.throttleResponse, with the acknowledgements' outcomes."""
        throttled: list[dict[str, Any]] = []
        with_acks(throttled, {}, {})
        if epoch == FINAL_EPOCH:
            broker.share_partitions.release_session(group_id, member_id)
        return {"error_code": ErrorCode.none, "error_message": None, "acquisition_lock_timeout": 0,
                "responses": throttled, "node_endpoints": []}

    return Response(body, journal_partitions(ctx.metadata, journal), finish=finish, if_throttled=if_throttled)
