"""protocol/generated/ (scripts/gen_kafka_messages.py): the message modules of Kafka 4.4 that kio 0.6.5
lacks, generated from Kafka 4.4.0's own JSON schemas in kio's form.

* the checked-in output is exactly what the script writes (so ``--check`` passes);
* the script's rules are kio's: every one of the ~600 request and response versions kio has renders,
  from Kafka 4.4.0's schema, to a class of exactly kio's shape (fields, kafka types, tags, defaults,
  nullability, nested classes) -- a departure from kio's rules is caught (shown by breaking one);
* every (api, version) of Kafka 4.4 has a codec, kio's or generated, and each one round-trips
  hypothesis-drawn values through kio's writer and (native) reader: flexible and legacy encodings,
  tagged fields, nullable structs and arrays, uuids, records, defaults;
* a generated module is imported only when its (api, version) is first used.

The same codecs are cross-checked byte for byte against kafka-clients 4.4.0's own serialization in
tests/integration/test_kafka_messages_java.py.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib.util
import io
import json
import pathlib
import subprocess
import sys
import uuid

import pytest
from hypothesis import HealthCheck, given, settings

from kio.schema.errors import ErrorCode

from protocol.codec import _reader, _writer, request_class, response_class
from protocol.generated.index import GENERATED, KAFKA_SCHEMAS
from protocol.registry import ApiKey, any_spec, api_key_map, schema_versions
from tests.kio_strategies import entities

ROOT = pathlib.Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("gen_kafka_messages", ROOT / "scripts" / "gen_kafka_messages.py")
assert _spec is not None and _spec.loader is not None
gen = importlib.util.module_from_spec(_spec)
sys.modules["gen_kafka_messages"] = gen  # its dataclasses look their module up
_spec.loader.exec_module(gen)

HEADER = "// comment lines are dropped, as Kafka's generator drops them\n"


@pytest.fixture(scope="module")
def entries():
    return gen.plan(gen.load_schemas())


def test_checked_in_output_is_the_generators(entries):
    assert gen.diff(gen.current_files(), gen.output_files(entries)) == [], \
        "run: python scripts/gen_kafka_messages.py"


def test_every_version_kio_has_renders_as_kio_has_it(entries):
    """The generator applies kio's rules: of every message version kio has, the class rendered from
    Kafka 4.4.0's schema has kio's shape.  A version whose wire form Kafka changed since kio would show
    here (and be generated); there is none in 4.4.0, only renamed fields (kept under kio's names)."""
    compared = [e for e in entries if e.why != "missing"]
    assert len(compared) > 600
    assert [(e.spec.name, e.version) for e in compared if e.why != "kio"] == []


def test_a_departure_from_kios_rules_is_found(entries, monkeypatch):
    """The check above can fail: without kio's duration rule for ThrottleTimeMs, a version kio has
    renders to another shape."""
    spec = next(e.spec for e in entries if e.spec.name == "HeartbeatResponse")
    kio = gen.kio_class(spec, 4)
    assert gen.shape(gen.load_class(spec, 4, gen.render_module(spec, 4))) == gen.shape(kio)
    monkeypatch.setattr(gen, "TIMEDELTA_NAMES", gen.TIMEDELTA_NAMES - {"ThrottleTimeMs"})
    with pytest.raises(NotImplementedError, match="ThrottleTimeMs looks like a time field"):
        gen.render_module(spec, 4)
    monkeypatch.setattr(gen, "ERROR_CODE_NAMES", frozenset())
    monkeypatch.setattr(gen, "TIMEDELTA_NAMES", gen.TIMEDELTA_NAMES | {"ThrottleTimeMs"})
    assert gen.shape(gen.load_class(spec, 4, gen.render_module(spec, 4))) != gen.shape(kio)


def test_renamed_fields_keep_kios_name_in_every_version(entries):
    """Kafka 4.4 renamed TxnOffsetCommitRequest.GenerationId (same place, same type): the generated v6
    keeps kio's name, so one name reads v0-v6."""
    spec = next(e.spec for e in entries if e.spec.name == "TxnOffsetCommitRequest")
    assert gen.renames_of(spec) == {("TxnOffsetCommitRequest", "generation_id_or_member_epoch"): "generation_id"}
    assert all("generation_id" in request_class(28, v).__dataclass_fields__ for v in range(3, 7))


def test_every_kafka_44_version_has_a_codec():
    """Every request and response version of Kafka 4.4.0's schemas resolves to a class, and the
    registry describes every such API (name, versions, flexible and throttle facts)."""
    assert len(KAFKA_SCHEMAS) == 91  # every key but the four removed ones (LeaderAndIsr, ...)
    for key, (name, (lo, hi), flexible_from, throttle_from) in KAFKA_SCHEMAS.items():
        assert api_key_map[key] == name and key in ApiKey._value2member_map_
        assert schema_versions(key)[-1] == hi and schema_versions(key)[0] <= lo
        for v in range(lo, hi + 1):
            assert request_class(key, v).__version__ == v == response_class(key, v).__version__
        spec = any_spec(key)
        assert spec is not None and (spec.flexible_from, spec.throttle_field_from) == (flexible_from, throttle_from)


def test_the_generated_versions_are_what_kio_lacks():
    assert {key: versions for key, (_name, versions) in GENERATED.items()} == {
        18: (5,), 28: (6,), 42: (3,), 88: (1,), 89: (1,), 93: (0,), 94: (0,)}
    assert request_class(18, 5).__module__ == "protocol.generated.api_versions.v5.request"
    assert request_class(18, 4).__module__.startswith("kio.schema.")


def _cases() -> list[tuple[int, int, str]]:
    return [(key, v, kind) for key in sorted(api_key_map) for v in schema_versions(key)
            for kind in ("request", "response")]


@pytest.mark.parametrize(("key", "version", "kind"), _cases(), ids=lambda x: str(x))
def test_round_trip(key, version, kind):
    """Write a drawn value, read it back: the same value, every byte consumed, the same bytes again
    (kio's classes a few examples each; the generated ones 100)."""
    cls = (request_class if kind == "request" else response_class)(key, version)
    generated = cls.__module__.startswith("protocol.generated.")

    @settings(max_examples=100 if generated else 3, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(entities(cls))
    def check(value):
        buf = io.BytesIO()
        _writer(cls)(buf, value)
        data = buf.getvalue()
        back, end = _reader(cls)(data, 0)
        assert (back, end) == (value, len(data))
        again = io.BytesIO()
        _writer(cls)(again, back)
        assert again.getvalue() == data

    check()


SYNTHETIC = {
    "apiKey": 9999, "type": "response", "name": "SyntheticResponse", "validVersions": "0-1",
    "flexibleVersions": "1+",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "0+"},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "Name", "type": "string", "versions": "0+", "nullableVersions": "1+", "entityType": "topicName"},
        {"name": "Ids", "type": "[]uuid", "versions": "1+"},
        {"name": "Leader", "type": "Cursor", "versions": "1+", "nullableVersions": "1+", "default": "null"},
        {"name": "Epoch", "type": "int32", "versions": "1+", "default": "-1", "taggedVersions": "1+", "tag": 0,
         "ignorable": True},
    ],
    "commonStructs": [{"name": "Cursor", "versions": "1+", "fields": [
        {"name": "Offset", "type": "int64", "versions": "1+"}]}],
}


