"""One TCP connection to one broker, speaking through ``schema``: what became of each request.

A request ends in one outcome (``Outcome.kind``):

* ``answer``: a response that reads whole as the schema of its (key, version) says (``body``);
* ``undecodable``: a response frame that does not (``detail`` says where it stopped);
* ``closed``: the broker closed the connection before answering;
* ``no answer``: nothing within the deadline, the connection still open.  A request the broker
  answers never (Produce with acks=0) is told from one it holds (a long-poll Fetch) by a second
  request sent behind it: Kafka answers a connection's requests in order, so the second's answer
  first means the first has none.
* ``unencodable``: the tester could not write it (a value the version cannot carry); not sent.
"""

from __future__ import annotations

import select
import socket
import struct
import time
from dataclasses import dataclass
from typing import Any

from . import schema

_I32 = struct.Struct(">i")
API_VERSIONS = 18
CLIENT_ID = "mockbroker-differential"


@dataclass
class Outcome:
    kind: str  # "answer", "undecodable", "closed", "no answer", "unencodable"
    body: dict[str, Any] | None = None
    detail: str = ""

    def __str__(self) -> str:
        return self.kind if not self.detail else f"{self.kind} ({self.detail})"


class Connection:
    """A blocking connection that never raises for what the broker does: every request has an Outcome."""

    def __init__(self, host: str, port: int, client_id: str | None = CLIENT_ID, connect_timeout: float = 10.0) -> None:
        self.addr = (host, port)
        self.client_id = client_id
        self.sock = socket.create_connection(self.addr, timeout=connect_timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setblocking(False)
        self.buf = bytearray()
        self.corr = 0
        self.closed = False
        self.pending = 0  # requests sent whose answers were given up on (the connection is then spent)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        self.closed = True

    def send(self, api_key: int, version: int, body: dict[str, Any]) -> int:
        self.corr += 1
        frame = schema.encode_request(api_key, version, self.corr, self.client_id, body)
        self._send(frame)
        return self.corr

    def _send(self, data: bytes) -> None:
        self.sock.setblocking(True)
        self.sock.settimeout(10.0)
        try:
            self.sock.sendall(data)
        except OSError:
            self.closed = True
        finally:
            self.sock.setblocking(False)

    def _frame(self, deadline: float) -> bytes | None:
        """The next response frame's payload; None at the deadline; ConnectionError when closed."""
        while True:
            if len(self.buf) >= 4:
                size = _I32.unpack_from(self.buf, 0)[0]
                if size < 0:
                    raise ConnectionError(f"a negative frame size {size}")
                if len(self.buf) >= 4 + size:
                    payload = bytes(self.buf[4:4 + size])
                    del self.buf[:4 + size]
                    return payload
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                continue
            try:
                chunk = self.sock.recv(1 << 20)
            except BlockingIOError:
                continue
            except OSError as e:
                raise ConnectionError(str(e)) from e
            if not chunk:
                raise ConnectionError("closed by the broker")
            self.buf += chunk

    def call(self, api_key: int, version: int, body: dict[str, Any], wait: float = 5.0,
             expect_none: bool = False) -> Outcome:
        """Send one request and wait up to ``wait`` seconds for its outcome.  ``expect_none``: a
        request that may have no answer (acks=0): an ApiVersions follows it to tell at once."""
        if self.closed:
            return Outcome("closed", detail="the connection was closed before")
        try:
            corr = self.send(api_key, version, body)
        except schema.EncodeError as e:
            self.corr -= 1
            return Outcome("unencodable", detail=str(e))
        if self.closed:
            return Outcome("closed", detail="while sending")
        follow = None
        if expect_none:
            follow = self.send(API_VERSIONS, 0, {})
        return self.receive(api_key, version, corr, wait, follow)

    def receive(self, api_key: int, version: int, corr: int, wait: float, follow: int | None = None) -> Outcome:
        deadline = time.monotonic() + wait
        try:
            while True:
                payload = self._frame(deadline)
                if payload is None:
                    self.pending += 1
                    return Outcome("no answer", detail=f"within {wait:g} s")
                got = _I32.unpack_from(payload, 0)[0] if len(payload) >= 4 else None
                if follow is not None and got == follow:
                    return Outcome("no answer", detail="the next request was answered first")
                if got != corr:
                    if got is not None and got < corr:
                        continue  # a late answer to a request given up on
                    return Outcome("undecodable", detail=f"correlation id {got}, expected {corr}")
                try:
                    _c, body = schema.decode_response(api_key, version, payload)
                except (schema.DecodeError, UnicodeDecodeError) as e:
                    return Outcome("undecodable", detail=str(e))
                if follow is not None:  # read the follower's answer off the connection
                    try:
                        self._frame(time.monotonic() + wait)
                    except ConnectionError:
                        self.closed = True
                return Outcome("answer", body)
        except ConnectionError as e:
            self.closed = True
            return Outcome("closed", detail=str(e))

    @property
    def usable(self) -> bool:
        return not self.closed and self.pending == 0


def connect(bootstrap: str, client_id: str | None = CLIENT_ID) -> Connection:
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    return Connection(host.strip("[]"), int(port), client_id)
