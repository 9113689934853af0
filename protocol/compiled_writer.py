"""kio's entity writer, compiled per class: the same bytes, with the per-field work done once.

kio's ``entity_writer`` walks a class's fields at every write: a writer function per field, a
phantom type built for every length (``uvarint(len + 1)``, checked on construction), one
``struct.pack`` per number and a ``BytesIO`` per flexible entity for its tagged fields.  A broker
answers thousands of small responses a second (a one-record Produce, a ShareFetch), and that walk
was about a third of the CPU each cost (bench/share_consumers.py).

``compiled_writer(cls)`` reads the same field metadata kio's writer reads (``kafka_type``, tags,
nullability, flexibility: kio's ``get_field_writer`` rules, including the request header's legacy
``client_id``) once, and writes a function of straight-line code for the class, as ``dataclasses``
compiles ``__init__``: consecutive fixed-width fields packed by one ``struct.Struct``, lengths from a
table of their varint encodings, nested entities and arrays by their own compiled writers, the
tagged fields compared with their defaults as kio compares them.  It writes to any writable
(``BytesIO``, the ``GatherBuffer`` that keeps record sets by reference), a bytes or records value
with one ``write`` of the value itself.

Still kio's encoding, not a hand-written codec: no message is described here, only kio's rules per
wire type; ``tests/unit/protocol/test_compiled_writer.py`` checks the bytes against kio's writer for every
request and response class of every version there is, with drawn values.  A class whose fields
fall outside those rules keeps kio's own writer.
"""

from __future__ import annotations

import datetime
import io
import struct
import uuid
from collections.abc import Callable
from dataclasses import MISSING, Field, fields
from typing import Any

from kio.serial import entity_writer
from kio.serial._implicit_defaults import get_tagged_field_default
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

Writer = Callable[[Any, Any], None]

# fixed-width wire types: struct code, and how a field value becomes what it packs (kio's writers)
_FIXED = {
    "int8": ("b", "{}"), "int16": ("h", "{}"), "int32": ("i", "{}"), "int64": ("q", "{}"),
    "uint8": ("B", "{}"), "uint16": ("H", "{}"), "uint32": ("I", "{}"), "uint64": ("Q", "{}"),
    "float64": ("d", "{}"), "bool": ("?", "{}"),
    "error_code": ("h", "{}.value"),
    "timedelta_i32": ("i", "round({}.total_seconds() * 1000)"),
    "timedelta_i64": ("q", "round({}.total_seconds() * 1000)"),
    "datetime_i64": ("q", "round({}.timestamp() * 1000)"),
    "uuid": ("16s", "_uuid({})"),
}
_UV_TABLE = [bytes([n]) if n < 0x80 else bytes([0x80 | (n & 0x7F), n >> 7]) for n in range(1 << 14)]
_ZERO_UUID = bytes(16)
_I16_MAX = 2**15 - 1
_I32_MAX = 2**31 - 1


def _uv(n: int) -> bytes:
    """An unsigned varint (kio's ``_write_varint``): a table lookup below 2**14."""
    if 0 <= n < 16384:
        return _UV_TABLE[n]
    out = bytearray()
    while True:
        chunk = n & 0x7F
        n >>= 7
        if not n:
            out.append(chunk)
            return bytes(out)
        out.append(0x80 | chunk)


def _uuid(value: uuid.UUID | None) -> bytes:
    return _ZERO_UUID if value is None else value.bytes


def _nullable_datetime(value: datetime.datetime | None) -> int:
    return -1 if value is None else round(value.timestamp() * 1000)


def _legacy_length(n: int, limit: int, what: str) -> int:
    if n > limit:
        from kio.serial.errors import OutOfBoundValue

        raise OutOfBoundValue(f"{what} is too long for legacy format ({n} > {limit})")
    return n


class _Unsupported(Exception):
    """A field kio's writer has no rule for: the class keeps kio's writer (which then raises)."""


_CACHE: dict[tuple[type, bool], Writer] = {}


