"""Array sizes and nullability of a request body checked before kio decodes it.

kio's native reader sizes a compact array from its untrusted length varint before reading
any element: a flexible request that claims 2^32 - 2 elements makes it allocate ~34 GB, and a
failed allocation in native code aborts the whole process.  Any client could stop the broker
with a 30-byte request.

Kafka's generated readers refuse such a length first ("Tried to allocate a collection of size
N, but there are only M bytes remaining."), which ends as an InvalidRequestException and a
closed connection.  ``check_request_bounds`` does the same walk kio's reader will do (the field
layout of ``kio.serial._serialize``, with kio's own bounds-checked primitive readers, which
return the value and the number of bytes read), checks every array's length against the bytes
left (each element takes at least one byte) and skips the values.

The walk also refuses a null array in a field that is not nullable, as Kafka's generated
readers do ("non-nullable field X was serialized as null"): kio decodes it to None, which a
handler iterating the field would trip over.  (kio already refuses null non-nullable strings.)

It notes too the i64 durations (kio's ``timedelta_i64``) beyond what kio's reader holds
(2^63 / 1000 ms, its microseconds in an i64): it refuses them ("timedelta milliseconds overflow") where Kafka
reads any long, e.g. a CreateDelegationToken max_lifetime_ms of Long.MAX_VALUE / 2; the decoder cuts
them to that maximum first (``clamp_durations``).

Raises ``ValueError`` (or kio's own buffer errors) on a body that cannot be valid;
``protocol.codec.decode_request`` turns any of them into ``InvalidRequest``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import Field, fields
from functools import cache
from typing import Any

from kio._kio_native import (
    get_reader,
    read_int8,
    read_int32,
    read_nullable_legacy_string,
    read_unsigned_varint,
)
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

# (buffer, position, end of the enclosing value, positions of i64 durations out of range) -> position after the value
Step = Callable[[Any, int, int, list[int]], int]
_I64 = struct.Struct(">q")
# the most milliseconds kio's reader of an i64 duration (max_lifetime_ms, retention_time_ms, ...) takes,
# as it counts microseconds in an i64; Kafka takes any long (Long.MAX_VALUE: "for ever")
TIMEDELTA_MAX_MS = ((1 << 63) - 1) // 1000


def check_request_bounds(cls: type, buf: Any, offset: int) -> list[int]:
    """Walk a request body of kio class ``cls`` at ``offset``; raise on an impossible array size
    or a null array in a field that is not nullable.  The positions of the i64 durations kio
    cannot hold (``clamp_durations`` rewrites them)."""
    out_of_range: list[int] = []
    _entity_step(cls, False)(buf, offset, len(buf), out_of_range)
    return out_of_range


def clamp_durations(buf: Any, positions: list[int]) -> bytes:
    """A copy of ``buf`` with the i64 durations at ``positions`` cut to what kio holds
    (+-``TIMEDELTA_MAX_MS``, some 292,000 years: every handler's min/saturating sum gives
    the same answer as for Kafka's larger value)."""
    copy = bytearray(buf)
    for pos in positions:
        value = _I64.unpack_from(copy, pos)[0]
        _I64.pack_into(copy, pos, TIMEDELTA_MAX_MS if value > 0 else -TIMEDELTA_MAX_MS)
    return bytes(copy)  # kio reads read-only buffers only


def _too_long(count: int, pos: int, end: int) -> None:
    if count > end - pos:
        raise ValueError(f"Tried to allocate a collection of size {count}, but there are only "
                         f"{max(end - pos, 0)} bytes remaining.")


@cache
def _entity_step(cls: type, nullable: bool) -> Step:
    flexible: bool = getattr(cls, "__flexible__")  # a kio entity class attribute (not on type)
    is_header = cls.__name__ == "RequestHeader"
    steps: list[Step] = []
    tagged: dict[int, Step] = {}
    for f in fields(cls):
        tag = get_field_tag(f)
        step = _field_step(f, flexible, is_header, tag is not None)
        if tag is None:
            steps.append(step)
        else:
            tagged[int(tag)] = step

    def read(buf: Any, pos: int, end: int, clamp: list[int]) -> int:
        if nullable:  # KIP-893 nullable struct: an int8 marker
            marker, n = read_int8(buf, pos)
            pos += n
            if marker < 0:
                return pos
        for step in steps:
            pos = step(buf, pos, end, clamp)
        if flexible:
            count, n = read_unsigned_varint(buf, pos)
            pos += n
            _too_long(count, pos, end)
            for _ in range(count):
                tag, n = read_unsigned_varint(buf, pos)
                pos += n
                size, n = read_unsigned_varint(buf, pos)
                pos += n
                _too_long(size, pos, end)
                known = tagged.get(tag)
                if known is not None:
                    known(buf, pos, pos + size, clamp)
                pos += size
        return pos

    return read


def _field_step(f: Field[Any], flexible: bool, is_header: bool, is_tag: bool) -> Step:
    if is_header and f.name == "client_id":  # always a legacy string (RequestHeader.json)
        return _primitive(read_nullable_legacy_string)
    optional = False if is_tag else is_optional(f)
    match classify_field(f):
        case PrimitiveField():
            if get_schema_field_type(f) == "timedelta_i64":
                return _duration
            return _primitive(get_reader(get_schema_field_type(f), flexible, optional))
        case PrimitiveTupleField():
            return _array(_primitive(get_reader(get_schema_field_type(f), flexible, False)), flexible,
                          f.name, optional)
        case EntityField(field_type):
            return _entity_step(field_type, optional)
        case EntityTupleField(field_type):
            return _array(_entity_step(field_type, False), flexible, f.name, optional)
    raise TypeError(f"unclassified field {f.name}")  # pragma: no cover


def _duration(buf: Any, pos: int, end: int, clamp: list[int]) -> int:
    """An i64 duration (kio: timedelta_i64), noted when kio's reader would refuse it."""
    if abs(_I64.unpack_from(buf, pos)[0]) > TIMEDELTA_MAX_MS:
        clamp.append(pos)
    return pos + 8


def _primitive(reader: Any) -> Step:
    def read(buf: Any, pos: int, end: int, clamp: list[int]) -> int:
        size: int = reader(buf, pos)[1]
        return pos + size

    return read


def _array(item: Step, flexible: bool, name: str, nullable: bool) -> Step:
    def read(buf: Any, pos: int, end: int, clamp: list[int]) -> int:
        count: int
        n: int
        if flexible:
            count, n = read_unsigned_varint(buf, pos)
            count -= 1  # 0 is null
        else:
            count, n = read_int32(buf, pos)
        pos += n
        if count <= 0:
            if count < 0 and not nullable:  # kio would hand the handler None
                raise ValueError(f"non-nullable field {name} was serialized as null")
            return pos
        _too_long(count, pos, end)
        for _ in range(count):
            pos = item(buf, pos, end, clamp)
        return pos

    return read
