"""Group and member state of the classic group protocol.

Mirrors Kafka's ``GroupMetadata`` and ``MemberMetadata`` (core
``kafka.coordinator.group``, 3.x), which 4.x's group coordinator calls
``ClassicGroup`` and ``ClassicGroupMember`` with the same rules: the five
states and their legal transitions, the members with their protocols,
awaiting-join / awaiting-sync callbacks, static members (KIP-345), pending
members (KIP-394, MEMBER_ID_REQUIRED) and pending-sync members, protocol
selection by vote, and the committed offsets.  ``GroupMetadata`` implements
``Group`` (``group.py``): ClassicGroup.validateOffsetCommit and
validateMember live here.
"""

from __future__ import annotations

import enum
import logging
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from protocol.codec import decode_consumer_subscription
from protocol.errors import ErrorCode

from ..state.cluster_view import TopicPartition

from .group import (
    DescribedGroup,
    DescribedMember,
    GroupType,
    ListedGroup,
    OffsetAndMetadata,
)

log = logging.getLogger("mockbroker.group")


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


# GroupState.validPreviousStates
_VALID_PREVIOUS = {
    GroupState.DEAD: {GroupState.STABLE, GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE,
                      GroupState.EMPTY, GroupState.DEAD},
    GroupState.COMPLETING_REBALANCE: {GroupState.PREPARING_REBALANCE},
    GroupState.STABLE: {GroupState.COMPLETING_REBALANCE},
    GroupState.PREPARING_REBALANCE: {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY},
    GroupState.EMPTY: {GroupState.PREPARING_REBALANCE},
}

UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1
CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(slots=True)
class JoinGroupResult:
    member_id: str
    error: Any
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    skip_assignment: bool = False
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)  # (id, instance id, metadata)


@dataclass(slots=True)
class SyncGroupResult:
    error: Any
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


class MemberMetadata:
    __slots__ = ("member_id", "group_instance_id", "client_id", "client_host", "rebalance_timeout_ms",
                 "session_timeout_ms", "protocol_type", "supported_protocols", "assignment",
                 "awaiting_join_callback", "awaiting_sync_callback", "is_new", "heartbeat_satisfied",
                 "is_leaving")

    def __init__(self, member_id: str, group_instance_id: str | None, client_id: str, client_host: str,
                 rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                 supported_protocols: list[tuple[str, bytes]]) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.supported_protocols = supported_protocols
        self.assignment = b""
        self.awaiting_join_callback: Callable[[JoinGroupResult], None] | None = None
        self.awaiting_sync_callback: Callable[[SyncGroupResult], None] | None = None
        self.is_new = False
        self.heartbeat_satisfied = False
        self.is_leaving = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join_callback is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync_callback is not None

    def protocols(self) -> set[str]:
        return {name for name, _ in self.supported_protocols}

    def metadata(self, protocol: str) -> bytes:
        for name, meta in self.supported_protocols:
            if name == protocol:
                return meta
        raise KeyError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return protocols == self.supported_protocols

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.supported_protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} does not support any of the candidates")

    def has_satisfied_heartbeat(self) -> bool:
        """MemberMetadata.hasSatisfiedHeartbeat."""
        if self.is_new:
            # new members can be expired while awaiting join, so this is checked first
            return self.heartbeat_satisfied
        if self.is_awaiting_join or self.is_awaiting_sync:
            return True  # members waiting in a rebalance satisfy their heartbeats
        return self.heartbeat_satisfied