def compiled_writer(cls: type, nullable: bool = False) -> Writer:
    """``kio.serial.entity_writer(cls, nullable)``, compiled (cached per class)."""
    key = (cls, nullable)
    writer = _CACHE.get(key)
    if writer is None:
        try:
            writer = _compile(cls, nullable)
        except _Unsupported:
            writer = entity_writer(cls, nullable=True) if nullable else entity_writer(cls)
        _CACHE[key] = writer
    return writer


class _Source:
    """The code of one compiled writer: its lines, and the names its namespace binds."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ns: dict[str, Any] = {"_uv": _uv, "_UV": _UV_TABLE, "_uuid": _uuid, "_nullable_datetime": _nullable_datetime,
                                   "_legacy_length": _legacy_length, "_I16_MAX": _I16_MAX, "_I32_MAX": _I32_MAX,
                                   "io": io, "MISSING": MISSING}
        self._names = 0

    def bind(self, value: Any) -> str:
        name = f"_c{self._names}"
        self._names += 1
        self.ns[name] = value
        return name

    def add(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)


def _length(src: _Source, indent: int, expr: str, flexible: bool, legacy_limit: int, legacy_code: str,
            what: str) -> None:
    """Write a length: a compact varint of length + 1, or the legacy signed int."""
    if flexible:
        src.add(indent, f"n = {expr} + 1")
        src.add(indent, "w(_UV[n] if n < 16384 else _uv(n))")
    else:
        packer = src.bind(struct.Struct(">" + legacy_code).pack)
        src.add(indent, f"w({packer}(_legacy_length({expr}, {legacy_limit}, {what!r})))")


def _primitive(src: _Source, indent: int, var: str, kafka_type: str, flexible: bool, optional: bool,
               legacy_client_id: bool = False) -> None:
    """Write primitive ``var`` (not part of a fixed-width run), as kio's ``get_writer`` picks."""
    if legacy_client_id or (kafka_type == "string" and not flexible):
        if optional or legacy_client_id:
            src.add(indent, f"if {var} is None:")
            src.add(indent + 1, "w(b'\\xff\\xff')")
            src.add(indent, "else:")
            indent += 1
        else:
            src.add(indent, f"if {var} is None:")
            src.add(indent + 1, "raise TypeError('Unexpectedly received None value')")
        src.add(indent, f"b = {var}.encode()")
        _length(src, indent, "len(b)", False, _I16_MAX, "h", "String")
        src.add(indent, "w(b)")
        return
    if kafka_type in ("string", "bytes", "records"):
        if flexible:
            src.add(indent, f"if {var} is None:")
            src.add(indent + 1, "w(b'\\x00')" if optional else "raise TypeError('Unexpectedly received None value')")
            src.add(indent, "else:")
            src.add(indent + 1, f"b = {var}.encode() if isinstance({var}, str) else {var}")
            _length(src, indent + 1, "len(b)", True, 0, "", "")
            src.add(indent + 1, "w(b)")
        else:  # legacy bytes: an int32 length
            src.add(indent, f"if {var} is None:")
            src.add(indent + 1, "w(b'\\xff\\xff\\xff\\xff')" if optional
                    else "raise TypeError('Unexpectedly received None value')")
            src.add(indent, "else:")
            _length(src, indent + 1, f"len({var})", False, _I32_MAX, "i", "Bytes")
            src.add(indent + 1, f"w({var})")
        return
    if kafka_type == "datetime_i64" and optional:
        packer = src.bind(struct.Struct(">q").pack)
        src.add(indent, f"w({packer}(_nullable_datetime({var})))")
        return
    if kafka_type in _FIXED and (not optional or kafka_type == "uuid"):
        code, conv = _FIXED[kafka_type]
        packer = src.bind(struct.Struct(">" + code).pack)
        src.add(indent, f"w({packer}({conv.format(var)}))")
        return
    raise _Unsupported(f"{kafka_type} flexible={flexible} optional={optional}")


