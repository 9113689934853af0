"""The API registry: key, version ranges, flexible versions and throttle facts.

One table that every later piece reads (quotas, muting, ApiVersions) instead of
special-casing APIs:

* ``flexible_from`` and ``throttle_field_from`` are *derived* from the kio
  schemas (generated from Kafka's JSON), so they cannot drift from the wire:
  ``scripts/gen_schema_table.py`` reads them from kio into ``schema_table.py``
  (importing every schema module at start-up cost about a second), and
  ``tests/unit/protocol/test_schema_table.py`` checks that table against the installed kio.
  The versions and APIs kio 0.6.5 lacks of Kafka 4.4 (ApiVersions v5, ...) have
  modules generated from Kafka 4.4.0's schemas (``protocol/generated/``,
  ``scripts/gen_kafka_messages.py``); ``protocol/generated/index.py`` lists them
  and gives the same two facts for an API kio does not have at all.
* ``client_throttle_from`` is the first response version at which a client
  backs off by itself on ``throttle_time_ms`` (KIP-219).  It is the
  ``shouldClientThrottle(version)`` of each Kafka ``*Response.java`` (3.9,
  ``clients/src/main/java/org/apache/kafka/common/requests/``).  ``None`` means the
  Java client never backs off on that response although it carries the field
  (the broker still mutes).
* ``KAFKA_RELEASES`` holds the ranges a real broker of each release advertises
  in ApiVersions: 3.7 to 4.4 as real single-node KRaft brokers of their latest
  patch releases (3.7.2, 3.8.1, 3.9.2, 4.0.2, 4.1.2, 4.2.2, 4.3.1, 4.4.0) answer
  them, every key (``protocol/kafka_releases.py``, recorded by
  ``scripts/record_kafka_releases.py``); 1.1, 2.0 and 2.8, which no KRaft broker
  runs, from franz-go ``pkg/kversion``'s ZooKeeper tables.
  ``mock.kafka.version`` picks one (default 4.4).
  ``KAFKA_FEATURES`` holds each recorded release's features (supported range,
  the level a freshly formatted cluster finalizes), recorded likewise; the
  older releases list none.

What a broker *serves* and *advertises* is the release's range cut to the
versions there are schemas for (``schema_versions``: kio's and the generated
ones; e.g. Produce 3-13, Fetch 4-18, ListOffsets 1-11, ApiVersions 0-5):

* ``min_version``/``max_version`` (served) are always inside kio's schemas; a
  request outside them closes the connection, as Kafka does.
* ``advertised_min`` is normally the served minimum: for releases whose
  range starts below the first schema (1.1 Fetch 0-7 -> 4-7, 2.0 Produce
  0-6 -> 3-6; 3.x's versions that Kafka 4.0 removed, KIP-896: Produce 0-2,
  Fetch 0-3, OffsetCommit 0-1, CreateAcls 0, ...) only the intersection is
  advertised, because advertising a version we cannot parse would let a
  client pick it and then be disconnected.
* The one exception is Kafka 4.x Produce: the real broker advertises min 0
  but enables only v3+ (KAFKA-18659 / KIP-896, ``ENABLED_MIN``), so
  ``advertised_min`` (0) differs from ``min_version`` (3) there, and only for
  releases >= ``KIP896_RELEASE``.
* An API whose release range and kio's schemas do not intersect (1.1 and 2.0
  OffsetForLeaderEpoch 0-0 / 0-1; kio has 2-4) is left out of the registry,
  so it is neither advertised nor served.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .api_keys import ApiKey as ApiKey  # re-exported: the name every caller imports from here
from .generated.index import GENERATED, KAFKA_SCHEMAS
from .kafka_releases import RECORDED
from .schema_table import SCHEMAS

# kio's name of each API key ("metadata", "offset_fetch", ...), as kio.schema.index has it, and
# the same form of the name of an API only generated (protocol/generated/).
api_key_map: dict[int, str] = {key: row[0] for key, row in sorted((GENERATED | SCHEMAS).items())}


# KIP-219: first version whose response makes the *client* throttle itself
# (Kafka 3.9 *Response.shouldClientThrottle).  Absent key -> None (never).
CLIENT_THROTTLE_FROM: dict[int, int] = {
    0: 6,    # Produce
    1: 8,    # Fetch
    2: 3,    # ListOffsets
    3: 6,    # Metadata
    8: 4,    # OffsetCommit
    9: 4,    # OffsetFetch
    10: 2,   # FindCoordinator
    11: 3,   # JoinGroup
    12: 2,   # Heartbeat
    13: 2,   # LeaveGroup
    14: 2,   # SyncGroup
    15: 2,   # DescribeGroups
    16: 2,   # ListGroups
    18: 2,   # ApiVersions
    19: 3,   # CreateTopics
    20: 2,   # DeleteTopics
    21: 1,   # DeleteRecords
    22: 1,   # InitProducerId
    24: 1,   # AddPartitionsToTxn
    25: 1,   # AddOffsetsToTxn
    26: 1,   # EndTxn
    28: 1,   # TxnOffsetCommit
    29: 1, 30: 1, 31: 1,  # Describe/Create/DeleteAcls
    32: 2,   # DescribeConfigs
    33: 1,   # AlterConfigs
    34: 1,   # AlterReplicaLogDirs
    35: 1,   # DescribeLogDirs
    37: 1,   # CreatePartitions
    38: 1, 39: 1, 40: 1, 41: 1,  # delegation tokens
    42: 1,   # DeleteGroups
    43: 0,   # ElectLeaders (always)
    44: 0,   # IncrementalAlterConfigs (always)
    45: 0, 46: 0, 47: 0,  # partition reassignments, OffsetDelete
    50: 0, 51: 0,  # Describe/AlterUserScramCredentials
    62: 0, 63: 0, 64: 0,  # broker registration/heartbeat/unregister
    75: 0,   # DescribeTopicPartitions
}

# What a real broker of each release advertises (min, max); a key is absent when that release lacked the
# API.  3.7 on: every key a client can send a real broker of the release (not only those mockbroker
# implements: ApiRegistry keeps those), as it answered ApiVersions (protocol/kafka_releases.py).
# 1.1, 2.0 and 2.8 (ZooKeeper brokers): franz-go pkg/kversion (kversion.go V1_1_0, V2_0_0, V2_8_0 ->
# requests.go z11, z20, z28), twmb/franz-go @ adb3a18abe14bdb230f1cd738d03623301013d42, the incremental
# tables evaluated per release for the API keys mockbroker implemented then (every min 0); KIP-664's
# DescribeProducers (61) v0 from 2.8 (KAFKA-12238); OffsetDelete (47) v0 from 2.4 (KIP-496).
KAFKA_RELEASES: dict[str, dict[int, tuple[int, int]]] = {
    "1.1": {
        0: (0, 5), 1: (0, 7), 2: (0, 2), 3: (0, 5), 8: (0, 3), 9: (0, 3),
        10: (0, 1), 11: (0, 2), 12: (0, 1), 13: (0, 1), 14: (0, 1), 15: (0, 1),
        16: (0, 1), 17: (0, 1), 18: (0, 1), 19: (0, 2), 20: (0, 1), 21: (0, 0),
        22: (0, 0), 23: (0, 0),
        24: (0, 0), 25: (0, 0), 26: (0, 0), 28: (0, 0),
        32: (0, 1), 33: (0, 0), 36: (0, 0), 37: (0, 0),
        42: (0, 0),
    },
    "2.0": {
        0: (0, 6), 1: (0, 8), 2: (0, 3), 3: (0, 6), 8: (0, 4), 9: (0, 4),
        10: (0, 2), 11: (0, 3), 12: (0, 2), 13: (0, 2), 14: (0, 2), 15: (0, 2),
        16: (0, 2), 17: (0, 1), 18: (0, 2), 19: (0, 3), 20: (0, 2), 21: (0, 1),
        22: (0, 1), 23: (0, 1),
        24: (0, 1), 25: (0, 1), 26: (0, 1), 28: (0, 1),
        32: (0, 2), 33: (0, 1), 36: (0, 0), 37: (0, 1),
        42: (0, 1),
    },
    "2.8": {
        0: (0, 9), 1: (0, 12), 2: (0, 6), 3: (0, 11), 8: (0, 8), 9: (0, 7),
        10: (0, 3), 11: (0, 7), 12: (0, 4), 13: (0, 4), 14: (0, 5), 15: (0, 5),
        16: (0, 4), 17: (0, 1), 18: (0, 3), 19: (0, 7), 20: (0, 6), 21: (0, 2),
        22: (0, 4), 23: (0, 4),
        24: (0, 3), 25: (0, 3), 26: (0, 3), 28: (0, 3),
        32: (0, 4), 33: (0, 2), 36: (0, 2), 37: (0, 3),
        42: (0, 2), 44: (0, 1), 47: (0, 0), 48: (0, 1), 49: (0, 1), 60: (0, 0), 61: (0, 0),
    },
    **{release: dict(row["api_keys"]) for release, row in RECORDED.items()},
}
DEFAULT_KAFKA_RELEASE = "4.4"

# Each release's features: name -> (lowest supported level, highest supported level, the level a
# freshly formatted cluster finalizes; 0 when not finalized), as real brokers answered ApiVersions
# (protocol/kafka_releases.py): 3.7 and 3.8 metadata.version only, 3.9 also kraft.version, 4.0 also
# group.version, transaction.version and eligible.leader.replicas.version (finalized but for the last),
# 4.1 also share.version (supported, not finalized: share groups are a preview), 4.2 on streams.version
# too, all finalized.  Releases absent (1.1-2.8, ZooKeeper brokers) advertise no features.
KAFKA_FEATURES: dict[str, dict[str, tuple[int, int, int]]] = {
    release: {name: (lo, hi, row["finalized_features"].get(name, 0))
              for name, (lo, hi) in row["supported_features"].items()}
    for release, row in RECORDED.items()
}

# The metadata log's offset a broker of each recorded release was at when it first answered ApiVersions
# after a fresh start (its finalized features epoch: the bootstrap and startup records and the idle
# NoOpRecords written by then); where the simulated quorum's log starts (quorum.py).
BOOTSTRAP_METADATA_OFFSET: dict[str, int] = {
    release: row["finalized_features_epoch"] for release, row in RECORDED.items()}

# The transaction.version feature per release: (highest supported level, the level a freshly
# formatted cluster finalizes), from KAFKA_FEATURES.
TRANSACTION_VERSION_FEATURE: dict[str, tuple[int, int]] = {
    release: (features["transaction.version"][1], features["transaction.version"][2])
    for release, features in KAFKA_FEATURES.items() if "transaction.version" in features}

# KIP-714's client telemetry APIs (GetTelemetrySubscriptions, PushTelemetry): brokers from 3.7 have them
# (v0 in every release up to 4.4) but advertise them only when a metrics reporter implementing
# ClientTelemetry is configured (``ApiVersionsResponse.filterApis``' clientTelemetryEnabled), so the
# recorded default brokers lack them.  ``ApiRegistry(..., client_telemetry=True)`` advertises them;
# without it they are still served (``get``), unlisted, as Kafka's ``isApiEnabled`` does not look at
# the reporter and answers a client that sends them anyway.
CLIENT_TELEMETRY_APIS: dict[int, tuple[int, int]] = {71: (0, 0), 72: (0, 0)}
CLIENT_TELEMETRY_RELEASE = (3, 7)

# Versions a 4.x broker advertises but refuses (KAFKA-18659 / KIP-896): the
# key's first enabled version.  Applies to releases >= KIP896_RELEASE only.
ENABLED_MIN: dict[int, int] = {0: 3}
KIP896_RELEASE = (4, 0)


def release_apis(release: str) -> dict[int, tuple[int, int]]:
    """Every API key a broker of ``release`` advertises, with its (min, max) (``KAFKA_RELEASES``)."""
    return dict(KAFKA_RELEASES[release])


def release_tuple(release: str) -> tuple[int, int]:
    """"4.2" -> (4, 2)."""
    major, minor = release.split(".")[:2]
    return int(major), int(minor)


@dataclass(frozen=True, slots=True)
class ApiSpec:
    key: int
    name: str
    min_version: int           # lowest version served (others close the connection)
    max_version: int
    advertised_min: int        # what ApiVersions says
    flexible_from: int | None  # first flexible version (request and response agree)
    throttle_field_from: int | None  # first response version with throttle_time_ms
    client_throttle_from: int | None  # KIP-219 client back-off from this version

    def is_flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from

    def has_throttle_field(self, version: int) -> bool:
        return self.throttle_field_from is not None and version >= self.throttle_field_from

    def client_throttles(self, version: int) -> bool:
        return self.client_throttle_from is not None and version >= self.client_throttle_from

    def request_header_version(self, version: int) -> int:
        # RequestHeader v2 (tagged fields) for flexible versions, else v1.
        # v0 only ever existed for ControlledShutdown v0, which no 4.x broker serves.
        return 2 if self.is_flexible(version) else 1

    def response_header_version(self, version: int) -> int:
        # "ApiVersionsResponse always includes a v0 header. See KIP-511."
        if self.key == ApiKey.API_VERSIONS:
            return 0
        return 1 if self.is_flexible(version) else 0


def schema_versions(key: int) -> list[int]:
    """Versions there are schemas for (both request and response): kio's and the generated ones."""
    row, generated = SCHEMAS.get(key), GENERATED.get(key)
    return sorted({*(row[1] if row else ()), *(generated[1] if generated else ())})


