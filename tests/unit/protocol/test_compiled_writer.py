"""protocol/compiled_writer.py: kio's entity writer compiled per class writes kio's bytes.

* every request and response class of every version there is (kio's and generated), and both request
  headers: drawn values (tests/kio_strategies.py: legacy and flexible encodings, tagged fields at and
  off their defaults, nullable structs, arrays and strings, uuids, records, durations, timestamps)
  give byte for byte what ``kio.serial.entity_writer`` gives;
* the codec's writer is the compiled one, and none of the classes falls back to kio's;
* a record set goes to a ``GatherBuffer`` by reference (one write of the value itself), so a Fetch
  or ShareFetch response still sends its records unjoined;
* the dict writer (``compiled_dict_writer``, what ``encode_response_dict`` writes a handler's body
  with): every response class, from dict trees such as handlers build (nested entities kept here
  and there, fields left out, error codes and durations as ints), gives the bytes of
  ``build_response`` written by kio; a misspelt key is still refused under strict keys;
* the null and present markers, length tables past one varint byte, and the legacy length checks.
"""

from __future__ import annotations

import dataclasses
import datetime
import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.serial import entity_writer

from protocol import compiled_writer as cw
from protocol.codec import (
    UnknownFieldError,
    _writer,
    build,
    build_response,
    encode_response,
    encode_response_dict,
    request_class,
    response_class,
    set_strict_keys,
)
from protocol.gather import GatherBuffer, RecordChunks
from protocol.registry import ApiKey, any_spec, api_key_map, schema_versions
from tests.kio_strategies import entities


def _classes() -> list[type]:
    out: list[type] = [RequestHeaderV1, RequestHeaderV2]
    for key in sorted(api_key_map):
        for v in schema_versions(key):
            out += [request_class(key, v), response_class(key, v)]
    return out


CLASSES = _classes()


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_the_compiled_writer_writes_kios_bytes(cls):
    generated = cls.__module__.startswith("protocol.generated.")

    @settings(max_examples=40 if generated else 8, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(entities(cls))
    def check(value):
        kio, compiled = io.BytesIO(), io.BytesIO()
        entity_writer(cls)(kio, value)
        cw.compiled_writer(cls)(compiled, value)
        assert compiled.getvalue() == kio.getvalue()

    check()


def test_the_codec_writes_with_compiled_writers_and_none_falls_back():
    for cls in CLASSES:
        writer = _writer(cls)
        assert writer is cw.compiled_writer(cls)
        assert writer.__code__.co_filename.startswith("<compiled writer of "), cls


def test_a_record_set_is_written_by_reference():
    """ShareFetch v1's records (compact, nullable): one write of the very object, kept by the
    GatherBuffer as its own segment (a RecordChunks' parts each), never copied."""
    big = bytes(range(256)) * 8
    chunks = RecordChunks([b"a" * 600, b"b" * 700], 1300)
    for records in (big, chunks):
        body = build_response(ApiKey.SHARE_FETCH, 1, {"responses": [{"topic_id": None, "partitions": [
            {"partition_index": 0, "records": records, "acquired_records": []}]}]})
        buf = GatherBuffer()
        _writer(type(body))(buf, body)
        segments = buf.getsegments()
        if records is big:
            assert any(s is big for s in segments)
        else:
            assert [s for s in segments if s is chunks.parts[0] or s is chunks.parts[1]] == list(chunks.parts)
        kio = GatherBuffer()
        entity_writer(type(body))(kio, body)
        assert b"".join(map(bytes, segments)) == b"".join(map(bytes, kio.getsegments()))


def test_lengths_and_markers():
    assert cw._uv(0) == b"\x00" and cw._uv(127) == b"\x7f" and cw._uv(128) == b"\x80\x01"
    assert cw._uv(16383) == b"\xff\x7f" and cw._uv(16384) == b"\x80\x80\x01"
    assert cw._uv(2**31 - 1) == b"\xff\xff\xff\xff\x07"
    # a legacy string longer than an int16 length says, refused as kio refuses it
    from kio.serial.errors import OutOfBoundValue

    header = RequestHeaderV1(request_api_key=0, request_api_version=0, correlation_id=1, client_id="x" * 40000)
    with pytest.raises(OutOfBoundValue):
        _writer(RequestHeaderV1)(io.BytesIO(), header)


def _tree(value, rnd):
    """An entity as a handler would give it to build: dicts, a nested entity kept now and then, error
    codes and durations as ints now and then, a field left out now and then (build's zero)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if rnd.random() < 0.2:
            return value
        return {f.name: _tree(getattr(value, f.name), rnd) for f in dataclasses.fields(value) if rnd.random() >= 0.2}
    if isinstance(value, tuple):
        return [_tree(v, rnd) for v in value]
    if isinstance(value, ErrorCode) and rnd.random() < 0.5:
        return int(value)
    if isinstance(value, datetime.timedelta) and rnd.random() < 0.5:
        return round(value.total_seconds() * 1000)
    return value


RESPONSES = [response_class(key, v) for key in sorted(api_key_map) for v in schema_versions(key)]


@pytest.mark.parametrize("cls", RESPONSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_the_dict_writer_writes_what_build_and_kio_write(cls):
    from protocol.codec import _DICT_RULES

    generated = cls.__module__.startswith("protocol.generated.")

    @settings(max_examples=40 if generated else 8, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(entities(cls), st.randoms(use_true_random=False))
    def check(value, rnd):
        tree = _tree(value, rnd)
        kio = io.BytesIO()
        entity_writer(cls)(kio, tree if isinstance(tree, cls) else build(cls, tree))
        fused = io.BytesIO()
        cw.compiled_dict_writer(cls, _DICT_RULES)(fused, tree)
        assert fused.getvalue() == kio.getvalue()

    check()


def test_encode_response_dict_frames_as_encode_response_and_checks_keys():
    spec = any_spec(ApiKey.PRODUCE)
    body = {"responses": [{"name": "t", "partition_responses": [
        {"index": 0, "error_code": ErrorCode.none, "base_offset": 41, "log_append_time": -1,
         "log_start_offset": 0}]}], "throttle_time": 0}
    for v in (3, 9, 12):
        assert bytes(encode_response_dict(spec, v, 7, body)) == \
            bytes(encode_response(spec, v, 7, build_response(ApiKey.PRODUCE, v, body)))
    set_strict_keys(True)  # as the test suite runs (tests/conftest.py)
    with pytest.raises(UnknownFieldError):
        encode_response_dict(spec, 9, 7, {"responses": [], "throttle_tiem": 0})
