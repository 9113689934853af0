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
