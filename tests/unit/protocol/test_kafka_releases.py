"""Kafka 3.7-4.4 as real brokers answer ApiVersions (protocol/kafka_releases.py, recorded by
scripts/record_kafka_releases.py), and what the registry makes of it.

* the recorded table is the script's own rendering (no hand edits);
* each recorded release is its ``mock.kafka.version``'s table, every key; every version a 4.x broker
  advertises has a codec (kio's or generated), and 4.4's maxima are Kafka 4.4.0's schemas' (but for a
  latest version the schema marks unstable, which a broker does not advertise); 3.x advertises from v0
  what Kafka 4.0 removed (KIP-896), which has no codec here;
* over the wire, a MockBroker of each recorded release answers ApiVersions as the real broker did: the
  same keys (those mockbroker serves), ranges (3.x's minimums raised to the first version with a codec),
  supported and finalized features and epoch;
* the registry describes every API a release has, served here or not; features per release;
* the default release is 4.4; an older one's ranges on request.

tests/integration/test_kafka_tools.py checks the 4.4 row against a live Kafka 4.4.0.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

from mockbroker import ManualClock, MockBroker
from mockbroker.apis import build_handlers
from protocol.client import RawKafkaClient
from protocol.generated.index import KAFKA_SCHEMAS, UNSTABLE_LATEST
from protocol.kafka_releases import RECORDED
from protocol.registry import (
    DEFAULT_KAFKA_RELEASE,
    KAFKA_FEATURES,
    KAFKA_RELEASES,
    TRANSACTION_VERSION_FEATURE,
    ApiKey,
    ApiRegistry,
    release_apis,
    schema_versions,
)

ROOT = pathlib.Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("record_kafka_releases", ROOT / "scripts" / "record_kafka_releases.py")
assert _spec is not None and _spec.loader is not None
record = importlib.util.module_from_spec(_spec)
sys.modules["record_kafka_releases"] = record
_spec.loader.exec_module(record)

FEATURES = {"metadata.version", "group.version", "share.version", "streams.version", "transaction.version",
            "eligible.leader.replicas.version", "kraft.version"}


def test_the_table_is_the_scripts_rendering():
    assert record.render(record.recorded()) == (ROOT / "protocol" / "kafka_releases.py").read_text()
    assert {r: row["kafka"] for r, row in RECORDED.items()} == {
        "3.7": "3.7.2", "3.8": "3.8.1", "3.9": "3.9.2", "4.0": "4.0.2", "4.1": "4.1.2", "4.2": "4.2.2",
        "4.3": "4.3.1", "4.4": "4.4.0"}
    assert tuple(row["kafka"] for row in RECORDED.values()) == record.DEFAULT_VERSIONS


@pytest.mark.parametrize("release", sorted(RECORDED))
def test_each_recorded_release_is_its_table(release):
    assert KAFKA_RELEASES[release] == RECORDED[release]["api_keys"] == release_apis(release)


@pytest.mark.parametrize("release", [r for r in sorted(RECORDED) if r >= "4.0"])
def test_every_advertised_version_has_a_codec(release):
    for key, (lo, hi) in RECORDED[release]["api_keys"].items():
        versions = schema_versions(key)
        assert versions and versions[0] <= max(lo, 3 if key == ApiKey.PRODUCE else lo) and hi <= versions[-1], key


# What Kafka 4.0 removed (KIP-896) and 3.x still advertises from v0: the first version with a codec here
KIP896_REMOVED = {ApiKey.PRODUCE: 3, ApiKey.FETCH: 4, ApiKey.LIST_OFFSETS: 1, ApiKey.OFFSET_COMMIT: 2,
                  ApiKey.OFFSET_FETCH: 1, ApiKey.CREATE_TOPICS: 2, ApiKey.DELETE_TOPICS: 1,
                  ApiKey.OFFSET_FOR_LEADER_EPOCH: 2, ApiKey.WRITE_TXN_MARKERS: 1, ApiKey.DESCRIBE_ACLS: 1,
                  ApiKey.CREATE_ACLS: 1, ApiKey.DELETE_ACLS: 1, ApiKey.DESCRIBE_CONFIGS: 1,
                  ApiKey.ALTER_REPLICA_LOG_DIRS: 1, ApiKey.DESCRIBE_LOG_DIRS: 1, ApiKey.CREATE_DELEGATION_TOKEN: 1,
                  ApiKey.RENEW_DELEGATION_TOKEN: 1, ApiKey.EXPIRE_DELEGATION_TOKEN: 1,
                  ApiKey.DESCRIBE_DELEGATION_TOKEN: 1}


@pytest.mark.parametrize("release", ["3.7", "3.8", "3.9"])
def test_3_x_advertises_what_4_0_removed(release):
    """Every 3.x maximum has a codec; its minimums do but for the versions Kafka 4.0 removed."""
    first = {}
    for key, (lo, hi) in RECORDED[release]["api_keys"].items():
        versions = schema_versions(key)
        assert versions and hi <= versions[-1], ApiKey(key).name
        if versions[0] > lo:
            first[key] = versions[0]
    assert first == KIP896_REMOVED


def expected_api_versions(release: str) -> dict[int, tuple[int, int]]:
    """What a MockBroker of ``release`` should list: the real broker's keys that mockbroker serves, with
    their ranges; a minimum below the first version with a codec raised to it (3.x: KIP896_REMOVED)."""
    served = set(build_handlers())
    return {key: (max(lo, KIP896_REMOVED.get(key, 0)) if release < "4.0" else lo, hi)
            for key, (lo, hi) in RECORDED[release]["api_keys"].items() if key in served}


@pytest.mark.parametrize("release", sorted(RECORDED))
def test_each_recorded_release_answers_as_its_real_broker(release):
    """ApiVersions at the version the recorder asked the real broker, of a MockBroker of the release on
    a ManualClock (no idle NoOpRecord moves the epoch): the keys, ranges, features and epoch recorded."""
    rec = RECORDED[release]
    body = {"client_software_name": "t", "client_software_version": "1"}
    with MockBroker(config={"mock.kafka.version": release}, clock=ManualClock()) as b, \
            RawKafkaClient.connect(b.bootstrap_servers) as c:
        r = c.request(ApiKey.API_VERSIONS, rec["api_versions_request"], body)
    assert r.error_code == 0
    assert {k.api_key: (k.min_version, k.max_version) for k in r.api_keys} == expected_api_versions(release)
    assert {f.name: (f.min_version, f.max_version) for f in r.supported_features} == rec["supported_features"]
    assert {f.name: (f.min_version_level, f.max_version_level) for f in r.finalized_features} == {
        name: (level, level) for name, level in rec["finalized_features"].items()}
    assert r.finalized_features_epoch == rec["finalized_features_epoch"]


def test_4_4_advertises_its_schemas_latest_stable_versions():
    """Kafka 4.4.0 advertises each API up to its schema's last version, except a last version marked
    latestVersionUnstable (InitProducerId v6)."""
    assert UNSTABLE_LATEST == {(22, 6)}
    for key, (lo, hi) in RECORDED["4.4"]["api_keys"].items():
        top = KAFKA_SCHEMAS[key][1][1]
        assert hi == (top - 1 if (key, top) in UNSTABLE_LATEST else top), ApiKey(key).name
    assert len(RECORDED["4.4"]["api_keys"]) == 77


def test_the_registry_describes_what_it_does_not_serve():
    reg = ApiRegistry("4.4", set(build_handlers()))
    unserved = set(RECORDED["4.4"]["api_keys"]) - set(build_handlers())
    assert unserved  # ACLs, SCRAM, ... (later issues)
    for key in unserved:
        assert key not in reg
        spec = reg.describe(key)
        assert spec is not None and (spec.min_version, spec.max_version) == RECORDED["4.4"]["api_keys"][key], key
    assert reg.describe(ApiKey.METADATA) is reg.get(ApiKey.METADATA)
    assert reg.describe(ApiKey.VOTE) is None  # controller-to-controller: no broker advertises it
    described = {k for k in range(100) if reg.describe(k) is not None}
    assert described == set(RECORDED["4.4"]["api_keys"])


def test_features_per_release():
    assert {release: set(features) for release, features in KAFKA_FEATURES.items()} == {
        "3.7": {"metadata.version"}, "3.8": {"metadata.version"}, "3.9": {"metadata.version", "kraft.version"},
        "4.0": FEATURES - {"share.version", "streams.version"}, "4.1": FEATURES - {"streams.version"},
        "4.2": FEATURES, "4.3": FEATURES, "4.4": FEATURES}
    assert KAFKA_FEATURES["3.7"]["metadata.version"] == (1, 19, 19)  # 3.0-IV1 .. 3.7-IV4
    assert KAFKA_FEATURES["4.1"]["share.version"] == (0, 1, 0)  # share groups a preview: not finalized
    assert KAFKA_FEATURES["4.0"]["eligible.leader.replicas.version"] == (0, 1, 0)
    assert KAFKA_FEATURES["4.4"]["share.version"] == (0, 2, 2)
    assert KAFKA_FEATURES["4.4"]["metadata.version"] == (7, 33, 33)
    assert KAFKA_FEATURES["4.4"]["kraft.version"] == (0, 1, 0)  # a static quorum finalizes none
    assert TRANSACTION_VERSION_FEATURE == {r: (2, 2) for r in ("4.0", "4.1", "4.2", "4.3", "4.4")}


def test_a_default_broker_advertises_what_it_did():
    """Kafka 4.4's ranges by default; an older release's on request (mock.kafka.version)."""
    assert DEFAULT_KAFKA_RELEASE == "4.4"
    newest = (ApiKey.API_VERSIONS, ApiKey.TXN_OFFSET_COMMIT, ApiKey.DELETE_GROUPS)
    for release, ranges in (("4.4", ((0, 5), (0, 6), (0, 3))), ("4.2", ((0, 4), (0, 5), (0, 2)))):
        config = {} if release == "4.4" else {"mock.kafka.version": release}
        with MockBroker(config=config) as b, RawKafkaClient.connect(b.bootstrap_servers) as c:
            resp = c.request(ApiKey.API_VERSIONS, 4, {"client_software_name": "t", "client_software_version": "1"})
        got = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        assert tuple(got[k] for k in newest) == ranges, release
        assert got == {k: v for k, v in RECORDED[release]["api_keys"].items() if k in set(build_handlers())}, release


def test_one_real_kafka_version_everywhere():
    """The toolchain step resolves the release bench/brokers.py and the side-by-side tests run, which is
    the pom's default."""
    import re

    toolchains = (ROOT / "scripts" / "toolchains.sh").read_text()
    brokers = (ROOT / "bench" / "brokers.py").read_text()
    pom = (ROOT / "bench" / "realkafka" / "pom.xml").read_text()
    versions = {re.search(r"^REALKAFKA_VERSION=(\S+)$", toolchains, re.M)[1],
                re.search(r'^KAFKA_VERSION = "(\S+)"$', brokers, re.M)[1],
                re.search(r"<kafka.version>(\S+)</kafka.version>", pom)[1]}
    assert versions == {RECORDED["4.4"]["kafka"]}