def _value(src: _Source, indent: int, var: str, f: Field[Any], flexible: bool, optional: bool,
           legacy_client_id: bool) -> None:
    """Write ``var``, the value of field ``f`` (kio's ``get_field_writer``)."""
    kind = classify_field(f)
    if isinstance(kind, PrimitiveField):
        _primitive(src, indent, var, get_schema_field_type(f), flexible, optional, legacy_client_id)
        return
    if isinstance(kind, EntityField):
        sub = src.bind(compiled_writer(kind.type_, nullable=optional))
        src.add(indent, f"{sub}(buf, {var})")
        return
    # arrays: the length (null: compact 0, legacy -1), then each item
    src.add(indent, f"if {var} is None:")
    src.add(indent + 1, "w(b'\\x00')" if flexible else "w(b'\\xff\\xff\\xff\\xff')")
    src.add(indent, "else:")
    _length(src, indent + 1, f"len({var})", flexible, _I32_MAX, "i", "Sequence")
    item = f"x{indent}"
    if isinstance(kind, EntityTupleField):
        sub = src.bind(compiled_writer(kind.type_))
        src.add(indent + 1, f"for {item} in {var}:")
        src.add(indent + 2, f"{sub}(buf, {item})")
        return
    assert isinstance(kind, PrimitiveTupleField)
    src.add(indent + 1, f"for {item} in {var}:")
    _primitive(src, indent + 2, item, get_schema_field_type(f), flexible, False)


def _fixed_code(f: Field[Any], optional: bool) -> tuple[str, str] | None:
    """(struct code, value expression) of a field that packs to a fixed width, else None."""
    kind = classify_field(f)
    if not isinstance(kind, PrimitiveField):
        return None
    kafka_type = get_schema_field_type(f)
    if kafka_type not in _FIXED or (optional and kafka_type != "uuid"):
        return None
    code, conv = _FIXED[kafka_type]
    return code, conv.format(f"e.{f.name}")


def _compile(cls: type, nullable: bool) -> Writer:
    flexible: bool = getattr(cls, "__flexible__")  # kio's Entity protocol: every entity class says
    is_request_header = cls.__name__ == "RequestHeader"
    src = _Source()
    src.add(0, "def write(buf, e):")
    src.add(1, "w = buf.write")
    if nullable:  # KIP-893: an int8 marker, -1 null, 1 present
        src.add(1, "if e is None:")
        src.add(2, "w(b'\\xff')")
        src.add(2, "return")
        src.add(1, "w(b'\\x01')")
    run: list[tuple[str, str]] = []

    def flush() -> None:
        if run:
            packer = src.bind(struct.Struct(">" + "".join(c for c, _ in run)).pack)
            src.add(1, f"w({packer}({', '.join(v for _, v in run)}))")
            run.clear()

    tagged: list[tuple[int, Field[Any]]] = []
    for f in fields(cls):
        tag = get_field_tag(f)
        if tag is not None:
            tagged.append((int(tag), f))
            continue
        optional = is_optional(f)
        legacy_client_id = is_request_header and f.name == "client_id"
        fixed = None if legacy_client_id else _fixed_code(f, optional)
        if fixed is not None:
            run.append(fixed)
            continue
        flush()
        src.add(1, f"v = e.{f.name}")
        _value(src, 1, "v", f, flexible, optional, legacy_client_id)
    flush()
    if flexible:
        if not tagged:
            src.add(1, "w(b'\\x00')")
        else:  # kio: in tag order, each field unless its default, then the count and the fields
            src.add(1, "tags = []")
            for number, f in sorted(tagged, key=lambda t: t[0]):
                src.add(1, f"v = e.{f.name}")
                _tag(src, number, f, flexible)
            _tags_end(src)
    return _compiled(src, "writer", cls)


def _tag(src: _Source, number: int, f: Field[Any], flexible: bool) -> None:
    """Append tagged field ``f`` (its value in ``v``) to ``tags`` unless it holds its default, as kio does."""
    default = src.bind(f.default)
    implicit = src.bind(get_tagged_field_default(f))
    missing = src.bind(f.default == MISSING)
    tag_writer = src.bind(_tag_value_writer(f, flexible))
    src.add(1, f"if not (v == {default} or ({missing} and v == {implicit})):")
    src.add(2, "t = io.BytesIO()")
    src.add(2, f"{tag_writer}(t, v)")
    src.add(2, "d_ = t.getvalue()")
    src.add(2, f"tags.append({_uv(number)!r} + _uv(len(d_)) + d_)")


