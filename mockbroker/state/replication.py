"""Simulated replication: followers, ISR, high watermark, leader election.

Mirrors the parts of Kafka's ``Partition`` and ``ReplicaManager`` that decide
when acks=all completes and what consumers may read:

* Every partition has replicas on simulated brokers.  The leader's log end
  offset (LEO) moves on append; each follower's LEO catches up to the
  leader's LEO *as of the append* after ``mock.replication.lag.ms`` (per
  broker or topic, changeable at runtime), as if its fetch arrived then.
* The high watermark is the smallest LEO over the ISR
  (``Partition.maybeIncrementLeaderHW``).  Each move wakes the purgatories
  watching that partition (DelayedProduce, DelayedFetch).
* A follower outside the ISR rejoins it once its LEO reaches the high
  watermark (``Partition.maybeExpandIsr``).
* A follower that has not been caught up for ``replica.lag.time.max.ms``
  leaves the ISR (``Partition.maybeShrinkIsr``, checked every half of it as
  ReplicaManager's isr-expiration task does).  "Caught up" is Kafka's
  ``lastCaughtUpTimeMs``: a fetch that reached the leader's log end as of the
  fetch's start counts from that start, and a follower already at the log end
  is caught up now.
* A reassignment adds replicas: each starts an empty log at the leader's log
  start offset and catches up as any follower does; the listeners of
  ``isr_expanded`` (the controller, completing the reassignment as
  ``PartitionChangeBuilder`` does on Kafka's AlterPartition) hear when a
  replica joins the ISR.
* Stopping a broker is a controlled shutdown: its replicas leave the ISR at
  once and partitions it led elect the first live ISR member in replica order
  (``PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection``),
  with a new leader epoch.  The new leader's log is the truth: records above
  its LEO (never replicated, so never acknowledged by acks=all) are
  truncated, as a real follower-turned-leader's log would lack them.
"""

from __future__ import annotations

from collections.abc import Callable

from .metadata import ClusterMetadata, Partition


