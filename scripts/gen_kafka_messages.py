"""Write ``protocol/generated/``: kio-shaped message modules for what kio lacks of Kafka 4.4's protocol.

    python scripts/gen_kafka_messages.py                    # rewrite protocol/generated/ from the schemas
    python scripts/gen_kafka_messages.py --check            # exit 1 (and show the diff) if it is stale
    python scripts/gen_kafka_messages.py --import-schemas   # copy the JSON schemas out of kafka-clients' jar
    python scripts/gen_kafka_messages.py --report           # every (api, version) and where its codec comes from

kio (pinned, 0.6.5) is generated from Kafka's JSON message schemas, but from an older Kafka than the
current one: it lacks whole versions (ApiVersions v5, TxnOffsetCommit v6, DeleteGroups v3, ...) and
whole APIs (StreamsGroupTopologyDescriptionUpdate, UnregisterController).  This script reads
Kafka's own schemas (``common/message/*.json`` of kafka-clients-4.4.0.jar, checked in under
``protocol/schemas/kafka-4.4.0/`` with their Apache-2.0 headers and Kafka's NOTICE) and emits, for
every request and response version, the module kio's code generator (``codegen/`` of
Aiven-Open/kio, not part of the PyPI package) would emit: frozen slotted dataclasses whose field
metadata (``kafka_type``, ``tag``), defaults and ``__flexible__``/``__version__``/``__api_key__``/
``__header_schema__`` class variables are what kio's reader (``kio.serial.entity_reader``, native)
and writer (``kio.serial.entity_writer``) read.  kio's conventions are followed: ``*Ms`` durations
become ``timedelta_i32``/``timedelta_i64`` fields without the suffix, timestamps ``datetime_i64``,
``ErrorCode`` fields ``error_code``, ``entityType`` fields kio's nominal types (``TopicName``, ...).

Only what kio does not have as Kafka 4.4 defines it is written out: a version kio lacks, or one
whose rendered shape (classes, fields, kafka types, tags, defaults, nullability) differs from
kio's module of that version.  Every other version stays kio's.  ``--report`` lists both, and
``tests/unit/protocol/test_kafka_messages.py`` checks that each version kio has renders to exactly kio's
shape (so the rules below are kio's rules), that the checked-in output is what this script writes,
and that every version round-trips.

Field-level ``flexibleVersions`` (only RequestHeader.ClientId: ``none``) cannot be expressed in a
kio dataclass; kio's runtime special-cases that one field by the class name ``RequestHeader``.  The
script refuses any other such field, so a future schema that needs it is noticed here.
"""

from __future__ import annotations

import argparse
import builtins
import dataclasses
import difflib
import io
import json
import re
import shutil
import subprocess
import sys
import types
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KAFKA_VERSION = "4.4.0"
SCHEMA_DIR = ROOT / "protocol" / "schemas" / f"kafka-{KAFKA_VERSION}"
OUT = ROOT / "protocol" / "generated"

# kio's conventions (codegen/parser.py of Aiven-Open/kio): these JSON field names are durations
# (timedelta_i32/i64, the "Ms" dropped from the name) and timestamps (datetime_i64); another name
# ending in "Ms" stops the generator, as it stops kio's, until it is put in one set or the other.
TIMEDELTA_NAMES = frozenset({
    "timeoutMs", "TimeoutMs", "ThrottleTimeMs", "MaxWaitMs", "SessionLifetimeMs", "TransactionTimeoutMs",
    "MaxLifetimeMs", "SessionTimeoutMs", "RebalanceTimeoutMs", "ExpiryTimePeriodMs", "RenewPeriodMs",
    "RetentionTimeMs", "HeartbeatIntervalMs", "PushIntervalMs", "AcquisitionLockTimeoutMs",
    "TaskOffsetIntervalMs",
})
DATETIME_NAMES = frozenset({
    "IssueTimestampMs", "ExpiryTimestampMs", "MaxTimestampMs", "TransactionStartTimeMs", "LogAppendTimeMs",
})
ERROR_CODE_NAMES = frozenset({"ErrorCode", "PartitionErrorCode"})

