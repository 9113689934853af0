"""Encoding a Fetch response: record sets unjoined, the body shared within a completion pass.

Kafka sends a ``FetchResponse`` as a ``MultiRecordsSend``: its fields in small buffers, each
partition's records straight from the segment (``FileRecords.writeTo``).  ``encoder`` gives the
Fetch handler's ``Response`` its ``encode``: the body encoded by kio into a ``GatherFrame``
(``protocol/gather.py``: record sets kept by reference, written with one ``sendmsg``).

Fan-out (``shared_encodings.py``): when an append completes the fetches parked on a partition,
the responses of the consumers parked at the same offset are identical but for the first bytes:
the frame size, the correlation id, the throttle time and, from v7, the error code and session
id (``FetchResponse``'s first fields in every version served, v4-18).  Their body is encoded once
in the pass, keyed by everything else it says (each partition's fields and the identity of its
record set), and each response is its own head plus the shared segments.  The bytes on the wire,
and so the size the fetch byte-rate quota charges, are those of an encoding of its own.
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Callable, Hashable
from typing import Any

from protocol.codec import build_response, timedelta_ms
from protocol.gather import GatherFrame, RecordChunks, encode_body_gather, encode_response_gather
from protocol.registry import ApiKey

from ..request import Body, RequestContext
from ..common.shared_encodings import SharedEncodings

# frame size, correlation id, [header tags,] throttle_time_ms[, error_code, session_id]
_HEADS = {(False, False): struct.Struct(">iii"), (False, True): struct.Struct(">iiihi"),
          (True, False): struct.Struct(">iiBi"), (True, True): struct.Struct(">iiBihi")}
_SESSIONS_FROM = 7  # FetchResponse v7: error_code and session_id follow throttle_time_ms


def _records_key(records: Any) -> Hashable:
    return tuple(map(id, records.parts)) if type(records) is RecordChunks else id(records)


def body_key(topics: list[dict[str, Any]]) -> tuple[Hashable, list[Any]] | None:
    """What a Fetch body says besides its first fields, as a key, and the record sets the key
    names by identity; None when it names a leader (NOT_LEADER_OR_FOLLOWER: node endpoints)."""
    key: list[Hashable] = []
    held: list[Any] = []
    for t in topics:
        parts = []
        for e in t["partitions"]:
            if "current_leader" in e:
                return None
            aborted = e["aborted_transactions"]
            records = e["records"]
            held.append(records)
            parts.append((e["partition_index"], e["error_code"], e["high_watermark"], e["last_stable_offset"],
                          e["log_start_offset"], None if aborted is None else
                          tuple((a["producer_id"], a["first_offset"]) for a in aborted),
                          _records_key(records), len(records)))
        key.append((t["topic"], t["topic_id"], tuple(parts)))
    return tuple(key), held


def encoder(shared: SharedEncodings, topics: list[dict[str, Any]]) -> Callable[[RequestContext, Body], GatherFrame]:
    """The ``encode`` of a Fetch ``Response`` whose body lists ``topics``."""
    keyed = body_key(topics)

    def encode(ctx: RequestContext, body: Body) -> GatherFrame:
        v = ctx.version
        if keyed is None or body.get("responses") is not topics or body.get("node_endpoints"):
            return encode_response_gather(ctx.spec, v, ctx.correlation_id, build_response(ApiKey.FETCH, v, body))
        sessions = v >= _SESSIONS_FROM
        error = int(body.get("error_code", 0))
        key, held = keyed

        def make() -> tuple[list[Any], int, list[Any]]:
            segments, n = encode_body_gather(build_response(ApiKey.FETCH, v, {
                **body, "throttle_time": 0, "error_code": error, "session_id": 0}))
            fixed = 10 if sessions else 4
            first = memoryview(segments[0])[fixed:]  # the first segment holds at least the fixed fields
            return ([first, *segments[1:]] if first.nbytes else segments[1:]), n - fixed, held

        rest, n, _held = shared.get((v, error, key), make)
        throttle = body.get("throttle_time", 0)
        if isinstance(throttle, datetime.timedelta):
            throttle = timedelta_ms(throttle)
        flexible = ctx.spec.response_header_version(v) == 1
        fmt = _HEADS[flexible, sessions]
        size = fmt.size - 4 + n
        fields = (throttle, error, int(body.get("session_id", 0))) if sessions else (throttle,)
        head = fmt.pack(size, ctx.correlation_id, 0, *fields) if flexible else fmt.pack(size, ctx.correlation_id, *fields)
        return GatherFrame(head, rest, size + 4)

    return encode
