"""Kafka release tables (``mock.kafka.version``) and their cut to kio's schemas.

Reference values: franz-go pkg/kversion (the source of ``KAFKA_RELEASES`` for 1.1, 2.0 and 2.8) and
the ApiVersions ranges real brokers of the releases from 3.7 answer (protocol/kafka_releases.py;
test_kafka_releases.py checks them over the wire).
"""

from __future__ import annotations

import pytest

from mockbroker import MockBroker
from protocol.client import RawKafkaClient
from protocol.codec import request_class, response_class
from protocol.registry import (
    KAFKA_RELEASES,
    ApiKey,
    ApiRegistry,
    release_tuple,
    schema_versions,
    served_range,
)

RELEASES = ["1.1", "2.0", "2.8", "3.7", "3.8", "3.9", "4.0", "4.1", "4.2"]
ALL = set(range(100))
# The API keys every table from franz-go's kversion covers (when the release had the API); 3.7 on are
# recorded from real brokers with every key (test_kafka_releases.py).
KEYS = {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 28,
        32, 33, 36, 37, 42, 44, 47, 48, 49, 60, 61}
FRANZ_GO = ["1.1", "2.0", "2.8"]


def ranges(release: str) -> dict[int, tuple[int, int, int]]:
    """key -> (advertised_min, served min, served max)."""
    return {s.key: (s.advertised_min, s.min_version, s.max_version) for s in ApiRegistry(release, ALL)}


def test_all_releases_present():
    assert set(RELEASES) <= set(KAFKA_RELEASES)
    for rel in RELEASES:
        assert rel not in FRANZ_GO or set(KAFKA_RELEASES[rel]) <= KEYS, rel
        for key, (lo, hi) in KAFKA_RELEASES[rel].items():
            assert 0 <= lo <= hi, (rel, key)


@pytest.mark.parametrize("release", RELEASES)
def test_every_served_version_has_kio_classes(release):
    reg = ApiRegistry(release, ALL)
    assert len(list(reg)) > 0
    for spec in reg:
        assert spec.min_version <= spec.max_version
        assert spec.advertised_min <= spec.min_version
        for v in range(spec.min_version, spec.max_version + 1):
            assert request_class(spec.key, v) is not None
            assert response_class(spec.key, v) is not None
        # Served range lies inside both the release's range and kio's schemas.
        lo, hi = KAFKA_RELEASES[release][spec.key]
        kio = schema_versions(spec.key)
        assert max(lo, kio[0]) <= spec.min_version and spec.max_version == min(hi, kio[-1])


@pytest.mark.parametrize("release", RELEASES)
def test_advertised_is_the_intersection_except_4x_produce(release):
    for key, (adv, lo, hi) in ranges(release).items():
        rel_lo, rel_hi = KAFKA_RELEASES[release][key]
        if key == ApiKey.PRODUCE and release.startswith("4."):
            # KAFKA-18659: advertised from 0, served from 3.
            assert (rel_lo, adv, lo) == (0, 0, 3)
        else:
            assert adv == lo, (release, key)
            assert (lo, hi) == served_range(key, rel_lo, rel_hi)


@pytest.mark.parametrize("release", RELEASES)
def test_api_without_kio_overlap_is_left_out(release):
    reg = ApiRegistry(release, ALL)
    for key, (lo, hi) in KAFKA_RELEASES[release].items():
        assert (key in reg) == (served_range(key, lo, hi) is not None)