INTS = ("int8", "int16", "int32", "int64", "uint16", "uint32", "uint64")
NUMBERS = (*INTS, "float64")
PRIMITIVES = (*NUMBERS, "bool", "string", "bytes", "records", "uuid")
HINTS = {
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint16": "u16", "uint32": "u32",
    "uint64": "u64", "float64": "f64", "string": "str", "bytes": "bytes", "records": "Records",
    "bool": "bool", "uuid": "uuid.UUID", "error_code": "ErrorCode", "timedelta_i32": "i32Timedelta",
    "timedelta_i64": "i64Timedelta", "datetime_i64": "TZAware",
}
# Where each name a module may use comes from (the import line written for it).
IMPORTS = {
    "uuid": "import uuid",
    "datetime": "import datetime",
    "dataclass": "from dataclasses import dataclass",
    "field": "from dataclasses import field",
    "ClassVar": "from typing import ClassVar",
    "ErrorCode": "from kio.schema.errors import ErrorCode",
    "EntityType": "from kio.static.constants import EntityType",
    **{h: f"from kio.static.primitive import {h}" for h in (
        "i8", "i16", "i32", "i64", "u16", "u32", "u64", "f64", "i32Timedelta", "i64Timedelta", "TZAware",
        "Records")},
    **{t: f"from kio.schema.types import {t}" for t in (
        "BrokerId", "GroupId", "ProducerId", "TopicName", "TransactionalId")},
}


# -- the schema model ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Versions:
    """A version range of the schema language: "3+", "0-5", "2", "none"."""

    lo: int
    hi: int | None  # None: open-ended

    @classmethod
    def parse(cls, text: str) -> Versions:
        text = text.strip()
        if text == "none":
            return cls(1, 0)
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        lo, _, hi = text.partition("-")
        return cls(int(lo), int(hi or lo))

    def __contains__(self, version: int) -> bool:
        return self.lo <= version and (self.hi is None or version <= self.hi)

    def range(self) -> range:
        assert self.hi is not None
        return range(self.lo, self.hi + 1)


NEVER = Versions(1, 0)


@dataclasses.dataclass(frozen=True)
class FieldSpec:
    name: str                   # as in the JSON ("ThrottleTimeMs")
    type: str                   # "int32", "[]string", "[]MetadataResponseTopic", "Cursor", ...
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    default: str | None         # normalised to a string, as kio's (pydantic 1) parser reads it
    ignorable: bool
    entity_type: str | None
    about: str | None
    fields: tuple[FieldSpec, ...] | None  # an inline struct's fields
    flexible_override: Versions | None

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element(self) -> str:
        return self.type.removeprefix("[]")

    def tag_at(self, version: int) -> int | None:
        return self.tag if version in self.tagged else None


@dataclasses.dataclass(frozen=True)
class MessageSpec:
    name: str                   # "ApiVersionsResponse"
    kind: str                   # "request", "response", "header"
    api_key: int | None
    valid: Versions
    flexible: Versions
    fields: tuple[FieldSpec, ...]
    structs: dict[str, tuple[FieldSpec, ...]]  # commonStructs
    source: str                 # file name
    unstable_latest: bool


_COMMENT = re.compile(r"^\s*//")


def read_json(text: str) -> dict[str, Any]:
    """A schema file: JSON with whole-line // comments (Kafka's generator and kio's drop them)."""
    return json.loads("".join(line for line in text.splitlines(True) if not _COMMENT.match(line)))


def _default(raw: Any) -> str | None:
    if raw is None:
        return None
    if isinstance(raw, bool):
        return "true" if raw else "false"
    return str(raw).strip()


def _field(raw: dict[str, Any]) -> FieldSpec:
    versions = raw.get("versions", raw.get("taggedVersions"))
    if versions is None:
        raise ValueError(f"field {raw.get('name')} has neither versions nor taggedVersions")
    if ("tag" in raw) != ("taggedVersions" in raw):
        raise ValueError(f"field {raw['name']}: tag and taggedVersions go together")
    nested = raw.get("fields")
    return FieldSpec(
        name=raw["name"],
        type=raw["type"],
        versions=Versions.parse(versions),
        nullable=Versions.parse(raw["nullableVersions"]) if "nullableVersions" in raw else NEVER,
        tagged=Versions.parse(raw["taggedVersions"]) if "taggedVersions" in raw else NEVER,
        tag=raw.get("tag"),
        default=_default(raw.get("default")),
        ignorable=bool(raw.get("ignorable", False)),
        entity_type=raw.get("entityType"),
        about=raw.get("about"),
        fields=tuple(_field(f) for f in nested) if nested is not None else None,
        flexible_override=Versions.parse(raw["flexibleVersions"]) if "flexibleVersions" in raw else None,
    )


def parse_schema(text: str, source: str) -> MessageSpec:
    raw = read_json(text)
    return MessageSpec(
        name=raw["name"],
        kind=raw["type"],
        api_key=raw.get("apiKey"),
        valid=Versions.parse(raw["validVersions"]),
        flexible=Versions.parse(raw.get("flexibleVersions", "none")),
        fields=tuple(_field(f) for f in raw.get("fields", ())),
        structs={s["name"]: tuple(_field(f) for f in s["fields"]) for s in raw.get("commonStructs", ())},
        source=source,
        unstable_latest=bool(raw.get("latestVersionUnstable", False)),
    )


