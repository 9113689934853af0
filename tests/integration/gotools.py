"""franz-go for the integration tests: ``go build`` of tests/integration/go into bin/groupconsumers.

One program, nine commands: the consumer group test's (main.go, test_franz_go_group.py),
``groupconsumers control ...`` (control.go, test_control_franz_go.py), ``groupconsumers txn ...``
(txn.go, test_transactions_franz_go.py and test_transactions_latency.py; it also uses kadm),
``groupconsumers throttled ...`` (throttled.go, test_throttle_clients.py), ``groupconsumers share ...`` and ``groupconsumers share-acks ...``
(share.go, test_franz_go_share.py and test_java_share_consumer.py), ``groupconsumers kadm ...`` (kadm.go: the
admin APIs through kadm, test_admin_tour.py and test_admin_kafka44.py), ``groupconsumers tls ...`` (tls.go,
test_tls_clients.py) and ``groupconsumers acl ...`` (acl.go, test_acl_clients.py).

scripts/test.sh builds the program before pytest; ``franz_go_binary`` rebuilds it when it is missing
or older than its sources.  Modules come from the Go module proxy into the usual caches
(~/go/pkg/mod, ~/.cache/go-build), so later builds are offline and quick.  When ``go`` is not on
PATH or the build fails the test skips with the reason, and fails with it under CI
(tests/toolchains.py).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.toolchains import unavailable, which

GO_DIR = Path(__file__).parent / "go"
BINARY_NAME = "groupconsumers"  # built into GO_DIR / "bin" (ignored by git)
GO_BUILD_TIMEOUT_S = 600


def franz_go_binary() -> str:
    """The path of the built franz-go test program (tests/integration/go/*.go)."""
    binary = GO_DIR / "bin" / BINARY_NAME
    (go,) = which("go", needed_by="the franz-go test")
    sources = [*sorted(GO_DIR.glob("*.go")), GO_DIR / "go.mod", GO_DIR / "go.sum"]
    if not binary.is_file() or any(binary.stat().st_mtime < s.stat().st_mtime for s in sources):
        try:
            r = subprocess.run([go, "build", "-o", str(binary), "."], cwd=GO_DIR, capture_output=True, text=True,
                               timeout=GO_BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            unavailable(f"go build of the franz-go test program in {GO_DIR} timed out after {GO_BUILD_TIMEOUT_S}s")
        if r.returncode != 0 or not binary.is_file():
            unavailable(f"go build of the franz-go test program in {GO_DIR} failed (exit {r.returncode}): "
                        + " | ".join((r.stderr or r.stdout).strip().splitlines()[-5:]))
    return str(binary)
