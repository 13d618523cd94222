"""The `load_skill` tool: the model reads a skill's instructions when it needs them.

Registered through `ToolRegistry.register` like every other tool. It is read-only and
reads SKILL.md again at call time, so the model always gets the current text (the
fingerprint notice of `changed_skills` tells it when an earlier copy went stale). The
result is the body plus the skill's folder and the files in it, so the model can read the
scripts and references the body mentions with the ordinary file tools.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import trio

from rawtrio.frozen import freeze
from rawtrio.skills.discovery import SKILL_FILE, Skill, SkillError, load_skill_file
from rawtrio.tools.base import Tool, ToolContext, ToolOutput

TOOL_ID: Final = "load_skill"
#: At most this many files of a skill folder are listed.
MAX_LISTED_FILES: Final = 200

_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The skill's name, as listed in Skills."}
    },
    "required": ["name"],
    "additionalProperties": False,
}


def load_skill_tool(skills: Sequence[Skill]) -> Tool:
    """The tool serving `skills` (the ones listed in the session's system prompt)."""
    by_name = {s.name: s for s in skills}

    async def handle(ctx: ToolContext, args: Mapping[str, Any]) -> ToolOutput:
        name = str(args["name"])
        skill = by_name.get(name)
        if skill is None:
            known = ", ".join(sorted(by_name)) or "none"
            return ToolOutput.error(f"no skill named {name!r} (available: {known})")
        return await trio.to_thread.run_sync(_render, skill)

    return Tool(
        id=TOOL_ID,
        description=(
            "Load a skill: returns its instructions and the files in its folder. Use it when "
            "a task matches a skill listed in the system prompt, before starting the task."
        ),
        input_schema=freeze(_SCHEMA),
        handler=handle,
        read_only=True,
        key_argument="name",
    )


def _render(skill: Skill) -> ToolOutput:
    try:
        current = load_skill_file(skill.path, within=skill.within)
    except SkillError as exc:
        return ToolOutput.error(f"skill {skill.name!r} cannot be loaded now: {exc}")
    files, more = _list_files(current.path)
    listing = "\n".join(f"- {f}" for f in files) or "(no other files)"
    if more:
        listing += f"\n- … and {more} more"
    content = (
        f'<skill name="{current.name}" folder="{current.path}">\n{current.body.rstrip()}\n'
        f"</skill>\n\nFiles in the skill folder (paths relative to {current.path}):\n{listing}"
    )
    return ToolOutput.ok(
        content,
        skill=current.name,
        folder=str(current.path),
        sha256=current.sha256,
        files=len(files) + more,
    )


def _list_files(folder: Path) -> tuple[list[str], int]:
    """Relative paths of the files under `folder` (hidden ones and SKILL.md left out)."""
    found: list[str] = []
    more = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            rel = (Path(dirpath) / name).relative_to(folder).as_posix()
            if name.startswith(".") or rel == SKILL_FILE:
                continue
            if len(found) < MAX_LISTED_FILES:
                found.append(rel)
            else:
                more += 1
    return found, more
