"""A missing or failing client toolchain skips its tests on a developer machine and fails CI.

Two layers, both tested here without running any real go, npm, mvn or javac:

* scripts/toolchains.sh, sourced by scripts/test.sh: one function a toolchain step (npm ci, Maven
  resolve, go build, the apt-get install of Chromium, the apt-get install of podman and its base image).  They run in a bash whose PATH holds only stub
  programs (Python scripts that log their calls, create the step's artifact or exit 1), in a scratch
  copy of the repository layout.
* tests/toolchains.py, which every toolchain-dependent test goes through (gotools.py, jstools.py,
  javatools.py, ``chromium``, ``podman``): ``pytest.skip`` without CI, ``pytest.fail`` with the same reason under CI.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path
from subprocess import run

import pytest

from tests import toolchains
from tests.integration import gotools, javatools, jstools, sparktools
from tests.toolchains import in_ci, require, unavailable, which

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[3]
TOOLCHAINS_SH = REPO / "scripts" / "toolchains.sh"
BASH = shutil.which("bash") or "/bin/bash"

Skipped, Failed = pytest.skip.Exception, pytest.fail.Exception


def outcome_of(fn, *args, **kwargs) -> Skipped | Failed:
    """The skip or failure ``fn`` raises.  Caught here, so that a skip where a failure is expected fails
    this test instead of skipping it (``pytest.raises(Failed)`` would let the skip through)."""
    try:
        fn(*args, **kwargs)
    except (Skipped, Failed) as e:
        return e
    raise AssertionError(f"{fn.__name__} neither skipped nor failed")


def assert_outcome(mode: str, e: Skipped | Failed, pattern: str) -> None:
    want = Failed if mode == "ci" else Skipped
    assert type(e) is want, f"{type(e).__name__} ({e.msg!r}), want {want.__name__}"
    assert re.search(pattern, e.msg), e.msg


# ---- stub programs on a PATH of their own ----------------------------------------------------------

STUB = """#!{python}
import json, os, sys
from pathlib import Path
with open({log!r}, "a") as f:
    f.write(json.dumps([{name!r}, os.getcwd(), sys.argv[1:]]) + "\\n")
if {rc} == 0:
    for rel in {creates!r}:
        p = Path(rel)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("built by the stub")
        p.chmod(0o755)
else:
    print("stub {name}: simulated failure", file=sys.stderr)
sys.exit({rc})
"""


class Stubs:
    """A directory of stub programs, meant to be the whole PATH."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "stubbin"
        self.dir.mkdir()
        self.log = root / "calls.jsonl"
        self.libexec = root / "podman-libexec"  # CE_PODMAN_LIBEXEC: where netavark and aardvark-dns go

    def add(self, name: str, rc: int = 0, creates: tuple[str, ...] = ()) -> None:
        path = self.dir / name
        path.write_text(STUB.format(python=sys.executable, log=str(self.log), name=name, rc=rc,
                                    creates=list(creates)))
        path.chmod(0o755)

    def link(self, name: str) -> None:
        """The real program ``name`` (e.g. dirname for scripts/test.sh)."""
        (self.dir / name).symlink_to(shutil.which(name))

    def calls(self) -> list[tuple[str, str, list[str]]]:
        if not self.log.exists():
            return []
        return [tuple(json.loads(line)) for line in self.log.read_text().splitlines()]


