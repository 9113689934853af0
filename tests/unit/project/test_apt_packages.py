"""No hand-installed Debian package is load-bearing: every program and file the suite runs or builds with
comes from a package a new machine of our kind has (../shared/tools/image-packages.txt) or one that
scripts/toolchains.sh installs (Chromium's list there, scripts/container_engine.sh's CE_PACKAGES), or from
outside Debian's packages (Go in /usr/local/go).  A package installed by hand on this machine and needed
by a test would pass here and fail on a fresh machine (issue 20)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import toolchains

REPO = Path(__file__).resolve().parents[3]
IMAGE_PACKAGES = REPO.parent / "shared" / "tools" / "image-packages.txt"

#: what the suite runs (tests, scripts/test.sh's toolchain steps) or builds against, by test or step
PROGRAMS = {
    "java": "the Java client and Spark tests", "javac": "the Java client tests", "mvn": "the Maven resolves",
    "go": "the franz-go program", "node": "the kafkajs tests", "npm": "npm ci",
    "chromium": "the report.html test", "chromedriver": "the report.html test",
    "podman": "the container test", "podman-compose": "the container test", "runc": "the container test",
    "debootstrap": "the base image", "iptables": "netavark's networks (the container test)",
    "curl": "docs/admin.md's example", "bash": "the toolchain steps",
}
#: files (not programs) the toolchain steps rely on
FILES = {
    "/usr/lib/podman/netavark": "the container test's networks",
    "/usr/lib/podman/aardvark-dns": "the container test's service names",
    "/usr/include/node/node.h": "kafkajs-lz4's native build (no header download)",
}


def installed_by_scripts() -> set[str]:
    toolchains_sh = (REPO / "scripts" / "toolchains.sh").read_text()
    engine_sh = (REPO / "scripts" / "container_engine.sh").read_text()
    chromium = re.search(r"install -y -qq --no-install-recommends (chromium[^)\n]*)\)", toolchains_sh)
    ce = re.search(r"^CE_PACKAGES=\(([^)]*)\)", engine_sh, re.M)
    assert chromium and ce, "the package lists of scripts/toolchains.sh and scripts/container_engine.sh moved"
    return set(chromium.group(1).split()) | set(ce.group(1).split())


def package_of(path: str) -> str | None:
    """The Debian package that owns ``path`` (dpkg -S; /usr/bin and /bin are one since usrmerge), or None."""
    for candidate in {path, re.sub(r"^/usr(/s?bin/)", r"\1", path)}:
        r = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True, timeout=30)
        if r.returncode == 0:
            return r.stdout.split(":", 1)[0].strip()
    return None


def test_every_program_the_suite_needs_comes_from_a_package_a_new_machine_gets():
    if shutil.which("dpkg") is None:
        pytest.skip("not a Debian machine: no dpkg to ask which package owns a program")
    toolchains.require(IMAGE_PACKAGES.is_file(), f"{IMAGE_PACKAGES} is missing (../shared beside the clone)")
    allowed = {ln.strip() for ln in IMAGE_PACKAGES.read_text().splitlines()
               if ln.strip() and not ln.startswith("#")} | installed_by_scripts()
    needed = {shutil.which(p) or p: why for p, why in PROGRAMS.items()} | FILES
    hand_installed, missing = [], []
    for path, why in needed.items():
        if not os.path.exists(path):
            missing.append(f"{path} ({why})")
            continue
        package = package_of(os.path.realpath(path)) or package_of(path)
        if package is not None and package not in allowed:
            hand_installed.append(f"{path} from {package} ({why})")
    assert not hand_installed, ("installed by hand here, not on a new machine and installed by no script: "
                                + "; ".join(hand_installed))
    toolchains.require(not missing, "not installed here: " + "; ".join(missing))
