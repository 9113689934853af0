"""AlterShareGroupOffsets (key 91): v0-0 (KIP-932).

Behavior (Kafka 4.4's ``GroupMetadataManager.alterShareGroupOffsets``): only on an Empty share group
(NON_EMPTY_GROUP; a group of another type: GROUP_ID_NOT_FOUND; an absent one is created), the named
partitions' share state is initialized at the given start offsets, which consumers then start from;
UNKNOWN_TOPIC_OR_PARTITION per partition of an unknown topic or past its partitions; an empty group
id: INVALID_GROUP_ID; NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE from another broker.  With an
authorizer (``KafkaApis.handleAlterShareGroupOffsetsRequest``): READ on the group (GROUP_AUTHORIZATION_FAILED
for the whole request), READ on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions, listed first).

Version notes:
* v0 only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..security.authorizer import AclOperation, ResourceType
from ..observe.journal import PartitionRecord
from ..request import Body, RequestContext, Response
from ..share import offsets
from ..controller.features import SHARE_VERSION
from .common import ZERO_UUID, authorized

if TYPE_CHECKING:
    from protocol.request_types import AlterShareGroupOffsetsRequest

API_KEY = ApiKey.ALTER_SHARE_GROUP_OFFSETS


def handle(ctx: RequestContext, req: AlterShareGroupOffsetsRequest) -> Response:
    if not ctx.broker.features.enables(SHARE_VERSION):  # share groups off (4.1's default)
        return error_response(ctx, req, ErrorCode.unsupported_version)
    topics = [(str(t.topic_name), [(int(p.partition_index), int(p.start_offset)) for p in t.partitions])
              for t in req.topics]
    denied = [t for t in topics if not authorized(ctx, AclOperation.READ, ResourceType.TOPIC, t[0])]
    r = offsets.alter(ctx.broker.share_groups, ctx.node_id, req.group_id, [t for t in topics if t not in denied])
    if r.error is not ErrorCode.none:
        return error_response(ctx, req, r.error, r.message)
    ids = ctx.metadata.topics
    r.topics[:0] = [offsets.TopicOffsets(name, ids[name].topic_id if name in ids else ZERO_UUID, [
        offsets.PartitionOffset(p, error=ErrorCode.topic_authorization_failed,
                                message=offsets.MESSAGES[ErrorCode.topic_authorization_failed]) for p, _ in parts])
        for name, parts in denied]
    responses: list[Body] = [
        {"topic_name": t.name, "topic_id": t.topic_id, "partitions": [
            {"partition_index": p.partition, "error_code": p.error, "error_message": p.message}
            for p in t.partitions]} for t in r.topics]
    journal = [PartitionRecord(t.name, p.partition, int(p.error)) for t in r.topics for p in t.partitions]
    return Response({"error_code": ErrorCode.none, "error_message": None, "responses": responses}, journal)


def error_response(ctx: RequestContext, req: AlterShareGroupOffsetsRequest, error: ErrorCode,
                   message: str | None = None) -> Response:
    """AlterShareGroupOffsetsRequest.getErrorResponseData."""
    return Response({"error_code": error, "error_message": message or offsets.MESSAGES.get(error),
                     "responses": []})
