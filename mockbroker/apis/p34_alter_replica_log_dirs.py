"""AlterReplicaLogDirs (key 34): v1-2.

Behavior:
* Moves the broker's replicas between its log directories (``ReplicaManager.alterReplicaLogDirs``,
  ``log_dirs.py``): a future replica in the destination copies the current one, after the broker's
  replication lag (``mock.replication.lag.ms``, ``set_lag``), until it has caught up with an end
  that did not move, then replaces it.  A partition already in the destination, or already moving
  there, answers NONE and nothing changes; a move to another directory replaces the running one.
* Per partition: a topic name too long for the future replica's directory (``<topic>-<partition>.<32 hex
  digits>-future`` longer than 255: a name of 214 characters and more for partition 0):
  INVALID_TOPIC_EXCEPTION, before anything else; a directory the broker does not have: LOG_DIR_NOT_FOUND; a partition the cluster
  does not have: UNKNOWN_TOPIC_OR_PARTITION; one this broker holds no replica of:
  REPLICA_NOT_AVAILABLE, and the directory is remembered for when a replica is placed here.
* A partition named twice: the last directory counts (Kafka collects them in a map).
* With an authorizer, ALTER on the cluster (``apis/authorization.py``), else CLUSTER_AUTHORIZATION_FAILED.

Version notes:
* v2 flexible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from .common import first_error, partition_errors

if TYPE_CHECKING:
    from protocol.request_types import AlterReplicaLogDirsRequest

API_KEY = ApiKey.ALTER_REPLICA_LOG_DIRS


def _moves(req: AlterReplicaLogDirsRequest) -> dict[tuple[str, int], str]:
    """``AlterReplicaLogDirsRequest.partitionDirs``: partition -> destination, the last one winning."""
    return {(t.name, p): d.path for d in req.dirs for t in d.topics for p in t.partitions}


# LocalLog.logFutureDirName: "<topic>-<partition>.<32 hex digits>-future", a directory name of at most 255
FUTURE_DIR_EXTRA = len(".") + 32 + len("-future")
MAX_DIR_NAME = 255


def _future_dir_fits(topic: str, partition: int) -> bool:
    """``ReplicaManager.alterReplicaLogDirs``' first check: the future replica's directory name fits a file
    system's 255 characters (else InvalidTopicException, "The topic name is too long.")."""
    return len(f"{topic}-{partition}") + FUTURE_DIR_EXTRA <= MAX_DIR_NAME


def handle(ctx: RequestContext, req: AlterReplicaLogDirsRequest) -> Response:
    log_dirs = ctx.broker.log_dirs
    errors = {tp: log_dirs.alter(ctx.node_id, tp[0], tp[1], path) if _future_dir_fits(*tp)
              else ErrorCode.invalid_topic_exception for tp, path in _moves(req).items()}
    return _respond(errors)


def _respond(errors: dict[tuple[str, int], ErrorCode]) -> Response:
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), error in errors.items():
        topics.setdefault(topic, []).append({"partition_index": partition, "error_code": error})
    results: list[dict[str, Any]] = [{"topic_name": t, "partitions": parts} for t, parts in topics.items()]
    return Response({"results": results}, partitions=partition_errors(results, "partitions", topic="topic_name"),
                    error_code=first_error(p for parts in topics.values() for p in parts))


def error_response(ctx: RequestContext, req: AlterReplicaLogDirsRequest, error: ErrorCode) -> Response:
    """``AlterReplicaLogDirsRequest.getErrorResponse``: ``error`` for every partition."""
    return _respond(dict.fromkeys(_moves(req), error))