@pytest.fixture
def stubs(tmp_path: Path) -> Stubs:
    return Stubs(tmp_path)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The layout of the repository that the toolchain steps look at, without artifacts."""
    root = tmp_path / "repo"
    files = {"tests/integration/js/package-lock.json": "{}", "tests/integration/java/pom.xml": "<project/>",
             "tests/integration/go/main.go": "package main", "tests/integration/go/go.mod": "module x",
             "tests/integration/go/go.sum": "", "tests/integration/spark/pom.xml": "<project/>",
             "bench/realkafka/pom.xml": "<project/>"}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def bash(script: str, cwd: Path, stubs: Stubs, ci: str | None):
    env = {"PATH": str(stubs.dir), "HOME": os.environ.get("HOME", str(cwd)),
           # scripts/container_engine.sh's scratch, mirror and podman's helpers: all in the scratch tree
           "CE_WORK": str(cwd / ".ce-work"), "CE_MIRROR": MIRROR, "CE_PODMAN_LIBEXEC": str(stubs.libexec)}
    if ci is not None:
        env["CI"] = ci
    return run([BASH, "-c", script], check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


# ---- scripts/toolchains.sh: one function a step ------------------------------------------------------

# step -> (function, {tool: what its stub creates when it succeeds}, the tool that does the work,
#          its directory, the artifact the tests need)
STEPS = {
    "npm ci": ("toolchain_npm", {"node": (), "npm": ("node_modules/kafkajs/package.json",)}, "npm",
               "tests/integration/js", "tests/integration/js/node_modules/kafkajs/package.json"),
    "Maven resolve": ("toolchain_maven", {"java": (), "javac": (), "mvn": ("cp.txt",)}, "mvn",
                      "tests/integration/java", "tests/integration/java/cp.txt"),
    "go build": ("toolchain_go", {"go": ("bin/groupconsumers",)}, "go",
                 "tests/integration/go", "tests/integration/go/bin/groupconsumers"),
    "Spark connector resolve": ("toolchain_spark", {"java": (), "mvn": ("cp.txt",)}, "mvn",
                                "tests/integration/spark", "tests/integration/spark/cp.txt"),
    "Kafka resolve": ("toolchain_realkafka", {"java": (), "mvn": ("cp-4.4.0.txt",)}, "mvn",
                      "bench/realkafka", "bench/realkafka/cp-4.4.0.txt"),
}
#: the steps above, then the Chromium and podman installs (their own tests below: they install programs)
ALL_STEPS = [*STEPS, "Chromium install", "podman install"]
ALL_FAILED = ("toolchain step(s) 'npm ci', 'Maven resolve', 'go build', 'Spark connector resolve', "
              "'Kafka resolve', 'Chromium install', 'podman install' failed")
MIRROR = "http://mirror.invalid/debian"
ABSENT = [(step, tool) for step, (_, tools, *_rest) in STEPS.items() for tool in tools]  # a step without one tool


def run_step(step: str, repo: Path, stubs: Stubs, ci: str | None):
    return bash(f"source {TOOLCHAINS_SH} && {STEPS[step][0]}", repo, stubs, ci)


@pytest.mark.parametrize("step,tool", ABSENT, ids=[f"{s}-without-{t}" for s, t in ABSENT])
def test_step_without_its_tool_fails_under_ci(step, tool, repo, stubs):
    for name, creates in STEPS[step][1].items():
        if name != tool:
            stubs.add(name, creates=creates)
    r = run_step(step, repo, stubs, ci="true")
    assert r.returncode == 1, r
    assert f"ERROR: toolchain step '{step}' failed: not found on PATH: {tool}" in r.stderr, r.stderr
    assert stubs.calls() == []


@pytest.mark.parametrize("step,tool", ABSENT, ids=[f"{s}-without-{t}" for s, t in ABSENT])
def test_step_without_its_tool_warns_without_ci(step, tool, repo, stubs):
    for name, creates in STEPS[step][1].items():
        if name != tool:
            stubs.add(name, creates=creates)
    r = run_step(step, repo, stubs, ci=None)
    assert r.returncode == 0, r
    assert f"WARNING: toolchain step '{step}': not found on PATH: {tool};" in r.stderr, r.stderr
    assert "will be skipped" in r.stderr and "ERROR" not in r.stderr


@pytest.mark.parametrize("ci", ["true", None])
@pytest.mark.parametrize("step", STEPS)
def test_step_whose_tool_fails(step, ci, repo, stubs):
    _, tools, worker, _, artifact = STEPS[step]
    for name, creates in tools.items():
        stubs.add(name, rc=1 if name == worker else 0, creates=creates)
    r = run_step(step, repo, stubs, ci=ci)
    assert [c[0] for c in stubs.calls()] == [worker], stubs.calls()
    assert "stub " + worker + ": simulated failure" in r.stderr
    assert not (repo / artifact).exists()
    if ci:
        assert r.returncode == 1, r
        assert re.search(f"ERROR: toolchain step '{step}' failed: .*exit(ed)? 1", r.stderr), r.stderr
        assert f"cannot run, and with CI={ci} they must" in r.stderr
    else:
        assert r.returncode == 0, r
        assert f"WARNING: toolchain step '{step}'" in r.stderr and "will be skipped" in r.stderr, r.stderr


@pytest.mark.parametrize("step", STEPS)
def test_step_that_builds_passes_under_ci(step, repo, stubs):
    _, tools, worker, workdir, artifact = STEPS[step]
    for name, creates in tools.items():
        stubs.add(name, creates=creates)
    r = run_step(step, repo, stubs, ci="true")
    assert r.returncode == 0 and r.stderr == "", r
    assert (repo / artifact).is_file()
    [(name, cwd, args)] = stubs.calls()
    assert (name, Path(cwd)) == (worker, repo / workdir)
    want = {"npm": args[:1] == ["ci"],
            "mvn": "dependency:build-classpath" in args and f"-Dmdep.outputFile={Path(artifact).name}" in args,
            "go": args == ["build", "-o", "bin/groupconsumers", "."]}
    assert want[worker], args


@pytest.mark.parametrize("step", STEPS)
def test_step_that_leaves_no_artifact_fails_under_ci(step, repo, stubs):
    tools = STEPS[step][1]
    for name in tools:
        stubs.add(name)  # exits 0 but builds nothing
    r = run_step(step, repo, stubs, ci="true")
    assert r.returncode == 1, r
    assert f"ERROR: toolchain step '{step}' failed: " in r.stderr, r.stderr


def test_all_steps_without_toolchains(repo, stubs):
    r = bash(f"source {TOOLCHAINS_SH} && toolchain_steps", repo, stubs, ci="true")
    assert r.returncode == 1, r
    for step in ALL_STEPS:
        assert f"ERROR: toolchain step '{step}' failed" in r.stderr
    assert ALL_FAILED in r.stderr, r.stderr
    r = bash(f"source {TOOLCHAINS_SH} && toolchain_steps", repo, stubs, ci=None)
    assert r.returncode == 0, r
    assert r.stderr.count("WARNING: toolchain step") == len(ALL_STEPS) and "ERROR" not in r.stderr, r.stderr


# ---- the Chromium install: chromium and chromedriver on PATH, from apt-get -------------------------

CHROMIUM = "Chromium install"
INSTALL = ["install", "-y", "-qq", "--no-install-recommends", "chromium", "chromium-driver"]
UPDATE = ["update", "-qq"]

# apt-get that logs its calls (with DEBIAN_FRONTEND) and, by MODE: installs (puts chromium and
# chromedriver on the stub PATH), needs-update (cannot find the packages until `update` ran), fails
# (every call exits 1), installs-nothing (exits 0, puts nothing on PATH)
APT_GET = """#!{python}
import json, os, sys
from pathlib import Path
stubs, mode = Path({stubs!r}), {mode!r}
lists = stubs.parent / "apt-lists-fetched"
with open({log!r}, "a") as f:
    f.write(json.dumps(["apt-get", os.getcwd(), sys.argv[1:], os.environ.get("DEBIAN_FRONTEND")]) + "\\n")
