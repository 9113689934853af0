"""The CLI: one ready line, a free port with --port 0, clean stop on SIGINT/SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from protocol.client import RawKafkaClient

CMD = [sys.executable, "-m", "mockbroker", "serve"]


def start(*args, env=None):
    p = subprocess.Popen(CMD + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, **(env or {})})
    line = p.stdout.readline()
    return p, line


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_ready_line_and_clean_stop(sig):
    p, line = start("--port", "0", "-c", "num.partitions=2")
    try:
        m = re.fullmatch(r"mockbroker ready bootstrap=127\.0\.0\.1:(\d+)\n", line)
        assert m, line
        port = int(m.group(1))
        assert port != 0
        with RawKafkaClient("127.0.0.1", port) as c:
            assert c.request(3, 12, {"topics": None}).brokers[0].port == port
        t0 = time.monotonic()
        p.send_signal(sig)
        assert p.wait(timeout=5) == 0
        assert time.monotonic() - t0 < 1.0
        assert p.stdout.read() == ""  # exactly one line on stdout
    finally:
        p.kill()
        p.wait()


def test_unknown_config_key_refused(tmp_path):
    p = subprocess.run(CMD + ["--port", "0", "-c", "num.partition=3"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2
    assert "unknown configuration key 'num.partition'" in p.stderr and "num.partitions" in p.stderr
    assert p.stdout == ""


def test_config_file_and_env(tmp_path):
    f = tmp_path / "b.toml"
    f.write_text('"mock.topics" = ["pre:4"]\n')
    p, line = start("--port", "0", "--config", str(f), env={"MOCKBROKER_AUTO_CREATE_TOPICS_ENABLE": "false"})
    try:
        port = int(line.strip().rsplit(":", 1)[1])
        with RawKafkaClient("127.0.0.1", port) as c:
            r = c.request(3, 12, {"topics": [{"name": "pre"}, {"name": "other"}], "allow_auto_topic_creation": True})
            assert len(r.topics[0].partitions) == 4
            assert r.topics[1].error_code == 3  # auto-creation off: UNKNOWN_TOPIC_OR_PARTITION
    finally:
        p.terminate()
        p.wait(timeout=5)


def test_certs_writes_a_ca_broker_and_client_certificates_a_broker_starts_with(tmp_path, capsys):
    import ssl

    from mockbroker.cli import main
    from mockbroker.config.broker_config import BrokerConfig

    assert main(["certs", str(tmp_path), "--client", "alice", "--password", "pw"]) == 0
    out = capsys.readouterr().out
    assert "alice: CN=alice,OU=mockbroker,O=mockbroker test" in out
    names = {p.name for p in tmp_path.iterdir()}
    assert {"ca.pem", "broker.pem", "broker-key.pem", "broker-keystore.pem", "broker.p12",
            "alice.pem", "alice-key.pem", "alice-keystore.pem", "alice.p12"} <= names
    # the printed -c options make a broker requiring client certificates
    options = dict(line.strip()[3:].split("=", 1) for line in out.splitlines() if line.strip().startswith("-c "))
    cfg = BrokerConfig(options)
    assert cfg.tls_contexts["SSL"].verify_mode == ssl.CERT_REQUIRED
    # the PKCS12 files open with the password given
    BrokerConfig({**options, "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(tmp_path / "broker.p12"),
                  "ssl.keystore.password": "pw"})
