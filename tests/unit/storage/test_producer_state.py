"""Idempotent producer checks (ProducerStateManager semantics)."""

from __future__ import annotations

from mockbroker.storage.producer_state import SENTINEL_GUARD, ProducerStateManager
from protocol.errors import ErrorCode
from protocol.records import build_batch, parse_header


def hdr(pid=5, epoch=0, seq=0, n=2):
    return parse_header(build_batch([(b"k", b"v", [])] * n, producer_id=pid, producer_epoch=epoch, base_sequence=seq))


def appended(psm, h, first):
    err, dup, _ = psm.check(h)
    assert err == ErrorCode.none and dup is None
    psm.update(h, first, first + h.last_offset_delta, 0)


def test_no_producer_id_means_no_checks():
    psm = ProducerStateManager()
    h = hdr(pid=-1, epoch=0, seq=0)
    for _ in range(3):
        assert psm.check(h) == (ErrorCode.none, None, None)
        psm.update(h, 0, 1, 0)
    assert psm.producers == {}


def test_unknown_producer_accepts_any_sequence():
    psm = ProducerStateManager()
    assert psm.check(hdr(seq=17))[0] == ErrorCode.none


def test_retry_of_one_of_the_last_five_is_a_duplicate_with_original_offsets():
    psm = ProducerStateManager()
    for i in range(6):
        appended(psm, hdr(seq=2 * i), 100 + 2 * i)
    err, dup, _ = psm.check(hdr(seq=4))
    assert err == ErrorCode.none and (dup.first_offset, dup.last_offset) == (104, 105)
    # the first batch fell out of the 5 kept: no longer recognised, and out of order
    assert psm.check(hdr(seq=0))[0] == ErrorCode.out_of_order_sequence_number


def test_gap_is_out_of_order():
    psm = ProducerStateManager()
    appended(psm, hdr(seq=0), 0)
    assert psm.check(hdr(seq=3))[0] == ErrorCode.out_of_order_sequence_number
    assert psm.check(hdr(seq=2))[0] == ErrorCode.none


def test_old_epoch_is_invalid_producer_epoch():
    psm = ProducerStateManager()
    appended(psm, hdr(epoch=3, seq=0), 0)
    assert psm.check(hdr(epoch=2, seq=2))[0] == ErrorCode.invalid_producer_epoch


def test_new_epoch_must_start_at_zero():
    psm = ProducerStateManager()
    appended(psm, hdr(epoch=0, seq=0), 0)
    assert psm.check(hdr(epoch=1, seq=2))[0] == ErrorCode.out_of_order_sequence_number
    appended(psm, hdr(epoch=1, seq=0), 2)
    assert psm.producers[5].epoch == 1 and len(psm.producers[5].batches) == 1


def test_sequence_wraps_after_int_max():
    psm = ProducerStateManager()
    appended(psm, hdr(seq=2**31 - 2, n=1), 0)
    appended(psm, hdr(seq=2**31 - 1, n=1), 1)
    assert psm.check(hdr(seq=0, n=1))[0] == ErrorCode.none


def test_expiry():
    psm = ProducerStateManager()
    appended(psm, hdr(), 0)
    psm.expire(now_ms=100, expiration_ms=50)
    assert psm.producers == {}


# -- transactions (ProducerAppendInfo.appendDataBatch / appendEndTxnMarker) ----------------------
def txn_hdr(pid=5, epoch=0, seq=0, n=1):
    from protocol.records import TRANSACTIONAL_FLAG
    return parse_header(build_batch([(b"k", b"v", [])] * n, producer_id=pid, producer_epoch=epoch,
                                    base_sequence=seq, attributes=TRANSACTIONAL_FLAG))


def test_transactional_batch_opens_a_transaction_once():
    psm = ProducerStateManager()
    appended(psm, txn_hdr(seq=0, n=2), 10)
    appended(psm, txn_hdr(seq=2), 12)
    assert psm.producers[5].current_txn_first_offset == 10
    assert list(psm.ongoing_txns) == [10]
    assert psm.first_unstable_offset(100) == 10
    # a non-transactional batch of the same producer while it is open: INVALID_TXN_STATE
    assert psm.check(hdr(seq=3, n=1))[0] == ErrorCode.invalid_txn_state


