"""docs/apis.md is what scripts/api_docs.py writes: every API key of Kafka 4.4.0's schemas, Kafka 4.4.0's
advertised range, mockbroker's served range at the default release, and why a key is not served."""

from __future__ import annotations

import importlib.util
import pathlib
import re
import subprocess
import sys

from mockbroker.apis import build_handlers
from protocol.kafka_releases import RECORDED
from protocol.registry import DEFAULT_KAFKA_RELEASE, ApiRegistry

ROOT = pathlib.Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "api_docs.py"
_spec = importlib.util.spec_from_file_location("api_docs", SCRIPT)
assert _spec is not None and _spec.loader is not None
api_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(api_docs)
ROW = re.compile(r"^\| (\d+) \| (\w+) \| (v\d+-\d+)? \| (v\d+-\d+)? \| (.+) \|$")


def test_the_document_is_up_to_date():
    r = subprocess.run([sys.executable, str(SCRIPT), "--check"], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, f"{r.stderr}docs/apis.md is out of date: run python scripts/api_docs.py"


def test_every_key_has_a_row_and_the_served_ones_their_ranges():
    rows = {int(m[1]): m.groups()[1:] for line in (ROOT / "docs" / "apis.md").read_text().splitlines()
            if (m := ROW.match(line))}
    schemas = {int(p.read_text().split('"apiKey":')[1].split(",")[0])
               for p in api_docs.SCHEMA_DIR.glob("*Request.json")}
    assert set(rows) == schemas and len(rows) > 77  # also the controller-only keys
    registry = ApiRegistry(DEFAULT_KAFKA_RELEASE, set(build_handlers()), client_telemetry=True)
    for key, (_name, kafka, ours, why) in rows.items():
        spec = registry.get(key)
        advertised = RECORDED["4.4"]["api_keys"].get(key)
        assert kafka == (None if advertised is None else f"v{advertised[0]}-{advertised[1]}"), key
        assert ours == (None if spec is None else f"v{spec.advertised_min}-{spec.max_version}"), key
        assert (spec is not None) == why.startswith("`mockbroker/apis/p"), key


def test_reasons_are_given_only_for_keys_not_served():
    """A handler that lands makes its NOT_SERVED reason stale: remove it there and regenerate."""
    served = set(build_handlers())
    assert not served & set(api_docs.NOT_SERVED)
    assert set(RECORDED["4.4"]["api_keys"]) <= served | set(api_docs.NOT_SERVED)