def load_schemas(schema_dir: Path = SCHEMA_DIR) -> list[MessageSpec]:
    """Every request, response and header schema in ``schema_dir``, sorted by file name."""
    out = []
    for path in sorted(schema_dir.glob("*.json")):
        spec = parse_schema(path.read_text(), path.name)
        if spec.kind in ("request", "response", "header"):
            out.append(spec)
    return out


# -- kio's naming --------------------------------------------------------------------------------

_BUILTINS = frozenset(dir(builtins))


def to_snake_case(value: str) -> str:
    """kio's field and package names: "ISRReplicas" -> "isr_replicas", "Type" -> "type_"."""
    groups: list[str] = []
    current = ""
    for i, ch in enumerate(value):
        if not current:
            current = ch
            continue
        prev = current[-1]
        nxt = value[i + 1] if i + 1 < len(value) else None
        if nxt is None:
            if prev.islower() and ch.isupper():
                groups.append(current)
                current = ch
            else:
                current += ch
            break
        if ((prev.isupper() and ch.isupper() and nxt.islower()) or (prev.islower() and ch.isupper())
                or (prev.isdigit() and ch.isupper() and nxt.islower())):
            groups.append(current)
            current = ch
        else:
            current += ch
    groups.append(current)
    out = "_".join(groups).lower()
    return out + "_" if out in _BUILTINS else out


def api_name(spec: MessageSpec) -> str:
    """kio's package name of an API ("api_versions")."""
    return to_snake_case(spec.name).removesuffix("_response").removesuffix("_request")


def primitive_kafka_type(f: FieldSpec) -> tuple[str, str]:
    """(kafka_type, python field name) of a primitive field, by kio's naming rules."""
    if f.name in ERROR_CODE_NAMES:
        return "error_code", f.name
    if f.name in TIMEDELTA_NAMES:
        if f.type not in ("int32", "int64"):
            raise NotImplementedError(f"{f.name}: duration of type {f.type}")
        return ("timedelta_i32" if f.type == "int32" else "timedelta_i64"), f.name.removesuffix("Ms")
    if f.name in DATETIME_NAMES:
        if f.type != "int64":
            raise NotImplementedError(f"{f.name}: timestamp of type {f.type}")
        return "datetime_i64", f.name.removesuffix("Ms")
    if f.name.endswith("Ms"):
        raise NotImplementedError(
            f"{f.name} looks like a time field: put it in TIMEDELTA_NAMES or DATETIME_NAMES")
    return f.type, f.name


def _custom(entity_type: str | None) -> str | None:
    return None if entity_type is None else entity_type[0].upper() + entity_type[1:]


# -- rendering -----------------------------------------------------------------------------------


