"""franz-go's share consumer (kgo v1.22 ``ShareGroup``, KIP-932) against mockbroker: ShareFetch v2 and
ShareAcknowledge v2, each record released on its first delivery and accepted on its redelivery
(tests/integration/go/share.go).  Skips without go, fails under CI (see gotools.py)."""

from __future__ import annotations

import subprocess

import pytest

from mockbroker import MockBroker

from .gotools import franz_go_binary
from .records import produce_numbered

N_RECORDS, PARTITIONS = 200, 2


def test_franz_go_share_consumer_release_then_accept():
    binary = franz_go_binary()
    with MockBroker() as b:
        b.create_topic("gq", PARTITIONS)
        produce_numbered(b.bootstrap_servers, "gq", N_RECORDS, PARTITIONS)
        b.call(lambda c: c.config_catalog.groups.setdefault("go-share", {}).update(
            {"share.auto.offset.reset": "earliest"}))  # as kafka-configs --entity-type groups would set it
        try:
            r = subprocess.run([binary, "share", b.bootstrap_servers, "gq", "go-share", str(N_RECORDS)],
                               capture_output=True, text=True, timeout=90)
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"share consumer timed out\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")
        assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr[-3000:]}"
        assert r.stdout.split() == ["RELEASED", str(N_RECORDS), "ACCEPTED", str(N_RECORDS), "DELIVERIES", "[2]"]
        assert b.share_group("go-share")["acknowledgements"] == {"RELEASE": N_RECORDS, "ACCEPT": N_RECORDS}
        versions = {(e["api"], e["api_version"]) for e in b.journal(client_id="go-share")
                    if e["api"] in ("SHARE_FETCH", "SHARE_ACKNOWLEDGE")}
        assert ("SHARE_FETCH", 2) in versions, versions