def test_a_schema_renders_to_kios_encoding():
    """The encodings a schema implies, byte by byte: v0 legacy (int16-length string), v1 flexible
    (compact string, compact array of uuids, nullable struct marker, a tagged field written only when
    not its default, then the tag section)."""
    spec = gen.parse_schema(HEADER + json.dumps(SYNTHETIC), "Synthetic.json")
    v0 = gen.load_class(spec, 0, gen.render_module(spec, 0))
    v1 = gen.load_class(spec, 1, gen.render_module(spec, 1))
    assert [f.name for f in dataclasses.fields(v0)] == ["throttle_time", "error_code", "name"]

    def write(cls, **kw):
        buf = io.BytesIO()
        _writer(cls)(buf, cls(**kw))
        return buf.getvalue()


    ms = datetime.timedelta(milliseconds=5)
    assert write(v0, throttle_time=ms, error_code=ErrorCode.none, name="t") == b"\0\0\0\x05\0\0\0\x01t"
    one = uuid.UUID(int=1)
    assert write(v1, throttle_time=ms, error_code=ErrorCode.none, name=None, ids=(one,)) == (
        b"\0\0\0\x05\0\0" + b"\0" + b"\x02" + one.bytes + b"\xff" + b"\0")
    cursor = v1.__dataclass_fields__["leader"].type.__args__[0]
    assert write(v1, throttle_time=ms, error_code=ErrorCode.none, name="t", ids=(), leader=cursor(offset=7), epoch=3) == (
        b"\0\0\0\x05\0\0" + b"\x02t" + b"\x01" + b"\x01" + b"\0" * 7 + b"\x07\0" + b"\x01\x00\x04\x00\x00\x00\x03")