class Module:
    """One generated module (one message, one version): its classes, in kio's order."""

    def __init__(self, spec: MessageSpec, version: int, renames: Renames | None = None) -> None:
        self.spec = spec
        self.version = version
        self.renames = renames or {}
        self.flexible = version in spec.flexible
        self.names: set[str] = {"dataclass", "ClassVar", "EntityType", "i16"}
        self.classes: list[str] = []
        self.seen: set[str] = set()

    def use(self, *names: str) -> None:
        self.names.update(names)

    # kio's format_default
    def default_literal(self, kafka_type: str, default: str, optional: bool, custom: str | None) -> str:
        if default == "null":
            if not optional:
                raise ValueError(f"{self.spec.name}: a field that is not nullable has default null")
            return "None"
        wrap_open, wrap_close = (f"{custom}(", ")") if custom else ("", "")
        if kafka_type == "string":
            return f"{wrap_open}{default!r}{wrap_close}"
        if kafka_type in INTS:
            value = int(default, 0)
            if custom:
                return f"{custom}({value})"
            self.use(HINTS[kafka_type])
            return f"{HINTS[kafka_type]}({value})"
        if kafka_type == "bool":
            value = default.capitalize()
            if value not in ("True", "False"):
                raise ValueError(f"invalid bool default {default!r}")
            return f"{wrap_open}{value}{wrap_close}"
        if kafka_type == "float64":
            return f"{wrap_open}{default}{wrap_close}"
        if kafka_type == "error_code":
            self.use("ErrorCode")
            return f"ErrorCode({default})"
        if kafka_type in ("timedelta_i32", "timedelta_i64"):
            self.use(HINTS[kafka_type], "datetime")
            return f"{HINTS[kafka_type]}.parse(datetime.timedelta(milliseconds={int(default)}))"
        if kafka_type == "datetime_i64" and default == "-1":
            return "None"
        raise NotImplementedError(f"default {default!r} of a {kafka_type} field")

    def tagged_default(self, kafka_type: str | None) -> str:
        """kio's _format_default_for_tagged (an ignorable tagged field without a default)."""
        zeros = {"int8": "i8(0)", "int16": "i16(0)", "int32": "i32(0)", "int64": "i64(0)", "uint16": "u16(0)",
                 "uint32": "u32(0)", "uint64": "u64(0)", "float64": "f64(0.0)", "bool": "False",
                 "error_code": "ErrorCode.none"}
        if kafka_type in zeros:
            if kafka_type in HINTS:
                self.use(HINTS[kafka_type])
            return zeros[kafka_type]
        return "None"

    def py_name(self, owner: str, json_name: str) -> str:
        """kio's name of a field: snake case, or kio's older name of a field Kafka renamed since."""
        name = to_snake_case(json_name)
        return self.renames.get((owner, name), name)

    @staticmethod
    def field_call(kwargs: dict[str, str]) -> str:
        if not kwargs:
            return ""
        return " = field(" + ", ".join(f"{k}={v}" for k, v in kwargs.items()) + ")"

    def struct_fields(self, f: FieldSpec) -> tuple[str, tuple[FieldSpec, ...], bool]:
        """(class name, fields, is a common struct) of a struct-typed field."""
        if f.fields is not None:
            return f.element, f.fields, False
        if f.element in self.spec.structs:
            return f.element, self.spec.structs[f.element], True
        raise ValueError(f"{self.spec.name}.{f.name}: unknown type {f.type}")

    def render_field(self, owner: str, f: FieldSpec) -> str:  # noqa: C901 - one branch per kind of field, as kio's
        v = self.version
        if f.flexible_override is not None and not (self.spec.kind == "header" and f.name == "ClientId"):
            raise NotImplementedError(f"{self.spec.name}.{f.name}: field-level flexibleVersions")
        tag = f.tag_at(v)
        nullable = v in f.nullable
        custom = _custom(f.entity_type)
        if custom:
            self.use(custom)
        element = f.element
        if element in PRIMITIVES and not f.is_array:
            kafka_type, name = primitive_kafka_type(f)
            optional = kafka_type not in NUMBERS and (
                (tag is not None and f.ignorable and f.default is None) or nullable
                or (kafka_type == "datetime_i64" and f.default == "-1"))
            hint = custom or HINTS[kafka_type]
            if not custom:
                self.use(hint.split(".")[0])
            if optional or kafka_type == "uuid":
                hint += " | None"
            metadata: dict[str, Any] = {"kafka_type": kafka_type}
            if tag is not None:
                metadata["tag"] = tag
            kwargs = {"metadata": _dict(metadata)}
            if f.default is not None:
                kwargs["default"] = self.default_literal(kafka_type, f.default, optional, custom)
            elif tag is not None and f.ignorable:
                kwargs["default"] = self.tagged_default(kafka_type)
            self.use("field")
            return f"    {self.py_name(owner, name)}: {hint}{self.field_call(kwargs)}\n"
        if element in PRIMITIVES:  # an array of primitives
            inner = custom or HINTS[element]
            if not custom:
                self.use(inner.split(".")[0])
            if element == "uuid":
                inner += " | None"  # kio's hint of a uuid is always optional, in arrays too
            metadata = {"kafka_type": element}
            if tag is not None:
                metadata["tag"] = tag
            if f.default == "null" and not nullable:
                raise ValueError(f"{self.spec.name}.{f.name}: array that is not nullable has default null")
            kwargs = {"metadata": _dict(metadata), "default": "None" if f.default == "null" else "()"}
            self.use("field")
            suffix = " | None" if nullable else ""
            return f"    {self.py_name(owner, f.name)}: tuple[{inner}, ...]{suffix}{self.field_call(kwargs)}\n"
        cls_name, sub_fields, common = self.struct_fields(f)
        self.render_class(cls_name, sub_fields)
        if f.is_array:
            kwargs = {"metadata": _dict({"tag": tag}), "default": "()"} if tag is not None else {}
            if kwargs:
                self.use("field")
            suffix = " | None" if nullable else ""
            return f"    {self.py_name(owner, f.name)}: tuple[{cls_name}, ...]{suffix}{self.field_call(kwargs)}\n"
        # a single struct: kio's generate_entity_field (inline) and generate_common_struct_field
        kwargs = {}
        if tag is not None:
            kwargs["metadata"] = _dict({"tag": tag})
        default = f.default
        only_defaults = not common and all(
            not sf.is_array and sf.element in PRIMITIVES and sf.default is not None for sf in sub_fields)
        if default is not None:
            if default != "null" or not nullable:
                raise NotImplementedError(f"{self.spec.name}.{f.name}: struct default {default!r}")
            kwargs["default"] = "None"
        elif tag is not None and only_defaults:
            kwargs["default"] = f"{cls_name}()"
        elif tag is not None and f.ignorable:
            kwargs["default"] = "None"
        if kwargs:
            self.use("field")
        hint = f"{cls_name} | None" if nullable else cls_name
        return f"    {self.py_name(owner, f.name)}: {hint}{self.field_call(kwargs)}\n"

    def render_class(self, name: str, fields: tuple[FieldSpec, ...], top: bool = False) -> None:
        if name in self.seen:
            return
        self.seen.add(name)
        body = []
        names: set[str] = set()
        for f in fields:
            if self.version not in f.versions:
                continue
            line = self.render_field(name, f)
            py = line.split(":", 1)[0].strip()
            if py in names:
                raise ValueError(f"{self.spec.name} v{self.version}: two fields named {py} in {name}")
            names.add(py)
            body.append(line)
            if f.about:
                body.append(f"    {_docstring(f.about)}\n")
        kind = self.spec.kind if top else "nested"
        lines = [
            "@dataclass(frozen=True, slots=True, kw_only=True)\n",
            f"class {name}:\n",
            f"    __type__: ClassVar = EntityType.{kind}\n",
            f"    __version__: ClassVar[i16] = i16({self.version})\n",
            f"    __flexible__: ClassVar[bool] = {self.flexible}\n",
        ]
        if self.spec.api_key is not None:
            header = "RequestHeader" if self.spec.kind == "request" else "ResponseHeader"
            lines.append(f"    __api_key__: ClassVar[i16] = i16({self.spec.api_key})\n")
            lines.append(f"    __header_schema__: ClassVar[type[{header}]] = {header}\n")
        self.classes.append("".join(lines + body))

    def header_import(self) -> str | None:
        """kio's header_schema.py (Kafka's ApiMessageTypeGenerator rules)."""
        spec, v = self.spec, self.version
        if spec.kind == "request":
            hv = 0 if (v == 0 and spec.api_key == 7) else (2 if self.flexible else 1)
            return f"from kio.schema.request_header.v{hv}.header import RequestHeader"
        if spec.kind == "response":
            hv = 0 if spec.api_key == 18 else (1 if self.flexible else 0)
            return f"from kio.schema.response_header.v{hv}.header import ResponseHeader"
        return None

    def render(self) -> str:
        self.render_class(self.spec.name, self.spec.fields, top=True)
        imports = sorted({IMPORTS[n] for n in self.names if n in IMPORTS}, key=_import_order)
        header = self.header_import()
        if header:
            imports = sorted([*imports, header], key=_import_order)
        head = [
            '"""\n',
            f"Generated by ``scripts/gen_kafka_messages.py`` from Kafka {KAFKA_VERSION}'s "
            f"``common/message/{self.spec.source}``.\n",
            '"""\n',
            "\n",
        ]
        plain = [i for i in imports if i.startswith("import ")]
        froms = [i for i in imports if i.startswith("from ")]
        body = "".join(head) + "".join(i + "\n" for i in plain) + ("\n" if plain else "")
        std = [i for i in froms if _import_order(i)[0] == 1]
        kio = [i for i in froms if _import_order(i)[0] == 2]
        body += "".join(i + "\n" for i in std) + "\n" + "".join(i + "\n" for i in kio)
        return body + "".join("\n\n" + c for c in self.classes)


