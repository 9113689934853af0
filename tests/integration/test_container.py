"""The container image (Dockerfile) and the compose stack (docker-compose.yml), for real, with podman.

Once per module: both images are built (the broker's from the Dockerfile, the example client's from
compose/Dockerfile.client) on the debootstrapped base (BASE build argument, scripts/container_engine.sh),
the `kafka` service is started with podman-compose, and its health check (`mockbroker probe`) is run
until it reports healthy; then the example client runs to completion against kafka:9092 on the compose
network, and kafka-python from this venv talks to the EXTERNAL listener on 127.0.0.1:19092.  The stack
is torn down in the fixture's finalizer (`down -t 0`, then the network), whatever happened.

Where podman cannot run (not root, not installed, no base image) the tests skip, or fail under CI
(tests/toolchains.py ``podman``).  docs/container.md describes the setup.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests import toolchains

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker-compose.yml"
ENGINE = REPO / "scripts" / "container_engine.sh"
BROKER_IMAGE = "localhost/mockbroker:latest"
CLIENT_IMAGE = "localhost/mockbroker-example-client:latest"
EXTERNAL = ("127.0.0.1", 19092)
HEALTHY_WITHIN_S = 60


class Stack:
    def __init__(self, env: dict[str, str], project: str) -> None:
        self.env, self.project = env, project
        self.timings: dict[str, float] = {}

    def run(self, *cmd: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
        r = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, env=self.env, cwd=REPO)
        if check and r.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        return r

    def engine(self, *args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run("bash", str(ENGINE), *args, timeout=timeout, check=check)

    def compose(self, *args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run("podman-compose", "-p", self.project, "-f", str(COMPOSE), *args, timeout=timeout, check=check)

    def container(self, service: str) -> str:
        r = self.run("podman", "ps", "-aq", "--filter", f"label=io.podman.compose.project={self.project}",
                     "--filter", f"label=com.docker.compose.service={service}", timeout=30)
        ids = r.stdout.split()
        assert len(ids) == 1, f"containers of service {service}: {ids}"
        return ids[0]

    def inspect(self, ref: str, kind: str = "container") -> dict:
        return json.loads(self.run("podman", kind, "inspect", ref, timeout=30).stdout)[0]

    def leftovers(self) -> list[str]:
        ps = self.run("podman", "ps", "-aq", "--filter", f"label=io.podman.compose.project={self.project}",
                      timeout=30).stdout.split()
        nets = [n for n in self.run("podman", "network", "ls", "--format", "{{.Name}}", timeout=30).stdout.split()
                if n == f"{self.project}_default"]
        return ps + nets

    def require_running(self, ref: str, started_by: subprocess.CompletedProcess[str]) -> None:
        """Fail at once, with podman's own words, when the container is not running: podman-compose 1.0
        exits 0 even when its `podman run` or `podman start` failed (it only prints "exit code: N")."""
        state = self.inspect(ref)["State"]
        if state.get("Status") == "running":
            return
        failed = failed_compose_steps(started_by.stdout + started_by.stderr)
        start = self.run("podman", "start", ref, timeout=60, check=False)
        logs = self.run("podman", "logs", ref, timeout=30, check=False)
        raise AssertionError(
            f"container {ref} is {state.get('Status')!r} (exit code {state.get('ExitCode')}, error "
            f"{state.get('Error')!r}), not running\n"
            f"podman-compose's failed steps:\n{failed or '(none reported)'}\n"
            f"`podman start {ref}` exited {start.returncode}: {(start.stdout + start.stderr).strip()[-3000:]}\n"
            f"`podman logs {ref}`: {(logs.stdout + logs.stderr).strip()[-3000:] or '(empty)'}")

    def down(self) -> None:
        self.engine("down", self.project, str(COMPOSE), timeout=120, check=False)


def failed_compose_steps(output: str) -> str:
    """The podman commands podman-compose ran that failed: each "exit code: N" (N != 0) with the command
    printed before it."""
    lines, out = output.splitlines(), []
    for i, line in enumerate(lines):
        if line.startswith("exit code: ") and line.split(":", 1)[1].strip() not in ("", "0"):
            out.append(f"{lines[i - 1] if i else '?'}\n  -> {line}")
    return "\n".join(out)


def port_is_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex((host, port)) != 0


@pytest.fixture(scope="module")
def stack():
    env = toolchains.podman()
    s = Stack(env, f"mbtest{uuid.uuid4().hex[:8]}")
    for image, extra in ((BROKER_IMAGE, ()), (CLIENT_IMAGE, ("-f", str(REPO / "compose" / "Dockerfile.client")))):
        t0 = time.monotonic()
        s.engine("build", str(REPO), image, *extra, timeout=600)
        s.timings[f"build {image}"] = time.monotonic() - t0
    assert port_is_free(*EXTERNAL), f"{EXTERNAL[0]}:{EXTERNAL[1]} is taken: the EXTERNAL listener cannot be published"
    try:
        t0 = time.monotonic()
        up = s.compose("up", "-d", "kafka", timeout=120)
        kafka = s.container("kafka")
        s.require_running(kafka, up)
        deadline = time.monotonic() + HEALTHY_WITHIN_S
        # podman runs health checks from systemd timers; without systemd (as here) nothing schedules them,
        # so the check is run by hand -- the same command, and it sets the same health status
        while s.run("podman", "healthcheck", "run", kafka, timeout=30, check=False).returncode != 0:
            s.require_running(kafka, up)  # exited while starting: its error and logs now, not in 60 s
            if time.monotonic() > deadline:
                logs = s.run("podman", "logs", kafka, timeout=30, check=False)
                raise AssertionError(f"kafka not healthy within {HEALTHY_WITHIN_S} s; its logs:\n"
                                     f"{logs.stdout[-3000:]}{logs.stderr[-3000:]}")
            time.sleep(0.5)
        s.timings["up to healthy"] = time.monotonic() - t0
        yield s
    finally:
        s.down()
        left = s.leftovers()
        print(f"\ncontainer stack timings: {', '.join(f'{k} {v:.1f} s' for k, v in s.timings.items())}")
        assert not left, f"the teardown left {left}"


def test_image_is_small_non_root_and_checks_its_health(stack):
    image = stack.inspect(BROKER_IMAGE, kind="image")
    config = image["Config"]
    assert config["User"] == "10001:10001"
    assert set(config["ExposedPorts"]) == {"9092/tcp", "19092/tcp"}
    healthcheck = image.get("Healthcheck") or config.get("Healthcheck")  # podman's place, Docker's
    assert healthcheck["Test"] == ["CMD", "mockbroker", "probe", "--timeout", "3"]
    r = stack.run("podman", "run", "--rm", "--entrypoint", "sh", BROKER_IMAGE, "-c",
                  "id -u; for t in gcc cc c++ make ld; do command -v $t; done; "
                  "python3 -c 'import setuptools' 2>/dev/null && echo setuptools; mockbroker --version",
                  timeout=60, check=False)
    uid, *version = r.stdout.split()
    assert uid == "10001" and version[:1] == ["mockbroker"] and len(version) == 2, r  # no compiler, no setuptools
    assert image["Size"] < 400 * 1024 * 1024, image["Size"]


def test_kafka_service_is_healthy_by_probe(stack):
    state = stack.inspect(stack.container("kafka"))
    assert state["State"]["Health"]["Status"] == "healthy"
    assert "mockbroker probe --bootstrap 127.0.0.1:9092" in " ".join(state["Config"]["Healthcheck"]["Test"])
    # the probe inside the container fails on a port nobody listens on: the check is not a formality
    r = stack.run("podman", "exec", stack.container("kafka"), "mockbroker", "probe", "--bootstrap",
                  "127.0.0.1:9", timeout=30, check=False)
    assert r.returncode == 1 and r.stderr.startswith("mockbroker probe: 127.0.0.1:9: "), r


def test_example_client_on_the_compose_network(stack):
    """`run` the example client (kafka is up and healthy: --no-deps) and wait for it; its exit code is ours."""
    t0 = time.monotonic()
    r = stack.compose("run", "--rm", "-T", "--no-deps", "client", timeout=150, check=False)
    stack.timings["example client"] = time.monotonic() - t0
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert ("example client: produced 1000 records to example (3 partitions) via kafka:9092; "
            "brokers advertised: kafka:9092") in out, out[-4000:]
    assert "example client: consumed 1000 records back, every key, value and per-partition order matches" in out


def test_host_client_on_the_external_listener(stack):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    bootstrap = f"{EXTERNAL[0]}:{EXTERNAL[1]}"
    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id="host-client", acks="all",
                             request_timeout_ms=10_000, max_block_ms=20_000)
    try:
        partitions = producer.partitions_for("from-host")  # auto-created, num.partitions=3 from the TOML
        assert partitions == {0, 1, 2}
        brokers = [(b.host, b.port) for b in producer._metadata.brokers()]
        assert brokers == [("localhost", 19092)]  # the EXTERNAL listener's advertised address
        sent = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(200)]
        futures = [producer.send("from-host", key=k, value=v, partition=i % 3) for i, (k, v) in enumerate(sent)]
        producer.flush(timeout=30)
        for f in futures:
            f.get(timeout=10)
    finally:
        producer.close(timeout=5)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id="host-client", enable_auto_commit=False,
                             consumer_timeout_ms=1_000, request_timeout_ms=10_000)
    got: list[tuple[int, bytes, bytes]] = []
    try:
        parts = [TopicPartition("from-host", p) for p in range(3)]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        deadline = time.monotonic() + 30
        while len(got) < len(sent) and time.monotonic() < deadline:
            got += [(rec.partition, rec.key, rec.value) for rec in consumer]
    finally:
        consumer.close()
    want = sorted((i % 3, k, v) for i, (k, v) in enumerate(sent))
    assert sorted(got) == want
    for p in range(3):  # and in order within each partition
        assert [kv for q, *kv in got if q == p] == [[k, v] for i, (k, v) in enumerate(sent) if i % 3 == p]


def test_quotas_from_the_mounted_toml(stack):
    """compose/mockbroker.toml's [[mock.quotas]] reached the broker: DescribeClientQuotas over EXTERNAL."""
    from protocol.client import RawKafkaClient

    with RawKafkaClient(*EXTERNAL, client_id="quota-reader") as c:
        r = c.request(48, 1, {"components": [{"entity_type": "client-id", "match_type": 2, "match": None}],
                              "strict": False})
    assert r.error_code == 0
    got = {e.entity[0].entity_name: {v.key: v.value for v in e.values} for e in r.entries}
    assert got == {"example-client": {"producer_byte_rate": 1048576.0, "consumer_byte_rate": 2097152.0},
                   None: {"producer_byte_rate": 10485760.0, "request_percentage": 200.0}}


def test_ports_are_published_on_loopback_only(stack):
    ports = stack.inspect(stack.container("kafka"))["NetworkSettings"]["Ports"]
    assert ports["19092/tcp"] == [{"HostIp": "127.0.0.1", "HostPort": "19092"}]
    assert not ports.get("9092/tcp"), ports  # INTERNAL is for the compose network only
