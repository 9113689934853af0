"""What a test or the control plane sees of a share group (``MockBroker.share_group``): its
members and their assignments, every share-partition's in-flight records (state, delivery count,
owner, lock deadline) on the broker leading it, and the counters Kafka's share-group metrics are
made from."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..state.metadata import ClusterMetadata
from .group import ShareGroup
from .manager import SharePartitionManager
from .persister import SharePersister
from .inflight import RecordState
from .partition import ACCEPT, GAP, REJECT, RELEASE, RENEW

ACK_NAMES = {GAP: "GAP", ACCEPT: "ACCEPT", RELEASE: "RELEASE", REJECT: "REJECT", RENEW: "RENEW"}


def share_group_view(group: ShareGroup, metadata: ClusterMetadata, managers: Iterable[SharePartitionManager],
                     persister: SharePersister) -> dict[str, Any]:
    names = {t.topic_id: name for name, t in metadata.topics.items()}
    managers = list(managers)
    partitions = []
    for m in managers:
        for sp in sorted(m.group_partitions(group.group_id), key=lambda s: (s.topic, s.partition)):
            partitions.append({"leader": m.node_id, "lock_timeouts": sp.lock_timeouts, **sp.view()})
    persisted = []
    for tid, ps in sorted(group.initialized.items(), key=lambda kv: str(kv[0])):
        for p in sorted(ps):
            state = persister.states.get((group.group_id, tid, p))
            if state is None:
                continue
            persisted.append({"topic": names.get(tid, str(tid)), "partition": p, "start_offset": state.start_offset,
                              "state_epoch": state.state_epoch, "leader_epoch": state.leader_epoch,
                              "batches": [{"first_offset": f, "last_offset": la, "state": RecordState(st).name,
                                           "delivery_count": n} for f, la, st, n in state.batches]})
    acks: dict[str, int] = {}  # the group's records acknowledged, by type
    for m in managers:
        for (g, t), n in m.acknowledgements.items():
            if g == group.group_id:
                acks[ACK_NAMES[t]] = acks.get(ACK_NAMES[t], 0) + n
    return {
        "group_epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch,
        "assignment_timestamp_ms": group.assignment_timestamp_ms,
        "members": [{"member_id": mem.member_id, "client_id": mem.client_id, "client_host": mem.client_host,
                     "rack_id": mem.rack_id, "member_epoch": mem.member_epoch,
                     "subscribed_topic_names": sorted(mem.subscribed_topic_names),
                     "assigned": {names.get(tid, str(tid)): sorted(ps) for tid, ps in mem.assigned.items()}}
                    for mem in group.members.values()],
        "share_partitions": partitions,
        "acknowledgements": acks,
        # what the share coordinator keeps (the start offset written before the last move, the
        # state batches past it), as a new leader would read it
        "persisted": persisted,
        # the brokers' share metrics (every group's: SharePartitionManager's), counted since the start
        "broker_metrics": {
            "share_fetches": sum(m.fetches for m in managers),
            "share_fetch_expires": sum(m.expired_fetches for m in managers),
            "failed_acknowledgements": sum(m.failed_acknowledgements for m in managers),
            "share_sessions": sum(len(m.sessions) for m in managers),
            "share_session_partitions": sum(m.sessions.total_partitions() for m in managers),
            "share_session_evictions": sum(m.sessions.evictions for m in managers),
            "share_coordinator_writes": persister.writes,
        },
    }
