"""The shape of the house, checked: no import cycle among arklore's modules (imports inside
functions count), a composition root that only wires facades, each facade in its own layer,
and a public API whose ``__all__`` is exactly what the package exports."""

from __future__ import annotations

import ast
from pathlib import Path

import arklore
from arklore import workspace as workspace_module
from arklore.settings import Settings
from arklore.workspace import Workspace

SRC = Path(arklore.__file__).parent
LAYERS = ("corpus", "names", "extract", "graph", "rag", "events", "profiles", "chat", "cards")


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, name: str) -> set[str]:
    """Every arklore module ``path`` imports, wherever the import statement is."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("arklore"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            if not base.startswith("arklore"):
                continue
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)  # a submodule imported by name
    return out


def import_graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in SRC.rglob("*.py")}
    return {
        name: {m for m in imports_of(path, name) if m in modules and m != name}
        for name, path in modules.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the import graph, or None (iterative DFS with colours)."""
    colour: dict[str, int] = {}
    for start in sorted(graph):
        if colour.get(start):
            continue
        stack: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        path = [start]
        colour[start] = 1
        while stack:
            node, todo = stack[-1]
            if not todo:
                colour[node] = 2
                stack.pop()
                path.pop()
                continue
            nxt = todo.pop()
            if colour.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if not colour.get(nxt):
                colour[nxt] = 1
                path.append(nxt)
                stack.append((nxt, sorted(graph.get(nxt, ()))))
    return None


def test_no_import_cycle_among_arklore_modules_counting_imports_inside_functions() -> None:
    graph = import_graph()
    assert len(graph) > 100  # every module was read
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_a_function_level_import_counts(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from arklore.cli.app import app\n    return app\n")
    assert "arklore.cli.app" in imports_of(f, "arklore.x.m")


def test_the_composition_root_only_wires() -> None:
    lines = Path(workspace_module.__file__).read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 400
    public = [n for n in vars(Workspace) if not n.startswith("_")]
    assert len(public) <= 12, public


def test_each_facade_is_defined_in_its_own_layer(tmp_path: Path) -> None:
    ws = Workspace(Settings(home=tmp_path / "home"))
    for layer in LAYERS:
        facade = getattr(ws, layer)
        assert type(facade).__module__ == f"arklore.{layer}.facade", layer
    ws.close()


def test_all_is_exactly_what_the_package_exports() -> None:
    public = [n for n in dir(arklore) if not n.startswith("_")]
    assert sorted(set(arklore.__all__) - {"__version__"}) == sorted(public)
    for name in arklore.__all__:
        assert getattr(arklore, name) is not None
    assert sorted(workspace_module.__all__) == sorted(
        n
        for n, v in vars(workspace_module).items()
        if not n.startswith("_")
        and getattr(v, "__module__", None) == workspace_module.__name__
        or n in ("CITING_KINDS",)
    )
