"""The shape of the house, checked: no import cycle among arklore's modules (imports inside
functions count), a composition root that only wires facades, each facade in its own layer,
and a public API whose ``__all__`` is exactly what the package exports."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from types import ModuleType

import pytest

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


def leaked(module: ModuleType) -> list[str]:
    """Public names of ``module`` that its ``__all__`` leaves out: for the package, any name
    its namespace (``vars``, not ``dir``, which ``__dir__`` makes equal to ``__all__``) holds
    but a submodule; for another module, the functions, classes and constants defined in it."""
    exported = set(module.__all__)
    out = []
    for name, value in vars(module).items():
        if name.startswith("_") or name in exported or isinstance(value, ModuleType):
            continue
        if module is arklore or getattr(value, "__module__", None) == module.__name__:
            out.append(name)
    return sorted(out)


def modules_with_all() -> list[ModuleType]:
    names = sorted(module_name(p) for p in SRC.rglob("*.py"))
    found = [importlib.import_module(n) for n in names if n != "arklore.__main__"]
    return [m for m in found if hasattr(m, "__all__")]


def test_all_is_exactly_what_a_module_exports() -> None:
    modules = modules_with_all()
    assert arklore in modules and workspace_module in modules and len(modules) > 10
    for module in modules:
        assert leaked(module) == [], module.__name__
        missing = [n for n in module.__all__ if not hasattr(module, n)]
        assert missing == [], module.__name__


def test_a_leaked_helper_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: a helper the package or a module defines and does not
    export turns it red."""
    monkeypatch.setattr(arklore, "helper", object(), raising=False)
    assert leaked(arklore) == ["helper"]

    def helper() -> None: ...

    helper.__module__ = workspace_module.__name__
    monkeypatch.setattr(workspace_module, "helper", helper, raising=False)
    assert leaked(workspace_module) == ["helper"]


CHAT = SRC / "chat"


def test_the_chat_facade_is_small_and_each_block_has_a_module_of_its_own() -> None:
    from arklore.chat.blocks import BLOCK_ORDER

    assert len((CHAT / "facade.py").read_text(encoding="utf-8").splitlines()) <= 250
    for module in BLOCK_ORDER:
        assert isinstance(module, ModuleType), module
        path = Path(str(module.__file__))
        assert path.parent == CHAT / "blocks", module.__name__
        assert len(path.read_text(encoding="utf-8").splitlines()) <= 300, path.name


def names_in(node: ast.AST) -> set[str]:
    """Every name and attribute ``node`` mentions."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            out.add(n.value)
    return out


def function(path: Path, qualname: str) -> ast.FunctionDef:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    *owners, name = qualname.split(".")
    body: list[ast.stmt] = tree.body
    for owner in owners:
        body = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == owner).body
    return next(n for n in body if isinstance(n, ast.FunctionDef) and n.name == name)


def test_the_turn_holds_no_block_specific_branch() -> None:
    """``ChatFacade.turn`` runs the block modules in one generic loop: it names no block."""
    from arklore.chat.blocks import BLOCK_NAMES

    turn = function(CHAT / "facade.py", "ChatFacade.turn")
    constants = {"PERSONA", "DOCTOR", "RELATIONS", "MEMORIES", "GROUP", "EXEMPLARS"}
    mentioned = names_in(turn)
    assert mentioned & (set(BLOCK_NAMES) | constants) == set()
    assert not any(isinstance(n, ast.If) for n in ast.walk(turn))  # no branch at all


def functions_mentioning(*words: str) -> list[str]:
    """Every function of the package whose body mentions all ``words`` (names, attributes)."""
    out = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and set(words) <= names_in(node):
                out.append(f"{module_name(path)}.{node.name}")
    return out


def test_the_tier_rule_is_read_in_one_function() -> None:
    """Whether a chat may use her relations (tier C unless the user opted in) is decided in
    one function; every block, the cards and the service read its answer
    (``persona.relation_context``), never the tier and the setting again."""
    assert functions_mentioning("TIER_C", "tier_c_relations") == [
        "arklore.profiles.persona.persona"
    ]
    readers = set(functions_mentioning("tier_c_relations"))
    wiring = {  # the setting, handed from the workspace to the profiles layer's one rule
        "arklore.workspace.__init__",
        "arklore.profiles.facade.__init__",
        "arklore.profiles.facade._persona_of",
        "arklore.profiles.facade.persona",
    }
    assert readers - wiring == {"arklore.profiles.persona.persona"}


def test_the_tier_scan_sees_a_second_reader() -> None:
    tree = ast.parse("def f(p, s):\n    return p.tier == TIER_C and not s.tier_c_relations\n")
    assert {"TIER_C", "tier_c_relations"} <= names_in(tree.body[0])


LAYER_RANK = {name: i for i, name in enumerate(LAYERS)}


def wiring_calls() -> list[tuple[str, ast.Call]]:
    """(layer, call) for every ``self.<layer> = <Facade>(...)`` in ``Workspace.__init__``."""
    init = function(Path(workspace_module.__file__), "Workspace.__init__")
    out = []
    for stmt in init.body:
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.targets[0], ast.Attribute)
            and stmt.targets[0].attr in LAYER_RANK
        ):
            out.append((stmt.targets[0].attr, stmt.value))
    return out


def upward(layer: str, call: ast.Call) -> list[str]:
    """What ``call`` (the facade of ``layer``) is handed of a layer above it: anything
    reached through ``self.<higher layer>``, in a lambda or not (a bound method, the facade)."""
    found = []
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        for n in ast.walk(arg):
            if (
                isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name)
                and n.value.id == "self"
                and LAYER_RANK.get(n.attr, -1) > LAYER_RANK[layer]
            ):
                found.append(ast.unparse(arg))
    return found


def test_the_composition_root_hands_no_layer_a_call_into_a_higher_one() -> None:
    calls = wiring_calls()
    assert {layer for layer, _ in calls} >= set(LAYERS) - {"cards"} - {"chat"}
    for layer, call in calls:
        assert upward(layer, call) == [], layer


def test_the_wiring_scan_sees_a_call_upward() -> None:
    call = ast.parse("EventsFacade(named=lambda c, t: self.chat.named(c, t))").body[0]
    assert isinstance(call, ast.Expr) and isinstance(call.value, ast.Call)
    assert upward("events", call.value) == ["lambda c, t: self.chat.named(c, t)"]
    bound = ast.parse("RagFacade(extra=self.profiles.anchor_documents)").body[0]
    assert isinstance(bound, ast.Expr) and isinstance(bound.value, ast.Call)
    assert upward("rag", bound.value) == ["self.profiles.anchor_documents"]


def test_the_type_stub_names_exactly_the_public_api() -> None:
    """``__init__.pyi`` gives a type checker the lazy public names: the same ones, each from the
    module ``__init__.py`` imports it from."""
    tree = ast.parse((SRC / "__init__.pyi").read_text(encoding="utf-8"))
    stubbed = {
        a.asname: node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for a in node.names
    }
    assert stubbed == dict(arklore._PUBLIC)