if mode == "fails":
    print("stub apt-get: simulated failure", file=sys.stderr)
    sys.exit(1)
if sys.argv[1] == "update":
    lists.touch()
elif mode == "needs-update" and not lists.exists():
    print("E: Unable to locate package chromium", file=sys.stderr)
    sys.exit(100)
elif mode != "installs-nothing":
    names = [a for a in sys.argv[2:] if not a.startswith("-")]
    for name in ("chromium", "chromedriver") if "chromium" in names else ():
        (stubs / name).write_text("#!/bin/sh\\n")
        (stubs / name).chmod(0o755)
    packages = stubs.parent / "packages.json"  # package -> [(prepared stub, where it goes)]
    for name in names:
        for src, dest in json.loads(packages.read_text()).get(name, []) if packages.exists() else []:
            Path(dest).parent.mkdir(parents=True, exist_ok=True)
            Path(dest).write_bytes(Path(src).read_bytes())
            Path(dest).chmod(0o755)
"""

# sudo for a test run that is not root: runs the command (VAR=value words into its environment)
SUDO = """#!{python}
import os, sys
args = sys.argv[1:]
args = args[1:] if args[:1] == ["-n"] else args
env = dict(os.environ)
while args and "=" in args[0]:
    key, value = args.pop(0).split("=", 1)
    env[key] = value
if args != ["true"]:
    os.execvpe(args[0], args, env)
