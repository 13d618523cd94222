from __future__ import annotations

from pathlib import Path

import pytest

from rawtrio.contracts import ToolStatus
from rawtrio.skills import discover_skills, load_skill_tool
from rawtrio.tools.base import ToolContext
from rawtrio.tools.registry import ToolRegistry
from rawtrio.tools.settings import ToolSettings
from tests.skills.conftest import write_skill


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(session_id="s", call_id="c", cwd=tmp_path, settings=ToolSettings())


def registry_with_skills(root: Path) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(load_skill_tool(discover_skills([root]).skills))
    return registry


async def test_load_skill_returns_the_body_and_the_files(tmp_path: Path, ctx: ToolContext) -> None:
    folder = write_skill(tmp_path, "pdf", "pdf", "pdfs", body="# PDF\nRun scripts/x.py\n")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "x.py").write_text("print()")
    (folder / "REFERENCE.md").write_text("ref")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref")
    registry = registry_with_skills(tmp_path)
    tool = registry.lookup("load_skill")
    assert tool is not None
    assert tool.read_only
    assert registry.validate(tool, {"name": "pdf"}) is None
    output = await tool.handler(ctx, {"name": "pdf"})
    assert output.status is ToolStatus.OK
    assert output.content == (
        f'<skill name="pdf" folder="{folder}">\n# PDF\nRun scripts/x.py\n</skill>\n\n'
        f"Files in the skill folder (paths relative to {folder}):\n"
        "- REFERENCE.md\n- scripts/x.py"
    )
    assert output.details["files"] == 2


async def test_load_skill_reads_the_current_text(tmp_path: Path, ctx: ToolContext) -> None:
    write_skill(tmp_path, "a", "a", "a", body="old")
    tool = load_skill_tool(discover_skills([tmp_path]).skills)
    write_skill(tmp_path, "a", "a", "a", body="new")
    output = await tool.handler(ctx, {"name": "a"})
    assert "\nnew\n</skill>" in output.content


async def test_unknown_and_broken_skills_are_errors(tmp_path: Path, ctx: ToolContext) -> None:
    folder = write_skill(tmp_path, "a", "a", "a")
    tool = load_skill_tool(discover_skills([tmp_path]).skills)
    unknown = await tool.handler(ctx, {"name": "zzz"})
    assert (unknown.status, unknown.content) == (
        ToolStatus.ERROR,
        "no skill named 'zzz' (available: a)",
    )
    (folder / "SKILL.md").write_text("broken")
    broken = await tool.handler(ctx, {"name": "a"})
    assert broken.status is ToolStatus.ERROR
    assert "bad frontmatter" in broken.content


def test_extra_arguments_are_rejected_by_the_schema(tmp_path: Path) -> None:
    registry = registry_with_skills(tmp_path)
    tool = registry.get("load_skill")
    assert tool is not None
    assert registry.validate(tool, {"name": "a", "x": 1}) is not None
