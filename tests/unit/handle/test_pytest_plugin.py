"""The pytest plugin (mockbroker/pytest_plugin.py, docs/pytest.md), tested through ``pytester``:
generated test files use each fixture with a real client over loopback, and the outer test reads
their outcomes and reports."""

from __future__ import annotations

import importlib

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[3]
# Plugins of this environment the generated runs do not need: skipping them saves each pytest
# process (the xdist controller and its workers) seconds of imports.
LEAN = ("-p", "no:cacheprovider", "-p", "no:schemathesis", "-p", "no:anyio", "-p", "no:hypothesispytest")

# The generated files' shared imports and helpers: a Metadata round trip with the project's raw client.
HEADER = '''
import select, time
import pytest
from protocol.client import RawKafkaClient


def metadata(bootstrap, topics=None, client_id="raw-client"):
    """Metadata v12; topics are auto-created (asked again while they are not there: Kafka 4.4 answers the request
    that creates one UNKNOWN_TOPIC_OR_PARTITION, and LEADER_NOT_AVAILABLE until it has a leader)."""
    with RawKafkaClient.connect(bootstrap, client_id=client_id) as c:
        body = {"topics": None if topics is None else [{"name": t} for t in topics],
                "allow_auto_topic_creation": True}
        for _ in range(20):
            resp = c.request(3, 12, body)
            if all(t.error_code not in (3, 5) for t in resp.topics):
                return resp
            time.sleep(0.05)
        return resp
'''


def write(pytester: pytest.Pytester, body: str, name: str = "test_generated") -> None:
    pytester.makepyfile(**{name: HEADER + textwrap.dedent(body)})


