"""The tester's own schema interpreter against kio, the codecs mockbroker uses: the same bytes.

Every request the generator builds (the valid one of every (key, version) of Kafka 4.4's schemas)
is written by ``schema`` and read back by kio, whose writer must give the same bytes again; every
response kio writes (each field at its default) is read whole by ``schema``.  A mistake in either
shows here, not as a difference between two brokers.
"""

from __future__ import annotations

import io
import struct
import uuid
from typing import Any

import pytest

from protocol.codec import _writer, build_response, decode_request, encode_response
from protocol.registry import any_spec, schema_versions
from tests.differential import generate, schema
from tests.differential.state import Side, resolve

_I32 = struct.Struct(">i")


class FakeSide(Side):
    """Values of the kind a broker assigns, without a broker."""

    def value(self, kind: str, name: str) -> Any:
        return {"topic_id": uuid.uuid5(uuid.NAMESPACE_DNS, name), "producer_id": 4000, "producer_epoch": 3,
                "member_id": "member-" + name, "generation": 2, "member_epoch": 5,
                "client_instance_id": uuid.uuid5(uuid.NAMESPACE_URL, name), "subscription_id": 7}[kind]

    def log_dir(self) -> str:
        return "/var/lib/kafka/data"


SIDE = FakeSide("fake", "127.0.0.1:1", cluster_id="AAAAAAAAAAAAAAAAAAAAAA")


def pairs(kind: str) -> list[tuple[int, int]]:
    out = []
    for (key, k), msg in sorted(schema.messages().items()):
        if k != kind:
            continue
        kio_versions = set(schema_versions(key))
        out += [(key, v) for v in msg.versions if v in kio_versions]
    return out


@pytest.mark.parametrize(("key", "version"), pairs("request"), ids=lambda x: str(x))
def test_requests_read_back_by_kio(key: int, version: int) -> None:
    body, _needs = generate.valid_request(key, version, generate.Scope(key, version), 0)
    frame = schema.encode_request(key, version, 7, "client", resolve(body, SIDE))
    payload = frame[4:]
    assert _I32.unpack_from(frame, 0)[0] == len(payload)
    hv = schema.request_header_version(key, version)
    # the header: key, version, correlation id, client id (int16 length even when flexible), tags
    api, ver, corr, n = struct.unpack_from(">hhih", payload, 0)
    assert (api, ver, corr, payload[10:10 + n]) == (key, version, 7, b"client")
    offset = 10 + n + (1 if hv >= 2 else 0)
    entity = decode_request(key, version, payload, offset)
    buf = io.BytesIO()
    _writer(type(entity))(buf, entity)
    assert buf.getvalue() == payload[offset:], "kio writes the request it read differently"


@pytest.mark.parametrize(("key", "version"), pairs("response"), ids=lambda x: str(x))
def test_responses_kio_writes_read_whole(key: int, version: int) -> None:
    spec = any_spec(key)
    assert spec is not None
    framed = bytes(encode_response(spec, version, 11, build_response(key, version, {})))
    corr, body = schema.decode_response(key, version, framed[4:])
    assert corr == 11
    msg = schema.response(key)
    assert set(body) == {f.name for f in msg.fields if f.present(version)}


def test_mutations_change_one_place_and_say_which() -> None:
    cases = generate.cases(0, 9, 30, seed=3)
    valid = cases[0]
    assert valid.mutations == [] and valid.body["Acks"] == -1
    assert len(valid.body["TopicData"][0]["PartitionData"]) == 2
    for c in cases[1:]:
        assert c.mutations, f"case {c.index} carries no mutation"
        assert c.body != valid.body or all("dt-k0v9-c" in m for m in c.mutations)
    again = generate.cases(0, 9, 30, seed=3)
    assert [c.mutations for c in again] == [c.mutations for c in cases]
    other = generate.cases(0, 9, 30, seed=4)
    assert [c.mutations for c in other] != [c.mutations for c in cases]
