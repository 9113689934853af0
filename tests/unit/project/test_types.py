"""The type checker is part of the test command: mypy --strict over protocol/ and mockbroker/
(configured in pyproject.toml), with every request typed by its generated view
(protocol/request_types.py) and no ``type: ignore`` without its reason on the same line."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

from protocol.codec import build_request
from protocol.registry import ApiKey

ROOT = pathlib.Path(__file__).resolve().parents[3]
# "# type: ignore[code]" must be followed by "  # why" on the same line
IGNORE = re.compile(r"#\s*type:\s*ignore(?P<codes>\[[^\]]*\])?(?P<rest>.*)$")


def mypy(*args: str, cwd: pathlib.Path = ROOT) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mypy")
    return subprocess.run([sys.executable, "-m", "mypy", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def test_mypy_strict_finds_nothing():
    r = mypy()  # [tool.mypy] in pyproject.toml: strict, files protocol and mockbroker
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_checker_can_fail(tmp_path):
    """The check above can fail: strict mypy refuses an untyped function and a wrong argument."""
    (tmp_path / "m.py").write_text("def f(x):\n    return x\n\n\ndef g(n: int) -> int:\n    return n\n\n\ng('1')\n")
    r = mypy("--strict", "--no-incremental", "m.py", cwd=tmp_path)
    assert r.returncode == 1 and "no-untyped-def" in r.stdout and "arg-type" in r.stdout, r.stdout


def test_every_type_ignore_says_why():
    bare = []
    for pkg in ("protocol", "mockbroker"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for n, line in enumerate(path.read_text().splitlines(), 1):
                m = IGNORE.search(line)
                if m and (not m["codes"] or not re.match(r"\s+#\s*\S", m["rest"])):
                    bare.append(f"{path.relative_to(ROOT)}:{n}")
    assert bare == []


def test_the_request_views_are_current():
    """protocol/request_types.py, request_defaults.py and api_keys.py are what
    scripts/gen_request_types.py makes from the schemas (a new schema or API: run it)."""
    r = subprocess.run([sys.executable, "scripts/gen_request_types.py", "--check"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_field_a_version_lacks_reads_as_its_schema_default():
    """Fetch v4 has no session fields: they read as Kafka's defaults (sessionless: id 0, epoch -1),
    as FetchRequestData has them, so a handler reads req.session_epoch on every version; a version
    that has the field keeps its own value."""
    topics = [{"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}]}]
    v4 = build_request(ApiKey.FETCH, 4, {"max_wait": 0, "min_bytes": 1, "max_bytes": 1024, "topics": topics})
    assert (v4.session_id, v4.session_epoch, v4.forgotten_topics_data) == (0, -1, ())
    assert v4.topics[0].partitions[0].current_leader_epoch == -1  # v9+
    v7 = build_request(ApiKey.FETCH, 7, {"max_wait": 0, "min_bytes": 1, "max_bytes": 1024, "session_id": 5,
                                         "session_epoch": 3, "topics": topics})
    assert (v7.session_id, v7.session_epoch) == (5, 3)
    join = build_request(ApiKey.JOIN_GROUP, 0, {"group_id": "g", "session_timeout": 10_000, "member_id": "",
                                                "protocol_type": "consumer", "protocols": []})
    assert (join.group_instance_id, join.reason) == (None, None)  # v5+, v8+
    assert "session_epoch" not in type(v4).__dataclass_fields__  # the version's own fields are untouched
