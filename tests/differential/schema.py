"""Kafka 4.4's message schemas, read as data: the tester's own encoder and decoder.

The tester writes requests and reads responses with this interpreter of Kafka's JSON schemas
(``protocol/schemas/kafka-4.4.0``, the ones in kafka-clients-4.4.0.jar), not with kio, which
mockbroker itself uses: a bug in kio's reading or writing would otherwise be on both sides of the
comparison and hide.  It is one generic walk over any schema, not a codec per message, and it
writes any value the wire format can carry, including those a typed codec refuses (a Long.MIN
timestamp, an int16 out of an enum's range, a string of 300 characters for a 249-character name).

A message is a tree of plain values keyed by the schema's field names (``"TopicData"``,
``"PartitionIndex"``): dicts for structs, lists for arrays, ``bytes`` for bytes and records,
``uuid.UUID`` for uuids, ``None`` where the version makes the field nullable.
"""

from __future__ import annotations

import json
import re
import struct
import uuid
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

SCHEMAS = Path(__file__).resolve().parents[2] / "protocol" / "schemas" / "kafka-4.4.0"

_INT = {"int8": struct.Struct(">b"), "int16": struct.Struct(">h"), "uint16": struct.Struct(">H"),
        "int32": struct.Struct(">i"), "uint32": struct.Struct(">I"), "int64": struct.Struct(">q")}
_F64 = struct.Struct(">d")
INT_RANGE = {"int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1), "uint16": (0, 2**16 - 1),
             "int32": (-(2**31), 2**31 - 1), "uint32": (0, 2**32 - 1), "int64": (-(2**63), 2**63 - 1)}


class Versions:
    """A schema version range: "0+", "3-12", "5", "none"."""

    __slots__ = ("lo", "hi")

    def __init__(self, text: str | None) -> None:
        text = (text or "none").strip()
        if text == "none":
            self.lo, self.hi = 1, 0
        elif text.endswith("+"):
            self.lo, self.hi = int(text[:-1]), 2**15
        elif "-" in text:
            lo, hi = text.split("-")
            self.lo, self.hi = int(lo), int(hi)
        else:
            self.lo = self.hi = int(text)

    def __contains__(self, v: int) -> bool:
        return self.lo <= v <= self.hi


@dataclass
class Field:
    name: str
    type: str  # "int32", "string", "[]int32", "[]SomeStruct", "SomeStruct"
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    default: Any
    entity_type: str | None
    fields: list[Field]  # a struct's or a struct array's fields
    flexible_override: Versions | None = None
    about: str = ""

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return bool(self.fields)

    def present(self, v: int) -> bool:
        return v in self.versions

    def is_tagged(self, v: int) -> bool:
        return self.tag is not None and v in self.tagged

    def is_nullable(self, v: int) -> bool:
        return v in self.nullable


@dataclass
class Message:
    name: str
    api_key: int | None
    kind: str  # "request", "response", "header"
    valid: Versions
    flexible: Versions
    fields: list[Field]
    unstable_latest: bool = False
    listeners: tuple[str, ...] = ()
    versions: tuple[int, ...] = field(default_factory=tuple)


def _parse_default(type_: str, raw: Any) -> Any:
    text = str(raw).strip() if raw is not None else None
    if type_.startswith("[]"):
        return None if text == "null" else []
    if text is None:
        return _zero(type_)
    if text == "null":
        return None
    if type_ == "bool":
        return text.lower() == "true"
    if type_ in _INT:
        return int(text, 16) if text.lower().startswith("0x") else int(text)
    if type_ == "float64":
        return float(text)
    if type_ == "string":
        return text
    return _zero(type_)


def _zero(type_: str) -> Any:
    if type_.startswith("[]"):
        return []
    if type_ in _INT:
        return 0
    return {"bool": False, "float64": 0.0, "string": "", "bytes": b"", "records": None,
            "uuid": uuid.UUID(int=0)}.get(type_)


def _fields(raw: list[dict[str, Any]], common: dict[str, list[dict[str, Any]]]) -> list[Field]:
    out = []
    for f in raw:
        type_ = f["type"]
        sub = f.get("fields")
        elem = type_[2:] if type_.startswith("[]") else type_
        if sub is None and elem in common:
            sub = common[elem]
        out.append(Field(
            name=f["name"], type=type_, versions=Versions(f.get("versions")),
            nullable=Versions(f.get("nullableVersions")), tagged=Versions(f.get("taggedVersions")),
            tag=f.get("tag"), default=None if sub else _parse_default(type_, f.get("default")),
            entity_type=f.get("entityType"), fields=_fields(sub, common) if sub else [],
            flexible_override=Versions(f["flexibleVersions"]) if "flexibleVersions" in f else None,
            about=f.get("about", "")))
    return out


