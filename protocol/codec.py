"""Request/response codecs, all from kio (generated from Kafka's JSON schemas).

Nothing here hand-writes a message codec.  Where kio 0.6.5 lags Kafka 4.4 (a
version or an API it lacks), the class comes from ``protocol/generated/``:
modules of kio's form that ``scripts/gen_kafka_messages.py`` writes from Kafka's
own schemas, read and written by kio's reader and writer all the same (the writer
compiled per class by ``compiled_writer.py``: kio's bytes, its per-field work done
once).  This module adds three things kio leaves to its caller:

* looking up the class for ``(api_key, version)``, kio's or generated (cached);
* the request header rule (v1 or v2 by flexibility; ``client_id`` keeps its
  int16 length even in v2, which kio's RequestHeader reader honours) and the
  response header rule (ApiVersions always v0, KIP-511);
* ``build``: turn a version-agnostic tree of dicts into the kio entity of one
  version.  Handlers describe a response once, for every version; fields that
  a version lacks are dropped, fields it has and the handler did not set take
  the schema default (or the type's zero).  This is how franz-go's kfake
  handlers fill ``kmsg`` structs for every version with one code path.

  Dropping what a version lacks would also drop a misspelt key silently (the
  field it meant then goes out as its zero value: error code 0).  With strict
  keys on (the test suite turns them on, and ``PROTOCOL_STRICT_KEYS=1``
  does for a broker process) ``build_response``/``build_request`` refuse, with
  ``UnknownFieldError``, a key that no version of the message has at that
  place in the tree.  Off, the check costs nothing.
"""

from __future__ import annotations

import datetime
import io
import os
import struct
import uuid
from collections.abc import Mapping
from dataclasses import MISSING, fields
from functools import cache
from importlib import import_module
from types import ModuleType
from typing import Any

from kio.index import load_payload_module
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.serial import entity_reader
from kio.serial.readers import Reader
from kio.serial._implicit_defaults import primitive_implicit_defaults
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    is_optional,
)
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32

from .bounds import check_request_bounds, clamp_durations
from .compiled_writer import DictRules, compiled_dict_writer, compiled_writer
from .errors import InvalidRequest
from .generated.index import module_name as generated_module
from .registry import ApiSpec, schema_versions
from .request_defaults import ABSENT_DEFAULTS

_HEADER_PREFIX = struct.Struct(">hhi")
_I32 = struct.Struct(">i")
_UTC = datetime.timezone.utc
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=_UTC)


class RequestHeader:
    """The parsed request header; ``client_id`` is "" when null (as Kafka)."""

    __slots__ = ("api_key", "api_version", "correlation_id", "client_id", "size_bytes")

    def __init__(
        self, api_key: int, api_version: int, correlation_id: int, client_id: str, size_bytes: int
    ) -> None:
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id
        self.size_bytes = size_bytes

    def __repr__(self) -> str:
        return (
            f"RequestHeader(key={self.api_key}, v={self.api_version}, "
            f"corr={self.correlation_id}, client_id={self.client_id!r})"
        )


def peek_api(payload: bytes | memoryview) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) of a frame payload."""
    if len(payload) < _HEADER_PREFIX.size:
        raise InvalidRequest(f"request header truncated ({len(payload)} bytes)")
    return _HEADER_PREFIX.unpack_from(payload, 0)


_HEADER_READERS: dict[int, Reader[RequestHeaderV1 | RequestHeaderV2]] = {
    1: entity_reader(RequestHeaderV1), 2: entity_reader(RequestHeaderV2)}


def parse_request_header(payload: bytes | memoryview, header_version: int) -> RequestHeader:
    try:
        hdr, end = _HEADER_READERS[header_version](payload, 0)
    except Exception as e:  # noqa: BLE001 - any decode fault is a wire fault
        raise InvalidRequest(f"Error parsing request header: {e!r}") from None
    return RequestHeader(
        hdr.request_api_key,
        hdr.request_api_version,
        hdr.correlation_id,
        hdr.client_id or "",
        end,
    )


def _payload_class(module: object, suffix: str) -> type:
    for name, obj in vars(module).items():
        if (
            name.endswith(suffix)
            and isinstance(obj, type)
            and getattr(obj, "__type__", None) in (EntityType.request, EntityType.response)
        ):
            return obj
    raise LookupError(f"no {suffix} class in {module!r}")


def payload_module(api_key: int, version: int, entity_type: EntityType) -> ModuleType:
    """The module of a request or response: the generated one where kio lacks it, else kio's."""
    kind = "request" if entity_type is EntityType.request else "response"
    name = generated_module(api_key, version, kind)
    if name is not None:
        return import_module(name)
    if entity_type is EntityType.request:
        return load_payload_module(api_key, version, EntityType.request)
    return load_payload_module(api_key, version, EntityType.response)


