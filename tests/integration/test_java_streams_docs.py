"""docs/streams.md's JUnit example, as a Streams user would run it: the ``// WordCountIT.java`` block
compiled with javac against kafka-streams 4.4.0 and JUnit 5 (tests/integration/java/pom.xml), run by
JUnit's console launcher in a directory holding the doc's ``# streams-test.toml`` block, with this
checkout's ``mockbroker`` first on the PATH (the test starts it with ``mockbroker serve``). The
example checks its own output exactly (every count once under exactly_once_v2 while throttled and
fenced); here JUnit must report its one test successful. Skips without java, javac or mvn, fails
under CI (see javatools.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from .javatools import JAVA_TIMEOUT_S, MAVEN_TIMEOUT_S, tail
from .javatools import java_classpath as _java_classpath

DOC = Path(__file__).parents[2] / "docs" / "streams.md"


def _block(lang: str, first_line: str) -> str:
    """The doc's ``lang`` code block that opens with ``first_line``."""
    blocks = [b for b in re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), re.S) if b.startswith(first_line)]
    assert len(blocks) == 1, f"{DOC}: one {lang} block opening with {first_line!r}, found {len(blocks)}"
    return blocks[0]


def test_the_junit_example_runs(tmp_path):
    classpath = _java_classpath()  # the Maven classpath (with JUnit), nothing of ours compiled
    (tmp_path / "streams-test.toml").write_text(_block("toml", "# streams-test.toml"))
    (tmp_path / "WordCountIT.java").write_text(_block("java", "// WordCountIT.java"))
    javac = shutil.which("javac") or "javac"
    r = subprocess.run([javac, "-cp", classpath, "-d", str(tmp_path / "out"), str(tmp_path / "WordCountIT.java")],
                       capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S)
    assert r.returncode == 0, f"javac failed:\n{r.stdout}\n{r.stderr}"
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    cmd = [shutil.which("java") or "java", "-Xmx256m", "-cp", classpath + os.pathsep + str(tmp_path / "out"),
           "org.junit.platform.console.ConsoleLauncher", "execute", "--disable-banner", "--details=summary",
           "--select-class", "WordCountIT"]
    r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
    log = tmp_path / "mockbroker.log"
    report = (f"exit {r.returncode}\nstdout:\n{tail(r.stdout, 60)}\nstderr:\n{tail(r.stderr, 20)}\n"
              f"mockbroker.log:\n{tail(log.read_text(), 20) if log.exists() else '(none)'}")
    assert r.returncode == 0, report
    assert re.search(r"\b1 tests successful\b", r.stdout) and re.search(r"\b0 tests failed\b", r.stdout), report
