"""Streams groups' topology descriptions (KIP-1331): what a member pushes with
StreamsGroupTopologyDescriptionUpdate (key 93) and StreamsGroupDescribe v1 returns.

Kafka keeps them through a StreamsGroupTopologyDescriptionPlugin (the class named by
``group.streams.topology.description.plugin.class``; none by default) and the group records only the
stored and failed epochs; mockbroker keeps the description in the group itself, and the store never
fails.  Mirrors StreamsGroupTopologyDescriptionManager, GroupCoordinatorService
.streamsGroupTopologyDescriptionUpdate and GroupMetadataManager.validateStreamsGroupTopologyDescriptionUpdate.
"""

from __future__ import annotations

import logging
from typing import Any, cast

from protocol.errors import ErrorCode

from .group import GroupType
from .registry import GroupRegistry
from .streams_group import StreamsGroup
from .streams_topology import Status

log = logging.getLogger("mockbroker.group")

DESCRIPTION_PLUGIN_CONFIG = "group.streams.topology.description.plugin.class"
# StreamsGroupDescribeResponse's TopologyDescriptionStatus
DESCRIPTION_NOT_REQUESTED, DESCRIPTION_NOT_STORED, DESCRIPTION_ERROR, DESCRIPTION_AVAILABLE = 0, 1, 2, 3


def current_topology_epoch(group: StreamsGroup) -> int:
    """StreamsGroup.currentTopologyEpoch."""
    return group.topology.topology_epoch if group.topology is not None else -1


def description_required(group: StreamsGroup, member_epoch: int, statuses: list[dict[str, Any]]) -> bool:
    """StreamsGroupTopologyDescriptionManager.maybeSetTopologyDescriptionRequired (a v1 heartbeat, a
    plugin configured): ask for a push of the current topology epoch when none is stored or failed for
    it and the member's topology is not stale; once per epoch (Kafka's backoff re-asks after it
    expires, mockbroker never does)."""
    current = current_topology_epoch(group)
    if (member_epoch < 0 or current < 0
            or current in (group.stored_description_topology_epoch, group.failed_description_topology_epoch)
            or any(st["status_code"] == int(Status.STALE_TOPOLOGY) for st in statuses)
            or group.description_requested_epoch == current):
        return False
    group.description_requested_epoch = current
    log.info("[GroupId %s] Requested topology description push at topology epoch %d.", group.group_id, current)
    return True


def store_description(registry: GroupRegistry, node_id: int, req: Any) -> tuple[ErrorCode, str | None]:
    """GroupCoordinatorService.streamsGroupTopologyDescriptionUpdate past the plugin check: the request
    validated (throwIfStreamsGroupTopologyDescriptionUpdateInvalid, then the group, member and epoch as
    GroupMetadataManager.validateStreamsGroupTopologyDescriptionUpdate), the description kept and the
    stored epoch advanced (updateTopologyDescriptionEpochs)."""
    if not req.member_id:
        return ErrorCode.invalid_request, "MemberId can't be empty."
    if not req.group_id:
        return ErrorCode.invalid_request, "GroupId can't be empty."
    err = registry.validate_group_status(req.group_id, node_id)
    if err is not None:
        return err, None
    existing = registry.get(req.group_id)
    if existing is None:
        return ErrorCode.group_id_not_found, f"Streams group {req.group_id} not found."
    if existing.group_type is not GroupType.STREAMS:
        return ErrorCode.group_id_not_found, f"Group {req.group_id} is not a streams group."
    group = cast(StreamsGroup, existing)
    if req.member_id not in group.members:
        return ErrorCode.unknown_member_id, f"Member {req.member_id} is not a member of group {req.group_id}."
    current = current_topology_epoch(group)
    if req.topology_epoch != current:
        return ErrorCode.invalid_request, (f"Topology epoch {req.topology_epoch} does not match the group's current "
                                           f"topology epoch {current}.")
    group.topology_description = description_from_wire(req.topology_description)
    group.stored_description_topology_epoch = max(group.stored_description_topology_epoch, req.topology_epoch)
    log.info("[GroupId %s] Stored the topology description of topology epoch %d.", group.group_id, req.topology_epoch)
    return ErrorCode.none, None


def attach_description(registry: GroupRegistry, described: dict[str, Any]) -> dict[str, Any]:
    """StreamsGroupTopologyDescriptionManager.attachTopologyDescriptions for one described group
    (wire-shaped): AVAILABLE with the description stored for the group's current topology epoch, else
    NOT_STORED."""
    if described["error_code"] != ErrorCode.none:
        return described
    group = cast(StreamsGroup, registry.get(described["group_id"]))
    if (group.topology_description is None or described["topology"] is None
            or group.stored_description_topology_epoch != described["topology"]["epoch"]):
        return {**described, "topology_description_status": DESCRIPTION_NOT_STORED}
    return {**described, "topology_description": group.topology_description,
            "topology_description_status": DESCRIPTION_AVAILABLE}


def _node_from_wire(n: Any) -> dict[str, Any]:
    return {"name": n.name, "node_type": int(n.node_type), "source_topics": list(n.source_topics),
            "sink_topic": n.sink_topic, "stores": list(n.stores), "successors": list(n.successors)}


def description_from_wire(d: Any) -> dict[str, Any]:
    """StreamsGroupTopologyDescriptionConverter.fromRequest then toDescribeResponse: the request's
    TopologyDescription as StreamsGroupDescribeResponse carries it (the same fields)."""
    return {"subtopologies": [{"subtopology_id": s.subtopology_id, "nodes": [_node_from_wire(n) for n in s.nodes]}
                              for s in d.subtopologies],
            "global_stores": [{"source": _node_from_wire(g.source), "processor": _node_from_wire(g.processor)}
                              for g in d.global_stores]}
