"""The mockbroker pytest plugin (entry point ``pytest11``): on as soon as mockbroker is installed.

Fixtures (docs/pytest.md):

* ``mockbroker``: a fresh broker for the test (system clock), stopped after it;
* ``mockbroker_manual``: the same with a ``ManualClock``: time moves only with ``advance(ms)``;
* ``mockbroker_factory``: ``factory(config=None, *, brokers=None, manual_clock=False, **kw)`` starts
  any number of brokers, all stopped after the test;
* ``mockbroker_session``: one broker for the whole session (per xdist worker);
* ``mockbroker_certs``: a throwaway CA with broker and client certificates (``certs.CertSet``: paths of
  ``ca``, ``broker`` and ``clients["client"]`` in PEM and PKCS#12), made once per session;
* ``mockbroker_tls``: a fresh broker whose listener is SSL with those certificates and
  ``ssl.client.auth=required`` (mTLS; the marker's config can change it).

Each yields a started ``MockBroker`` (all of its methods: ``set_quota``, ``inject``, ``release``,
``throttle_events``, ``journal``, ``advance`` ...) with the few helpers of ``BrokerHelpers``.
``@pytest.mark.mockbroker(config={...}, brokers=3)`` configures the per-test ones; ``--mockbroker-config
KEY=VALUE`` (or the ``mockbroker_config`` ini lines) gives every broker's defaults.  When a test fails,
its report gets, per broker it used, the broker's log lines and its last requests (from the journal)
during that test.

Imports nothing of the broker at load time: pytest loads this module in every test process of an
environment where mockbroker is installed, before any conftest runs (this project's sets
``PROTOCOL_STRICT_KEYS`` before protocol.codec is imported).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

if TYPE_CHECKING:
    from .security.certs import CertSet
    from .runner import MockBroker

T = TypeVar("T")

MARKER = "mockbroker"
_MARKER_KEYS = ("config", "brokers")
_LOGGER = "mockbroker"
FIXTURES = frozenset({"mockbroker", "mockbroker_manual", "mockbroker_factory", "mockbroker_session",
                      "mockbroker_tls"})


# -- what the fixtures yield -----------------------------------------------------------------------
class BrokerHelpers:
    """Mixed into the ``MockBroker`` the fixtures yield: bounded waits and the current test's requests.
    Everything else is ``MockBroker``'s own (mockbroker/runner.py)."""

    def wait_for(self, predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.01,
                 message: str = "condition") -> T:
        """Poll ``predicate()`` until it returns something true and return that; AssertionError
        after ``timeout`` seconds (wall time: the broker's clock may be a ManualClock)."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() >= deadline:
                raise AssertionError(f"mockbroker: {message} not reached within {timeout} s")
            time.sleep(interval)

    def wait_for_throttle_events(self, count: int = 1, client_id: str | None = None,
                                 timeout: float = 10.0) -> list[dict[str, Any]]:
        """Wait until at least ``count`` throttled responses (of ``client_id``, or any) were sent;
        return them all (``MockBroker.throttle_events``)."""
        events: list[dict[str, Any]] = []

        def enough() -> bool:
            events[:] = self.throttle_events(client_id)  # type: ignore[attr-defined]  # MockBroker's: a mixin of it
            return len(events) >= count

        try:
            self.wait_for(enough, timeout)
        except AssertionError:
            raise AssertionError(f"mockbroker: {count} throttle event(s) of client_id={client_id!r} not seen "
                                 f"within {timeout} s (saw {len(events)})") from None
        return events

    def journal_of_test(self, api: int | str | None = None, client_id: str | None = None,
                     limit: int | None = None) -> list[dict[str, Any]]:
        """The journal records (``MockBroker.journal``) of requests completed since the current test
        started (for a session broker: this test's requests only), oldest first."""
        since = getattr(self, "_mockbroker_test_seq", 0)
        records = [r for r in self.journal(api, client_id) if r["seq"] > since]  # type: ignore[attr-defined]  # MockBroker's: a mixin of it
        return records if limit is None else records[-limit:]


_BROKER_CLASS: list[type] = []


def _broker_class() -> type[MockBroker]:
    """``MockBroker`` with ``BrokerHelpers``, made on first use (importing the broker here)."""
    if not _BROKER_CLASS:
        from .runner import MockBroker

        _BROKER_CLASS.append(type("MockBroker", (BrokerHelpers, MockBroker), {"__module__": __name__}))
    return _BROKER_CLASS[0]


# -- options and marker ----------------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mockbroker", "mockbroker (Kafka-compatible mock broker) fixtures")
    group.addoption("--mockbroker-config", action="append", default=[], metavar="KEY=VALUE",
                    help="broker configuration for every mockbroker fixture (repeatable; the marker "
                         "and factory arguments override it)")
    group.addoption("--mockbroker-report-requests", type=int, default=None, metavar="N",
                    help="requests of a failing test listed in its report, per broker (default 20; 0: none)")
    parser.addini("mockbroker_config", "broker configuration lines KEY=VALUE for every mockbroker fixture",
                  type="linelist", default=[])
    parser.addini("mockbroker_report_requests", "requests of a failing test listed in its report, per broker",
                  default="20")
    parser.addini("mockbroker_log_level", "level of the mockbroker log lines captured for failure reports",
                  default="INFO")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "mockbroker(config=None, brokers=None): configuration of the mockbroker, mockbroker_manual and "
        "mockbroker_factory fixtures for this test (brokers sets mock.num.brokers)")
    config.stash[_STATE] = _State(config)


