"""KIP-890 produce-time verification: the broker asks the transaction coordinator about a
transactional batch before appending it (Kafka 4.x ``AddPartitionsToTxnManager``, the part of
``ReplicaManager.handleProduceAppend`` that picks what to send, and ``KafkaApis`` choosing the
``TransactionSupportedOperation`` from the Produce version).

What the Produce version lets the broker do
(``AddPartitionsToTxnManager.produceRequestVersionToTransactionSupportedOperation``):

* v0-10 ``defaultError``: verify only; a partition not in the transaction is INVALID_TXN_STATE
  (these clients do not know TRANSACTION_ABORTABLE);
* v11 ``genericErrorSupported``: verify only; TRANSACTION_ABORTABLE is passed through (KIP-890's
  generic abortable error);
* v12+ ``addPartition`` (transaction version 2 clients): the partition is added to the
  transaction (AddPartitionsToTxn with verifyOnly=false), so the client sends no
  AddPartitionsToTxn itself.

The coordinator's answer is mapped as ``AddPartitionsToTxnHandler.onComplete`` maps it:
PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH (what producers expect there), TRANSACTION_ABORTABLE
INVALID_TXN_STATE for the clients that do not know it, and no live leader of the id's
``__transaction_state`` partition is COORDINATOR_NOT_AVAILABLE (``getTransactionCoordinator``).
Only the partitions with an error are in the answer (``unverified``).  ``ReplicaManager`` retries
CONCURRENT_TRANSACTIONS at Produce v12+ (add.partitions.to.txn.retry.backoff.ms, up to
add.partitions.to.txn.retry.backoff.max.ms) and then turns the coordinator errors older clients
would not retry into NOT_ENOUGH_REPLICAS (``verification_failure`` in ``replica_manager.py``).

The inter-broker request is not simulated: the coordinator is called in-process and answers at
once (its log writes complete at once), so requests are never queued per coordinator and none
replaces another's (Kafka answers a queued one that a newer request of the same transactional id
replaces NETWORK_EXCEPTION, or INVALID_PRODUCER_EPOCH when the newer has a higher epoch); the
synchronous ``verify`` (TxnOffsetCommit) takes an answer that did not come back at once as Kafka
takes a timed-out request, NETWORK_EXCEPTION.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from enum import Enum

from protocol.errors import ErrorCode

from .coordinator import TransactionCoordinator
from ..state.cluster_view import TopicPartition
from .transaction_metadata import TV_2


class TransactionSupportedOperation(Enum):
    """Kafka's ``TransactionSupportedOperation``: what the client's request version allows."""
    DEFAULT_ERROR = "defaultError"
    GENERIC_ERROR_SUPPORTED = "genericErrorSupported"
    ADD_PARTITION = "addPartition"

    @property
    def supports_epoch_bump(self) -> bool:
        return self is TransactionSupportedOperation.ADD_PARTITION


def operation_for_txn_offset_commit_version(version: int) -> TransactionSupportedOperation:
    """``txnOffsetCommitRequestVersionToTransactionSupportedOperation``: v5+ add, v4 generic error,
    else default (the group coordinator's transactional write verifies its offsets partition)."""
    if version > 4:
        return TransactionSupportedOperation.ADD_PARTITION
    if version > 3:
        return TransactionSupportedOperation.GENERIC_ERROR_SUPPORTED
    return TransactionSupportedOperation.DEFAULT_ERROR


def operation_for_produce_version(version: int) -> TransactionSupportedOperation:
    """``produceRequestVersionToTransactionSupportedOperation``: v12+ add, v11 generic error, else default."""
    if version > 11:
        return TransactionSupportedOperation.ADD_PARTITION
    if version > 10:
        return TransactionSupportedOperation.GENERIC_ERROR_SUPPORTED
    return TransactionSupportedOperation.DEFAULT_ERROR


# the partitions that failed verification and their errors (AddPartitionsToTxnManager.AppendCallback)
AppendCallback = Callable[[dict[TopicPartition, ErrorCode]], None]


class AddPartitionsToTxnManager:
    """One per cluster (Kafka has one per broker, each sending to the coordinators); the
    ``ReplicaManager.txn_verifier``: asked for the transactional partitions of a Produce whose
    producer has no transaction open in them, answers the partitions that failed and their errors
    (none: append them)."""

    def __init__(self, coordinator: TransactionCoordinator) -> None:
        self.coordinator = coordinator

    def __call__(self, transactional_id: str, producer_id: int, producer_epoch: int,
                 partitions: Collection[TopicPartition], produce_version: int, callback: AppendCallback) -> None:
        self.add_or_verify_transaction(transactional_id, producer_id, producer_epoch, partitions, callback,
                                       operation_for_produce_version(produce_version))

    def add_or_verify_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                  partitions: Collection[TopicPartition], callback: AppendCallback,
                                  operation: TransactionSupportedOperation) -> None:
        """``addOrVerifyTransaction``: one AddPartitionsToTxn for the partitions (verifyOnly unless the
        operation adds them); ``callback`` gets the coordinator's errors as the verifying broker maps
        them (``AddPartitionsToTxnHandler.onComplete``), only for the partitions that failed."""
        parts = list(partitions)
        txn = self.coordinator

        def mapped(errors: dict[TopicPartition, ErrorCode]) -> None:
            unverified = {}
            for tp, error in errors.items():
                if error is ErrorCode.none:
                    continue
                if error is ErrorCode.producer_fenced:
                    error = ErrorCode.invalid_producer_epoch
                elif error is ErrorCode.transaction_abortable \
                        and operation is TransactionSupportedOperation.DEFAULT_ERROR:
                    error = ErrorCode.invalid_txn_state  # for backward compatibility with clients
                unverified[tp] = error
            callback(unverified)

        if operation.supports_epoch_bump:
            # verifyOnly=false in the broker's AddPartitionsToTxn (its latest version, v4+: TV2 for the
            # coordinator, transactionVersionForAddPartitionsToTxn); one error for every partition
            txn.handle_add_partitions(transactional_id, producer_id, producer_epoch, parts,
                                      lambda error: mapped({tp: error for tp in parts}), TV_2)
        else:
            txn.handle_verify_partitions(transactional_id, producer_id, producer_epoch, parts, mapped)

    def verify(self, transactional_id: str, tp: TopicPartition, producer_id: int, producer_epoch: int,
               operation: TransactionSupportedOperation) -> ErrorCode:
        """The coordinator's answer for ``tp`` as the verifying broker sees it, at once (NONE: go on;
        the group coordinator's transactional offset commit asks this way)."""
        answers: list[ErrorCode] = []
        self.add_or_verify_transaction(transactional_id, producer_id, producer_epoch, [tp],
                                       lambda errors: answers.append(errors.get(tp, ErrorCode.none)), operation)
        return answers[0] if answers else ErrorCode.network_exception
