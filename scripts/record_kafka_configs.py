"""Record what a real Kafka says about its configurations into mockbroker/data/kafka-<version>-configs.json,
the data of ``mockbroker/server/config_catalog.py`` (DescribeConfigs' entries, IncrementalAlterConfigs' and
AlterConfigs' checks).

It starts a single-node Kafka (bench/brokers.py's ``RealKafka``, the side-by-side tests' broker) and records:

* ``defs``: Kafka's own config definitions (scripts/java/KafkaConfigDefs.java, in Java's source-file mode
  against the release's classpath): per topic, broker, group and client-metrics key its type, default,
  validator and whether it is internal; the dynamic broker configs and their update mode; the broker
  synonyms of broker, topic and group configs;
* ``describe``: DescribeConfigs v4 (synonyms and documentation asked) of a topic without overrides, a topic
  with some, the broker, the cluster-default broker resource, a group and a client-metrics resource;
* ``cases``: ``CASES`` below replayed in order -- IncrementalAlterConfigs v1 and AlterConfigs v2, some
  validate-only -- each with the error code and message Kafka answered and, after a change, the resource's
  entries that are not defaults (what it now holds);
* ``properties``: the broker's static properties (what the harness set, so the catalogue can tell them
  from Kafka's defaults).

    python scripts/record_kafka_configs.py                 # Kafka 4.4.0 -> mockbroker/data/kafka-4.4.0-configs.json
    python scripts/record_kafka_configs.py --version 4.3.1 --out /tmp/x.json

Needs java and mvn (the jars come from Maven Central, as bench/brokers.py resolves them).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import brokers  # noqa: E402 - bench/brokers.py

from protocol.client import RawKafkaClient  # noqa: E402

TOPIC, BROKER, CLIENT_METRICS, GROUP = 2, 4, 16, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
NODE = "1"  # RealKafka's node id
DEFAULTS_TOPIC = "catalogue-defaults"
OVERRIDES_TOPIC = "catalogue-overrides"
OVERRIDES = {"retention.ms": "123456", "cleanup.policy": "compact", "max.message.bytes": "200000"}
ALTERED_TOPIC = "catalogue-altered"
GROUP_NAME = "catalogue-group"
METRICS_NAME = "catalogue-metrics"

# (id, api, resource type, resource name, [(op, name, value)] (api "legacy": [(name, value)]), validate only).
# Replayed in order on one broker: later cases see what earlier ones changed.
CASES: list[tuple[str, str, int, str, list[Any], bool]] = [
    # topics
    ("topic-set-validate", "incremental", TOPIC, ALTERED_TOPIC, [(SET, "retention.ms", "1000")], True),
    ("topic-set", "incremental", TOPIC, ALTERED_TOPIC, [(SET, "retention.ms", "1000"), (SET, "segment.ms", "60000")],
     False),
    ("topic-not-a-number", "incremental", TOPIC, ALTERED_TOPIC, [(SET, "retention.ms", "abc")], False),
    ("topic-below-range", "incremental", TOPIC, ALTERED_TOPIC, [(SET, "retention.ms", "-5")], False),
    ("topic-unknown-key", "incremental", TOPIC, ALTERED_TOPIC, [(SET, "no.such.config", "1")], False),
    ("topic-bad-choice", "incremental", TOPIC, ALTERED_TOPIC, [(SET, "cleanup.policy", "shred")], False),
    ("topic-bad-string", "incremental", TOPIC, ALTERED_TOPIC, [(SET, "message.timestamp.type", "Now")], False),
    ("topic-bad-boolean", "incremental", TOPIC, ALTERED_TOPIC, [(SET, "preallocate", "yes")], False),
    ("topic-bad-double", "incremental", TOPIC, ALTERED_TOPIC, [(SET, "min.cleanable.dirty.ratio", "1.5")], False),
    ("topic-append-list", "incremental", TOPIC, ALTERED_TOPIC, [(APPEND, "cleanup.policy", "compact")], False),
    ("topic-append-again", "incremental", TOPIC, ALTERED_TOPIC, [(APPEND, "cleanup.policy", "compact")], False),
    ("topic-subtract-list", "incremental", TOPIC, ALTERED_TOPIC, [(SUBTRACT, "cleanup.policy", "delete")], False),
    ("topic-append-not-list", "incremental", TOPIC, ALTERED_TOPIC, [(APPEND, "retention.ms", "5")], False),
    ("topic-subtract-not-list", "incremental", TOPIC, ALTERED_TOPIC, [(SUBTRACT, "retention.ms", "5")], False),
    ("topic-delete", "incremental", TOPIC, ALTERED_TOPIC, [(DELETE, "segment.ms", None)], False),
    ("topic-delete-unset", "incremental", TOPIC, ALTERED_TOPIC, [(DELETE, "retention.bytes", None)], False),
    ("topic-delete-unknown", "incremental", TOPIC, ALTERED_TOPIC, [(DELETE, "no.such.config", None)], False),
    ("topic-set-null", "incremental", TOPIC, ALTERED_TOPIC, [(SET, "retention.ms", None)], False),
    ("topic-same-key-twice", "incremental", TOPIC, ALTERED_TOPIC,
     [(SET, "retention.ms", "1"), (SET, "retention.ms", "2")], False),
    ("topic-bad-op", "incremental", TOPIC, ALTERED_TOPIC, [(7, "retention.ms", "2")], False),
    ("topic-lag-conflict", "incremental", TOPIC, ALTERED_TOPIC,
     [(SET, "min.compaction.lag.ms", "10"), (SET, "max.compaction.lag.ms", "5")], False),
    ("topic-unknown-topic", "incremental", TOPIC, "catalogue-nope", [(SET, "retention.ms", "1")], False),
    ("topic-bad-name", "incremental", TOPIC, "bad name!", [(SET, "retention.ms", "1")], False),
    ("topic-legacy-replace", "legacy", TOPIC, ALTERED_TOPIC, [("retention.bytes", "1048576")], False),
    ("topic-legacy-unknown", "legacy", TOPIC, ALTERED_TOPIC, [("no.such.config", "1")], False),
    ("topic-legacy-null", "legacy", TOPIC, ALTERED_TOPIC, [("retention.bytes", None)], False),
    # brokers: this one, another id, the cluster default
    ("broker-set-validate", "incremental", BROKER, NODE, [(SET, "log.retention.ms", "3600000")], True),
    ("broker-set", "incremental", BROKER, NODE, [(SET, "log.retention.ms", "3600000")], False),
    ("broker-read-only", "incremental", BROKER, NODE, [(SET, "auto.create.topics.enable", "false")], False),
    ("broker-unknown-key", "incremental", BROKER, NODE, [(SET, "no.such.config", "1")], False),
    ("broker-not-a-number", "incremental", BROKER, NODE, [(SET, "log.retention.ms", "abc")], False),
    ("broker-below-range", "incremental", BROKER, NODE, [(SET, "log.cleaner.backoff.ms", "-1")], False),
    ("broker-cleaner-threads-zero", "incremental", BROKER, NODE, [(SET, "log.cleaner.threads", "0")], False),
    ("broker-bad-boolean", "incremental", BROKER, NODE, [(SET, "log.preallocate", "maybe")], False),
    ("broker-bad-choice", "incremental", BROKER, NODE, [(SET, "log.cleanup.policy", "shred")], False),
    ("broker-other-id", "incremental", BROKER, "7", [(SET, "log.retention.ms", "1")], False),
    ("broker-not-an-id", "incremental", BROKER, "one", [(SET, "log.retention.ms", "1")], False),
    ("broker-default-set", "incremental", BROKER, "", [(SET, "log.retention.ms", "7200000"),
                                                       (SET, "message.max.bytes", "2000000")], False),
    ("broker-default-per-broker-only", "incremental", BROKER, "",
     [(SET, "listener.name.plaintext.ssl.keystore.location", "/tmp/ks")], False),
    ("broker-delete", "incremental", BROKER, NODE, [(DELETE, "log.retention.ms", None)], False),
    ("broker-default-delete", "incremental", BROKER, "", [(DELETE, "message.max.bytes", None)], False),
    ("broker-append-list", "incremental", BROKER, "", [(APPEND, "log.cleanup.policy", "compact")], False),
    ("broker-legacy-replace", "legacy", BROKER, "", [("log.retention.ms", "9000000")], False),
    ("broker-legacy-read-only", "legacy", BROKER, NODE, [("num.partitions", "3")], False),
    # groups
    ("group-set", "incremental", GROUP, GROUP_NAME, [(SET, "consumer.session.timeout.ms", "50000")], False),
    ("group-below-broker-min", "incremental", GROUP, GROUP_NAME, [(SET, "consumer.session.timeout.ms", "1")], False),
    ("group-above-broker-max", "incremental", GROUP, GROUP_NAME,
     [(SET, "consumer.heartbeat.interval.ms", "900000")], False),
    ("group-unknown-key", "incremental", GROUP, GROUP_NAME, [(SET, "no.such.config", "1")], False),
    ("group-not-a-number", "incremental", GROUP, GROUP_NAME, [(SET, "share.delivery.count.limit", "x")], False),
    ("group-empty-name", "incremental", GROUP, "", [(SET, "consumer.session.timeout.ms", "50000")], False),
    ("group-legacy", "legacy", GROUP, GROUP_NAME, [("consumer.session.timeout.ms", "50000")], False),
    # client metrics
    ("metrics-set", "incremental", CLIENT_METRICS, METRICS_NAME,
     [(SET, "metrics", "org.apache.kafka.producer."), (SET, "interval.ms", "1000")], False),
    ("metrics-below-range", "incremental", CLIENT_METRICS, METRICS_NAME, [(SET, "interval.ms", "10")], False),
    ("metrics-unknown-key", "incremental", CLIENT_METRICS, METRICS_NAME, [(SET, "no.such.config", "1")], False),
    ("metrics-bad-match", "incremental", CLIENT_METRICS, METRICS_NAME, [(SET, "match", "no_such_key=x")], False),
    ("metrics-empty-name", "incremental", CLIENT_METRICS, "", [(SET, "interval.ms", "1000")], False),
    ("metrics-append", "incremental", CLIENT_METRICS, METRICS_NAME,
     [(APPEND, "metrics", "org.apache.kafka.consumer.")], False),
    ("metrics-delete", "incremental", CLIENT_METRICS, METRICS_NAME, [(DELETE, "interval.ms", None)], False),
]

NOT_DEFAULT_SOURCES = {1, 2, 3, 7, 8}  # topic, dynamic broker, dynamic default broker, client metrics, group
SETTLE_S = 0.5  # an alteration reaches the broker through the controller's metadata log


def entries(result: Any) -> list[dict[str, Any]]:
    return [{"name": c.name, "value": c.value, "read_only": c.read_only, "source": int(c.config_source),
             "sensitive": c.is_sensitive, "type": int(c.config_type), "documentation": c.documentation,
             "synonyms": [[s.name, s.value, int(s.source)] for s in c.synonyms]} for c in result.configs]


def describe(c: RawKafkaClient, resources: list[tuple[int, str]]) -> list[dict[str, Any]]:
    r = c.request(32, 4, {"resources": [{"resource_type": t, "resource_name": n, "configuration_keys": None}
                                        for t, n in resources],
                          "include_synonyms": True, "include_documentation": True})
    return [{"resource_type": int(x.resource_type), "resource_name": x.resource_name,
             "error_code": int(x.error_code), "error_message": x.error_message, "entries": entries(x)}
            for x in r.results]


def settled(c: RawKafkaClient, rtype: int, rname: str) -> list[list[Any]]:
    """The resource's entries that are not defaults, once two reads SETTLE_S apart agree."""
    def read() -> list[list[Any]]:
        time.sleep(SETTLE_S)
        after = describe(c, [(rtype, rname)])[0]
        return sorted([e["name"], e["value"], e["source"], e["synonyms"]] for e in after["entries"]
                      if e["source"] in NOT_DEFAULT_SOURCES)
    last, now = None, read()
    while now != last:
        last, now = now, read()
    return now