def _derived(key: int) -> tuple[int | None, int | None]:
    """(flexible_from, throttle_field_from) of ``key``, from kio's table (Kafka 4.4's for an API
    kio does not have)."""
    if key in SCHEMAS:
        _name, _versions, flexible_from, throttle_from = SCHEMAS[key]
    else:
        _name, _range, flexible_from, throttle_from = KAFKA_SCHEMAS[key]
    return flexible_from, throttle_from


def served_range(
    key: int, min_version: int, max_version: int, *, refuses: bool = False
) -> tuple[int, int] | None:
    """The part of ``[min_version, max_version]`` mockbroker serves, or None.

    That is the intersection with kio's schemas and, for a KIP-896 release
    (``refuses``), with ``ENABLED_MIN``.
    """
    versions = schema_versions(key)
    if not versions:
        return None
    lo, hi = max(min_version, versions[0]), min(max_version, versions[-1])
    if refuses:
        lo = max(lo, ENABLED_MIN.get(key, lo))
    return (lo, hi) if lo <= hi else None


def build_spec(key: int, min_version: int, max_version: int, *, refuses: bool = True) -> ApiSpec:
    """Spec for a release's advertised range ``[min_version, max_version]`` of ``key``.

    Serves ``served_range``.  Advertises the served minimum, except that a
    KIP-896 release (``refuses``) keeps ``min_version`` for a key in
    ``ENABLED_MIN`` (Produce min 0, KAFKA-18659).  Raises ValueError when no
    version is servable.
    """
    served = served_range(key, min_version, max_version, refuses=refuses)
    if served is None:
        raise ValueError(f"{ApiKey(key).name} {min_version}-{max_version}: no version with a kio schema")
    lo, hi = served
    advertised_min = min(min_version, lo) if refuses and key in ENABLED_MIN else lo
    flexible_from, throttle_from = _derived(key)
    return ApiSpec(
        key=key,
        name=ApiKey(key).name,
        min_version=lo,
        max_version=hi,
        advertised_min=advertised_min,
        flexible_from=flexible_from,
        throttle_field_from=throttle_from,
        client_throttle_from=CLIENT_THROTTLE_FROM.get(key),
    )


