"""Write ``protocol/kafka_releases.py``: the ApiVersions real Kafka brokers answer, one release each.

    python scripts/record_kafka_releases.py                  # record every release again (3.7.2 ... 4.4.0)
    python scripts/record_kafka_releases.py 4.4.0 4.5.0      # record these (the others are kept)
    python scripts/record_kafka_releases.py --show           # print the table as recorded

For each Kafka version: Maven resolves its broker (bench/realkafka/pom.xml, ``-Dkafka.version``), a
single-node KRaft broker+controller is formatted and started as bench/brokers.py's ``RealKafka``
does (static quorum, Kafka's defaults otherwise: ``kafka-storage format`` finalizes each feature
at the release's latest production level), and a client asks it ApiVersions at the highest version
the broker takes (first v3, then the broker's own maximum: v3 up to 3.8, v4 from 3.9, v5 from 4.4)
once it answers Metadata.  Recorded: every API key with its advertised min/max, the supported
features (min/max) and the finalized features (level) with their epoch, the metadata log's offset
the broker's image was at then (the bootstrap and startup records and the NoOpRecords of the
seconds it took, so a new recording may differ by a few).  The same properties and StorageTool
arguments serve every release from 3.7 (3.x's KRaft mode takes them; ``RealKafka`` leaves out the
share coordinator's before 4.0 and gives 3.x's log4j 1 its quiet configuration).  ``protocol/registry.py`` reads the table (``KAFKA_RELEASES``, ``KAFKA_FEATURES``);
``tests/unit/protocol/test_releases.py`` checks it against the schemas.  Needs java and mvn (and Maven
Central, once per release).
"""

from __future__ import annotations

import argparse
import ast
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

TABLE = ROOT / "protocol" / "kafka_releases.py"
# the latest patch release of each line a user may still run (Maven Central, 2026-11)
DEFAULT_VERSIONS = ("3.7.2", "3.8.1", "3.9.2", "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0")
JVM_OPTS = ["-Xms512m", "-Xmx512m", "-XX:+UseG1GC", "-Djava.awt.headless=true"]


def ask_api_versions(bootstrap: str) -> tuple[int, Any]:
    """(request version, ApiVersions response) at the broker's highest ApiVersions version."""
    from protocol.client import RawKafkaClient

    body = {"client_software_name": "mockbroker-record", "client_software_version": "1"}
    with RawKafkaClient.connect(bootstrap, client_id="record-kafka-releases") as c:
        first = c.request(18, 3, body)
        top = next(k.max_version for k in first.api_keys if k.api_key == 18)
        return top, c.request(18, top, body)


def record(version: str) -> dict[str, Any]:
    import brokers  # bench/brokers.py

    kafka = brokers.RealKafka(version=version, jvm_opts=JVM_OPTS + [f"-Dlog4j2.configurationFile={brokers.LOG4J2}"])
    t0 = time.monotonic()
    try:
        kafka.start()
        asked, r = ask_api_versions(kafka.bootstrap)
    finally:
        kafka.stop()
    if r.error_code != 0:
        raise RuntimeError(f"Kafka {version} answered ApiVersions v{asked} with error {r.error_code}")
    levels = {}
    for f in r.finalized_features:
        if f.min_version_level != f.max_version_level:
            raise RuntimeError(f"{f.name}: finalized {f.min_version_level}..{f.max_version_level}")
        levels[f.name] = f.max_version_level
    print(f"Kafka {version}: {len(r.api_keys)} API keys, ApiVersions v{asked}, {time.monotonic() - t0:.0f}s",
          file=sys.stderr)
    return {
        "kafka": version,
        "api_versions_request": asked,
        "api_keys": {k.api_key: (k.min_version, k.max_version) for k in sorted(r.api_keys, key=lambda k: k.api_key)},
        "supported_features": {f.name: (f.min_version, f.max_version)
                               for f in sorted(r.supported_features, key=lambda f: f.name)},
        "finalized_features": dict(sorted(levels.items())),
        "finalized_features_epoch": r.finalized_features_epoch,
    }


def release_of(version: str) -> str:
    return ".".join(version.split(".")[:2])


def render(table: dict[str, dict[str, Any]]) -> str:
    lines = [
        '"""What real Kafka brokers answer to ApiVersions, one release each (their latest patch recorded).',
        "",
        "Recorded by ``scripts/record_kafka_releases.py`` from single-node KRaft brokers (Maven Central's",
        "kafka_2.13 jars, storage formatted with Kafka's defaults, so every feature is finalized at the",
        "release's latest production level; a static quorum, so kraft.version stays 0 and is not listed",
        "as finalized; the epoch is the metadata log's offset when the broker first answered); do not edit.",
        "``protocol/registry.py`` reads it.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any",
        "",
        "# release: the broker's version, the ApiVersions version asked, every API key's advertised",
        "# (min, max), supported features (min, max), finalized features (level) and their epoch",
        "RECORDED: dict[str, dict[str, Any]] = {",
    ]
    for release, row in sorted(table.items(), key=lambda kv: tuple(map(int, kv[0].split(".")))):
        lines.append(f'    "{release}": {{')
        lines.append(f'        "kafka": "{row["kafka"]}",')
        lines.append(f'        "api_versions_request": {row["api_versions_request"]},')
        lines.append('        "api_keys": {')
        keys = list(row["api_keys"].items())
        for i in range(0, len(keys), 6):
            lines.append("            " + " ".join(f"{k}: ({lo}, {hi})," for k, (lo, hi) in keys[i:i + 6]))
        lines.append("        },")
        lines.append('        "supported_features": {')
        for name, (lo, hi) in row["supported_features"].items():
            lines.append(f'            "{name}": ({lo}, {hi}),')
        lines.append("        },")
        lines.append('        "finalized_features": {')
        for name, level in row["finalized_features"].items():
            lines.append(f'            "{name}": {level},')
        lines.append("        },")
        lines.append(f'        "finalized_features_epoch": {row["finalized_features_epoch"]},')
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def recorded() -> dict[str, dict[str, Any]]:
    """The table as checked in (parsed, not imported: this script may run before it exists)."""
    if not TABLE.exists():
        return {}
    tree = ast.parse(TABLE.read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "RECORDED":
            return ast.literal_eval(node.value)
    return {}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("versions", nargs="*", default=list(DEFAULT_VERSIONS), help="Kafka versions (x.y.z)")
    ap.add_argument("--show", action="store_true", help="print the checked-in table and exit")
    args = ap.parse_args()
    table = recorded()
    if args.show:
        for release, row in table.items():
            print(f"{release} (Kafka {row['kafka']}): {len(row['api_keys'])} keys; finalized {row['finalized_features']}")
        return 0
    for version in args.versions:
        table[release_of(version)] = record(version)
    TABLE.write_text(render(table))
    print(f"wrote {TABLE.relative_to(ROOT)} ({', '.join(sorted(table))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