@pytest.mark.parametrize("release", ["3.7", "4.0", "4.1"])
def test_acls_served_on_older_releases(release):
    """A real 3.7, 4.0 or 4.1 broker advertises DescribeAcls, CreateAcls and DeleteAcls (v1-3; 3.x from v0,
    which no client of theirs sends): a MockBroker of the release with an authorizer lists and serves them."""
    config = {"mock.kafka.version": release,
              "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:ANONYMOUS"}
    acl = {"resource_type": 2, "resource_name": "t", "resource_pattern_type": 3, "principal": "User:bob",
           "host": "*", "operation": 3, "permission_type": 3}  # TOPIC t LITERAL, READ ALLOW
    every = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
             "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}
    with MockBroker(config=config) as b, RawKafkaClient.connect(b.bootstrap_servers) as c:
        listed = {k.api_key: (k.min_version, k.max_version) for k in c.request(
            ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}).api_keys}
        assert {k: listed.get(k) for k in (29, 30, 31)} == {k: (1, 3) for k in (29, 30, 31)}
        created = c.request(ApiKey.CREATE_ACLS, 3, {"creations": [acl]})
        assert [r.error_code for r in created.results] == [0]
        described = c.request(ApiKey.DESCRIBE_ACLS, 3, every)
        assert described.error_code == 0
        assert [(r.resource_name, [(a.principal, a.operation) for a in r.acls]) for r in described.resources] == [
            ("t", [("User:bob", 3)])]
        deleted = c.request(ApiKey.DELETE_ACLS, 3, {"filters": [every]})
        assert [len(f.matching_acls) for f in deleted.filter_results] == [1]


