"""Skills a project provides are read through the safe reader, confined to the project."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rawtrio.app.options import prepare_session
from rawtrio.cli.main import build_parser
from rawtrio.skills import discover_skills

SKILL = "---\nname: {name}\ndescription: does {name}\n---\nBody of {name}.\n"


def test_a_project_skill_linked_out_of_the_project_is_skipped(tmp_path: Path) -> None:
    project = tmp_path / "project"
    root = project / ".rawtrio" / "skills"
    (root / "good").mkdir(parents=True)
    (root / "good" / "SKILL.md").write_text(SKILL.format(name="good"))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "SKILL.md").write_text(SKILL.format(name="stolen"))
    (root / "escape").mkdir()
    (root / "escape" / "SKILL.md").symlink_to(outside / "SKILL.md")
    found = discover_skills([root], project=project)
    assert [s.name for s in found.skills] == ["good"]
    (warning,) = found.warnings
    assert warning.startswith(f"{root / 'escape' / 'SKILL.md'}: resolves to ")
    assert "outside" in warning
    assert found.skills[0].within == project


def test_a_skill_file_that_is_a_fifo_is_skipped_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "piped").mkdir()
    os.mkfifo(tmp_path / "piped" / "SKILL.md")
    found = discover_skills([tmp_path])
    assert found.skills == ()
    assert found.warnings == (
        f"{tmp_path / 'piped' / 'SKILL.md'}: is a FIFO (named pipe), not a regular file; skipped",
    )


def test_a_users_skill_may_link_anywhere_but_proc(tmp_path: Path) -> None:
    user = tmp_path / "user-skills"
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "SKILL.md").write_text(SKILL.format(name="shared"))
    (user / "shared").mkdir(parents=True)
    (user / "shared" / "SKILL.md").symlink_to(shared / "SKILL.md")
    (user / "env").mkdir()
    (user / "env" / "SKILL.md").symlink_to("/proc/self/environ")
    found = discover_skills([user], project=tmp_path / "project")
    assert [s.name for s in found.skills] == ["shared"]
    (warning,) = found.warnings
    assert "never reads files under /proc" in warning


async def session_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repo: Path
) -> tuple[str, tuple[str, ...]]:
    """The system prompt and notices of a session set up in `repo`, the user's config file
    being tmp_path/user.toml and `~` tmp_path/home."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.setenv("RAWTRIO_CONFIG", str(tmp_path / "user.toml"))
    monkeypatch.setenv("RAWTRIO_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-skill-dirs")
    args = build_parser().parse_args(["-p", "hi", "--cwd", str(repo)])
    setup = await prepare_session(args, headless=True)
    return setup.options.system_prompt or "", setup.notices


def skills_in(tmp_path: Path, *where: tuple[str, str]) -> Path:
    """A repository at tmp_path/work/repo, and a skill NAME in each folder (tmp-relative)."""
    repo = tmp_path / "work" / "repo"
    (repo / ".git").mkdir(parents=True)
    for folder, name in where:
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "SKILL.md").write_text(SKILL.format(name=name))
    (tmp_path / "user.toml").write_text("")
    return repo


async def test_a_projects_skill_dirs_never_reach_outside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through session setup: a project's `skill_dirs` naming folders outside the project
    (`~`, `../..`, absolute) add no skill to the prompt, each skipped with a notice."""
    repo = skills_in(
        tmp_path,
        ("home/.ssh/keys", "ssh"),
        ("work/other/s", "other"),
        ("abs/s", "absolute"),
        ("work/repo/tools/skills/s", "inside"),
    )
    config = repo / ".rawtrio" / "config.toml"
    config.parent.mkdir()
    config.write_text(f'skill_dirs = ["~/.ssh", "../other", "{tmp_path}/abs", "tools/skills"]\n')
    prompt, notices = await session_prompt(tmp_path, monkeypatch, repo)
    assert "- inside: does inside" in prompt
    for name in ("ssh", "other", "absolute"):
        assert f"does {name}" not in prompt
    skipped = [n for n in notices if "outside the project" in n]
    assert [n.split(" resolves")[0] for n in skipped] == [
        f"{config}: skill_dirs[0] = '~/.ssh'",
        f"{config}: skill_dirs[1] = '../other'",
        f"{config}: skill_dirs[2] = '{tmp_path}/abs'",
    ]


async def test_the_users_skill_dirs_may_be_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = skills_in(tmp_path, ("team/s", "team"))
    (tmp_path / "user.toml").write_text(f'skill_dirs = ["{tmp_path}/team"]\n')
    prompt, notices = await session_prompt(tmp_path, monkeypatch, repo)
    assert "- team: does team" in prompt
    assert notices == ()


async def test_relative_skill_dirs_are_taken_against_the_project_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: `skill_dirs = ["shared/skills"]` in `.rawtrio/config.toml` meant
    `.rawtrio/shared/skills`; it is the project's `shared/skills`, also from a subfolder."""
    repo = skills_in(tmp_path, ("work/repo/shared/skills/s", "shared"))
    config = repo / ".rawtrio" / "config.toml"
    config.parent.mkdir()
    config.write_text('skill_dirs = ["shared/skills", "missing/skills"]\n')
    (repo / "src" / "deep").mkdir(parents=True)
    prompt, notices = await session_prompt(tmp_path, monkeypatch, repo / "src" / "deep")
    assert "- shared: does shared" in prompt
    assert notices == (
        f"skill_dirs: {str(repo / 'missing' / 'skills')!r} ({repo / 'missing' / 'skills'}) "
        "does not exist; no skills read from it",
    )


