"""The import graph of ``protocol/`` and ``mockbroker/``: every import, including those under
``TYPE_CHECKING`` and inside functions (both are real edges for a reader and for a refactoring).

    python scripts/import_graph.py            # circles, then upward imports, then the edge count
    python scripts/import_graph.py --edges    # every edge, one per line

A circle is a strongly connected component of more than one module.  An upward import is an
import from a module into one of a higher layer (``LAYERS`` below: the order data and calls flow,
from the wire up to the process).  ``tests/unit/test_architecture.py`` asserts there are none.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("protocol", "mockbroker")

# Lowest first.  A module belongs to the first layer with a matching prefix (a prefix ending in
# "." is a package, which is one layer as a whole: quota/, purgatory/, group/, txn/, apis/, ...).
# A module may import from its own layer or lower ones.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("wire", ("protocol.",)),
    ("leaves", ("mockbroker.clock", "mockbroker.config", "mockbroker.config_defs", "mockbroker.channel",
                "mockbroker.cluster_view", "mockbroker.sasl_mechanisms", "mockbroker.authorizer",
                "mockbroker.quota.", "mockbroker.purgatory.", "mockbroker.memory_pool", "mockbroker.log",
                "mockbroker.producer_state", "mockbroker.journal", "mockbroker.faults", "mockbroker.fetch_session",
                "mockbroker.request_stats", "mockbroker.journal_writer", "mockbroker.journal_reader",
                "mockbroker.tls_config", "mockbroker.certs", "mockbroker.shared_encodings", "mockbroker.socket_io")),
    ("state", ("mockbroker.metadata", "mockbroker.replication")),
    ("coordinators", ("mockbroker.controller", "mockbroker.replica_manager", "mockbroker.log_cleaner",
                      "mockbroker.config_catalog", "mockbroker.delayed_produce",
                      "mockbroker.delayed_fetch", "mockbroker.group.", "mockbroker.txn.", "mockbroker.share.",
                      "mockbroker.quorum", "mockbroker.features", "mockbroker.log_dirs",
                      "mockbroker.client_metrics_manager", "mockbroker.delegation_tokens")),
    ("contract", ("mockbroker.request",)),
    ("handlers", ("mockbroker.apis.", "mockbroker.fetch_response")),
    ("network", ("mockbroker.connection", "mockbroker.throttled_channel", "mockbroker.sasl_authenticator", "mockbroker.tls",
                 "mockbroker.journal_recorder", "mockbroker.fault_actions", "mockbroker.kafka_apis")),
    ("node", ("mockbroker.broker",)),
    ("process", ("mockbroker.cluster",)),
    ("control", ("mockbroker.control", "mockbroker.admin.")),
    ("handle", ("mockbroker.runner", "mockbroker.cli", "mockbroker.admin_client", "mockbroker.probe", "mockbroker.report.",
                "mockbroker.__main__", "mockbroker.pytest_plugin", "mockbroker")),
]


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for p in sorted((ROOT / pkg).rglob("*.py")):
            out[module_name(p)] = p
    return out


def _resolve(current: str, is_package: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([target] if target else []))


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def add(mod: str) -> None:
        # the longest known module that ``mod`` names (a name imported from a module is not one)
        while mod and mod not in known:
            mod = mod.rpartition(".")[0]
        if mod and mod != name:
            found.add(mod)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                add(a.name)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(name, is_package, node.level, node.module)
            for a in node.names:
                full = f"{base}.{a.name}" if base else a.name
                add(full if full in known else base)
    return {m for m in found if m.split(".")[0] in PACKAGES}


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {m: imports_of(m, p, known) for m, p in mods.items()}


def layer_of(module: str) -> int:
    for i, (_, prefixes) in enumerate(LAYERS):
        for pre in prefixes:
            if module == pre.rstrip(".") or (pre.endswith(".") and module.startswith(pre)) or module == pre:
                return i
    return len(LAYERS)  # unknown modules sit on top, so nothing may import them from below


def circles(g: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return sorted(out)


def upward(g: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((a, b) for a, deps in g.items() for b in deps if layer_of(b) > layer_of(a))


def _print(lines: Iterable[str]) -> None:
    for line in lines:
        print(line)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edges", action="store_true", help="print every edge")
    args = ap.parse_args(argv)
    g = graph()
    if args.edges:
        _print(f"{a} -> {b}" for a in sorted(g) for b in sorted(g[a]))
        return 0
    cs = circles(g)
    print(f"circles: {len(cs)}")
    _print("  " + " <-> ".join(c) for c in cs)
    ups = upward(g)
    print(f"upward imports: {len(ups)}")
    _print(f"  {a} ({LAYERS[layer_of(a)][0] if layer_of(a) < len(LAYERS) else '?'}) -> "
           f"{b} ({LAYERS[layer_of(b)][0] if layer_of(b) < len(LAYERS) else '?'})" for a, b in ups)
    print(f"modules: {len(g)}, edges: {sum(len(v) for v in g.values())}")
    return 1 if cs or ups else 0


if __name__ == "__main__":
    sys.exit(main())
