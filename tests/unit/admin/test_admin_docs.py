"""docs/admin.md's shell example runs as written against a default broker with its admin listener."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mockbroker import MockBroker

DOC = Path(__file__).resolve().parents[3] / "docs" / "admin.md"


def shell_blocks(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M)


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not on PATH (Debian's curl package)")
def test_the_fault_injection_example_runs_on_a_default_broker(tmp_path):
    block = next(b for b in shell_blocks(DOC.read_text()) if "/faults" in b)
    assert re.search(r"^URL=http://127\.0\.0\.1:9644$", block, re.M), block
    # curl as the doc writes it, but failing on an HTTP error (curl reads $HOME/.curlrc)
    (tmp_path / ".curlrc").write_text("fail-with-body\nshow-error\n")
    with MockBroker(config={"mock.admin.listener": "127.0.0.1:0"}) as b:  # the defaults: one broker, node 0
        script = re.sub(r"^URL=.*$", f"URL={b.admin_url}", block, flags=re.M)
        r = subprocess.run(["bash", "-e", "-c", script], capture_output=True, text=True, timeout=60,
                           env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
        assert r.returncode == 0, f"{r.stdout}\n{r.stderr}"
        rules = b.faults()
    assert [(r["action"], r["match"].get("broker")) for r in rules] == [
        ("error", None), ("hold", None), ("delay", 0), ("close", None)]