def create_topic(c: RawKafkaClient, name: str, configs: dict[str, str]) -> None:
    r = c.request(19, 7, {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
                                      "configs": [{"name": k, "value": v} for k, v in configs.items()]}],
                          "timeout": 30000, "validate_only": False})
    t = r.topics[0]
    if t.error_code:
        raise RuntimeError(f"CreateTopics {name}: {t.error_code!r} {t.error_message}")


def alter(c: RawKafkaClient, api: str, rtype: int, rname: str, ops: list[Any], validate: bool) -> dict[str, Any]:
    if api == "incremental":
        body = {"resources": [{"resource_type": rtype, "resource_name": rname, "configs": [
            {"name": n, "config_operation": op, "value": v} for op, n, v in ops]}], "validate_only": validate}
        r = c.request(44, 1, body).responses[0]
    else:
        body = {"resources": [{"resource_type": rtype, "resource_name": rname, "configs": [
            {"name": n, "value": v} for n, v in ops]}], "validate_only": validate}
        r = c.request(33, 2, body).responses[0]
    return {"error_code": int(r.error_code), "error_message": r.error_message}


def kafka_defs(cp: str) -> dict[str, Any]:
    """scripts/java/KafkaConfigDefs.java's output against the Kafka classpath ``cp``."""
    out = subprocess.run(["java", "-cp", cp, str(ROOT / "scripts" / "java" / "KafkaConfigDefs.java")],
                         check=True, capture_output=True, text=True, timeout=300).stdout
    return json.loads(out)