def _parse_pairs(lines: list[str], origin: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lines:
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(f"{origin}: expected KEY=VALUE, got {line!r}")
        out[key.strip()] = value.strip()
    return out


def _marker_config(node: pytest.Item | None) -> dict[str, Any]:
    """The marker's configuration, the closest marker winning key by key."""
    config: dict[str, Any] = {}
    if node is None:
        return config
    for mark in reversed(list(node.iter_markers(MARKER))):
        if mark.args:
            pytest.fail(f"{node.nodeid}: @pytest.mark.{MARKER} takes keywords only: {_MARKER_KEYS}", pytrace=False)
        unknown = set(mark.kwargs) - set(_MARKER_KEYS)
        if unknown:
            pytest.fail(f"{node.nodeid}: @pytest.mark.{MARKER}: unknown keywords {sorted(unknown)}; "
                        f"known: {_MARKER_KEYS}", pytrace=False)
        config.update(mark.kwargs.get("config") or {})
        if mark.kwargs.get("brokers") is not None:
            config["mock.num.brokers"] = mark.kwargs["brokers"]
    return config


# -- per-session and per-test state ------------------------------------------------------------------
class _Tracked:
    """A broker the plugin started and has not stopped yet."""

    def __init__(self, broker: MockBroker, label: str) -> None:
        self.broker = broker
        self.label = label
        self.thread: int | None = broker.call(lambda _c: threading.get_ident())

    def last_seq(self) -> int:
        last = self.broker.journal(limit=1)
        return int(last[-1]["seq"]) if last else 0


class _LogCapture(logging.Handler):
    """Records of the ``mockbroker`` logger during one test (any thread)."""

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.records: list[logging.LogRecord] = []
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


class _TestCapture:
    """One test: its log handler and, per broker it may use, the journal position it started at."""

    def __init__(self, level: int) -> None:
        self.handler = _LogCapture()
        self.start_seq: dict[int, int] = {}  # id(_Tracked) -> seq before the test
        self.logger = logging.getLogger(_LOGGER)
        self.saved_level = self.logger.level
        effective = self.logger.getEffectiveLevel()
        if effective > level:
            self.logger.setLevel(level)
        self.logger.addHandler(self.handler)

    def close(self) -> None:
        self.logger.removeHandler(self.handler)
        self.logger.setLevel(self.saved_level)



# What the fixtures' brokers start with unless configured otherwise: a group's first rebalance is not
# held back (Kafka's default 3000 ms, kept by `mockbroker serve`, delays every consumer group and Kafka
# Streams application by 3 s); Kafka's own test setups set these to 0 too.  And a KIP-848 consumer or
# share group gets a new target assignment at the heartbeat that changed its membership, as before
# Kafka 4.3 (4.3+: at most once per 1 s assignment interval, which on the manual clock's fixture would
# wait until the test advances the clock).
FIXTURE_DEFAULTS: dict[str, Any] = {"group.initial.rebalance.delay.ms": 0,
                                    "group.streams.initial.rebalance.delay.ms": 0,
                                    "group.consumer.assignment.interval.ms": 0,
                                    "group.share.assignment.interval.ms": 0}

class _State:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.live: list[_Tracked] = []
        self.current: _TestCapture | None = None
        self.in_test = False
        self.counter = 0

    @property
    def defaults(self) -> dict[str, Any]:
        out = dict(FIXTURE_DEFAULTS)
        out.update(_parse_pairs(self.config.getini("mockbroker_config"), "ini mockbroker_config"))
        out.update(_parse_pairs(self.config.getoption("mockbroker_config") or [], "--mockbroker-config"))
        return out

    @property
    def report_requests(self) -> int:
        n = self.config.getoption("mockbroker_report_requests")
        return int(self.config.getini("mockbroker_report_requests")) if n is None else n

    @property
    def log_level(self) -> int:
        name = str(self.config.getini("mockbroker_log_level")).upper()
        level = logging.getLevelName(name)
        if not isinstance(level, int):
            raise pytest.UsageError(f"mockbroker_log_level: unknown level {name!r}")
        return level

    def start(self, config: Mapping[str, Any], kind: str, manual_clock: bool = False, **kw: Any) -> MockBroker:
        if self.current is None and self.in_test:  # a fixture asked for by getfixturevalue
            self.current = _TestCapture(self.log_level)
        cls = _broker_class()
        clock = kw.pop("clock", None)
        if manual_clock and clock is None:
            from .common.clock import ManualClock

            clock = ManualClock()
        broker = cls(config=dict(config), clock=clock, **kw).start()
        self.counter += 1
        # the report names the fixture that made the broker (``mockbroker``, ``mockbroker_manual``,
        # ``mockbroker_session``); brokers a test made with ``mockbroker_factory`` are numbered
        label = f"{kind} #{self.counter}" if kind == "mockbroker_factory" else kind
        tracked = _Tracked(broker, f"{label} {broker.bootstrap_servers}")
        self.live.append(tracked)
        broker._mockbroker_test_seq = 0  # type: ignore[attr-defined]  # the plugin's own mark on a MockBroker started within this test
        if self.current is not None:
            self.current.start_seq[id(tracked)] = 0
        return broker

    def stop(self, broker: MockBroker) -> None:
        self.live = [t for t in self.live if t.broker is not broker]
        broker.stop()

    def begin_test(self, item: pytest.Item) -> None:
        """Capture the test's log lines and journal positions, when it uses a fixture of ours (tests
        that do not keep the ``mockbroker`` logger as it is)."""
        self.in_test = True
        if not FIXTURES.intersection(getattr(item, "fixturenames", ())):
            return
        capture = _TestCapture(self.log_level)
        for tracked in self.live:
            try:
                seq = tracked.last_seq()
            except Exception:  # noqa: BLE001 - stopped by the test itself: nothing to report
                continue
            capture.start_seq[id(tracked)] = seq
            tracked.broker._mockbroker_test_seq = seq  # type: ignore[attr-defined]  # the plugin's own mark (above)
        self.current = capture

    def end_test(self) -> None:
        self.in_test = False
        if self.current is not None:
            self.current.close()
            self.current = None

    def sections(self) -> list[tuple[str, str]]:
        """The current test's report sections: per broker its log lines, then its last requests."""
        capture = self.current
        if capture is None:
            return []
        out: list[tuple[str, str]] = []
        records = list(capture.handler.records)
        threads = {t.thread for t in self.live}
        for tracked in self.live:
            if id(tracked) not in capture.start_seq:
                continue
            mine = [r for r in records if r.thread == tracked.thread]
            if mine:
                out.append((f"mockbroker log: {tracked.label}",
                            "\n".join(capture.handler.format(r) for r in mine)))
            section = self._requests(tracked, capture.start_seq[id(tracked)])
            if section is not None:
                out.append(section)
        others = [r for r in records if r.thread not in threads]
        if others and out:  # the brokers' other threads (the on-disk journal's writer), not other MockBrokers
            out.append(("mockbroker log: other threads", "\n".join(capture.handler.format(r) for r in others)))
        return out

    def _requests(self, tracked: _Tracked, since_seq: int) -> tuple[str, str] | None:
        limit = self.report_requests
        if limit <= 0:
            return None
        try:
            recent = tracked.broker.journal(limit=limit)
            newest = tracked.last_seq()
        except Exception:  # noqa: BLE001 - the broker was stopped by the test
            return None
        rows = [r for r in recent if r["seq"] > since_seq]
        if not rows:
            return None
        total = newest - since_seq
        lines = [_format_request(r, rows[0]["received_clock_ns"]) for r in rows]
        head = ("seq     +ms      broker conn client_id            request                corr outcome     error "
                "throttle partitions")
        return (f"mockbroker requests: {tracked.label} (last {len(rows)} of {total} in this test)",
                "\n".join([head, *lines]))


def _format_request(r: Mapping[str, Any], t0_ns: int) -> str:
    parts = [(p["topic"] if p["partition"] < 0 else f"{p['topic']}-{p['partition']}")
             + (f" error {p['error_code']}" if p.get("error_code") else "") for p in r.get("partitions") or []]
    shown = ",".join(parts[:4]) + (f",+{len(parts) - 4}" if len(parts) > 4 else "")
    error = "" if r.get("error_code") in (None, 0) else str(r["error_code"])
    throttle = f"{r['throttle_time_ms']}ms" if r.get("throttle_time_ms") else ""
    return (f"{r['seq']:<7} {(r['received_clock_ns'] - t0_ns) / 1e6:<8.1f} {r['broker']:<6} {r['connection']:<4} "
            f"{str(r['client_id'])[:20]:<20} {r['api'] + ' v' + str(r['api_version']):<22} {r['correlation_id']:<4} "
            f"{r['outcome']:<11} {error:<5} {throttle:<8} {shown}")


_STATE = pytest.StashKey[_State]()


# -- hooks ---------------------------------------------------------------------------------------------
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A marker on a test whose only broker is the session one configures nothing: say so."""
    per_test = FIXTURES - {"mockbroker_session"}
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if "mockbroker_session" in names and not names & per_test and item.get_closest_marker(MARKER):
            item.warn(pytest.PytestWarning(
                f"@pytest.mark.{MARKER} does not configure mockbroker_session (started once for the "
                "session); use mockbroker or mockbroker_factory for a configured broker"))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    state = item.config.stash[_STATE]
    state.begin_test(item)
    try:
        return (yield)
    finally:
        state.end_test()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        try:
            report.sections.extend(item.config.stash[_STATE].sections())
        except Exception as e:  # noqa: BLE001 - the report of the failure itself comes first
            report.sections.append(("mockbroker", f"could not collect the broker's log and requests: {e!r}"))
    return report


# -- fixtures ------------------------------------------------------------------------------------------
@pytest.fixture
def mockbroker_factory(request: pytest.FixtureRequest) -> Iterator[Callable[..., MockBroker]]:
    """``factory(config=None, *, brokers=None, manual_clock=False, **MockBroker_kwargs)``: a started
    broker; configuration from the command line/ini, then the test's marker, then ``config``."""
    yield from _factory(request, "mockbroker_factory")


def _factory(request: pytest.FixtureRequest, fixture: str) -> Iterator[Callable[..., MockBroker]]:
    """The factory of ``mockbroker_factory``; ``fixture`` names its brokers in a failure's report."""
    state = request.config.stash[_STATE]
    base = {**state.defaults, **_marker_config(request.node)}
    started: list[MockBroker] = []

    def factory(config: Mapping[str, Any] | None = None, *, brokers: int | None = None,
                manual_clock: bool = False, **kw: Any) -> MockBroker:
        merged = {**base, **(config or {})}
        if brokers is not None:
            merged["mock.num.brokers"] = brokers
        broker = state.start(merged, fixture, manual_clock, **kw)
        started.append(broker)
        return broker

    yield factory
    for broker in reversed(started):
        state.stop(broker)


@pytest.fixture
def mockbroker(request: pytest.FixtureRequest) -> Iterator[MockBroker]:
    """A fresh broker for this test (system clock), configured by the marker; stopped after the test."""
    for factory in _factory(request, "mockbroker"):
        yield factory()


@pytest.fixture
def mockbroker_manual(request: pytest.FixtureRequest) -> Iterator[MockBroker]:
    """A fresh broker on a ``ManualClock``: time moves only with ``mockbroker_manual.advance(ms)``."""
    for factory in _factory(request, "mockbroker_manual"):
        yield factory(manual_clock=True)


@pytest.fixture(scope="session")
def mockbroker_session(request: pytest.FixtureRequest) -> Iterator[MockBroker]:
    """One broker for the session (in each xdist worker): command-line/ini configuration only.
    Tests share its topics, groups, quotas and fault rules; ``journal_of_test()`` is this test's part."""
    state = request.config.stash[_STATE]
    broker = state.start(state.defaults, "mockbroker_session")
    yield broker
    state.stop(broker)


@pytest.fixture(scope="session")
def mockbroker_certs(tmp_path_factory: pytest.TempPathFactory) -> CertSet:
    """A throwaway CA, a broker certificate (SANs localhost, 127.0.0.1, ::1) and a client certificate
    ``clients["client"]`` (subject ``CN=client,OU=mockbroker,O=mockbroker test``), made once per session."""
    from .security.certs import make_certs

    return make_certs(str(tmp_path_factory.mktemp("mockbroker-certs")), clients=("client",))


@pytest.fixture
def mockbroker_tls(request: pytest.FixtureRequest, mockbroker_certs: CertSet) -> Iterator[MockBroker]:
    """A fresh broker on one SSL listener with ``mockbroker_certs`` (``ssl.client.auth=required``: clients
    present ``mockbroker_certs.clients["client"]``); the marker's config goes over it."""
    for factory in _factory(request, "mockbroker_tls"):
        yield factory({**mockbroker_certs.broker_config("required"), **_marker_config(request.node)})
