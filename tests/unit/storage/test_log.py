"""Partition log: reads by offset and size, KIP-74, truncated tails, retention."""

from __future__ import annotations

from mockbroker.storage.log import PartitionLog
from protocol.records import assign_offsets, build_batch, parse_header

SEG = 1 << 30
DAY = 86_400_000


def append(log, n_records=3, ts=1000, now=1000, segment_bytes=SEG, value=b"x" * 50):
    b = build_batch([(b"k", value, []) for _ in range(n_records)], base_timestamp=ts)
    base, last = log.append(memoryview(b), parse_header(b), now, segment_bytes, DAY, False)
    log.high_watermark = log.log_end_offset
    return base, last, len(b)


def test_offsets_are_assigned_consecutively():
    log = PartitionLog(0)
    assert append(log)[:2] == (0, 2)
    assert append(log, 5)[:2] == (3, 7)
    assert log.log_end_offset == 8


def test_read_from_mid_batch_returns_the_whole_batch():
    log = PartitionLog(0)
    append(log)
    append(log)
    sl = log.read(4, 1 << 20, log.high_watermark, True)
    assert len(sl.chunks) == 1 and parse_header(sl.chunks[0]).base_offset == 3


def test_read_stops_at_upper_bound():
    log = PartitionLog(0)
    append(log)
    append(log)
    log.high_watermark = 3
    sl = log.read(0, 1 << 20, log.high_watermark, True)
    assert [parse_header(c).base_offset for c in sl.chunks] == [0]
    assert log.read(3, 1 << 20, 3, True).chunks == []


def test_min_one_returns_whole_first_batch_over_the_limit():
    log = PartitionLog(0)
    _, _, size = append(log)
    sl = log.read(0, 10, log.high_watermark, True)
    assert sl.size_bytes == size and len(sl.chunks[0]) == size


def test_without_min_one_a_truncated_tail_like_a_slab_read():
    log = PartitionLog(0)
    _, _, size = append(log)
    append(log)
    sl = log.read(0, size + 20, log.high_watermark, True)
    assert len(sl.chunks) == 2 and len(sl.chunks[1]) == 20
    assert log.read(0, 10, log.high_watermark, False).size_bytes == 10


def test_segments_roll_and_retention_by_bytes_moves_log_start():
    log = PartitionLog(0)
    _, _, size = append(log, segment_bytes=10)
    for _ in range(4):
        append(log, segment_bytes=size + 1)  # one batch per segment
    assert len(log.segments) == 5
    dropped = log.enforce_retention(now_ms=2000, retention_ms=-1, retention_bytes=2 * size)
    assert dropped == 3
    assert log.log_start_offset == 9 and log.log_end_offset == 15
    assert log.read(0, 1 << 20, log.high_watermark, True).chunks[0]  # reads from the new start
    assert parse_header(log.read(9, 1 << 20, log.high_watermark, True).chunks[0]).base_offset == 9


def test_retention_by_time_uses_largest_timestamp_and_can_empty_the_log():
    log = PartitionLog(0)
    append(log, ts=1000, segment_bytes=1)
    append(log, ts=5000, segment_bytes=1)
    assert log.enforce_retention(now_ms=5500, retention_ms=1000, retention_bytes=-1) == 1
    assert log.log_start_offset == 3
    assert log.enforce_retention(now_ms=7000, retention_ms=1000, retention_bytes=-1) == 1
    assert log.log_start_offset == log.log_end_offset == 6
    assert append(log)[0] == 6


def test_retention_never_drops_above_high_watermark():
    log = PartitionLog(0)
    append(log, ts=0, segment_bytes=1)
    log.high_watermark = 1
    assert log.enforce_retention(now_ms=10**9, retention_ms=1, retention_bytes=-1) == 0


def test_offset_for_timestamp_is_exact_for_uncompressed():
    log = PartitionLog(0)
    b = build_batch([(b"k", b"v", []) for _ in range(3)], base_timestamp=100)
    log.append(memoryview(b), parse_header(b), 0, SEG, DAY, False)
    b2 = build_batch([(b"k", b"v", [])], base_timestamp=300)
    log.append(memoryview(b2), parse_header(b2), 0, SEG, DAY, False)
    log.high_watermark = log.log_end_offset
    assert log.offset_for_timestamp(50) == (0, 100)
    assert log.offset_for_timestamp(200) == (3, 300)
    assert log.offset_for_timestamp(301) is None
    assert log.max_timestamp_offset() == (3, 300)


def test_stored_batch_is_the_sent_batch_with_offsets():
    log = PartitionLog(0)
    append(log)
    b = build_batch([(b"a", b"b", [("h", b"v")])], base_timestamp=7)
    log.append(memoryview(b), parse_header(b), 0, SEG, DAY, False)
    assert log.segments[-1].batches[-1] == assign_offsets(b, 3, 0)


def test_a_stored_batch_costs_little_besides_its_bytes():
    """Per batch the log keeps its bytes, a list slot, and its last offset and max timestamp in
    int64 arrays: under 72 bytes besides the batch (a bytes object's header is 33).  As lists of
    int objects they cost about 89 (issue 21's soak: ~205 bytes per stored record)."""
    import gc
    import tracemalloc

    batch = build_batch([(None, b"x" * 100, [])], base_timestamp=1000)
    header = parse_header(batch)
    log = PartitionLog(0)
    n = 5000
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(n):
            log.append(memoryview(batch), header, 1000 + i, 1 << 30, 1 << 62, False)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert log.log_end_offset == n
    assert grown / n - len(batch) < 72, f"{grown / n - len(batch):.1f} bytes per batch besides its own"
