"""Kafka's Java clients (kafka-clients 4.4.0) for the integration tests: Maven resolves the jars, javac compiles.

Maven (tests/integration/java/pom.xml) only resolves kafka-clients and writes the classpath to
cp.txt; scripts/test.sh does that online once, so the artifacts sit in ~/.m2 and the tests run
offline. When cp.txt is missing, ``java_classpath`` runs Maven itself (offline first, then online)
and skips with Maven's last lines when that fails; it skips too when java, javac or mvn is not on
PATH. Under CI those skips are failures (tests/toolchains.py). Programs in
tests/integration/java/src are compiled with plain javac into tests/integration/java/out (ignored
by git).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.toolchains import unavailable, which

JAVA_DIR = Path(__file__).parent / "java"
OUT_DIR = JAVA_DIR / "out"
MAVEN_TIMEOUT_S = 300
JAVA_TIMEOUT_S = 120


def tail(text: str, n: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


def _newer(target: Path, *sources: Path) -> bool:
    return target.is_file() and all(target.stat().st_mtime >= s.stat().st_mtime for s in sources)


def maven_classpath(mvn: str, directory: Path, what: str) -> str:
    """The classpath of the Maven project in ``directory`` (its cp.txt), (re)written by Maven -- offline
    first, then online -- when missing or older than the pom; ``unavailable`` naming ``what`` when Maven
    cannot resolve it or a listed jar is gone."""
    pom, classpath_file = directory / "pom.xml", directory / "cp.txt"
    if not _newer(classpath_file, pom):
        common = ["-q", "-B", "-Dstyle.color=never"]
        attempts = [
            [mvn, "-o", *common, "dependency:build-classpath", f"-Dmdep.outputFile={classpath_file.name}"],
            [mvn, *common, "dependency:resolve", "dependency:build-classpath",
             f"-Dmdep.outputFile={classpath_file.name}"],
        ]
        output = ""
        for cmd in attempts:
            classpath_file.unlink(missing_ok=True)
            try:
                r = subprocess.run(cmd, cwd=directory, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S)
            except subprocess.TimeoutExpired as e:
                output = f"{' '.join(cmd)} timed out after {MAVEN_TIMEOUT_S}s\n{e.stdout or ''}"
                continue
            if r.returncode == 0 and classpath_file.is_file():
                break
            output = f"{' '.join(cmd)} exited {r.returncode}\n{r.stdout}\n{r.stderr}"
        else:
            unavailable(f"Maven could not resolve {what} (see {pom}):\n{tail(output)}")
    cp = classpath_file.read_text().strip()
    missing = [p for p in cp.split(os.pathsep) if p and not Path(p).is_file()]
    if not cp or missing:
        classpath_file.unlink(missing_ok=True)  # stale (e.g. ~/.m2 emptied): rebuilt next run
        unavailable(f"{classpath_file} lists jars that are missing: {missing[:3]}; rerun to resolve again")
    return cp


def java_classpath(*programs: str) -> str:
    """The classpath to run ``programs`` (class names of tests/integration/java/src/*.java), compiled."""
    _java, javac, mvn = which("java", "javac", "mvn", needed_by="the Java client tests")
    cp = maven_classpath(mvn, JAVA_DIR, "kafka-clients")
    for program in programs:
        source = JAVA_DIR / "src" / f"{program}.java"
        if not _newer(OUT_DIR / f"{program}.class", source, JAVA_DIR / "cp.txt"):
            # -sourcepath: a program may use another's helpers (compiled along with it)
            cmd = [javac, "-cp", cp, "-sourcepath", str(JAVA_DIR / "src"), "-d", str(OUT_DIR), str(source)]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S)
            assert r.returncode == 0, f"javac failed:\n{r.stdout}\n{r.stderr}"
    return cp + os.pathsep + str(OUT_DIR)
