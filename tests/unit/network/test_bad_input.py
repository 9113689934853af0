"""Bad input over a real socket: Kafka closes that connection, logs one line, and
keeps serving everyone else."""

from __future__ import annotations

import logging
import struct

import pytest

from protocol.codec import build_request, encode_request
from protocol.errors import ErrorCode
from protocol.records import build_batch
from protocol.registry import any_spec

META = {"topics": None, "allow_auto_topic_creation": False}


def still_served(raw):
    """A fresh connection gets a Metadata answer: the broker is unharmed."""
    with raw() as c:
        assert c.request(3, 12, META).brokers


def closed_with_one_log_line(caplog, client, needle):
    assert client.is_closed_by_peer(), "broker did not close the connection"
    lines = [r for r in caplog.records if r.name == "mockbroker.connection" and "closing connection" in r.getMessage()]
    matching = [r for r in lines if needle in r.getMessage()]
    assert len(matching) == 1, [r.getMessage() for r in lines]
    msg = matching[0].getMessage()
    host, port = client.sock.getsockname()
    assert f"{host}:{port}" in msg  # names the peer
    return msg


@pytest.mark.parametrize(
    "size,needle",
    [(-1, "size = -1"), (-(2**31), "size = -2147483648"), (104857601, "larger than 104857600"),
     (2**31 - 1, "larger than 104857600")],
)
def test_bad_size_prefix_closes(raw, caplog, size, needle):
    caplog.set_level(logging.INFO)
    c = raw()
    c.send_raw(struct.pack(">i", size) + b"\x00" * 8)
    closed_with_one_log_line(caplog, c, needle)
    still_served(raw)


def test_zero_size_closes(raw, caplog):
    caplog.set_level(logging.INFO)
    c = raw()
    c.send_raw(struct.pack(">i", 0))
    closed_with_one_log_line(caplog, c, "header truncated")
    still_served(raw)


def test_garbage_body_closes(raw, caplog):
    caplog.set_level(logging.INFO)
    c = raw()
    # a valid Metadata v12 header, then a body that is not a Metadata request
    hdr = struct.pack(">hhih", 3, 12, 1, 3) + b"abc" + b"\x00"
    payload = hdr + b"\xff\xff\xff\xff\xff\x01"
    c.send_raw(struct.pack(">i", len(payload)) + payload)
    closed_with_one_log_line(caplog, c, "Error parsing request body")
    still_served(raw)


def test_unknown_api_key_closes(raw, caplog):
    caplog.set_level(logging.INFO)
    c = raw()
    payload = struct.pack(">hhih", 999, 0, 1, -1)
    c.send_raw(struct.pack(">i", len(payload)) + payload)
    closed_with_one_log_line(caplog, c, "key 999")
    still_served(raw)


@pytest.mark.parametrize("key,version", [(0, 2), (0, 0), (1, 3), (3, 14), (19, 1)])
def test_unsupported_version_closes(raw, caplog, key, version):
    caplog.set_level(logging.INFO)
    c = raw()
    payload = struct.pack(">hhih", key, version, 1, -1)
    c.send_raw(struct.pack(">i", len(payload)) + payload)
    closed_with_one_log_line(caplog, c, f"unsupported version {version}")
    still_served(raw)


def test_unsupported_api_versions_version_gets_v0_error_listing_its_range(raw):
    c = raw()
    spec = any_spec(18)
    body = build_request(18, 3, {"client_software_name": "x", "client_software_version": "1"})
    frame = bytearray(encode_request(18, 3, 41, "c", body, spec))
    struct.pack_into(">h", frame, 6, 9)  # claim ApiVersions v9
    c.send_raw(bytes(frame))
    payload = c.recv_frame()
    corr, err, n = struct.unpack_from(">ihi", payload, 0)
    assert (corr, err, n) == (41, ErrorCode.unsupported_version, 1)
    assert struct.unpack_from(">hhh", payload, 10) == (18, 0, 5)
    assert len(payload) == 16  # v0: no throttle field, header v0
    # the connection stays usable
    assert c.request(18, 3, {"client_software_name": "x", "client_software_version": "1"}).error_code == 0


def test_invalid_client_software_name(raw):
    c = raw()
    resp = c.request(18, 3, {"client_software_name": "-bad name", "client_software_version": "1"})
    assert resp.error_code == ErrorCode.invalid_request


def test_truncated_frame_then_close_leaves_broker_serving(raw):
    c = raw()
    c.send_raw(struct.pack(">i", 100) + b"\x00\x03")
    c.close()
    still_served(raw)


def test_acks0_success_sends_nothing_and_error_closes(raw, broker, caplog):
    caplog.set_level(logging.INFO)
    broker.create_topic("acks0", 1)
    c = raw()
    good = {"acks": 0, "timeout": 1000, "topic_data": [
        {"name": "acks0", "partition_data": [{"index": 0, "records": build_batch([(b"k", b"v", [])])}]}]}
    c.send(0, 9, good)
    # no response for acks=0: the next answer on the wire is the Metadata one
    assert c.request(3, 12, META).brokers
    assert broker.log_end_offset("acks0", 0) == 1
    bad = {"acks": 0, "timeout": 1000, "topic_data": [
        {"name": "acks0", "partition_data": [{"index": 5, "records": build_batch([(b"k", b"v", [])])}]}]}
    c.send(0, 9, bad)
    closed_with_one_log_line(caplog, c, "acks=0")
    still_served(raw)


def test_pipelined_requests_are_answered_in_order(raw):
    c = raw()
    corrs = [c.send(3, 12, META) for _ in range(5)] + [c.send(18, 3, {"client_software_name": "a",
                                                                      "client_software_version": "1"})]
    for corr in corrs[:-1]:
        c.response(3, 12, corr)
    assert c.response(18, 3, corrs[-1]).error_code == 0
