"""Quota rates and throttle times (mockbroker.quota.rate) against Kafka 3.8+ semantics.

The worked example is a 1,000,000 B/s quota worked by hand
through Kafka's formula, window by window; the model test
replays random record / measure sequences against ``RefRate``, the documented
SampledStat algorithm written differently (a deque of the last samples+1
windows instead of a ring of slots).
"""

from __future__ import annotations

import collections
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockbroker.quota.rate import (
    Rate,
    Sensor,
    TokenBucket,
    bounded_throttle_time_ms,
    java_round,
    throttle_time_ms,
)

Q = 1_000_000.0
S = 11
W = 1000


def produce(sensor: Sensor, nbytes: int, now_ms: int) -> tuple[int, int]:
    """(windowSize, throttle) the way ClientQuotaManager computes them for one request."""
    observed = sensor.record(nbytes, now_ms)
    ws = sensor.window_size_ms(now_ms)
    if observed is None:
        return ws, 0
    assert sensor.bound is not None
    return ws, throttle_time_ms(observed, sensor.bound, ws)


# --- (1) the worked example (1,000,000 B/s, 11 x 1 s windows) -------------------------------------------------------


def test_worked_example_table() -> None:
    s = Sensor(S, W, Q)
    # t=0: 5,000,000 bytes, padded window 10,000 ms, 500,000 B/s, no violation
    assert s.record(5_000_000, 0) is None
    assert s.window_size_ms(0) == 10_000
    assert s.measure(0) == 500_000.0
    # t=100: 6,000,000 more, window 10,100, 1,089,109 B/s, throttle 900 ms
    observed = s.record(6_000_000, 100)
    assert observed is not None and round(observed) == 1_089_109
    assert s.window_size_ms(100) == 10_100
    assert throttle_time_ms(observed, Q, 10_100) == 900
    # after the mute: 1,000-byte requests, each muted ~1001 ms
    t, total = 1000, 11_000_000
    rows = []
    for k in range(1, 11):
        total += 1000
        ws, thr = produce(s, 1000, t)
        assert s.rate.total(t) == total
        rows.append((t, ws, thr))
        t += thr
    assert rows == [
        (1000, 10_000, 1001), (2001, 10_001, 1001), (3002, 10_002, 1001), (4003, 10_003, 1001),
        (5004, 10_004, 1001), (6005, 10_005, 1001), (7006, 10_006, 1001), (8007, 10_007, 1001),
        (9008, 10_008, 1001), (10_009, 10_009, 1001),
    ]
    # t=11010: sum 11,011,000 over 11,010 ms = 1,000,091 B/s, throttle 1 ms
    assert t == 11_010
    observed = s.record(1000, t)
    assert observed is not None and round(observed) == 1_000_091
    assert s.window_size_ms(t) == 11_010
    assert throttle_time_ms(observed, Q, 11_010) == 1
    # the client comes back after each 1 ms mute: 1,000 bytes per ms is exactly the quota, so
    # X = sum/T - window stays 1 ms while the first sample (last event at 100) is kept
    t, n = 11_011, 11
    while t < 11_100:
        n += 1
        assert produce(s, 1000, t) == (t, 1)
        t += 1
    # >= 11100: now - last(100) >= S*W, the 11,000,000 sample is purged: no throttle
    ws, thr = produce(s, 1000, 11_100)
    assert thr == 0
    assert s.rate.total(11_100) == (n + 1) * 1000
    assert ws == 11_100 - 1000  # the oldest remaining sample started at 1000


# --- (2) the padded window of a new client ------------------------------------------------


def test_new_client_burst_is_padded_window_times_quota() -> None:
    burst = (S - 1) * W // 1000 * int(Q)  # (S-1) * W_s * quota = 10,000,000 bytes
    s = Sensor(S, W, Q)
    assert s.record(burst, 5_000) is None
    assert s.window_size_ms(5_000) == (S - 1) * W
    assert s.measure(5_000) == Q  # exactly at the bound is acceptable (upper bound: value <= bound)
    s2 = Sensor(S, W, Q)
    observed = s2.record(burst + 1, 5_000)
    assert observed is not None and observed > Q
    assert throttle_time_ms(observed, Q, s2.window_size_ms(5_000)) == 0  # 1 byte over: rounds to 0 ms


