"""Committed offsets: OffsetCommit, OffsetFetch, their expiry, a deleted topic's offsets.

Mirrors Kafka 4.x's ``OffsetMetadataManager``, over the ``Group`` protocol
(``group.py``) so both group types share it:

* commit (``commitOffset``): the group's coordinator is checked, the group
  looked up (a generation -1 commit to no group creates one that only stores
  offsets; any other gets ILLEGAL_GENERATION), ``group.validate_offset_commit``
  decides, and a classic member's commit in Stable or PreparingRebalance also
  counts as its heartbeat; then each partition is stored, or answered
  OFFSET_METADATA_TOO_LARGE past offset.metadata.max.bytes;
* fetch (``fetchOffsets`` / ``fetchAllOffsets``): after
  ``group.validate_offset_fetch``, the committed offsets (None where there is
  none; an unknown group has none);
* expiry (``cleanupExpiredOffsets``, every
  offsets.retention.check.interval.ms): each group drops what its KIP-211
  rules expire, and an Empty group left without offsets is removed;
* a deleted topic's offsets go from every group (``onPartitionsDeleted``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from protocol.errors import ErrorCode

from ..clock import Clock
from .group import GroupType, OffsetAndMetadata, TopicPartition
from .metadata import GroupMetadata, GroupState
from .registry import GroupRegistry

if TYPE_CHECKING:
    from .coordinator import ClassicGroupCoordinator

log = logging.getLogger("mockbroker.group")


class OffsetMetadataManager:
    def __init__(self, registry: GroupRegistry, classic: ClassicGroupCoordinator, clock: Clock,
                 config: Mapping[str, Any]) -> None:
        self.registry = registry
        self.classic = classic
        self.clock = clock
        self.offset_metadata_max_bytes: int = config["offset.metadata.max.bytes"]
        self.offsets_retention_ms: int = config["offsets.retention.minutes"] * 60_000

    def commit_offsets(self, node_id: int, group_id: str, member_id: str, group_instance_id: str | None,
                       generation_id_or_member_epoch: int,
                       offsets: Mapping[TopicPartition, OffsetAndMetadata | ErrorCode],
                       api_version: int) -> dict[TopicPartition, ErrorCode]:
        """Per partition: the error; entries given as an ErrorCode (an unknown topic or partition)
        are answered with it and not stored."""
        err = self.registry.validate_group_status(group_id, node_id, allow_empty_id=True)
        if err is not None:
            return {tp: err for tp in offsets}
        group = self.registry.get(group_id)
        if group is None:
            if generation_id_or_member_epoch >= 0:
                # from an older generation of a group that is gone: reject
                return {tp: ErrorCode.illegal_generation for tp in offsets}
            group = self.classic.get_or_create(group_id)  # a group that uses Kafka only to store offsets
        err = group.validate_offset_commit(member_id, group_instance_id, generation_id_or_member_epoch, api_version)
        if err is not None:
            return {tp: err for tp in offsets}
        if group.group_type is GroupType.CLASSIC:
            classic = cast(GroupMetadata, group)
            if classic.state in (GroupState.STABLE, GroupState.PREPARING_REBALANCE):
                self.classic.reschedule_member_heartbeat(classic, member_id)
        out = {}
        for tp, om in offsets.items():
            if isinstance(om, ErrorCode):
                out[tp] = om
            elif len(om.metadata.encode()) > self.offset_metadata_max_bytes:
                out[tp] = ErrorCode.offset_metadata_too_large
            else:
                group.offsets[tp] = om
                out[tp] = ErrorCode.none
        return out

    def fetch_offsets(self, node_id: int, group_id: str, partitions: list[TopicPartition] | None,
                      member_id: str | None = None, member_epoch: int = -1
                      ) -> tuple[ErrorCode, dict[TopicPartition, OffsetAndMetadata | None]]:
        """(the group's error, the committed offsets of the asked partitions, None where there is no
        commit; ``partitions`` None: every committed one).  ``member_id``/``member_epoch`` come with
        OffsetFetch v9+ (KIP-848)."""
        err = self.registry.validate_group_status(group_id, node_id, allow_empty_id=True)
        if err is not None:
            return err, {}
        group = self.registry.get(group_id)
        if group is not None:
            err = group.validate_offset_fetch(member_id, member_epoch)
            if err is not None:
                return err, {}
        return ErrorCode.none, self.committed_offsets(group_id, partitions)

    def committed_offsets(self, group_id: str, partitions: list[TopicPartition] | None = None
                          ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The committed offsets, whoever coordinates the group (None: every committed partition)."""
        group = self.registry.get(group_id)
        stored = group.offsets if group is not None else {}
        if partitions is None:
            return dict(stored)
        return {tp: stored.get(tp) for tp in partitions}

    def cleanup_expired_offsets(self) -> int:
        """Drop expired offsets, then the Empty groups left without offsets; returns how many went."""
        now = self.clock.time_ms()
        removed = 0
        for gid, g in list(self.registry.groups.items()):
            removed += len(g.remove_expired_offsets(now, self.offsets_retention_ms))
            if g.is_empty() and not g.offsets:
                g.transition_to_dead(now)
                self.registry.remove(gid)
                log.info("Group %s transitioned to Dead", gid)
        return removed

    def on_topic_deleted(self, topic: str) -> None:
        """OffsetMetadataManager.onPartitionsDeleted: the topic's offsets go from every group."""
        for g in self.registry.groups.values():
            for tp in [tp for tp in g.offsets if tp[0] == topic]:
                del g.offsets[tp]