@pytest.mark.parametrize("release,expected", [
    # franz-go kversion: z0110 adds 24-28 at v0; z20 v1; z21 TxnOffsetCommit v2; z25 v3; z27 (KIP-588)
    # 24-26 v2; z28 flexible v3; real brokers: 3.7 AddPartitionsToTxn v4 (KIP-890 part 1's verification);
    # 3.8 24 v5, 25/26/28 v4; 4.0 EndTxn and TxnOffsetCommit v5 (KIP-890 part 2), no KIP-896 minimum
    ("1.1", (0, 0, 0, 0)), ("2.0", (1, 1, 1, 1)), ("2.8", (3, 3, 3, 3)), ("3.7", (4, 3, 3, 3)),
    ("3.8", (5, 4, 4, 4)), ("3.9", (5, 4, 4, 4)),
    ("4.0", (5, 4, 5, 5)), ("4.1", (5, 4, 5, 5)), ("4.2", (5, 4, 5, 5)),
])
def test_transaction_api_ranges(release, expected):
    """AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit as franz-go's tables and the real
    brokers have them."""
    assert tuple(KAFKA_RELEASES[release][k] for k in (24, 25, 26, 28)) == tuple((0, hi) for hi in expected)


@pytest.mark.parametrize("release,expected", [
    # franz-go kversion: z28 adds DescribeProducers (KAFKA-12238); real brokers: DescribeTransactions
    # and ListTransactions from 3.0 (KAFKA-12267, KAFKA-12369); ListTransactions v1 in 3.8 (KIP-994),
    # v2 in 4.1 (KIP-1152)
    ("1.1", (None, None, None)), ("2.0", (None, None, None)), ("2.8", ((0, 0), None, None)),
    ("3.7", ((0, 0), (0, 0), (0, 0))), ("3.8", ((0, 0), (0, 0), (0, 1))),
    ("3.9", ((0, 0), (0, 0), (0, 1))), ("4.0", ((0, 0), (0, 0), (0, 1))),
    ("4.1", ((0, 0), (0, 0), (0, 2))), ("4.2", ((0, 0), (0, 0), (0, 2))),
])
def test_transaction_admin_api_ranges(release, expected):
    """DescribeProducers, DescribeTransactions, ListTransactions (KIP-664) as franz-go's tables and the real
    brokers have them."""
    assert tuple(KAFKA_RELEASES[release].get(k) for k in (61, 65, 66)) == expected
    assert tuple(ranges(release).get(k, (None,))[1:] or None for k in (61, 65, 66)) == expected


def test_offset_for_leader_epoch_absent_before_2_1():
    # 1.1: 0-0, 2.0: 0-1; kio has v2-4 only.
    assert ApiKey.OFFSET_FOR_LEADER_EPOCH not in ApiRegistry("1.1", ALL)
    assert ApiKey.OFFSET_FOR_LEADER_EPOCH not in ApiRegistry("2.0", ALL)
    assert ranges("2.8")[ApiKey.OFFSET_FOR_LEADER_EPOCH] == (2, 2, 4)


def test_keys_missing_in_old_releases():
    r11 = ApiRegistry("1.1", ALL)
    for key in (44, 48, 49, 60, 68):  # 2.3, 2.6, 2.6, 2.8, 3.7
        assert key not in r11
    assert 60 in ApiRegistry("2.8", ALL) and 68 not in ApiRegistry("2.8", ALL)
    assert 68 in ApiRegistry("3.9", ALL)


def test_1_1_spot_checks():
    r = ranges("1.1")
    assert KAFKA_RELEASES["1.1"][ApiKey.FETCH] == (0, 7)
    assert r[ApiKey.FETCH] == (4, 4, 7)
    assert r[ApiKey.PRODUCE] == (3, 3, 5)
    assert r[ApiKey.METADATA] == (0, 0, 5)
    assert r[ApiKey.LIST_OFFSETS] == (1, 1, 2)
    assert r[ApiKey.API_VERSIONS] == (0, 0, 1)
    assert r[ApiKey.JOIN_GROUP] == (0, 0, 2)
    assert r[ApiKey.INIT_PRODUCER_ID] == (0, 0, 0)


