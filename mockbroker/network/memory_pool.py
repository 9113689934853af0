"""The request memory pool of KIP-72 (``queued.max.request.bytes``).

Mirrors ``org.apache.kafka.common.memory.MemoryPool`` (with its ``NONE`` null
object) and ``SimpleMemoryPool``, and the pool's metrics that Kafka's
``SocketServer`` registers:

* ``MemoryPoolAvailable`` / ``MemoryPoolUsed`` (gauges: ``availableMemory`` and
  ``size - availableMemory``; Long.MAX_VALUE and 0 without a pool);
* ``MemoryPoolAvgDepletedPercent`` / ``MemoryPoolDepletedTimeTotal``: a ``Meter``
  in milliseconds on the ``MemoryPoolUtilization`` sensor, which the pool feeds
  with the length of each "dry spell" (from the first refused allocation to the
  next successful allocation or release).  The rate is depleted ms per ms over
  the sensor's window, so despite its name it is a fraction in [0, 1].

The pool never blocks.  ``try_allocate`` returns a buffer of exactly the size
asked, or None; every buffer it returns must be ``release``d exactly once.
In non-strict mode (the broker's) it allocates whenever *any* memory is free,
so the available memory can go negative and a large request cannot be starved
by a stream of small ones: memory in use stays at most
``size + max_single_allocation - 1``.  Buffers are plain ``bytearray``s; the
pool only accounts for them (as Kafka's ``SimpleMemoryPool`` hands out heap
ByteBuffers and leaves reclaiming them to the GC).

Besides Kafka's metrics the pool keeps two numbers a test needs: ``peak_used``
(the most memory ever allocated at once) and ``refused`` (allocations refused).

``MemoryMutedChannels`` is the memory part of Kafka's ``Selector``: the connections
waiting for the pool, and the pass that hands them memory when it comes back.
"""

from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING, Protocol

from ..quota.rate import Rate

if TYPE_CHECKING:
    from ..common.clock import Clock

LONG_MAX = (1 << 63) - 1

# Kafka's broker metrics defaults (metrics.num.samples, metrics.sample.window.ms): the window of
# the MemoryPoolAvgDepletedPercent rate.
METRICS_NUM_SAMPLES = 2
METRICS_SAMPLE_WINDOW_MS = 30_000


class MemoryPool:
    """``MemoryPool.NONE``: plain allocation, no bound (``queued.max.request.bytes`` <= 0)."""

    NONE: "MemoryPool"

    @property
    def enabled(self) -> bool:
        return False

    def try_allocate(self, size_bytes: int) -> bytearray | None:
        return bytearray(size_bytes)

    def release(self, previously_allocated: bytearray) -> None:
        pass

    def size(self) -> int:
        return LONG_MAX

    def available_memory(self) -> int:
        return LONG_MAX

    def is_out_of_memory(self) -> bool:
        return False

    def metrics(self) -> dict[str, float]:
        """Kafka's four pool metrics (and the mock's peak and refusal count)."""
        return {"MemoryPoolAvailable": LONG_MAX, "MemoryPoolUsed": 0, "MemoryPoolAvgDepletedPercent": 0.0,
                "MemoryPoolDepletedTimeTotal": 0.0, "peak_used": 0, "refused": 0}

    def __repr__(self) -> str:
        return "MemoryPool.NONE"


MemoryPool.NONE = MemoryPool()


