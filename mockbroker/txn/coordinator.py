"""TransactionCoordinator: InitProducerId, AddPartitionsToTxn (and the KIP-890 part 1
verification), AddOffsetsToTxn, EndTxn, the abort of timed-out transactions and the expiration
of transactional ids (Kafka 4.x ``TransactionCoordinator.scala`` with the part of
``TransactionMarkerChannelManager.scala`` that waits for the markers and then completes).

Results go through callbacks, as in Kafka.  Errors are the coordinator's own; the wire handlers
map PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for old clients (``error_for_client_version``).
``client_transaction_version`` is the request's transaction version, by its version alone
(Kafka 4.x ``TransactionVersion.transactionVersionForEndTxn`` / ``...ForAddPartitionsToTxn``):
2 for EndTxn v5+ and AddPartitionsToTxn v4+ (KIP-890 part 2), else 0; aborts the coordinator
starts itself (a fence, a timeout) use the cluster's level.

Transaction markers go through a ``MarkerWriter``: one call per (producer, marker) with all the
transaction's partitions, answered with an error per partition.  NONE removes the partition
from the transaction (so does a partition whose topic is gone: the writer answers NONE for it,
as Kafka skips a partition without a leader); retriable errors are written again after
``MARKER_RETRY_BACKOFF_MS``; INVALID_PRODUCER_EPOCH / TRANSACTION_COORDINATOR_FENCED stop the
sending (a newer coordinator owns the transaction).  When no partition is left the Complete*
transition is written.

Over 500 lines on purpose: as Kafka's ``TransactionCoordinator``, every API and
the timers go through the same per-id state transitions and the marker
completion; the state itself is ``state_manager.py`` and ``transaction_metadata.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import NamedTuple, Protocol

from protocol.errors import ErrorCode

from ..common.clock import PeriodicTask, every
from ..state.cluster_view import BrokerView, TopicPartition
from .transaction_metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    SHORT_MAX,
    TV_0,
    IllegalStateError,
    TransactionMetadata,
    TxnCoordinatorError,
    TxnTransitMetadata,
    supports_epoch_bump,
)
from .state import TransactionState
from .state_manager import TransactionalIdAndProducerIdEpoch, TransactionConfig, TransactionStateManager

S = TransactionState
GROUP_METADATA_TOPIC = "__consumer_offsets"
MARKER_RETRY_BACKOFF_MS = 100

# KIP-588: PRODUCER_FENCED is answered from these request versions on; older clients get
# INVALID_PRODUCER_EPOCH (KafkaApis maps it per API)
PRODUCER_FENCED_SINCE = {"InitProducerId": 4, "AddPartitionsToTxn": 2, "AddOffsetsToTxn": 2, "EndTxn": 2}

# a marker write answered with these is tried again (TransactionMarkerRequestCompletionHandler)
_RETRIABLE_MARKER_ERRORS = frozenset({
    ErrorCode.unknown_topic_or_partition, ErrorCode.not_leader_or_follower, ErrorCode.not_enough_replicas,
    ErrorCode.not_enough_replicas_after_append, ErrorCode.request_timed_out, ErrorCode.kafka_storage_error})
_ABORT_SENDING_MARKER_ERRORS = frozenset({ErrorCode.invalid_producer_epoch, ErrorCode.transaction_coordinator_fenced})
_SKIPPED_MARKER_ERRORS = frozenset({ErrorCode.unsupported_for_message_format, ErrorCode.unsupported_version})


def error_for_client_version(api: str, version: int, error: ErrorCode) -> ErrorCode:
    if error is ErrorCode.producer_fenced and version < PRODUCER_FENCED_SINCE[api]:
        return ErrorCode.invalid_producer_epoch
    return error


class InitProducerIdResult(NamedTuple):
    producer_id: int
    producer_epoch: int
    error: ErrorCode


def _init_error(error: ErrorCode) -> InitProducerIdResult:
    return InitProducerIdResult(NO_PRODUCER_ID, NO_PRODUCER_EPOCH, error)


class ProducerIdManager(Protocol):
    def allocate_producer_id(self) -> int: ...


MarkerErrors = Mapping[TopicPartition, ErrorCode]


class MarkerWriter(Protocol):
    def write_markers(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                      partitions: frozenset[TopicPartition], on_done: Callable[[MarkerErrors], None]) -> None:
        """Append a COMMIT or ABORT control batch to each partition (WriteTxnMarkers); call
        ``on_done`` once with an error per partition, now or later."""


InitProducerIdCallback = Callable[[InitProducerIdResult], None]
AddPartitionsCallback = Callable[[ErrorCode], None]
VerifyPartitionsCallback = Callable[[dict[TopicPartition, ErrorCode]], None]
EndTxnCallback = Callable[[ErrorCode, int, int], None]  # error, producer id, producer epoch (TV2 answers them)


def _ignore_end(_error: ErrorCode, _pid: int, _epoch: int) -> None:
    """Kafka's onEndTransactionComplete only logs."""


