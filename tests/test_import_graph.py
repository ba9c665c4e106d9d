"""The house's import arrows, read from the source: no cycle between modules, none pointing up a layer.

Every ``import`` counts, at module level or inside a function (a lazy import still ties two
modules together), and so does an ``if TYPE_CHECKING`` one. The layers are those of
docs/architecture.md, from the top: the surfaces (``cli``, ``server``), ``eval``, ``agents``,
``runs``, ``reasoning``, ``tools``, ``kb``, ``llm``, and the core modules beside them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
LAYERS = {"cli": 9, "server": 9, "eval": 8, "agents": 7, "runs": 6, "reasoning": 5, "tools": 4, "kb": 3, "llm": 2}
# The package's own namespace re-exports the facades (``reasonloop.Agent``, ``reasonloop.KnowledgeBase``).
FACADE = "reasonloop"


def module_files(src: Path = SRC) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in (src / "reasonloop").rglob("*.py"):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project's modules ``name`` imports, anywhere in its text (parents of itself left out)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            candidates = [module] + [f"{module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        else:
            continue
        for candidate in candidates:
            while candidate and candidate not in modules:
                candidate = candidate.rpartition(".")[0]
            if candidate and candidate != name and not name.startswith(candidate + "."):
                targets.add(candidate)
    return targets


def import_graph(src: Path = SRC) -> dict[str, set[str]]:
    modules = module_files(src)
    return {name: imported(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def layer(name: str) -> int:
    parts = name.split(".")
    return LAYERS.get(parts[1], 0) if len(parts) > 1 else 0


def upward(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted(
        (name, target)
        for name, targets in graph.items()
        if name != FACADE
        for target in targets
        if layer(target) > layer(name)
    )


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_the_graph_is_read_from_every_module(graph: dict[str, set[str]]) -> None:
    assert len(graph) > 200
    assert "reasonloop.kb.indexes.catalog" in graph["reasonloop.kb.indexes.local"]


def test_no_module_imports_itself_back(graph: dict[str, set[str]]) -> None:
    assert cycles(graph) == []


def test_no_import_points_up_a_layer(graph: dict[str, set[str]]) -> None:
    assert upward(graph) == []


def test_the_checks_see_a_cycle_and_an_upward_arrow(tmp_path: Path) -> None:
    package = tmp_path / "reasonloop"
    (package / "kb").mkdir(parents=True)
    (package / "agents").mkdir()
    (package / "__init__.py").write_text("")
    (package / "kb" / "__init__.py").write_text("")
    (package / "agents" / "__init__.py").write_text("")
    (package / "kb" / "a.py").write_text("def f():\n    from reasonloop.kb import b\n")
    (package / "kb" / "b.py").write_text("from . import a\nfrom reasonloop.agents.runner import Runner\n")
    (package / "agents" / "runner.py").write_text("class Runner: ...\n")
    seen = import_graph(tmp_path)
    assert cycles(seen) == [["reasonloop.kb.a", "reasonloop.kb.b"]]
    assert upward(seen) == [("reasonloop.kb.b", "reasonloop.agents.runner")]
