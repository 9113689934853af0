"""The Kafka wire layer: framing, headers, API registry, record batches, error codes.

Imports nothing from ``mockbroker``.  Message codecs are kio's (generated from
Kafka's JSON schemas); this package adds the registry and the header rules.
"""

import sys as _sys


def _import_kio_without_hypothesis() -> None:
    """Import kio's phantom types with hypothesis hidden, unless hypothesis is already loaded.

    ``kio.static._phantom`` does ``import hypothesis.strategies`` whenever hypothesis is
    installed (it is, in the test venv) so that each phantom type (``i32``, ``TopicName``, ...)
    registers a strategy for ``st.from_type``.  That import costs ~0.5-0.9 s of a broker's
    start-up, and the broker never draws from a strategy.  So, only while kio's phantom module
    is first imported, ``sys.modules`` maps hypothesis to None (``import`` then raises
    ImportError, which kio catches and reads as "not installed"); the sentinels are removed
    afterwards, so a later ``import hypothesis`` works as usual.  A process that imported
    hypothesis first (pytest with the hypothesis plugin) keeps kio's hooks.  Without them,
    code that wants strategies for kio's types calls each type's ``__hypothesis_hook__``
    itself (tests/unit/protocol/test_fuzz_decode.py does).
    """
    if "hypothesis" in _sys.modules or "kio.static._phantom" in _sys.modules:
        return
    hidden = ("hypothesis", "hypothesis.strategies")
    for name in hidden:
        _sys.modules[name] = None  # type: ignore[assignment]  # None in sys.modules makes that import fail, as documented
    try:
        import kio.static._phantom
        import kio.static.primitive  # noqa: F401
    finally:
        for name in hidden:
            if name in _sys.modules and _sys.modules[name] is None:
                del _sys.modules[name]


_import_kio_without_hypothesis()

from .errors import (
    CorruptRecordBatch,
    ErrorCode,
    InvalidFrameSize,
    InvalidRequest,
    ProtocolError,
    UnsupportedVersion,
)
from .registry import (
    DEFAULT_KAFKA_RELEASE,
    KAFKA_RELEASES,
    ApiKey,
    ApiRegistry,
    ApiSpec,
)

__all__ = [
    "ApiKey",
    "ApiRegistry",
    "ApiSpec",
    "CorruptRecordBatch",
    "DEFAULT_KAFKA_RELEASE",
    "ErrorCode",
    "InvalidFrameSize",
    "InvalidRequest",
    "KAFKA_RELEASES",
    "ProtocolError",
    "UnsupportedVersion",
]
