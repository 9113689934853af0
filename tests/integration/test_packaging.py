"""Packaging: the wheel `python -m build --wheel` makes from this tree installs into a fresh virtual
environment from wheels only (no compiler), with no warning or deprecation in the build's or the
install's output, carries the SPDX license (PEP 639: License-Expression and the LICENSE file), and
its `mockbroker --version` and `python -m mockbroker --version` print the version.

The build runs on a copy of the files the package is made of, so nothing is written into the work
tree (setuptools writes build/ and *.egg-info next to pyproject.toml).  `build` is installed into a
throwaway environment of its own; pip's cache makes a warm run take about 25 s.  Without a package
index the test skips, and under CI it fails (tests/toolchains.py).
"""

from __future__ import annotations

import email.parser
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile

import pytest

from tests.toolchains import unavailable

ROOT = pathlib.Path(__file__).resolve().parents[2]
# what the package is made of: pyproject.toml's packages (protocol*, mockbroker*), its readme and license
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "protocol", "mockbroker")
WARNING = re.compile(r"warn|deprecat", re.IGNORECASE)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    # PYTHONDONTWRITEBYTECODE makes setuptools say "warning: byte-compiling is disabled": the
    # environment's setting, not the package's; a user's build does not have it
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"
    return env


def _run(cmd: list[str], cwd: pathlib.Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=timeout)


def _python(env_dir: pathlib.Path) -> pathlib.Path:
    """A fresh virtual environment without pip of its own (ensurepip takes 10 s): pip installs into
    it from this interpreter with ``--python``."""
    venv.create(env_dir, with_pip=False, clear=True)
    return env_dir / "bin" / "python"


def _pip_install(python: pathlib.Path, *args: object) -> list[object]:
    # --no-compile: byte-compiling the dependencies is slow and not what is tested here
    return [sys.executable, "-m", "pip", "--python", python, "install", "--no-compile", *args]


def _warnings(output: str) -> list[str]:
    return [line for line in output.splitlines() if WARNING.search(line)]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(the wheel, the build's output, the work directory)."""
    work = tmp_path_factory.mktemp("packaging")
    src = work / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
        else:
            shutil.copy2(ROOT / name, src / name)
    tools = _python(work / "tools")
    r = _run(_pip_install(tools, "build"), cwd=work)
    if r.returncode != 0:
        unavailable(f"cannot install build into a fresh venv (no package index?):\n{r.stdout}{r.stderr}")
    r = _run([tools, "-m", "build", "--wheel", "--outdir", work / "dist", src], cwd=work)
    output = r.stdout + r.stderr
    assert r.returncode == 0, output
    wheels = list((work / "dist").glob("mockbroker-*.whl"))
    assert len(wheels) == 1, output
    return wheels[0], output, work


@pytest.mark.slow
def test_build_prints_no_warning(built):
    _, output, _ = built
    assert _warnings(output) == [], output


@pytest.mark.slow
def test_metadata_has_the_spdx_license(built):
    wheel, _, _ = built
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert wheel.name == f"mockbroker-{version}-py3-none-any.whl"  # pure Python: nothing to compile
    with zipfile.ZipFile(wheel) as z:
        meta = email.parser.Parser().parsestr(z.read(f"mockbroker-{version}.dist-info/METADATA").decode())
        names = z.namelist()
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta["License"] is None  # the deprecated free-text field is not written next to it
    assert not [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    assert meta.get_all("License-File") == ["LICENSE"]
    assert f"mockbroker-{version}.dist-info/licenses/LICENSE" in names
    assert "mockbroker/admin/openapi.json" in names


@pytest.mark.slow
def test_installs_and_prints_its_version(built):
    wheel, _, work = built
    python = _python(work / "target")
    # wheels only: neither mockbroker nor any dependency needs a compiler
    r = _run(_pip_install(python, "--only-binary=:all:", wheel), cwd=work)
    output = r.stdout + r.stderr
    assert r.returncode == 0, output
    assert _warnings(output) == [], output
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    for cmd in ([work / "target" / "bin" / "mockbroker", "--version"], [python, "-m", "mockbroker", "--version"]):
        r = _run(cmd, cwd=work, timeout=60)  # cwd outside the repository: the installed package runs
        assert (r.returncode, r.stdout, r.stderr) == (0, f"mockbroker {version}\n", ""), cmd
    r = _run([python, "-c", "import mockbroker; print(mockbroker.__file__)"], cwd=work, timeout=60)
    assert pathlib.Path(r.stdout.strip()).is_relative_to(work / "target"), r.stdout + r.stderr


def test_the_warning_filter_catches_setuptools_and_pip_warnings():
    """The checks above can fail: the lines setuptools and pip print for the problems they watch for."""
    output = ("running bdist_wheel\n"
              "!! SetuptoolsDeprecationWarning: License classifiers are deprecated.\n"
              "DEPRECATION: Building 'x' using the legacy setup.py bdist_wheel mechanism\n"
              "WARNING: The script mockbroker is installed in '/x/bin' which is not on PATH.\n"
              "Successfully installed mockbroker-0.1.0\n")
    assert len(_warnings(output)) == 3