def capture(bootstrap: str, node: str = NODE) -> dict[str, Any]:
    """The described resources and the replayed ``CASES`` of the broker at ``bootstrap`` (node id ``node``),
    after creating the topics they name."""
    with RawKafkaClient.connect(bootstrap, timeout=30) as c:
        create_topic(c, DEFAULTS_TOPIC, {})
        create_topic(c, OVERRIDES_TOPIC, OVERRIDES)
        create_topic(c, ALTERED_TOPIC, {})
        described = describe(c, [(TOPIC, DEFAULTS_TOPIC), (TOPIC, OVERRIDES_TOPIC), (BROKER, node), (BROKER, ""),
                                 (GROUP, GROUP_NAME), (CLIENT_METRICS, METRICS_NAME)])
        cases = []
        for case_id, api, rtype, rname, ops, validate in CASES:
            rname = node if rtype == BROKER and rname == NODE else rname
            out = {"id": case_id, "api": api, "resource_type": rtype, "resource_name": rname,
                   "ops": [list(op) for op in ops], "validate_only": validate,
                   **alter(c, api, rtype, rname, ops, validate)}
            if not validate and out["error_code"] == 0:
                out["after"] = settled(c, rtype, rname)
            cases.append(out)
    return {"describe": described, "cases": cases}