# A message's module is imported when its (api key, version) is first used, then cached:
# a broker that only ever sees Metadata and ApiVersions loads those modules and no others.
@cache
def request_class(api_key: int, version: int) -> type:
    module = payload_module(api_key, version, EntityType.request)
    _fill_absent_fields(api_key, module)
    return _payload_class(module, "Request")


def _fill_absent_fields(api_key: int, module: ModuleType) -> None:
    """Give the request classes of one version the fields other versions have, as class attributes
    holding their schema default (``request_defaults``): a handler reads ``req.session_epoch`` on a
    Fetch of any version, as Kafka's generated ``FetchRequestData`` has it, and
    ``protocol.request_types`` types it.  Instances and the encoders are untouched (the
    dataclass fields are the version's own)."""
    absent = ABSENT_DEFAULTS.get(api_key)
    if not absent:
        return
    for obj in vars(module).values():
        if not isinstance(obj, type) or obj.__module__ != module.__name__:
            continue
        for name, value in absent.get(obj.__name__, {}).items():
            if name not in getattr(obj, "__dataclass_fields__", ()):
                setattr(obj, name, value)


@cache
def response_class(api_key: int, version: int) -> type:
    return _payload_class(payload_module(api_key, version, EntityType.response), "Response")


_READERS: dict[type, Any] = {}
_WRITERS: dict[type, Any] = {}


def _reader(cls: type) -> Any:
    reader = _READERS.get(cls)
    if reader is None:
        reader = _READERS[cls] = entity_reader(cls)
    return reader


def _writer(cls: type) -> Any:
    writer = _WRITERS.get(cls)
    if writer is None:
        writer = _WRITERS[cls] = compiled_writer(cls)  # kio's entity_writer, compiled per class
    return writer


def decode_request(api_key: int, version: int, payload: bytes | memoryview, offset: int) -> Any:
    """Decode the request body that starts at ``offset``; wire faults raise InvalidRequest."""
    cls = request_class(api_key, version)
    try:
        out_of_range = check_request_bounds(cls, payload, offset)  # kio's native reader trusts array lengths
        if out_of_range:  # durations beyond a timedelta (Long.MAX_VALUE ms): kio would refuse them
            payload = clamp_durations(payload, out_of_range)
        body, _end = _reader(cls)(payload, offset)
    except Exception as e:  # noqa: BLE001 - kio raises several types; all mean "does not parse"
        raise InvalidRequest(
            f"Error parsing request body of api key {api_key} v{version}: {e!r}"
        ) from None
    return body


def encode_request(
    api_key: int, version: int, correlation_id: int, client_id: str | None, body: Any,
    spec: ApiSpec,
) -> bytes:
    """Encode a full framed request (used by tests and tools that speak raw Kafka)."""
    hdr_cls = RequestHeaderV2 if spec.request_header_version(version) == 2 else RequestHeaderV1
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    _writer(hdr_cls)(
        buf,
        hdr_cls(
            request_api_key=i16(api_key), request_api_version=i16(version),
            correlation_id=i32(correlation_id), client_id=client_id,
        ),
    )
    _writer(type(body))(buf, body)
    out = buf.getbuffer()
    _I32.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def encode_response(
    spec: ApiSpec, version: int, correlation_id: int, body: Any
) -> memoryview:
    """Frame a response: size, correlation id, header tags (v1), body.

    Returns a view of the encode buffer (no final copy: record data is copied
    once, into the buffer, and the transport sends from it).
    """
    return _frame_response(spec, version, correlation_id, _writer(type(body)), body)