def _dict(d: dict[str, Any]) -> str:
    """A metadata dict as kio's (formatted) modules write it: {"kafka_type": "int32", "tag": 0}."""
    return "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in d.items()) + "}"


def _import_order(line: str) -> tuple[int, str]:
    group = 0 if line.startswith("import ") else 1 if line.split()[1] in ("dataclasses", "typing") else 2
    return group, line


def _docstring(text: str) -> str:
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return f'"""{text}"""'


# (class name, field name as 4.4 names it) -> kio's name of the same field, per message
Renames = dict[tuple[str, str], str]


def render_module(spec: MessageSpec, version: int, renames: Renames | None = None) -> str:
    return Module(spec, version, renames).render()


# -- shapes: a rendered module compared with kio's -----------------------------------------------


def _type_name(t: Any) -> str:
    """An annotation without module paths: "tuple[MetadataResponseTopic, ...] | None"."""
    return t.__name__ if isinstance(t, type) else re.sub(r"[\w.]+\.(\w+)", r"\1", repr(t))


def shape(cls: type, names: bool = True) -> tuple[Any, ...]:
    """What kio's reader and writer see of an entity class, nested classes included: a value equal
    for two classes exactly when they read and write the same bytes into the same fields.  With
    ``names=False`` the field and class names are left out (the same bytes, fields maybe renamed)."""
    out = []
    for f in dataclasses.fields(cls):
        md = dict(f.metadata)
        default: Any = f.default
        if default is dataclasses.MISSING:
            default = "<required>"
        elif dataclasses.is_dataclass(default):
            default = ("instance", shape(type(default), names))
        else:
            default = (type(default).__name__, repr(default))
        nested = [shape(t, names) for t in _walk_types(f.type) if dataclasses.is_dataclass(t)]
        hint = _type_name(f.type)
        if not names:
            for t in _walk_types(f.type):
                if dataclasses.is_dataclass(t):
                    hint = re.sub(rf"\b{t.__name__}\b", "<struct>", hint)
        out.append((f.name if names else "", hint, tuple(sorted(md.items())), default, tuple(nested)))
    return (cls.__name__ if names else "", cls.__type__, cls.__version__, cls.__flexible__,
            getattr(cls, "__api_key__", None), getattr(getattr(cls, "__header_schema__", None), "__module__", None),
            tuple(out))


