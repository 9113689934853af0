"""DescribeLogDirs (key 35): v1-5.

Behavior:
* The log directories of the broker asked (``log.dirs``, the same on every broker; ``log_dirs.py``),
  each with the replicas it holds of the partitions asked (all of them when ``topics`` is null,
  ``ReplicaManager.describeLogDirs``): size in bytes (a follower's copy up to its log end offset),
  offset lag (high watermark less the replica's log end offset, 0 or more; a future replica's: the
  current one's end less its own) and whether it is a future replica (AlterReplicaLogDirs moving it).
  A topic none of whose partitions is in a directory is left out of it; a directory with none of
  them answers an empty topic list.
* Total and usable bytes: ``mock.log.dir.total.bytes`` per directory, less the bytes of its logs.
* Every directory is online (no KAFKA_STORAGE_ERROR).  With an authorizer, DESCRIBE on the cluster
  (``apis/authorization.py``), else CLUSTER_AUTHORIZATION_FAILED.

Version notes:
* v2 flexible.  v3 top-level error code.  v4 total and usable bytes (KIP-827).
* v5 (KIP-1066; from Kafka 4.3, so not for ``mock.kafka.version`` 4.2): ``is_cordoned``, always
  false (no directory is cordoned here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response

if TYPE_CHECKING:
    from protocol.request_types import DescribeLogDirsRequest

API_KEY = ApiKey.DESCRIBE_LOG_DIRS


def handle(ctx: RequestContext, req: DescribeLogDirsRequest) -> Response:
    wanted = None if req.topics is None else {(t.topic, p) for t in req.topics for p in t.partitions}
    results = []
    for directory, replicas, total, usable in ctx.broker.log_dirs.describe(ctx.node_id, wanted):
        topics: dict[str, list[dict[str, Any]]] = {}
        for r in replicas:
            topics.setdefault(r.topic, []).append({"partition_index": r.partition, "partition_size": r.size,
                                                   "offset_lag": r.offset_lag, "is_future_key": r.is_future})
        results.append({"error_code": ErrorCode.none, "log_dir": directory, "total_bytes": total,
                        "usable_bytes": usable, "is_cordoned": False,
                        "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()]})
    return Response({"error_code": ErrorCode.none, "results": results})


def error_response(ctx: RequestContext, req: DescribeLogDirsRequest, error: ErrorCode) -> Response:
    """``DescribeLogDirsRequest.getErrorResponse``: the top-level error (v3+), no directories."""
    return Response({"error_code": error, "results": []}, error_code=int(error))
