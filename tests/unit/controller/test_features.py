"""The cluster's features and controller quorum over the wire: ApiVersions finalizes what a freshly
formatted Kafka of the release finalizes, UpdateFeatures changes it as ``FeatureControlManager`` does
(errors and messages included), DescribeQuorum describes the simulated KRaft quorum (every broker a
voter).  Time runs on a ManualClock, so log end offsets and timestamps are exact."""

from __future__ import annotations

import pytest

from mockbroker import ManualClock, MockBroker
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.kafka_releases import RECORDED
from protocol.registry import DEFAULT_KAFKA_RELEASE, ApiKey

E = ErrorCode
T0 = 1_700_000_000_000
UPGRADE, SAFE, UNSAFE = 1, 2, 3
FAILED = "The update failed for all features since the following feature had an error: "


@pytest.fixture
def b():
    with MockBroker(config={"mock.num.brokers": 3}, clock=ManualClock(start_wall_ms=T0)) as broker:
        yield broker


def clients(b):
    return [RawKafkaClient.connect(a) for a in b.bootstrap_servers.split(",")]


def features(c, version=4):
    body = {"client_software_name": "t", "client_software_version": "1"} if version >= 3 else {}
    r = c.request(ApiKey.API_VERSIONS, version, body)
    supported = {f.name: (f.min_version, f.max_version) for f in r.supported_features}
    finalized = {f.name: f.max_version_level for f in r.finalized_features}
    assert all(f.min_version_level == f.max_version_level for f in r.finalized_features)
    return supported, finalized, r.finalized_features_epoch


def update(c, *updates, version=2, validate_only=False):
    """(feature, level, upgrade type) items; (error, message, results by feature)."""
    items = [{"feature": f, "max_version_level": level, "upgrade_type": t, "allow_downgrade": t != UPGRADE}
             for f, level, t in updates]
    r = c.request(ApiKey.UPDATE_FEATURES, version,
                  {"timeout": 60000, "feature_updates": items, "validate_only": validate_only})
    results = {x.feature: (x.error_code, x.error_message) for x in getattr(r, "results", ()) or ()}
    return r.error_code, r.error_message, results


def quorum(c, version=2, topic="__cluster_metadata", partitions=(0,)):
    return c.request(ApiKey.DESCRIBE_QUORUM, version,
                     {"topics": [{"topic_name": topic, "partitions": [{"partition_index": p} for p in partitions]}]})


# -- ApiVersions ---------------------------------------------------------------------------------------
def test_api_versions_finalizes_what_a_fresh_kafka_finalizes(b):
    """Kafka 4.4.0 as recorded: every supported feature, every finalized one (kraft.version 0 is not
    listed), epoch 16 (the bootstrap records); v3 hides the supported features whose minimum is 0."""
    rec = RECORDED[DEFAULT_KAFKA_RELEASE]
    c = RawKafkaClient.connect(b.bootstrap_servers)
    try:
        assert features(c) == (rec["supported_features"], rec["finalized_features"], rec["finalized_features_epoch"])
        supported, finalized, _ = features(c, version=3)
        assert supported == {"metadata.version": (7, 33)}  # KAFKA-17492
        assert finalized == rec["finalized_features"]
    finally:
        c.close()


@pytest.mark.parametrize("release", ["4.2", "4.3"])
def test_api_versions_features_of_newer_releases(release):
    rec = RECORDED[release]
    with MockBroker(config={"mock.kafka.version": release}, clock=ManualClock()) as b, \
            RawKafkaClient.connect(b.bootstrap_servers) as c:
        assert features(c) == (rec["supported_features"], rec["finalized_features"], rec["finalized_features_epoch"])


def test_the_epoch_moves_with_the_idle_no_op_records(b):
    """metadata.max.idle.interval.ms: a NoOpRecord every 500 ms, so the image's offset moves."""
    c = RawKafkaClient.connect(b.bootstrap_servers)
    try:
        b.advance(1250)
        assert features(c)[2] == 16 + 2
    finally:
        c.close()


# -- UpdateFeatures --------------------------------------------------------------------------------------
def test_a_downgrade_shows_on_every_broker_and_reaches_the_transaction_coordinator(b):
    cs = clients(b)
    try:
        assert update(cs[1], ("transaction.version", 1, SAFE)) == (E.none, None, {})
        for c in cs:
            _, finalized, epoch = features(c)
            assert finalized["transaction.version"] == 1
            assert epoch == 17  # one FeatureLevelRecord
        assert b.call(lambda cl: cl.txn.config.transaction_version) == 1
        # back up, and group.version removed (level 0 with a downgrade): not listed any more
        assert update(cs[0], ("transaction.version", 2, UPGRADE), ("group.version", 0, SAFE))[0] == E.none
        _, finalized, epoch = features(cs[2])
        assert finalized["transaction.version"] == 2 and "group.version" not in finalized and epoch == 19
        assert b.call(lambda cl: cl.txn.config.transaction_version) == 2
    finally:
        for c in cs:
            c.close()