class SimpleMemoryPool(MemoryPool):
    """Kafka's ``SimpleMemoryPool``: a limit on the total outstanding memory, nothing more."""

    def __init__(self, size_bytes: int, max_single_allocation_bytes: int, strict: bool = False,
                 clock: "Clock | None" = None) -> None:
        if size_bytes <= 0 or max_single_allocation_bytes <= 0 or max_single_allocation_bytes > size_bytes:
            raise ValueError("must provide a positive size and max single allocation size smaller than size."
                             f"provided {size_bytes} and {max_single_allocation_bytes} respectively")
        self._size = size_bytes
        self.strict = strict
        self.max_single_allocation = max_single_allocation_bytes
        self._available = size_bytes
        self._clock = clock
        self._start_of_no_mem_ns = 0          # 0: not in a dry spell (Kafka's startOfNoMemPeriod)
        # The MemoryPoolUtilization sensor's Meter(MILLISECONDS): a windowed rate and a cumulative total.
        self._depleted_rate = Rate(METRICS_NUM_SAMPLES, METRICS_SAMPLE_WINDOW_MS)
        self._depleted_total_ms = 0.0
        self.peak_used = 0
        self.refused = 0

    @property
    def enabled(self) -> bool:
        return True

    # -- MemoryPool ---------------------------------------------------------------------
    def try_allocate(self, size_bytes: int) -> bytearray | None:
        if size_bytes < 1:
            raise ValueError(f"requested size {size_bytes}<=0")
        if size_bytes > self.max_single_allocation:
            raise ValueError(f"requested size {size_bytes} is larger than maxSingleAllocationSize "
                             f"{self.max_single_allocation}")
        # strict: only with the whole size free; non-strict: with any memory free (may dip below zero)
        threshold = size_bytes if self.strict else 1
        if self._available < threshold:
            self.refused += 1
            if self._clock is not None and self._start_of_no_mem_ns == 0:
                self._start_of_no_mem_ns = self._clock.monotonic_ns() or 1
            return None
        self._available -= size_bytes
        used = self._size - self._available
        if used > self.peak_used:
            self.peak_used = used
        self._maybe_record_end_of_dry_spell()
        return bytearray(size_bytes)

    def release(self, previously_allocated: bytearray) -> None:
        if previously_allocated is None:
            raise ValueError("provided null buffer")
        self._available += len(previously_allocated)
        self._maybe_record_end_of_dry_spell()

    def size(self) -> int:
        return self._size

    def available_memory(self) -> int:
        return self._available

    def is_out_of_memory(self) -> bool:
        return self._available <= 0

    # -- metrics ----------------------------------------------------------------------------
    def _maybe_record_end_of_dry_spell(self) -> None:
        start = self._start_of_no_mem_ns
        if start and self._clock is not None:
            self._start_of_no_mem_ns = 0
            now_ns = self._clock.monotonic_ns()
            depleted_ms = (now_ns - start) / 1_000_000  # fractional ms, as Kafka records them
            self._depleted_rate.record(depleted_ms, now_ns // 1_000_000)
            self._depleted_total_ms += depleted_ms

    def metrics(self) -> dict[str, float]:
        now_ms = self._clock.monotonic_ms() if self._clock is not None else 0
        return {
            "MemoryPoolAvailable": self._available,
            "MemoryPoolUsed": self._size - self._available,
            # Rate.measure is per second; the Meter is in ms per ms
            "MemoryPoolAvgDepletedPercent": self._depleted_rate.measure(now_ms) / 1000.0,
            "MemoryPoolDepletedTimeTotal": self._depleted_total_ms,
            "peak_used": self.peak_used,
            "refused": self.refused,
        }

    def __repr__(self) -> str:
        return f"SimpleMemoryPool{{{self._size - self._available}/{self._size} used}}"


def memory_pool_for(queued_max_request_bytes: int, socket_request_max_bytes: int,
                    clock: "Clock | None" = None) -> MemoryPool:
    """What ``SocketServer`` builds: a non-strict ``SimpleMemoryPool`` when
    ``queued.max.request.bytes`` > 0, else ``MemoryPool.NONE``."""
    if queued_max_request_bytes > 0:
        return SimpleMemoryPool(queued_max_request_bytes, socket_request_max_bytes, False, clock)
    return MemoryPool.NONE


class MemoryWaiter(Protocol):
    """A connection waiting for the pool (``KafkaConnection``)."""

    def retry_allocation(self) -> bool:
        """Memory came back: True once it no longer waits (it got its buffer, or it is gone)."""


class MemoryMutedChannels:
    """The memory-pressure part of Kafka's ``Selector``, for one broker's pool.

    A connection whose buffer the pool refuses mutes itself for ``MEMORY`` and
    waits here.  When memory is released and the pool is no longer out of
    memory (Selector.poll: ``!memoryPool.isOutOfMemory() && outOfMemory``), the
    waiting connections are served: each takes its buffer and is unmuted, until
    the pool runs out again; the others keep waiting for the next release.
    Below ``lowMemThreshold`` (10 % of the pool) they are served in shuffled
    order (``determineHandlingOrder``), so that no connection starves; above it,
    in the order they started waiting.  Kafka unmutes every such channel and
    lets them race for memory on their next read; here the pass hands the
    memory out directly, which is the same race without the churn.
    """

    def __init__(self, pool: MemoryPool, loop: asyncio.AbstractEventLoop, rng: random.Random | None = None) -> None:
        self.pool = pool
        self.loop = loop
        self.rng = rng or random.Random()
        self.low_mem_threshold = int(0.1 * pool.size()) if pool.enabled else 0
        self._waiting: dict[MemoryWaiter, None] = {}  # an ordered set, oldest first
        self._scheduled = False
        self.passes = 0            # unmute passes run (mock statistic)
        self.shuffled_passes = 0   # of which below lowMemThreshold, in shuffled order

    def __len__(self) -> int:
        return len(self._waiting)

    def allocate(self, conn: MemoryWaiter, size: int) -> bytearray | None:
        buf = self.pool.try_allocate(size)
        if buf is None:
            self._waiting[conn] = None
        return buf

    def release(self, buf: bytearray) -> None:
        self.pool.release(buf)
        if self._waiting and not self._scheduled:
            self._scheduled = True
            self.loop.call_soon(self._unmute)

    def forget(self, conn: MemoryWaiter) -> None:
        self._waiting.pop(conn, None)

    def _unmute(self) -> None:
        self._scheduled = False
        pool = self.pool
        if pool.is_out_of_memory() or not self._waiting:
            return
        order = list(self._waiting)
        self.passes += 1
        if pool.available_memory() < self.low_mem_threshold:
            self.shuffled_passes += 1
            self.rng.shuffle(order)
        for conn in order:
            if pool.is_out_of_memory():
                break
            if conn.retry_allocation():
                self._waiting.pop(conn, None)