def test_real_kafka_starts_any_recorded_release():
    """bench/brokers.py's RealKafka takes a recorded line ("4.1": its recorded patch release) or a full
    version, and gives 3.x what differs there: no share coordinator properties (4.0 on), log4j 1's
    configuration, the command-line tools' 3.x classes (no JVM starts here)."""
    import shutil

    spec = importlib.util.spec_from_file_location("bench_brokers", ROOT / "bench" / "brokers.py")
    assert spec is not None and spec.loader is not None
    brokers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(brokers)
    assert {r: brokers.kafka_release(r) for r in RECORDED} == {r: row["kafka"] for r, row in RECORDED.items()}
    assert brokers.kafka_release("4.1.1") == "4.1.1"
    with pytest.raises(ValueError, match="no recorded Kafka 2.8"):
        brokers.kafka_release("2.8")
    for release, share in (("3.7", False), ("3.9", False), ("4.0", True), ("4.1", True)):
        kafka = brokers.RealKafka("unused.jar", version=release)
        try:
            assert kafka.version == RECORDED[release]["kafka"]
            props = kafka.properties(kafka.nodes[0])
            assert ("share.coordinator.state.topic.replication.factor" in props) == share, release
            assert props["process.roles"] == "broker,controller" and props["controller.quorum.voters"]
        finally:
            shutil.rmtree(kafka.root)
    legacy = "/m2/org/slf4j/slf4j-reload4j/1.7.36/slf4j-reload4j-1.7.36.jar:/m2/kafka_2.13-3.7.2.jar"
    assert brokers.legacy_log_opts(legacy) == [f"-Dlog4j.configuration=file:{brokers.LOG4J1}"]
    assert brokers.LOG4J1.is_file()
    assert brokers.legacy_log_opts("/m2/log4j-slf4j-impl-2.24.3.jar:/m2/kafka_2.13-4.1.2.jar") == []
    brokers._CLASSES["3.7"] = frozenset({"kafka.admin.AclCommand", "kafka.admin.ConsumerGroupCommand"})
    assert brokers.tool_main("3.7", "kafka-acls") == "kafka.admin.AclCommand"
    assert brokers.tool_main("3.7", "kafka-consumer-groups") == "kafka.admin.ConsumerGroupCommand"
