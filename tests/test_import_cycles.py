"""No import cycle anywhere in rawtrio, read from the source.

The graph is built statically with `ast` from every module under `rawtrio/`: module-level
imports, imports inside functions and imports under `if TYPE_CHECKING:` all count (a
cycle that only type checking or a lazy import follows still ties two modules together:
neither can be understood, moved or tested without the other). `from pkg import name`
counts as an import of `pkg.name` when that is a module, else of `pkg` itself; relative
imports are resolved against the importing module's package. Running a package's
`__init__.py` before its submodules is Python's doing, not an import the code wrote, so
it is not an edge; names a package loads on first attribute access (PEP 562, through
`importlib`) are not either.

A cycle is reported as a chain `a -> b -> a`, every elementary cycle of every strongly
connected group, each import with its line.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterable, Mapping
from itertools import pairwise
from pathlib import Path

import rawtrio

PACKAGE = Path(rawtrio.__file__).parent

#: Cycles that stay, each with why it cannot be broken without a behaviour change or a
#: large redesign. Keyed by the chain from its smallest module.
ALLOWED: dict[str, str] = {}

#: Chains listed per strongly connected group before the rest is summed up.
MAX_CHAINS_PER_GROUP = 20

Graph = Mapping[str, Mapping[str, int]]


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path, modules: set[str]) -> dict[str, int]:
    """The package's modules that `path` imports anywhere in its code, each with the line
    of its first import."""
    me = module_name(path, root)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: dict[str, int] = {}

    def add(name: str, line: int) -> None:
        if name in modules and name != me and (name not in found or line < found[name]):
            found[name] = line

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                # `import a.b.c` binds `a` but loads `a.b.c`: the deepest module named.
                parts = alias.name.split(".")
                for n in range(len(parts), 0, -1):
                    if ".".join(parts[:n]) in modules:
                        add(".".join(parts[:n]), node.lineno)
                        break
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base]).strip(".")
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                add(sub if sub in modules else base, node.lineno)
    return found


def import_graph(root: Path = PACKAGE) -> dict[str, dict[str, int]]:
    """Module → {imported module: line} for every module of the package at `root`."""
    paths = sorted(root.rglob("*.py"))
    modules = {module_name(p, root) for p in paths}
    return {module_name(p, root): imports_of(p, root, modules) for p in paths}


def strongly_connected(graph: Graph) -> list[list[str]]:
    """The groups of more than one module that import each other (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in sorted(graph):
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
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    group.append(m)
                    if m == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return sorted(groups)


def chains(graph: Graph, group: Iterable[str], limit: int) -> tuple[list[list[str]], bool]:
    """Up to `limit` elementary cycles inside `group`, each from its smallest module and
    closed on it; and whether there are more."""
    members = sorted(group)
    found: list[list[str]] = []
    for first in members:
        allowed = {m for m in members if m >= first}
        path = [first]
        work = [iter(sorted(m for m in graph[first] if m in allowed))]
        while work:
            nxt = next(work[-1], None)
            if nxt is None:
                work.pop()
                path.pop()
                continue
            if nxt == first:
                found.append([*path, first])
                if len(found) > limit:
                    return found[:limit], True
            elif nxt not in path:
                path.append(nxt)
                work.append(iter(sorted(m for m in graph[nxt] if m in allowed)))
    return found, False


def cycle_report(graph: Graph) -> dict[str, str]:
    """Every cycle as `a -> b -> a` mapped to the imports that make it, one per line."""
    report: dict[str, str] = {}
    for group in strongly_connected(graph):
        found, more = chains(graph, group, MAX_CHAINS_PER_GROUP)
        for chain in found:
            steps = [f"  {a} imports {b} (line {graph[a][b]})" for a, b in pairwise(chain)]
            report[" -> ".join(chain)] = "\n".join(steps)
        if more:
            report[f"{', '.join(group)}: more cycles"] = "  (only the first ones are listed)"
    return report


def test_no_import_cycle_in_rawtrio() -> None:
    found = cycle_report(import_graph())
    unexplained = {chain: how for chain, how in found.items() if chain not in ALLOWED}
    stale = sorted(set(ALLOWED) - set(found))
    assert not unexplained, "import cycles:\n" + "\n".join(
        f"{chain}\n{how}" for chain, how in unexplained.items()
    )
    assert not stale, f"allowed cycles that no longer exist (remove them): {stale}"


def write_package(root: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root / "pkg"


def test_the_graph_counts_every_kind_of_import(tmp_path: Path) -> None:
    pkg = write_package(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.top import name\n",
            "pkg/top.py": """\
                from typing import TYPE_CHECKING

                if TYPE_CHECKING:
                    from pkg.sub.typed import T

                def later():
                    from .sub import lazy
                    import pkg.sub.deep.leaf
                """,
            "pkg/sub/__init__.py": "from .. import top\nfrom . import lazy as _lazy\n",
            "pkg/sub/typed.py": "from ..sub.lazy import thing\n",
            "pkg/sub/lazy.py": "from pkg import top, missing_name\n",
            "pkg/sub/deep/__init__.py": "",
            "pkg/sub/deep/leaf.py": "import pkg.sub\nimport os\n",
        },
    )
    graph = {m: sorted(deps) for m, deps in import_graph(pkg).items()}
    assert graph == {
        "pkg": ["pkg.top"],
        "pkg.top": ["pkg.sub.deep.leaf", "pkg.sub.lazy", "pkg.sub.typed"],
        "pkg.sub": ["pkg.sub.lazy", "pkg.top"],
        "pkg.sub.typed": ["pkg.sub.lazy"],
        "pkg.sub.lazy": ["pkg", "pkg.top"],
        "pkg.sub.deep": [],
        "pkg.sub.deep.leaf": ["pkg.sub"],
    }
    assert import_graph(pkg)["pkg.top"]["pkg.sub.typed"] == 4


def test_every_cycle_is_named_as_a_chain(tmp_path: Path) -> None:
    pkg = write_package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg import b\n\ndef f():\n    from pkg import c\n",
            "pkg/b.py": "import typing\nif typing.TYPE_CHECKING:\n    from . import a\n",
            "pkg/c.py": "import pkg.a\n",
            "pkg/d.py": "import pkg.e\n",
            "pkg/e.py": "from .d import x\n",
            "pkg/f.py": "import pkg.a\n",
        },
    )
    report = cycle_report(import_graph(pkg))
    assert list(report) == [
        "pkg.a -> pkg.b -> pkg.a",
        "pkg.a -> pkg.c -> pkg.a",
        "pkg.d -> pkg.e -> pkg.d",
    ]
    assert report["pkg.a -> pkg.c -> pkg.a"] == (
        "  pkg.a imports pkg.c (line 4)\n  pkg.c imports pkg.a (line 1)"
    )


def test_a_group_of_many_cycles_is_cut_short() -> None:
    members = [f"m{i}" for i in range(8)]
    graph = {m: {n: 1 for n in members if n != m} for m in members}
    found, more = chains(graph, members, 5)
    assert len(found) == 5
    assert more
    assert all(c[0] == c[-1] and len(set(c[:-1])) == len(c) - 1 for c in found)
