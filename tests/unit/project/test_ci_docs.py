"""docs/ci.md's GitHub Actions and GitLab CI snippets parse, have the structure each CI expects, and
their shell commands, run here as the CI would run them, start mockbroker, wait until it answers,
and stop it.

Changed to run here: the install commands are left out (the repository's installed mockbroker is
first on PATH), the port 9092 becomes a free one, and the project's tests (``pytest -q``) become a
Metadata round trip checking the broker answers with the port it was given.  Each step runs in
``bash --noprofile --norc -eo pipefail``, GitHub's default ``run`` shell (GitLab's is alike), in a
temporary directory; every wait is bounded.
"""

from __future__ import annotations

import os
import pathlib
import re
import socket
import subprocess
import sys
import time

from tests.toolchains import unavailable

ROOT = pathlib.Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "ci.md"
SHELL = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]
INSTALL = re.compile(r"\bpip install\b")
TESTS = re.compile(r"^\s*(python -m )?pytest\b.*$", re.MULTILINE)

# what replaces the project's tests: a Metadata v12 round trip with the broker
CHECK = """\
import sys
from protocol.client import RawKafkaClient
host, port = sys.argv[1].rsplit(":", 1)
with RawKafkaClient(host, int(port)) as c:
    brokers = c.request(3, 12, {"topics": None}).brokers
assert [(b.host, b.port) for b in brokers] == [(host, int(port))], brokers
print("broker answered")
"""


def yaml_blocks() -> list[dict]:
    try:
        import yaml  # PyYAML: schemathesis's dependency, so in the test extra's environment
    except ImportError:
        unavailable("PyYAML is not installed: docs/ci.md's snippets cannot be parsed")
    text = DOC.read_text(encoding="utf-8")
    return [yaml.safe_load(b) for b in re.findall(r"^```yaml\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)]


def github() -> dict:
    [doc] = [b for b in yaml_blocks() if "jobs" in b]
    return doc


def gitlab() -> dict:
    [doc] = [b for b in yaml_blocks() if "jobs" not in b]
    return doc


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Runner:
    """Runs a snippet's commands as its CI would, in ``work``, with the port changed."""

    def __init__(self, work: pathlib.Path, env: dict[str, str]) -> None:
        self.work = work
        self.port = free_port()
        (work / "check.py").write_text(CHECK)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("MOCKBROKER_")}
        self.env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + self.env["PATH"]
        self.env["PYTHONPATH"] = str(ROOT)
        self.env.update({k: self.adapt(str(v)) for k, v in env.items()})

    def adapt(self, script: str) -> str:
        script = "\n".join(line for line in script.splitlines() if not INSTALL.search(line))
        script = TESTS.sub(f"{sys.executable} check.py 127.0.0.1:9092", script)
        return script.replace("9092", str(self.port))

    def run(self, script: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(SHELL + ["-c", self.adapt(script)], cwd=self.work, env=self.env,
                              capture_output=True, text=True, timeout=timeout)

    def pid(self) -> int:
        return int((self.work / "mockbroker.pid").read_text())

    def alive(self) -> bool:
        try:
            os.kill(self.pid(), 0)
        except ProcessLookupError:
            return False
        return True

    def cleanup(self) -> None:
        """Kill the broker the snippet started, if a failed check left it running."""
        if (self.work / "mockbroker.pid").exists() and self.alive():
            os.kill(self.pid(), 9)

    def assert_stopped_after_serving(self) -> None:
        """The stop step ended the broker, whose log shows it started on the port and stopped."""
        assert not self.alive()
        log = self.log()
        assert f"mockbroker ready bootstrap=127.0.0.1:{self.port}" in log and "stopped" in log, log

    def log(self) -> str:
        path = self.work / "mockbroker.log"
        return path.read_text() if path.exists() else ""


def github_steps() -> list[dict]:
    job = next(iter(github()["jobs"].values()))
    return [s for s in job["steps"] if "run" in s]


def test_github_structure():
    doc = github()
    assert "on" in doc or True in doc  # YAML 1.1 reads a bare `on` key as True
    [job] = doc["jobs"].values()
    assert job["runs-on"] and isinstance(job["steps"], list)
    for step in job["steps"]:
        assert ("uses" in step) != ("run" in step), step
    names = [s.get("name", "") for s in job["steps"]]
    assert any("Start" in n for n in names) and any("Stop" in n for n in names)
    stop = next(s for s in job["steps"] if "Stop" in s.get("name", ""))
    assert stop["if"] == "always()"  # the broker is stopped when the tests fail too


def test_gitlab_structure():
    doc = gitlab()
    [job] = doc.values()
    assert all(isinstance(c, str) for c in job["before_script"] + job["script"] + job["after_script"])
    assert "mockbroker.log" in job["artifacts"]["paths"] and job["artifacts"]["when"] == "always"


def test_github_commands_start_wait_answer_and_stop(tmp_path):
    job = next(iter(github()["jobs"].values()))
    runner = Runner(tmp_path, job.get("env", {}))
    assert runner.env["KAFKA_BOOTSTRAP_SERVERS"] == f"127.0.0.1:{runner.port}"
    try:
        for step in github_steps():
            if step.get("if") == "failure()":
                continue
            t0 = time.monotonic()
            r = runner.run(step["run"])
            assert r.returncode == 0, f"{step.get('name')}: {r.stdout}{r.stderr}\nlog:\n{runner.log()}"
            if "Start" in step.get("name", ""):
                assert runner.alive() and time.monotonic() - t0 < 5
            if TESTS.search(step["run"]):
                assert r.stdout == "broker answered\n"
        runner.assert_stopped_after_serving()
    finally:
        runner.cleanup()


def test_gitlab_commands_start_wait_answer_and_stop(tmp_path):
    job = next(iter(gitlab().values()))
    runner = Runner(tmp_path, job.get("variables", {}))
    try:
        for command in job["before_script"]:
            assert runner.run(command).returncode == 0
        r = runner.run("\n".join(job["script"]))  # one shell, as GitLab runs script
        assert r.returncode == 0, f"{r.stdout}{r.stderr}\nlog:\n{runner.log()}"
        assert r.stdout.endswith("broker answered\n") and runner.alive()
        for command in job["after_script"]:
            assert runner.run(command).returncode == 0
        runner.assert_stopped_after_serving()
    finally:
        runner.cleanup()


def test_the_wait_fails_fast_when_the_broker_cannot_start(tmp_path):
    """The checks above can fail: with a configuration error the broker exits at once, and the wait
    step fails in well under its 30 s with the broker's reason."""
    job = next(iter(github()["jobs"].values()))
    runner = Runner(tmp_path, job.get("env", {}))
    start, wait = (next(s for s in github_steps() if w in s.get("name", "")) for w in ("Start", "Wait"))
    try:
        assert runner.run(start["run"].replace("mockbroker serve", "mockbroker serve -c no.such.key=1")).returncode == 0
        t0 = time.monotonic()
        r = runner.run(wait["run"])
        assert r.returncode == 1 and time.monotonic() - t0 < 10
        assert "unknown configuration key 'no.such.key'" in r.stdout
    finally:
        runner.cleanup()
