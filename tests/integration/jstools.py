"""kafkajs for the integration tests: node, npm and tests/integration/js/node_modules.

Node dependencies live in tests/integration/js (package.json + package-lock.json); scripts/test.sh
runs ``npm ci`` there before pytest.  When node_modules is missing ``node_with_kafkajs`` runs
``npm ci --prefer-offline`` itself (downloads cached in ~/.npm).  When node or npm is not on PATH
or that fails the kafkajs tests skip with the reason, and fail with it under CI
(tests/toolchains.py).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.toolchains import unavailable, which

JS_DIR = Path(__file__).parent / "js"
NPM_CI_TIMEOUT_S = 240


def node_modules_ok() -> bool:
    return (JS_DIR / "node_modules" / "kafkajs" / "package.json").is_file()


def node_with_kafkajs() -> str:
    """The path of ``node``, with kafkajs installed in tests/integration/js/node_modules."""
    node_bin, npm_bin = which("node", "npm", needed_by="the kafkajs tests")
    if not node_modules_ok():
        # The default npm cache (~/.npm) keeps downloads between runs.
        cmd = [npm_bin, "ci", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"]
        env = dict(os.environ)
        # node-gyp (the native build of lz4 behind kafkajs-lz4) downloads Node's headers unless
        # told where the installed ones are: point it at them when node came with its headers.
        prefix = Path(node_bin).resolve().parent.parent
        if (prefix / "include" / "node" / "node.h").is_file():
            env.setdefault("npm_config_nodedir", str(prefix))
        try:
            r = subprocess.run(cmd, cwd=JS_DIR, env=env, capture_output=True, text=True, timeout=NPM_CI_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            unavailable(f"{' '.join(cmd)} in {JS_DIR} timed out after {NPM_CI_TIMEOUT_S}s: kafkajs is not installed")
        if r.returncode != 0 or not node_modules_ok():
            tail = (r.stderr or r.stdout).strip().splitlines()[-5:]
            unavailable(f"kafkajs is not installed and `{' '.join(cmd)}` in {JS_DIR} failed (rc={r.returncode}): "
                        + " | ".join(tail))
    return node_bin