@pytest.mark.parametrize("samples,window_ms", [(1, 1000), (2, 1000), (11, 1000), (3, 7)])
def test_window_padding(samples: int, window_ms: int) -> None:
    r = Rate(samples, window_ms)
    r.record(1, 0)
    pad = (samples - 1) * window_ms
    assert r.window_size_ms(0) == max(pad, 1)
    # inside the first window: padding plus the elapsed part
    assert r.window_size_ms(window_ms - 1) == pad + window_ms - 1
    # after k full windows (no new records): k windows elapsed, padded up to samples-1 windows
    for k in range(1, samples):
        assert r.window_size_ms(k * window_ms + 1) == pad + 1
    # beyond samples-1 full windows the real elapsed time is used (until the purge)
    t = samples * window_ms - 1
    assert r.window_size_ms(t) == max(t, pad)


def test_measure_before_any_record_starts_the_window_then() -> None:
    # SampledStat.oldest creates a sample lazily at the measuring time; a later record joins it
    r = Rate(S, W)
    assert r.measure(0) == 0.0
    assert r.window_size_ms(0) == (S - 1) * W
    r.record(10_000, 500)
    assert r.window_size_ms(500) == (S - 1) * W + 500
    assert r.measure(500) == 10_000 / (((S - 1) * W + 500) / 1000.0)


# --- (3) purge on lastEventMs after S*W of inactivity -------------------------------------


def test_purge_after_samples_times_window_from_last_event() -> None:
    r = Rate(S, W)
    r.record(1000, 0)
    r.record(500, 700)  # same sample (window not over); its last event is at 700
    assert r.total(S * W + 699) == 1500  # 10,999 ms after the last event: kept
    assert r.window_size_ms(S * W + 699) == S * W + 699  # the sample overlaps the monitored span
    assert r.total(S * W + 700) == 0  # exactly S*W after the last event: purged
    assert r.measure(S * W + 700) == 0.0
    # the purged slot restarts at the purge time: a fresh padded window
    assert r.window_size_ms(S * W + 700) == (S - 1) * W


def test_purge_is_per_sample() -> None:
    r = Rate(S, W)
    r.record(7, 0)
    r.record(5, 3000)
    assert r.total(S * W) == 5  # the first sample (last event 0) is gone, the second kept
    assert r.window_size_ms(S * W) == (S - 1) * W  # oldest start now 3000: 8 full windows, padded
    assert r.total(S * W + 3000) == 0


def test_purged_slot_restarts_at_purge_time_until_the_ring_reuses_it() -> None:
    # S=1: a ring of 2 slots.  The purge resets a slot to start at the purge time; that empty
    # slot still counts as a start for windowSize until advance() reuses it.
    r = Rate(1, 1000)
    r.record(5, 10_000)
    r.record(5, 10_157)            # slot 0: start 10,000, last 10,157
    r.record(7, 11_000)            # slot 1: start 11,000
    assert r.window_size_ms(11_843) == 843  # slot 0 purged (last 10,157), restarted at 11,843
    assert r.total(11_843) == 7
    r.record(1, 12_000)            # slot 1 complete -> ring wraps to slot 0 (reset at 12,000)
    # slot 1 (last 11,000) is purged now too: every slot starts at 12,000 -> max(0, 1)
    assert r.window_size_ms(12_000) == 1
    assert r.measure(12_000) == 1 / 0.001


# --- (4) samples+1 slots: rotation against a brute force and a reference model ------------


