"""The import graph of protocol/ and mockbroker/ (scripts/import_graph.py): calls and data go one
way, from the wire up to the process, so nothing may import a module of a higher layer and no
modules may import each other in a circle — counting imports under TYPE_CHECKING and inside
functions, which are edges all the same."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts" / "import_graph.py")
assert _spec is not None and _spec.loader is not None
import_graph = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(import_graph)


@pytest.fixture(scope="module")
def graph():
    return import_graph.graph()


def test_no_import_circles(graph):
    assert import_graph.circles(graph) == []


def test_no_circles_between_folders(graph):
    """A folder is a unit a reader takes in whole: two folders importing each other are one."""
    assert import_graph.circles(import_graph.folder_graph(graph)) == []


FRONT_DOORS = {"__init__", "__main__", "cli", "runner", "pytest_plugin", "admin_client", "probe", "journal_reader",
               "request", "broker", "cluster", "control"}


def test_the_top_level_holds_the_front_doors_and_a_few_named_pieces():
    """mockbroker/ lists its folders and about a dozen modules: the package API, the CLI, the runner,
    the pytest plugin, the admin client, the probe, the journal reader, and the handler contract, the
    node, the process and the control plane docs/design.md names.  A new module goes into a folder."""
    top = {p.stem for p in (ROOT / "mockbroker").glob("*.py")}
    assert top == FRONT_DOORS


def test_no_upward_imports(graph):
    assert import_graph.upward(graph) == []


def test_every_module_has_a_layer(graph):
    unplaced = [m for m in graph if import_graph.layer_of(m) == len(import_graph.LAYERS)]
    assert unplaced == [], "add these modules to a layer in scripts/import_graph.py"


def test_protocol_imports_nothing_from_mockbroker(graph):
    assert [(a, b) for a, deps in graph.items() if a.startswith("protocol") for b in deps
            if b.startswith("mockbroker")] == []


def test_handlers_reach_the_broker_only_through_the_contract(graph):
    """apis/ never imports the dispatcher, the connection, a broker or the cluster."""
    forbidden = ("mockbroker.network.", "mockbroker.broker", "mockbroker.cluster", "mockbroker.runner")
    bad = [(a, b) for a, deps in graph.items() if a.startswith("mockbroker.apis") for b in deps
           if b.startswith(forbidden)]
    assert bad == []


def test_the_checker_finds_a_circle_and_an_upward_import():
    """The checks above can fail: a graph with a circle and an upward edge is reported."""
    g = {"mockbroker.state.metadata": {"mockbroker.state.replication"},
         "mockbroker.state.replication": {"mockbroker.state.metadata"},
         "mockbroker.common.clock": {"mockbroker.cluster"}, "mockbroker.cluster": set(),
         "mockbroker.server.a": {"mockbroker.share.b"}, "mockbroker.share.b": set(),
         "mockbroker.share.c": {"mockbroker.server.d"}, "mockbroker.server.d": set()}
    assert import_graph.circles(g) == [["mockbroker.state.metadata", "mockbroker.state.replication"]]
    assert ("mockbroker.common.clock", "mockbroker.cluster") in import_graph.upward(g)
    # no two modules in a circle, but server/ and share/ import each other
    assert import_graph.circles(import_graph.folder_graph(g)) == [["mockbroker.server", "mockbroker.share"]]


def test_type_checking_and_function_imports_count(tmp_path, monkeypatch):
    pkg = tmp_path / "mockbroker"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import X\n")
    (pkg / "b.py").write_text("def f():\n    from . import a\n")
    monkeypatch.setattr(import_graph, "ROOT", tmp_path)
    monkeypatch.setattr(import_graph, "PACKAGES", ("mockbroker",))
    g = import_graph.graph()
    assert g["mockbroker.a"] == {"mockbroker.b"} and g["mockbroker.b"] == {"mockbroker.a"}


def test_a_package_is_one_layer(graph):
    """quota/, group/, txn/, apis/ ...: a folder sits in one layer as a whole, so no file of it can
    be placed above or below the rest to hide an import that goes the wrong way."""
    layers: dict[str, set[int]] = {}
    for m in graph:
        parts = m.split(".")
        if len(parts) > 2:
            layers.setdefault(".".join(parts[:2]), set()).add(import_graph.layer_of(m))
    split = {pkg: sorted(ls) for pkg, ls in layers.items() if len(ls | {import_graph.layer_of(pkg)}) > 1}
    assert split == {}


def test_a_module_over_500_lines_says_why():
    """Size: a module past ~500 lines holds more than one thing, unless its docstring says why not."""
    import ast

    long = []
    for name, path in import_graph.modules().items():
        text = path.read_text()
        if name.startswith("protocol.generated") or text.count("\n") <= 500:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        if "Over 500 lines on purpose" not in doc:
            long.append(name)
    assert long == []