class ReplicationSimulator:
    """The followers of every partition, simulated in this process (one per ``Cluster``)."""

    def __init__(self, cluster: ClusterMetadata, default_lag_ms: int,
                 try_complete_delayed_requests: Callable[[Partition], None]) -> None:
        self.cluster = cluster
        self.clock = cluster.clock
        self.default_lag_ms = default_lag_ms
        self.lag_by_broker: dict[int, int] = {}
        self.lag_by_topic: dict[str, int] = {}
        self.try_complete_delayed_requests = try_complete_delayed_requests
        # told of a partition whose ISR grew (a follower caught up): Kafka's AlterPartition to the controller
        self.isr_expanded: list[Callable[[Partition], None]] = []

    # -- lag knobs -------------------------------------------------------------------
    def lag_ms(self, broker_id: int, topic: str) -> int:
        if topic in self.lag_by_topic:
            return self.lag_by_topic[topic]
        return self.lag_by_broker.get(broker_id, self.default_lag_ms)

    def set_lag(self, lag_ms: int, broker_id: int | None = None, topic: str | None = None) -> None:
        if lag_ms < 0:
            raise ValueError("replication lag must be >= 0")
        if topic is not None:
            self.lag_by_topic[topic] = lag_ms
        elif broker_id is not None:
            self.lag_by_broker[broker_id] = lag_ms
        else:
            self.default_lag_ms = lag_ms
            self.lag_by_broker.clear()

    # -- appends and follower progress ----------------------------------------------------
    def on_leader_append(self, p: Partition) -> None:
        p.replica_leo[p.leader_id] = p.log.log_end_offset
        for r in p.replicas:
            if r != p.leader_id and self._alive(r):
                self.schedule_catch_up(p, r)
        self.maybe_update_isr_and_hw(p)

    def schedule_catch_up(self, p: Partition, broker_id: int) -> None:
        """The follower on ``broker_id`` fetches the leader's log as it is now; the fetch lands
        after the replication lag (at once for a lag of 0)."""
        leo, epoch = p.log.log_end_offset, p.leader_epoch
        lag = self.lag_ms(broker_id, p.topic.name)
        issued = self.clock.monotonic_ms()
        if lag <= 0:
            self.follower_caught_up(p, broker_id, leo, epoch, issued)
        else:
            self.clock.call_later(lag, lambda: self.follower_caught_up(p, broker_id, leo, epoch, issued))

    def follower_caught_up(self, p: Partition, broker_id: int, leo: int, leader_epoch: int,
                           issued_ms: int | None = None) -> None:
        """A follower's fetch of the leader's log up to ``leo`` (issued at ``issued_ms``) arrives.  A fetch
        issued under an older leader epoch is stale (Kafka fences it with FENCED_LEADER_EPOCH) and credits
        nothing."""
        if (p.topic.name not in self.cluster.topics or not self._alive(broker_id) or broker_id == p.leader_id
                or leader_epoch != p.leader_epoch):
            return
        p.replica_leo[broker_id] = max(p.replica_leo.get(broker_id, 0), min(leo, p.log.log_end_offset))
        if p.replica_leo[broker_id] >= leo:  # it reached the leader's end as of the fetch's start
            start = issued_ms if issued_ms is not None else self.clock.monotonic_ms()
            p.caught_up_ms[broker_id] = max(p.caught_up_ms.get(broker_id, start), start)
        self.maybe_update_isr_and_hw(p)

    def shrink_lagging_isr(self, lag_time_max_ms: int) -> None:
        """Partition.maybeShrinkIsr over every led partition: followers not caught up for longer than
        replica.lag.time.max.ms leave the ISR (a test's set_isr pins are left as they are)."""
        now = self.clock.monotonic_ms()
        for t in list(self.cluster.topics.values()):
            for p in t.partitions:
                if p.leader_id < 0 or not self._alive(p.leader_id):
                    continue
                out = []
                for r in p.isr:
                    if r == p.leader_id:
                        continue
                    if p.replica_leo.get(r, -1) >= p.log.log_end_offset:
                        p.caught_up_ms[r] = now  # at the log end: caught up now
                    elif now - p.caught_up_ms.setdefault(r, now) > lag_time_max_ms:
                        out.append(r)
                if out:
                    self.shrink_isr(p, out)

    def maybe_update_isr_and_hw(self, p: Partition) -> None:
        if p.leader_id < 0:
            return
        log = p.log
        hw = log.high_watermark
        # the high watermark over the current ISR first (maybeIncrementLeaderHW), so a follower that
        # just left it is measured against the HW the others allow
        new_hw = min(p.replica_leo.get(r, 0) if r != p.leader_id else log.log_end_offset for r in p.isr)
        expanded = False
        for r in p.replicas:  # ISR expansion: a caught-up live follower rejoins (maybeExpandIsr)
            if (r not in p.isr and r not in p.isr_pinned_out and self._alive(r)
                    and p.replica_leo.get(r, -1) >= max(new_hw, hw, log.log_start_offset)):
                p.isr.append(r)
                p.caught_up_ms[r] = self.clock.monotonic_ms()
                expanded = True
        if new_hw > hw:
            log.high_watermark = new_hw
            self.try_complete_delayed_requests(p)
        if expanded:
            for listener in self.isr_expanded:
                listener(p)

    def _alive(self, broker_id: int) -> bool:
        node = self.cluster.brokers.get(broker_id)
        return node is not None and node.alive

    # -- membership changes ------------------------------------------------------------------
    def set_isr(self, p: Partition, isr: list[int]) -> None:
        """Force the ISR (tests): replicas left out stay out until a later set_isr names them;
        the leader always stays in it while alive."""
        p.isr_pinned_out = {r for r in p.replicas if r not in isr and r != p.leader_id}
        self.shrink_isr(p, [r for r in p.isr if r not in isr])
        for r in isr:
            if r not in p.isr and r in p.replicas:
                p.isr.append(r)
        self.maybe_update_isr_and_hw(p)

    def shrink_isr(self, p: Partition, removed: list[int]) -> None:
        p.isr[:] = [r for r in p.isr if r not in removed or r == p.leader_id]
        # A smaller ISR can let the high watermark move up (the slow follower no longer counts).
        self.maybe_update_isr_and_hw(p)
        self.try_complete_delayed_requests(p)  # wake waiters: NOT_ENOUGH_REPLICAS_AFTER_APPEND may now apply

    def broker_stopped(self, broker_id: int) -> None:
        for t in list(self.cluster.topics.values()):
            for p in t.partitions:
                if broker_id not in p.replicas:
                    continue
                if p.leader_id == broker_id:
                    self.elect_leader(p, exclude=broker_id)
                else:
                    p.isr[:] = [r for r in p.isr if r != broker_id]
                    p.replica_leo.pop(broker_id, None)
                    self.maybe_update_isr_and_hw(p)
                    self.try_complete_delayed_requests(p)

    def broker_started(self, broker_id: int) -> None:
        for t in list(self.cluster.topics.values()):
            for p in t.partitions:
                if broker_id not in p.replicas:
                    continue
                if p.leader_id < 0:
                    # An offline partition comes back when a replica returns (unclean election
                    # aside, Kafka waits for an ISR member; the last ISR member was this broker).
                    if broker_id in p.isr or not p.isr:
                        p.isr[:] = [broker_id]
                        self._set_leader(p, broker_id)
                    continue
                # the returning follower starts from its old log end and fetches to catch up
                p.replica_leo.setdefault(broker_id, 0)
                self.schedule_catch_up(p, broker_id)

    def elect_leader(self, p: Partition, exclude: int | None = None, preferred: int | None = None) -> None:
        candidates = [r for r in p.replicas if r in p.isr and r != exclude and self._alive(r)]
        if preferred is not None and preferred in candidates:
            candidates.insert(0, preferred)
        if exclude is not None:
            p.isr[:] = [r for r in p.isr if r != exclude]
            p.replica_leo.pop(exclude, None)
        if not candidates:
            p.leader_id = -1
            p.log.new_leader_epoch(p.log.leader_epoch + 1)
            self.try_complete_delayed_requests(p)
            return
        self._set_leader(p, candidates[0])

    def _set_leader(self, p: Partition, new_leader: int) -> None:
        old_leader = p.leader_id
        log = p.log
        new_leo = log.log_end_offset if old_leader == new_leader else p.replica_leo.get(new_leader, log.log_end_offset)
        if new_leo < log.log_end_offset:
            log.truncate_to(new_leo)
            p.producers.truncate(log.log_end_offset)  # in step with what the log really kept
        p.leader_id = new_leader
        log.new_leader_epoch(log.leader_epoch + 1)
        p.replica_leo = {new_leader: log.log_end_offset, **{
            r: min(leo, log.log_end_offset) for r, leo in p.replica_leo.items() if r != new_leader}}
        # a new leader starts every follower's lastCaughtUpTime at the election
        now = self.clock.monotonic_ms()
        p.caught_up_ms = {r: now for r in p.replicas if r != new_leader}
        if new_leader not in p.isr:
            p.isr.insert(0, new_leader)
        # the other replicas now fetch from the new leader (catch-ups from the old epoch are void)
        for r in p.replicas:
            if r != new_leader and self._alive(r):
                self.schedule_catch_up(p, r)
        self.maybe_update_isr_and_hw(p)
        self.try_complete_delayed_requests(p)

    def change_leader(self, p: Partition, new_leader: int, unclean: bool = False) -> None:
        """The controller elected ``new_leader`` (ElectLeaders): a new epoch, the log cut to the new
        leader's end, the followers fetching from it; an unclean election leaves the new leader
        alone in the ISR (``PartitionChangeBuilder``'s UNCLEAN election)."""
        if unclean:
            p.isr[:] = [new_leader]
            p.isr_pinned_out.discard(new_leader)
        self._set_leader(p, new_leader)

    def replicas_added(self, p: Partition, added: list[int]) -> None:
        """Replicas a reassignment adds: each starts an empty log at the leader's log start offset (a new
        follower's first fetch is out of range and resets to it) and fetches from the leader."""
        for r in added:
            p.replica_leo[r] = p.log.log_start_offset
            p.caught_up_ms[r] = self.clock.monotonic_ms()
            if self._alive(r) and r != p.leader_id and p.leader_id >= 0:
                self.schedule_catch_up(p, r)

    def replicas_removed(self, p: Partition, removed: list[int]) -> None:
        """Replicas that left the partition (a reassignment completed or was cancelled): their state goes."""
        for r in removed:
            p.replica_leo.pop(r, None)
            p.caught_up_ms.pop(r, None)
            p.isr_pinned_out.discard(r)

    def is_valid_leader(self, p: Partition, broker_id: int) -> bool:
        """``PartitionChangeBuilder.isValidNewLeader``: an ISR member on a live broker."""
        return broker_id in p.isr and self._alive(broker_id)

    def partitions_created(self, partitions: list[Partition]) -> None:
        """New partitions (a topic created): every live replica starts in the ISR, caught up at
        offset 0; a partition whose first replica is down elects another leader."""
        now = self.clock.monotonic_ms()
        for p in partitions:
            p.replica_leo = {r: 0 for r in p.replicas}
            p.caught_up_ms = {r: now for r in p.replicas if r != p.leader_id}
            p.isr[:] = [r for r in p.replicas if self._alive(r)]
            if p.leader_id not in p.isr:
                self.elect_leader(p)