def test_validate_only_changes_nothing(b):
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        before = features(c)
        assert update(c, ("share.version", 0, SAFE), validate_only=True) == (E.none, None, {})
        assert features(c) == before


@pytest.mark.parametrize("updates, message", [
    ([("transaction.version", 3, UPGRADE)],
     "Invalid update version 3 for feature transaction.version. Local controller 0 only supports versions 0-2"),
    ([("no.such.feature", 1, UPGRADE)],
     "Invalid update version 1 for feature no.such.feature. Local controller 0 does not support this feature."),
    ([("no.such.feature", 0, SAFE)], "Invalid update version 0 for feature no.such.feature. Feature no.such.feature "
                                     "not found."),
    ([("transaction.version", 1, UPGRADE)],
     "Invalid update version 1 for feature transaction.version. Can't downgrade the version of this feature "
     "without setting the upgrade type to either safe or unsafe downgrade."),
    ([("transaction.version", 1, 9)],
     "Invalid update version 1 for feature transaction.version. The controller does not support the given "
     "upgrade type."),
    ([("transaction.version", -1, SAFE)],
     "Invalid update version -1 for feature transaction.version. A feature version cannot be less than 0."),
    # 4.4-IV2 (33) down to 3.6-IV2 (14): 3.7-IV0, 3.7-IV2, 4.0-IV1, 4.3-IV0, ... changed the metadata
    ([("metadata.version", 14, SAFE)], "Unsupported metadata.version downgrade from 33 to 14. Refusing to "
                                       "perform the requested downgrade because it might delete metadata "
                                       "information."),
    ([("metadata.version", 14, UNSAFE)], "Unsupported metadata.version downgrade from 33 to 14. Unsafe metadata "
                                         "downgrade is not supported in this version."),
    # one bad update fails the whole request, the good one before it included
    ([("transaction.version", 1, SAFE), ("kraft.version", 0, SAFE), ("share.version", 1, UNSAFE)],
     "Invalid update version 1 for feature share.version. Can't downgrade to a newer version."),
])
def test_update_errors_as_kafka_gives_them(b, updates, message):
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        b.call(lambda cl: cl.features.update([("share.version", 0, SAFE)], False))  # share.version at 0
        before = features(c)
        assert update(c, *updates) == (E.invalid_update_version, FAILED + message, {})
        assert features(c) == before  # nothing applied
        assert b.call(lambda cl: cl.txn.config.transaction_version) == 2


def test_levels_already_in_place_are_accepted(b):
    """The same level with a downgrade type, kraft.version at its own level: nothing to refuse."""
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        assert update(c, ("group.version", 1, SAFE), ("transaction.version", 2, UNSAFE),
                      ("kraft.version", 0, SAFE)) == (E.none, None, {})


def test_a_dependency_is_checked_against_the_proposed_levels(b):
    """eligible.leader.replicas.version 1 needs metadata.version 23 (4.0-IV1): checked against the
    levels the request proposes, in request order."""
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        assert update(c, ("eligible.leader.replicas.version", 0, SAFE)) == (E.none, None, {})
        assert update(c, ("eligible.leader.replicas.version", 1, UPGRADE), ("metadata.version", 22, SAFE)) == (
            E.invalid_update_version,
            FAILED + "Invalid update version 1 for feature eligible.leader.replicas.version. "
                     "eligible.leader.replicas.version could not be set to 1 because it depends on "
                     "metadata.version level 23", {})
        assert update(c, ("eligible.leader.replicas.version", 1, UPGRADE)) == (E.none, None, {})
        assert features(c)[1]["eligible.leader.replicas.version"] == 1


def test_a_downgrade_that_changes_no_metadata_is_allowed():
    """metadata.version 4.2-IV1 (29) down to 4.0-IV2 (24) crosses no version that changed the metadata."""
    with MockBroker(config={"mock.kafka.version": "4.2"}, clock=ManualClock()) as b, \
            RawKafkaClient.connect(b.bootstrap_servers) as c:
        assert update(c, ("metadata.version", 24, SAFE)) == (E.none, None, {})
        assert features(c)[1]["metadata.version"] == 24
        assert update(c, ("metadata.version", 22, SAFE))[0] == E.invalid_update_version  # 4.0-IV1 changed it


