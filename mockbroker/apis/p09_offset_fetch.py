"""OffsetFetch (key 9): v1-10.

Behavior:
* Answers as Kafka does for a group with no committed offsets: every asked
  partition gets offset -1, no metadata, error NONE; a null topic list (all
  partitions, v2+) gets no topics.  The groups issue stores real commits.
* A group id the coordinator does not own gets NOT_COORDINATOR.

Version notes:
* v2 top-level error, null topics = all.  v3 throttle.  v4 clients back off.
* v5 committed leader epoch.  v6 flexible.  v7 require_stable.
* v8 several groups (KIP-709).  v9 member id and epoch (KIP-848).  v10 topic ids.
"""

from __future__ import annotations

from typing import Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from .p10_find_coordinator import coordinator_for

API_KEY = ApiKey.OFFSET_FETCH


def _topics(topics: Any) -> list[dict]:
    if topics is None:
        return []
    out = []
    for t in topics:
        parts = [
            {"partition_index": p, "committed_offset": -1, "committed_leader_epoch": -1,
             "metadata": "", "error_code": ErrorCode.none}
            for p in t.partition_indexes
        ]
        out.append({"name": getattr(t, "name", None), "topic_id": getattr(t, "topic_id", None), "partitions": parts})
    return out


def _group_error(ctx: Any, group_id: str) -> ErrorCode:
    node = coordinator_for(ctx.cluster, group_id)
    if node is None:
        return ErrorCode.coordinator_not_available
    return ErrorCode.none if node.node_id == ctx.node_id else ErrorCode.not_coordinator


def handle(ctx: Any, req: Any) -> dict:
    if ctx.version >= 8:
        groups = []
        for g in req.groups:
            err = _group_error(ctx, g.group_id)
            groups.append({"group_id": g.group_id, "error_code": err,
                           "topics": _topics(g.topics) if err is ErrorCode.none else []})
        return {"groups": groups}
    err = _group_error(ctx, req.group_id)
    if err is not ErrorCode.none and ctx.version < 2:
        # v0-1 have no top-level error: report it on every partition
        topics = _topics(req.topics)
        for t in topics:
            for p in t["partitions"]:
                p["error_code"] = err
        return {"topics": topics}
    return {"topics": _topics(req.topics) if err is ErrorCode.none else [], "error_code": err}
