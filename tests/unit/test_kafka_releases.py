"""Kafka 4.2-4.4 as real brokers answer ApiVersions (protocol/kafka_releases.py, recorded by
scripts/record_kafka_releases.py), and what the registry makes of it.

* the recorded table is the script's own rendering (no hand edits);
* the franz-go-derived 4.2 table agrees with what a real 4.2.2 broker answered, key for key;
* 4.3 and 4.4 are the recorded answers, every key; every version they advertise has a codec (kio's or
  generated), and 4.4's maxima are Kafka 4.4.0's schemas' (but for a latest version the schema marks
  unstable, which a broker does not advertise);
* the registry describes every API a release has, served here or not; features per release;
* nothing a broker advertises by default changed: the default release is still 4.2, whose ApiVersions,
  TxnOffsetCommit and DeleteGroups stop at v4, v5 and v2 although codecs for v5, v6 and v3 exist now.

tests/integration/test_kafka_tools.py checks the 4.4 row against a live Kafka 4.4.0.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

from mockbroker import MockBroker
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

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("record_kafka_releases", ROOT / "scripts" / "record_kafka_releases.py")
assert _spec is not None and _spec.loader is not None
record = importlib.util.module_from_spec(_spec)
sys.modules["record_kafka_releases"] = record
_spec.loader.exec_module(record)

FEATURES = {"metadata.version", "group.version", "share.version", "streams.version", "transaction.version",
            "eligible.leader.replicas.version", "kraft.version"}


def test_the_table_is_the_scripts_rendering():
    assert record.render(record.recorded()) == (ROOT / "protocol" / "kafka_releases.py").read_text()
    assert {r: row["kafka"] for r, row in RECORDED.items()} == {"4.2": "4.2.2", "4.3": "4.3.1", "4.4": "4.4.0"}


def test_the_4_2_table_is_what_a_real_4_2_broker_answers():
    """Every key of the franz-go-derived 4.2 table, as Kafka 4.2.2 advertised it."""
    table, real = KAFKA_RELEASES["4.2"], RECORDED["4.2"]["api_keys"]
    assert {key: (table[key], real.get(key)) for key in table if table[key] != real.get(key)} == {}


@pytest.mark.parametrize("release", ["4.3", "4.4"])
def test_4_3_and_4_4_are_the_recorded_answers(release):
    assert KAFKA_RELEASES[release] == RECORDED[release]["api_keys"] == release_apis(release)


@pytest.mark.parametrize("release", sorted(RECORDED))
def test_every_advertised_version_has_a_codec(release):
    for key, (lo, hi) in RECORDED[release]["api_keys"].items():
        versions = schema_versions(key)
        assert versions and versions[0] <= max(lo, 3 if key == ApiKey.PRODUCE else lo) and hi <= versions[-1], key


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
    for release in RECORDED:
        assert set(KAFKA_FEATURES[release]) == FEATURES, release
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
