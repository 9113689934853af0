"""The config catalogue (``mockbroker/server/config_catalog.py``) against what a real Kafka 4.4.0 answered, as
recorded in mockbroker/data/kafka-4.4.0-configs.json by scripts/record_kafka_configs.py: the DescribeConfigs
entries of a topic, a broker, the cluster default, a group and a client-metrics resource, and every
recorded alteration replayed in order (error code, message, and what the resource holds after).  Then
that dynamic broker configs and altered topic configs take effect on the clock.
(tests/integration/test_config_catalog_kafka.py compares with a live Kafka 4.4.0.)"""

from __future__ import annotations

import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockbroker import ManualClock, MockBroker
from mockbroker.server.config_catalog import (
    APPEND, BROKER, BROKER_LOGGER, CLIENT_METRICS, DELETE, DUPLICATE_RESOURCE, GROUP, SET, TOPIC, ConfigCatalog,
    duplicate_resources,
)
from mockbroker.config.config_defs import load
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.records import build_batch

E = ErrorCode
DATA = load()
NAMES = DATA.data["names"]
NODE = int(NAMES["node"])
T0 = 1_800_000_000_000
NOT_DEFAULT = (1, 2, 3, 7, 8)


def recorded_broker():
    """A mockbroker set up as the recording's Kafka: its node id and topics."""
    b = MockBroker(config={"node.id": NODE})
    b.start()
    b.create_topic(NAMES["defaults_topic"], 1)
    b.create_topic(NAMES["overrides_topic"], 1, configs=NAMES["overrides"])
    b.create_topic(NAMES["altered_topic"], 1)
    return b


@pytest.fixture(scope="module")
def broker():
    b = recorded_broker()
    yield b
    b.stop()


def entry_view(e):
    return {"value": e["value"], "source": e["config_source"], "read_only": e["read_only"],
            "sensitive": e["is_sensitive"], "type": e["config_type"], "documentation": e["documentation"],
            "synonyms": [[s["name"], s["value"], s["source"]] for s in e["synonyms"]]}


def recorded_view(e):
    return {k: e[k] for k in ("value", "source", "read_only", "sensitive", "type", "documentation", "synonyms")}


@pytest.mark.parametrize("resource", [(TOPIC, NAMES["defaults_topic"]), (TOPIC, NAMES["overrides_topic"]),
                                      (BROKER, NAMES["node"]), (BROKER, ""), (GROUP, NAMES["group"]),
                                      (CLIENT_METRICS, NAMES["client_metrics"])], ids=str)
def test_describe_lists_what_kafka_lists(broker, resource):
    """Every entry, in Kafka's order, with its value, source, synonyms, type, flags and documentation.
    Only a broker's environment differs: the entries a static config sets on one side (listeners, node
    id, log dirs, the harness's replication factors; mockbroker's SASL mechanisms)."""
    rtype, name = resource
    recorded = DATA.recorded_describe(rtype, name)
    mine = broker.call(lambda c: ConfigCatalog(c.config, c.metadata).describe(NODE, rtype, name, None, True, True))
    assert (mine.error, mine.message) == (E.none, recorded["error_message"])  # "": the default ConfigHelper leaves
    assert [e["name"] for e in mine.configs] == [e["name"] for e in recorded["entries"]]
    static = 4
    differing = []
    for m, r in zip(mine.configs, recorded["entries"]):
        mv, rv = entry_view(m), recorded_view(r)
        environment = any(s[2] == static for s in mv["synonyms"] + rv["synonyms"])
        if environment:
            mv, rv = ({k: v[k] for k in ("read_only", "sensitive", "type", "documentation")} for v in (mv, rv))
        if mv != rv:
            differing.append((r["name"], mv, rv))
    assert differing == []
    if rtype == BROKER and name:
        expected = {"listener.security.protocol.map", "node.id", "controller.listener.names", "log.dirs",
                    "controller.quorum.voters", "listeners", "inter.broker.listener.name", "broker.id",
                    "advertised.listeners", "process.roles", "sasl.enabled.mechanisms",
                    *DATA.data["properties"]}
        env = {m["name"] for m in mine.configs if any(s["source"] == static for s in m["synonyms"])} | \
              {r["name"] for r in recorded["entries"] if any(s[2] == static for s in r["synonyms"])}
        assert env <= expected  # nothing else is told apart


