"""Quota measurement: windowed rates, throttle times and the KIP-599 token bucket.

Mirrors, for Kafka 3.8+ / 4.x, ``org.apache.kafka.common.metrics``:
``stats.SampledStat`` + ``stats.WindowedSum`` + ``stats.Rate`` (``Rate`` below),
``Sensor.record(value, timeMs, checkQuotas)`` (``Sensor``), ``stats.TokenBucket``
(``TokenBucket``), and ``org.apache.kafka.server.quota.QuotaUtils``
(``throttle_time_ms`` / ``bounded_throttle_time_ms``).

Samples.  A rate keeps up to ``samples + 1`` slots; each has a value, the start
of its window and the time of its last event.  A record goes into the current
slot unless that slot's window (``window_ms``) is over, in which case the next
slot of the ring is reset to start at the record's time.  The extra slot exists
because a slot is only dropped ("purged") once its *last event* is
``samples * window_ms`` old, so the oldest slot may start before the monitored
span while still overlapping it.  Purging happens on measurement only.

Window.  The rate is ``sum of the slots / window``, where window is the time
since the oldest slot started.  A young client would get a huge rate from a
tiny window, so the window is padded: if fewer than ``samples - 1`` whole
windows have elapsed, the missing whole windows are added; it is at least 1 ms.
A new client can therefore send ``(samples - 1) * window * quota`` at once.

Throttle.  Say ``B`` units were seen over a window of ``W`` ms, so the observed
rate is ``O = B / W``.  If the client is held back for ``X`` more ms, the same
units are spread over ``W + X``; we want that to equal the target ``T``:
``B / (W + X) = T``, i.e. ``O * W / (W + X) = T``, hence ``X = (O - T) / T * W``
(equivalently ``X = B / T - W``: the time the units "cost" at the quota minus
the time already accounted for).  ``W`` is the padded window at the moment of
the check, and the result is rounded as Java's ``Math.round``.

Why a throttled client keeps getting about one window of delay per request:
while padded, the window is ``(samples - 1) * window_ms`` plus only the phase
within the current window of the oldest sample's start, so elapsed time does not
lengthen it.  After the first delay the client's next request lands in a new
window, the padding absorbs the time it waited, ``X = B / T - W`` comes out at
about ``window_ms`` again, and so on, until real elapsed time exceeds the padding
(``X`` then falls to zero) or the big sample is purged ``samples * window_ms``
after its last event.  A mock that applies the formula once, without sampled
windows, releases clients too early.

Quotas are always > 0 in Kafka (``ClientQuotaControlManager`` rejects <= 0), so
``bound`` / ``rate`` are assumed positive.
"""

from __future__ import annotations

import math

__all__ = ["Rate", "Sensor", "TokenBucket", "bounded_throttle_time_ms", "java_round", "throttle_time_ms"]

_LONG_MAX = (1 << 63) - 1
_LONG_MIN = -(1 << 63)


def java_round(x: float) -> int:
    """Java's ``Math.round(double)``: nearest long, ties towards +infinity, NaN -> 0, saturating."""
    if x != x:
        return 0
    if x >= 9.223372036854775807e18:
        return _LONG_MAX
    if x <= -9.223372036854775808e18:
        return _LONG_MIN
    f = math.floor(x)
    return int(f) + 1 if x - f >= 0.5 else int(f)  # x - floor(x) is exact for doubles


class Rate:
    """``Rate`` (per second) over a ``WindowedSum`` ``SampledStat`` with ``samples + 1`` slots."""

    __slots__ = ("samples", "window_ms", "_max_slots", "_expire_ms", "_current", "_values", "_starts", "_lasts")

    def __init__(self, samples: int = 11, window_ms: int = 1000) -> None:
        if samples < 1 or window_ms < 1:
            raise ValueError("samples and window_ms must be >= 1")
        self.samples = samples
        self.window_ms = window_ms
        self._max_slots = samples + 1          # one extra slot for the "overlapping" sample
        self._expire_ms = samples * window_ms  # purge age, measured from a slot's last event
        self._current = 0
        # Parallel slot arrays (value, window start, last event); grown lazily up to samples + 1.
        self._values: list[float] = []
        self._starts: list[int] = []
        self._lasts: list[int] = []

    def _new_slot(self, now_ms: int) -> None:
        self._values.append(0.0)
        self._starts.append(now_ms)
        self._lasts.append(now_ms)

    def record(self, value: float, now_ms: int) -> None:
        if not self._values:                 # SampledStat.current creates the first sample lazily
            self._new_slot(now_ms)
        cur = self._current
        if now_ms - self._starts[cur] >= self.window_ms:   # Sample.isComplete
            cur = (cur + 1) % self._max_slots               # SampledStat.advance
            self._current = cur
            if cur >= len(self._values):
                self._new_slot(now_ms)
            else:
                self._values[cur] = 0.0
                self._starts[cur] = now_ms
                self._lasts[cur] = now_ms
        self._values[cur] += value
        self._lasts[cur] = now_ms

    def _purge(self, now_ms: int) -> None:
        """SampledStat.purgeObsoleteSamples: reset slots whose last event is samples*window old."""
        lasts = self._lasts
        expire = self._expire_ms
        for i in range(len(lasts)):
            if now_ms - lasts[i] >= expire:
                self._values[i] = 0.0
                self._starts[i] = now_ms
                lasts[i] = now_ms

    def window_size_ms(self, now_ms: int) -> int:
        """Rate.windowSize: purge, elapsed since the oldest start, padded to samples-1 windows, >= 1."""
        self._purge(now_ms)
        return self._window_after_purge(now_ms)

    def _window_after_purge(self, now_ms: int) -> int:
        if not self._values:                 # SampledStat.oldest creates a sample lazily too
            self._new_slot(now_ms)
        elapsed = now_ms - min(self._starts)
        w = self.window_ms
        full = elapsed // w if elapsed >= 0 else -(-elapsed // w)  # Java int division truncates
        min_full = self.samples - 1
        if full < min_full:
            elapsed += (min_full - full) * w
        return elapsed if elapsed > 1 else 1

    def total(self, now_ms: int) -> float:
        """WindowedSum.measure: the purged sum of the slots (summed in slot order, as Java does)."""
        self._purge(now_ms)
        t = 0.0
        for v in self._values:
            t += v
        return t

    def measure(self, now_ms: int) -> float:
        """Rate.measure: total / window in seconds (one purge serves both, as it is idempotent)."""
        t = self.total(now_ms)
        return t / (self._window_after_purge(now_ms) / 1000.0)


