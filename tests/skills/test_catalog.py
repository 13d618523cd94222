from __future__ import annotations

from pathlib import Path

from rawtrio.skills import changed_skills, discover_skills, skill_fingerprints, skills_prompt
from tests.skills.conftest import write_skill


def test_prompt_lists_names_and_descriptions(tmp_path: Path) -> None:
    write_skill(tmp_path, "b", "beta", "does b")
    write_skill(tmp_path, "a", "alpha", "does a")
    prompt = skills_prompt(discover_skills([tmp_path]).skills)
    assert prompt.startswith("# Skills\n")
    assert "load_skill" in prompt
    assert prompt.endswith("- alpha: does a\n- beta: does b")


def test_no_skills_no_prompt_section() -> None:
    assert skills_prompt([]) == ""


def test_unchanged_skills_give_no_notice(tmp_path: Path) -> None:
    write_skill(tmp_path, "a", "alpha", "does a", body="v1")
    prints = skill_fingerprints(discover_skills([tmp_path]).skills)
    again = skill_fingerprints(discover_skills([tmp_path]).skills)
    assert changed_skills(prints, again) is None


def test_changed_added_and_removed_skills_give_a_notice(tmp_path: Path) -> None:
    write_skill(tmp_path, "a", "alpha", "does a", body="v1")
    write_skill(tmp_path, "g", "gone", "goes away")
    old = skill_fingerprints(discover_skills([tmp_path]).skills)
    write_skill(tmp_path, "a", "alpha", "does a", body="v2")
    (tmp_path / "g" / "SKILL.md").unlink()
    write_skill(tmp_path, "n", "new-one", "brand new")
    skills = discover_skills([tmp_path]).skills
    notice = changed_skills(old, skill_fingerprints(skills), skills=skills)
    assert notice == (
        "[rawtrio: skills changed since this session last ran.\n"
        "- alpha was updated: if you loaded it earlier in this conversation, that copy is "
        "out of date; load it again with load_skill before you use it.\n"
        "- new-one is new: brand new\n"
        "- gone was removed: do not use it any more.]"
    )
