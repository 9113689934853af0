"""KafkaApis (mockbroker/network/kafka_apis.py): a broker bug closes the one connection it hit, labelled as
the broker's own fault, and never stops the other connections or the other completions.

A fault is planted in one broker's handler table (only for requests from client id "boom"), so
the failing code runs exactly where a real bug would: in the handler, or in the deferred
completion that a purgatory runs later.
"""

from __future__ import annotations

import logging

import pytest

from mockbroker import ManualClock, MockBroker
from mockbroker.request import Deferred
from protocol.client import RawKafkaClient
from protocol.errors import ErrorCode
from protocol.registry import ApiKey

from ..purgatory.test_delayed_ops import answered, fetch_body, parked, produce_body


class Planted(RuntimeError):
    pass


def plant(b: MockBroker, api_key: int, where: str) -> None:
    """Make ``api_key``'s handler fail for client id "boom": in the handler itself ("handler") or
    in its deferred response, when the purgatory completes it ("completion")."""
    def install(cluster):
        handlers = cluster.broker().apis.handlers
        original = handlers[api_key]

        def handler(ctx, req):
            if ctx.client_id != "boom":
                return original(ctx, req)
            if where == "handler":
                raise Planted("planted in the handler")
            inner = original(ctx, req)
            assert isinstance(inner, Deferred)
            outer = Deferred()

            def fail():
                raise Planted("planted in the deferred completion")
            inner.attach(lambda _d: outer.complete_with(fail))
            return outer

        handlers[api_key] = handler
    b.call(install)


@pytest.fixture
def single():
    with MockBroker(config={"num.partitions": 1}, clock=ManualClock()) as b:
        yield b


def test_failing_deferred_completion_closes_only_its_connection(single, caplog):
    """Two long-poll fetches wait on one partition, the failing one watched first; one produce wakes
    both.  Before the fix the exception escaped the purgatory's completion loop: the second fetch
    was never completed and its connection stayed muted."""
    b = single
    b.create_topic("d2", 1, 1)
    plant(b, ApiKey.FETCH, "completion")
    boom = RawKafkaClient.connect(b.bootstrap_servers, client_id="boom")
    good = RawKafkaClient.connect(b.bootstrap_servers, client_id="good")
    producer = RawKafkaClient.connect(b.bootstrap_servers, client_id="producer")
    try:
        boom.send(1, 12, fetch_body("d2", 0, max_wait_ms=60_000))
        parked(b, "Fetch", n=1)
        corr = good.send(1, 12, fetch_body("d2", 0, max_wait_ms=60_000))
        parked(b, "Fetch", n=2)
        with caplog.at_level(logging.INFO, logger="mockbroker"):
            r = producer.request(0, 9, produce_body("d2", acks=1))
            assert r.responses[0].partition_responses[0].error_code == ErrorCode.none
            # the clock never moves: only the produce can have answered the good fetch
            assert answered(good, timeout=5.0)
            records = good.response(1, 12, corr).responses[0].partitions[0].records
            assert records
            assert boom.is_closed_by_peer()
        lines = [r.getMessage() for r in caplog.records if "closing connection" in r.getMessage()]
        assert len(lines) == 1, lines
        assert "internal error in the broker" in lines[0] and "planted in the deferred completion" in lines[0]
        assert "client_id='boom'" in lines[0]
        # the broker goes on serving on new and old connections
        assert producer.request(3, 12, {"topics": None}).brokers
    finally:
        for c in (boom, good, producer):
            c.close()


def test_failing_handler_is_an_internal_error_not_a_protocol_error(single, caplog):
    b = single
    plant(b, ApiKey.METADATA, "handler")
    with RawKafkaClient.connect(b.bootstrap_servers, client_id="boom") as boom, \
            RawKafkaClient.connect(b.bootstrap_servers, client_id="other") as other:
        with caplog.at_level(logging.INFO, logger="mockbroker"):
            boom.send(3, 12, {"topics": None})
            assert boom.is_closed_by_peer()
        lines = [r for r in caplog.records if "closing connection" in r.getMessage()]
        assert len(lines) == 1
        msg = lines[0].getMessage()
        assert "internal error in the broker: Planted: planted in the handler" in msg
        assert "protocol error" not in msg
        assert lines[0].levelno == logging.WARNING
        assert not any(r.exc_info for r in caplog.records if r.levelno >= logging.INFO)  # one line, no traceback
        assert other.request(3, 12, {"topics": None}).brokers


def test_protocol_violation_is_still_labelled_a_protocol_error(single, caplog):
    """The other label stays where it belongs: a request the client got wrong."""
    with RawKafkaClient.connect(single.bootstrap_servers) as c:
        with caplog.at_level(logging.INFO, logger="mockbroker"):
            c.send_raw(b"\x00\x00\x00\x08\x00\x03\x00\x63\x00\x00\x00\x01")  # Metadata v99
            assert c.is_closed_by_peer()
        msg = next(r.getMessage() for r in caplog.records if "closing connection" in r.getMessage())
        assert "protocol error" in msg and "internal error" not in msg
