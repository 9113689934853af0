"""The import graph of ``protocol/`` and ``mockbroker/``: every import, including those under
``TYPE_CHECKING`` and inside functions (both are real edges for a reader and for a refactoring).

    python scripts/import_graph.py            # the layers and their folders, circles, upward imports
    python scripts/import_graph.py --edges    # every edge, one per line
    python scripts/import_graph.py --folders  # every edge between folders, one per line

A circle is a strongly connected component of more than one module, or of more than one folder
(``mockbroker/server/`` importing ``mockbroker/share/`` which imports it back is a circle even when
no two modules are).  An upward import is an import from a module into one of a higher layer
(``LAYERS`` below: the order data and calls flow, from the wire up to the process).
``tests/unit/project/test_architecture.py`` asserts there are none.
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
# "." is a folder, which is one layer as a whole); a top-level module of mockbroker/ is a front
# door or one of the few pieces named in docs/design.md (the handler contract, the node, the
# process).  A module may import from its own layer or lower ones, and folders may not import
# each other in a circle.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("wire", ("protocol.",)),
    ("base", ("mockbroker.common.",)),
    ("leaves", ("mockbroker.quota.", "mockbroker.purgatory.", "mockbroker.security.", "mockbroker.storage.",
                "mockbroker.observe.", "mockbroker.journal_reader")),
    ("config", ("mockbroker.config.",)),
    ("state", ("mockbroker.state.",)),
    ("coordinators", ("mockbroker.controller.", "mockbroker.server.", "mockbroker.group.", "mockbroker.txn.",
                      "mockbroker.share.")),
    ("contract", ("mockbroker.request",)),
    ("handlers", ("mockbroker.apis.",)),
    ("network", ("mockbroker.network.",)),
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


def folder_of(module: str) -> str:
    """A module's folder: ``protocol``, a package of mockbroker (``mockbroker.server``), or a
    top-level module of mockbroker, which is a folder of its own."""
    parts = module.split(".")
    if parts[0] != "mockbroker":
        return parts[0]
    return ".".join(parts[:2])


def folder_graph(g: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for a, deps in g.items():
        fa = folder_of(a)
        out.setdefault(fa, set()).update(fb for b in deps if (fb := folder_of(b)) != fa)
    return out


def upward(g: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((a, b) for a, deps in g.items() for b in deps if layer_of(b) > layer_of(a))


def _print(lines: Iterable[str]) -> None:
    for line in lines:
        print(line)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edges", action="store_true", help="print every edge")
    ap.add_argument("--folders", action="store_true", help="print every edge between folders")
    args = ap.parse_args(argv)
    g = graph()
    if args.edges:
        _print(f"{a} -> {b}" for a in sorted(g) for b in sorted(g[a]))
        return 0
    fg = folder_graph(g)
    if args.folders:
        _print(f"{a} -> {b}" for a in sorted(fg) for b in sorted(fg[a]))
        return 0
    print("layers, lowest first (a folder/ or a top-level module; the modules it holds):")
    for i, (name, _) in enumerate(LAYERS):
        members = sorted({folder_of(m) for m in g if layer_of(m) == i})  # a folder is one layer as a whole
        counts = {f: sum(1 for m in g if folder_of(m) == f) for f in members}
        _print([f"  {name:<13} " + "  ".join(f"{f.removeprefix('mockbroker.')}{'/' if counts[f] > 1 else ''}"
                                              f"{'' if counts[f] == 1 else f' ({counts[f]})'}" for f in members)])
    cs = circles(g) + circles(fg)
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
