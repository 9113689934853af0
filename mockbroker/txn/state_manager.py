"""TransactionStateManager: every transactional id's metadata, where each is coordinated, the
timed-out transactions and the expired ids (Kafka 4.x ``TransactionStateManager.scala``).

Placement is Kafka's: ``partitionFor`` = Utils.abs(transactionalId.hashCode) %
transaction.state.log.num.partitions, and the leader of that ``__transaction_state`` partition
coordinates the id, followed as the group registry follows ``__consumer_offsets`` (the same
``OffsetsTopicLeaders`` over the transaction log's partition count and replication factor).
One manager serves every simulated broker; ``get_transaction_state`` with a ``node_id`` answers
NOT_COORDINATOR to a broker that does not lead the id's partition, COORDINATOR_NOT_AVAILABLE
when no replica is alive and COORDINATOR_LOAD_IN_PROGRESS while a load is injected.

The ``__transaction_state`` log itself is not kept: ``append_transaction_to_log`` succeeds at
once unless the partition's coordinator epoch moved in between (NOT_COORDINATOR), so a
transition is prepared and completed in one step; a failure to inject can come later.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from protocol.errors import ErrorCode

from ..common.clock import Clock
from ..state.cluster_view import ClusterView
from ..group.registry import OffsetsTopicLeaders
from .transaction_metadata import TV_2, IllegalStateError, TransactionMetadata, TxnTransitMetadata
from .state import TransactionState


@dataclass(frozen=True, slots=True)
class TransactionConfig:
    """Kafka's ``TransactionConfig`` (the broker's transaction.* keys) and the cluster's
    transaction.version feature level (2 on a new Kafka 4.x cluster)."""
    transactional_id_expiration_ms: int = 604800000
    transaction_max_timeout_ms: int = 900000
    num_partitions: int = 50
    replication_factor: int = 3
    abort_timed_out_transactions_interval_ms: int = 10000
    remove_expired_transactional_ids_interval_ms: int = 3600000
    transaction_version: int = TV_2
    partition_verification_enable: bool = True  # transaction.partition.verification.enable (KIP-890 part 1)

    @classmethod
    def from_config(cls, config: Mapping[str, Any], transaction_version: int = TV_2) -> TransactionConfig:
        return cls(config["transactional.id.expiration.ms"], config["transaction.max.timeout.ms"],
                   config["transaction.state.log.num.partitions"],
                   config["transaction.state.log.replication.factor"],
                   config["transaction.abort.timed.out.transaction.cleanup.interval.ms"],
                   config["transaction.remove.expired.transaction.cleanup.interval.ms"], transaction_version,
                   config["transaction.partition.verification.enable"])


class CoordinatorEpochAndTxnMetadata(NamedTuple):
    coordinator_epoch: int
    metadata: TransactionMetadata


class TransactionalIdAndProducerIdEpoch(NamedTuple):
    transactional_id: str
    producer_id: int
    producer_epoch: int


class TransactionStateManager:
    def __init__(self, cluster: ClusterView, clock: Clock, config: TransactionConfig) -> None:
        self.clock = clock
        self.config = config
        self.leaders = OffsetsTopicLeaders(cluster, config.num_partitions, config.replication_factor)
        self.transactions: dict[str, TransactionMetadata] = {}
        # the coordinator epoch of each __transaction_state partition: +1 whenever its leader changes
        self._leader_seen: dict[int, int] = {}
        self._coordinator_epoch: dict[int, int] = {}
        self._loading_until: dict[int, int] = {}  # injected loads: partition -> monotonic deadline

    # -- placement --------------------------------------------------------------------------------
    def partition_for(self, transactional_id: str) -> int:
        return self.leaders.partition_for(transactional_id)

    def coordinator_id(self, transactional_id: str) -> int:
        """The broker coordinating the id (FindCoordinator TRANSACTION); -1: no replica alive."""
        return self.leaders.leader(self.partition_for(transactional_id))

    def coordinator_epoch(self, partition: int) -> int:
        lead = self.leaders.leader(partition)
        if self._leader_seen.get(partition, lead) != lead:
            self._coordinator_epoch[partition] = self._coordinator_epoch.get(partition, 0) + 1
        self._leader_seen[partition] = lead
        return self._coordinator_epoch.get(partition, 0)

    def inject_loading(self, transactional_id: str, duration_ms: int) -> None:
        """A fault: the id's __transaction_state partition loads for ``duration_ms``."""
        self._loading_until[self.partition_for(transactional_id)] = self.clock.monotonic_ms() + duration_ms

    def _is_loading(self, partition: int) -> bool:
        until = self._loading_until.get(partition)
        if until is not None and self.clock.monotonic_ms() >= until:
            del self._loading_until[partition]
            return False
        return until is not None

    def validate_transaction_timeout_ms(self, txn_timeout_ms: int) -> bool:
        return 0 < txn_timeout_ms <= self.config.transaction_max_timeout_ms

    # -- the metadata -----------------------------------------------------------------------------
    def get_transaction_state(self, transactional_id: str, node_id: int | None = None
                              ) -> tuple[ErrorCode | None, CoordinatorEpochAndTxnMetadata | None]:
        """(error, None) when the id cannot be served here; (None, None) for an unknown id."""
        part = self.partition_for(transactional_id)
        lead = self.leaders.leader(part)
        if lead < 0:
            return ErrorCode.coordinator_not_available, None
        if self._loading_until and self._is_loading(part):
            return ErrorCode.coordinator_load_in_progress, None
        if node_id is not None and node_id != lead:
            return ErrorCode.not_coordinator, None
        md = self.transactions.get(transactional_id)
        return None, (CoordinatorEpochAndTxnMetadata(self.coordinator_epoch(part), md) if md is not None else None)

    def put_transaction_state_if_not_exists(self, metadata: TransactionMetadata) -> CoordinatorEpochAndTxnMetadata:
        md = self.transactions.setdefault(metadata.transactional_id, metadata)
        return CoordinatorEpochAndTxnMetadata(self.coordinator_epoch(self.partition_for(md.transactional_id)), md)

    def append_transaction_to_log(self, transactional_id: str, coordinator_epoch: int,
                                  transit: TxnTransitMetadata, callback: Callable[[ErrorCode], None]) -> None:
        """Write the transition and complete it (Kafka: after the write is replicated).  A
        coordinator epoch that moved meanwhile answers NOT_COORDINATOR and leaves the metadata."""
        md = self.transactions.get(transactional_id)
        if md is None or self.coordinator_epoch(self.partition_for(transactional_id)) != coordinator_epoch:
            callback(ErrorCode.not_coordinator)
            return
        if md.pending_state is not transit.txn_state:
            raise IllegalStateError(f"{transactional_id}: writing {transit.txn_state.state_name} while pending "
                                    f"{md.pending_state}")
        md.complete_transition_to(transit)
        callback(ErrorCode.none)

    def list_transaction_states(self, node_id: int | None, producer_ids: Collection[int], states: Collection[str],
                                duration_filter_ms: int = -1
                                ) -> tuple[ErrorCode, list[tuple[str, int, str]], list[str]]:
        """ListTransactions: (error, (transactional id, producer id, state name) of the ids
        ``node_id`` coordinates (every id when None), the state filters naming no state).  An empty
        filter passes all; Dead ids are never listed; a duration filter >= 0 keeps the ids whose
        transaction started more than that long ago (KIP-994: Kafka's listTransactionStates excludes
        an id when ``now - txnStartTimestamp <= duration``, whatever its state, so an Empty id, whose
        start is -1, passes any duration)."""
        unknown = [name for name in states if TransactionState.from_name(name) is None]
        now = self.clock.time_ms()
        out = []
        for tid, md in self.transactions.items():
            part = self.partition_for(tid)
            if node_id is not None and self.leaders.leader(part) != node_id:
                continue
            if self._loading_until and self._is_loading(part):
                return ErrorCode.coordinator_load_in_progress, [], []
            if md.state is TransactionState.DEAD or (producer_ids and md.producer_id not in producer_ids) \
                    or (states and md.state.state_name not in states) \
                    or (duration_filter_ms >= 0 and now - md.txn_start_timestamp <= duration_filter_ms):
                continue
            out.append((tid, md.producer_id, md.state.state_name))
        return ErrorCode.none, out, unknown

    # -- timeouts and expiration ------------------------------------------------------------------
    def timed_out_transactions(self) -> list[TransactionalIdAndProducerIdEpoch]:
        """Ongoing transactions, with no transition pending, started more than their timeout ago."""
        now = self.clock.time_ms()
        out = []
        for tid, md in self.transactions.items():
            if self._loading_until and self._is_loading(self.partition_for(tid)):
                continue
            if md.pending_state is None and md.state is TransactionState.ONGOING \
                    and md.txn_start_timestamp + md.txn_timeout_ms < now:
                out.append(TransactionalIdAndProducerIdEpoch(tid, md.producer_id, md.producer_epoch))
        return out

    def remove_expired_transactional_ids(self) -> list[str]:
        """Ids in a state that allows expiration (Empty, Complete*) not updated for
        transactional.id.expiration.ms go Dead and are removed (Kafka writes a tombstone first)."""
        now = self.clock.time_ms()
        removed = []
        for tid, md in list(self.transactions.items()):
            if md.pending_state is not None or not md.state.expiration_allowed \
                    or md.txn_last_update_timestamp > now - self.config.transactional_id_expiration_ms:
                continue
            md.prepare_dead()
            del self.transactions[tid]  # the tombstone is written: the id is forgotten
            removed.append(tid)
        return removed
