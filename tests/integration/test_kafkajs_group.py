"""kafkajs 2.2.4 consumers in a classic group on the broker.

tests/integration/js/group.js starts three kafkajs consumers (JoinGroup v5 with kafkajs'
RoundRobinAssigner, SyncGroup v3, Heartbeat, OffsetCommit after each batch, LeaveGroup on
disconnect) over a six-partition topic: they must split it two each and read every record, then one
disconnects and the other two must own all six.  The broker's view is checked afterwards: committed
offsets cover the topic and the group is Empty.  Skips without node/npm, fails under CI (jstools.py).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

kafka = pytest.importorskip("kafka")

from mockbroker import MockBroker  # noqa: E402

from .records import produce_numbered  # noqa: E402
from .test_kafkajs import node  # noqa: E402,F401  (the fixture: node on PATH, npm ci done)

GROUP_JS = Path(__file__).parent / "js" / "group.js"
N_RECORDS, PARTITIONS = 600, 6


def test_kafkajs_consumers_share_partitions_and_take_over(node):  # noqa: F811
    with MockBroker(config={"group.initial.rebalance.delay.ms": 100}) as b:
        b.create_topic("js-group", PARTITIONS)
        produce_numbered(b.bootstrap_servers, "js-group", N_RECORDS, PARTITIONS)
        cmd = [node, str(GROUP_JS), b.bootstrap_servers, "js-group", "js-g", "3", str(PARTITIONS), str(N_RECORDS)]
        try:
            r = subprocess.run(cmd, cwd=GROUP_JS.parent, capture_output=True, text=True, timeout=90)
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"group.js timed out\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
        report = f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr[-3000:]}"
        assert r.returncode == 0, report
        lines = [json.loads(x) for x in r.stdout.strip().splitlines()]
        assert lines == [{"phase": "assigned", "sizes": [2, 2, 2], "seen": N_RECORDS},
                         {"phase": "takeover", "sizes": [3, 3]}, {"ok": True}], report
        assert b.committed_offsets("js-g") == {("js-group", q): N_RECORDS // PARTITIONS for q in range(PARTITIONS)}
        g = b.group("js-g")
        assert (g["state"], g["members"], g["protocol_name"]) == ("Empty", [], None), g