def test_marker_completes_the_transaction_and_waits_for_the_high_watermark():
    psm = ProducerStateManager()
    appended(psm, txn_hdr(pid=1), 0)
    appended(psm, txn_hdr(pid=2), 1)
    assert psm.check_end_txn_marker(1, 0, 0, 0) == (ErrorCode.none, None)
    done = psm.append_end_txn_marker(1, 0, 0, True, 2, 0)
    assert (done.producer_id, done.first_offset, done.last_offset, done.is_aborted) == (1, 0, 2, True)
    # the LSO written with an aborted txn: the first open transaction of another producer
    assert psm.last_stable_offset(done) == 1
    psm.complete_txn(done)
    assert list(psm.ongoing_txns) == [1] and list(psm.unreplicated_txns) == [0]
    assert psm.first_unstable_offset(2) == 0   # marker not below the HW yet
    assert psm.first_unstable_offset(3) == 1   # onHighWatermarkUpdated: the completed one is gone
    assert list(psm.unreplicated_txns) == []
    # an empty transaction's marker completes nothing
    assert psm.append_end_txn_marker(1, 0, 0, False, 3, 0) is None
    # a transactional batch after the marker starts a new transaction
    appended(psm, txn_hdr(pid=1, seq=1), 4)
    assert list(psm.ongoing_txns) == [1, 4]


def test_marker_epoch_checks_per_transaction_version():
    psm = ProducerStateManager()
    appended(psm, txn_hdr(epoch=3), 0)
    assert psm.check_end_txn_marker(5, 2, 0, 0)[0] == ErrorCode.invalid_producer_epoch
    assert psm.check_end_txn_marker(5, 3, 0, 0)[0] == ErrorCode.none
    assert psm.check_end_txn_marker(5, 3, 0, 2)[0] == ErrorCode.invalid_producer_epoch  # TV2: must be bumped
    assert psm.check_end_txn_marker(5, 4, 0, 2)[0] == ErrorCode.none
    psm.append_end_txn_marker(5, 4, 7, False, 1, 0)
    assert psm.check_end_txn_marker(5, 4, 7, 2)[0] == ErrorCode.none  # TV2 retry, nothing open (KAFKA-19999)
    assert psm.check_end_txn_marker(5, 4, 6, 0)[0] == ErrorCode.transaction_coordinator_fenced


def test_open_transaction_survives_expiration_and_truncation_reopens_it():
    psm = ProducerStateManager()
    appended(psm, txn_hdr(pid=1), 0)
    psm.expire(10**9, 1)
    assert 1 in psm.producers
    done = psm.append_end_txn_marker(1, 0, 0, False, 1, 0)
    psm.complete_txn(done)
    psm.truncate(1)  # the marker is cut off: the transaction is open again
    assert list(psm.ongoing_txns) == [0] and psm.producers[1].current_txn_first_offset == 0
    psm.truncate(0)
    assert psm.ongoing_txns == {} and psm.producers == {}


# -- Kafka's checkSequence beyond the last batch, and KIP-890 verification state ------------------
def test_a_known_epoch_with_no_batch_left_takes_only_sequence_0():
    """ProducerAppendInfo.checkSequence: a producer known at the batch's epoch whose batches are gone
    (a transaction version 2 marker bumped its epoch and cleared them) continues from sequence -1."""
    psm = ProducerStateManager()
    appended(psm, txn_hdr(epoch=3, seq=0, n=4), 0)
    psm.append_end_txn_marker(5, 4, 0, False, 4, 0)  # TV2: the marker carries the bumped epoch
    assert psm.producers[5].epoch == 4 and not psm.producers[5].batches
    assert psm.check(txn_hdr(epoch=4, seq=4))[0] == ErrorCode.out_of_order_sequence_number
    assert psm.check(txn_hdr(epoch=4, seq=0))[0] == ErrorCode.none


def test_verification_state_keeps_the_lowest_sequence_and_the_guard():
    """UnifiedLog.maybeStartTransactionVerification / VerificationStateEntry: the state is created once
    per producer (its guard stays), the lowest sequence at the latest epoch is kept; an epoch below the
    producer's is refused; a transaction open at the epoch needs no verification (SENTINEL)."""
    psm = ProducerStateManager()
    err, _, guard = psm.maybe_start_transaction_verification(5, 3, 0, True, now_ms=10)
    assert err == ErrorCode.none and guard != SENTINEL_GUARD
    assert psm.maybe_start_transaction_verification(5, 1, 0, True, 11)[2] == guard
    assert psm.verification_states[5].lowest_sequence == 1
    assert psm.maybe_start_transaction_verification(5, 7, 0, True, 12)[2] == guard
    assert psm.verification_states[5].lowest_sequence == 1
    assert psm.maybe_start_transaction_verification(5, 9, 1, True, 13)[2] == guard  # a newer epoch: its own
    assert (psm.verification_states[5].epoch, psm.verification_states[5].lowest_sequence) == (1, 9)
    appended(psm, txn_hdr(epoch=2, seq=0), 0)  # (check without verification: the guard is not asked for)
    assert 5 not in psm.verification_states  # a transactional append ends the verification
    assert psm.maybe_start_transaction_verification(5, 1, 2, True, 14) == (ErrorCode.none, None, SENTINEL_GUARD)
    assert psm.maybe_start_transaction_verification(5, 0, 1, True, 14)[0] == ErrorCode.invalid_producer_epoch


