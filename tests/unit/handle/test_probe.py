"""``mockbroker probe``: an ApiVersions round trip against a MockBroker exits 0; a closed port, a listener
that never answers, a peer that closes, an answer that is not ApiVersions and an error answer exit 1 with
one line on stderr; running it loads the wire layer's codecs but not the broker."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mockbroker import MockBroker
from mockbroker import probe
from protocol.codec import build_response, encode_response
from protocol.registry import any_spec

REPO = Path(__file__).resolve().parents[3]


def args(bootstrap: str, timeout: float = 5.0) -> argparse.Namespace:
    return argparse.Namespace(bootstrap=bootstrap, timeout=timeout)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("kafka_version", ["4.2", "1.1"])
def test_broker_answers(kafka_version, capsys):
    with MockBroker(config={"mock.kafka.version": kafka_version}) as b:
        assert probe.run(args(b.bootstrap_servers)) == 0
        assert probe.probe(b.bootstrap_servers, 5.0) > 10  # the APIs it listed
    assert capsys.readouterr().err == ""


def test_closed_port(capsys):
    port = closed_port()
    assert probe.run(args(f"127.0.0.1:{port}")) == 1
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"mockbroker probe: 127.0.0.1:{port}: ") and "refused" in line.lower(), line


@pytest.fixture
def silent_listener():
    """A listener that accepts connections and reads, but never answers (a wedged broker)."""
    srv = socket.create_server(("127.0.0.1", 0))
    conns: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.1)
        while not stop.is_set():
            try:
                conns.append(srv.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"127.0.0.1:{srv.getsockname()[1]}"
    stop.set()
    t.join(5)
    for c in conns:
        c.close()
    srv.close()


def test_listener_that_never_answers(silent_listener, capsys):
    assert probe.run(args(silent_listener, timeout=0.5)) == 1
    assert one_line(capsys.readouterr().err) == f"mockbroker probe: {silent_listener}: no ApiVersions answer within 0.5 s"


def probe_one_shot_peer(reply: bytes) -> tuple[int, int]:
    """Run the probe against a peer that reads the request, sends ``reply`` (may be empty) and closes
    (read first: closing with unread data would reset the connection instead); (exit code, the peer's
    port)."""
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]

    def answer() -> None:
        c = srv.accept()[0]
        with c:
            c.recv(1024)
            if reply:
                c.sendall(reply)

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    try:
        rc = probe.run(args(f"127.0.0.1:{port}"))
    finally:
        t.join(5)
        srv.close()
    return rc, port


def test_peer_that_closes(capsys):
    rc, _ = probe_one_shot_peer(b"")
    assert rc == 1 and "closed the connection" in one_line(capsys.readouterr().err)


@pytest.mark.parametrize("bootstrap", ["localhost", "host:", ":9092", "h:99999"])
def test_bad_bootstrap(bootstrap, capsys):
    assert probe.run(args(bootstrap)) == 1
    assert "is not HOST:PORT" in one_line(capsys.readouterr().err)


def test_an_answer_that_is_not_apiversions_exits_1(capsys):
    """A frame that does not decode as ApiVersions v0 (a bare size and a wrong correlation id) is not
    a healthy broker."""
    rc, _ = probe_one_shot_peer(b"\x00\x00\x00\x04\x00\x00\x00\x07")
    assert rc == 1 and "not an ApiVersions v0 answer" in one_line(capsys.readouterr().err)


def test_error_answer_exits_1(capsys):
    """A broker that answers ApiVersions with an error (here UNSUPPORTED_VERSION) is not healthy."""
    body = build_response(18, 0, {"error_code": 35, "api_keys": []})
    frame = bytes(encode_response(any_spec(18), 0, 1, body))  # the probe's one request has correlation id 1
    rc, port = probe_one_shot_peer(frame)
    assert rc == 1
    assert one_line(capsys.readouterr().err) == f"mockbroker probe: 127.0.0.1:{port}: ApiVersions answered error_code 35"


def test_command_line_imports_little():
    """``mockbroker probe`` as the HEALTHCHECK runs it: exit codes, and no broker module loaded (the
    codecs are: kio's ApiVersions schema, and nothing of Metadata's)."""
    code = ("import sys; from mockbroker.cli import main; rc = main(sys.argv[1:]); "
            "heavy = sorted(m for m in sys.modules if 'metadata_v' in m "
            "or m in ('mockbroker.runner', 'mockbroker.config', 'mockbroker.broker')); "
            "print(heavy, 'protocol.client' in sys.modules); sys.exit(rc)")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with MockBroker() as b:
        r = subprocess.run([sys.executable, "-c", code, "probe", "--bootstrap", b.bootstrap_servers, "--timeout", "5"],
                           capture_output=True, text=True, timeout=30, env=env)
    assert (r.returncode, r.stdout, r.stderr) == (0, "[] True\n", ""), r
    r = subprocess.run([sys.executable, "-m", "mockbroker", "probe", "--bootstrap", f"127.0.0.1:{closed_port()}"],
                       capture_output=True, text=True, timeout=30, env=env)
    assert r.returncode == 1 and r.stdout == "", r
    assert one_line(r.stderr).startswith("mockbroker probe: 127.0.0.1:")