"""


def add_apt_get(stubs: Stubs, mode: str) -> None:
    """apt-get stubbed as MODE (APT_GET) and, when this test run is not root, sudo -n that lets it run."""
    path = stubs.dir / "apt-get"
    path.write_text(APT_GET.format(python=sys.executable, stubs=str(stubs.dir), mode=mode, log=str(stubs.log)))
    path.chmod(0o755)
    if os.geteuid() != 0:
        (stubs.dir / "sudo").write_text(SUDO.format(python=sys.executable))
        (stubs.dir / "sudo").chmod(0o755)


def apt_calls(stubs: Stubs) -> list[list[str]]:
    calls = stubs.calls()
    assert all(c[0] == "apt-get" and c[3] == "noninteractive" for c in calls), calls
    return [c[2] for c in calls]


def run_chromium(repo: Path, stubs: Stubs, ci: str | None):
    return bash(f"source {TOOLCHAINS_SH} && toolchain_chromium", repo, stubs, ci)


@pytest.mark.parametrize("ci", ["true", None])
def test_chromium_on_path_is_left_alone(ci, repo, stubs):
    stubs.add("chromium")
    stubs.add("chromedriver")
    add_apt_get(stubs, "installs")
    r = run_chromium(repo, stubs, ci)
    assert r.returncode == 0 and r.stderr == "", r
    assert stubs.calls() == []


@pytest.mark.parametrize("present,absent", [((), "chromium chromedriver"), (("chromium",), "chromedriver"),
                                            (("chromedriver",), "chromium")])
@pytest.mark.parametrize("ci", ["true", None])
def test_chromium_without_apt_get(ci, present, absent, repo, stubs):
    for name in present:
        stubs.add(name)
    r = run_chromium(repo, stubs, ci)
    if ci:
        assert r.returncode == 1, r
        assert f"ERROR: toolchain step '{CHROMIUM}' failed: not found on PATH: {absent} (and no apt-get" in r.stderr
        assert "cannot run, and with CI=true they must" in r.stderr, r.stderr
    else:
        assert r.returncode == 0, r
        assert f"WARNING: toolchain step '{CHROMIUM}': not found on PATH: {absent} (and no apt-get" in r.stderr
        assert "will be skipped" in r.stderr and "ERROR" not in r.stderr, r.stderr
    assert stubs.calls() == []


def test_chromium_installed_by_apt_get_passes_under_ci(repo, stubs):
    add_apt_get(stubs, "installs")
    r = run_chromium(repo, stubs, ci="true")
    assert r.returncode == 0 and r.stderr == "", r
    assert apt_calls(stubs) == [INSTALL]  # the package lists there are do: no apt-get update
    assert (stubs.dir / "chromium").is_file() and (stubs.dir / "chromedriver").is_file()


def test_chromium_package_lists_fetched_when_the_install_needs_them(repo, stubs):
    add_apt_get(stubs, "needs-update")
    r = run_chromium(repo, stubs, ci="true")
    assert r.returncode == 0 and r.stderr == "", r
    assert apt_calls(stubs) == [INSTALL, UPDATE, INSTALL]


@pytest.mark.parametrize("ci", ["true", None])
def test_chromium_whose_apt_get_fails(ci, repo, stubs):
    add_apt_get(stubs, "fails")
    r = run_chromium(repo, stubs, ci)
    assert apt_calls(stubs) == [INSTALL, UPDATE]
    assert "stub apt-get: simulated failure" in r.stderr
    assert not (stubs.dir / "chromium").exists()
    if ci:
        assert r.returncode == 1, r
        assert re.search(f"ERROR: toolchain step '{CHROMIUM}' failed: .*exit 1", r.stderr), r.stderr
    else:
        assert r.returncode == 0, r
        assert f"WARNING: toolchain step '{CHROMIUM}'" in r.stderr and "will be skipped" in r.stderr, r.stderr


def test_chromium_install_that_leaves_no_program_fails_under_ci(repo, stubs):
    add_apt_get(stubs, "installs-nothing")
    r = run_chromium(repo, stubs, ci="true")
    assert r.returncode == 1, r
    assert f"ERROR: toolchain step '{CHROMIUM}' failed: apt-get installed" in r.stderr, r.stderr
    assert "left chromium chromedriver off PATH" in r.stderr, r.stderr


# ---- the podman install: podman and its helpers from apt-get, then the base image -------------------

PODMAN = "podman install"
PODMAN_PACKAGES = ["podman", "podman-compose", "runc", "debootstrap", "netavark", "aardvark-dns", "iptables"]
PODMAN_INSTALL = ["install", "-y", "-qq", "--no-install-recommends", *PODMAN_PACKAGES]
BASE = "localhost/mockbroker-base:bookworm"
SH_OK = "#!/bin/sh\nexit 0\n"

# podman: `image exists` answers from a directory of imported images, `import` reads the rootfs tarball
# from stdin into it (or fails, by MODE); every call is logged with CONTAINERS_CONF
PODMAN_STUB = """#!{python}
import json, os, sys
from pathlib import Path
images, mode, args = Path({images!r}), {mode!r}, sys.argv[1:]
with open({log!r}, "a") as f:
    f.write(json.dumps(["podman", os.getcwd(), args, os.environ.get("CONTAINERS_CONF")]) + "\\n")
if args[:2] == ["image", "exists"]:
    sys.exit(0 if (images / args[2].replace("/", "_")).exists() else 1)
if args[:1] == ["import"]:
    data = sys.stdin.buffer.read()
    if mode == "import-fails":
        print("stub podman: simulated failure", file=sys.stderr)
        sys.exit(1)
    images.mkdir(exist_ok=True)
    (images / args[-1].replace("/", "_")).write_bytes(data)
    sys.exit(0)
sys.exit(125)
"""

# debootstrap: makes a root file system in its target directory (or fails, by MODE)
DEBOOTSTRAP_STUB = """#!{python}
import json, os, sys
from pathlib import Path
with open({log!r}, "a") as f:
    f.write(json.dumps(["debootstrap", os.getcwd(), sys.argv[1:]]) + "\\n")
if {mode!r} == "fails":
    print("stub debootstrap: simulated failure", file=sys.stderr)
    sys.exit(1)
