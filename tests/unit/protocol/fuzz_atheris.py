"""Coverage-guided fuzzing (atheris / libFuzzer) of the broker's request path over a real socket.

    python tests/unit/protocol/fuzz_atheris.py -runs=20000 [-seed=1] [-max_len=512] [-len_control=0] [CORPUS_DIR]

Runs a MockBroker (ManualClock, request memory pool on) in this process; atheris instruments
the broker's Python (``mockbroker``, ``protocol``) for coverage.  Each input picks an API the
broker serves and a version from its first two bytes; the rest is the request body, framed
after a valid header and sent on a fresh connection with an ApiVersions request pipelined
behind it.  Like the hypothesis fuzz in ``test_fuzz_decode.py``, an exchange must end answered,
closed or parked in a purgatory, and no error or traceback may be logged by the broker or by
asyncio; a violation raises, which atheris reports as a crash with its input.  CreateTopics,
CreatePartitions, (Incremental)AlterConfigs and AlterClientQuotas bodies that parse are sent with
``validate_only`` set (``harmless``, as in the hypothesis fuzz): a mutated body could otherwise create
thousands of partitions or throttle every later client.  libFuzzer prints the run size ("Done N runs").
"""

from __future__ import annotations

import logging
import os
import sys

import atheris

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))

with atheris.instrument_imports(include=["mockbroker", "protocol"]):
    from mockbroker import ManualClock, MockBroker

# the index byte of an input picks from every served API (target_of; the seed corpus uses the same order)
from tests.unit.protocol.test_fuzz_decode import CFG, exchange, harmless, header, target_of  # noqa: E402


class ErrorRecorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.errors: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith(("mockbroker", "asyncio")) and (record.levelno >= logging.ERROR or record.exc_info):
            self.errors.append(f"{record.name}: {record.getMessage()}")


recorder = ErrorRecorder()
logging.getLogger().addHandler(recorder)
logging.getLogger().setLevel(logging.INFO)
logging.getLogger("mockbroker.connection").setLevel(logging.ERROR)  # one line per close: too chatty here

broker = MockBroker(config=CFG, clock=ManualClock()).start()
broker.create_topic("fuzz", 1)
host, _, port = broker.bootstrap_servers.rpartition(":")
ADDR = (host, int(port))


# libFuzzer's -rss_limit_mb compares the process's *peak* RSS (getrusage), which Linux carries over from
# the parent across vfork+exec: started from a pytest worker that once held 2 GB, the fuzzer "ran out of
# memory" on its first seed.  The test passes -rss_limit_mb=0 and this harness checks the broker's
# current RSS instead, every CHECK_EVERY inputs.
RSS_LIMIT_MB = int(os.environ.get("MOCKBROKER_FUZZ_RSS_LIMIT_MB", "1024"))
CHECK_EVERY = 50
_PAGE = os.sysconf("SC_PAGE_SIZE")
_inputs = 0


def current_rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE / 2**20


def test_one_input(data: bytes) -> None:
    global _inputs
    _inputs += 1
    if _inputs % CHECK_EVERY == 0 and (rss := current_rss_mb()) > RSS_LIMIT_MB:
        raise MemoryError(f"broker process RSS {rss:.0f} MB > {RSS_LIMIT_MB} MB after {_inputs} inputs")
    picked = target_of(data)
    if picked is None:
        return
    key, version, body = picked
    frame = header(key, version) + harmless(key, version, body)
    start = len(recorder.errors)
    exchange(ADDR, len(frame).to_bytes(4, "big") + frame)
    if len(recorder.errors) > start:
        raise RuntimeError(f"broker logged an error for api {key} v{version}: {recorder.errors[start:]}")


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
