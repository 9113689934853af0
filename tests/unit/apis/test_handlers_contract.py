"""The handler contract (mockbroker/request.py, mockbroker/apis/): what every handler module
promises, checked against the registry and the codecs rather than trusted."""

from __future__ import annotations

import inspect
import re
import typing

import pytest

from mockbroker.apis import NAMES, all_modules, build_handlers
from mockbroker.request import RequestContext
from protocol import request_types
from protocol.codec import (
    UnknownFieldError,
    build_request,
    build_response,
    request_class,
    set_strict_keys,
)
from protocol.errors import ErrorCode
from protocol.registry import DEFAULT_KAFKA_RELEASE, ApiKey, ApiRegistry, schema_versions

# "Produce (key 0): v3-13 (advertised from v0 ...)." -> name, key, min, max
HEADLINE = re.compile(r"^(?P<name>[A-Za-z]+) \(key (?P<key>\d+)\): v(?P<min>\d+)-(?P<max>\d+)\b")


MODULES = all_modules()


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_docstring_headline_states_the_served_range(module):
    """Each handler's first docstring line is what a reviewer reads first: its version range must be
    the one the registry serves for mock.kafka.version's default release (4.3 and 4.4 are newer: their
    newest versions wait for their handlers, issue 24); KIP-714's as a broker with a telemetry reporter
    serves them (mock.client.telemetry.enabled)."""
    registry = ApiRegistry(DEFAULT_KAFKA_RELEASE, set(build_handlers()), client_telemetry=True)
    m = HEADLINE.match((module.__doc__ or "").splitlines()[0])
    assert m, f"{module.__name__}: first docstring line is not 'Name (key N): vA-B'"
    spec = registry.get(module.API_KEY)
    assert spec is not None, f"{module.__name__} is not served"
    assert int(m["key"]) == module.API_KEY
    assert int(module.__name__.rsplit(".", 1)[1][1:3]) == module.API_KEY  # apis/ finds it by its name    assert re.sub(r"(?<!^)(?=[A-Z])", "_", m["name"]).upper() == spec.name  # SyncGroup ~ SYNC_GROUP
    assert (int(m["min"]), int(m["max"])) == (spec.min_version, spec.max_version), module.__name__


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_handler_takes_the_typed_context(module):
    """``handle(ctx: RequestContext, req: <its API's request view>)``: the views are imported under
    TYPE_CHECKING (they cost nothing at run time), so they are resolved from their module here."""
    hints = typing.get_type_hints(module.handle, localns=vars(request_types))
    assert hints["ctx"] is RequestContext, f"{module.__name__}.handle(ctx: {hints.get('ctx')})"
    assert list(inspect.signature(module.handle).parameters) == ["ctx", "req"]
    request = request_class(module.API_KEY, max(schema_versions(module.API_KEY))).__name__
    assert hints["req"] is getattr(request_types, request), f"{module.__name__}.handle(req: {hints.get('req')})"


def test_every_handler_module_is_in_the_static_table():
    """A handler file that nobody imports would silently not be served."""
    import pathlib

    import mockbroker.apis as apis

    files = {p.stem for p in pathlib.Path(apis.__file__).parent.glob("p[0-9][0-9]_*.py")}
    assert files == {m.__name__.rsplit(".", 1)[1] for m in MODULES}
    assert len(build_handlers()) == len(MODULES) == len(NAMES)  # one module per key


class TestStrictKeys:
    """protocol.codec.build_*: under tests a key that no version of the message has is refused,
    instead of silently becoming the field's zero value on the wire."""

    def test_misspelt_top_level_key_is_refused(self):
        with pytest.raises(UnknownFieldError, match="error_cod"):
            build_response(ApiKey.HEARTBEAT, 4, {"error_cod": ErrorCode.unknown_member_id})

    def test_misspelt_nested_key_is_refused(self):
        body = {"responses": [{"name": "t", "partition_responses": [{"index": 0, "eror_code": 3}]}]}
        with pytest.raises(UnknownFieldError, match=r"responses\.partition_responses"):
            build_response(ApiKey.PRODUCE, 9, body)

    def test_key_of_another_version_is_accepted_and_dropped(self):
        # current_leader exists from Produce v10: a v9 response built from the same dict drops it
        body = {"responses": [{"name": "t", "partition_responses": [
            {"index": 0, "error_code": ErrorCode.not_leader_or_follower,
             "current_leader": {"leader_id": 1, "leader_epoch": 2}}]}]}
        r = build_response(ApiKey.PRODUCE, 9, body)
        assert r.responses[0].partition_responses[0].error_code == ErrorCode.not_leader_or_follower

    def test_key_valid_elsewhere_in_the_tree_is_refused_here(self):
        # topic_id exists under OffsetFetch's groups (v8+) but never under the top-level topics
        with pytest.raises(UnknownFieldError, match="topic_id"):
            build_response(ApiKey.OFFSET_FETCH, 7, {"topics": [{"name": "t", "topic_id": None, "partitions": []}]})

    def test_requests_too(self):
        with pytest.raises(UnknownFieldError, match="timeout_ms"):
            build_request(ApiKey.DELETE_TOPICS, 4, {"topic_names": ["x"], "timeout_ms": 1})

    def test_off_it_only_drops(self):
        set_strict_keys(False)
        try:
            r = build_response(ApiKey.HEARTBEAT, 4, {"error_cod": ErrorCode.unknown_member_id})
            assert r.error_code == ErrorCode.none  # exactly the silent bug the check exists for
        finally:
            set_strict_keys(True)