class ApiRegistry:
    """The APIs one broker serves: the release's ranges, cut to what it implements.  Iterating and
    ``in`` give what it advertises (ApiVersions); ``get`` also what it serves unlisted.

    ``describe(key)`` also gives the spec of an API the release has and the broker does not
    implement (what a real broker of the release would serve; ``release_apis``).
    Built per broker instance (no module-level mutable state).
    """

    def __init__(self, release: str, implemented: set[int] | frozenset[int], *,
                 client_telemetry: bool = False) -> None:
        if release not in KAFKA_RELEASES:
            raise ValueError(
                f"unknown Kafka release {release!r}; known: {', '.join(sorted(KAFKA_RELEASES))}"
            )
        self.release = release
        refuses = release_tuple(release) >= KIP896_RELEASE
        self._refuses = refuses
        self.specs: dict[int, ApiSpec] = {}
        # served but not advertised: the telemetry APIs without a telemetry reporter
        self.unlisted: dict[int, ApiSpec] = {}
        ranges = dict(KAFKA_RELEASES[release])
        for key in CLIENT_TELEMETRY_APIS:  # listed only with a telemetry reporter (filterApis)
            ranges.pop(key, None)
        telemetry = release_tuple(release) >= CLIENT_TELEMETRY_RELEASE
        if client_telemetry and telemetry:
            ranges.update(CLIENT_TELEMETRY_APIS)
        for key, (lo, hi) in sorted(ranges.items()):
            # No intersection with kio's schemas: neither advertised nor served.
            if key in implemented and served_range(key, lo, hi, refuses=refuses) is not None:
                self.specs[key] = build_spec(key, lo, hi, refuses=refuses)
        if telemetry and not client_telemetry:
            self.unlisted = {key: build_spec(key, lo, hi, refuses=refuses)
                             for key, (lo, hi) in CLIENT_TELEMETRY_APIS.items() if key in implemented}

    def get(self, key: int) -> ApiSpec | None:
        """The spec of ``key`` as this broker serves it, advertised or not (None: not served)."""
        return self.specs.get(key) or self.unlisted.get(key)

    def describe(self, key: int) -> ApiSpec | None:
        """The spec of ``key`` as the release serves it, implemented here or not (None: the release
        has no such API, or no version of it has a schema)."""
        if key in self.specs:
            return self.specs[key]
        rng = release_apis(self.release).get(key)
        if rng is None or served_range(key, *rng, refuses=self._refuses) is None:
            return None
        return build_spec(key, *rng, refuses=self._refuses)

    def __iter__(self) -> Iterator[ApiSpec]:
        return iter(self.specs.values())

    def __contains__(self, key: int) -> bool:
        return key in self.specs


def any_spec(key: int) -> ApiSpec | None:
    """Spec of any API kio knows, over its full schema range (for tools and tests)."""
    versions = schema_versions(key)
    if not versions:
        return None
    return build_spec(key, versions[0], versions[-1])
