"""mockbroker's codecs against kafka-clients 4.4.0's own serialization, every request and response version.

tests/integration/java/src/MessageCrossCheck.java fills a message of each generated ``*Data`` class of
kafka-clients 4.4.0 by reflection (values drawn from seeded randoms: whole number ranges, strings that
are not ASCII, bytes, uuids, records, 0-3 array elements, nulls where a version takes them), for every
API key, version (unstable ones too) and seed, and writes its bytes and its ``*JsonConverter`` JSON.
Then, for each:

* ours decodes the bytes (protocol.codec: kio's class, or the generated one where kio lacks it) and
  consumes every byte;
* the decoded value is the one Java wrote: field by field against Java's JSON (names mapped through
  Kafka 4.4.0's schema, as scripts/gen_kafka_messages.py maps them; records compared as bytes only);
* ours encodes it again to the very same bytes;
* Java reads our bytes back and the message equals (the generated ``equals``) the one it wrote.

Every (api, version) that kafka-clients 4.4.0 has must have a codec here, and every error code of its
``Errors`` a member of ``ErrorCode`` (kio 0.6.5 stops at 133: protocol/errors.py adds 134-136).  The versions generated in
protocol/generated/ are the point (kio lacks them), the rest checks kio against Kafka 4.4.0 as well.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import functools
import importlib.util
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kio.serial._implicit_defaults import get_tagged_field_default

from protocol.codec import _reader, _writer, request_class, response_class
from protocol.generated.index import GENERATED
from protocol.registry import schema_versions

from .javatools import JAVA_TIMEOUT_S, java_classpath, tail

ROOT = Path(__file__).resolve().parents[2]
SEEDS = 3
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # org.apache.kafka.common.Uuid.ZERO_UUID.toString()

_spec = importlib.util.spec_from_file_location("gen_kafka_messages", ROOT / "scripts" / "gen_kafka_messages.py")
assert _spec is not None and _spec.loader is not None
gen = importlib.util.module_from_spec(_spec)
sys.modules["gen_kafka_messages"] = gen
_spec.loader.exec_module(gen)


@functools.cache
def schemas() -> dict[tuple[int, str], Any]:
    return {(s.api_key, s.kind): s for s in gen.load_schemas() if s.kind in ("request", "response")}


@functools.cache
def renames(key: int, kind: str) -> dict[tuple[str, str], str]:
    return gen.renames_of(schemas()[(key, kind)])


def java(cp: str, *args: str, stdin: str | None = None) -> str:
    cmd = [shutil.which("java") or "java", "-Xmx512m", "-cp", cp, "MessageCrossCheck", *args]
    try:
        r = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"MessageCrossCheck {' '.join(args)} timed out after {JAVA_TIMEOUT_S}s\n{e.stderr}")
    assert r.returncode == 0, f"MessageCrossCheck {' '.join(args)} exited {r.returncode}\n{tail(r.stderr, 40)}"
    return r.stdout


@pytest.fixture(scope="module")
def written() -> list[dict[str, Any]]:
    cp = java_classpath("MessageCrossCheck")
    lines = [json.loads(line) for line in java(cp, "write", str(SEEDS)).splitlines() if line.strip()]
    return lines


# -- our decoded value in the form of Kafka's *JsonConverter -------------------------------------------


class Records:
    """A records field: the JSON converter's form of records read back from a buffer is not its bytes
    (they are compared as bytes, with the whole message)."""


def as_json(spec: Any, fields: tuple[Any, ...], owner: str, module: Any, version: int, value: Any) -> dict[str, Any]:
    """The JSON the converter writes: every field of the version but a tagged one at its default."""
    out: dict[str, Any] = {}
    ours = {f.name: f for f in dataclasses.fields(type(value))}
    for f in fields:
        if version not in f.versions:
            continue
        name = module.py_name(owner, gen.primitive_kafka_type(f)[1]
                              if f.element in gen.PRIMITIVES and not f.is_array else f.name)
        field_value = getattr(value, name)
        if f.tag_at(version) is not None and field_value == get_tagged_field_default(ours[name]):
            continue
        out[f.name[0].lower() + f.name[1:]] = field_json(spec, f, module, version, field_value)
    return out


def field_json(spec: Any, f: Any, module: Any, version: int, value: Any) -> Any:
    if value is None:
        return ZERO_UUID if f.type == "uuid" else -1 if f.name in gen.DATETIME_NAMES else None
    if f.element not in gen.PRIMITIVES:
        cls_name, sub_fields, _common = module.struct_fields(f)
        if f.is_array:
            return [as_json(spec, sub_fields, cls_name, module, version, item) for item in value]
        return as_json(spec, sub_fields, cls_name, module, version, value)
    if f.is_array:
        return [primitive_json(f.element, item) for item in value]
    kafka_type = gen.primitive_kafka_type(f)[0]
    return primitive_json(kafka_type, value)


def primitive_json(kafka_type: str, value: Any) -> Any:
    if kafka_type == "records":
        return Records
    if value is None:
        return ZERO_UUID if kafka_type == "uuid" else None
    if kafka_type == "uuid":
        return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")
    if kafka_type == "bytes":
        return base64.b64encode(value).decode()
    if kafka_type == "error_code":
        return int(value)
    if kafka_type.startswith("timedelta"):
        return value // datetime.timedelta(milliseconds=1)
    if kafka_type == "datetime_i64":
        return round(value.timestamp() * 1000)
    return value


def differences(ours: Any, theirs: Any, path: str = "") -> list[str]:
    if ours is Records:
        return []
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out = [f"{path}.{k}: ours {ours.get(k, '<absent>')!r} java {theirs.get(k, '<absent>')!r}"
               for k in sorted(set(ours) ^ set(theirs))]
        for k in sorted(set(ours) & set(theirs)):
            out += differences(ours[k], theirs[k], f"{path}.{k}")
        return out
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        return [d for i, (a, b) in enumerate(zip(ours, theirs)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if ours == theirs else [f"{path}: ours {ours!r} java {theirs!r}"]


def check_one(line: dict[str, Any]) -> tuple[bytes, list[str]]:
    """Our re-encoding of Java's bytes, and what differs (empty: all agrees)."""
    key, version, kind = line["api"], line["version"], line["kind"]
    cls = (request_class if kind == "request" else response_class)(key, version)
    data = bytes.fromhex(line["hex"])
    problems = []
    try:
        value, end = _reader(cls)(data, 0)
    except Exception as e:  # noqa: BLE001 - reported, with the message it failed on
        return b"", [f"does not decode: {e!r}"]
    if end != len(data):
        problems.append(f"decoded {end} of {len(data)} bytes")
    buf = io.BytesIO()
    _writer(cls)(buf, value)
    if buf.getvalue() != data:
        problems.append(f"re-encoded differently: {buf.getvalue().hex()} != {line['hex']}")
    spec = schemas()[(key, kind)]
    module = gen.Module(spec, version, renames(key, kind))
    problems += differences(as_json(spec, spec.fields, spec.name, module, version, value), line["json"])
    return buf.getvalue(), problems


