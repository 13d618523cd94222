"""Nested memory: a CLAUDE.md / AGENTS.md below the working directory reaches the model
with the first `read_file` result from its folder, once per session (as in Claude Code)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from rawtrio.app.options import prepare_session
from rawtrio.config.agents_md import NestedMemory, find_agents_files
from rawtrio.contracts import ToolStatus
from rawtrio.messages import ToolResult
from tests.conftest import session_on


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def project(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    write(repo / "CLAUDE.md", "root rules")
    write(repo / "pkg" / "CLAUDE.md", "pkg rules, see @notes.md")
    write(repo / "pkg" / "notes.md", "pkg notes")
    write(repo / "pkg" / "sub" / "AGENTS.md", "sub rules")
    write(repo / "pkg" / "sub" / "code.py", "x = 1\n")
    write(repo / "pkg" / "other.py", "y = 2\n")
    return repo


def test_files_below_the_cwd_are_offered_once_outermost_first(tmp_path: Path) -> None:
    repo = project(tmp_path)
    env = {"HOME": str(tmp_path / "home")}
    memory = NestedMemory(repo, env, find_agents_files(repo, env))
    first = memory.offer(Path("pkg/sub/code.py"))
    assert [f.path.relative_to(repo).as_posix() for f in first.files] == [
        "pkg/CLAUDE.md",
        "pkg/notes.md",
        "pkg/sub/AGENTS.md",
    ]
    assert memory.offer(repo / "pkg" / "other.py").files == ()  # already offered
    assert memory.offer(Path("CLAUDE.md")).files == ()  # the cwd's own: in the prompt
    assert memory.offer(tmp_path / "elsewhere" / "x.py").files == ()  # out of the cwd


async def test_reading_a_file_brings_its_folders_memory_into_the_result(tmp_path: Path) -> None:
    repo = project(tmp_path)
    env = {"HOME": str(tmp_path / "home")}
    memory = NestedMemory(repo, env, find_agents_files(repo, env))

    def offer(session_id: str, read: Path) -> str | None:
        return memory.note_for(read)

    reads = {
        "tool_calls": [
            {"name": "read_file", "arguments": {"path": "pkg/sub/code.py"}},
            {"name": "read_file", "arguments": {"files": [{"path": "pkg/other.py"}]}},
        ]
    }
    scenario = {"rules": [{"match": "*", "replies": [reads, {"text": "done"}]}]}
    async with session_on(scenario, "anthropic", repo, nested_memory=offer) as (session, _, _):
        await session.run_turn("read them")
    first, second = [m for m in session.context if isinstance(m, ToolResult)]
    assert (first.status, second.status) == (ToolStatus.OK, ToolStatus.OK)
    assert "x = 1" in first.content
    assert "y = 2" in second.content
    # The two reads are read-only calls of one reply, so they run side by side: pkg/'s
    # memory joins whichever result reaches it first, and each file is offered once.
    assert "[rawtrio: project instructions for this folder" in first.content
    assert "sub rules" in first.content
    both = first.content + second.content
    for text in ("pkg rules", "pkg notes", "sub rules"):
        assert both.count(text) == 1, text
    assert "root rules" not in both


async def test_a_session_set_up_from_the_config_offers_nested_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    repo = project(tmp_path)
    (tmp_path / "user.toml").write_text("")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RAWTRIO_CONFIG", str(tmp_path / "user.toml"))
    monkeypatch.setenv("RAWTRIO_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-value")
    setup = await prepare_session(argparse.Namespace(prompt="x", cwd=str(repo)), headless=True)
    offer = setup.options.nested_memory
    assert offer is not None
    assert "root rules" in (setup.options.system_prompt or "")
    note = offer("session-a", Path("pkg/sub/code.py"))
    assert note is not None
    assert "sub rules" in note
    assert offer("session-a", Path("pkg/sub/code.py")) is None
    assert offer("session-b", Path("pkg/sub/code.py")) is not None  # each session its own