def encode_response_dict(spec: ApiSpec, version: int, correlation_id: int, data: Mapping[str, Any]) -> memoryview:
    """``encode_response(spec, version, correlation_id, build_response(spec.key, version, data))``, the same
    bytes without building the entity (``compiled_writer.compiled_dict_writer``: build's rules as it
    writes); the strict keys checked as ``build_response`` checks them."""
    if _strict_keys:
        _check_keys(data, _known_keys(spec.key, EntityType.response), (), f"response of api key {spec.key}")
    writer = compiled_dict_writer(response_class(spec.key, version), _DICT_RULES)
    return _frame_response(spec, version, correlation_id, writer, data)


def _frame_response(spec: ApiSpec, version: int, correlation_id: int, writer: Any, body: Any) -> memoryview:
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    buf.write(_I32.pack(correlation_id))
    if spec.response_header_version(version) == 1:
        buf.write(b"\0")  # empty tagged fields
    writer(buf, body)
    out = buf.getbuffer()
    _I32.pack_into(out, 0, len(out) - 4)
    return out


def decode_response(api_key: int, version: int, header_version: int, payload: bytes) -> tuple[int, Any]:
    """(correlation_id, body) of a response payload without its size prefix (for tests)."""
    (corr,) = _I32.unpack_from(payload, 0)
    off = 4 + (1 if header_version == 1 else 0)  # tagged fields, empty from brokers
    body, _ = _reader(response_class(api_key, version))(payload, off)
    return corr, body


# -- version-agnostic construction -------------------------------------------------


def _zero(field: Any, kind: Any) -> Any:
    if field.default is not MISSING:
        return field.default
    if field.default_factory is not MISSING:
        return field.default_factory()
    if isinstance(kind, (PrimitiveTupleField, EntityTupleField)):
        return ()
    if is_optional(field):
        return None
    if isinstance(kind, EntityField):
        return build(kind.type_, {})
    t = kind.type_
    if t is ErrorCode:
        return ErrorCode.none
    for base in t.__mro__:
        if base in primitive_implicit_defaults:
            return primitive_implicit_defaults[base]
    if t is bool:
        return False
    raise TypeError(f"no zero for {field.name}: {t}")


def _coerce(kafka_type: str, value: Any) -> Any:
    if value is None:
        return None
    if kafka_type == "error_code":
        return value if isinstance(value, ErrorCode) else ErrorCode(int(value))
    if kafka_type.startswith("timedelta") and not isinstance(value, datetime.timedelta):
        return datetime.timedelta(milliseconds=int(value))
    if kafka_type == "datetime_i64" and not isinstance(value, datetime.datetime):
        v = int(value)
        return None if v < 0 else _EPOCH + datetime.timedelta(milliseconds=v)
    if kafka_type == "uuid" and not isinstance(value, uuid.UUID):
        return uuid.UUID(int=int(value)) if isinstance(value, int) else uuid.UUID(str(value))
    return value


@cache
def _plan(cls: type) -> tuple[tuple[str, Any, str, Any], ...]:
    plan = []
    for f in fields(cls):
        kind = classify_field(f)
        kafka_type = f.metadata.get("kafka_type", "")
        plan.append((f.name, kind, kafka_type, f))
    return tuple(plan)


class UnknownFieldError(KeyError):
    """A dict key that no version of the message has at that place (strict keys only)."""


_strict_keys = os.environ.get("PROTOCOL_STRICT_KEYS") == "1"


def set_strict_keys(on: bool) -> None:
    """Refuse keys no version of a message has (the test suite turns this on)."""
    global _strict_keys
    _strict_keys = on


@cache
def _known_keys(api_key: int, entity_type: EntityType) -> dict[tuple[str, ...], frozenset[str]]:
    """The field names at each path of a message's tree (a path is the field names from the
    root), over every version there is of it (kio's and generated)."""
    known: dict[tuple[str, ...], set[str]] = {}

    def walk(cls: type, path: tuple[str, ...]) -> None:
        names = known.setdefault(path, set())
        for name, kind, _kafka_type, _f in _plan(cls):
            names.add(name)
            if isinstance(kind, (EntityField, EntityTupleField)):
                walk(kind.type_, (*path, name))

    suffix = "Request" if entity_type is EntityType.request else "Response"
    for v in schema_versions(api_key):
        walk(_payload_class(payload_module(api_key, v, entity_type), suffix), ())
    return {path: frozenset(names) for path, names in known.items()}