def _load(path: Path) -> Message:
    data = json.loads(re.sub(r"^\s*//.*$", "", path.read_text(), flags=re.M))
    common = {c["name"]: c["fields"] for c in data.get("commonStructs", [])}
    valid = Versions(data["validVersions"])
    versions = tuple(range(valid.lo, valid.hi + 1)) if valid.hi < 2**15 else ()
    return Message(name=data["name"], api_key=data.get("apiKey"), kind=data["type"], valid=valid,
                   flexible=Versions(data["flexibleVersions"]), fields=_fields(data["fields"], common),
                   unstable_latest=bool(data.get("latestVersionUnstable")),
                   listeners=tuple(data.get("listeners", ())), versions=versions)


@cache
def messages() -> dict[tuple[int, str], Message]:
    """{(api key, "request" | "response"): message} for every API of Kafka 4.4."""
    out = {}
    for path in sorted(SCHEMAS.glob("*.json")):
        m = _load(path)
        if m.api_key is not None and m.versions:
            out[(m.api_key, m.kind)] = m
    return out


@cache
def header(name: str) -> Message:
    return _load(SCHEMAS / f"{name}.json")


def request(api_key: int) -> Message:
    return messages()[(api_key, "request")]


def response(api_key: int) -> Message:
    return messages()[(api_key, "response")]


def api_names() -> dict[int, str]:
    return {k: m.name.removesuffix("Request") for (k, kind), m in messages().items() if kind == "request"}


# --- writing ---------------------------------------------------------------------------------------

def _uvarint(n: int) -> bytes:
    out = bytearray()
    n &= 0xFFFFFFFF
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class EncodeError(ValueError):
    """A value the wire format cannot carry (a null where the version has no null, ...)."""


class Writer:
    def __init__(self) -> None:
        self.buf = bytearray()

    def length(self, n: int | None, flexible: bool, wide: bool = False) -> None:
        """A string's, bytes' or array's length; None is null."""
        if flexible:
            self.buf += _uvarint(0 if n is None else n + 1)
        elif wide:
            self.buf += _INT["int32"].pack(-1 if n is None else n)
        else:
            self.buf += _INT["int16"].pack(-1 if n is None else n)

    def value(self, type_: str, value: Any, flexible: bool, nullable: bool, where: str) -> None:
        if value is None and type_ not in ("records",) and not nullable:
            raise EncodeError(f"{where}: null in a version where it is not nullable")
        if type_ in _INT:
            lo, hi = INT_RANGE[type_]
            v = int(value)
            if not lo <= v <= hi:
                raise EncodeError(f"{where}: {v} is out of {type_}")
            self.buf += _INT[type_].pack(v)
        elif type_ == "bool":
            self.buf.append(1 if value else 0)
        elif type_ == "float64":
            self.buf += _F64.pack(float(value))
        elif type_ == "uuid":
            self.buf += (value or uuid.UUID(int=0)).bytes
        elif type_ == "string":
            if value is None:
                self.length(None, flexible)
            else:
                data = value.encode() if isinstance(value, str) else bytes(value)
                if not flexible and len(data) > 32767:
                    raise EncodeError(f"{where}: a string of {len(data)} bytes is over int16")
                self.length(len(data), flexible)
                self.buf += data
        elif type_ in ("bytes", "records"):
            if value is None:
                self.length(None, flexible, wide=True)
            else:
                self.length(len(value), flexible, wide=True)
                self.buf += value
        else:
            raise EncodeError(f"{where}: unknown type {type_}")


def default_struct(fields: list[Field], version: int) -> dict[str, Any]:
    """A struct with every field of ``version`` at its default."""
    out: dict[str, Any] = {}
    for f in fields:
        if f.present(version):
            out[f.name] = ([] if f.is_array else default_struct(f.fields, version)) if f.is_struct else f.default
    return out


def _flex(f: Field, flexible: bool, version: int) -> bool:
    return flexible and (f.flexible_override is None or version in f.flexible_override)


def write_struct(w: Writer, fields: list[Field], data: dict[str, Any], version: int, flexible: bool,
                 where: str) -> None:
    tagged: list[tuple[int, bytes]] = []
    for f in fields:
        if not f.present(version):
            continue
        value = data.get(f.name, f.default if not f.is_struct else None)
        at = f"{where}.{f.name}"
        if f.is_tagged(version):
            if value == f.default and not f.is_struct:
                continue
            if f.is_struct and not f.is_array and (value is None or value == default_struct(f.fields, version)):
                continue  # Kafka's generated writers leave out a tagged struct at its defaults
            sub = Writer()
            _write_field(sub, f, value, version, flexible, at)
            tagged.append((f.tag or 0, bytes(sub.buf)))
            continue
        _write_field(w, f, value, version, flexible, at)
    if flexible:
        w.buf += _uvarint(len(tagged))
        for tag, body in sorted(tagged):
            w.buf += _uvarint(tag) + _uvarint(len(body)) + body