def test_loading_the_plugin_imports_no_broker():
    """pytest loads the plugin before any conftest: it must not import protocol.codec (whose
    PROTOCOL_STRICT_KEYS this project's conftest sets first) nor the broker."""
    code = ("import sys, mockbroker.pytest_plugin\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mockbroker', 'protocol', 'kio')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert json.loads(out.replace("'", '"')) == ["mockbroker", "mockbroker.pytest_plugin"]


def test_marker_options_and_fixtures_over_loopback(pytester: pytest.Pytester):
    """The marker (brokers, config; module marker merged with the test's), --mockbroker-config
    defaults, the ManualClock fixture and the factory, each with a real round trip."""
    write(pytester, '''
        pytestmark = pytest.mark.mockbroker(config={"num.partitions": 4})

        def test_defaults_from_the_command_line(mockbroker):
            topic = metadata(mockbroker.bootstrap_servers, ["auto"]).topics[0]
            assert len(topic.partitions) == 4  # the module's marker beats --mockbroker-config
            assert mockbroker.config.get("default.replication.factor") == 1

        @pytest.mark.mockbroker(brokers=3, config={"default.replication.factor": 3})
        def test_three_brokers(mockbroker):
            resp = metadata(mockbroker.bootstrap_servers, ["replicated"])
            assert sorted(b.node_id for b in resp.brokers) == [0, 1, 2]
            assert len(mockbroker.bootstrap_servers.split(",")) == 3
            (topic,) = resp.topics
            assert len(topic.partitions) == 4 and all(len(p.replica_nodes) == 3 for p in topic.partitions)

        @pytest.mark.mockbroker(brokers=2)
        def test_factory_takes_marker_defaults_and_overrides(mockbroker_factory):
            a = mockbroker_factory()
            b = mockbroker_factory(config={"num.partitions": 7}, brokers=1)
            assert len(metadata(a.bootstrap_servers).brokers) == 2
            assert len(metadata(b.bootstrap_servers).brokers) == 1
            assert len(metadata(b.bootstrap_servers, ["seven"]).topics[0].partitions) == 7
            assert a.bootstrap_servers != b.bootstrap_servers
            STARTED.extend([a.bootstrap_servers, b.bootstrap_servers])

        STARTED = []

        def test_factory_brokers_were_stopped():
            assert len(STARTED) == 2
            for bootstrap in STARTED:
                host, port = bootstrap.split(",")[0].rsplit(":", 1)
                with pytest.raises(OSError):
                    RawKafkaClient(host, int(port), timeout=2)

        def test_manual_clock_moves_only_with_advance(mockbroker_manual):
            from tests_helpers_fetch import fetch_body
            b = mockbroker_manual
            b.create_topic("idle", 1)
            with RawKafkaClient.connect(b.bootstrap_servers) as c:
                corr = c.send(1, 12, fetch_body("idle", max_wait_ms=500))
                b.wait_for(lambda: b.purgatory_gauges()["Fetch"]["NumDelayedOperations"] == 1, timeout=5)
                b.advance(499)
                assert not select.select([c.sock], [], [], 0.3)[0]  # time stands still meanwhile
                assert b.journal_of_test(api="Fetch") == []
                b.advance(1)
                assert c.response(1, 12, corr).responses[0].partitions[0].error_code == 0
            (rec,) = b.journal_of_test(api="Fetch")
            assert rec["completed_by"] == "timeout" and rec["parked_ms"] == 500

        def test_system_clock_broker_refuses_advance(mockbroker):
            with pytest.raises(TypeError):
                mockbroker.advance(1)
    ''')
    pytester.makepyfile(tests_helpers_fetch='''
        def fetch_body(topic, max_wait_ms):
            return {"replica_id": -1, "max_wait": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20,
                    "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                    "topics": [{"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0,
                                "partition_max_bytes": 1 << 20, "log_start_offset": -1,
                                "current_leader_epoch": -1}]}],
                    "forgotten_topics_data": [], "rack_id": ""}
    ''')
    result = pytester.runpytest("--strict-markers", "-p", "no:cacheprovider",
                                "--mockbroker-config", "num.partitions=9",
                                "--mockbroker-config", "default.replication.factor=1")
    result.assert_outcomes(passed=6)


def test_ini_defaults_and_a_wrong_marker(pytester: pytest.Pytester):
    pytester.makeini("[pytest]\nmockbroker_config =\n    num.partitions=6\n    mock.num.brokers=2\n")
    write(pytester, '''
        def test_ini_defaults(mockbroker_session):
            assert len(metadata(mockbroker_session.bootstrap_servers).brokers) == 2
            cfg = mockbroker_session.config  # the fixtures' own defaults: no initial rebalance delay
            assert (cfg["group.initial.rebalance.delay.ms"], cfg["group.streams.initial.rebalance.delay.ms"]) == (0, 0)
            assert len(metadata(mockbroker_session.bootstrap_servers, ["six"]).topics[0].partitions) == 6

        @pytest.mark.mockbroker(partitions=3)
        def test_wrong_marker(mockbroker):
            pass

        @pytest.mark.mockbroker(brokers=3)
        def test_marker_on_the_session_broker(mockbroker_session):
            assert len(metadata(mockbroker_session.bootstrap_servers).brokers) == 2  # the marker did nothing
    ''')
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1, warnings=1)
    assert "@pytest.mark.mockbroker does not configure mockbroker_session" in result.stdout.str()
    assert "test_wrong_marker: @pytest.mark.mockbroker: unknown keywords ['partitions']; known: ('config', " \
           "'brokers')" in result.stdout.str()