def test_the_recorded_alterations_replayed(broker):
    """Each recorded IncrementalAlterConfigs / AlterConfigs case, in the recorded order on one catalogue:
    Kafka's error code and message, and afterwards the same non-default entries (value, source, synonyms)."""
    def replay(c):
        cat = ConfigCatalog(c.config, c.metadata)
        out = []
        for case in DATA.data["cases"]:
            ops = [tuple(op) for op in case["ops"]]
            alter = cat.incremental_alter if case["api"] == "incremental" else cat.alter
            r = alter(NODE, case["resource_type"], case["resource_name"], ops, case["validate_only"])
            after = None
            if not case["validate_only"] and r.error == E.none:
                d = cat.describe(NODE, case["resource_type"], case["resource_name"], None, True, False)
                after = sorted([e["name"], e["value"], e["config_source"],
                                [[s["name"], s["value"], s["source"]] for s in e["synonyms"]]]
                               for e in d.configs if e["config_source"] in NOT_DEFAULT)
            out.append((case["id"], int(r.error), r.message, after))
        return out

    got = broker.call(replay)
    expected = [(c["id"], c["error_code"], c["error_message"], c.get("after")) for c in DATA.data["cases"]]
    assert got == expected
    assert len(expected) >= 50


def test_describe_errors_and_filters(broker):
    def run(c):
        cat = ConfigCatalog(c.config, c.metadata)
        return [(r.error, r.message) for r in (
            cat.describe(NODE, TOPIC, "nope"), cat.describe(NODE, TOPIC, "bad name!"),
            cat.describe(NODE, BROKER, "7"), cat.describe(NODE, BROKER, "x"),
            cat.describe(NODE, BROKER_LOGGER, ""), cat.describe(NODE, BROKER_LOGGER, "7"),
            cat.describe(NODE, GROUP, ""), cat.describe(NODE, CLIENT_METRICS, ""), cat.describe(NODE, 99, "x"))]
    assert broker.call(run) == [
        (E.unknown_topic_or_partition, ""),  # Kafka 4.4.0: ConfigHelper sets no message, the default ""
        (E.invalid_topic_exception, "Topic name is invalid: 'bad name!' contains one or more characters other than "
                                    "ASCII alphanumerics, '.', '_' and '-'"),
        (E.invalid_request, f"Unexpected broker id, expected {NODE} or empty string, but received 7"),
        (E.invalid_request, "Broker id must be an integer, but it is: x"),
        (E.invalid_request, "Broker id must not be empty"),
        (E.invalid_request, f"Unexpected broker id, expected {NODE} but received 7"),
        (E.invalid_request, "Group name must not be empty"),
        (E.invalid_request, "Client metrics subscription name must not be empty"),
        (E.invalid_request, "Unsupported resource type: UNKNOWN")]
    filtered = broker.call(lambda c: ConfigCatalog(c.config, c.metadata).describe(
        NODE, TOPIC, NAMES["defaults_topic"], ["retention.ms", "no.such"], False, False))
    assert [(e["name"], e["synonyms"], e["documentation"]) for e in filtered.configs] == [("retention.ms", [], None)]
    everything = broker.call(lambda c: ConfigCatalog(c.config, c.metadata).describe(
        NODE, TOPIC, NAMES["defaults_topic"], []))
    assert len(everything.configs) == 37  # an empty key list is every key, as null


def test_broker_loggers(broker):
    def run(c):
        cat = ConfigCatalog(c.config, c.metadata)
        results = [cat.incremental_alter(NODE, BROKER_LOGGER, str(NODE), [(SET, "mockbroker.log_cleaner", "debug")],
                                         False),
                   cat.incremental_alter(NODE, BROKER_LOGGER, str(NODE), [(SET, "x", "LOUD")], False),
                   cat.incremental_alter(NODE, BROKER_LOGGER, str(NODE), [(APPEND, "x", "INFO")], False),
                   cat.incremental_alter(NODE, BROKER_LOGGER, str(NODE), [(DELETE, "root", None)], False)]
        levels = {e["name"]: e["value"] for e in cat.describe(NODE, BROKER_LOGGER, str(NODE)).configs}
        cat.incremental_alter(NODE, BROKER_LOGGER, str(NODE), [(DELETE, "mockbroker.log_cleaner", None)], False)
        return [(r.error, r.message) for r in results], levels, logging.getLogger("mockbroker.log_cleaner").level
    results, levels, after = broker.call(run)
    assert results[0] == (E.none, None) and levels["mockbroker.log_cleaner"] == "DEBUG"
    assert after == logging.NOTSET  # deleted: its parent's level again
    assert results[1][0] == results[2][0] == results[3][0] == E.invalid_request