class TransactionCoordinator:
    def __init__(self, txn_manager: TransactionStateManager, producer_ids: ProducerIdManager,
                 marker_writer: MarkerWriter, group_partition_for: Callable[[str], int]) -> None:
        self.txn_manager = txn_manager
        self.clock = txn_manager.clock
        self.producer_ids = producer_ids
        self.marker_writer = marker_writer
        self.group_partition_for = group_partition_for
        self._timers: list[PeriodicTask] = []
        # transactional id -> the coordinator epoch its markers are sent under (transactionsWithPendingMarkers)
        self._pending_markers: dict[str, int] = {}
        self.active = False

    @property
    def config(self) -> TransactionConfig:
        """The coordinator's configuration (transaction.version, verification, timeouts)."""
        return self.txn_manager.config

    # -- lifecycle --------------------------------------------------------------------------------
    def startup(self) -> None:
        """Schedule the abort of timed-out transactions and the expiration of ids on the clock."""
        cfg = self.txn_manager.config
        self.active = True
        self._every(cfg.abort_timed_out_transactions_interval_ms, self.abort_timed_out_transactions,
                    "transaction-abort")
        self._every(cfg.remove_expired_transactional_ids_interval_ms, self.expire_transactional_ids,
                    "transactionalId-expiration")

    def shutdown(self) -> None:
        self.active = False
        for t in self._timers:
            t.cancel()
        self._timers.clear()

    def _every(self, interval_ms: int, task: Callable[[], object], name: str) -> None:
        self._timers.append(every(self.clock, interval_ms, task, name))

    def find_coordinator(self, transactional_id: str) -> BrokerView | None:
        """FindCoordinator TRANSACTION: the broker leading the id's ``__transaction_state``
        partition (None: no live replica)."""
        return self.txn_manager.leaders.coordinator(transactional_id)

    # -- InitProducerId ---------------------------------------------------------------------------
    def handle_init_producer_id(self, transactional_id: str | None, transaction_timeout_ms: int,
                                expected_producer_id_and_epoch: tuple[int, int] | None,
                                callback: InitProducerIdCallback, node_id: int | None = None) -> None:
        if transactional_id is None:  # an idempotent producer: a new id, every time
            callback(InitProducerIdResult(self.producer_ids.allocate_producer_id(), 0, ErrorCode.none))
            return
        if not transactional_id:
            callback(_init_error(ErrorCode.invalid_request))
            return
        if not self.txn_manager.validate_transaction_timeout_ms(transaction_timeout_ms):
            callback(_init_error(ErrorCode.invalid_transaction_timeout))
            return
        err, found = self.txn_manager.get_transaction_state(transactional_id, node_id)
        if err is not None:
            callback(_init_error(err))
            return
        if found is None:
            found = self.txn_manager.put_transaction_state_if_not_exists(TransactionMetadata(
                transactional_id, self.producer_ids.allocate_producer_id(), NO_PRODUCER_ID, NO_PRODUCER_ID,
                NO_PRODUCER_EPOCH, NO_PRODUCER_EPOCH, transaction_timeout_ms, S.EMPTY, set(), -1,
                self.clock.time_ms(), TV_0))
        coordinator_epoch, md = found
        try:
            transit = self._prepare_init_producer_id_transit(transaction_timeout_ms, md,
                                                             expected_producer_id_and_epoch)
        except TxnCoordinatorError as e:
            callback(_init_error(e.error))
            return
        if transit.txn_state is S.PREPARE_EPOCH_FENCE:
            # abort the ongoing transaction with the fenced epoch; the client retries on CONCURRENT_TRANSACTIONS
            def retriable(error: ErrorCode, _pid: int, _epoch: int) -> None:
                callback(_init_error(error if error is not ErrorCode.none else ErrorCode.concurrent_transactions))

            self._end_transaction(transactional_id, transit.producer_id, transit.producer_epoch, False, False,
                                  self.txn_manager.config.transaction_version, retriable, node_id)
            return

        def send_pid(error: ErrorCode) -> None:
            callback(InitProducerIdResult(transit.producer_id, transit.producer_epoch, error)
                     if error is ErrorCode.none else _init_error(error))

        self.txn_manager.append_transaction_to_log(transactional_id, coordinator_epoch, transit, send_pid)

    def _prepare_init_producer_id_transit(self, timeout_ms: int, md: TransactionMetadata,
                                          expected: tuple[int, int] | None) -> TxnTransitMetadata:
        def valid_producer_id(pid: int, epoch: int) -> bool:
            # KIP-360: a just-created id, the current producer id, or a retry after an exhausted epoch
            return md.producer_epoch == NO_PRODUCER_EPOCH or pid == md.producer_id \
                or (pid == md.prev_producer_id and epoch >= SHORT_MAX - 1)

        if md.pending_transition_in_progress():
            raise TxnCoordinatorError(ErrorCode.concurrent_transactions)
        if expected is not None and not valid_producer_id(*expected):
            raise TxnCoordinatorError(ErrorCode.producer_fenced)
        if md.state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            raise TxnCoordinatorError(ErrorCode.concurrent_transactions)
        if md.state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT, S.EMPTY):
            now = self.clock.time_ms()
            if md.is_producer_epoch_exhausted() and (expected is None or expected[1] == md.producer_epoch):
                return md.prepare_producer_id_rotation(self.producer_ids.allocate_producer_id(), timeout_ms, now,
                                                       expected is not None)
            return md.prepare_increment_producer_epoch(timeout_ms, None if expected is None else expected[1], now)
        if md.state is S.ONGOING:
            # this epoch is never returned: the abort completes, the client retries and bumps again
            return md.prepare_fence_producer_epoch()
        raise IllegalStateError(f"{md.transactional_id} found in state {md.state.state_name}")

    # -- AddPartitionsToTxn / AddOffsetsToTxn -----------------------------------------------------
    def handle_add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                              partitions: Collection[TopicPartition], callback: AddPartitionsCallback,
                              client_transaction_version: int = TV_0, node_id: int | None = None) -> None:
        if not transactional_id:
            callback(ErrorCode.invalid_request)
            return
        err, found = self.txn_manager.get_transaction_state(transactional_id, node_id)
        if err is None and found is None:
            err = ErrorCode.invalid_producer_id_mapping
        if err is not None or found is None:
            callback(err or ErrorCode.invalid_producer_id_mapping)
            return
        coordinator_epoch, md = found
        parts = frozenset(partitions)
        if md.pending_transition_in_progress():
            # first (KAFKA-18660): the transition may be to a new producer id or epoch the client already
            # uses (TV2, the end's bump); it completes before the other checks, so the client retries
            callback(ErrorCode.concurrent_transactions)
        elif md.producer_id != producer_id:
            callback(ErrorCode.invalid_producer_id_mapping)
        elif md.producer_epoch != producer_epoch:
            callback(ErrorCode.producer_fenced)
        elif md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            callback(ErrorCode.concurrent_transactions)
        elif md.state is S.ONGOING and parts <= md.topic_partitions:
            callback(ErrorCode.none)  # already in the transaction
        else:
            transit = md.prepare_add_partitions(parts, self.clock.time_ms(), client_transaction_version)
            self.txn_manager.append_transaction_to_log(transactional_id, coordinator_epoch, transit, callback)

    def handle_verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                 partitions: Collection[TopicPartition], callback: VerifyPartitionsCallback,
                                 node_id: int | None = None) -> None:
        """KIP-890 part 1 (AddPartitionsToTxn v4+ with verify_only): is each partition already in
        the transaction?  One not in it is TRANSACTION_ABORTABLE; nothing is changed."""
        parts = list(partitions)
        if not transactional_id:
            callback({tp: ErrorCode.invalid_request for tp in parts})
            return
        err, found = self.txn_manager.get_transaction_state(transactional_id, node_id)
        if err is None:
            if found is None or found.metadata.producer_id != producer_id:
                err = ErrorCode.invalid_producer_id_mapping
            elif found.metadata.producer_epoch != producer_epoch:
                err = ErrorCode.producer_fenced
            elif found.metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                err = ErrorCode.concurrent_transactions
        if err is not None or found is None:
            callback({tp: err or ErrorCode.invalid_producer_id_mapping for tp in parts})
            return
        md = found.metadata
        callback({tp: ErrorCode.none if tp in md.topic_partitions else ErrorCode.transaction_abortable
                  for tp in parts})

    def handle_add_offsets(self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str,
                           callback: AddPartitionsCallback, client_transaction_version: int = TV_0,
                           node_id: int | None = None) -> TopicPartition:
        """AddOffsetsToTxn: the group's __consumer_offsets partition joins the transaction (its
        TxnOffsetCommit is then written there).  Returns that partition."""
        tp = (GROUP_METADATA_TOPIC, self.group_partition_for(group_id))
        self.handle_add_partitions(transactional_id, producer_id, producer_epoch, [tp], callback,
                                   client_transaction_version, node_id)
        return tp

    # -- EndTxn -----------------------------------------------------------------------------------
    def handle_end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                               callback: EndTxnCallback, client_transaction_version: int = TV_0,
                               node_id: int | None = None) -> None:
        self._end_transaction(transactional_id, producer_id, producer_epoch, commit, True,
                              client_transaction_version, callback, node_id)

    def _end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                         from_client: bool, tv: int, callback: EndTxnCallback, node_id: int | None) -> None:
        def fail(error: ErrorCode) -> None:
            callback(error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)

        if not transactional_id:
            fail(ErrorCode.invalid_request)
            return
        err, found = self.txn_manager.get_transaction_state(transactional_id, node_id)
        if err is not None or found is None:
            fail(err or ErrorCode.invalid_producer_id_mapping)
            return
        coordinator_epoch, md = found
        try:
            if supports_epoch_bump(tv):
                transit = self._prepare_end_v2(md, producer_id, producer_epoch, commit, from_client, tv)
            else:
                transit = self._prepare_end_v1(md, producer_id, producer_epoch, commit, from_client)
        except TxnCoordinatorError as e:
            if e.error is ErrorCode.none and supports_epoch_bump(tv):  # a retry of a completed end: its answer
                callback(ErrorCode.none, md.producer_id, md.producer_epoch)
            else:
                fail(e.error)
            return

        def send_markers(error: ErrorCode) -> None:
            if error is not ErrorCode.none:
                fail(error)
                return
            self._after_prepare_written(transactional_id, coordinator_epoch, producer_id, producer_epoch, commit,
                                        tv, callback)

        self.txn_manager.append_transaction_to_log(transactional_id, coordinator_epoch, transit, send_markers)

    @staticmethod
    def _invalid_state() -> TxnCoordinatorError:
        return TxnCoordinatorError(ErrorCode.invalid_txn_state)

    def _prepare_end_v1(self, md: TransactionMetadata, producer_id: int, producer_epoch: int, commit: bool,
                        from_client: bool) -> TxnTransitMetadata:
        if md.producer_id != producer_id:
            raise TxnCoordinatorError(ErrorCode.invalid_producer_id_mapping)
        # strict equality for clients: they never bump the epoch themselves
        if (from_client and producer_epoch != md.producer_epoch) or producer_epoch < md.producer_epoch:
            raise TxnCoordinatorError(ErrorCode.producer_fenced)
        if md.pending_state is not None and md.pending_state is not S.PREPARE_EPOCH_FENCE:
            raise TxnCoordinatorError(ErrorCode.concurrent_transactions)
        st = md.state
        if st is S.ONGOING:
            next_state = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
            if next_state is S.PREPARE_ABORT and md.pending_state is S.PREPARE_EPOCH_FENCE:
                md.pending_state = None
                md.producer_epoch = producer_epoch
                md.last_producer_epoch = NO_PRODUCER_EPOCH
            return md.prepare_abort_or_commit(next_state, TV_0, NO_PRODUCER_ID, self.clock.time_ms(), False)
        if st is S.COMPLETE_COMMIT or st is S.COMPLETE_ABORT:
            raise TxnCoordinatorError(ErrorCode.none if commit == (st is S.COMPLETE_COMMIT) else ErrorCode.invalid_txn_state)
        if st is S.PREPARE_COMMIT or st is S.PREPARE_ABORT:
            raise TxnCoordinatorError(ErrorCode.concurrent_transactions if commit == (st is S.PREPARE_COMMIT)
                                      else ErrorCode.invalid_txn_state)
        if st is S.EMPTY:
            raise self._invalid_state()
        raise IllegalStateError(f"{md.transactional_id} found in state {st.state_name}")

    def _prepare_end_v2(self, md: TransactionMetadata, producer_id: int, producer_epoch: int, commit: bool,
                        from_client: bool, tv: int) -> TxnTransitMetadata:
        """KIP-890 part 2: every end bumps the epoch, so a retry carries the epoch before the bump.
        Empty/CompleteAbort/CompleteCommit answer (Retry = the epoch one below the current):
        Empty: abort bumps, commit INVALID_TXN_STATE, a retry PRODUCER_FENCED; CompleteAbort: abort
        retry NONE, abort bumps, commit INVALID_TXN_STATE; CompleteCommit: commit retry NONE,
        commit INVALID_TXN_STATE, abort bumps, abort retry INVALID_TXN_STATE."""
        is_epoch_fence = md.pending_state is S.PREPARE_EPOCH_FENCE
        retry_on_overflow = not is_epoch_fence and md.prev_producer_id == producer_id \
            and producer_epoch == SHORT_MAX - 1 and md.producer_epoch == 0
        retry_on_epoch_bump = not is_epoch_fence and md.producer_epoch == producer_epoch + 1
        st = md.state
        if is_epoch_fence:
            valid_epoch = (not from_client or producer_epoch == md.producer_epoch) and producer_epoch >= md.producer_epoch
        elif st in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            valid_epoch = retry_on_epoch_bump
        elif st in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            valid_epoch = retry_on_epoch_bump or retry_on_overflow or producer_epoch == md.producer_epoch
        else:
            valid_epoch = producer_epoch == md.producer_epoch
        is_retry = retry_on_epoch_bump or retry_on_overflow

        def completion(next_state: TransactionState, no_partition_added: bool) -> TxnTransitMetadata:
            next_pid = self.producer_ids.allocate_producer_id() \
                if not is_epoch_fence and md.is_producer_epoch_exhausted() else NO_PRODUCER_ID
            if next_state is S.PREPARE_ABORT and is_epoch_fence:
                md.pending_state = None
                md.producer_epoch = producer_epoch
                md.last_producer_epoch = NO_PRODUCER_EPOCH
            return md.prepare_abort_or_commit(next_state, tv, next_pid, self.clock.time_ms(), no_partition_added)

        # the pending state first (KAFKA-18464; Kafka 4.4's endTransaction checks it before the producer id
        # and the epoch): an end at the bumped epoch while the previous end's markers are still being written
        # (PrepareCommit/PrepareAbort, CompleteX pending) waits and retries; checked after the epoch it would
        # fence the producer that just bumped it
        if md.pending_state is not None and not is_epoch_fence:
            raise TxnCoordinatorError(ErrorCode.concurrent_transactions)
        if md.producer_id != producer_id and not retry_on_overflow:
            raise TxnCoordinatorError(ErrorCode.invalid_producer_id_mapping)
        if not valid_epoch:
            raise TxnCoordinatorError(ErrorCode.producer_fenced)
        if st is S.ONGOING:
            return completion(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, False)
        if st is S.COMPLETE_COMMIT:
            if commit:
                raise TxnCoordinatorError(ErrorCode.none if is_retry else ErrorCode.invalid_txn_state)
            if is_retry:
                raise self._invalid_state()
            return completion(S.PREPARE_ABORT, True)
        if st is S.COMPLETE_ABORT:
            if not commit:
                if is_retry:
                    raise TxnCoordinatorError(ErrorCode.none)
                return completion(S.PREPARE_ABORT, True)
            raise self._invalid_state()
        if st is S.PREPARE_COMMIT or st is S.PREPARE_ABORT:
            raise TxnCoordinatorError(ErrorCode.concurrent_transactions if commit == (st is S.PREPARE_COMMIT)
                                      else ErrorCode.invalid_txn_state)
        if st is S.EMPTY:
            if not commit:
                return completion(S.PREPARE_ABORT, True)
            raise self._invalid_state()
        raise IllegalStateError(f"{md.transactional_id} found in state {st.state_name}")

    def _after_prepare_written(self, transactional_id: str, coordinator_epoch: int, producer_id: int,
                               producer_epoch: int, commit: bool, tv: int, callback: EndTxnCallback) -> None:
        """Prepare* is written: answer the client, then write the markers (Kafka's sendTxnMarkersCallback)."""
        err, found = self.txn_manager.get_transaction_state(transactional_id)
        error: ErrorCode | None = err
        if error is None and (found is None or found.coordinator_epoch != coordinator_epoch):
            error = ErrorCode.not_coordinator
        md = found.metadata if found is not None else None
        if error is None and md is not None:
            epoch_ok = md.producer_epoch == producer_epoch or (supports_epoch_bump(tv) and
                                                               md.producer_epoch == producer_epoch + 1)
            if md.producer_id != producer_id:
                error = ErrorCode.invalid_producer_id_mapping
            elif not epoch_ok:
                error = ErrorCode.producer_fenced
            elif md.pending_transition_in_progress():
                error = ErrorCode.concurrent_transactions
            elif md.state is not (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT):
                error = ErrorCode.invalid_txn_state
        if error is not None or md is None:
            callback(error or ErrorCode.not_coordinator, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
            return
        complete = md.prepare_complete(self.clock.time_ms())
        if supports_epoch_bump(tv):  # TV2 answers the bumped epoch the client goes on with
            callback(ErrorCode.none, md.producer_id, md.producer_epoch)
        else:
            callback(ErrorCode.none, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        self._send_markers(coordinator_epoch, commit, md, complete, frozenset(md.topic_partitions))

    # -- markers (TransactionMarkerChannelManager) -------------------------------------------------
    def _send_markers(self, coordinator_epoch: int, commit: bool, md: TransactionMetadata,
                      complete: TxnTransitMetadata, partitions: frozenset[TopicPartition]) -> None:
        self._pending_markers[md.transactional_id] = coordinator_epoch
        if not partitions:
            self._write_completion(coordinator_epoch, md, complete)
            return

        part = self.txn_manager.partition_for(md.transactional_id)

        def on_done(errors: MarkerErrors) -> None:
            if self.txn_manager.coordinator_epoch(part) != coordinator_epoch:
                return  # answers to a coordinator that resigned: the new one sends the markers again
            retry = set()
            for tp in partitions:
                error = errors.get(tp, ErrorCode.request_timed_out)
                if error is ErrorCode.none or error in _SKIPPED_MARKER_ERRORS:
                    md.remove_partition(tp)
                elif error in _ABORT_SENDING_MARKER_ERRORS:
                    return  # a newer coordinator completes the transaction
                elif error in _RETRIABLE_MARKER_ERRORS:
                    retry.add(tp)
                else:
                    raise IllegalStateError(f"unexpected error {error.name} writing a transaction marker to {tp}")
            if retry:
                self.clock.call_later(MARKER_RETRY_BACKOFF_MS, lambda: self._resend(
                    coordinator_epoch, commit, md, complete, frozenset(retry)))
            else:
                self._write_completion(coordinator_epoch, md, complete)

        self.marker_writer.write_markers(md.producer_id, md.producer_epoch, commit, coordinator_epoch, partitions,
                                         on_done)

    def _resend(self, coordinator_epoch: int, commit: bool, md: TransactionMetadata,
                complete: TxnTransitMetadata, partitions: frozenset[TopicPartition]) -> None:
        part = self.txn_manager.partition_for(md.transactional_id)
        if self.txn_manager.transactions.get(md.transactional_id) is md and md.pending_state is complete.txn_state \
                and self.txn_manager.coordinator_epoch(part) == coordinator_epoch:
            self._send_markers(coordinator_epoch, commit, md, complete, partitions)

    def _write_completion(self, coordinator_epoch: int, md: TransactionMetadata, complete: TxnTransitMetadata) -> None:
        def done(error: ErrorCode) -> None:
            # a failure (NOT_COORDINATOR: the partition moved) leaves the transaction to the next coordinator
            if error is ErrorCode.none:
                self._pending_markers.pop(md.transactional_id, None)

        self.txn_manager.append_transaction_to_log(md.transactional_id, coordinator_epoch, complete, done)

    def on_brokers_changed(self) -> None:
        """A broker stopped or started.  Where a ``__transaction_state`` partition changed leader,
        the new coordinator loads it (Kafka's onElection): a transaction in PrepareCommit or
        PrepareAbort has its markers sent again, under the new coordinator epoch."""
        for tid, md in list(self.txn_manager.transactions.items()):
            if md.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                continue
            epoch = self.txn_manager.coordinator_epoch(self.txn_manager.partition_for(tid))
            if self._pending_markers.get(tid) == epoch or self.txn_manager.coordinator_id(tid) < 0:
                continue
            md.pending_state = None  # what was pending belonged to the old coordinator
            complete = md.prepare_complete(self.clock.time_ms())
            self._send_markers(epoch, md.state is S.PREPARE_COMMIT, md, complete, frozenset(md.topic_partitions))

    # -- DescribeTransactions / ListTransactions -------------------------------------------------
    def handle_describe_transactions(self, transactional_id: str, node_id: int | None = None
                                     ) -> tuple[ErrorCode, TransactionMetadata | None]:
        """The id's metadata as DescribeTransactions shows it (state name, timeout, start time,
        producer id/epoch, partitions), or the error for it."""
        if not self.active:
            return ErrorCode.coordinator_not_available, None
        if not transactional_id:
            return ErrorCode.invalid_request, None
        err, found = self.txn_manager.get_transaction_state(transactional_id, node_id)
        if err is not None:
            return err, None
        if found is None or found.metadata.state is S.DEAD:
            return ErrorCode.transactional_id_not_found, None
        return ErrorCode.none, found.metadata

    def handle_list_transactions(self, producer_ids: Collection[int], states: Collection[str],
                                 duration_filter_ms: int = -1, node_id: int | None = None
                                 ) -> tuple[ErrorCode, list[tuple[str, int, str]], list[str]]:
        if not self.active:
            return ErrorCode.coordinator_not_available, [], []
        return self.txn_manager.list_transaction_states(node_id, producer_ids, states, duration_filter_ms)

    # -- timeouts and expiration ------------------------------------------------------------------
    def abort_timed_out_transactions(
            self, on_complete: Callable[[TransactionalIdAndProducerIdEpoch], EndTxnCallback] = lambda _t: _ignore_end
    ) -> None:
        """Fence and abort every Ongoing transaction past its transaction.timeout.ms."""
        for t in self.txn_manager.timed_out_transactions():
            err, found = self.txn_manager.get_transaction_state(t.transactional_id)
            if err is not None or found is None:
                continue
            md = found.metadata
            if md.producer_id != t.producer_id or md.pending_transition_in_progress():
                continue
            fence = md.prepare_fence_producer_epoch()
            self._end_transaction(md.transactional_id, fence.producer_id, fence.producer_epoch, False, False,
                                  self.txn_manager.config.transaction_version, on_complete(t), None)

    def expire_transactional_ids(self) -> list[str]:
        return self.txn_manager.remove_expired_transactional_ids()