async def test_the_users_relative_skill_dirs_are_taken_against_the_project_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = skills_in(tmp_path, ("work/repo/team-skills/s", "team"))
    (tmp_path / "user.toml").write_text('skill_dirs = ["team-skills"]\n')
    prompt, notices = await session_prompt(tmp_path, monkeypatch, repo)
    assert "- team: does team" in prompt
    assert notices == ()


async def test_claude_code_skills_and_the_roots_rawtrio_skills_are_found_from_a_subfolder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: run from a subfolder, the repository root's `.rawtrio/skills` was
    missed, and `.claude/skills` / `~/.claude/skills` were never read. A name both define
    is rawtrio's, and the Claude Code copy is reported as shadowed."""
    repo = skills_in(
        tmp_path,
        ("work/repo/.rawtrio/skills/own", "own"),
        ("work/repo/.rawtrio/skills/both", "both"),
        ("work/repo/.claude/skills/claude", "claude"),
        ("work/repo/.claude/skills/both", "both"),
        ("home/.claude/skills/personal", "personal"),
    )
    (repo / "src").mkdir()
    prompt, notices = await session_prompt(tmp_path, monkeypatch, repo / "src")
    for name in ("own", "both", "claude", "personal"):
        assert f"- {name}: does {name}" in prompt
    assert prompt.count("- both:") == 1
    claude_both = repo / ".claude" / "skills" / "both" / "SKILL.md"
    rawtrio_both = repo / ".rawtrio" / "skills" / "both" / "SKILL.md"
    assert notices == (f"{claude_both}: skill 'both' is shadowed by {rawtrio_both}; skipped",)


async def test_claude_skills_come_from_the_sessions_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a host, a session resolves against its client's environment: `~/.claude/skills`
    is the client's HOME, not the host process's."""
    repo = skills_in(
        tmp_path,
        ("client/.claude/skills/mine", "mine"),
        ("host/.claude/skills/hosts", "hosts"),
    )
    monkeypatch.setenv("HOME", str(tmp_path / "host"))
    env = {
        "HOME": str(tmp_path / "client"),
        "RAWTRIO_CONFIG": str(tmp_path / "user.toml"),
        "RAWTRIO_STATE_DIR": str(tmp_path / "state"),
        "ANTHROPIC_API_KEY": "sk-ant-test-skill-dirs",
    }
    args = build_parser().parse_args(["-p", "hi", "--cwd", str(repo)])
    setup = await prepare_session(args, headless=True, env=env)
    prompt = setup.options.system_prompt or ""
    assert "- mine: does mine" in prompt
    assert "hosts" not in prompt


def test_config_check_lists_the_skills_and_what_was_shadowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rawtrio.cli.main import run

    repo = skills_in(
        tmp_path,
        ("work/repo/.rawtrio/skills/both", "both"),
        ("work/repo/.claude/skills/both", "both"),
        ("work/repo/.claude/skills/claude", "claude"),
    )
    monkeypatch.chdir(repo)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.setenv("RAWTRIO_CONFIG", str(tmp_path / "user.toml"))
    monkeypatch.setenv("RAWTRIO_STATE_DIR", str(tmp_path / "state"))
    assert run(["config", "check"]) == 0
    out, err = capsys.readouterr()
    assert (
        f"skills:\n  both  {repo / '.rawtrio/skills/both'}\n"
        f"  claude  {repo / '.claude/skills/claude'}\n"
    ) in out
    assert f"skill 'both' is shadowed by {repo / '.rawtrio/skills/both/SKILL.md'}" in err
