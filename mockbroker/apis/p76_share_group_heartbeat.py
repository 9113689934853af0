"""ShareGroupHeartbeat (key 76): v1-1 (KIP-932).

Behavior: see ``mockbroker/share/coordinator.py`` (Kafka's
GroupMetadataManager.shareGroupHeartbeat): joining with epoch 0 (the subscribed topic
names required), the server-side ``SimpleAssignor`` sharing partitions between members,
member epochs and FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID, leaving with epoch -1, the
session timeout (share.session.timeout.ms) on the heartbeat purgatory's timer, the heartbeat
interval from share.heartbeat.interval.ms (the group's config, else the broker's).  A
member's partitions come on its second heartbeat, after their share-group state was
initialized, as with Kafka.  With an authorizer (``KafkaApis.handleShareGroupHeartbeat``): READ on
the group (GROUP_AUTHORIZATION_FAILED), then DESCRIBE on every subscribed topic, else
TOPIC_AUTHORIZATION_FAILED for the whole heartbeat (after the member id's INVALID_REQUEST: a member
id null, empty or longer than 36 characters, answered without a message).  While
share groups are off (``mock.kafka.version`` 4.1, whose share.version a fresh cluster leaves at 0
until an UpdateFeatures raises it: ``FeatureControl.enables``) every heartbeat is UNSUPPORTED_VERSION,
before anything else, as Kafka 4.1.2 answers.

Version notes:
* v0 was Kafka 4.0's early access (not served by 4.1+); v1 is the GA protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from ..controller.features import SHARE_VERSION
from .common import assignment_body, client_host, disabled_group_heartbeat, undescribable_topic
from .share_acks import invalid_ids

if TYPE_CHECKING:
    from protocol.request_types import ShareGroupHeartbeatRequest

API_KEY = ApiKey.SHARE_GROUP_HEARTBEAT


def handle(ctx: RequestContext, req: ShareGroupHeartbeatRequest) -> Response:
    if not ctx.broker.features.enables(SHARE_VERSION):
        return disabled_group_heartbeat()
    member_id = req.member_id
    if member_id is None or member_id == "" or len(member_id) > 36:
        # KafkaApis.isMemberIdValid, after READ on the group: getErrorResponse, the code without its message
        return Response({"error_code": ErrorCode.invalid_request, "error_message": None, "member_id": None,
                         "member_epoch": 0, "heartbeat_interval": 0, "assignment": None})
    if invalid_ids(req.group_id, req.member_id) is None and undescribable_topic(ctx, req.subscribed_topic_names or ()):
        return Response({"error_code": ErrorCode.topic_authorization_failed, "error_message": None,
                         "member_id": None, "member_epoch": 0, "heartbeat_interval": 0, "assignment": None})
    r = ctx.broker.share_groups.heartbeat(ctx.node_id, req, ctx.client_id, client_host(ctx))
    return Response({"error_code": r.error, "error_message": r.error_message, "member_id": r.member_id,
                     "member_epoch": r.member_epoch, "heartbeat_interval": r.heartbeat_interval_ms,
                     "assignment": assignment_body(r.assignment)})
