"""Framing, request/response headers and the API registry."""

from __future__ import annotations

import struct

import pytest

from protocol.codec import (
    build_response,
    encode_response,
    parse_request_header,
    peek_api,
)
from protocol.errors import InvalidFrameSize, InvalidRequest
from protocol.framing import frame, read_frame_size
from protocol.registry import ApiKey, ApiRegistry, any_spec


class TestFraming:
    def test_needs_four_bytes(self):
        assert read_frame_size(b"\x00\x00\x01", 100) is None

    def test_size_read(self):
        assert read_frame_size(struct.pack(">i", 42) + b"xx", 100) == 42

    def test_zero_passes_framing(self):
        # Kafka lets 0 through NetworkReceive; the header parse fails afterwards.
        assert read_frame_size(struct.pack(">i", 0), 100) == 0

    @pytest.mark.parametrize("size", [-1, -(2**31)])
    def test_negative_refused(self, size):
        with pytest.raises(InvalidFrameSize, match=f"size = {size}"):
            read_frame_size(struct.pack(">i", size), 100)

    def test_over_max_refused(self):
        with pytest.raises(InvalidFrameSize, match="larger than 100"):
            read_frame_size(struct.pack(">i", 101), 100)
        assert read_frame_size(struct.pack(">i", 100), 100) == 100

    def test_frame_prefixes_length(self):
        assert frame(b"abc") == b"\x00\x00\x00\x03abc"


def _header_v1(key, version, corr, client_id):
    if client_id is None:
        cid = b"\xff\xff"
    else:
        enc = client_id.encode()
        cid = struct.pack(">h", len(enc)) + enc
    return struct.pack(">hhi", key, version, corr) + cid


class TestRequestHeader:
    def test_v1(self):
        raw = _header_v1(3, 5, 77, "me") + b"BODY"
        h = parse_request_header(raw, 1)
        assert (h.api_key, h.api_version, h.correlation_id, h.client_id) == (3, 5, 77, "me")
        assert raw[h.size_bytes:] == b"BODY"

    def test_v2_client_id_keeps_int16_length_then_tagged_fields(self):
        # RequestHeader v2: ClientId has "flexibleVersions": "none" -> int16 length, not a compact string.
        raw = _header_v1(3, 12, 9, "client-ä") + b"\x00" + b"BODY"
        h = parse_request_header(raw, 2)
        assert h.client_id == "client-ä"
        assert raw[h.size_bytes:] == b"BODY"

    def test_null_client_id_is_empty(self):
        h = parse_request_header(_header_v1(18, 0, 1, None), 1)
        assert h.client_id == ""

    def test_truncated(self):
        with pytest.raises(InvalidRequest):
            peek_api(b"\x00\x03\x00")
        with pytest.raises(InvalidRequest):
            parse_request_header(struct.pack(">hhi", 3, 1, 1) + b"\x00\x09ab", 1)


class TestResponseHeader:
    def test_api_versions_always_header_v0(self):
        spec = any_spec(ApiKey.API_VERSIONS)
        body = build_response(18, 3, {"api_keys": []})
        out = encode_response(spec, 3, 5, body)
        # size, correlation id, then straight into the body: error_code int16 = 0
        assert out[4:8] == struct.pack(">i", 5)
        assert out[8:10] == b"\x00\x00"
        assert spec.response_header_version(3) == 0

    def test_flexible_response_header_has_tag_byte(self):
        spec = any_spec(ApiKey.METADATA)
        assert spec.response_header_version(9) == 1 and spec.response_header_version(8) == 0
        body = build_response(3, 9, {})
        out = encode_response(spec, 9, 5, body)
        assert out[8] == 0  # empty tagged fields
        assert struct.unpack(">i", out[:4])[0] == len(out) - 4


class TestRegistry:
    reg = ApiRegistry("4.2", set(range(100)))

    def test_produce_advertised_from_zero_enabled_from_three(self):
        p = self.reg.get(ApiKey.PRODUCE)
        assert (p.advertised_min, p.min_version, p.max_version) == (0, 3, 13)
        assert p.flexible_from == 9 and p.client_throttle_from == 6

    @pytest.mark.parametrize(
        "key,flexible,client_throttle",
        [(1, 12, 8), (2, 6, 3), (3, 9, 6), (10, 3, 2), (11, 6, 3), (12, 4, 2), (18, 3, 2), (19, 5, 3),
         (20, 4, 2), (22, 2, 1), (32, 4, 2), (60, 0, None), (48, 1, None)],
    )
    def test_kip219_and_flexible_table(self, key, flexible, client_throttle):
        s = self.reg.get(key)
        assert s.flexible_from == flexible
        assert s.client_throttle_from == client_throttle
        assert s.request_header_version(flexible) == 2
        if flexible > 0:
            assert s.request_header_version(flexible - 1) == 1

    def test_throttle_field_versions_from_schemas(self):
        assert self.reg.get(ApiKey.METADATA).throttle_field_from == 3
        assert self.reg.get(ApiKey.LIST_OFFSETS).throttle_field_from == 2
        assert self.reg.get(ApiKey.INIT_PRODUCER_ID).throttle_field_from == 0
        sasl = self.reg.get(ApiKey.SASL_HANDSHAKE)
        assert sasl.throttle_field_from is None and not sasl.has_throttle_field(1)

    def test_only_implemented_apis(self):
        r = ApiRegistry("4.2", {0, 18})
        assert [s.key for s in r] == [0, 18]

    def test_unknown_release(self):
        with pytest.raises(ValueError, match="unknown Kafka release"):
            ApiRegistry("0.8", {0})
