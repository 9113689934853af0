"""ConsumerGroupHeartbeat (key 68): v0-1 (KIP-848).

Behavior: see ``mockbroker/group/consumer_coordinator.py`` (Kafka's
GroupMetadataManager.consumerGroupHeartbeat): joining with epoch 0, the
server-side assignor (uniform, range), per-member reconciliation with
revocation before assignment, epochs and FENCED_MEMBER_EPOCH, leaving with
epoch -1 (or -2 for a static member), session and rebalance timeouts in the
purgatory.  The throttle time is set like every API's; Java clients do not
back off on it (shouldClientThrottle is false for this API), franz-go does.
With an authorizer (KafkaApis): READ on the group (GROUP_AUTHORIZATION_FAILED), then DESCRIBE on
every subscribed topic name, else TOPIC_AUTHORIZATION_FAILED for the heartbeat.  While the consumer
protocol is off (``mock.kafka.version`` 3.x, or group.version at 0: ``FeatureControl.enables``)
every heartbeat is UNSUPPORTED_VERSION, as Kafka answers it before anything else.

Version notes:
* v0: an empty member id gets one from the coordinator.
* v1: the client names its member id (required); subscribed topic regex.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..request import RequestContext, Response
from ..controller.features import GROUP_VERSION
from .common import assignment_body, client_host, disabled_group_heartbeat, undescribable_topic

if TYPE_CHECKING:
    from protocol.request_types import ConsumerGroupHeartbeatRequest

API_KEY = ApiKey.CONSUMER_GROUP_HEARTBEAT


def handle(ctx: RequestContext, req: ConsumerGroupHeartbeatRequest) -> Response:
    if not ctx.broker.features.enables(GROUP_VERSION):
        return disabled_group_heartbeat()
    if undescribable_topic(ctx, req.subscribed_topic_names or ()):  # KafkaApis, after READ on the group
        return Response({"error_code": ErrorCode.topic_authorization_failed, "error_message": None,
                         "member_id": None, "member_epoch": 0, "heartbeat_interval": 0, "assignment": None})
    r = ctx.broker.groups.consumer_group_heartbeat(ctx.node_id, ctx.version, req, ctx.client_id, client_host(ctx))
    return Response({"error_code": r.error, "error_message": r.error_message, "member_id": r.member_id,
                     "member_epoch": r.member_epoch, "heartbeat_interval": r.heartbeat_interval_ms,
                     "assignment": assignment_body(r.assignment)})
