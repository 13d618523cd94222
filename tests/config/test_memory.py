"""Project memory: AGENTS.md and Claude Code's CLAUDE.md files, with `@path` imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rawtrio.config import CliOverrides, resolve_session_config
from rawtrio.config.agents_md import find_agents_files
from rawtrio.config.memory_imports import MAX_IMPORT_DEPTH, import_refs
from rawtrio.config.safe_read import UnsafeFileError


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "user.toml").write_text("")
    (tmp_path / "home").mkdir()
    return {
        "HOME": str(tmp_path / "home"),
        "RAWTRIO_CONFIG": str(tmp_path / "user.toml"),
        "RAWTRIO_STATE_DIR": str(tmp_path / "state"),
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def names(repo: Path, cwd: Path, env: dict[str, str]) -> list[str]:
    home = Path(env["HOME"])
    out = []
    for f in find_agents_files(cwd, env).files:
        base = home if f.path.is_relative_to(home) else repo
        out.append(f.path.relative_to(base).as_posix())
    return out


def test_claude_md_files_are_read_like_agents_md(
    tmp_path: Path, repo: Path, env: dict[str, str]
) -> None:
    """Regression: CLAUDE.md (root, nested, ~/.claude/CLAUDE.md) was never read."""
    write(Path(env["HOME"]) / ".claude" / "CLAUDE.md", "user memory")
    write(repo / "CLAUDE.md", "root claude")
    write(repo / "AGENTS.md", "root agents")
    write(repo / "CLAUDE.local.md", "root local")
    write(repo / "pkg" / ".claude" / "CLAUDE.md", "pkg dot-claude")
    write(repo / "pkg" / "CLAUDE.md", "pkg claude")
    write(repo / "pkg" / "deeper" / "CLAUDE.md", "below the cwd")
    assert names(repo, repo / "pkg", env) == [
        ".claude/CLAUDE.md",
        "AGENTS.md",
        "CLAUDE.md",
        "CLAUDE.local.md",
        "pkg/CLAUDE.md",
        "pkg/.claude/CLAUDE.md",
    ]
    agent = resolve_session_config(CliOverrides(), repo / "pkg", env)
    prompt = agent.system_prompt("BASE")
    order = ["user memory", "root agents", "root claude", "root local", "pkg claude"]
    assert [prompt.index(t) for t in order] == sorted(prompt.index(t) for t in order)
    assert "below the cwd" not in prompt


def test_a_claude_md_linked_to_agents_md_is_read_once(repo: Path, env: dict[str, str]) -> None:
    write(repo / "AGENTS.md", "shared rules")
    (repo / "CLAUDE.md").symlink_to("AGENTS.md")
    files = find_agents_files(repo, env)
    assert [f.path.name for f in files.files] == ["AGENTS.md"]
    assert files.prompt_section().count("shared rules") == 1


def test_imports_are_read_after_their_file_once_and_relative_to_it(
    repo: Path, env: dict[str, str]
) -> None:
    write(
        repo / "CLAUDE.md",
        "See @README.md and @docs/git.md for more.\n"
        "Mail me@example.com, ask @octocat.\n"
        "`@not/an/import.md`\n```\n@also/not.md\n```\n",
    )
    write(repo / "README.md", "readme text, see @docs/git.md")
    write(repo / "docs" / "git.md", "git rules: see @../README.md")
    files = find_agents_files(repo, env)
    assert [(f.path.relative_to(repo).as_posix(), f.imported_by) for f in files.files] == [
        ("CLAUDE.md", None),
        ("README.md", repo / "CLAUDE.md"),
        ("docs/git.md", repo / "README.md"),
    ]
    assert files.notices == ()
    section = files.prompt_section()
    assert f"Instructions from {repo / 'README.md'} (imported by {repo / 'CLAUDE.md'})" in section


def test_an_import_out_of_the_project_is_refused_with_a_notice(
    tmp_path: Path, repo: Path, env: dict[str, str]
) -> None:
    secret = write(tmp_path / "secret.txt", "do not read")
    write(repo / "CLAUDE.md", f"@{secret}\n@../secret.txt\n@missing/file.md\n")
    files = find_agents_files(repo, env)
    assert [f.path.name for f in files.files] == ["CLAUDE.md"]
    assert "do not read" not in files.prompt_section()
    claude = repo / "CLAUDE.md"
    assert files.notices[0].startswith(f"{claude}: @{secret}: resolves to ")
    assert "outside" in files.notices[0]
    assert files.notices[1].startswith(f"{claude}: @../secret.txt: resolves to ")
    assert files.notices[2] == (
        f"{claude}: @missing/file.md: no such file ({repo / 'missing/file.md'}); not imported"
    )


def test_the_users_memory_may_import_from_home(repo: Path, env: dict[str, str]) -> None:
    home = Path(env["HOME"])
    write(home / ".claude" / "CLAUDE.md", "@~/notes/style.md")
    write(home / "notes" / "style.md", "my style")
    files = find_agents_files(repo, env)
    assert [f.text for f in files.files] == ["@~/notes/style.md", "my style"]


def test_imports_nest_at_most_five_deep(repo: Path, env: dict[str, str]) -> None:
    for i in range(MAX_IMPORT_DEPTH + 2):
        write(repo / f"m{i}.md", f"level {i} @m{i + 1}.md")
    write(repo / "CLAUDE.md", "@m0.md")
    files = find_agents_files(repo, env)
    assert len(files.files) == 1 + MAX_IMPORT_DEPTH
    (notice,) = files.notices
    assert notice == (
        f"{repo / f'm{MAX_IMPORT_DEPTH - 1}.md'}: imports @m{MAX_IMPORT_DEPTH}.md not followed: "
        f"imports nest at most {MAX_IMPORT_DEPTH} levels deep"
    )


def test_an_import_cycle_ends(repo: Path, env: dict[str, str]) -> None:
    write(repo / "CLAUDE.md", "@a.md")
    write(repo / "a.md", "@CLAUDE.md @a.md")
    assert [f.path.name for f in find_agents_files(repo, env).files] == ["CLAUDE.md", "a.md"]


def test_a_claude_md_linked_out_of_the_project_is_an_error(
    tmp_path: Path, repo: Path, env: dict[str, str]
) -> None:
    write(tmp_path / "elsewhere.md", "secret")
    (repo / "CLAUDE.md").symlink_to(tmp_path / "elsewhere.md")
    with pytest.raises(UnsafeFileError, match=r"CLAUDE\.md"):
        find_agents_files(repo, env)


def test_import_refs_keep_paths_and_drop_punctuation() -> None:
    text = "(see @a/b.md), @c.md.\n  @~/x.md\n~~~\n@no.md\n~~~\n"
    assert import_refs(text) == ["a/b.md", "c.md", "~/x.md"]


def test_config_check_lists_the_memory_files(
    tmp_path: Path, repo: Path, env: dict[str, str]
) -> None:
    write(repo / "AGENTS.md", "a @docs/x.md")
    write(repo / "docs" / "x.md", "x")
    write(repo / "CLAUDE.local.md", "b")
    done = subprocess.run(
        [sys.executable, "-m", "rawtrio", "config", "check"],
        cwd=repo,
        env={**env, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).parents[2])},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (
        "project memory (AGENTS.md, CLAUDE.md):\n"
        f"  {repo / 'AGENTS.md'}\n"
        f"  {repo / 'docs/x.md'} (imported by {repo / 'AGENTS.md'})\n"
        f"  {repo / 'CLAUDE.local.md'}\n"
    ) in done.stdout
