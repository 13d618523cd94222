"""`task`: hand a sub-task to a child agent with its own context (docs/contracts.md,
The `task` tool). The handler only checks its arguments; the session's `SubagentRunner`
(rawtrio.runtime.subagents) runs the child inside this call, so a cancellation of the
turn is a cancellation of the child.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Protocol

from rawtrio.frozen import freeze
from rawtrio.tools.base import Tool, ToolContext, ToolOutput

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


class SubagentRunner(Protocol):
    async def run(
        self, ctx: ToolContext, *, description: str, prompt: str, agent: str | None
    ) -> ToolOutput: ...


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


def task_tool() -> Tool:
    return Tool(
        id=TASK_TOOL_ID,
        description=_DESCRIPTION,
        input_schema=_SCHEMA,
        handler=_task,
        concurrent=True,
        key_argument="description",
    )