def test_duplicate_resources():
    assert duplicate_resources([(TOPIC, "a"), (TOPIC, "b"), (TOPIC, "a"), (BROKER, "a")]) == {0, 2}
    assert DUPLICATE_RESOURCE == "Each resource must appear at most once."


# -- what alterations change ---------------------------------------------------------------------------

def produce(b, topic, batch):
    with RawKafkaClient.connect(b.bootstrap_servers) as c:
        return c.request(0, 9, {"acks": 1, "timeout": 5000, "topic_data": [{"name": topic, "partition_data": [
            {"index": 0, "records": batch}]}]}).responses[0].partition_responses[0]


def catalogue(b):
    return b.call(lambda c: c.config_catalog)


def segments(b, topic):
    return b.call(lambda c: [s.base_offset for s in c.metadata.topics[topic].partitions[0].log.segments])


def test_dynamic_broker_configs_take_effect():
    """Cluster-default dynamic configs are the defaults of topics without an override: retention, segment
    rolling, max.message.bytes, the timestamp bounds (log.roll.hours is not dynamic in Kafka 4.4)."""
    with MockBroker(config={"log.retention.check.interval.ms": 1000}, clock=ManualClock(start_wall_ms=T0)) as b:
        b.create_topic("t", 1)
        b.create_topic("kept", 1, configs={"retention.ms": "-1"})
        cat = catalogue(b)
        def alter(ops):
            return b.call(lambda c: c.config_catalog.incremental_alter(0, BROKER, "", ops, False))
        big = build_batch([(b"k", b"x" * 2000, [])], base_timestamp=T0)
        assert produce(b, "t", big).error_code == E.none
        assert alter([(SET, "message.max.bytes", "1000")]).error == E.none
        assert produce(b, "t", big).error_code == E.message_too_large
        assert alter([(SET, "log.message.timestamp.after.max.ms", "10")]).error == E.none
        ahead = build_batch([(b"k", b"v", [])], base_timestamp=T0 + 11)
        assert produce(b, "t", ahead).error_code == E.invalid_timestamp
        assert alter([(DELETE, "message.max.bytes", None), (DELETE, "log.message.timestamp.after.max.ms", None),
                      (SET, "log.roll.ms", "3600000")]).error == E.none
        b.advance(3_600_000)
        produce(b, "t", build_batch([(b"k", b"v", [])], base_timestamp=T0 + 3_600_000))
        produce(b, "kept", build_batch([(b"k", b"v", [])], base_timestamp=T0))
        assert segments(b, "t") == [0, 1]  # rolled after an hour
        assert alter([(SET, "log.retention.ms", "60000")]).error == E.none
        b.advance(60_000)
        assert segments(b, "t") == [1]  # the first segment's records are past a minute, the second's not
        assert segments(b, "kept") == [0]  # the topic's override wins
        d = b.call(lambda c: cat.describe(0, TOPIC, "t", ["retention.ms", "segment.ms"], True))
        assert sorted((e["name"], e["value"], e["config_source"], e["synonyms"][0]["name"]) for e in d.configs) == [
            ("retention.ms", "60000", 3, "log.retention.ms"), ("segment.ms", "3600000", 3, "log.roll.ms")]


def test_the_cleaner_back_off_is_dynamic():
    with MockBroker(config={"log.cleaner.backoff.ms": 60000}, clock=ManualClock(start_wall_ms=T0)) as b:
        b.create_topic("c", 1, configs={"cleanup.policy": "compact", "internal.segment.bytes": "1",
                                        "min.cleanable.dirty.ratio": "0.01"})
        for v in (b"1", b"2", b"3"):
            produce(b, "c", build_batch([(b"k", v, [])], base_timestamp=T0))
        assert b.call(lambda c: c.config_catalog.incremental_alter(
            0, BROKER, "", [(SET, "log.cleaner.backoff.ms", "1000")], False)).error == E.none
        b.advance(1000)
        assert b.call(lambda c: c.log_cleaner.stats.cleanings) == 1


