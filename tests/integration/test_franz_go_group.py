"""franz-go (Go, v1.22) consumers in a classic group on the broker, with its cooperative-sticky balancer.

tests/integration/go/main.go starts three kgo clients in one group over a six-partition topic.
franz-go's default balancer is cooperative-sticky (KIP-429): incremental rebalances over the
classic protocol, where members keep their partitions through a rebalance and give up only what
moves, in a second JoinGroup round.  They must split the topic two each and read every record; one
closes (revoke, commit, LeaveGroup) and the other two must own all six.  The broker's view is
checked afterwards: the group chose "cooperative-sticky", and the committed offsets cover the topic.

The program is built with ``go build`` into tests/integration/go/bin (ignored by git); modules come
from the Go module proxy into the usual caches (~/go/pkg/mod, ~/.cache/go-build), so later builds
are offline and quick.  Skips when ``go`` is not on PATH or the build fails (the reason is shown),
and fails with that reason under CI (gotools.py, tests/toolchains.py).
"""

from __future__ import annotations

import subprocess

import pytest

kafka = pytest.importorskip("kafka")

from mockbroker import MockBroker  # noqa: E402

from .gotools import franz_go_binary  # noqa: E402
from .records import produce_numbered  # noqa: E402

N_RECORDS, PARTITIONS = 600, 6


@pytest.fixture(scope="module")
def franz_go() -> str:
    return franz_go_binary()


def test_franz_go_consumers_share_partitions_and_take_over(franz_go):
    with MockBroker(config={"group.initial.rebalance.delay.ms": 100}) as b:
        b.create_topic("franz-group", PARTITIONS)
        produce_numbered(b.bootstrap_servers, "franz-group", N_RECORDS, PARTITIONS)
        cmd = [franz_go, b.bootstrap_servers, "franz-group", "franz-g", "3", str(PARTITIONS), str(N_RECORDS)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            first = proc.stdout.readline()  # type: ignore[union-attr]  (the program exits by itself after 60 s)
            during = b.group("franz-g")  # while the three are balanced
            out, err = proc.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"groupconsumers timed out\nstdout:\n{out}\nstderr:\n{err}")
        report = f"exit {proc.returncode}\nstdout:\n{first}{out}\nstderr:\n{err[-3000:]}"
        assert proc.returncode == 0, report
        assert (first + out).split() == ["ASSIGNED", "[2,2,2]", "SEEN", str(N_RECORDS), "TAKEOVER", "[3,3]", "DONE"], \
            report
        assert during["protocol_name"] == "cooperative-sticky" and during["state"] == "Stable", during
        assert len(during["members"]) == 3
        assert b.committed_offsets("franz-g") == {("franz-group", q): N_RECORDS // PARTITIONS
                                                  for q in range(PARTITIONS)}
        g = b.group("franz-g")
        assert g["state"] == "Empty" and g["members"] == [], g
        joins = b.journal(api_key=11, client_id="franz-1")
        assert joins and all(e["outcome"] == "response" for e in joins)
