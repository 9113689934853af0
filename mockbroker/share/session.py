"""Share sessions (KIP-932), per broker: Kafka 4.4's ``ShareSessionCache``, ``ShareSession``,
``CachedSharePartition`` and the share fetch contexts (``ShareSessionContext``, ``FinalContext``).

A session is keyed by (group, member): ShareFetch epoch 0 opens one (replacing the member's
previous one) with the partitions it names; each later ShareFetch or ShareAcknowledge must carry
the session's epoch, which it then advances (INVALID_SHARE_SESSION_EPOCH otherwise,
SHARE_SESSION_NOT_FOUND without a session); epoch -1 closes it.  An incremental ShareFetch adds
its partitions and drops the forgotten ones; the response lists only the partitions with records,
an error or news, and a partition that returned records moves to the end of the session's order.
Kafka 4.4's cache evicts nothing: with group.share.max.share.sessions sessions a new one is
refused (SHARE_SESSION_LIMIT_REACHED after the request's max wait).  A session ends with its
connection: the member's acquired records are released then (``ShareGroupListener.onMemberLeave``)
and, when no session of the group is left on the broker, its share-partitions are dropped from
the broker's cache (``onGroupEmpty``).
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from dataclasses import dataclass, field

from protocol.errors import ErrorCode

from .partition import ShareError

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
INT_MAX = (1 << 31) - 1

# (topic id, partition)
SharePartitionId = tuple[uuid.UUID, int]


def next_epoch(epoch: int) -> int:
    """ShareRequestMetadata.nextEpoch."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == INT_MAX else epoch + 1


@dataclass(slots=True)
class CachedSharePartition:
    topic: str | None
    requires_update: bool = False

    def must_respond(self, has_records: bool, error: int, update: bool) -> bool:
        """maybeUpdateResponseData."""
        must = has_records
        if self.requires_update:
            must = True
            if update:
                self.requires_update = False
        if error:
            if update:
                self.requires_update = True
            must = True
        return must


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    conn_id: int
    epoch: int = 1
    partitions: OrderedDict[SharePartitionId, CachedSharePartition] = field(default_factory=OrderedDict)


@dataclass(slots=True)
class ShareFetchContext:
    """ShareSessionContext (``final`` False) or FinalContext (True): which partitions a ShareFetch
    reads, and how its response is cut."""

    epoch: int
    subsequent: bool = False
    final: bool = False
    partitions: list[tuple[SharePartitionId, str | None]] = field(default_factory=list)
    session: ShareSession | None = None

    def fetch_partitions(self) -> list[tuple[SharePartitionId, str | None]]:
        """getErroneousAndValidTopicIdPartitions: the request's (full) or the session's (subsequent)
        partitions, with their topic names (None: an unknown topic id, UNKNOWN_TOPIC_ID)."""
        if self.final:
            return []
        if not self.subsequent:
            return list(self.partitions)
        assert self.session is not None
        return [(k, cp.topic) for k, cp in self.session.partitions.items()]

    def select(self, results: list[tuple[SharePartitionId, bool, int]], update: bool) -> set[SharePartitionId]:
        """The partitions a subsequent response carries (``PartitionIterator``); with ``update`` the
        session's partitions are updated and those with records move to the end."""
        if not self.subsequent or self.session is None:
            return {k for k, _, _ in results}
        out = set()
        for key, has_records, error in results:
            cp = self.session.partitions.get(key)
            if cp is None:
                continue
            if cp.must_respond(has_records, error, update):
                out.add(key)
                if update and has_records:
                    self.session.partitions.move_to_end(key)
        return out


class ShareSessionCache:
    """ShareSessionCache, one per broker."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        self.by_conn: dict[int, tuple[tuple[str, str], bool]] = {}  # conn id -> (session key, stale)
        self.evictions = 0  # ShareSessionEvictionsPerSec, counted

    def __len__(self) -> int:
        return len(self.sessions)

    def total_partitions(self) -> int:
        return sum(len(s.partitions) for s in self.sessions.values())

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.get((group_id, member_id))

    def remove(self, group_id: str, member_id: str) -> ShareSession | None:
        session = self.sessions.pop((group_id, member_id), None)
        if session is not None:
            entry = self.by_conn.get(session.conn_id)
            if entry is not None and entry[0] == (group_id, member_id):
                self.by_conn[session.conn_id] = (entry[0], True)
        return session

    def members(self, group_id: str) -> int:
        return sum(1 for g, _ in self.sessions if g == group_id)

    def new_context(self, group_id: str, member_id: str, epoch: int,
                    fetch: list[tuple[SharePartitionId, str | None]], forget: list[SharePartitionId],
                    acks_present: bool, conn_id: int) -> ShareFetchContext:
        """SharePartitionManager.newContext."""
        key = (group_id, member_id)
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if epoch == FINAL_EPOCH:
                if key not in self.sessions:
                    raise ShareError(ErrorCode.share_session_not_found)
                return ShareFetchContext(epoch, final=True)
            if acks_present:
                raise ShareError(ErrorCode.invalid_request)
            self.remove(group_id, member_id)
            if len(self.sessions) >= self.max_entries:
                raise ShareError(ErrorCode.share_session_limit_reached)
            created = ShareSession(group_id, member_id, conn_id)
            for k, topic in fetch:
                created.partitions.setdefault(k, CachedSharePartition(topic))
            self.sessions[key] = created
            self.by_conn[conn_id] = (key, False)
            return ShareFetchContext(epoch, partitions=list(fetch))
        session = self.sessions.get(key)
        if session is None:
            raise ShareError(ErrorCode.share_session_not_found)
        if session.epoch != epoch:
            raise ShareError(ErrorCode.invalid_share_session_epoch)
        for k, topic in fetch:
            if k not in session.partitions:
                session.partitions[k] = CachedSharePartition(topic, requires_update=True)
        for k in forget:
            session.partitions.pop(k, None)
        session.epoch = next_epoch(session.epoch)
        return ShareFetchContext(epoch, subsequent=True, session=session)

    def acknowledge_session_update(self, group_id: str, member_id: str, epoch: int) -> None:
        """SharePartitionManager.acknowledgeSessionUpdate (ShareAcknowledge)."""
        if epoch == INITIAL_EPOCH:
            raise ShareError(ErrorCode.invalid_share_session_epoch)
        session = self.sessions.get((group_id, member_id))
        if session is None:
            raise ShareError(ErrorCode.share_session_not_found)
        if epoch != FINAL_EPOCH:
            if session.epoch != epoch:
                raise ShareError(ErrorCode.invalid_share_session_epoch)
            session.epoch = next_epoch(session.epoch)

    def clear(self) -> None:
        self.sessions.clear()
        self.by_conn.clear()