def test_an_altered_topic_config_takes_effect():
    """Topic configs altered through the catalogue are the topic's: cleanup.policy=compact refuses a
    keyless record; DELETE gives the default back."""
    with MockBroker(clock=ManualClock(start_wall_ms=T0)) as b:
        b.create_topic("t", 1)
        keyless = build_batch([(None, b"v", [])], base_timestamp=T0)
        assert produce(b, "t", keyless).error_code == E.none
        def alter(ops):
            return b.call(lambda c: c.config_catalog.incremental_alter(0, TOPIC, "t", ops, False))
        assert alter([(APPEND, "cleanup.policy", "compact")]).error == E.none
        assert b.call(lambda c: c.metadata.topics["t"].overrides) == {"cleanup.policy": "delete,compact"}
        assert produce(b, "t", keyless).error_code == E.invalid_record
        assert alter([(DELETE, "cleanup.policy", None)]).error == E.none
        assert produce(b, "t", keyless).error_code == E.none


def test_per_broker_configs_are_described_and_read_per_broker():
    with MockBroker(config={"mock.num.brokers": 2}) as b:
        r = b.call(lambda c: c.config_catalog.incremental_alter(1, BROKER, "1", [(SET, "log.retention.ms", "5000")],
                                                                 False))
        assert r.error == E.none
        assert b.call(lambda c: (c.config.for_broker("log.retention.ms", 1), c.config.for_broker("log.retention.ms", 0),
                                 c.config["log.retention.ms"])) == (5000, None, None)
        d0, d1 = (b.call(lambda c, n=n: c.config_catalog.describe(n, BROKER, str(n), ["log.retention.ms"]))
                  for n in (0, 1))
        assert (d0.configs[0]["value"], d0.configs[0]["config_source"]) == (None, 5)
        assert (d1.configs[0]["value"], d1.configs[0]["config_source"]) == ("5000", 2)


# -- hostile input -----------------------------------------------------------------------------------

_NAMES = st.one_of(st.sampled_from(["retention.ms", "cleanup.policy", "log.retention.ms", "min.insync.replicas",
                                    "consumer.session.timeout.ms", "interval.ms", "match", "listeners",
                                    "log.cleaner.threads", "no.such", "", "listener.name.x.ssl.key.password"]),
                   st.text(max_size=20))
_VALUES = st.one_of(st.none(), st.sampled_from(["", "0", "-1", "1.5", "compact,delete", "x", "9" * 30,
                                                "client_id=.*", "a" * 40000]), st.text(max_size=20))
_RESOURCES = st.tuples(st.sampled_from([TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP, 0, 1, 99]),
                       st.one_of(st.sampled_from(["", "0", "1", "-1", "t", "bad name!", "g"]), st.text(max_size=10)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(resource=_RESOURCES, ops=st.lists(st.tuples(st.integers(-1, 5), _NAMES, _VALUES), max_size=4),
       legacy=st.booleans(), validate_only=st.booleans())
def test_any_alteration_gets_an_answer(broker, resource, ops, legacy, validate_only):
    """Whatever a client sends, each resource gets an error code and a message or none, never an exception;
    DescribeConfigs of it too.  (Loggers only validated: their levels are the process's.)"""
    rtype, name = resource
    validate_only = validate_only or rtype == BROKER_LOGGER

    def run(c):
        cat = ConfigCatalog(c.config, c.metadata)
        if legacy:
            r = cat.alter(NODE, rtype, name, [(n, v) for _op, n, v in ops], validate_only)
        else:
            r = cat.incremental_alter(NODE, rtype, name, ops, validate_only)
        d = cat.describe(NODE, rtype, name, [n for _op, n, _v in ops] or None, True, True)
        return r, d
    r, d = broker.call(run)
    assert isinstance(r.error, E) and (r.message is None or isinstance(r.message, str))
    assert isinstance(d.error, E)
