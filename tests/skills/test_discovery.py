from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from rawtrio.skills import discover_skills, skill_roots
from rawtrio.skills.discovery import MAX_DESCRIPTION, MAX_SKILL_BYTES
from tests.skills.conftest import write_skill

ANTHROPIC_STYLE = """---
name: pdf-processing
description: >-
  Extract text and tables from PDF files, fill forms, merge documents.
  Use when working with PDF files.
license: Apache-2.0
allowed-tools: Bash(python:*) Read
metadata:
  author: example-org
  version: "1.0"
---

# PDF processing

Run `scripts/extract.py` on the file.
"""


def test_a_skill_written_for_other_agents_loads_as_is(tmp_path: Path) -> None:
    folder = tmp_path / "pdf-processing"
    folder.mkdir()
    (folder / "SKILL.md").write_text(ANTHROPIC_STYLE)
    found = discover_skills([tmp_path])
    (skill,) = found.skills
    assert found.warnings == ()
    assert skill.name == "pdf-processing"
    assert skill.description == (
        "Extract text and tables from PDF files, fill forms, merge documents. "
        "Use when working with PDF files."
    )
    assert skill.body.startswith("# PDF processing\n")
    assert skill.extra["metadata"] == {"author": "example-org", "version": "1.0"}
    assert skill.extra["allowed-tools"] == "Bash(python:*) Read"
    assert skill.path == folder


def test_missing_roots_and_folders_without_skill_md_are_fine(tmp_path: Path) -> None:
    (tmp_path / "not-a-skill").mkdir()
    (tmp_path / ".hidden").mkdir()
    write_skill(tmp_path, ".hidden", "hidden", "never found")
    found = discover_skills([tmp_path / "missing", tmp_path])
    assert (found.skills, found.warnings) == ((), ())


def test_earlier_roots_win_and_shadowed_skills_are_reported(tmp_path: Path) -> None:
    user, project = tmp_path / "user", tmp_path / "project"
    write_skill(user, "review", "review", "the user's")
    shadowed = write_skill(project, "review", "review", "the project's")
    write_skill(project, "deploy", "deploy", "deploys")
    found = discover_skills([user, project])
    assert [(s.name, s.description) for s in found.skills] == [
        ("deploy", "deploys"),
        ("review", "the user's"),
    ]
    assert found.warnings == (
        f"{shadowed / 'SKILL.md'}: skill 'review' is shadowed by "
        f"{user / 'review' / 'SKILL.md'}; skipped",
    )


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("no frontmatter\n", "bad frontmatter: the file must start with a '---' line"),
        ("---\nname: a\n", "bad frontmatter: no closing '---'"),
        ("---\nname: &x a\ndescription: d\n---\n", "bad frontmatter: line 2: unsupported YAML"),
        ("---\ndescription: d\n---\n", "needs a non-empty text 'name'"),
        ("---\nname: a\n---\n", "needs a non-empty text 'description'"),
        ("---\nname: [a]\ndescription: d\n---\n", "needs a non-empty text 'name'"),
        ("---\nname: a b\ndescription: d\n---\n", "name 'a b' may hold only"),
    ],
)
def test_bad_skills_are_skipped_with_a_warning_naming_the_file(
    tmp_path: Path, content: str, problem: str
) -> None:
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "SKILL.md").write_text(content)
    write_skill(tmp_path, "good", "good", "still loads")
    found = discover_skills([tmp_path])
    assert [s.name for s in found.skills] == ["good"]
    (warning,) = found.warnings
    assert warning.startswith(f"{tmp_path / 'bad' / 'SKILL.md'}: ")
    assert problem in warning
    assert warning.endswith("skipped")


def test_non_utf8_and_oversized_files_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "latin").mkdir()
    (tmp_path / "latin" / "SKILL.md").write_bytes(b"---\nname: caf\xe9\n---\n")
    write_skill(tmp_path, "big", "big", "big", body="x" * MAX_SKILL_BYTES)
    found = discover_skills([tmp_path])
    assert found.skills == ()
    assert [w.split(": ", 1)[1] for w in found.warnings] == [
        f"is larger than {MAX_SKILL_BYTES} bytes; skipped",
        "not UTF-8 text; skipped",
    ]


def test_roots_are_rawtrios_own_then_skill_dirs_then_claude_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "extra").mkdir()
    sub = repo / "src" / "pkg"
    sub.mkdir(parents=True)
    roots, warnings = skill_roots(sub, ["extra", str(tmp_path / "gone")])
    assert roots == (
        platformdirs.user_config_path("rawtrio") / "skills",
        sub / ".rawtrio" / "skills",
        repo / "src" / ".rawtrio" / "skills",
        repo / ".rawtrio" / "skills",
        repo / "extra",
        tmp_path / "home" / ".claude" / "skills",
        sub / ".claude" / "skills",
        repo / "src" / ".claude" / "skills",
        repo / ".claude" / "skills",
    )
    assert warnings == (
        f"skill_dirs: {str(tmp_path / 'gone')!r} ({tmp_path / 'gone'}) does not exist; "
        "no skills read from it",
    )


def test_a_description_over_the_limit_is_cut_with_a_warning(tmp_path: Path) -> None:
    long = " ".join(["word"] * 300)  # 1,499 characters
    write_skill(tmp_path, "long", "long", long)
    found = discover_skills([tmp_path])
    (skill,) = found.skills
    assert len(skill.description) == MAX_DESCRIPTION
    assert skill.description.endswith("…")
    assert long.startswith(skill.description[:-1])
    assert found.warnings == (
        f"{tmp_path / 'long' / 'SKILL.md'}: 'description' is 1499 characters, over the "
        "format's limit of 1024; cut to 1024 (shorten it in SKILL.md)",
    )