def renamed_fields(kio: type, ours: type) -> Renames:
    """The fields of ``ours`` whose kio name differs, two classes of the same wire form."""
    out: Renames = {}
    for a, b in zip(dataclasses.fields(kio), dataclasses.fields(ours), strict=True):
        if a.name != b.name:
            out[(ours.__name__, b.name)] = a.name
        subs_a = [t for t in _walk_types(a.type) if dataclasses.is_dataclass(t)]
        subs_b = [t for t in _walk_types(b.type) if dataclasses.is_dataclass(t)]
        for sa, sb in zip(subs_a, subs_b, strict=True):
            out.update(renamed_fields(sa, sb))
    return out


def _walk_types(t: Any) -> Iterator[Any]:
    yield t
    for a in getattr(t, "__args__", ()) or ():
        yield from _walk_types(a)


def exec_module(text: str, name: str) -> types.ModuleType:
    """Import rendered module text without writing it anywhere."""
    mod = types.ModuleType(name)
    sys.modules[name] = mod  # dataclasses looks the module up while it builds the class
    try:
        exec(compile(text, name, "exec", dont_inherit=True), mod.__dict__)  # noqa: S102 - our own generated code
    finally:
        del sys.modules[name]
    return mod


def top_class(module: types.ModuleType, spec: MessageSpec) -> type:
    return getattr(module, spec.name)


def kio_class(spec: MessageSpec, version: int) -> type | None:
    """kio's class of ``spec`` at ``version``, or None when kio has no such module."""
    from importlib import import_module

    from kio.schema.index import schema_name_map

    name = api_name(spec)
    kind = spec.kind
    if kind == "header":
        entry = schema_name_map.get(name, {}).get(version, {})
        path = next(iter(entry.values()), None)
    else:
        from kio.static.constants import EntityType

        path = schema_name_map.get(name, {}).get(version, {}).get(EntityType[kind])
    if path is None:
        return None
    module, _, attr = path.partition(":")
    return getattr(import_module(module), attr)


@dataclasses.dataclass(frozen=True)
class Entry:
    spec: MessageSpec
    version: int
    text: str
    why: str  # "kio" (kio's is the same), "missing" (kio has none), "differs" (kio's is older)


def load_class(spec: MessageSpec, version: int, text: str) -> type:
    return top_class(exec_module(text, f"_gen_{api_name(spec)}_{spec.kind}_v{version}"), spec)


def renames_of(spec: MessageSpec) -> Renames:
    """Fields Kafka renamed since kio's schemas (same place, same wire form, in a version kio has):
    the generated modules keep kio's names, so that one name reads and builds every version."""
    out: Renames = {}
    for v in spec.valid.range():
        theirs = kio_class(spec, v)
        if theirs is None:
            continue
        ours = load_class(spec, v, render_module(spec, v))
        if shape(theirs) != shape(ours) and shape(theirs, names=False) == shape(ours, names=False):
            out.update(renamed_fields(theirs, ours))
    return out