def _tags_end(src: _Source) -> None:
    """The tagged fields' count, then the fields."""
    src.add(1, "w(_uv(len(tags)))")
    src.add(1, "for t in tags:")
    src.add(2, "w(t)")


def _compiled(src: _Source, what: str, cls: type) -> Writer:
    code = "\n".join(src.lines)
    exec(compile(code, f"<compiled {what} of {cls.__module__}.{cls.__qualname__}>", "exec"), src.ns)  # noqa: S102
    writer: Writer = src.ns["write"]
    return writer


def _tag_value_writer(f: Field[Any], flexible: bool) -> Writer:
    """The writer of a tagged field's value (kio writes it non-nullably: null is its absence)."""
    src = _Source()
    src.add(0, "def write(buf, v):")
    src.add(1, "w = buf.write")
    _value(src, 1, "v", f, flexible, False, False)
    exec(compile("\n".join(src.lines), f"<compiled writer of tag {f.name}>", "exec"), src.ns)  # noqa: S102
    writer: Writer = src.ns["write"]
    return writer


# -- writing a version-agnostic dict tree (codec.build's rules) without building the entity -----------

_COERCED = ("error_code", "timedelta_i32", "timedelta_i64", "datetime_i64", "uuid")


class DictRules:
    """What ``codec.build`` does to a dict tree, handed in by the codec (which imports this module):
    ``build(cls, data)``, ``coerce(kafka_type, value)`` and ``zero(field, kind)``."""

    def __init__(self, build: Callable[[type, Any], Any], coerce: Callable[[str, Any], Any],
                 zero: Callable[[Field[Any], Any], Any]) -> None:
        self.build = build
        self.coerce = coerce
        self.zero = zero
        self.cache: dict[type, Writer] = {}


def compiled_dict_writer(cls: type, rules: DictRules) -> Writer:
    """Write what ``compiled_writer(cls)`` writes of ``rules.build(cls, data)`` for a dict tree ``data``
    (nested values may be entities already), without building it: a field the dict lacks takes the
    build's zero, a value the build coerces (error codes, durations and timestamps as ints, uuids) is
    coerced as it would be.  An entity of ``cls`` given instead of a dict is written as it is."""
    writer = rules.cache.get(cls)
    if writer is None:
        try:
            writer = _compile_dict(cls, rules)
        except _Unsupported:
            entity = compiled_writer(cls)

            def writer(buf: Any, data: Any) -> None:
                entity(buf, data if isinstance(data, cls) else rules.build(cls, data))
        rules.cache[cls] = writer
    return writer


