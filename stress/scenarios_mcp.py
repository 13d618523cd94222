"""Stress scenario for MCP tools (ISSUE 6): cancel at every scheduling point of a turn that
calls a tool of a real MCP server (tests/mcp/server.py, stdio), and check I1–I5 plus "no
server process left" once the session closes.

The server belongs to the session, not the turn (`session_scoped`): it may rightly outlive
a cancelled turn, and must be gone after the session closed. Its tool list is pre-cached,
so the server starts lazily *inside* the turn, on the first call: cancels land while it
starts (the call is `cancelled`, not started) and while the call runs (`cancelled`,
started; `notifications/cancelled` sent).

The harness builds each run's `SessionOptions` from `StressScenario.session_options(cwd)`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Final

from stress.scenarios import Phase, StressScenario

SERVER: Final = Path(__file__).resolve().parent.parent / "tests" / "mcp" / "server.py"
#: The cached tool list (what `tests/mcp/server.py` offers for `slow`).
_SLOW_SCHEMA: Final = {
    "type": "object",
    "properties": {"seconds": {"type": "number"}},
    "required": ["seconds"],
}


def mcp_session_options(cwd: Path) -> dict[str, Any]:
    """Session options of the MCP scenario: one lazy stdio server with a cached tool list."""
    import mcp_types as types

    from rawtrio.config.schema import McpServerConfig
    from rawtrio.mcp import catalog

    config = McpServerConfig(
        command=[sys.executable, str(SERVER)], start="lazy", startup_timeout_s=60.0
    )
    cache = cwd / ".mcp-cache"
    slow = types.Tool(name="slow", description="Sleep, then answer.", input_schema=_SLOW_SCHEMA)
    catalog.save_cached(cache, "s", config, [slow])
    return {"mcp_servers": {"s": config}, "mcp_cache_dir": cache}


MCP_TOOL = StressScenario(
    name="mcp-tool",
    description="stream → MCP tool call (lazy stdio server start, 0.3 s call) → stream",
    prompt="stress-mcp: ask the server",
    replies=(
        {
            "text": "Let me ask the MCP server and wait for its answer.",
            "chunk": 6,
            "delay_ms": 2,
            "tool_calls": [{"name": "mcp__s__slow", "arguments": {"seconds": 0.3}}],
        },
        {"text": "The server answered after a short pause.", "chunk": 6, "delay_ms": 2},
    ),
    required=(Phase.STREAMING_ANY, frozenset({Phase.TOOL_RUNNING})),
    tags=frozenset({"mcp"}),
    session_scoped=True,
    session_options=mcp_session_options,
)

MCP_SCENARIOS: Final[dict[str, StressScenario]] = {MCP_TOOL.name: MCP_TOOL}
