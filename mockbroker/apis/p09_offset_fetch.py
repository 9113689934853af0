"""OffsetFetch (key 9): v1-10.

Behavior (Kafka's OffsetMetadataManager.fetchOffsets / fetchAllOffsets, see
``mockbroker/group/offsets.py``):
* Committed offsets of the asked partitions, offset -1 and empty metadata for a
  partition without a commit; a null topic list (v2+) returns every committed
  partition of the group.  A group the coordinator does not know answers -1s.
* INVALID_GROUP_ID for a null group id, NOT_COORDINATOR /
  COORDINATOR_NOT_AVAILABLE when this broker does not lead the group's
  __consumer_offsets partition: at the group level from v2, on every partition
  for v1 (no group-level error field).
* require_stable (v7+): a partition with a transactional offset still waiting
  for its transaction's marker answers UNSTABLE_OFFSET_COMMIT and offset -1
  (the client retries); without it the last committed offset is answered.

Version notes:
* v2 top-level error, null topics = all.  v3 throttle.  v4 clients back off.
* v5 committed leader epoch.  v6 flexible.  v7 require_stable.
* v8 several groups (KIP-709).  v9 member id and epoch (KIP-848: a consumer
  group's member gets UNKNOWN_MEMBER_ID / STALE_MEMBER_EPOCH; not checked for
  classic groups).  v10 topic ids.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import Body, RequestContext, Response
from ..security.authorizer import AclOperation, ResourceType
from .common import authorized, first_error, partition_errors

if TYPE_CHECKING:
    from protocol.request_types import OffsetFetchRequest

API_KEY = ApiKey.OFFSET_FETCH


def _partition(index: int, om: Any, error: ErrorCode = ErrorCode.none) -> dict[str, Any]:
    if om is None or error is ErrorCode.unstable_offset_commit:
        return {"partition_index": index, "committed_offset": -1, "committed_leader_epoch": -1,
                "metadata": "", "error_code": error}
    return {"partition_index": index, "committed_offset": om.offset, "committed_leader_epoch": om.leader_epoch,
            "metadata": om.metadata, "error_code": error}


def _one(ctx: RequestContext, group_id: str, topics: Any, by_id: bool, member: tuple[str | None, int] = (None, -1),
         require_stable: bool = False) -> tuple[ErrorCode, list[dict[str, Any]]]:
    """The group's error and its topics; ``member`` (id, epoch) comes with v9+."""
    cluster = ctx.metadata
    groups = ctx.broker.groups

    def stable(tp: tuple[str, int]) -> ErrorCode:
        if require_stable and groups.has_pending_transactional_offsets(group_id, tp):
            return ErrorCode.unstable_offset_commit
        return ErrorCode.none

    # KafkaApis: DESCRIBE on the group (v8+ per group; below, the whole request, apis/authorization.py),
    # then the topics the client may DESCRIBE
    if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return ErrorCode.group_authorization_failed, []

    def may_describe(tname: str) -> bool:
        return authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, tname)

    if topics is None:  # every committed partition (of the topics the client may describe)
        err, stored = ctx.broker.groups.fetch_offsets(ctx.node_id, group_id, None, *member)
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (tname, idx), om in sorted(stored.items()):
            if not may_describe(tname):
                continue
            by_topic.setdefault(tname, []).append(_partition(idx, om, stable((tname, idx))))
        out = []
        for committed, parts in by_topic.items():
            t = cluster.topics.get(committed)
            if by_id and t is None:
                continue
            entry: dict[str, Any] = {"name": committed, "partitions": parts}
            if by_id:  # only the v10 groups' topics have an id
                entry["topic_id"] = t.topic_id if t is not None else None
            out.append(entry)
        return err, out
    asked: list[tuple[Any, str | None]] = []  # (the request's topic, its name; None: an unknown topic id)
    for t in topics:
        if by_id:
            topic = cluster.topics_by_id.get(t.topic_id) if t.topic_id else None
            asked.append((t, topic.name if topic is not None else None))
        else:
            asked.append((t, t.name))
    partitions = [(tname, i) for t, tname in asked if tname is not None and may_describe(tname)
                  for i in t.partition_indexes]
    err, stored = ctx.broker.groups.fetch_offsets(ctx.node_id, group_id, partitions, *member)
    if err is not ErrorCode.none:
        return err, []
    out = []
    for t, asked_name in asked:
        if asked_name is None:
            out.append({"topic_id": t.topic_id, "partitions": [
                _partition(i, None, ErrorCode.unknown_topic_id) for i in t.partition_indexes]})
            continue
        if not may_describe(asked_name):
            out.append({"name": asked_name, **({"topic_id": t.topic_id} if by_id else {}), "partitions": [
                _partition(i, None, ErrorCode.topic_authorization_failed) for i in t.partition_indexes]})
            continue
        out.append({"name": asked_name, **({"topic_id": t.topic_id} if by_id else {}),
                    "partitions": [_partition(i, stored[(asked_name, i)], stable((asked_name, i)))
                                   for i in t.partition_indexes]})
    return ErrorCode.none, out


def _response(body: Body) -> Response:
    """v8+: each group's error, the first failed one the journal's; before, the top-level one."""
    if "groups" in body:
        return Response(body, [p for g in body["groups"] for p in partition_errors(g["topics"], "partitions")],
                        first_error(body["groups"]))
    return Response(body, partition_errors(body["topics"], "partitions"))


def handle(ctx: RequestContext, req: OffsetFetchRequest) -> Response:
    if ctx.version >= 8:
        groups = []
        for g in req.groups:
            member = (g.member_id, g.member_epoch) if ctx.version >= 9 else (None, -1)
            err, topics = _one(ctx, g.group_id, g.topics, ctx.version >= 10, member, req.require_stable)
            groups.append({"group_id": g.group_id, "error_code": err, "topics": topics})
        return _response({"groups": groups})
    err, topics = _one(ctx, req.group_id, req.topics, False, require_stable=req.require_stable)
    if err is not ErrorCode.none and ctx.version < 2:
        # v1 has no top-level error: report it on every asked partition
        return _response({"topics": [{"name": t.name, "partitions": [_partition(i, None, err)
                                                                      for i in t.partition_indexes]}
                                     for t in req.topics or ()]})
    return _response({"topics": topics, "error_code": err})


def error_response(ctx: RequestContext, req: OffsetFetchRequest, error: ErrorCode) -> Response:
    if ctx.version >= 8:
        return _response({"groups": [{"group_id": g.group_id, "error_code": error, "topics": []} for g in req.groups]})
    if ctx.version < 2:  # no top-level error: on every asked partition
        return _response({"topics": [{"name": t.name, "partitions": [_partition(i, None, error)
                                                                      for i in t.partition_indexes]}
                                     for t in req.topics or ()]})
    return _response({"topics": [], "error_code": error})