def test_faults_quotas_and_throttle_helper_with_kafka_python(pytester: pytest.Pytester):
    write(pytester, '''
        from kafka import KafkaConsumer, KafkaProducer, TopicPartition

        def test_injected_errors_are_retried(mockbroker):
            mockbroker.create_topic("orders", 1)
            rule = mockbroker.inject(api="Produce", errors=["NOT_LEADER_OR_FOLLOWER"] * 2)
            producer = KafkaProducer(bootstrap_servers=mockbroker.bootstrap_servers, retries=5,
                                     retry_backoff_ms=10, client_id="shop")
            producer.send("orders", b"one").get(timeout=10)
            producer.close()
            (fault,) = mockbroker.faults()
            assert fault["id"] == rule["id"] and fault["fired"] == 2
            produced = mockbroker.journal_of_test(api="Produce")
            assert [r["partitions"][0]["error_code"] for r in produced] == [6, 6, 0]
            consumer = KafkaConsumer(bootstrap_servers=mockbroker.bootstrap_servers,
                                     auto_offset_reset="earliest", consumer_timeout_ms=5000)
            consumer.assign([TopicPartition("orders", 0)])
            assert [m.value for m in consumer] == [b"one"]
            consumer.close()

        def test_quota_throttles_and_the_helper_waits_for_it(mockbroker):
            mockbroker.set_quota(client_id="slow", producer_byte_rate=1024)
            assert mockbroker.quotas(client_id="slow")
            producer = KafkaProducer(bootstrap_servers=mockbroker.bootstrap_servers, client_id="slow",
                                     acks=1, max_request_size=1 << 20)
            producer.send("q", b"x" * 40_000).get(timeout=10)
            events = mockbroker.wait_for_throttle_events(1, client_id="slow", timeout=10)
            assert events[0]["throttle_ms"] > 0 and events[0]["client_id"] == "slow"
            assert events[0]["quota_type"] == "Produce" and events[0]["api_key"] == 0
            assert mockbroker.throttle_events("someone-else") == []
            producer.close(timeout=1)

        def test_the_wait_helper_is_bounded(mockbroker):
            with pytest.raises(AssertionError, match=r"1 throttle event\\(s\\) of client_id=None not seen within 0.2 s \\(saw 0\\)"):
                mockbroker.wait_for_throttle_events(1, timeout=0.2)
    ''')
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


def test_failure_report_has_the_broker_log_and_the_tests_requests(pytester: pytest.Pytester):
    """A failing test's report holds its brokers' log lines and last requests; a passing test's has
    none; a session broker's section holds the failing test's requests only."""
    write(pytester, '''
        def test_fails_after_a_dropped_request(mockbroker):
            mockbroker.inject(api="Metadata", action="drop", client_id="dropped")
            metadata(mockbroker.bootstrap_servers, client_id="answered")
            with pytest.raises(OSError):  # no answer: the client's socket times out
                with RawKafkaClient.connect(mockbroker.bootstrap_servers, client_id="dropped", timeout=0.5) as c:
                    c.request(3, 12, {"topics": None})
            assert False, "deliberately failing"

        def test_passes(mockbroker):
            metadata(mockbroker.bootstrap_servers, client_id="passing-client")

        def test_session_first(mockbroker_session):
            metadata(mockbroker_session.bootstrap_servers, client_id="earlier-test")

        def test_session_second_fails(mockbroker_session):
            for _ in range(5):
                metadata(mockbroker_session.bootstrap_servers, client_id="failing-test")
            assert len(mockbroker_session.journal_of_test()) == 5
            assert False, "deliberately failing too"

        def test_without_our_fixtures_fails():
            import logging
            assert logging.getLogger("mockbroker").level == logging.NOTSET  # left alone
            assert False, "no broker here"

        def test_fixture_by_name_fails(request):
            b = request.getfixturevalue("mockbroker")
            metadata(b.bootstrap_servers, client_id="by-name")
            assert False, "a broker asked for by name"

        def test_factory_brokers_fail(mockbroker_factory, mockbroker_manual):
            for _ in range(2):
                metadata(mockbroker_factory().bootstrap_servers, client_id="from-factory")
            assert False, "two factory brokers and a manual one"
    ''')
    result = pytester.runpytest("-p", "no:cacheprovider", "--mockbroker-report-requests", "3")
    result.assert_outcomes(passed=2, failed=5)
    out = result.stdout.str()
    first = out[out.index("_ test_fails_after_a_dropped_request _"):out.index("_ test_session_second_fails _")]
    second = out[out.index("_ test_session_second_fails _"):out.index("_ test_without_our_fixtures_fails _")]
    third = out[out.index("_ test_without_our_fixtures_fails _"):out.index("_ test_fixture_by_name_fails _")]
    fourth = out[out.index("_ test_fixture_by_name_fails _"):out.index("_ test_factory_brokers_fail _")]
    fifth = out[out.index("_ test_factory_brokers_fail _"):out.index("short test summary")]
    assert "no broker here" in third and "mockbroker requests" not in third and "mockbroker log" not in third
    assert re.search(r"by-name +METADATA v12", fourth) and "mockbroker log: mockbroker 127.0.0.1:" in fourth
    # each section names the fixture its broker came from; the factory's brokers are numbered
    assert re.search(r"mockbroker log: mockbroker_manual 127\.0\.0\.1:\d+", fifth)
    factory_logs = re.findall(r"mockbroker log: mockbroker_factory #(\d+) 127\.0\.0\.1:\d+", fifth)
    assert len(set(factory_logs)) == 2, fifth
    # the per-test broker: its log (start-up, the dropped request) and its requests
    assert re.search(r"-+ mockbroker log: mockbroker 127\.0\.0\.1:\d+ -+", first)
    assert "broker 0 listening on" in first and "dropping METADATA" in first.replace("Metadata", "METADATA")
    assert re.search(r"mockbroker requests: mockbroker 127\.0\.0\.1:\d+ \(last 2 of 2 in this test\)", first)
    assert re.search(r"answered +METADATA v12 .* response", first)
    assert re.search(r"dropped +METADATA v12 .* (dropped|closed)", first)
    # the session broker: bounded to 3 of this test's 5 requests, none of the earlier test's
    assert "mockbroker requests: mockbroker_session" in second and "(last 3 of 5 in this test)" in second
    assert len(re.findall(r"^\d+ +[\d.]+ +0 +\d+ +failing-test +METADATA v12", second, re.M)) == 3
    assert "earlier-test" not in out
    assert "passing-client" not in out