target = Path(sys.argv[-2])
(target / "etc").mkdir(parents=True, exist_ok=True)
(target / "etc" / "os-release").write_text("bookworm")
"""


def podman_stubs(stubs: Stubs, podman_mode: str = "imports", debootstrap_mode: str = "makes") -> dict[str, str]:
    """The text of the stubs for podman, its helpers and debootstrap; puts the real programs
    scripts/container_engine.sh uses besides them, and an `id` that says root, on the stub PATH."""
    for name in ("mkdir", "rm", "cat", "tar", "tail"):
        if not (stubs.dir / name).exists():
            stubs.link(name)
    (stubs.dir / "id").write_text("#!/bin/sh\necho 0\n")
    (stubs.dir / "id").chmod(0o755)
    fmt = {"python": sys.executable, "log": str(stubs.log)}
    return {"podman": PODMAN_STUB.format(images=str(stubs.dir.parent / "images"), mode=podman_mode, **fmt),
            "debootstrap": DEBOOTSTRAP_STUB.format(mode=debootstrap_mode, **fmt),
            "podman-compose": SH_OK, "runc": SH_OK, "iptables": SH_OK, "netavark": SH_OK, "aardvark-dns": SH_OK}


def podman_dest(stubs: Stubs, name: str) -> Path:
    return (stubs.libexec if name in ("netavark", "aardvark-dns") else stubs.dir) / name


def add_podman(stubs: Stubs, **modes: str) -> None:
    """podman, its helpers and debootstrap, installed already."""
    for name, text in podman_stubs(stubs, **modes).items():
        dest = podman_dest(stubs, name)
        dest.parent.mkdir(exist_ok=True)
        dest.write_text(text)
        dest.chmod(0o755)


def add_podman_packages(stubs: Stubs, **modes: str) -> None:
    """The same as packages, which the apt-get stub installs (packages.json)."""
    prepared = stubs.dir.parent / "packages"
    prepared.mkdir()
    where = {}
    for name, text in podman_stubs(stubs, **modes).items():
        (prepared / name).write_text(text)
        where[name] = [[str(prepared / name), str(podman_dest(stubs, name))]]
    (stubs.dir.parent / "packages.json").write_text(json.dumps(where))


def add_base_image(stubs: Stubs) -> None:
    (stubs.dir.parent / "images").mkdir(exist_ok=True)
    (stubs.dir.parent / "images" / BASE.replace("/", "_")).write_text("imported before")


def run_podman(repo: Path, stubs: Stubs, ci: str | None):
    return bash(f"source {TOOLCHAINS_SH} && toolchain_podman", repo, stubs, ci)


def podman_calls(stubs: Stubs) -> list[tuple[str, list[str]]]:
    return [(c[0], c[2]) for c in stubs.calls()]


@pytest.mark.parametrize("ci", ["true", None])
def test_podman_ready_is_left_alone(ci, repo, stubs):
    add_podman(stubs)
    add_base_image(stubs)
    add_apt_get(stubs, "installs")
    r = run_podman(repo, stubs, ci)
    assert r.returncode == 0 and r.stderr == "", r
    assert podman_calls(stubs) == [("podman", ["image", "exists", BASE])] * 2  # made once, then checked


def test_podman_installed_and_base_image_made_under_ci(repo, stubs):
    add_podman_packages(stubs)
    add_apt_get(stubs, "installs")
    r = run_podman(repo, stubs, ci="true")
    assert r.returncode == 0 and r.stderr == "", r
    assert [c[0] for c in stubs.calls()] == ["apt-get", "podman", "debootstrap", "podman", "podman"]
    assert stubs.calls()[0][2:] == (PODMAN_INSTALL, "noninteractive")  # the package lists there are do: no update
    _, exists_before, debootstrap, imported, exists_after = podman_calls(stubs)
    assert exists_before == exists_after == ("podman", ["image", "exists", BASE])
    assert debootstrap[1] == ["--variant=minbase", "--include=python3,python3-venv,ca-certificates", "bookworm",
                              str(repo / ".ce-work" / "rootfs"), MIRROR]
    assert imported[1][0] == "import" and imported[1][-2:] == ["-", BASE]
    conf = repo / ".ce-work" / "containers.conf"
    assert all(c[3] == str(conf) for c in stubs.calls() if c[0] == "podman")  # CONTAINERS_CONF exported
    text = conf.read_text()
    assert 'runtime = "runc"' in text and 'network_backend = "netavark"' in text and "default_ulimits" in text
    assert not (repo / ".ce-work" / "rootfs").exists()  # the root file system went into the image


@pytest.mark.parametrize("missing", [("netavark", "aardvark-dns"), ("iptables",)])
def test_podman_helpers_missing_are_installed(missing, repo, stubs):
    """podman on PATH but no netavark/aardvark-dns (podman would use CNI, whose networks have no DNS), or
    no iptables (netavark cannot set up a network: every compose container fails to start)."""
    add_podman(stubs)
    for name in missing:
        podman_dest(stubs, name).unlink()
    add_base_image(stubs)
    add_podman_packages(stubs)
    add_apt_get(stubs, "installs")
    r = run_podman(repo, stubs, ci="true")
    assert r.returncode == 0 and r.stderr == "", r
    assert podman_calls(stubs)[0] == ("apt-get", PODMAN_INSTALL)
    assert all(podman_dest(stubs, name).is_file() for name in missing)


def test_podman_package_lists_fetched_when_the_install_needs_them(repo, stubs):
    add_podman_packages(stubs)
    add_apt_get(stubs, "needs-update")
    r = run_podman(repo, stubs, ci="true")
    assert r.returncode == 0 and r.stderr == "", r
    assert [c for c in podman_calls(stubs) if c[0] == "apt-get"] == [("apt-get", PODMAN_INSTALL),
                                                                    ("apt-get", UPDATE), ("apt-get", PODMAN_INSTALL)]


@pytest.mark.parametrize("ci", ["true", None])
def test_podman_whose_apt_get_fails(ci, repo, stubs):
    podman_stubs(stubs)  # id, and the real programs
    add_apt_get(stubs, "fails")
    r = run_podman(repo, stubs, ci)
    assert apt_calls(stubs) == [PODMAN_INSTALL, UPDATE]
    assert "stub apt-get: simulated failure" in r.stderr
    assert not (stubs.dir / "podman").exists()
    if ci:
        assert r.returncode == 1, r
        assert re.search(f"ERROR: toolchain step '{PODMAN}' failed: apt-get could not install .*exit 1", r.stderr), r.stderr
    else:
        assert r.returncode == 0, r
        assert f"WARNING: toolchain step '{PODMAN}'" in r.stderr and "will be skipped" in r.stderr, r.stderr


@pytest.mark.parametrize("ci", ["true", None])
def test_podman_without_apt_get(ci, repo, stubs):
    podman_stubs(stubs)
    r = run_podman(repo, stubs, ci)
    what = (f"not found: podman podman-compose runc debootstrap iptables {stubs.libexec}/netavark "
            f"{stubs.libexec}/aardvark-dns (and no apt-get to install {' '.join(PODMAN_PACKAGES)})")
    if ci:
        assert r.returncode == 1, r
        assert f"ERROR: toolchain step '{PODMAN}' failed: {what}" in r.stderr, r.stderr
    else:
        assert r.returncode == 0, r
        assert f"WARNING: toolchain step '{PODMAN}': {what}" in r.stderr and "ERROR" not in r.stderr, r.stderr
    assert stubs.calls() == []


@pytest.mark.parametrize("ci", ["true", None])
def test_podman_not_as_root(ci, repo, stubs):
    add_podman(stubs)
    add_base_image(stubs)
    add_apt_get(stubs, "installs")
    (stubs.dir / "id").write_text("#!/bin/sh\necho 1000\n")
    r = run_podman(repo, stubs, ci)
    assert ("podman runs as root for the container test (its storage, networks, debootstrap), "
            "and this is uid 1000") in r.stderr, r.stderr
    assert r.returncode == (1 if ci else 0), r
    assert ("ERROR" in r.stderr) == bool(ci)
    assert stubs.calls() == []


@pytest.mark.parametrize("ci", ["true", None])
@pytest.mark.parametrize("failing", ["debootstrap", "podman import"])
def test_podman_base_image_that_cannot_be_made(failing, ci, repo, stubs):
    add_podman(stubs, **({"debootstrap_mode": "fails"} if failing == "debootstrap" else {"podman_mode": "import-fails"}))
    r = run_podman(repo, stubs, ci)
    assert f"could not make the base image {BASE} (exit 1)" in r.stderr, r.stderr
    assert f"stub {failing.split()[0]}: simulated failure" in r.stderr
    assert not (repo / ".ce-work" / "rootfs").exists()
    assert r.returncode == (1 if ci else 0), r
    assert ("ERROR" in r.stderr) == bool(ci)


def test_podman_install_that_leaves_no_program_fails_under_ci(repo, stubs):
    podman_stubs(stubs)
    add_apt_get(stubs, "installs-nothing")
    r = run_podman(repo, stubs, ci="true")
    assert r.returncode == 1, r
    assert (f"ERROR: toolchain step '{PODMAN}' failed: apt-get installed {' '.join(PODMAN_PACKAGES)} but left "
            f"podman podman-compose runc debootstrap iptables {stubs.libexec}/netavark {stubs.libexec}/aardvark-dns "
            "missing") in r.stderr, r.stderr


CI_VALUES = [None, "", "0", "false", "False", "FALSE", "no", "off", "true", "TRUE", "1", "yes", "github"]


@pytest.mark.parametrize("value", CI_VALUES)
def test_shell_and_python_read_ci_alike(value, repo, stubs, monkeypatch):
    r = bash(f"source {TOOLCHAINS_SH} && ci_enabled", repo, stubs, ci=value)
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    assert (r.returncode == 0) == in_ci() == (value in {"true", "TRUE", "1", "yes", "github"})


# ---- scripts/test.sh and .ci/run as a whole (python3 and pytest stubbed) ---------------------------

FAKE_PYTHON3 = """#!{python}
import sys
from pathlib import Path
assert sys.argv[1:] == ["-m", "venv", ".venv"], sys.argv
bin = Path(".venv/bin")
bin.mkdir(parents=True)
(bin / "pip").write_text("#!/bin/sh\\nexit 0\\n")
(bin / "python").write_text('#!/bin/sh\\necho "PYTEST-RAN $*"\\n')
for p in bin.iterdir():
    p.chmod(0o755)
