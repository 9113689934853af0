"""DeleteShareGroupOffsets (key 92): v0-0 (KIP-932).

Behavior (Kafka 4.4's ``GroupCoordinatorShard.initiateDeleteShareGroupOffsets``): only on an Empty
share group (NON_EMPTY_GROUP; an absent group or one of another type: GROUP_ID_NOT_FOUND), the share
state of the named topics' initialized partitions is deleted, so consumers start again by
share.auto.offset.reset; per topic UNKNOWN_TOPIC_OR_PARTITION for an unknown topic, or "There is no
offset information to delete." for one without share state; an empty group id: INVALID_GROUP_ID.
With an authorizer (``KafkaApis.handleDeleteShareGroupOffsetsRequest``): DELETE on the group
(GROUP_AUTHORIZATION_FAILED for the whole request), READ on each topic (TOPIC_AUTHORIZATION_FAILED
for that topic, listed first).

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
    from protocol.request_types import DeleteShareGroupOffsetsRequest

API_KEY = ApiKey.DELETE_SHARE_GROUP_OFFSETS


def handle(ctx: RequestContext, req: DeleteShareGroupOffsetsRequest) -> Response:
    if not ctx.broker.features.enables(SHARE_VERSION):  # share groups off (4.1's default)
        return error_response(ctx, req, ErrorCode.unsupported_version)
    names = [t.topic_name for t in req.topics]
    denied = [n for n in names if not authorized(ctx, AclOperation.READ, ResourceType.TOPIC, n)]
    r = offsets.delete(ctx.broker.share_groups, ctx.node_id, req.group_id, [n for n in names if n not in denied])
    if r.error is not ErrorCode.none:
        return error_response(ctx, req, r.error, r.message)
    error = ErrorCode.topic_authorization_failed
    r.topics[:0] = [offsets.TopicOffsets(n, ZERO_UUID, error=error, message=offsets.MESSAGES[error]) for n in denied]
    responses: list[Body] = [{"topic_name": t.name, "topic_id": t.topic_id, "error_code": t.error,
                              "error_message": t.message} for t in r.topics]
    journal = [PartitionRecord(t.name, -1, int(t.error)) for t in r.topics]
    return Response({"error_code": ErrorCode.none, "error_message": None, "responses": responses}, journal)


def error_response(ctx: RequestContext, req: DeleteShareGroupOffsetsRequest, error: ErrorCode,
                   message: str | None = None) -> Response:
    """DeleteShareGroupOffsetsRequest.getErrorDeleteResponseData."""
    return Response({"error_code": error, "error_message": message or offsets.MESSAGES.get(error),
                     "responses": []})
