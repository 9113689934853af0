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
* a deleted topic's offsets go from every group (``onPartitionsDeleted``);
* transactional offsets (TxnOffsetCommit, KIP-98/KIP-447: ``commitTransactionalOffset``)
  wait per producer id until the transaction's marker reaches the group's
  ``__consumer_offsets`` partition (``replayEndTransactionMarker``): COMMIT moves them
  to the committed offsets unless a plain commit written after them is there,
  ABORT drops them.  While some wait, OffsetFetch with require_stable answers
  UNSTABLE_OFFSET_COMMIT for their partitions, the offset does not expire and the
  group is not removed.  A sequence number stands in for the commit record's log
  offset (which of a plain and a transactional commit was written last).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from protocol.errors import ErrorCode

from ..common.clock import Clock
from ..state.cluster_view import TopicPartition
from .classic_group import GroupMetadata, GroupState
from .group import Group, GroupType, OffsetAndMetadata
from .registry import GroupRegistry

if TYPE_CHECKING:
    from .classic_coordinator import ClassicGroupCoordinator

log = logging.getLogger("mockbroker.group")

# TxnOffsetCommitRequest.supportsGroupIdNotFoundError / supportsStaleMemberEpochError: from v6 (KIP-1319)
TXN_GROUP_ID_NOT_FOUND_SINCE = 6
# OffsetMetadataManager.validateOffsetCommit: from OffsetCommit v9 a commit with a generation to a group
# that does not exist is GROUP_ID_NOT_FOUND (before, ILLEGAL_GENERATION)
COMMIT_GROUP_ID_NOT_FOUND_SINCE = 9


def _other(gone: TopicPartition, tp: TopicPartition) -> bool:
    return tp != gone


