"""No dead code: vulture over the project finds nothing beyond scripts/vulture_whitelist.py, whose
entries are used from outside vulture's view (the event loop, clients' callbacks, asdict)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
TARGETS = ["protocol", "mockbroker", "tests", "bench", "scripts"]
# protocol/generated/: kio-shaped modules written by scripts/gen_kafka_messages.py, found by name at run time;
# protocol/request_types.py and api_keys.py: every field and key of every API, written by
# scripts/gen_request_types.py for the type checker and the handlers to come
EXCLUDE = ("tests/integration/js,tests/integration/go,tests/integration/java,protocol/generated,"
           "protocol/request_types.py,protocol/api_keys.py")


def vulture(*paths: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vulture", *paths, "--min-confidence", "60", "--exclude", EXCLUDE],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_nothing_unused():
    pytest.importorskip("vulture")
    r = vulture(*TARGETS)
    assert r.stdout == "" and r.returncode == 0, r.stdout + r.stderr


def test_an_unused_function_is_reported(tmp_path):
    """The check above can fail: a function nobody calls is reported."""
    pytest.importorskip("vulture")
    (tmp_path / "m.py").write_text("def used():\n    return 1\n\n\ndef never_called():\n    return 2\n\n\nused()\n")
    r = vulture(str(tmp_path / "m.py"))
    assert "never_called" in r.stdout and "used()" not in r.stdout
