"""ConsumerGroupDescribe (key 69): v0-1 (KIP-848).

Behavior: per group the state (Empty, Assigning, Reconciling, Stable), group
and assignment epochs, the assignor, and each member's epoch, subscription,
current assignment and target assignment.  A classic group or an unknown one
gets GROUP_ID_NOT_FOUND with Kafka's message; NOT_COORDINATOR /
COORDINATOR_NOT_AVAILABLE per group.

Version notes:
* v1 member type (KIP-1099; always 1, the consumer protocol).
"""

from __future__ import annotations

from typing import Any

from protocol.registry import ApiKey
from ..request import RequestContext

API_KEY = ApiKey.CONSUMER_GROUP_DESCRIBE


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    include = bool(req.include_authorized_operations)
    consumer = ctx.broker.groups.consumer
    return {"groups": [consumer.describe(ctx.node_id, gid, include) for gid in req.group_ids]}
