"""The layers of docs/architecture.md, checked on the imports themselves.

Every import counts, also one under `TYPE_CHECKING` or inside a function: a cycle that only
type checking follows still ties two modules together (the graph is
`tests/test_import_cycles.py`'s, which finds no cycle in all of rawtrio). Checked: no
import cycle among the front ends and the application, none inside the runtime, front ends
never reach below the runtime's public API into providers, the SQLite store, the tools
package or the testing helpers, and hooks import only the foundation, the process package
and the tools' settings, and are imported by the runtime and the application."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable, Mapping

from tests.test_import_cycles import import_graph

FRONT_ENDS = ("rawtrio.cli", "rawtrio.tui", "rawtrio.acp", "rawtrio.dashboard")
#: What a front end never imports (it goes through `rawtrio.app` and `rawtrio.runtime`).
BELOW_THE_RUNTIME = (
    "rawtrio.providers",
    "rawtrio.store.sqlite",
    "rawtrio.testing",
    "rawtrio.tools",
)
#: The foundation layer (docs/architecture.md): shared values, configuration, the store.
FOUNDATION = (
    "rawtrio.compat",
    "rawtrio.config",
    "rawtrio.contracts",
    "rawtrio.errors",
    "rawtrio.events",
    "rawtrio.frozen",
    "rawtrio.groups",
    "rawtrio.heap",
    "rawtrio.logs",
    "rawtrio.messages",
    "rawtrio.private_files",
    "rawtrio.redaction",
    "rawtrio.store",
    "rawtrio.unicode_safety",
    "rawtrio.user_dirs",
)
#: What `rawtrio/hooks/` may import: the foundation, the process package (a hook's command
#: runs in its own process group like a tool's) and the tools' settings (the environment
#: variables stripped from every child process). Nothing of the runtime, the application,
#: the front ends, the providers or the tools themselves.
HOOKS_MAY_IMPORT = (*FOUNDATION, "rawtrio.hooks", "rawtrio.processes", "rawtrio.tools.settings")
#: Who may import `rawtrio/hooks/`: the runtime (which runs the hooks), the application
#: (which turns the configuration into hook specs), and, the one import from the foundation
#: up, the reading of Claude Code's settings files, which checks their event names against
#: `HookEvent` (`rawtrio.hooks.spec`: the module that defines hooks and nothing above).
HOOKS_USED_BY = ("rawtrio.hooks", "rawtrio.runtime", "rawtrio.app")
HOOKS_USED_FROM_BELOW = {"rawtrio.config.claude_settings": {"rawtrio.hooks.spec"}}


def within(module: str, packages: Iterable[str]) -> bool:
    return any(module == p or module.startswith(f"{p}.") for p in packages)


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


def test_hooks_import_only_the_foundation_the_processes_and_the_tool_settings() -> None:
    found = {
        module: sorted(m for m in deps if not within(m, HOOKS_MAY_IMPORT))
        for module, deps in import_graph().items()
        if within(module, ["rawtrio.hooks"])
    }
    assert found  # the hooks package is where this test looks
    assert {k: v for k, v in found.items() if v} == {}


def test_only_the_runtime_and_the_application_import_hooks() -> None:
    found = {
        module: {m for m in deps if within(m, ["rawtrio.hooks"])}
        for module, deps in import_graph().items()
        if not within(module, HOOKS_USED_BY)
    }
    assert {k: v for k, v in found.items() if v} == HOOKS_USED_FROM_BELOW


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
