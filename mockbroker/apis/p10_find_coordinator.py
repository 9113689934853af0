"""FindCoordinator (key 10): v0-6.

Behavior:
* Group keys (key type 0): the coordinator is the broker that leads the
  group's partition of ``__consumer_offsets`` in Kafka; here it is chosen the
  same way, ``abs(hash(group)) % 50`` over the live brokers, stable for a group.
* Transaction keys (key type 1): COORDINATOR_NOT_AVAILABLE, transactions are
  not simulated.  Any other key type: INVALID_REQUEST.
* The groups issue completes the group protocol on the coordinator.

Version notes:
* v1 key type, throttle.  v2 clients back off.  v3 flexible, error message.
* v4 batched coordinator keys (KIP-699).  v6 share-group keys.
"""

from __future__ import annotations

from typing import Any

from protocol.errors import ErrorCode
from protocol.registry import ApiKey

API_KEY = ApiKey.FIND_COORDINATOR

GROUP, TRANSACTION, SHARE = 0, 1, 2
OFFSETS_TOPIC_PARTITIONS = 50  # offsets.topic.num.partitions


def coordinator_for(cluster: Any, key: str) -> Any:
    live = sorted(cluster.live_brokers(), key=lambda b: b.node_id)
    if not live:
        return None
    # GroupCoordinator.partitionFor: Utils.abs(groupId.hashCode) % offsets.topic.num.partitions,
    # then that partition's leader (partitions spread over the brokers in order).
    partition = (java_string_hash(key) & 0x7FFFFFFF) % OFFSETS_TOPIC_PARTITIONS
    return live[partition % len(live)]


def java_string_hash(s: str) -> int:
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h


def _lookup(ctx: Any, key: str, key_type: int) -> dict:
    if key_type not in (GROUP, TRANSACTION, SHARE):
        return {"key": key, "error_code": ErrorCode.invalid_request, "error_message": f"Invalid key type {key_type}",
                "node_id": -1, "host": "", "port": -1}
    node = coordinator_for(ctx.cluster, key) if key_type == GROUP else None
    if node is None:
        return {"key": key, "error_code": ErrorCode.coordinator_not_available,
                "error_message": "The coordinator is not available.", "node_id": -1, "host": "", "port": -1}
    return {"key": key, "error_code": ErrorCode.none, "error_message": None,
            "node_id": node.node_id, "host": node.host, "port": node.port}


def handle(ctx: Any, req: Any) -> dict:
    key_type = getattr(req, "key_type", GROUP)
    if ctx.version >= 4:
        return {"coordinators": [_lookup(ctx, k, key_type) for k in req.coordinator_keys]}
    out = _lookup(ctx, req.key, key_type)
    out.pop("key")
    return out