class OffsetMetadataManager:
    def __init__(self, registry: GroupRegistry, classic: ClassicGroupCoordinator, clock: Clock,
                 config: Mapping[str, Any]) -> None:
        self.registry = registry
        self.classic = classic
        self.clock = clock
        self.offset_metadata_max_bytes: int = config["offset.metadata.max.bytes"]
        self.offsets_retention_ms: int = config["offsets.retention.minutes"] * 60_000
        # producer id -> group id -> partition -> (record sequence, the offset) (pendingTransactionalOffsets)
        self.pending_txn_offsets: dict[int, dict[str, dict[TopicPartition, tuple[int, OffsetAndMetadata]]]] = {}
        self.open_txns_by_group: dict[str, set[int]] = {}  # openTransactionsByGroup
        # (group id, partition) -> the record sequence of its last plain commit
        self._commit_seq: dict[tuple[str, TopicPartition], int] = {}
        self._seq = 0

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def commit_offsets(self, node_id: int, group_id: str, member_id: str, group_instance_id: str | None,
                       generation_id_or_member_epoch: int,
                       offsets: Sequence[tuple[TopicPartition, OffsetAndMetadata]],
                       api_version: int) -> list[ErrorCode]:
        """OffsetMetadataManager.commitOffset: each offset's error, in the order given (a partition
        given twice is stored twice, the later one staying); a group's refusal is every offset's."""
        group, err = self._validate_commit(node_id, group_id, member_id, group_instance_id,
                                           generation_id_or_member_epoch, api_version, False)
        if err is None and group is not None:
            err = self._validate_partitions(group, member_id, generation_id_or_member_epoch, offsets, api_version,
                                            False)
        if err is not None or group is None:
            return [err or ErrorCode.unknown_server_error for _ in offsets]
        if group.group_type is GroupType.CLASSIC:
            classic = cast(GroupMetadata, group)
            if classic.state in (GroupState.STABLE, GroupState.PREPARING_REBALANCE):
                self.classic.reschedule_member_heartbeat(classic, member_id)

        def store(tp: TopicPartition, om: OffsetAndMetadata) -> None:
            group.offsets[tp] = om
            self._commit_seq[(group_id, tp)] = self._next_seq()

        return self._store_each(offsets, store)

    def commit_transactional_offsets(self, node_id: int, group_id: str, producer_id: int, member_id: str,
                                     group_instance_id: str | None, generation_id: int,
                                     offsets: Mapping[TopicPartition, OffsetAndMetadata | ErrorCode],
                                     api_version: int) -> dict[TopicPartition, ErrorCode]:
        """TxnOffsetCommit (OffsetMetadataManager.commitTransactionalOffset): the offsets wait under
        ``producer_id`` for the transaction's marker.  No heartbeat, no REBALANCE_IN_PROGRESS (the
        group's state is not enforced for transactional commits); a consumer group's stale member
        epoch is ILLEGAL_GENERATION before v6 (STALE_MEMBER_EPOCH from v6), and a generation given for
        a group that does not exist ILLEGAL_GENERATION before v6 (GROUP_ID_NOT_FOUND from v6, KIP-1319).
        Entries given as an ErrorCode are answered with it."""
        group, err = self._validate_commit(node_id, group_id, member_id, group_instance_id, generation_id,
                                           api_version, True)
        pairs = list(offsets.items())
        if err is None and group is not None:
            err = self._validate_partitions(group, member_id, generation_id, pairs, api_version, True)
        if err is not None:
            return {tp: err for tp in offsets}

        def store(tp: TopicPartition, om: OffsetAndMetadata) -> None:
            self.pending_txn_offsets.setdefault(producer_id, {}).setdefault(group_id, {})[tp] = (self._next_seq(), om)
            self.open_txns_by_group.setdefault(group_id, set()).add(producer_id)

        return dict(zip(offsets, self._store_each(pairs, store)))

    def _validate_commit(self, node_id: int, group_id: str, member_id: str, group_instance_id: str | None,
                         generation_id_or_member_epoch: int, api_version: int, transactional: bool
                         ) -> tuple[Group | None, ErrorCode | None]:
        """validateOffsetCommit / validateTransactionalOffsetCommit: the coordinator is checked
        (OffsetCommit accepts an empty group id, TxnOffsetCommit does not), the group looked up (a
        generation -1 commit to no group creates one that only stores offsets; any other gets
        ILLEGAL_GENERATION, or GROUP_ID_NOT_FOUND from OffsetCommit v9 / TxnOffsetCommit v6), then the
        group decides."""
        err = self.registry.validate_group_status(group_id, node_id, allow_empty_id=not transactional)
        if err is not None:
            return None, err
        group = self.registry.get(group_id)
        if group is None:
            if generation_id_or_member_epoch >= 0:
                # from an older generation of a group that is gone: reject (OffsetCommit v9 and
                # TxnOffsetCommit v6 say so: OffsetCommitRequest / TxnOffsetCommitRequest's version checks)
                gone = api_version >= (TXN_GROUP_ID_NOT_FOUND_SINCE if transactional else COMMIT_GROUP_ID_NOT_FOUND_SINCE)
                return None, ErrorCode.group_id_not_found if gone else ErrorCode.illegal_generation
            group = self.classic.get_or_create(group_id)  # a group that uses Kafka only to store offsets
        err = group.validate_offset_commit(member_id, group_instance_id, generation_id_or_member_epoch, api_version,
                                           is_transactional=transactional)
        if transactional and err is ErrorCode.stale_member_epoch and api_version < TXN_GROUP_ID_NOT_FOUND_SINCE:
            err = ErrorCode.illegal_generation
        return group, err

    def _metadata_too_large(self, om: OffsetAndMetadata) -> bool:
        """OffsetMetadataManager.isMetadataInvalid: longer than offset.metadata.max.bytes, counted as
        Java's String.length() counts (UTF-16 code units)."""
        return len(om.metadata.encode("utf-16-le")) // 2 > self.offset_metadata_max_bytes

    def _validate_partitions(self, group: Group, member_id: str, epoch: int,
                             offsets: Iterable[tuple[TopicPartition, OffsetAndMetadata | ErrorCode]],
                             api_version: int, transactional: bool) -> ErrorCode | None:
        """The group's CommitPartitionValidator over the partitions to store (not those whose metadata
        is too large: they are answered before it is asked): the first error fails the whole commit
        (Kafka throws it out of commitOffset)."""
        for tp, om in offsets:
            if isinstance(om, ErrorCode) or self._metadata_too_large(om):
                continue
            err = group.commit_partition_error(member_id, epoch, tp)
            if err is not None:
                old = transactional and api_version < TXN_GROUP_ID_NOT_FOUND_SINCE  # as _validate_commit
                return ErrorCode.illegal_generation if old and err is ErrorCode.stale_member_epoch else err
        return None

    def _store_each(self, offsets: Iterable[tuple[TopicPartition, OffsetAndMetadata | ErrorCode]],
                    store: Callable[[TopicPartition, OffsetAndMetadata], None]) -> list[ErrorCode]:
        """Each offset stored, or answered OFFSET_METADATA_TOO_LARGE past offset.metadata.max.bytes
        (an ErrorCode given for it is its answer), in the order given."""
        out = []
        for tp, om in offsets:
            if isinstance(om, ErrorCode):
                out.append(om)
            elif self._metadata_too_large(om):
                out.append(ErrorCode.offset_metadata_too_large)
            else:
                store(tp, om)
                out.append(ErrorCode.none)
        return out

    def complete_transaction(self, producer_id: int, commit: bool, in_partition: Callable[[str], bool]) -> None:
        """The marker of ``producer_id``'s transaction reached a __consumer_offsets partition
        (replayEndTransactionMarker): the pending offsets of the groups stored there (those
        ``in_partition`` accepts) are committed or dropped."""
        by_group = self.pending_txn_offsets.get(producer_id)
        if not by_group:
            return
        for group_id in [g for g in by_group if in_partition(g)]:
            pending = by_group.pop(group_id)
            open_txns = self.open_txns_by_group.get(group_id)
            if open_txns is not None:
                open_txns.discard(producer_id)
                if not open_txns:
                    del self.open_txns_by_group[group_id]
            if not commit:
                continue
            group = self.registry.get(group_id) or self.classic.get_or_create(group_id)
            for tp, (seq, om) in pending.items():
                # the most recent of a plain and a transactional commit wins (by record position)
                if tp not in group.offsets or self._commit_seq.get((group_id, tp), 0) < seq:
                    group.offsets[tp] = om
                    self._commit_seq[(group_id, tp)] = seq
        if not by_group:
            del self.pending_txn_offsets[producer_id]

    def has_pending_transactional_offsets(self, group_id: str, tp: TopicPartition) -> bool:
        return any(tp in self.pending_txn_offsets.get(pid, {}).get(group_id, {})
                   for pid in self.open_txns_by_group.get(group_id, ()))

    def pending_transactional_offsets(self, group_id: str) -> list[tuple[int, TopicPartition, OffsetAndMetadata]]:
        """(producer id, partition, offset) of every transactional offset of the group still
        waiting for its marker, sorted."""
        return sorted(((pid, tp, om) for pid in self.open_txns_by_group.get(group_id, ())
                       for tp, (_seq, om) in self.pending_txn_offsets.get(pid, {}).get(group_id, {}).items()),
                      key=lambda x: (x[0], x[1]))

    def _drop_pending(self, group_id: str, keep: Callable[[TopicPartition], bool] = lambda _tp: False) -> None:
        """Pending transactional offsets of the group not kept go (a deleted group or topic)."""
        for pid in list(self.open_txns_by_group.get(group_id, ())):
            pending = self.pending_txn_offsets.get(pid, {}).get(group_id, {})
            for tp in [tp for tp in pending if not keep(tp)]:
                del pending[tp]

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
            removed += len(g.remove_expired_offsets(
                now, self.offsets_retention_ms,
                keep=partial(self.has_pending_transactional_offsets, gid)))
            if g.is_empty() and not g.offsets and gid not in self.open_txns_by_group:
                g.transition_to_dead(now)
                self.registry.remove(gid)
                log.info("Group %s transitioned to Dead", gid)
        return removed

    def delete_offsets(self, node_id: int, group_id: str, topics: list[tuple[str, list[int]]]
                       ) -> tuple[ErrorCode, list[tuple[str, list[tuple[int, ErrorCode]]]]]:
        """OffsetDelete (OffsetMetadataManager.deleteOffsets): the group's error, else per topic of the
        request, in its order and as often as it is listed, each partition's GROUP_SUBSCRIBED_TO_TOPIC
        while a member subscribes to the topic, NONE otherwise (its committed and pending transactional
        offsets are gone: the tombstone's replay)."""
        err = self.registry.validate_group_status(group_id, node_id)
        if err is not None:
            return err, []
        group = self.registry.get(group_id)
        if group is None:
            return ErrorCode.group_id_not_found, []
        err = group.validate_offset_delete()
        if err is not None:
            return err, []
        out: list[tuple[str, list[tuple[int, ErrorCode]]]] = []
        for topic, partitions in topics:
            subscribed = group.is_subscribed_to_topic(topic)
            answered: list[tuple[int, ErrorCode]] = []
            for index in partitions:
                tp: TopicPartition = (topic, index)
                answered.append((index, ErrorCode.group_subscribed_to_topic if subscribed else ErrorCode.none))
                if not subscribed:
                    group.offsets.pop(tp, None)
                    self._commit_seq.pop((group_id, tp), None)
                    self._drop_pending(group_id, keep=partial(_other, tp))
            out.append((topic, answered))
        return ErrorCode.none, out

    def on_topic_deleted(self, topic: str) -> None:
        """OffsetMetadataManager.onPartitionsDeleted: the topic's offsets go from every group."""
        for gid, g in self.registry.groups.items():
            for tp in [tp for tp in g.offsets if tp[0] == topic]:
                del g.offsets[tp]
            self._drop_pending(gid, keep=lambda tp: tp[0] != topic)

    def on_group_deleted(self, group_id: str) -> None:
        """DeleteGroups: the group's pending transactional offsets go with it (deleteAllOffsets)."""
        self._drop_pending(group_id)