def label(line: dict[str, Any]) -> str:
    return f"{line['api']} v{line['version']} {line['kind']} seed {line['seed']}"


def test_every_kafka_4_4_version_has_a_codec(written):
    missing = sorted({(line["api"], line["version"]) for line in written
                      if line["version"] not in schema_versions(line["api"])})
    assert missing == []
    assert len({(line["api"], line["version"], line["kind"]) for line in written}) >= 618


def test_ours_reads_and_writes_what_kafka_clients_writes_and_reads(written):
    problems: dict[str, list[str]] = {}
    back = []
    for line in written:
        ours, diff = check_one(line)
        if diff:
            problems[label(line)] = diff
        back.append(json.dumps({**{k: line[k] for k in ("api", "version", "kind", "seed", "hex")},
                                "python": ours.hex()}))
    assert problems == {}
    cp = java_classpath("MessageCrossCheck")
    answers = [json.loads(a) for a in java(cp, "read", stdin="\n".join(back) + "\n").splitlines() if a.strip()]
    assert len(answers) == len(written)
    unequal = {label(a): a["error"] for a in answers if not a["equal"]}
    assert unequal == {}
    generated = {(k, v) for k, (_n, vs) in GENERATED.items() for v in vs}
    checked = [a for a in answers if (a["api"], a["version"]) in generated]
    # every generated version, request and response, each seed
    assert len(checked) == 2 * SEEDS * len(generated)
    print(f"\n{len(answers)} messages ({len(answers) // SEEDS} API/version/kind classes x {SEEDS} seeds) "
          f"agree with kafka-clients 4.4.0, {len(checked)} of them of the {len(generated)} generated versions")


def test_a_wrong_decoding_is_found(written):
    """The comparison can fail: a message whose bytes lost a field decodes short or differently."""
    line = next(x for x in written if (x["api"], x["version"], x["kind"]) == (42, 3, "response")
                and json.dumps(x["json"]).count("groupId") >= 1)
    tampered = {**line, "json": json.loads(json.dumps(line["json"]))}
    tampered["json"]["throttleTimeMs"] += 1
    assert any(".throttleTimeMs" in p for p in check_one(tampered)[1])
    truncated = {**line, "hex": line["hex"][:-2]}
    assert check_one(truncated)[1]


def test_error_codes_are_kafka_4_4s():
    """kio's ErrorCode with the codes protocol/errors.py adds is Kafka 4.4.0's Errors: every code, its
    name, whether it is retriable, and its message (``DEFAULT_MESSAGES``)."""
    from protocol.errors import DEFAULT_MESSAGES, ErrorCode

    cp = java_classpath("MessageCrossCheck")
    errors = [json.loads(line) for line in java(cp, "errors").splitlines()]
    kafka = {e["code"]: (e["name"].lower(), e["retriable"]) for e in errors}
    ours = {e.value: (e.name, e.retriable) for e in ErrorCode}
    assert ours == kafka
    assert DEFAULT_MESSAGES == {e["code"]: e.get("message") for e in errors}