def test_v0_and_v1_answer_a_result_per_feature(b):
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        assert update(c, ("share.version", 2, UPGRADE), version=1) == (
            E.none, None, {"share.version": (E.none, "NONE")})
        # v0's allow_downgrade is not read: the controller takes every v0 update as an upgrade
        error, message, results = update(c, ("share.version", 0, SAFE), version=0)
        assert error == E.invalid_update_version and results == {}
        assert "without setting the upgrade type" in message
        assert features(c)[1]["share.version"] == 2


# -- DescribeQuorum --------------------------------------------------------------------------------------
def test_describe_quorum_of_three_voters(b):
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        b.advance(1000)  # two NoOpRecords
        r = quorum(c)
        assert (r.error_code, r.error_message) == (E.none, "")  # Kafka 4.4.0: the default, "", at both levels
        [t] = r.topics
        assert t.topic_name == "__cluster_metadata"
        [p] = t.partitions
        assert p.error_message == ""
        assert (p.partition_index, p.error_code, p.leader_id, p.leader_epoch, p.high_watermark) == (0, E.none, 0, 1, 18)
        now = T0 + 1000
        assert [(v.replica_id, v.replica_directory_id, v.log_end_offset, v.last_fetch_timestamp,
                 v.last_caught_up_timestamp) for v in p.current_voters] == [(i, None, 18, now, now) for i in range(3)]
        assert p.observers == ()
        ports = [int(a.rsplit(":", 1)[1]) for a in b.bootstrap_servers.split(",")]
        assert [(n.node_id, [(x.name, x.host, x.port) for x in n.listeners]) for n in r.nodes] == [
            (i, [("CONTROLLER", "127.0.0.1", ports[i])]) for i in range(3)]
        # v0: no timestamps, no nodes
        r0 = quorum(c, version=0)
        assert [v.log_end_offset for v in r0.topics[0].partitions[0].current_voters] == [18, 18, 18]


def test_a_stopped_voter_keeps_its_offset_and_the_leader_moves(b):
    ports = [a.rsplit(":", 1)[1] for a in b.bootstrap_servers.split(",")]
    with RawKafkaClient.connect(f"127.0.0.1:{ports[2]}") as c:
        b.advance(500)
        b.stop_broker(0)
        b.advance(1000)
        p = quorum(c).topics[0].partitions[0]
        assert (p.leader_id, p.leader_epoch, p.high_watermark) == (1, 2, 19)
        assert [(v.replica_id, v.log_end_offset, v.last_fetch_timestamp) for v in p.current_voters] == [
            (0, 17, T0 + 500), (1, 19, T0 + 1500), (2, 19, T0 + 1500)]
        b.stop_broker(1)  # one voter of three: no majority, no leader
        p = quorum(c).topics[0].partitions[0]
        assert (p.error_code, p.leader_id) == (E.not_leader_or_follower, 0)
        b.start_broker(0)  # a majority again: the lowest live voter leads, a new epoch
        p = quorum(c).topics[0].partitions[0]
        assert (p.error_code, p.leader_id, p.leader_epoch) == (E.none, 0, 3)


def test_describe_quorum_of_another_partition(b):
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        for topic, partitions in (("other", (0,)), ("__cluster_metadata", (1,)), ("__cluster_metadata", (0, 0))):
            r = quorum(c, topic=topic, partitions=partitions)
            assert (r.error_code, r.error_message) == (E.none, "")  # Kafka 4.4.0 leaves the default, ""
            assert [(t.topic_name, [(p.partition_index, p.error_code, p.error_message) for p in t.partitions])
                    for t in r.topics] == [(topic, [(i, E.unknown_topic_or_partition,
                                                     "This server does not host this topic-partition.")
                                                    for i in partitions])]


def test_kraft_version_1_shows_directory_ids(b):
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        assert update(c, ("kraft.version", 1, UPGRADE)) == (E.none, None, {})
        _, finalized, epoch = features(c)
        assert finalized["kraft.version"] == 1 and epoch == 17
        ids = [v.replica_directory_id for v in quorum(c).topics[0].partitions[0].current_voters]
        assert len(set(ids)) == 3 and None not in ids
        error, message, _ = update(c, ("kraft.version", 0, SAFE))
        assert error == E.invalid_update_version
        assert message == FAILED + "Invalid update version 0 for feature kraft.version. Can't downgrade the version " \
                                   "of this feature."