def test_2_0_spot_checks():
    # Kafka 2.0's ranges: Produce 0-6, Fetch 0-8, ListOffsets 0-3, Metadata 0-6,
    # OffsetCommit/Fetch 0-4, FindCoordinator 0-2, JoinGroup 0-3, ApiVersions 0-2,
    # InitProducerId 0-1.
    r = ranges("2.0")
    assert r[ApiKey.PRODUCE] == (3, 3, 6)
    assert r[ApiKey.FETCH] == (4, 4, 8)
    assert r[ApiKey.LIST_OFFSETS] == (1, 1, 3)
    assert r[ApiKey.METADATA] == (0, 0, 6)
    assert r[ApiKey.OFFSET_COMMIT] == (2, 2, 4)
    assert r[ApiKey.OFFSET_FETCH] == (1, 1, 4)
    assert r[ApiKey.FIND_COORDINATOR] == (0, 0, 2)
    assert r[ApiKey.JOIN_GROUP] == (0, 0, 3)
    assert r[ApiKey.API_VERSIONS] == (0, 0, 2)
    assert r[ApiKey.INIT_PRODUCER_ID] == (0, 0, 1)


def test_2_8_and_3_9_spot_checks():
    r = ranges("2.8")
    assert r[ApiKey.PRODUCE][2] == 9 and r[ApiKey.FETCH] == (4, 4, 12)
    assert r[ApiKey.LIST_OFFSETS][2] == 6 and r[ApiKey.METADATA][2] == 11
    assert r[ApiKey.OFFSET_COMMIT][2] == 8 and r[ApiKey.OFFSET_FETCH][2] == 7
    assert r[ApiKey.FIND_COORDINATOR][2] == 3 and r[ApiKey.JOIN_GROUP][2] == 7
    assert r[ApiKey.API_VERSIONS][2] == 3 and r[ApiKey.INIT_PRODUCER_ID][2] == 4
    r = ranges("3.9")
    assert r[ApiKey.PRODUCE] == (3, 3, 11) and r[ApiKey.FETCH] == (4, 4, 17)
    assert r[ApiKey.LIST_OFFSETS] == (1, 1, 9) and r[ApiKey.METADATA][2] == 12
    assert r[ApiKey.FIND_COORDINATOR][2] == 6 and r[ApiKey.JOIN_GROUP] == (0, 0, 9)
    assert r[ApiKey.API_VERSIONS][2] == 4 and r[ApiKey.INIT_PRODUCER_ID][2] == 5
    assert r[ApiKey.CONSUMER_GROUP_HEARTBEAT] == (0, 0, 0)


def test_3_x_spot_checks():
    """Kafka 3.x advertises from v0 what 4.0 removed (KIP-896); the versions without a schema here are cut."""
    for release in ("3.7", "3.8", "3.9"):
        r = ranges(release)
        assert KAFKA_RELEASES[release][ApiKey.FETCH][0] == 0 and r[ApiKey.FETCH][:2] == (4, 4)
        assert KAFKA_RELEASES[release][ApiKey.CREATE_ACLS] == (0, 3) and r[ApiKey.CREATE_ACLS] == (1, 1, 3)
        assert r[ApiKey.OFFSET_COMMIT] == (2, 2, 9) and r[ApiKey.CONSUMER_GROUP_HEARTBEAT] == (0, 0, 0)
    assert ApiKey.CONSUMER_GROUP_DESCRIBE not in ApiRegistry("3.7", ALL)  # from 3.8
    assert ApiKey.DESCRIBE_TOPIC_PARTITIONS not in ApiRegistry("3.7", ALL)
    assert ranges("3.8")[ApiKey.CONSUMER_GROUP_DESCRIBE] == (0, 0, 0)
    assert ranges("3.7")[ApiKey.PRODUCE] == (3, 3, 10) and ranges("3.8")[ApiKey.PRODUCE] == (3, 3, 11)


