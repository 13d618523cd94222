"""`task`: hand a sub-task to a child agent with its own context (docs/contracts.md,
The `task` tool). The handler only checks its arguments; the session's `SubagentRunner`
(`ToolContext.subagents`: rawtrio.runtime.subagents) runs the child inside this call, so
a cancellation of the turn is a cancellation of the child.

A `task` call is read-only when its child can only read (`reads_only`, judged from the
agent's configuration by `ToolSettings.task_reads_only`): it then runs side by side with
the read-only calls around it (docs/contracts.md, Read-only `task` calls).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from rawtrio.frozen import freeze
from rawtrio.tools.base import Tool, ToolContext, ToolOutput
from rawtrio.tools.settings import ToolSettings

TASK_TOOL_ID: Final = "task"

_DESCRIPTION = (
    "Hand a self-contained sub-task to a subagent: a fresh agent with its own context that "
    "sees only your prompt, works with its own tools, and answers with one final text, "
    "which becomes this call's result. Use it for searches and investigations that would "
    "fill your context, or for independent pieces of work; several task calls in one "
    "reply run at the same time. Give everything the subagent needs in `prompt`, and say "
    "what its answer must contain."
)

_SCHEMA = freeze(
    {
        "type": "object",
        "properties": {
            "description": {
                "type": "string",
                "minLength": 1,
                "maxLength": 200,
                "description": "A short label for the task (3-10 words), shown to the user.",
            },
            "prompt": {
                "type": "string",
                "minLength": 1,
                "description": "The whole instruction for the subagent.",
            },
            "agent": {
                "type": "string",
                "minLength": 1,
                "description": "A configured agent to use; omit for one like you.",
            },
        },
        "required": ["description", "prompt"],
        "additionalProperties": False,
    }
)


async def _task(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
    if ctx.subagents is None:
        return ToolOutput.error("not run: this session cannot start subagents")
    agent = args.get("agent")
    return await ctx.subagents.run(
        ctx,
        description=str(args["description"]),
        prompt=str(args["prompt"]),
        agent=str(agent) if agent is not None else None,
    )


def task_tool(settings: ToolSettings | None = None) -> Tool:
    judge = settings.task_reads_only if settings is not None else None
    return Tool(
        id=TASK_TOOL_ID,
        description=_DESCRIPTION,
        input_schema=_SCHEMA,
        handler=_task,
        read_only_for=_read_only_call(judge) if judge is not None else None,
        concurrent=True,
        key_argument="description",
    )


def _read_only_call(judge: Callable[[str | None], bool]) -> Callable[[Mapping[str, Any]], bool]:
    """The per-call declaration: read-only when the named agent's child can only read.
    It sees the arguments before validation: an `agent` that is not a string is not."""

    def read_only(args: Mapping[str, Any]) -> bool:
        agent = args.get("agent")
        return (agent is None or isinstance(agent, str)) and judge(agent)

    return read_only


def reads_only(
    selected: Iterable[Tool], *, tool_globs: Sequence[str], mcp_servers: bool, may_nest: bool
) -> bool:
    """Whether a child session whose agent selects these tools can only read.

    `selected`: the built-in and extra tools the agent's `tool_globs` select. Every one must
    be read-only by its declaration (`Tool.read_only`); a tool judged per call (`bash`) is
    not. `task` counts as writing where the child may nest (`may_nest`): its own children
    could name any agent. MCP tools are listed by their servers only once the child starts,
    so an agent with MCP servers (`mcp_servers`) counts as writing unless its globs can
    select no `mcp/...` id at all. Permission rules and modes are not weighed: they decide
    whether a call runs, never what a tool can do (and a child's are never looser than its
    parent's).
    """
    if mcp_servers and any(_may_select_mcp(g) for g in tool_globs if not g.startswith("!")):
        return False
    for tool in selected:
        if tool.id == TASK_TOOL_ID:
            if may_nest:
                return False
        elif not tool.read_only:
            return False
    return True


def _may_select_mcp(glob: str) -> bool:
    """Whether `glob` can match some `mcp/<server>/<tool>` id: its literal head (up to the
    first wildcard) fits `mcp/`."""
    wild = [i for i, char in enumerate(glob) if char in "*?["]
    if not wild:
        return glob.startswith("mcp/")
    head = glob[: wild[0]]
    return head.startswith("mcp/") or "mcp/".startswith(head)
