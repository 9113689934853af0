"""``mockbroker admin --url URL ...`` (mockbroker/admin_client.py) against a real admin listener."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys

import pytest

from mockbroker import MockBroker
from mockbroker import admin_client as ac
from mockbroker.cli import _parser
from protocol.client import RawKafkaClient

from ..purgatory.test_delayed_ops import produce_body


@pytest.fixture(scope="module")
def broker():
    with MockBroker(config={"mock.admin.listener": "127.0.0.1:0", "mock.topics": "cli:2"}) as b:
        yield b


def admin(broker, *argv: str) -> tuple[int, str, str]:
    args = _parser().parse_args(["admin", "--url", broker.admin_url, *argv])
    out, err = io.StringIO(), io.StringIO()
    code = ac.run(args, out, err)
    return code, out.getvalue(), err.getvalue()


def test_status_table_and_json(broker):
    code, out, _ = admin(broker, "status")
    assert code == 0 and "cli" in out and "broker" in out.splitlines()[2]
    code, out, _ = admin(broker, "--json", "status")
    assert json.loads(out)["topics"][0]["name"] == "cli"


@pytest.mark.parametrize("argv", [("status", "--json"), ("quota", "get", "--json"), ("--json", "quota", "get"),
                                  ("faults", "--json"), ("journal", "--json", "--limit", "1")])
def test_json_before_or_after_the_subcommand(broker, argv):
    code, out, err = admin(broker, *argv)
    assert code == 0, err
    json.loads(out)  # JSON, not a table


def test_subcommand_without_json_keeps_the_one_before_it(broker):
    args = _parser().parse_args(["admin", "--url", broker.admin_url, "--json", "status"])
    assert args.json is True
    args = _parser().parse_args(["admin", "--url", broker.admin_url, "status"])
    assert args.json is False


def test_quota_set_get_delete_round_trip(broker):
    assert admin(broker, "quota", "set", "--client-id", "cq", "producer_byte_rate=5000")[0] == 0
    code, out, _ = admin(broker, "--json", "quota", "get", "--client-id", "cq")
    assert json.loads(out) == [{"entity": {"user": None, "client_id": "cq"}, "values": {"producer_byte_rate": 5000.0}}]
    assert broker.quotas(client_id="cq")[0]["values"] == {"producer_byte_rate": 5000.0}  # the same store
    assert admin(broker, "quota", "delete", "--client-id", "cq")[0] == 0
    assert broker.quotas(client_id="cq") == []


def test_refusals_print_the_api_error_and_exit_1(broker):
    code, _, err = admin(broker, "quota", "set", "--client-id", "cq", "producer_byte_rate=1.5")
    assert code == 1 and "values.producer_byte_rate" in err and "cannot be a fractional value" in err
    code, _, err = admin(broker, "faults", "--delete", "999")
    assert code == 1 and "404" in err


def test_inject_release_and_faults(broker):
    code, out, _ = admin(broker, "--json", "inject", "--api", "Metadata", "--action", "hold")
    rule = json.loads(out)
    with RawKafkaClient.connect(broker.bootstrap_servers) as c:
        corr = c.send(3, 12, {"topics": None})
        assert admin(broker, "--json", "release", "--rule", str(rule["id"]))[1].strip() == '{\n "released": 1\n}'
        assert c.response(3, 12, corr).brokers
    code, out, _ = admin(broker, "faults")
    assert code == 0 and "hold" in out and "METADATA" in out
    code, out, _ = admin(broker, "--json", "inject", "--api", "Produce", "--errors",
                         "NOT_LEADER_OR_FOLLOWER,NOT_LEADER_OR_FOLLOWER")
    assert json.loads(out)["count"] == 2
    assert admin(broker, "faults", "--clear")[0] == 0
    assert broker.faults() == []


def test_journal_and_follow(broker):
    with RawKafkaClient.connect(broker.bootstrap_servers, client_id="jf") as c:
        c.request(0, 9, produce_body("cli", acks=1))
        code, out, _ = admin(broker, "journal", "--client-id", "jf", "--api", "Produce")
        assert code == 0 and "PRODUCE v9" in out and "response" in out
        args = _parser().parse_args(["admin", "--url", broker.admin_url, "journal", "--client-id", "jf",
                                     "--follow", "--interval", "0"])
        out_io = io.StringIO()
        polls = []

        def sleep(_s: float) -> None:  # between polls: one more request arrives
            polls.append(1)
            if len(polls) == 1:
                c.request(3, 12, {"topics": None})

        ac.follow_journal(ac.AdminClient(broker.admin_url), args, out_io, sleep=sleep, max_polls=3)
        lines = out_io.getvalue().splitlines()
        assert [("PRODUCE" in x, "METADATA" in x) for x in lines] == [(True, False), (False, True)]  # once each


def test_transactions_table_and_json(broker):
    with RawKafkaClient.connect(broker.bootstrap_servers) as c:
        r = c.request(22, 4, {"transactional_id": "cli-tx", "transaction_timeout": 60000, "producer_id": -1,
                              "producer_epoch": -1})
        assert r.error_code == 0
        r = c.request(24, 3, {"v3_and_below_transactional_id": "cli-tx", "v3_and_below_producer_id": r.producer_id,
                              "v3_and_below_producer_epoch": r.producer_epoch,
                              "v3_and_below_topics": [{"name": "cli", "partitions": [1]}]})
        assert r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
    code, out, _ = admin(broker, "transactions")
    row = next(line.split() for line in out.splitlines() if line.startswith("cli-tx"))
    assert code == 0 and row[1] == "Ongoing" and row[-1] == "cli-1"
    code, out, _ = admin(broker, "--json", "transactions")
    (t,) = [t for t in json.loads(out) if t["transactional_id"] == "cli-tx"]
    assert (t["state"], t["partitions"]) == ("Ongoing", [["cli", 1]])


def test_command_line_exit_codes():
    out = subprocess.run([sys.executable, "-m", "mockbroker", "admin", "--url", "http://127.0.0.1:1", "status"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 3 and "no answer" in out.stderr and "Traceback" not in out.stderr
    with pytest.raises(argparse.ArgumentTypeError):
        ac._values(["producer_byte_rate"])


def test_the_token_from_the_option_or_the_environment(monkeypatch):
    with MockBroker(config={"mock.admin.listener": "127.0.0.1:0", "mock.admin.token": "s3cret"}) as b:
        code, _, err = admin(b, "status")
        assert code == 1 and "401" in err and "mock.admin.token" in err
        assert admin(b, "--token", "s3cret", "status")[0] == 0
        monkeypatch.setenv(ac.TOKEN_ENV, "s3cret")
        assert admin(b, "faults", "--clear")[0] == 0
