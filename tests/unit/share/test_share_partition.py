"""The delivery state machine of a share-partition (mockbroker/share/partition.py, Kafka 4.4's
SharePartition) on the ManualClock: acquisition under a lock, lock expiry, delivery counts, the
delivery count limit, and ACCEPT / RELEASE / REJECT / RENEW, with the state written to (and read
back from) the share coordinator's persisted state."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from mockbroker.common.clock import ManualClock
from mockbroker.purgatory import Timer
from mockbroker.share.inflight import RecordState
from mockbroker.share.partition import (
    ACCEPT,
    RECORD_LIMIT,
    REJECT,
    RELEASE,
    RENEW,
    Acquired,
    FetchedBatch,
    GroupSettings,
    Offsets,
    SharePartition,
)
from mockbroker.share.persister import SharePersister, combine
from protocol.errors import ErrorCode

TOPIC_ID = uuid.UUID(int=7)
LOCK_MS = 30_000
BATCH_OPTIMIZED = 0


class Harness:
    """One share-partition of group "g" on topic "t" partition 0 whose log holds ``log_end`` records
    (offsets 0.. in batches of ``batch``), on a ManualClock; its group configs are ``self.cfg``."""

    def __init__(self, log_end: int = 10, batch: int = 10, limit: int = 5, max_locks: int = 2000,
                 reset: str = "earliest") -> None:
        self.clock = ManualClock()
        self.timer = Timer(self.clock)
        cluster = SimpleNamespace(brokers={1: SimpleNamespace(node_id=1, alive=True)},
                                  topics_by_id={TOPIC_ID: SimpleNamespace(partitions=[None])})
        self.persister = SharePersister(cluster, 50, 1)  # a stand-in for the cluster: brokers and topic ids
        self.cfg = {"lock": LOCK_MS, "limit": limit, "max_locks": max_locks, "renew": True, "reset": reset}
        self.log_end = log_end
        self.batch = batch
        self.notified = 0
        self.persister.initialize(("g", TOPIC_ID, 0), 0, -1)
        self.sp = self.new_partition()

    def new_partition(self, leader_epoch: int = 0) -> SharePartition:
        cfg = self.cfg
        settings = GroupSettings(record_lock_duration_ms=lambda: int(cfg["lock"]),
                                 delivery_count_limit=lambda: int(cfg["limit"]),
                                 max_record_locks=lambda: int(cfg["max_locks"]),
                                 renew_enabled=lambda: bool(cfg["renew"]),
                                 auto_offset_reset=lambda: str(cfg["reset"]))
        offsets = Offsets(earliest=lambda: 0, latest=lambda: self.log_end, for_timestamp=lambda ts: 0,
                          now_ms=self.clock.monotonic_ms)
        sp = SharePartition("g", "t", TOPIC_ID, 0, leader_epoch, settings, self.timer, self.persister, offsets,
                            self._notify)
        assert sp.maybe_initialize() is None
        return sp

    def _notify(self) -> None:
        self.notified += 1

    def fetch(self, member: str, max_records: int = 500, mode: int = BATCH_OPTIMIZED,
              sp: SharePartition | None = None) -> list[Acquired]:
        """What a ShareFetch of ``member`` acquires: the log read from the next fetch offset."""
        sp = sp or self.sp
        offset = sp.next_fetch_offset()
        start = offset - offset % self.batch
        batches = [FetchedBatch(b, min(b + self.batch, self.log_end) - 1, -1, False, False, 100)
                   for b in range(start, self.log_end, self.batch)]
        acquired, _count = sp.acquire(member, mode, 500, max_records, offset, batches, None)
        return acquired

    def states(self, sp: SharePartition | None = None) -> dict[int, tuple[str, int, str | None]]:
        """offset -> (state, delivery count, owner) of every in-flight record."""
        out = {}
        for r in (sp or self.sp).view()["records"]:
            for o in range(r["first_offset"], r["last_offset"] + 1):
                out[o] = (r["state"], r["delivery_count"], r["member_id"])
        return out


def test_acquire_locks_records_for_the_lock_duration_then_they_are_available_again() -> None:
    h = Harness()
    assert h.fetch("m1") == [Acquired(0, 9, 1)]
    assert h.states() == {o: ("ACQUIRED", 1, "m1") for o in range(10)}
    assert h.sp.view()["records"][0]["lock_deadline_ms"] == h.clock.monotonic_ms() + LOCK_MS
    assert h.fetch("m2") == []  # nothing else to acquire: the records are locked by m1
    h.clock.advance(LOCK_MS - 1)
    assert h.states()[0][0] == "ACQUIRED"
    h.clock.advance(1)
    assert h.states() == {o: ("AVAILABLE", 1, None) for o in range(10)}
    assert h.sp.next_fetch_offset() == 0
    assert h.notified >= 1  # a waiting ShareFetch is woken
    assert h.fetch("m2") == [Acquired(0, 9, 2)]  # redelivered, its delivery count increased
    assert h.states()[5] == ("ACQUIRED", 2, "m2")


def test_accept_completes_records_and_the_start_offset_moves_past_them() -> None:
    h = Harness()
    h.fetch("m1")
    assert h.sp.acknowledge("m1", [(0, 9, [ACCEPT])]) is None
    assert (h.sp.start_offset, h.states()) == (10, {})
    h.clock.advance(LOCK_MS * 2)  # the lock was cancelled: nothing comes back
    assert h.states() == {} and h.sp.lock_timeouts == 0
    # written as Kafka writes it: the start offset before the move, the batch Acknowledged
    persisted = h.persister.states[("g", TOPIC_ID, 0)]
    assert (persisted.start_offset, persisted.batches) == (0, [(0, 9, int(RecordState.ACKNOWLEDGED), 1)])
    assert h.new_partition(leader_epoch=1).start_offset == 10  # read back: past the acknowledged records


def test_release_of_some_offsets_makes_just_those_available() -> None:
    h = Harness()
    h.fetch("m1")
    assert h.sp.acknowledge("m1", [(0, 1, [ACCEPT]), (2, 3, [RELEASE])]) is None
    assert h.sp.start_offset == 2
    s = h.states()
    assert s[2] == s[3] == ("AVAILABLE", 1, None)
    assert s[4] == ("ACQUIRED", 1, "m1")
    assert h.sp.next_fetch_offset() == 2
    assert h.fetch("m2") == [Acquired(2, 3, 2)]


def test_per_record_acknowledge_types_in_one_batch() -> None:
    h = Harness(log_end=4, batch=4)
    h.fetch("m1")
    assert h.sp.acknowledge("m1", [(0, 3, [ACCEPT, RELEASE, REJECT, ACCEPT])]) is None
    s = h.states()
    assert s[1] == ("AVAILABLE", 1, None)
    assert s[2][0] == "ARCHIVED" and s[3][0] == "ACKNOWLEDGED"
    assert h.sp.start_offset == 1


def test_reject_archives_and_the_records_are_never_delivered_again() -> None:
    h = Harness()
    h.fetch("m1")
    assert h.sp.acknowledge("m1", [(0, 9, [REJECT])]) is None
    assert h.sp.start_offset == 10 and h.fetch("m2") == []


def test_records_are_archived_after_the_delivery_count_limit() -> None:
    h = Harness(limit=2)
    assert h.fetch("m1") == [Acquired(0, 9, 1)]
    h.clock.advance(LOCK_MS)
    assert h.fetch("m1") == [Acquired(0, 9, 2)]
    h.clock.advance(LOCK_MS)  # second delivery's lock expires: the limit is reached
    assert h.states() == {} and h.sp.start_offset == 10
    assert h.fetch("m1") == []


def test_release_at_the_limit_archives_too() -> None:
    h = Harness(limit=1)
    h.fetch("m1")
    assert h.sp.acknowledge("m1", [(0, 9, [RELEASE])]) is None
    assert h.sp.start_offset == 10 and h.fetch("m2") == []


def test_the_limit_is_read_at_each_use_as_group_configs_alter_it() -> None:
    h = Harness(limit=5)
    h.fetch("m1")
    h.cfg["limit"] = 1  # IncrementalAlterConfigs on the group: the next expiry archives
    h.clock.advance(LOCK_MS)
    assert h.sp.start_offset == 10


def test_renew_gives_a_fresh_lock() -> None:
    h = Harness()
    h.fetch("m1")
    h.clock.advance(LOCK_MS - 100)
    assert h.sp.acknowledge("m1", [(0, 9, [RENEW])]) is None
    h.clock.advance(200)  # past the first lock's deadline: still held
    assert h.states()[0] == ("ACQUIRED", 1, "m1")
    h.clock.advance(LOCK_MS)
    assert h.states()[0] == ("AVAILABLE", 1, None)


def test_renew_when_the_group_disables_it_is_an_invalid_record_state() -> None:
    h = Harness()
    h.cfg["renew"] = False
    h.fetch("m1")
    err = h.sp.acknowledge("m1", [(0, 9, [RENEW])])
    assert err is not None and err.error is ErrorCode.invalid_record_state


def test_acknowledging_what_another_member_holds_is_an_invalid_record_state() -> None:
    h = Harness()
    h.fetch("m1")
    err = h.sp.acknowledge("m2", [(0, 9, [ACCEPT])])
    assert err is not None and err.error is ErrorCode.invalid_record_state
    assert h.states()[0] == ("ACQUIRED", 1, "m1")


def test_acknowledging_twice_or_past_the_records_is_refused() -> None:
    h = Harness()
    h.fetch("m1")
    assert h.sp.acknowledge("m1", [(0, 4, [ACCEPT])]) is None
    again = h.sp.acknowledge("m1", [(5, 9, [ACCEPT]), (0, 4, [ACCEPT])])
    assert again is None  # below the start offset: ignored, as Kafka does
    h2 = Harness()
    h2.fetch("m1")
    past = h2.sp.acknowledge("m1", [(5, 12, [ACCEPT])])
    assert past is not None and past.error is ErrorCode.invalid_request
    assert h2.states()[5] == ("ACQUIRED", 1, "m1")  # the refused request changed nothing


def test_a_failed_acknowledgement_rolls_back_the_whole_request() -> None:
    h = Harness()
    h.fetch("m1")
    err = h.sp.acknowledge("m1", [(0, 4, [ACCEPT]), (5, 9, [7])])
    assert err is not None and err.error is ErrorCode.invalid_request
    assert h.states() == {o: ("ACQUIRED", 1, "m1") for o in range(10)}


def test_a_member_leaving_releases_what_it_holds() -> None:
    h = Harness(log_end=20)
    assert h.fetch("m1", max_records=10) == [Acquired(0, 9, 1)]
    assert h.fetch("m2") == [Acquired(10, 19, 1)]
    assert h.sp.release_acquired_records("m1") is None
    s = h.states()
    assert s[0] == ("AVAILABLE", 1, None) and s[10] == ("ACQUIRED", 1, "m2")


def test_record_limit_mode_acquires_at_most_max_records() -> None:
    h = Harness()
    assert h.fetch("m1", max_records=3, mode=RECORD_LIMIT) == [Acquired(0, 2, 1)]
    s = h.states()
    assert s[2] == ("ACQUIRED", 1, "m1") and s[3] == ("AVAILABLE", 0, None)
    assert h.fetch("m2", max_records=3, mode=RECORD_LIMIT) == [Acquired(3, 5, 1)]


def test_max_record_locks_bounds_what_is_in_flight() -> None:
    h = Harness(log_end=30, max_locks=10)
    assert h.fetch("m1") == [Acquired(0, 9, 1)]
    assert not h.sp.can_acquire()
    assert h.fetch("m2") == []


def test_latest_reset_starts_at_the_log_end() -> None:
    h = Harness(reset="latest")
    assert h.sp.start_offset == 10 and h.fetch("m1") == []


def test_state_is_read_back_by_a_new_leader() -> None:
    """The state lives in the share coordinator: a share-partition loaded again (a new leader)
    sees the acknowledged and released records as written; acquiring writes nothing, so what m1
    still held is beyond the persisted end and is delivered afresh (Kafka's behaviour)."""
    h = Harness()
    h.fetch("m1")
    h.sp.acknowledge("m1", [(0, 2, [ACCEPT]), (3, 3, [RELEASE])])
    moved = h.new_partition(leader_epoch=1)
    assert moved.start_offset == 3
    s = h.states(moved)
    assert s[3] == ("AVAILABLE", 1, None)
    assert 4 not in s and moved.end_offset == 3
    assert h.fetch("m2", sp=moved) == [Acquired(3, 3, 2), Acquired(4, 9, 1)]
    stale = h.sp.acknowledge("m1", [(4, 9, [ACCEPT])])  # the old leader is fenced by the epoch
    assert stale is not None and stale.error is ErrorCode.not_leader_or_follower


@pytest.mark.parametrize(("so_far", "new", "start", "expected"), [
    ([(0, 9, 1, 1)], [(3, 4, 2, 1)], 0, [(0, 2, 1, 1), (3, 4, 2, 1), (5, 9, 1, 1)]),
    ([(0, 9, 0, 1)], [(0, 9, 1, 2)], 5, [(5, 9, 1, 2)]),
    ([(0, 4, 2, 1)], [(5, 9, 2, 1)], 0, [(0, 9, 2, 1)]),
])
def test_persisted_batches_combine_as_kafkas_combiner(so_far: list, new: list, start: int, expected: list) -> None:
    assert combine(so_far, new, start) == expected


def test_record_state_ids_are_kafkas() -> None:
    assert [s.value for s in RecordState] == [0, 1, 2, 3, 4]


# -- the share groups' SimpleAssignor (mockbroker/share/assignor.py) --------------------------------
T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def test_simple_assignor_shares_a_partition_between_members() -> None:
    from mockbroker.share.assignor import assign_simple

    out = assign_simple({"a": {T1}, "b": {T1}, "c": {T1}}, {T1: {0}}, {})
    assert out == {"a": {T1: {0}}, "b": {T1: {0}}, "c": {T1: {0}}}


def test_simple_assignor_splits_partitions_and_keeps_what_members_had() -> None:
    from mockbroker.share.assignor import assign_simple

    out = assign_simple({"a": {T1}, "b": {T1}}, {T1: {0, 1, 2, 3}}, {"b": {T1: {0, 1}}})
    assert out["b"] == {T1: {0, 1}} and out["a"] == {T1: {2, 3}}
    three = assign_simple({"a": {T1}, "b": {T1}, "c": {T1, T2}}, {T1: {0, 1, 2}, T2: {0}}, out)
    counts = sorted(len(a.get(T1, set())) for a in three.values())
    assert counts == [1, 1, 1] and three["c"][T2] == {0}
    assert set().union(*(a[T1] for a in three.values())) == {0, 1, 2}


def test_read_committed_archives_the_records_of_aborted_transactions() -> None:
    """maybeFilterAbortedTransactionalAcquiredRecords: an aborted transaction's batches are archived,
    never delivered; the abort marker and the other records are acquired."""
    h = Harness(log_end=6)
    batches = [FetchedBatch(0, 2, 7, True, False, 100), FetchedBatch(3, 3, 7, True, True, 70),
               FetchedBatch(4, 5, -1, False, False, 100)]
    acquired, count = h.sp.acquire("m1", BATCH_OPTIMIZED, 500, 500, 0, batches, [(7, 0)])
    assert (acquired, count) == ([Acquired(3, 5, 1)], 3)
    s = h.states()
    assert [s[o][0] for o in range(6)] == ["ARCHIVED"] * 3 + ["ACQUIRED"] * 3
    assert h.sp.acknowledge("m1", [(3, 5, [ACCEPT])]) is None
    assert h.sp.start_offset == 6