class GroupMetadata:
    """A classic group (Kafka's ClassicGroup); a ``Group``."""

    group_type = GroupType.CLASSIC

    def __init__(self, group_id: str, now_ms: int) -> None:
        self.group_id = group_id
        self.state = GroupState.EMPTY
        self.state_timestamp_ms: int | None = now_ms  # currentStateTimestamp
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}  # insertion order stands in for Kafka's HashMap order
        self.static_members: dict[str, str] = {}     # group.instance.id -> member id
        self.pending_members: set[str] = set()
        self.pending_sync_members: set[str] = set()
        self.num_members_awaiting_join = 0
        self.supported_protocols: Counter[str] = Counter()
        self.new_member_added = False
        self.subscribed_topics: set[str] | None = None
        self.offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
        # what the coordinator last wrote to __consumer_offsets for this group (loaded after a move)
        self.stored: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return (f"<Group {self.group_id} {self.state.value} gen={self.generation_id} "
                f"members={list(self.members)} leader={self.leader_id}>")

    # -- state -------------------------------------------------------------------------
    def is_state(self, state: GroupState) -> bool:
        return self.state is state

    def can_rebalance(self) -> bool:
        return self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY)

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise RuntimeError(f"Group {self.group_id} should be in one of {_VALID_PREVIOUS[state]} "
                               f"before moving to {state.value}, but it is in {self.state.value}")
        self.state = state
        self.state_timestamp_ms = now_ms

    # -- Group ---------------------------------------------------------------------------------
    def state_as_string(self) -> str:
        return self.state.value

    def is_empty(self) -> bool:
        return self.state is GroupState.EMPTY

    def has_members(self) -> bool:
        return bool(self.members or self.pending_members)

    def transition_to_dead(self, now_ms: int) -> None:
        self.transition_to(GroupState.DEAD, now_ms)

    def validate_member(self, member_id: str, group_instance_id: str | None, operation: str) -> ErrorCode | None:
        """ClassicGroup.validateMember: FENCED_INSTANCE_ID or UNKNOWN_MEMBER_ID, else None."""
        if group_instance_id is not None:
            current = self.current_static_member_id(group_instance_id)
            if current is None:
                return ErrorCode.unknown_member_id
            if current != member_id:
                log.info("Request memberId=%s for static member with groupInstanceId=%s is fenced by current "
                         "memberId=%s during operation %s", member_id, group_instance_id, current, operation)
                return ErrorCode.fenced_instance_id
            return None
        return None if self.has(member_id) else ErrorCode.unknown_member_id

    def validate_offset_commit(self, member_id: str, group_instance_id: str | None,
                               generation_id_or_member_epoch: int, api_version: int,
                               is_transactional: bool = False) -> ErrorCode | None:
        """ClassicGroup.validateOffsetCommit: a member commits with its id and generation, and not
        while the group waits for SyncGroup; anyone else (generation -1, no member id: a consumer
        using assign()) only to a group without members.  An Empty group takes any commit with a
        negative generation, whatever member id or instance id it names (Kafka checks that first).
        A transactional commit (TxnOffsetCommit) is not held to the group's state, and before v3 it
        carries no member id or generation."""
        generation_id = generation_id_or_member_epoch
        if self.is_state(GroupState.DEAD):
            return ErrorCode.coordinator_not_available
        if generation_id < 0 and self.is_state(GroupState.EMPTY):
            return None
        if generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or group_instance_id is not None:
            err = self.validate_member(member_id, group_instance_id, "offset-commit")
            if err is not None:
                return err
            if generation_id != self.generation_id:
                return ErrorCode.illegal_generation
            if not is_transactional and self.is_state(GroupState.COMPLETING_REBALANCE):
                return ErrorCode.rebalance_in_progress  # the member has no assignment yet
            return None
        if not is_transactional and not self.is_state(GroupState.EMPTY):
            return ErrorCode.unknown_member_id  # only members commit to a non-empty group
        return None

    def commit_partition_error(self, member_id: str, generation_id_or_member_epoch: int,
                               tp: TopicPartition) -> ErrorCode | None:
        return None  # a generation is checked as a whole (CommitPartitionValidator.NO_OP)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> ErrorCode | None:
        """Classic groups do not check OffsetFetch v9's member id and epoch (a Dead group is never
        asked: its coordinator answers COORDINATOR_NOT_AVAILABLE until the group is loaded again)."""
        return None

    def validate_delete_group(self) -> ErrorCode | None:
        if self.state in (GroupState.EMPTY, GroupState.DEAD):
            return None
        return ErrorCode.non_empty_group

    def validate_offset_delete(self) -> ErrorCode | None:
        """ClassicGroup.validateOffsetDelete: a Dead group is gone; a group with members may lose offsets
        only when it is a ``consumer`` group (of topics none of them subscribes to)."""
        if self.is_state(GroupState.DEAD):
            return ErrorCode.group_id_not_found
        if not self.is_state(GroupState.EMPTY) and self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return ErrorCode.non_empty_group
        return None

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """ClassicGroup.isSubscribedToTopic: the topics the members' subscriptions named at the last
        generation; unknown (not a ``consumer`` group, or a subscription that did not parse): only a
        ``consumer`` group counts as subscribed."""
        if self.subscribed_topics is None:
            return self.protocol_type == CONSUMER_PROTOCOL_TYPE
        return topic in self.subscribed_topics

    def as_listed_group(self) -> ListedGroup:
        return ListedGroup(self.group_id, self.protocol_type or "", self.state.value, GroupType.CLASSIC)

    def as_described_group(self) -> DescribedGroup:
        """GroupMetadata.summary: protocol, member metadata and assignments only when Stable."""
        stable = self.is_state(GroupState.STABLE)
        return DescribedGroup(
            self.group_id, state=self.state.value, protocol_type=self.protocol_type or "",
            protocol_data=(self.protocol_name or "") if stable else "",
            members=[DescribedMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                     m.metadata(self.protocol_name) if stable and self.protocol_name else b"",
                                     m.assignment if stable else b"")
                     for m in self.members.values()])

    # -- members -------------------------------------------------------------------------
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> MemberMetadata:
        return self.members[member_id]

    def size(self) -> int:
        return len(self.members)

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def generate_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        return f"{group_instance_id if group_instance_id is not None else client_id}-{uuid.uuid4()}"

    def add(self, member: MemberMetadata, callback: Callable[[JoinGroupResult], None] | None) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        if member.group_instance_id is not None:  # is_static
            self.static_members[member.group_instance_id] = member.member_id
        self.members[member.member_id] = member
        self.supported_protocols.update(member.protocols())
        member.awaiting_join_callback = callback
        if callback is not None:
            self.num_members_awaiting_join += 1
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self.supported_protocols.subtract(member.protocols())
            self.supported_protocols += Counter()  # drop zero counts
            if member.is_awaiting_join:
                self.num_members_awaiting_join -= 1
            if member.group_instance_id is not None:  # is_static
                self.static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def current_static_member_id(self, group_instance_id: str) -> str | None:
        return self.static_members.get(group_instance_id)

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str) -> MemberMetadata:
        """GroupMetadata.replaceStaticMember: the old id's pending callbacks get FENCED_INSTANCE_ID."""
        member = self.members.pop(old_member_id)
        if member.awaiting_join_callback is not None:
            cb, member.awaiting_join_callback = member.awaiting_join_callback, None
            self.num_members_awaiting_join -= 1
            cb(JoinGroupResult(old_member_id, ErrorCode.fenced_instance_id))
        if member.awaiting_sync_callback is not None:
            cb2, member.awaiting_sync_callback = member.awaiting_sync_callback, None
            cb2(SyncGroupResult(ErrorCode.fenced_instance_id))
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        self.pending_sync_members.discard(old_member_id)
        return member

    def update_member(self, member: MemberMetadata, protocols: list[tuple[str, bytes]], rebalance_timeout_ms: int,
                      session_timeout_ms: int, callback: Callable[[JoinGroupResult], None] | None) -> None:
        self.supported_protocols.subtract(member.protocols())
        self.supported_protocols += Counter()
        self.supported_protocols.update(name for name, _ in protocols)
        member.supported_protocols = protocols
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if callback is not None and not member.is_awaiting_join:
            self.num_members_awaiting_join += 1
        elif callback is None and member.is_awaiting_join:
            self.num_members_awaiting_join -= 1
        member.awaiting_join_callback = callback

    def maybe_invoke_join_callback(self, member: MemberMetadata, result: JoinGroupResult) -> None:
        cb = member.awaiting_join_callback
        if cb is not None:
            member.awaiting_join_callback = None
            self.num_members_awaiting_join -= 1
            cb(result)

    def maybe_invoke_sync_callback(self, member: MemberMetadata, result: SyncGroupResult) -> bool:
        cb = member.awaiting_sync_callback
        if cb is None:
            return False
        member.awaiting_sync_callback = None
        cb(result)
        return True

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_members_awaiting_join and not self.pending_members

    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """GroupMetadata.maybeElectNewJoinedLeader: a leader that did not rejoin is replaced."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.is_awaiting_join:
            return True
        for mid, m in self.members.items():
            if m.is_awaiting_join:
                self.leader_id = mid
                return True
        return False

    # -- protocols -------------------------------------------------------------------------
    def supports_protocols(self, member_protocol_type: str, protocols: set[str]) -> bool:
        """GroupMetadata.supportsProtocols."""
        if self.is_state(GroupState.EMPTY):
            return bool(member_protocol_type) and bool(protocols)
        n = len(self.members)
        return (self.protocol_type == member_protocol_type
                and any(self.supported_protocols[p] == n for p in protocols))

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {p for p, c in self.supported_protocols.items() if c == n}

    def select_protocol(self) -> str:
        """Every member votes for its first supported candidate; the most votes win
        (ties: the protocol the most-preferred by the first member, a stable order)."""
        candidates = self.candidate_protocols()
        if not candidates:
            raise RuntimeError(f"no protocol is supported by every member of group {self.group_id}")
        votes = Counter(m.vote(candidates) for m in self.members.values())
        best = max(votes.values())
        first = next(iter(self.members.values()))
        for name, _ in first.supported_protocols:
            if votes.get(name) == best:
                return name
        return max(votes, key=lambda k: votes[k])

    def current_member_metadata(self) -> list[tuple[str, str | None, bytes]]:
        if self.protocol_name is None:
            raise RuntimeError(f"no protocol selected for group {self.group_id}")
        return [(m.member_id, m.group_instance_id, m.metadata(self.protocol_name)) for m in self.members.values()]

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    def compute_subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to, for offset expiry; None when not known (not 'consumer')."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None if self.members else set()
        topics: set[str] = set()
        for m in self.members.values():
            subscribed = decode_consumer_subscription(m.metadata(self.protocol_name))
            if subscribed is None:
                return None
            topics.update(subscribed)
        return topics

    # -- offsets ------------------------------------------------------------------------------
    def remove_expired_offsets(self, now_ms: int, retention_ms: int,
                               keep: Callable[[TopicPartition], bool] = lambda _tp: False) -> list[TopicPartition]:
        """GroupMetadata.removeExpiredOffsets (KIP-211); an offset ``keep`` holds (a pending
        transactional offset) stays."""
        def expired(base: Callable[[OffsetAndMetadata], int],
                    subscribed: frozenset[str] | set[str] = frozenset()) -> list[TopicPartition]:
            out = []
            for tp, om in self.offsets.items():
                if tp[0] in subscribed:
                    continue
                if om.expire_timestamp is not None:
                    if now_ms >= om.expire_timestamp:
                        out.append(tp)
                elif now_ms - base(om) >= retention_ms:
                    out.append(tp)
            return out

        if self.protocol_type is not None and self.is_state(GroupState.EMPTY):
            # no member left: retention counts from when the group became Empty
            ts = self.state_timestamp_ms
            gone = expired(lambda om: ts if ts is not None else om.commit_timestamp)
        elif (self.protocol_type == CONSUMER_PROTOCOL_TYPE and self.subscribed_topics is not None
              and self.is_state(GroupState.STABLE)):
            gone = expired(lambda om: om.commit_timestamp, self.subscribed_topics)
        elif self.protocol_type is None:  # a standalone consumer that only stores offsets
            gone = expired(lambda om: om.commit_timestamp)
        else:
            gone = []
        gone = [tp for tp in gone if not keep(tp)]  # a pending transactional offset keeps it
        for tp in gone:
            del self.offsets[tp]
        return gone