def _compile_dict(cls: type, rules: DictRules) -> Writer:
    flexible: bool = getattr(cls, "__flexible__")
    src = _Source()
    src.ns.update(_CLS=cls, _ENTITY=compiled_writer(cls), _MISS=_MISS, _coerce=rules.coerce, _build=rules.build)
    src.add(0, "def write(buf, d):")
    src.add(1, "if isinstance(d, _CLS):")
    src.add(2, "return _ENTITY(buf, d)")
    src.add(1, "w = buf.write")
    run: list[tuple[str, str]] = []

    def flush() -> None:
        if run:
            packer = src.bind(struct.Struct(">" + "".join(c for c, _ in run)).pack)
            src.add(1, f"w({packer}({', '.join(v for _, v in run)}))")
            run.clear()

    def fetch(var: str, f: Field[Any], kind: Any) -> None:
        """``var`` = the dict's value of ``f``, else the build's zero (a value the build made already)."""
        zero = src.bind(rules.zero(f, kind))
        src.add(1, f"{var} = d.get({f.name!r}, _MISS)")
        src.add(1, f"if {var} is _MISS:")
        src.add(2, f"{var} = {zero}")

    tagged: list[tuple[int, Field[Any]]] = []
    for i, f in enumerate(fields(cls)):
        tag = get_field_tag(f)
        if tag is not None:
            tagged.append((int(tag), f))
            continue
        kind = classify_field(f)
        optional = is_optional(f)
        if isinstance(kind, PrimitiveField):
            kafka_type = get_schema_field_type(f)
            var = f"f{i}"
            fetch(var, f, kind)
            if kafka_type in _COERCED:
                src.add(1, f"{var} = _coerce({kafka_type!r}, {var})")
            fixed = _fixed_code(f, optional)
            if fixed is not None:
                run.append((fixed[0], _FIXED[kafka_type][1].format(var)))
                continue
            flush()
            _primitive(src, 1, var, kafka_type, flexible, optional)
            continue
        flush()
        fetch("v", f, kind)
        if isinstance(kind, PrimitiveTupleField):
            kafka_type = get_schema_field_type(f)
            if kafka_type in _COERCED:
                src.add(1, f"v = None if v is None else [_coerce({kafka_type!r}, x) for x in v]")
            _value(src, 1, "v", f, flexible, optional, False)
            continue
        sub = kind.type_
        sub_cls, sub_entity = src.bind(sub), src.bind(compiled_writer(sub))
        sub_dict = src.bind(_LazyDictWriter(sub, rules))
        if isinstance(kind, EntityField):
            src.add(1, "if v is None:")
            src.add(2, "w(b'\\xff')" if optional else f"{sub_entity}(buf, v)")  # kio's: a marker, or its error
            src.add(1, "else:")
            if optional:
                src.add(2, "w(b'\\x01')")
            src.add(2, f"({sub_entity} if isinstance(v, {sub_cls}) else {sub_dict})(buf, v)")
            continue
        src.add(1, "if v is None:")
        src.add(2, "w(b'\\x00')" if flexible else "w(b'\\xff\\xff\\xff\\xff')")
        src.add(1, "else:")
        _length(src, 2, "len(v)", flexible, _I32_MAX, "i", "Sequence")
        src.add(2, "for x in v:")
        src.add(3, f"({sub_entity} if isinstance(x, {sub_cls}) else {sub_dict})(buf, x)")
    flush()
    if flexible:
        if not tagged:
            src.add(1, "w(b'\\x00')")
        else:  # the build's value of each tagged field, then kio's rule as compiled_writer writes it
            src.add(1, "tags = []")
            for number, f in sorted(tagged, key=lambda t: t[0]):
                kind = classify_field(f)
                fetch("v", f, kind)
                if isinstance(kind, PrimitiveField):
                    src.add(1, f"v = _coerce({get_schema_field_type(f)!r}, v)")
                elif isinstance(kind, PrimitiveTupleField):
                    src.add(1, f"v = None if v is None else tuple(_coerce({get_schema_field_type(f)!r}, x) for x in v)")
                elif isinstance(kind, EntityTupleField):
                    sub_cls = src.bind(kind.type_)
                    src.add(1, f"v = None if v is None else tuple(x if isinstance(x, {sub_cls}) else "
                               f"_build({sub_cls}, x) for x in v)")
                else:
                    sub_cls = src.bind(kind.type_)
                    src.add(1, f"v = None if v is None else v if isinstance(v, {sub_cls}) else _build({sub_cls}, v)")
                _tag(src, number, f, flexible)
            _tags_end(src)
    return _compiled(src, "dict writer", cls)


class _Missing:
    __slots__ = ()


_MISS = _Missing()


class _LazyDictWriter:
    """A nested class's dict writer, compiled on its first use (a class's writer is compiled before the
    writers of the entities it holds are needed)."""

    __slots__ = ("cls", "rules", "writer")

    def __init__(self, cls: type, rules: DictRules) -> None:
        self.cls = cls
        self.rules = rules
        self.writer: Writer | None = None

    def __call__(self, buf: Any, data: Any) -> None:
        writer = self.writer
        if writer is None:
            writer = self.writer = compiled_dict_writer(self.cls, self.rules)
        writer(buf, data)
