"""What a broker loads to start: behaviour, not timing (bench/startup.py measures the time).

In a fresh interpreter, ``import mockbroker.cli`` and a started ``MockBroker`` that answered one
Metadata v12 request have not imported hypothesis (kio would import it for its phantom types:
protocol/__init__.py hides it), PySpark (the report subcommand only), aiohttp or prometheus_client
(the admin listener only), re2 (the first KIP-848 regex only), cryptography (TLS listeners only),
crc32c (the first record batch or telemetry subscription: its __init__ reads its own version through
importlib.metadata), no kio message module but the Metadata v12 request and response, no API
handler module but Metadata's (mockbroker/apis/ imports one on its key's first request), neither the
streams group coordinator nor a broker's share-partitions (built on first use), and no
generated message module (protocol/codec.py loads a message's module on first use;
protocol/schema_table.py and protocol/generated/index.py spare the registry the rest).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from protocol.client import metadata_all_topics_request

ROOT = Path(__file__).resolve().parents[3]
UNWANTED = ("hypothesis", "pyspark", "aiohttp", "prometheus_client", "re2", "cryptography", "crc32c")
METADATA_V12 = metadata_all_topics_request(12, "imports")
# built on first use: KIP-1071's coordinator (GroupCoordinatorService.streams) and a broker's KIP-932
# share-partitions (Broker.share_partitions)
ON_FIRST_USE = ("mockbroker.group.streams_coordinator", "mockbroker.share.manager", "mockbroker.share.partition")

REPORT = """
import json, sys
mods = sorted(sys.modules)
print(json.dumps({
    "unwanted": sorted({m.split(".")[0] for m in mods} & set(sys.argv[1].split(","))),
    "messages": [m for m in mods if m.startswith(("kio.schema.", "protocol.generated."))
                 and m.rsplit(".", 1)[-1] in ("request", "response")],
    "handlers": [m.rsplit(".", 1)[1] for m in mods if m.startswith("mockbroker.apis.p")],
    "on_first_use": [m for m in mods if m in sys.argv[2].split(",")],
}))
"""

START_AND_ASK = """
import socket, struct, sys
from mockbroker import MockBroker
with MockBroker(config=CONFIG) as b:
    host, _, port = b.bootstrap_servers.split(",")[0].rpartition(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(bytes.fromhex(REQUEST))
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = s.recv(65536)
            assert chunk, "broker closed the connection"
            buf += chunk
"""


def loaded(code: str, strict: bool = False) -> dict[str, list[str]]:
    """Run ``code`` in a fresh interpreter; what it had loaded then (see REPORT)."""
    env = dict(os.environ)
    env.pop("PROTOCOL_STRICT_KEYS", None)  # conftest sets it; a broker process does not have it
    if strict:
        env["PROTOCOL_STRICT_KEYS"] = "1"
    r = subprocess.run([sys.executable, "-c", code + REPORT, ",".join(UNWANTED), ",".join(ON_FIRST_USE)],
                       cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1])


def broker_code(config: dict[str, str]) -> str:
    return f"CONFIG = {config!r}\nREQUEST = {METADATA_V12.hex()!r}\n" + START_AND_ASK


def test_cli_import_loads_no_broker_extras():
    assert loaded("import mockbroker.cli") == {"unwanted": [], "messages": [], "handlers": [], "on_first_use": []}


def test_a_broker_that_answered_metadata_loaded_only_what_it_used():
    assert loaded(broker_code({})) == {
        "unwanted": [],
        "messages": ["kio.schema.metadata.v12.request", "kio.schema.metadata.v12.response"],
        "handlers": ["p03_metadata"],  # mockbroker/apis: a handler module loads on its key's first request
        "on_first_use": [],
    }


def test_strict_keys_load_the_versions_of_the_used_api_only():
    """PROTOCOL_STRICT_KEYS (the test suite's mode) reads every version of a message it builds, and
    no other message."""
    messages = loaded(broker_code({}), strict=True)["messages"]
    assert messages and {m.split(".")[2] for m in messages} == {"metadata"}


def test_the_admin_listener_loads_the_http_stack():
    """The check can fail: what is imported is reported (the admin listener brings aiohttp)."""
    unwanted = loaded(broker_code({"mock.admin.listener": "127.0.0.1:0"}))["unwanted"]
    assert "aiohttp" in unwanted and "hypothesis" not in unwanted
    assert loaded("import hypothesis.strategies")["unwanted"] == ["hypothesis"]


def test_a_streams_or_share_request_loads_its_coordinator():
    """The check above can fail: what is built on first use is reported once used."""
    code = broker_code({}) + "    b.call(lambda c: (c.groups.streams, c.brokers[c.config['node.id']].share_partitions))\n"
    assert loaded(code)["on_first_use"] == sorted(ON_FIRST_USE)
