"""Hypothesis strategies for kio's entity classes (``st.from_type(cls)``), kio's and the generated ones.

kio's phantom types (``i32``, ``TopicName``, ...) each carry a ``__hypothesis_hook__`` that registers
their strategy.  kio calls those hooks itself only when hypothesis was imported before kio; protocol/
hides hypothesis from kio otherwise (it cost the broker ~0.85 s of start-up), so
``register_kio_strategies`` calls them, whichever was imported first.
"""

from __future__ import annotations


def register_kio_strategies() -> None:
    """A strategy for each of kio's phantom types, from the type's own hook."""
    import kio.schema.types  # noqa: F401 - the phantom types kio's schemas add (TopicName, BrokerId, ...)
    from kio.static._phantom import Phantom

    todo = list(Phantom.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        cls.__hypothesis_hook__()


_INT_BOUNDS = {
    "int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1), "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1), "uint8": (0, 2**8 - 1), "uint16": (0, 2**16 - 1), "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
}


def _primitive(kafka_type: str):  # noqa: ANN202 - a hypothesis strategy
    import datetime
    import uuid

    from hypothesis import strategies as st
    from kio.schema.errors import ErrorCode

    if kafka_type in _INT_BOUNDS:
        lo, hi = _INT_BOUNDS[kafka_type]
        return st.integers(lo, hi)
    if kafka_type == "float64":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kafka_type == "bool":
        return st.booleans()
    if kafka_type == "string":
        return st.text(max_size=12)
    if kafka_type in ("bytes", "records"):
        return st.binary(max_size=24)
    if kafka_type == "uuid":  # kio reads the zero uuid as None
        return st.one_of(st.none(), st.integers(1, 2**128 - 1).map(lambda i: uuid.UUID(int=i)))
    if kafka_type == "error_code":
        return st.sampled_from(list(ErrorCode))
    if kafka_type == "timedelta_i32":
        return st.integers(-(2**31), 2**31 - 1).map(lambda ms: datetime.timedelta(milliseconds=ms))
    if kafka_type == "timedelta_i64":  # timedelta holds +-999999999 days
        return st.integers(-(2**52), 2**52).map(lambda ms: datetime.timedelta(milliseconds=ms))
    if kafka_type == "datetime_i64":
        return st.integers(0, 2**41).map(
            lambda ms: datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc))
    raise NotImplementedError(kafka_type)


_ENTITIES: dict[type, object] = {}


def entities(cls: type):  # noqa: ANN201 - a hypothesis strategy
    """Values of kio entity class ``cls`` (kio's form, any version): every field drawn from its wire
    type (``kafka_type``), None where the field is optional, arrays of 0-3 items, nested entities
    likewise.  Much faster than ``st.from_type`` on deep messages, and the same for kio's classes and
    the generated ones."""
    if cls in _ENTITIES:
        return _ENTITIES[cls]
    from dataclasses import fields

    from hypothesis import strategies as st
    from kio.serial._introspect import (
        EntityField,
        EntityTupleField,
        PrimitiveField,
        classify_field,
        get_field_tag,
        is_optional,
    )

    kwargs = {}
    for f in fields(cls):
        kind = classify_field(f)
        if isinstance(kind, (EntityField, EntityTupleField)):
            item = st.deferred(lambda t=kind.type_: entities(t))
        else:
            item = _primitive(f.metadata["kafka_type"])
        if isinstance(kind, (EntityField, PrimitiveField)):
            value = item
        else:
            value = st.lists(item, max_size=3).map(tuple)
        # a tagged field is never written as null (kio writes it non-nullably; null is its absence)
        if is_optional(f) and get_field_tag(f) is None and not (
                isinstance(kind, PrimitiveField) and f.metadata["kafka_type"] == "uuid"):
            value = st.one_of(st.none(), value)
        elif get_field_tag(f) is not None and is_optional(f):
            value = st.one_of(st.just(f.default), value)
        kwargs[f.name] = value
    strategy = st.builds(cls, **kwargs)
    _ENTITIES[cls] = strategy
    return strategy