"""


@pytest.fixture
def checkout(repo: Path, stubs: Stubs) -> Path:
    """``repo`` with scripts/ and .ci/ copied in, and python3 stubbed (a fake .venv whose python echoes)."""
    for rel in ("scripts/test.sh", "scripts/toolchains.sh", "scripts/container_engine.sh", ".ci/run"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, repo / rel)
    (stubs.dir / "python3").write_text(FAKE_PYTHON3.format(python=sys.executable))
    (stubs.dir / "python3").chmod(0o755)
    stubs.link("dirname")
    stubs.link("bash")
    return repo


def test_test_sh_stops_before_pytest_under_ci(checkout, stubs):
    r = bash("bash scripts/test.sh tests/x", checkout, stubs, ci="true")
    assert r.returncode == 1, r
    assert "PYTEST-RAN" not in r.stdout
    assert ALL_FAILED in r.stderr, r.stderr


def test_test_sh_warns_and_runs_pytest_without_ci(checkout, stubs):
    r = bash("bash scripts/test.sh tests/x", checkout, stubs, ci=None)
    assert r.returncode == 0, r
    assert r.stdout.strip() == "PYTEST-RAN -m pytest -q -p no:cacheprovider --durations=30 tests/x"
    assert r.stderr.count("will be skipped") == len(ALL_STEPS), r.stderr


def test_test_sh_builds_then_runs_pytest_under_ci(checkout, stubs):
    creates_of: dict[str, tuple[str, ...]] = {}  # a tool several steps use creates each one's artifact
    for _, tools, *_rest in STEPS.values():
        for name, creates in tools.items():
            creates_of[name] = (*creates_of.get(name, ()), *creates)
    for name, creates in creates_of.items():
        stubs.add(name, creates=creates)
    add_apt_get(stubs, "installs")
    add_podman_packages(stubs)
    r = bash("bash scripts/test.sh tests/x", checkout, stubs, ci="true")
    assert r.returncode == 0, r
    assert r.stdout.strip() == "PYTEST-RAN -m pytest -q -p no:cacheprovider --durations=30 tests/x"
    assert [(c[0], Path(c[1]).name) for c in stubs.calls()] == [
        ("npm", "js"), ("mvn", "java"), ("go", "go"), ("mvn", "spark"), ("mvn", "realkafka"), ("apt-get", "repo"),
        ("apt-get", "repo"),
        ("podman", "repo"), ("debootstrap", "repo"), ("podman", "repo"), ("podman", "repo")]


def test_test_sh_quick_runs_the_unit_tests_on_both_cores_and_installs_no_toolchain(checkout, stubs):
    r = bash("bash scripts/test.sh --quick -x", checkout, stubs, ci="true")
    assert r.returncode == 0, r
    assert r.stdout.strip() == ("PYTEST-RAN -m pytest -q -p no:cacheprovider -n 2 tests/unit --ignore=tests/unit/report "
                                "--ignore=tests/unit/project -k not atheris and not every_endpoint_conforms -x"), r
    assert stubs.calls() == [] and "toolchain" not in r.stderr, r


def test_ci_entry_point_is_ci_even_when_unset(checkout, stubs):
    r = bash("bash .ci/run", checkout, stubs, ci=None)
    assert r.returncode == 1, r
    assert "CI=true and toolchain step(s)" in r.stderr and "PYTEST-RAN" not in r.stdout, r


# ---- tests/toolchains.py: skip, or fail under CI -----------------------------------------------------

@pytest.fixture
def no_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)


@pytest.fixture
def ci(monkeypatch):
    monkeypatch.setenv("CI", "true")


REASON = "the frobnicator test needs frob on PATH"


def test_unavailable_skips_without_ci(no_ci):
    e = outcome_of(unavailable, REASON)
    assert type(e) is Skipped and e.msg == REASON


def test_unavailable_fails_under_ci(ci):
    e = outcome_of(unavailable, REASON)
    assert type(e) is Failed, e
    assert e.msg.startswith(REASON) and "CI=true" in e.msg
    assert e.pytrace is False


@pytest.mark.parametrize("mode", ["no_ci", "ci"])
def test_require(mode, request):
    request.getfixturevalue(mode)
    assert require(True, REASON) is None
    assert_outcome(mode, outcome_of(require, False, REASON), re.escape(REASON))


@pytest.mark.parametrize("mode", ["no_ci", "ci"])
def test_which(mode, request, stubs, monkeypatch):
    request.getfixturevalue(mode)
    stubs.add("frob")
    monkeypatch.setenv("PATH", str(stubs.dir))
    assert which("frob", needed_by="the frobnicator test") == [str(stubs.dir / "frob")]
    e = outcome_of(which, "frob", "nitz", needed_by="the frobnicator test")
    assert_outcome(mode, e, "frobnicator test cannot run: nitz not found")


def test_a_test_failed_by_the_helper_fails_the_run(pytester, monkeypatch):
    """End to end in a pytest run: the same test is a skip without CI and a failure with CI=true."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    pytester.makepyfile(test_tool="""
        from tests.toolchains import require

        def test_needs_tool():
            require(False, "the frobnicator test needs frob on PATH")
    """)
    monkeypatch.delenv("CI", raising=False)
    pytester.runpytest_subprocess("-rs").assert_outcomes(skipped=1)
    monkeypatch.setenv("CI", "true")
    r = pytester.runpytest_subprocess()
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*the frobnicator test needs frob on PATH*"])


# ---- every toolchain-dependent test resolves its toolchain through the helper ----------------------

RESOLVERS = {
    "franz-go": (gotools.franz_go_binary, "go"),
    "kafkajs": (jstools.node_with_kafkajs, "node, npm"),
    "java": (javatools.java_classpath, "java, javac, mvn"),
    "spark": (sparktools.connector_jars, "java, mvn"),
    "chromium": (toolchains.chromium, "chromium, chromedriver"),
    "podman": (toolchains.podman, "podman, podman-compose"),
}


@pytest.mark.parametrize("mode", ["no_ci", "ci"])
@pytest.mark.parametrize("client", RESOLVERS)
def test_resolver_without_toolchain(client, mode, request, stubs, monkeypatch):
    request.getfixturevalue(mode)
    monkeypatch.setenv("PATH", str(stubs.dir))  # nothing on it
    resolve, tools = RESOLVERS[client]
    assert_outcome(mode, outcome_of(resolve), f"cannot run: {tools} not found on PATH")


@pytest.fixture
def failing_builds(tmp_path, stubs, monkeypatch):
    """Every build tool on PATH exits 1; the client directories are empty scratch ones."""
    for name in ("go", "node", "npm", "java", "javac", "mvn"):
        stubs.add(name, rc=0 if name in ("node", "java", "javac") else 1)
    monkeypatch.setenv("PATH", str(stubs.dir))
    monkeypatch.setattr(gotools, "GO_DIR", tmp_path / "go")
    for f in ("main.go", "go.mod", "go.sum"):
        (tmp_path / "go" / f).parent.mkdir(exist_ok=True)
        (tmp_path / "go" / f).write_text("")
    monkeypatch.setattr(jstools, "JS_DIR", tmp_path / "js")
    (tmp_path / "js").mkdir()
    java_dir = tmp_path / "java"
    java_dir.mkdir()
    for attr, value in {"JAVA_DIR": java_dir, "OUT_DIR": java_dir / "out"}.items():
        monkeypatch.setattr(javatools, attr, value)
    spark_dir = tmp_path / "spark"
    spark_dir.mkdir()
    (spark_dir / "pom.xml").write_text("<project/>")
    monkeypatch.setattr(sparktools, "SPARK_DIR", spark_dir)
    return stubs


BUILD_FAILURES = {
    "franz-go": (gotools.franz_go_binary, "go build of the franz-go test program .* failed \\(exit 1\\)"),
    "kafkajs": (jstools.node_with_kafkajs, "kafkajs is not installed and `.*npm ci .*` .* failed \\(rc=1\\)"),
    "java": (javatools.java_classpath, "Maven could not resolve kafka-clients"),
    "spark": (sparktools.connector_jars, "Maven could not resolve Spark's Kafka connector"),
}


@pytest.mark.parametrize("mode", ["no_ci", "ci"])
@pytest.mark.parametrize("client", BUILD_FAILURES)
def test_resolver_whose_build_fails(client, mode, request, failing_builds):
    request.getfixturevalue(mode)
    resolve, pattern = BUILD_FAILURES[client]
    e = outcome_of(resolve)
    assert_outcome(mode, e, pattern)
    assert "simulated failure" in e.msg
    assert failing_builds.calls(), "the build tool was not run"


def test_no_direct_skips_in_toolchain_tests():
    """The non-Python client tests skip only through tests/toolchains.py (Python imports aside)."""
    integration = REPO / "tests" / "integration"
    names = ["gotools.py", "jstools.py", "javatools.py", "test_franz_go_group.py", "test_kafkajs.py",
             "test_kafkajs_group.py", "test_java_admin_quotas.py", "test_java_consumer_groups.py",
             "sparktools.py", "conftest.py", "test_report_html.py", "test_container.py", *(p.name for p in integration.glob("test_spark_*.py"))]
    for name in names:
        text = (integration / name).read_text()
        assert not re.search(r"pytest\.skip\(|mark\.skip", text), f"{name} skips directly, not via tests/toolchains.py"
