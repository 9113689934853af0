"""DescribeShareGroupOffsets (key 90): v0-1 (KIP-932).

Behavior (Kafka 4.4's ``GroupCoordinatorService.describeShareGroupOffsets``): per group, the start
offset of each named partition as the share coordinator keeps it, with its leader epoch; -1 for a
partition whose share state was never initialized and for an unknown topic (topic id zero).  Topics
null: every initialized partition of the group, asked of its coordinator (NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE as the group's error).  Named partitions are read whatever the group is,
as Kafka reads them from the share coordinator without the group coordinator.  With an authorizer
(``KafkaApis.handleDescribeShareGroupOffsetsRequest``): DESCRIBE on each group, else that group's
GROUP_AUTHORIZATION_FAILED; DESCRIBE on each topic: with topics null the ones the client may not
describe are left out, named ones come last with TOPIC_AUTHORIZATION_FAILED per partition.

Version notes:
* v1 (KIP-1226): the lag, the partition's latest offset minus the start offset minus the records
  delivered past it (-1 when not initialized).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..security.authorizer import AclOperation, ResourceType
from ..request import RequestContext, Response
from ..share import offsets
from ..controller.features import SHARE_VERSION
from .common import ZERO_UUID, authorized, first_error

if TYPE_CHECKING:
    from protocol.request_types import DescribeShareGroupOffsetsRequest

API_KEY = ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS


def _group(group_id: str, r: offsets.OffsetsResult) -> dict[str, Any]:
    return {"group_id": group_id, "error_code": r.error, "error_message": r.message, "topics": [
        {"topic_name": t.name, "topic_id": t.topic_id, "partitions": [
            {"partition_index": p.partition, "start_offset": p.start_offset, "leader_epoch": p.leader_epoch,
             "lag": p.lag, "error_code": p.error, "error_message": p.message} for p in t.partitions]}
        for t in r.topics]}


def handle(ctx: RequestContext, req: DescribeShareGroupOffsetsRequest) -> Response:
    if not ctx.broker.features.enables(SHARE_VERSION):  # share groups off (4.1's default): every group refused
        groups = [_group(g.group_id, offsets.OffsetsResult(ErrorCode.unsupported_version)) for g in req.groups]
        return Response({"groups": groups}, error_code=first_error(groups))
    groups = []
    for g in req.groups:
        if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id):
            groups.append(_group(g.group_id, offsets.OffsetsResult(ErrorCode.group_authorization_failed)))
            continue
        topics = None if g.topics is None else [(str(t.topic_name), [int(p) for p in t.partitions]) for t in g.topics]
        denied = [t for t in topics or () if not authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t[0])]
        r = offsets.describe(ctx.broker.share_groups, ctx.node_id, g.group_id,
                             None if topics is None else [t for t in topics if t not in denied])
        if topics is None:
            r.topics = [t for t in r.topics if authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t.name)]
        elif r.error is ErrorCode.none:
            error = ErrorCode.topic_authorization_failed
            r.topics += [offsets.TopicOffsets(name, ZERO_UUID, [
                offsets.PartitionOffset(p, error=error, message=offsets.MESSAGES[error]) for p in parts])
                for name, parts in denied]
        groups.append(_group(g.group_id, r))
    return Response({"groups": groups}, error_code=first_error(groups))


def error_response(ctx: RequestContext, req: DescribeShareGroupOffsetsRequest, error: ErrorCode) -> Response:
    """DescribeShareGroupOffsetsRequest.getErrorDescribedGroup for every group."""
    groups = [_group(g.group_id, offsets.OffsetsResult(error, offsets.MESSAGES.get(error))) for g in req.groups]
    return Response({"groups": groups}, error_code=first_error(groups))