def record(cp: str, version: str) -> dict[str, Any]:
    defs = kafka_defs(cp)
    kafka = brokers.RealKafka(cp, nodes=1, version=version)
    kafka.start()
    try:
        captured = capture(kafka.bootstrap)
        return {"kafka_version": version, "properties": kafka.properties(kafka.nodes[0]), "defs": defs,
                **captured,
                "names": {"node": NODE, "defaults_topic": DEFAULTS_TOPIC, "overrides_topic": OVERRIDES_TOPIC,
                          "overrides": OVERRIDES, "altered_topic": ALTERED_TOPIC, "group": GROUP_NAME,
                          "client_metrics": METRICS_NAME}}
    finally:
        kafka.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--version", default=brokers.KAFKA_VERSION)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    out = args.out or ROOT / "mockbroker" / "data" / f"kafka-{args.version}-configs.json"
    data = record(brokers.kafka_classpath(args.version), args.version)
    # the temporary directories of this run are not Kafka's: keep the recording reproducible
    root = str(Path(data["properties"]["log.dirs"]).parent.parent)
    text = json.dumps(data, indent=1, sort_keys=False).replace(root, "/tmp/kafka")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n")
    print(f"{out}: {len(data['describe'])} resources described, {len(data['cases'])} cases")


if __name__ == "__main__":
    main()