def plan(schemas: list[MessageSpec]) -> list[Entry]:
    """Every version of every message, rendered, and whether kio already has it as 4.4 has it."""
    out = []
    for spec in schemas:
        renames = renames_of(spec)
        for v in spec.valid.range():
            text = render_module(spec, v, renames)
            theirs = kio_class(spec, v)
            why = "missing" if theirs is None else (
                "kio" if shape(theirs) == shape(load_class(spec, v, text)) else "differs")
            out.append(Entry(spec, v, text, why))
    return out


# -- the output package --------------------------------------------------------------------------


def _payload_rows(entries: list[Entry]) -> dict[int, dict[str, Any]]:
    rows: dict[int, dict[str, Any]] = {}
    for e in entries:
        if e.spec.kind not in ("request", "response") or e.why == "kio":
            continue
        row = rows.setdefault(e.spec.api_key, {"name": api_name(e.spec), "versions": {}})  # type: ignore[arg-type]
        row["versions"].setdefault(e.version, set()).add(e.spec.kind)
    return rows


def _facts(entries: list[Entry]) -> dict[int, tuple[int | None, int | None]]:
    """(first flexible version, first response version with throttle_time_ms) per api key, 4.4."""
    out: dict[int, tuple[int | None, int | None]] = {}
    for e in entries:
        if e.spec.kind != "response" or e.spec.api_key is None:
            continue
        flex, thr = out.get(e.spec.api_key, (None, None))
        if flex is None and e.version in e.spec.flexible:
            flex = e.version
        if thr is None and any(f.name == "ThrottleTimeMs" and e.version in f.versions for f in e.spec.fields):
            thr = e.version
        out[e.spec.api_key] = (flex, thr)
    return out


def render_index(entries: list[Entry]) -> str:
    rows = _payload_rows(entries)
    facts = _facts(entries)
    unstable = sorted((e.spec.api_key, e.spec.valid.hi) for e in entries
                      if e.spec.kind == "request" and e.spec.unstable_latest and e.version == e.spec.valid.hi)
    lines = [
        f'"""The message modules generated from Kafka {KAFKA_VERSION}\'s schemas, by (api key, version).',
        "",
        "Generated by ``scripts/gen_kafka_messages.py``; do not edit.  A (key, version) listed here is one",
        "kio 0.6.5 lacks or has older than Kafka " + KAFKA_VERSION + " defines it; its modules are",
        "``protocol.generated.<name>.v<version>.request`` and ``.response``, each imported on first use.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        f'KAFKA_VERSION = "{KAFKA_VERSION}"',
        "",
        "# api key: (kio's form of the API's name, versions generated here)",
        "GENERATED: dict[int, tuple[str, tuple[int, ...]]] = {",
    ]
    for key, row in sorted(rows.items()):
        vs = sorted(v for v, kinds in row["versions"].items() if kinds == {"request", "response"})
        if len(vs) != len(row["versions"]):
            raise ValueError(f"api key {key}: request and response generated for different versions")
        lines.append(f'    {key}: ("{row["name"]}", ({", ".join(map(str, vs))}{"," if len(vs) == 1 else ""})),')
    lines += [
        "}",
        "",
        "# api key: (name, versions, first flexible version, first response version with",
        f"# throttle_time_ms), for every API of Kafka {KAFKA_VERSION}'s schemas with versions (request and",
        "# response versions agree for every API)",
        "KAFKA_SCHEMAS: dict[int, tuple[str, tuple[int, int], int | None, int | None]] = {",
    ]
    for e in sorted(entries, key=lambda e: (e.spec.api_key or 0, e.version)):
        if e.spec.kind == "request" and e.version == e.spec.valid.lo:
            flex, thr = facts[e.spec.api_key]  # type: ignore[index]
            lines.append(f'    {e.spec.api_key}: ("{api_name(e.spec)}", ({e.spec.valid.lo}, {e.spec.valid.hi}), '
                         f"{flex}, {thr}),")
    lines += [
        "}",
        "",
        "# (api key, version): the latest request version, marked latestVersionUnstable in its schema (a",
        "# broker advertises it only with unstable.api.versions.enable=true)",
        "UNSTABLE_LATEST: frozenset[tuple[int, int]] = frozenset({" + ", ".join(f"({k}, {v})" for k, v in unstable)
        + "})",
        "",
        "",
        "def module_name(api_key: int, version: int, kind: str) -> str | None:",
        '    """The module of a generated message (kind "request" or "response"), or None."""',
        "    row = GENERATED.get(api_key)",
        "    if row is None or version not in row[1]:",
        "        return None",
        '    return f"protocol.generated.{row[0]}.v{version}.{kind}"',
    ]
    return "\n".join(lines) + "\n"


INIT = '"""Generated by ``scripts/gen_kafka_messages.py``; do not edit."""\n'