def test_steady_stream_keeps_samples_plus_one_windows() -> None:
    # one event per window at its start: the oldest sample's last event is exactly S*W old
    # when the next window opens, so it is purged and S windows remain
    r = Rate(S, W)
    for k in range(100):
        r.record(100, k * W)
        assert r.total(k * W) == 100 * min(k + 1, S)
        if k >= S:
            assert r.window_size_ms(k * W) == (S - 1) * W  # the purged slot restarted at now
    # two events per window (at its start and middle): the oldest window's last event is only
    # S*W - W/2 old, so it overlaps the monitored span and is kept: samples+1 windows
    r = Rate(S, W)
    for k in range(100):
        r.record(100, k * W)
        # brute force: events of the windows whose last event is younger than S*W
        kept = [j for j in range(k + 1) if k * W - (j * W + (W // 2 if j < k else 0)) < S * W]
        assert len(kept) == min(k + 1, S + 1)
        assert r.total(k * W) == 200 * len(kept) - 100
        if k >= S:
            assert r.window_size_ms(k * W) == S * W
            assert r.measure(k * W) == ((S + 1) * 200 - 100) / (S * W / 1000.0)
        r.record(100, k * W + W // 2)


class RefRate:
    """SampledStat and Rate written differently: a deque of the last samples+1 windows, newest last."""

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples, self.window_ms = samples, window_ms
        self.windows: collections.deque[dict[str, float]] = collections.deque(maxlen=samples + 1)

    def _fresh(self, t: int) -> None:
        self.windows.append({"value": 0, "start": t, "last": t})

    def record(self, v: int, t: int) -> None:
        if not self.windows or t - self.windows[-1]["start"] >= self.window_ms:
            self._fresh(t)  # evicts the window created samples+1 windows ago
        self.windows[-1]["value"] += v
        self.windows[-1]["last"] = t

    def purge(self, t: int) -> None:
        for w in self.windows:
            if t - w["last"] >= self.samples * self.window_ms:
                w.update(value=0, start=t, last=t)

    def window(self, t: int) -> int:
        self.purge(t)
        if not self.windows:
            self._fresh(t)
        elapsed = t - int(min(w["start"] for w in self.windows))
        return max(elapsed, (self.samples - 1) * self.window_ms + elapsed % self.window_ms, 1)

    def total(self, t: int) -> float:
        self.purge(t)
        return math.fsum(w["value"] for w in self.windows)


_steps = st.lists(
    st.tuples(
        st.one_of(st.integers(0, 3), st.integers(0, 2500), st.integers(0, 40_000)),  # time step (ms)
        st.sampled_from(["record", "record", "record", "measure", "window"]),
        st.integers(-1000, 1_000_000),
    ),
    max_size=120,
)


@settings(max_examples=300, deadline=None)
@given(samples=st.sampled_from([1, 2, 3, 11]), window_ms=st.sampled_from([1, 7, 1000]), steps=_steps)
def test_rate_matches_reference_model(samples: int, window_ms: int, steps: list) -> None:
    r, ref = Rate(samples, window_ms), RefRate(samples, window_ms)
    t = 10_000
    for dt, op, v in steps:
        t += dt
        if op == "record":
            r.record(v, t)
            ref.record(v, t)
        elif op == "measure":
            tot = ref.total(t)
            ws = ref.window(t)
            assert r.measure(t) == pytest.approx(tot / (ws / 1000.0), rel=1e-12, abs=1e-9)
        else:
            assert r.window_size_ms(t) == ref.window(t)
        assert r.total(t) == ref.total(t)
        assert r.window_size_ms(t) == ref.window(t)


# --- throttle formula and (5) the bounded throttle ---------------------------------------


def test_throttle_formula_and_java_rounding() -> None:
    # X = (O - T) / T * W
    assert throttle_time_ms(1_100_100.0, Q, 10_000) == 1001
    assert throttle_time_ms(2.0, 1.0, 1000) == 1000
    # Math.round: ties go towards +infinity (Python's round() would give 0 and 2)
    assert throttle_time_ms(1.5, 1.0, 1) == 1
    assert throttle_time_ms(3.5, 1.0, 1) == 3
    assert java_round(2.5) == 3 and java_round(-2.5) == -2 and java_round(0.49999999999999994) == 0
    assert java_round(float("nan")) == 0 and java_round(1e300) == (1 << 63) - 1


def test_bounded_throttle_caps_at_max() -> None:
    assert bounded_throttle_time_ms(1_100_100.0, Q, 10_000, 1000) == 1000
    assert bounded_throttle_time_ms(1_100_100.0, Q, 10_000, 1001) == 1001
    assert bounded_throttle_time_ms(1_100_100.0, Q, 10_000, 5000) == 1001
    assert bounded_throttle_time_ms(1_010_000.0, Q, 10_000, 1000) == 100
    # request quota: the first throttle of the worked example would be 900, later ones capped to 1000
    s = Sensor(S, W, Q)
    s.record(5_000_000, 0)
    observed = s.record(16_000_000, 100)
    assert observed is not None
    assert throttle_time_ms(observed, Q, s.window_size_ms(100)) == 10_900
    assert bounded_throttle_time_ms(observed, Q, s.window_size_ms(100), W) == W


# --- (6) TokenBucket (KIP-599) ------------------------------------------------------------


def test_token_bucket_burst_refill_and_throttle() -> None:
    b = TokenBucket(S, W, 5.0)
    assert b.tokens(1_000) == S * 1 * 5.0 == 55.0  # full burst at first use
    assert not b.would_violate(1_000)
    b.record(60, 1_000)
    assert b.tokens(1_000) == -5.0
    assert b.would_violate(1_000)
    assert b.throttle_time_ms(1_000) == 1000  # -(-5) / 5 * 1000
    assert b.tokens(1_500) == -2.5  # refilled at 5/s
    assert b.throttle_time_ms(1_500) == 500
    assert b.tokens(2_000) == 0.0
    assert not b.would_violate(2_000)  # violation is strictly tokens < 0
    assert b.throttle_time_ms(2_000) == 0
    assert b.tokens(60_000) == 55.0  # capped at the burst
    b.record(-10, 60_000)  # giving tokens back cannot exceed the burst either
    assert b.tokens(60_000) == 55.0
    b.record(55.007, 60_000)  # -0.007 tokens at 5/s: 1.4 ms rounds (Math.round) to 1
    assert b.would_violate(60_000)
    assert b.throttle_time_ms(60_000) == 1


def test_token_bucket_kip599_example_and_rate_change() -> None:
    # TokenBucket javadoc: Q=5, S=100, W=1s, a burst of 560 -> -60 tokens -> 12 s
    b = TokenBucket(100, 1000, 5.0)
    b.record(560, 0)
    assert b.tokens(0) == -60.0
    assert b.throttle_time_ms(0) == 12_000
    # the rate (quota) changes at runtime: refill and burst use the new value
    b.rate = 10.0
    assert b.tokens(3_000) == -30.0
    assert b.throttle_time_ms(3_000) == 3_000
    assert b.tokens(1_000_000) == 100 * 10.0


def test_token_bucket_strict_check_before_recording() -> None:
    # StrictControllerMutationQuota: check first, then record without a check; the op that
    # drives the bucket negative is accepted, the next one is refused
    b = TokenBucket(S, W, 1.0)  # burst 11 partitions
    assert not b.would_violate(0)
    b.record(30, 0)
    assert b.would_violate(0)
    assert b.throttle_time_ms(0) == 19_000
    assert b.would_violate(18_999)
    assert not b.would_violate(19_001)  # (at 19,000 exactly: 0 +/- the float error of two refills)
    b2 = TokenBucket(S, W, 1.0)
    b2.record(30, 0)
    assert not b2.would_violate(19_000)  # one refill of 19 tokens: exactly 0, not < 0


# --- (7) Sensor: unlimited, runtime bound changes, check_quota=False ----------------------


def test_sensor_unbounded_never_violates() -> None:
    s = Sensor(S, W, None)
    for t in range(0, 5000, 10):
        assert s.record(1e12, t) is None
    assert s.measure(5000) > 1e12
    assert s.last_record_ms == 4990


def test_sensor_bound_change_applies_to_next_record() -> None:
    s = Sensor(S, W, Q)
    assert s.record(5_000_000, 0) is None  # 500,000 B/s
    s.bound = 400_000.0
    observed = s.record(0, 1)
    assert observed == pytest.approx(5_000_000 / 10.001)
    assert throttle_time_ms(observed, s.bound, s.window_size_ms(1)) == java_round((observed - 4e5) / 4e5 * 10_001)
    s.bound = None
    assert s.record(0, 2) is None
    s.bound = 600_000.0
    assert s.record(0, 3) is None
    assert s.check_quota(3) is None
    s.bound = 499_000.0
    assert s.check_quota(3) is not None


def test_sensor_record_without_check_and_unrecord() -> None:
    s = Sensor(S, W, Q)
    assert s.record(50_000_000, 0, check_quota=False) is None  # counted, not checked
    assert s.last_record_ms == 0
    assert s.record(-45_000_000, 10, check_quota=False) is None  # Fetch's unrecordQuotaSensor
    assert s.record(0, 20) is None  # 5,000,000 over 10,020 ms
    assert s.record(6_000_000, 30) is not None
    assert not s.has_expired(3_600_030)
    assert s.has_expired(3_600_031)