def test_xdist_gives_each_worker_its_own_session_broker(pytester: pytest.Pytester):
    out_dir = pytester.mkdir("seen")
    write(pytester, f'''
        import os, pathlib

        @pytest.mark.parametrize("n", range(8))
        def test_session_broker(mockbroker_session, n):
            resp = metadata(mockbroker_session.bootstrap_servers, [f"t{{n}}"])
            assert resp.topics[0].error_code == 0 and resp.topics[0].name == f"t{{n}}"
            worker = os.environ["PYTEST_XDIST_WORKER"]
            pathlib.Path({str(out_dir)!r}, f"{{n}}").write_text(f"{{worker}} {{mockbroker_session.bootstrap_servers}}")
    ''')
    result = pytester.runpytest_subprocess("-n", "2", "-p", "xdist", *LEAN, timeout=120)
    result.assert_outcomes(passed=8)
    seen: dict[str, set[str]] = {}
    for f in out_dir.iterdir():
        worker, bootstrap = f.read_text().split()
        seen.setdefault(worker, set()).add(bootstrap)
    assert len(list(out_dir.iterdir())) == 8
    assert sorted(seen) == ["gw0", "gw1"]
    assert all(len(b) == 1 for b in seen.values()), seen  # one broker per worker for the session
    assert seen["gw0"] != seen["gw1"]


DOCS_WITH_EXAMPLES = ("docs/pytest.md", "docs/security.md", "docs/share-groups.md", "README.md")


def _doc_blocks() -> list[tuple[str, str]]:
    """The example test files of DOCS_WITH_EXAMPLES: python blocks whose first line is ``# test_*.py``."""
    text = "".join((ROOT / doc).read_text() for doc in DOCS_WITH_EXAMPLES)
    blocks = re.findall(r"```python\n(# (test_\w+\.py)\n.*?)```", text, re.S)
    return [(name, code) for code, name in blocks]


def test_the_docs_examples_run(pytester: pytest.Pytester):
    blocks = _doc_blocks()
    assert {name for name, _ in blocks} >= {"test_kafka_python.py", "test_confluent_kafka.py",
                                            "test_readme_kafka_python.py", "test_readme_confluent_kafka.py",
                                            "test_mtls.py", "test_acls.py", "test_share_redelivery.py"}
    assert len({name for name, _ in blocks}) == len(blocks)
    if not hasattr(importlib.import_module("confluent_kafka"), "ShareConsumer"):  # releases before its preview lack it
        blocks = [(name, code) for name, code in blocks if name != "test_share_redelivery.py"]
    for name, code in blocks:
        pytester.path.joinpath(name).write_text(code)
    result = pytester.runpytest("--strict-markers", "-p", "no:cacheprovider", *[n for n, _ in blocks])
    result.assert_outcomes(passed=sum(len(re.findall(r"^def test_", c, re.M)) for _, c in blocks))
