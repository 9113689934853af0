"""A minimal blocking Kafka client over a raw socket, for tests and tools.

It sends exactly what it is told (any API, any version, even malformed bytes)
and decodes responses with the same kio codecs, so tests can drive the broker
below the level of a real client library.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from .codec import build_request, decode_response, encode_request
from .registry import ApiKey, any_spec

_I32 = struct.Struct(">i")


class RawKafkaClient:
    def __init__(self, host: str, port: int, client_id: str | None = "raw-client", timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.client_id = client_id
        self._corr = 0

    @classmethod
    def connect(cls, bootstrap: str, **kw: Any) -> "RawKafkaClient":
        host, _, port = bootstrap.split(",")[0].rpartition(":")
        return cls(host.strip("[]"), int(port), **kw)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "RawKafkaClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_frame(self) -> bytes:
        """One response payload (without its size prefix); raises ConnectionError on close."""
        size = _I32.unpack(self._recv_exact(4))[0]
        return self._recv_exact(size)

    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("connection closed by broker")
            buf += chunk
        return bytes(buf)

    def send(self, api_key: int, version: int, body: dict[str, Any] | Any) -> int:
        """Send a request (a dict tree or a kio entity); returns its correlation id."""
        self._corr += 1
        spec = any_spec(api_key)
        assert spec is not None
        entity = build_request(api_key, version, body) if isinstance(body, dict) else body
        self.send_raw(encode_request(api_key, version, self._corr, self.client_id, entity, spec))
        return self._corr

    def request(self, api_key: int, version: int, body: dict[str, Any] | Any) -> Any:
        corr = self.send(api_key, version, body)
        return self.response(api_key, version, corr)

    def response(self, api_key: int, version: int, corr: int) -> Any:
        spec = any_spec(api_key)
        assert spec is not None
        got_corr, resp = decode_response(api_key, version, spec.response_header_version(version), self.recv_frame())
        if got_corr != corr:
            raise AssertionError(f"correlation id {got_corr} != {corr}")
        return resp

    def is_closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True when the broker closes the connection within ``timeout`` (reads nothing else)."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False


def metadata_all_topics_request(version: int = 12, client_id: str = "raw-client", correlation_id: int = 1) -> bytes:
    """A whole framed Metadata request for every topic, no auto-creation (a probe's or a
    benchmark's first question to a broker)."""
    body = build_request(ApiKey.METADATA, version, {
        "topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
    spec = any_spec(ApiKey.METADATA)
    assert spec is not None  # Metadata has a schema in every release
    return encode_request(ApiKey.METADATA, version, correlation_id, client_id, body, spec)