def throttle_time_ms(observed_rate: float, bound: float, window_ms: int) -> int:
    """QuotaUtils.throttleTime: ``round((O - T) / T * W)``, W the Rate's window at the check."""
    return java_round((observed_rate - bound) / bound * window_ms)


def bounded_throttle_time_ms(observed_rate: float, bound: float, window_ms: int, max_ms: int) -> int:
    """QuotaUtils.boundedThrottleTime: ``throttle_time_ms`` capped at ``max_ms``."""
    return min(throttle_time_ms(observed_rate, bound, window_ms), max_ms)


class Sensor:
    """Record-then-check, as Kafka's Sensor.record(value, time, checkQuotas).

    Holds one ``Rate`` with an upper-bound quota (``Quota.upperBound``):
    acceptable while ``measure <= bound``.  ``bound`` may be changed at any
    time (Kafka swaps the MetricConfig and keeps the samples); ``None`` means
    no quota.  ``last_record_ms`` feeds inactive-sensor expiry (``has_expired``).
    """

    __slots__ = ("bound", "last_record_ms", "rate")

    def __init__(self, samples: int, window_ms: int, bound: float | None, now_ms: int = 0) -> None:
        self.rate = Rate(samples, window_ms)
        self.bound = bound
        self.last_record_ms = now_ms         # Kafka sets lastRecordTime at creation too

    def record(self, value: float, now_ms: int, check_quota: bool = True) -> float | None:
        """Add ``value``; with ``check_quota`` return the measured rate if it now exceeds the bound."""
        self.last_record_ms = now_ms
        self.rate.record(value, now_ms)
        if check_quota:
            return self.check_quota(now_ms)
        return None

    def check_quota(self, now_ms: int) -> float | None:
        """Sensor.checkQuotas without recording: the measured rate if above the bound, else None."""
        bound = self.bound
        if bound is None:
            return None
        m = self.rate.measure(now_ms)
        return m if m > bound else None

    def measure(self, now_ms: int) -> float:
        return self.rate.measure(now_ms)

    def window_size_ms(self, now_ms: int) -> int:
        return self.rate.window_size_ms(now_ms)

    def has_expired(self, now_ms: int, inactive_ms: int = 3_600_000) -> bool:
        """Sensor.hasExpired: idle strictly longer than ``inactive_ms`` (1 h for quota sensors)."""
        return now_ms - self.last_record_ms > inactive_ms


class TokenBucket:
    """KIP-599 ``TokenBucket`` (ControllerMutationQuotaManager's ``tokens`` metric).

    Burst ``samples * window_s * rate``; refilled at ``rate`` per second up to
    the burst; a record takes ``value`` tokens and may drive the bucket
    negative.  Violation when tokens < 0; throttle ``round(-tokens / rate * 1000)``.
    ``rate`` may change at runtime: refill and cap use the current value.

    Kafka starts the bucket at 0 tokens with lastUpdate = epoch 0, which with a
    wall clock means full at first use; here the bucket is full at first use.
    """

    __slots__ = ("samples", "window_ms", "rate", "_tokens", "_last_update_ms")

    def __init__(self, samples: int, window_ms: int, rate: float) -> None:
        self.samples = samples
        self.window_ms = window_ms
        self.rate = rate
        self._tokens = 0.0
        self._last_update_ms: int | None = None

    def burst(self) -> float:
        return self.samples * (self.window_ms / 1000.0) * self.rate

    def _refill(self, now_ms: int) -> float:
        burst = self.burst()
        last = self._last_update_ms
        if last is None:
            tokens = burst
        else:
            tokens = min(burst, self._tokens + self.rate * ((now_ms - last) / 1000.0))
        self._tokens = tokens
        self._last_update_ms = now_ms
        return burst

    def tokens(self, now_ms: int) -> float:
        self._refill(now_ms)
        return self._tokens

    def record(self, value: float, now_ms: int) -> None:
        burst = self._refill(now_ms)
        self._tokens = min(burst, self._tokens - value)

    def throttle_time_ms(self, now_ms: int) -> int:
        """ControllerMutationQuotaManager.throttleTimeMs: ``round(-tokens / rate * 1000)``, 0 if tokens >= 0."""
        t = self.tokens(now_ms)
        if t >= 0:
            return 0
        return java_round(-t / self.rate * 1000)

    def would_violate(self, now_ms: int) -> bool:
        """StrictControllerMutationQuota: checkQuotas before recording, i.e. tokens already < 0."""
        return self.tokens(now_ms) < 0
