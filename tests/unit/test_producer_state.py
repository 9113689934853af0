"""Idempotent producer checks (ProducerStateManager semantics)."""

from __future__ import annotations

from mockbroker.producer_state import ProducerStateManager
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
