"""Client quota managers (Kafka's ``ClientQuotaManager``, ``ClientRequestQuotaManager``,
``ControllerMutationQuotaManager`` and ``QuotaFactory``).

One ``ClientQuotaManager`` per quota key.  Clients resolved to the same
(user, client-id) metric tags share one sensor (``QuotaStore.metric_tags``).
Nothing is recorded for a key until some entity has a quota for it
(``quotasEnabled``); sensors idle for an hour are dropped
(``InactiveSensorExpirationTimeSeconds``).  Record first, then check: the
request that crosses the quota is counted and is the one throttled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..common.clock import Clock
from .entities import QuotaStore
from .rate import Rate, Sensor, TokenBucket, bounded_throttle_time_ms, throttle_time_ms

INACTIVE_SENSOR_EXPIRATION_MS = 3600 * 1000


@dataclass(slots=True)
class EntitySensors:
    quota: Sensor           # the rate the quota bounds (byte-rate, request-time, request-rate)
    throttle: Rate          # throttle-time metric (average of recorded throttles)
    throttle_count: Rate
    version: int            # QuotaStore.version the bound was read at


class ClientQuotaManager:
    """``quota_type`` is Kafka's metric group (Produce, Fetch, Request); ``key`` the config key."""

    def __init__(self, quota_type: str, key: str, store: QuotaStore, clock: Clock,
                 samples: int, window_ms: int, max_throttle_ms: int | None = None) -> None:
        self.quota_type = quota_type
        self.key = key
        self.store = store
        self.clock = clock
        self.samples = samples
        self.window_ms = window_ms
        self.max_throttle_ms = max_throttle_ms
        self.sensors: dict[tuple[str, str], EntitySensors] = {}

    @property
    def enabled(self) -> bool:
        return bool(self.store.entities_with(self.key))

    def _sensors(self, user: str, client_id: str, now_ms: int) -> EntitySensors:
        tags = self.store.metric_tags(self.key, user, client_id)
        s = self.sensors.get(tags)
        if s is None or s.version != self.store.version:
            bound = self.store.quota_limit(self.key, *tags)
            if s is None:
                s = self.sensors[tags] = EntitySensors(
                    Sensor(self.samples, self.window_ms, bound), Rate(self.samples, self.window_ms),
                    Rate(self.samples, self.window_ms), self.store.version)
            else:
                s.quota.bound = bound  # updateQuotaMetricConfigs: the next request sees the new quota
                s.version = self.store.version
        return s

    def maybe_record_and_get_throttle_time_ms(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        if not self.enabled:
            return 0
        s = self._sensors(user, client_id, now_ms)
        observed = s.quota.record(value, now_ms)
        if observed is None:
            return 0
        bound = s.quota.bound
        assert bound is not None
        window_ms = s.quota.window_size_ms(now_ms)
        if self.max_throttle_ms is None:
            throttle = throttle_time_ms(observed, bound, window_ms)
        else:
            throttle = bounded_throttle_time_ms(observed, bound, window_ms, self.max_throttle_ms)
        return max(throttle, 0)

    def max_value_in_quota_window(self, user: str, client_id: str) -> float:
        """getMaxValueInQuotaWindow: quota x (samples - 1) windows, so one fetch alone cannot be
        sure to violate the quota (KafkaApis caps fetch max bytes with it); unlimited without a quota."""
        if not self.enabled:
            return float("inf")
        bound = self.store.quota_limit(self.key, *self.store.metric_tags(self.key, user, client_id))
        if bound is None:
            return float("inf")
        return bound * (self.samples - 1) * self.window_ms / 1000

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """unrecordQuotaSensor: a throttled fetch's bytes are not charged (Kafka calls this a workaround)."""
        if self.enabled:
            self._sensors(user, client_id, now_ms).quota.record(-value, now_ms, check_quota=False)

    def record_throttle(self, user: str, client_id: str, throttle_ms: int, now_ms: int) -> None:
        if self.enabled:
            s = self._sensors(user, client_id, now_ms)
            s.throttle.record(throttle_ms, now_ms)
            s.throttle_count.record(1, now_ms)

    def expire(self, now_ms: int) -> None:
        for tags in [t for t, s in self.sensors.items()
                     if now_ms - s.quota.last_record_ms > INACTIVE_SENSOR_EXPIRATION_MS]:
            del self.sensors[tags]

    def metrics(self, rate_name: str) -> dict[tuple[str, str], dict[str, float]]:
        """Per (user, client-id) tags: the measured rate and the average throttle time (ms)."""
        now = self.clock.monotonic_ms()
        out = {}
        for tags, s in self.sensors.items():
            n = s.throttle_count.measure(now)
            out[tags] = {rate_name: s.quota.measure(now),
                         "throttle-time": (s.throttle.measure(now) / n) if n else 0.0}
        return out


class ControllerMutationQuotaManager:
    """KIP-599: partitions created/deleted per second, a token bucket per entity."""

    def __init__(self, store: QuotaStore, samples: int, window_ms: int) -> None:
        self.store = store
        self.samples = samples
        self.window_ms = window_ms
        self.buckets: dict[tuple[str, str], TokenBucket] = {}

    def _bucket(self, user: str, client_id: str) -> TokenBucket | None:
        key = "controller_mutation_rate"
        if not self.store.entities_with(key):
            return None
        tags = self.store.metric_tags(key, user, client_id)
        rate = self.store.quota_limit(key, *tags)
        if rate is None:
            return None
        b = self.buckets.get(tags)
        if b is None:
            b = self.buckets[tags] = TokenBucket(self.samples, self.window_ms, rate)
        b.rate = rate
        return b

    def strict_check(self, user: str, client_id: str, now_ms: int) -> int:
        """StrictControllerMutationQuota: the throttle time if the quota is already exhausted, else 0."""
        b = self._bucket(user, client_id)
        if b is None or not b.would_violate(now_ms):
            return 0
        return b.throttle_time_ms(now_ms)

    def record(self, user: str, client_id: str, partitions: int, now_ms: int) -> int:
        """Record mutations; the throttle time after recording (permissive quota for old versions)."""
        b = self._bucket(user, client_id)
        if b is None:
            return 0
        b.record(partitions, now_ms)
        return b.throttle_time_ms(now_ms)


class QuotaManagers:
    """QuotaFactory.instantiate: every manager of one broker."""

    def __init__(self, store: QuotaStore, clock: Clock, config: Any) -> None:
        samples = config["quota.window.num"]
        window_ms = config["quota.window.size.seconds"] * 1000
        self.store = store
        self.produce = ClientQuotaManager("Produce", "producer_byte_rate", store, clock, samples, window_ms)
        self.fetch = ClientQuotaManager("Fetch", "consumer_byte_rate", store, clock, samples, window_ms)
        # request_percentage: capped at one window (ClientRequestQuotaManager.maxThrottleTimeMs)
        self.request = ClientQuotaManager("Request", "request_percentage", store, clock, samples, window_ms,
                                          max_throttle_ms=window_ms)
        # request_rate (KIP-124 draft): requests/s on the same window, "the maximum delay ... the window size"
        self.request_rate = ClientQuotaManager("RequestRate", "request_rate", store, clock, samples, window_ms,
                                               max_throttle_ms=window_ms)
        self.controller_mutation = ControllerMutationQuotaManager(
            store, config["controller.quota.window.num"], config["controller.quota.window.size.seconds"] * 1000)

    def expire(self, now_ms: int) -> None:
        for m in (self.produce, self.fetch, self.request, self.request_rate):
            m.expire(now_ms)
