"""``mock.event.loop``: a broker on uvloop (the optional extra mockbroker[uvloop]) serves a real client
over loopback, its fetch responses going out through uvloop's transport; asked for where uvloop is not
installed, or with a TLS listener (handshakes fail on uvloop), the configuration is refused at load, as
an unknown key is."""

from __future__ import annotations

import asyncio
import sys
import time

import pytest

from mockbroker.cli import main
from mockbroker.config.broker_config import BrokerConfig, ConfigError
from mockbroker.runner import MockBroker


def test_uvloop_asked_for_but_not_installed_is_refused_at_load(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "uvloop", None)  # what a Python without uvloop finds: no module
    with pytest.raises(ConfigError, match=r"mock\.event\.loop=uvloop: uvloop is not installed"):
        MockBroker(config={"mock.event.loop": "uvloop"})
    assert main(["serve", "--port", "0", "-c", "mock.event.loop=uvloop"]) == 2  # before any listener
    assert "pip install 'mockbroker[uvloop]'" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="one of asyncio, uvloop"):
        BrokerConfig.load(extra={"mock.event.loop": "trio"}, environ={})
    assert BrokerConfig.load(environ={})["mock.event.loop"] == "asyncio"


def test_uvloop_with_a_tls_listener_is_refused_at_load():
    pytest.importorskip("uvloop", reason="uvloop is not installed (pip install 'mockbroker[uvloop]')")
    with pytest.raises(ConfigError, match=r"serves no TLS listener \(SSL\)"):
        BrokerConfig.load(extra={"mock.event.loop": "uvloop", "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
                                 "ssl.keystore.location": "k.pem", "ssl.keystore.type": "PEM"}, environ={})


def test_a_broker_on_uvloop_serves_a_real_client():
    uvloop = pytest.importorskip("uvloop", reason="uvloop is not installed (pip install 'mockbroker[uvloop]')")
    ck = pytest.importorskip("confluent_kafka")
    values = {p: [bytes([i % 251]) * (200 + 37 * i) for i in range(p, 600, 2)] for p in (0, 1)}
    delivered: list[str | None] = []
    with MockBroker(config={"mock.event.loop": "uvloop", "mock.topics": ["t:2"]}) as broker:
        assert broker.call(lambda _cluster: isinstance(asyncio.get_running_loop(), uvloop.Loop))
        producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all", "linger.ms": 5})
        for p, vs in values.items():
            for v in vs:
                producer.produce("t", v, partition=p, on_delivery=lambda err, _m: delivered.append(err and str(err)))
        assert producer.flush(15) == 0
        assert delivered == [None] * 600
        consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g",
                                "enable.auto.commit": False, "fetch.wait.max.ms": 50})
        consumer.assign([ck.TopicPartition("t", 0, 0), ck.TopicPartition("t", 1, 0)])
        got: dict[int, list[bytes]] = {0: [], 1: []}
        deadline = time.monotonic() + 20
        while sum(map(len, got.values())) < 600 and time.monotonic() < deadline:
            for m in consumer.consume(100, 0.5):
                assert m.error() is None, m.error()
                got[m.partition()].append(m.value())
        consumer.close()
    assert got == values  # every record, in order per partition, byte for byte