def output_files(entries: list[Entry]) -> dict[str, str]:
    """Relative path under protocol/generated/ -> text."""
    files = {
        "__init__.py": (
            f'"""kio-shaped message modules for what kio 0.6.5 lacks of Kafka {KAFKA_VERSION}\'s protocol.\n\n'
            "Generated by ``scripts/gen_kafka_messages.py``; do not edit (``index.py`` lists them).\n"
            '"""\n'),
        "index.py": render_index(entries),
    }
    for e in entries:
        if e.why == "kio" or e.spec.kind == "header":
            continue
        base = f"{api_name(e.spec)}"
        files.setdefault(f"{base}/__init__.py", INIT)
        files.setdefault(f"{base}/v{e.version}/__init__.py", INIT)
        files[f"{base}/v{e.version}/{e.spec.kind}.py"] = e.text
    return files


def current_files() -> dict[str, str]:
    if not OUT.exists():
        return {}
    return {str(p.relative_to(OUT)): p.read_text() for p in sorted(OUT.rglob("*.py"))
            if "__pycache__" not in p.parts}


def write(files: dict[str, str]) -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    for rel, text in files.items():
        path = OUT / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def diff(old: dict[str, str], new: dict[str, str]) -> list[str]:
    out: list[str] = []
    for rel in sorted(set(old) | set(new)):
        a, b = old.get(rel, ""), new.get(rel, "")
        if a != b:
            out.extend(difflib.unified_diff(a.splitlines(True), b.splitlines(True),
                                            f"protocol/generated/{rel}", "generated"))
            if rel not in new:
                out.append(f"(protocol/generated/{rel} is no longer generated)\n")
    return out


# -- schemas from the jar ------------------------------------------------------------------------


def clients_jar(version: str = KAFKA_VERSION) -> Path:
    """kafka-clients' jar in the local Maven repository (resolved with mvn when absent)."""
    jar = Path.home() / ".m2" / "repository" / "org" / "apache" / "kafka" / "kafka-clients" / version / \
        f"kafka-clients-{version}.jar"
    if not jar.exists():
        subprocess.run(["mvn", "-q", "dependency:get", f"-Dartifact=org.apache.kafka:kafka-clients:{version}",
                        "-Dtransitive=false"], check=True)
    return jar


def import_schemas(version: str = KAFKA_VERSION) -> int:
    """Copy the request, response and header schemas (and Kafka's NOTICE) out of the jar."""
    target = ROOT / "protocol" / "schemas" / f"kafka-{version}"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    n = 0
    with zipfile.ZipFile(clients_jar(version)) as z:
        for name in z.namelist():
            if name.startswith("common/message/") and name.endswith(".json"):
                text = z.read(name).decode()
                raw = read_json(text)
                # a removed API (validVersions "none": LeaderAndIsr, StopReplica, ...) has nothing to generate
                if raw.get("type") in ("request", "response", "header") and raw.get("validVersions") != "none":
                    (target / Path(name).name).write_text(text)
                    n += 1
        (target / "NOTICE").write_bytes(z.read("NOTICE"))
    print(f"copied {n} schemas of kafka-clients {version} into {target.relative_to(ROOT)}")
    return 0


def report(entries: list[Entry]) -> str:
    out = io.StringIO()
    for e in entries:
        if e.spec.kind == "header":
            print(f"{e.spec.name:45} v{e.version:<3} {e.why}", file=out)
    by_key: dict[tuple[int, str], list[str]] = {}
    for e in entries:
        if e.spec.kind in ("request", "response"):
            by_key.setdefault((e.spec.api_key, api_name(e.spec)), []).append(  # type: ignore[arg-type]
                f"{e.spec.kind[:3]} v{e.version}:{e.why}")
    for (key, name), items in sorted(by_key.items()):
        print(f"{key:3} {name:40} " + " ".join(i for i in items if not i.endswith(":kio")) or "kio", file=out)
    return out.getvalue()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if protocol/generated/ is stale")
    ap.add_argument("--import-schemas", action="store_true",
                    help=f"copy the schemas out of kafka-clients-{KAFKA_VERSION}.jar (~/.m2, or mvn)")
    ap.add_argument("--report", action="store_true", help="print where each (api, version) comes from")
    args = ap.parse_args()
    if args.import_schemas:
        return import_schemas()
    entries = plan(load_schemas())
    if args.report:
        sys.stdout.write(report(entries))
        return 0
    files = output_files(entries)
    if args.check:
        lines = diff(current_files(), files)
        sys.stdout.writelines(lines)
        return 1 if lines else 0
    write(files)
    print(f"wrote protocol/generated/ ({len(files)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