def test_4_x_spot_checks():
    r = ranges("4.0")
    assert KAFKA_RELEASES["4.0"][ApiKey.JOIN_GROUP] == (0, 9)  # 4.0.2 (4.0.0 had 2-9; v0-1 back in 4.0.1)
    assert r[ApiKey.JOIN_GROUP] == (0, 0, 9)
    assert r[ApiKey.PRODUCE] == (0, 3, 12)
    assert r[ApiKey.FETCH] == (4, 4, 17)
    assert r[ApiKey.LIST_OFFSETS] == (1, 1, 10)
    assert r[ApiKey.OFFSET_COMMIT] == (2, 2, 9) and r[ApiKey.OFFSET_FETCH] == (1, 1, 9)
    assert r[ApiKey.CREATE_TOPICS] == (2, 2, 7) and r[ApiKey.DESCRIBE_CONFIGS] == (1, 1, 4)
    assert r[ApiKey.CONSUMER_GROUP_HEARTBEAT] == (0, 0, 1)
    r = ranges("4.1")
    assert r[ApiKey.JOIN_GROUP] == (0, 0, 9)
    assert r[ApiKey.PRODUCE] == (0, 3, 13) and r[ApiKey.FETCH] == (4, 4, 18)
    assert r[ApiKey.LIST_OFFSETS] == (1, 1, 10)
    r = ranges("4.2")
    assert r[ApiKey.LIST_OFFSETS] == (1, 1, 11)
    assert r[ApiKey.OFFSET_COMMIT] == (2, 2, 10) and r[ApiKey.OFFSET_FETCH] == (1, 1, 10)


@pytest.mark.parametrize("release", RELEASES)
def test_produce_advertised_min_zero_only_where_release_advertises_it(release):
    p = ApiRegistry(release, ALL).get(ApiKey.PRODUCE)
    assert p.min_version == 3
    if release.startswith("4."):
        assert KAFKA_RELEASES[release][ApiKey.PRODUCE][0] == 0
        assert p.advertised_min == 0
    else:
        # The release really enabled v0-2, but kio cannot parse them: not advertised.
        assert p.advertised_min == 3


def test_wire_api_versions_2_0_advertises_the_intersection():
    with MockBroker(config={"mock.kafka.version": "2.0"}) as b:
        with RawKafkaClient.connect(b.bootstrap_servers) as c:
            resp = c.request(ApiKey.API_VERSIONS, 2, {})
    assert resp.error_code == 0
    got = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    release = KAFKA_RELEASES["2.0"]
    assert set(got) <= set(release)
    for key, rng in got.items():
        assert rng == served_range(key, *release[key]), ApiKey(key).name
    assert got[ApiKey.PRODUCE] == (3, 6)
    assert got[ApiKey.FETCH] == (4, 8)
    assert got[ApiKey.METADATA] == (0, 6)
    assert got[ApiKey.API_VERSIONS] == (0, 2)
    assert ApiKey.OFFSET_FOR_LEADER_EPOCH not in got
    assert ApiKey.CONSUMER_GROUP_HEARTBEAT not in got


def test_throttle_mode_by_release():
    assert MockBroker(config={"mock.kafka.version": "1.1"}).config.throttle_mode == "delay"
    for rel in ("2.0", "2.8", "3.7", "3.8", "3.9", "4.0", "4.1", "4.2"):
        assert MockBroker(config={"mock.kafka.version": rel}).config.throttle_mode == "mute"


@pytest.mark.parametrize("release", [*RELEASES, "4.3", "4.4"])
def test_telemetry_apis_only_with_a_telemetry_reporter(release):
    """KIP-714's keys are in no recorded default broker's answer (no ClientTelemetry reporter):
    advertised at v0 only with ``client_telemetry``, from 3.7 on; served from 3.7 on either way, as
    Kafka answers them unlisted."""
    off = ApiRegistry(release, ALL)
    assert 71 not in off and 72 not in off and {s.key for s in off} & {71, 72} == set()
    reg = ApiRegistry(release, ALL, client_telemetry=True)
    has = release_tuple(release) >= (3, 7)
    for key in (71, 72):
        assert (key in reg) == has, (release, key)
        for spec in (reg.get(key), off.get(key)):
            assert (spec is not None) == has, (release, key)
            if spec is not None:
                assert (spec.advertised_min, spec.min_version, spec.max_version) == (0, 0, 0)
                assert spec.is_flexible(0)