def _write_field(w: Writer, f: Field, value: Any, version: int, flexible: bool, where: str) -> None:
    flex = _flex(f, flexible, version)
    nullable = f.is_nullable(version)
    if f.is_array:
        if value is None:
            if not nullable:
                raise EncodeError(f"{where}: null array in a version where it is not nullable")
            w.length(None, flex, wide=True)
            return
        if flex:
            w.buf += _uvarint(len(value) + 1)
        else:
            w.buf += _INT["int32"].pack(len(value))
        for i, item in enumerate(value):
            if f.is_struct:
                write_struct(w, f.fields, item, version, flexible, f"{where}[{i}]")
            else:
                w.value(f.element, item, flex, False, f"{where}[{i}]")
    elif f.is_struct:
        if value is None:
            if not nullable:
                raise EncodeError(f"{where}: null struct in a version where it is not nullable")
            w.buf.append(0xFF)  # Kafka's nullable struct: int8 -1
            return
        if nullable:
            w.buf.append(1)
        write_struct(w, f.fields, value, version, flexible, where)
    else:
        w.value(f.type, value, flex, nullable, where)


def request_header_version(api_key: int, version: int) -> int:
    if api_key == 7 and version == 0:  # ControlledShutdown v0 (gone in 4.x)
        return 0
    return 2 if version in request(api_key).flexible else 1


def response_header_version(api_key: int, version: int) -> int:
    if api_key == 18:  # ApiVersions: always v0 (KIP-511)
        return 0
    return 1 if version in response(api_key).flexible else 0


def encode_request(api_key: int, version: int, correlation_id: int, client_id: str | None,
                   body: dict[str, Any]) -> bytes:
    """A whole framed request: size, header, body."""
    hv = request_header_version(api_key, version)
    w = Writer()
    hdr = header("RequestHeader")
    write_struct(w, hdr.fields, {"RequestApiKey": api_key, "RequestApiVersion": version,
                                 "CorrelationId": correlation_id, "ClientId": client_id}, hv, hv >= 2,
                 "header")
    msg = request(api_key)
    write_struct(w, msg.fields, body, version, version in msg.flexible, msg.name)
    return _INT["int32"].pack(len(w.buf)) + bytes(w.buf)


# --- reading ---------------------------------------------------------------------------------------

class DecodeError(ValueError):
    """Bytes that do not read as the schema says."""


class Reader:
    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise DecodeError(f"wants {n} bytes at {self.pos}, {len(self.data) - self.pos} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def uvarint(self) -> int:
        shift = result = 0
        while True:
            b = self.take(1)[0]
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 28:
                raise DecodeError("varint too long")

    def int(self, type_: str) -> int:
        s = _INT[type_]
        return s.unpack(self.take(s.size))[0]

    def length(self, flexible: bool, wide: bool = False) -> int | None:
        if flexible:
            n = self.uvarint() - 1
        else:
            n = self.int("int32" if wide else "int16")
        return None if n < 0 else n

    def value(self, type_: str, flexible: bool) -> Any:
        if type_ in _INT:
            return self.int(type_)
        if type_ == "bool":
            return self.take(1)[0] != 0
        if type_ == "float64":
            return _F64.unpack(self.take(8))[0]
        if type_ == "uuid":
            return uuid.UUID(bytes=self.take(16))
        if type_ == "string":
            n = self.length(flexible)
            return None if n is None else self.take(n).decode("utf-8", "replace")
        if type_ in ("bytes", "records"):
            n = self.length(flexible, wide=True)
            return None if n is None else self.take(n)
        raise DecodeError(f"unknown type {type_}")


def read_struct(r: Reader, fields: list[Field], version: int, flexible: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    by_tag = {}
    for f in fields:
        if not f.present(version):
            continue
        if f.is_tagged(version):
            by_tag[f.tag] = f
            out[f.name] = f.default if not f.is_struct else None
            continue
        out[f.name] = _read_field(r, f, version, flexible)
    if flexible:
        for _ in range(r.uvarint()):
            tag, size = r.uvarint(), r.uvarint()
            body = r.take(size)
            f = by_tag.get(tag)
            if f is None:
                out.setdefault("_unknown_tags", {})[tag] = body
            else:
                out[f.name] = _read_field(Reader(body), f, version, flexible)
    return out


def _read_field(r: Reader, f: Field, version: int, flexible: bool) -> Any:
    flex = _flex(f, flexible, version)
    if f.is_array:
        n = r.length(flex, wide=True)
        if n is None:
            return None
        if f.is_struct:
            return [read_struct(r, f.fields, version, flexible) for _ in range(n)]
        return [r.value(f.element, flex) for _ in range(n)]
    if f.is_struct:
        if f.is_nullable(version) and r.int("int8") < 0:
            return None
        return read_struct(r, f.fields, version, flexible)
    return r.value(f.type, flex)


def decode_response(api_key: int, version: int, payload: bytes) -> tuple[int, dict[str, Any]]:
    """(correlation id, body) of a response frame's payload (without its size); DecodeError when it
    does not read whole as the schema of that version says."""
    r = Reader(payload)
    corr = r.int("int32")
    if response_header_version(api_key, version) >= 1:
        for _ in range(r.uvarint()):
            r.uvarint()
            r.take(r.uvarint())
    msg = response(api_key)
    body = read_struct(r, msg.fields, version, version in msg.flexible)
    if r.pos != len(payload):
        raise DecodeError(f"{len(payload) - r.pos} bytes left after the {msg.name} v{version}")
    return corr, body
