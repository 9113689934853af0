"""Side by side with a real Kafka 4.4.0: the config catalogue answers DescribeConfigs and every alteration of
scripts/record_kafka_configs.py's ``CASES`` as the live broker does (error codes, messages, what each
resource holds afterwards), and the checked-in recording (mockbroker/data/kafka-4.4.0-configs.json) is what
that Kafka says today.  The live Kafka is asked over the wire (DescribeConfigs v4, IncrementalAlterConfigs
v1, AlterConfigs v2); mockbroker's catalogue directly, as its handlers will (``ConfigCatalog.describe``,
``incremental_alter``, ``alter``)."""

from __future__ import annotations

import importlib.util
import sys

from mockbroker import MockBroker
from mockbroker.server.config_catalog import BROKER, ConfigCatalog
from mockbroker.config.config_defs import load
from tests.integration.realkafka import ROOT, realkafka  # noqa: F401 - a fixture

_spec = importlib.util.spec_from_file_location("record_kafka_configs", ROOT / "scripts" / "record_kafka_configs.py")
assert _spec is not None and _spec.loader is not None
recorder = importlib.util.module_from_spec(_spec)
sys.modules["record_kafka_configs"] = recorder
_spec.loader.exec_module(recorder)

NODE = 1  # RealKafka's node id
STATIC = 4


def mockbroker_capture() -> dict:
    """What ``recorder.capture`` records, from a fresh mockbroker's catalogue."""
    with MockBroker(config={"node.id": NODE}) as b:
        b.create_topic(recorder.DEFAULTS_TOPIC, 1)
        b.create_topic(recorder.OVERRIDES_TOPIC, 1, configs=recorder.OVERRIDES)
        b.create_topic(recorder.ALTERED_TOPIC, 1)

        def run(c):
            cat = ConfigCatalog(c.config, c.metadata)
            resources = [(recorder.TOPIC, recorder.DEFAULTS_TOPIC), (recorder.TOPIC, recorder.OVERRIDES_TOPIC),
                         (BROKER, str(NODE)), (BROKER, ""), (recorder.GROUP, recorder.GROUP_NAME),
                         (recorder.CLIENT_METRICS, recorder.METRICS_NAME)]
            described = []
            for rtype, rname in resources:
                r = cat.describe(NODE, rtype, rname, None, True, True)
                described.append({"resource_type": rtype, "resource_name": rname, "error_code": int(r.error),
                                  "entries": [{"name": e["name"], "value": e["value"], "source": e["config_source"],
                                               "read_only": e["read_only"], "sensitive": e["is_sensitive"],
                                               "type": e["config_type"], "documentation": e["documentation"],
                                               "synonyms": [[s["name"], s["value"], s["source"]]
                                                            for s in e["synonyms"]]}
                                              for e in r.configs]})
            cases = []
            for case_id, api, rtype, rname, ops, validate in recorder.CASES:
                rname = str(NODE) if rtype == BROKER and rname == recorder.NODE else rname
                alter = cat.incremental_alter if api == "incremental" else cat.alter
                r = alter(NODE, rtype, rname, [tuple(op) for op in ops], validate)
                case = {"id": case_id, "error_code": int(r.error), "error_message": r.message}
                if not validate and r.error == 0:
                    d = cat.describe(NODE, rtype, rname, None, True, False)
                    case["after"] = sorted([e["name"], e["value"], e["config_source"],
                                            [[s["name"], s["value"], s["source"]] for s in e["synonyms"]]]
                                           for e in d.configs if e["config_source"] in recorder.NOT_DEFAULT_SOURCES)
                cases.append(case)
            return {"describe": described, "cases": cases}

        return b.call(run)


def comparable(entry: dict) -> dict:
    """An entry, without what the broker's environment sets (a static config on either side)."""
    out = dict(entry)
    if any(s[2] == STATIC for s in entry["synonyms"]):
        for k in ("value", "source", "synonyms"):
            out.pop(k)
    return out


def test_the_catalogue_answers_as_a_live_kafka(realkafka):  # noqa: F811 - the fixture
    live = recorder.capture(realkafka.bootstrap, node=str(NODE))
    mine = mockbroker_capture()
    assert [(c["id"], c["error_code"], c["error_message"], c.get("after")) for c in mine["cases"]] == \
        [(c["id"], c["error_code"], c["error_message"], c.get("after")) for c in live["cases"]]
    for m, k in zip(mine["describe"], live["describe"]):
        assert (m["resource_type"], m["resource_name"], m["error_code"]) == \
            (k["resource_type"], k["resource_name"], k["error_code"])
        assert [e["name"] for e in m["entries"]] == [e["name"] for e in k["entries"]]
        static_somewhere = {e["name"] for e in m["entries"] + k["entries"]
                            if any(s[2] == STATIC for s in e["synonyms"])}
        mine_entries = [comparable(e) if e["name"] in static_somewhere else e for e in m["entries"]]
        live_entries = [comparable(e) if e["name"] in static_somewhere else e for e in k["entries"]]
        for a, b in zip(mine_entries, live_entries):
            if a["name"] in static_somewhere:
                a, b = ({x: v[x] for x in ("name", "read_only", "sensitive", "type", "documentation")} for v in (a, b))
            assert a == b


def test_the_recording_is_what_kafka_says(realkafka):  # noqa: F811 - the fixture
    """The checked-in definitions are the live release's (re-record with scripts/record_kafka_configs.py)."""
    data = load().data
    assert data["kafka_version"] == realkafka.version
    assert recorder.kafka_defs(realkafka.cp) == data["defs"]