def test_tv2_verification_wants_sequence_0_first_and_nothing_above_the_lowest():
    """checkSequence with a verification state: at Produce v12+ (supportsEpochBump) a producer with no
    batch here must start at 0 ("Expected sequence 0 for transactions v2 ..."); and no batch may start
    above the lowest sequence seen while verifying, so a later pipelined batch cannot overtake the
    first one, whose verification is still being retried."""
    psm = ProducerStateManager()
    _, _, guard = psm.maybe_start_transaction_verification(5, 0, 0, True, 0)
    psm.maybe_start_transaction_verification(5, 2, 0, True, 0)  # the next pipelined batch
    err, _, message = psm.check(txn_hdr(seq=2), guard, verification_enabled=True)
    assert err == ErrorCode.out_of_order_sequence_number and "Expected sequence 0" in message
    psm.verification_states[5].lowest_sequence = 0
    err, _, _ = psm.check(txn_hdr(seq=0, n=2), guard, verification_enabled=True)
    assert err == ErrorCode.none
    # a known producer (batches kept at its epoch) past its verification's lowest sequence
    psm2 = ProducerStateManager()
    appended(psm2, hdr(epoch=0, seq=0), 0)
    _, _, g2 = psm2.maybe_start_transaction_verification(5, 2, 0, False, 0)
    psm2.maybe_start_transaction_verification(5, 4, 0, False, 0)
    err, _, message = psm2.check(txn_hdr(seq=4), g2, verification_enabled=True)
    assert err == ErrorCode.out_of_order_sequence_number and "earliest seen sequence" in message
    assert psm2.check(txn_hdr(seq=2), g2, verification_enabled=True)[0] == ErrorCode.none
    # below Produce v12 an unknown producer still starts anywhere
    psm3 = ProducerStateManager()
    _, _, g3 = psm3.maybe_start_transaction_verification(5, 7, 0, False, 0)
    assert psm3.check(txn_hdr(seq=7), g3, verification_enabled=True)[0] == ErrorCode.none


def test_a_transactional_batch_without_the_verification_guard_is_invalid_txn_state():
    """batchMissingRequiredVerification: with verification on, a transactional batch with no transaction
    open at its epoch must come with the producer's current guard."""
    psm = ProducerStateManager()
    _, _, guard = psm.maybe_start_transaction_verification(5, 0, 0, False, 0)
    assert psm.check(txn_hdr(), SENTINEL_GUARD, True) == (
        ErrorCode.invalid_txn_state, None, "Record was not part of an ongoing transaction")
    assert psm.check(txn_hdr(), guard + 1, True)[0] == ErrorCode.invalid_txn_state
    assert psm.check(txn_hdr(), SENTINEL_GUARD, False)[0] == ErrorCode.none  # verification off
    assert psm.check(txn_hdr(), guard, True)[0] == ErrorCode.none


def test_markers_clear_the_verification_state_except_the_next_tv2_transactions():
    """UnifiedLog.updateProducers: a marker clears the producer's verification state, unless a Produce
    v12+ began verifying the next transaction at the marker's (bumped) epoch; expiry removes old ones."""
    psm = ProducerStateManager()
    appended(psm, txn_hdr(epoch=0, seq=0), 0)
    psm.maybe_start_transaction_verification(5, 0, 1, True, 0)  # the next transaction, epoch bumped
    psm.append_end_txn_marker(5, 1, 0, False, 1, 0)
    assert 5 in psm.verification_states
    psm.maybe_start_transaction_verification(6, 0, 0, False, 0)
    psm.append_end_txn_marker(6, 0, 0, False, 2, 0)
    assert 6 not in psm.verification_states
    psm.expire(now_ms=100, expiration_ms=100)
    assert psm.verification_states == {}