def _check_keys(data: Any, known: dict[tuple[str, ...], frozenset[str]], path: tuple[str, ...],
                where: str) -> None:
    if data is None or not isinstance(data, Mapping):
        return  # a kio entity given as is, or null
    names = known.get(path)
    if names is None:
        return
    unknown = set(data) - names
    if unknown:
        at = ".".join(path) or "the top level"
        raise UnknownFieldError(f"{where}: no version has {sorted(unknown)} at {at}")
    for key, value in data.items():
        sub = (*path, key)
        if sub not in known:
            continue
        if isinstance(value, (list, tuple)):
            for item in value:
                _check_keys(item, known, sub, where)
        else:
            _check_keys(value, known, sub, where)


def build(cls: type, data: Mapping[str, Any]) -> Any:
    """Build kio entity ``cls`` from a plain dict tree, whatever its version."""
    kwargs = {}
    for name, kind, kafka_type, f in _plan(cls):
        if name not in data:
            kwargs[name] = _zero(f, kind)
            continue
        value = data[name]
        if isinstance(kind, PrimitiveField):
            kwargs[name] = _coerce(kafka_type, value)
        elif isinstance(kind, EntityTupleField):
            sub = kind.type_
            kwargs[name] = None if value is None else tuple(
                v if isinstance(v, sub) else build(sub, v) for v in value
            )
        elif isinstance(kind, EntityField):
            kwargs[name] = (
                None if value is None else value if isinstance(value, kind.type_)
                else build(kind.type_, value)
            )
        else:  # PrimitiveTupleField
            kwargs[name] = None if value is None else tuple(_coerce(kafka_type, v) for v in value)
    return cls(**kwargs)


_DICT_RULES = DictRules(build, _coerce, _zero)


def build_response(api_key: int, version: int, data: Mapping[str, Any]) -> Any:
    if _strict_keys:
        _check_keys(data, _known_keys(api_key, EntityType.response), (), f"response of api key {api_key}")
    return build(response_class(api_key, version), data)


def build_request(api_key: int, version: int, data: Mapping[str, Any]) -> Any:
    if _strict_keys:
        _check_keys(data, _known_keys(api_key, EntityType.request), (), f"request of api key {api_key}")
    return build(request_class(api_key, version), data)


def timedelta_ms(value: datetime.timedelta | int | None) -> int:
    """Milliseconds of a kio timedelta field (ints pass through)."""
    if value is None:
        return 0
    if isinstance(value, datetime.timedelta):
        return (value.days * 86_400_000) + (value.seconds * 1000) + (value.microseconds // 1000)
    return int(value)


@cache
def _subscription_reader(version: int) -> Any:
    from importlib import import_module

    mod = import_module(f"kio.schema.consumer_protocol_subscription.v{version}.data")
    return entity_reader(mod.ConsumerProtocolSubscription)


def decode_consumer_subscription(metadata: bytes) -> list[str] | None:
    """The topics of a ``consumer`` protocol member's JoinGroup metadata (ConsumerProtocolSubscription:
    an int16 version, then that version's struct; versions above the newest known are read as the
    newest, as Kafka's ConsumerProtocol does).  None when it does not parse."""
    if len(metadata) < 2:
        return None
    version = struct.unpack_from(">h", metadata, 0)[0]
    if version < 0:
        return None
    try:
        body, _ = _subscription_reader(min(version, 3))(metadata, 2)
    except Exception:  # noqa: BLE001 - any malformed metadata
        return None
    return list(body.topics)


@cache
def _assignment_reader(version: int) -> Any:
    from importlib import import_module

    mod = import_module(f"kio.schema.consumer_protocol_assignment.v{version}.data")
    return entity_reader(mod.ConsumerProtocolAssignment)


def decode_consumer_assignment(assignment: bytes) -> dict[str, list[int]] | None:
    """The partitions a ``consumer`` protocol leader gave a member in SyncGroup
    (ConsumerProtocolAssignment, read as ``decode_consumer_subscription`` reads subscriptions):
    {topic: [partitions]}.  None when it does not parse; {} for an empty assignment."""
    if not assignment:
        return {}
    if len(assignment) < 2:
        return None
    version = struct.unpack_from(">h", assignment, 0)[0]
    if version < 0:
        return None
    try:
        body, _ = _assignment_reader(min(version, 3))(assignment, 2)
    except Exception:  # noqa: BLE001 - any malformed assignment
        return None
    return {tp.topic: sorted(tp.partitions) for tp in body.assigned_partitions}
