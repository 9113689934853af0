"""ListPartitionReassignments (key 46): v0-0.

Behavior:
* The partitions being reassigned (``Controller.reassignments``; all of them when ``topics`` is
  null, else those asked), each with its replicas (the target, then the replicas leaving) and the
  replicas being added and removed.  Partitions not being reassigned, and unknown topics or
  partitions, are left out, as Kafka's ``listPartitionReassignments`` leaves them.
* With an authorizer, DESCRIBE on the cluster (``apis/authorization.py``), else CLUSTER_AUTHORIZATION_FAILED.

Version notes:
* v0 flexible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response

if TYPE_CHECKING:
    from protocol.request_types import ListPartitionReassignmentsRequest

API_KEY = ApiKey.LIST_PARTITION_REASSIGNMENTS


def handle(ctx: RequestContext, req: ListPartitionReassignmentsRequest) -> Response:
    wanted = None if req.topics is None else {str(t.name): [int(i) for i in t.partition_indexes] for t in req.topics}
    topics: dict[str, list[dict[str, Any]]] = {}
    for p in ctx.broker.controller.reassignments(wanted):
        topics.setdefault(p.topic.name, []).append({
            "partition_index": p.index, "replicas": list(p.replicas), "adding_replicas": list(p.adding),
            "removing_replicas": list(p.removing)})
    return Response({"error_code": ErrorCode.none, "error_message": None,
                     "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()]})
