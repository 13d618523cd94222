"""Skills a project provides are read through the safe reader, confined to the project."""

from __future__ import annotations

import os
from pathlib import Path

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
