"""One PySpark version everywhere a user reads or installs it: the `spark`/`report` extras, the Maven pom
that resolves Spark's Kafka connector for the tests, and examples/spark/conftest.py."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def example_conftest():
    spec = importlib.util.spec_from_file_location("examples_spark_conftest", REPO / "examples/spark/conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_extras_the_pom_and_the_example_name_one_pyspark():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    pins = {dep for name in ("spark", "report") for dep in extras[name] if dep.startswith("pyspark")}
    pom = re.search(r"<spark\.version>([^<]+)</spark\.version>",
                    (REPO / "tests/integration/spark/pom.xml").read_text()).group(1)
    assert pins == {f"pyspark=={pom}"}
    assert example_conftest().TESTED_PYSPARK == pom


def test_the_example_says_when_pyspark_is_not_the_tested_one():
    conftest = example_conftest()
    assert conftest.version_mismatch(conftest.TESTED_PYSPARK) is None
    said = conftest.version_mismatch("4.3.0")
    assert "pyspark 4.3.0 is installed" in said and f"tested with pyspark {conftest.TESTED_PYSPARK}" in said
    assert "spark-sql-kafka-0-10_2.13:4.3.0" in said
    assert f"python3 -m pip install 'pyspark=={conftest.TESTED_PYSPARK}'" in said


def test_no_install_line_takes_an_unpinned_pyspark_or_mockbroker_from_an_index():
    """Every `pip install` line of the docs is copy-pasteable: mockbroker is not on an index, and a plain
    `pyspark` would be a newer release than the connector the tests resolve."""
    for doc in [REPO / "README.md", *REPO.glob("docs/*.md"), *REPO.glob("examples/**/*.md")]:
        text = doc.read_text()
        # the lines a user copies: fenced code, and `python3 -m pip install ...` spans in the prose (the
        # prose may quote a bare `pip install pyspark` as what not to do)
        lines = [ln for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M) for ln in block.splitlines()]
        lines += re.findall(r"`(python3? -m pip install[^`]*)`", text)
        for line in lines:
            if "pip install" not in line:
                continue
            words = re.findall(r"[\w.\[\]'\"=<>@:/+-]+", line.split("pip install", 1)[1].split(" #")[0])
            assert "mockbroker" not in words, f"{doc.relative_to(REPO)}: {line}"
            assert not any(re.fullmatch(r"['\"]?pyspark['\"]?", w) for w in words), f"{doc.relative_to(REPO)}: {line}"
