"""Skip, or fail under CI, when a test's toolchain or built artifact is missing.

The kafkajs, franz-go and Java client tests need Node/npm, Go and a JDK with Maven, and what
scripts/test.sh builds with them (node_modules, bin/groupconsumers, cp.txt); the report.html test
needs Chromium and chromedriver, which scripts/test.sh installs with apt-get (``chromium``); the container
test needs podman, podman-compose and the base image scripts/container_engine.sh makes (``podman``).  A
developer may lack a toolchain: there those tests skip with a clear reason.  CI has them all and
must run every client's tests, so there the same situation fails the test with the same reason: a
CI run cannot pass by skipping a whole client.  scripts/toolchains.sh makes the same decision for
the build steps, with the same reading of the CI variable (``in_ci``).

Every toolchain-dependent test goes through ``unavailable`` (or ``require`` / ``which``) instead of
calling ``pytest.skip`` itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import NoReturn

import pytest

#: Values of CI that mean "not CI" (case-insensitive); any other non-empty value means CI.
NOT_CI = frozenset({"", "0", "false", "no", "off"})


def in_ci() -> bool:
    """True when the CI environment variable is set to anything but empty, 0, false, no or off."""
    return os.environ.get("CI", "").lower() not in NOT_CI


def unavailable(reason: str) -> NoReturn:
    """The toolchain or artifact a test needs is missing: skip with ``reason``, or fail with it under CI."""
    if in_ci():
        pytest.fail(f"{reason}\n(CI={os.environ.get('CI')}: a missing toolchain fails the run in CI "
                    f"instead of skipping; see tests/toolchains.py)", pytrace=False)
    pytest.skip(reason)


def require(condition: object, reason: str) -> None:
    """Go on when ``condition`` holds; otherwise ``unavailable(reason)``."""
    if not condition:
        unavailable(reason)


def which(*names: str, needed_by: str) -> list[str]:
    """The paths of the programs ``names`` on PATH; ``unavailable`` naming the absent ones otherwise."""
    paths = {name: shutil.which(name) for name in names}
    absent = [name for name, path in paths.items() if path is None]
    require(not absent, f"{needed_by} cannot run: {', '.join(absent)} not found on PATH "
                        f"(needs {', '.join(names)})")
    return [paths[name] for name in names]  # type: ignore[misc]


def chromium() -> tuple[str, str]:
    """The paths of ``chromium`` and ``chromedriver`` (Debian's chromium and chromium-driver, which
    scripts/toolchains.sh's toolchain_chromium installs); ``unavailable`` naming the absent ones otherwise."""
    browser, driver = which("chromium", "chromedriver", needed_by="the report.html browser test")
    return browser, driver


REPO = Path(__file__).resolve().parents[1]
CONTAINER_ENGINE_SH = REPO / "scripts" / "container_engine.sh"
#: the base image scripts/container_engine.sh makes with debootstrap (CE_BASE there)
PODMAN_BASE = os.environ.get("CE_BASE", "localhost/mockbroker-base:bookworm")


def podman() -> dict[str, str]:
    """The environment to run ``podman`` and ``podman-compose`` with (CONTAINERS_CONF from
    scripts/container_engine.sh's ``conf``: runc, netavark, ulimits this machine allows), once podman
    and podman-compose are on PATH, we are root, podman answers and the base image exists (scripts/
    toolchains.sh's toolchain_podman installs and makes them); ``unavailable`` naming what is missing
    otherwise."""
    needed_by = "the container test (test_container.py)"
    which("podman", "podman-compose", needed_by=needed_by)
    require(os.geteuid() == 0, f"{needed_by} cannot run: it uses podman as root (its storage, netavark "
                               f"networks and published ports), and this is uid {os.geteuid()}")
    r = subprocess.run(["bash", str(CONTAINER_ENGINE_SH), "conf"], capture_output=True, text=True, timeout=30)
    require(r.returncode == 0, f"{needed_by} cannot run: scripts/container_engine.sh conf exited "
                               f"{r.returncode}: {r.stderr.strip()}")
    env = {**os.environ, "CONTAINERS_CONF": r.stdout.strip()}
    r = subprocess.run(["podman", "info", "--format", "{{.Host.NetworkBackend}}"], capture_output=True,
                       text=True, timeout=60, env=env)
    require(r.returncode == 0, f"{needed_by} cannot run: `podman info` exited {r.returncode}: "
                               f"{r.stderr.strip()[-500:]}")
    require(r.stdout.strip() == "netavark", f"{needed_by} cannot run: podman's network backend is "
                                            f"{r.stdout.strip()!r}, not netavark (install netavark and "
                                            "aardvark-dns: compose services resolve each other by name)")
    r = subprocess.run(["podman", "image", "exists", PODMAN_BASE], capture_output=True, timeout=60, env=env)
    require(r.returncode == 0, f"{needed_by} cannot run: the base image {PODMAN_BASE} is missing "
                               "(make it with `bash scripts/container_engine.sh ready`, as toolchain_podman does)")
    return env