def test_a_time_field_kio_has_no_rule_for_stops_the_generator():
    schema = {**SYNTHETIC, "fields": [{"name": "LingerMs", "type": "int32", "versions": "0+"}]}
    spec = gen.parse_schema(json.dumps(schema), "Synthetic.json")
    with pytest.raises(NotImplementedError, match="LingerMs"):
        gen.render_module(spec, 0)


def test_a_field_level_flexible_override_is_refused():
    """kio's runtime can express it only for RequestHeader.ClientId (by class name)."""
    field = {"name": "Name", "type": "string", "versions": "0+", "flexibleVersions": "none"}
    spec = gen.parse_schema(json.dumps({**SYNTHETIC, "fields": [field]}), "Synthetic.json")
    with pytest.raises(NotImplementedError, match="field-level flexibleVersions"):
        gen.render_module(spec, 1)


def test_generated_modules_load_on_first_use():
    """Importing the codec loads the index only; a generated (api, version) loads its own module."""
    code = (
        "import sys\nfrom protocol.codec import request_class\n"
        "before = sorted(m for m in sys.modules if m.startswith('protocol.generated'))\n"
        "request_class(42, 3)\n"
        "after = sorted(m for m in sys.modules if m.startswith('protocol.generated.') and m.count('.') >= 3)\n"
        "print(before, after)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ("['protocol.generated', 'protocol.generated.index'] "
                                "['protocol.generated.delete_groups.v3', 'protocol.generated.delete_groups.v3.request']")


def test_kafka_4_4_error_codes_decode():
    """protocol/errors.py adds the codes Kafka 4.4 has and kio 0.6.5 lacks: a DeleteGroups v3 result
    with GROUP_DELETION_FAILED (134, new with that version) is written and read by kio's native reader."""
    from protocol.errors import KAFKA_44_ERRORS

    assert [(e.value, e.name, e.retriable) for e in ErrorCode if e.value > 133] == [
        (code, name, retriable) for code, name, retriable, _doc in KAFKA_44_ERRORS]
    cls = response_class(42, 3)
    result = cls.__dataclass_fields__["results"].type.__args__[0]
    value = cls(throttle_time=datetime.timedelta(0), results=(
        result(group_id="g", error_code=ErrorCode.group_deletion_failed, error_message="offsets left"),))
    buf = io.BytesIO()
    _writer(cls)(buf, value)
    assert b"\x00\x86" in buf.getvalue()
    assert _reader(cls)(buf.getvalue(), 0) == (value, len(buf.getvalue()))
