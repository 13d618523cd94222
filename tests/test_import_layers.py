"""The layers of docs/architecture.md, checked on the imports themselves.

Every import counts, also one under `TYPE_CHECKING` or inside a function: a cycle that only
type checking follows still ties two modules together. Checked: no import cycle among the
front ends and the application, none inside the runtime, and front ends never reach below
the runtime's public API into providers, the SQLite store, the tools package or the
testing helpers."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import rawtrio

PACKAGE = Path(rawtrio.__file__).parent
FRONT_ENDS = ("rawtrio.cli", "rawtrio.tui", "rawtrio.acp", "rawtrio.dashboard")
#: What a front end never imports (it goes through `rawtrio.app` and `rawtrio.runtime`).
BELOW_THE_RUNTIME = (
    "rawtrio.providers",
    "rawtrio.store.sqlite",
    "rawtrio.testing",
    "rawtrio.tools",
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The rawtrio modules `path` imports (`from pkg import mod` counts as `pkg.mod`)."""
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    [*package.split(".")[: len(package.split(".")) - node.level + 1], base]
                ).strip(".")
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in modules else base)
    return {m for m in found if m in modules and m != me}


def import_graph() -> dict[str, set[str]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    return {module_name(p): imports_of(p, modules) for p in paths}


def cycles(graph: Mapping[str, Iterable[str]], within: tuple[str, ...]) -> list[list[str]]:
    """The strongly connected groups of more than one module among those under `within`."""
    nodes = [n for n in graph if n.startswith(within)]
    edges = {n: [m for m in graph[n] if m.startswith(within)] for n in nodes}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(n: str) -> None:  # Tarjan's algorithm; the graph is small
        index[n] = low[n] = len(index)
        stack.append(n)
        on_stack.add(n)
        for m in edges[n]:
            if m not in index:
                visit(m)
                low[n] = min(low[n], low[m])
            elif m in on_stack:
                low[n] = min(low[n], index[m])
        if low[n] == index[n]:
            group = []
            while True:
                m = stack.pop()
                on_stack.discard(m)
                group.append(m)
                if m == n:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for n in nodes:
        if n not in index:
            visit(n)
    return found


def test_the_check_finds_a_cycle() -> None:
    graph = {"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}, "a.w": {"a.x"}, "b.v": {"a.w"}}
    assert cycles(graph, ("a.",)) == [["a.x", "a.y", "a.z"]]


def test_no_import_cycle_among_front_ends_and_the_application() -> None:
    assert cycles(import_graph(), (*FRONT_ENDS, "rawtrio.app")) == []


def test_no_import_cycle_inside_the_runtime() -> None:
    graph = import_graph()
    inside = {n: {m for m in deps if m != "rawtrio.runtime"} for n, deps in graph.items()}
    assert cycles(inside, ("rawtrio.runtime.",)) == []


def test_front_ends_never_import_below_the_runtime() -> None:
    found = {
        module: sorted(m for m in deps if m.startswith(BELOW_THE_RUNTIME))
        for module, deps in import_graph().items()
        if module.startswith(FRONT_ENDS)
    }
    assert {k: v for k, v in found.items() if v} == {}


def test_the_chats_first_frame_does_not_load_the_runtime() -> None:
    """The terminal chat draws its prompt before the runtime is imported (in a thread,
    behind it): importing the chat's screen must not pull in the session, the tools, the
    providers or the config schema through `rawtrio.runtime`'s public API."""
    code = (
        "import sys, rawtrio.tui.app, rawtrio.tui.runner\n"
        "heavy = ('rawtrio.runtime.session', 'rawtrio.tools.registry', 'rawtrio.providers',"
        " 'pydantic', 'jsonschema')\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == ""
