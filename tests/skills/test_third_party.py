"""Real skills from Anthropic's public repository load as they are.

The committed fixtures (tests/fixtures/third_party/anthropics-skills, Apache-2.0, see its
PROVENANCE.md) are the ones that may be redistributed. Every skill of a checkout of
github.com/anthropics/skills (17 at commit 9d2f1ae, some under licences that forbid
redistribution) is checked by `python -m tests.skills.check_anthropic_skills CHECKOUT`.
"""

from __future__ import annotations

from pathlib import Path

from rawtrio.skills import discover_skills, load_skill_file
from rawtrio.skills.discovery import MAX_DESCRIPTION

FIXTURES = Path(__file__).parents[1] / "fixtures" / "third_party" / "anthropics-skills"


def test_the_committed_anthropic_skills_all_load() -> None:
    root = FIXTURES / "skills"
    folders = sorted(p.name for p in root.iterdir() if (p / "SKILL.md").is_file())
    found = discover_skills([root])
    assert [s.name for s in found.skills] == folders
    assert len(folders) == 4
    for skill in found.skills:
        assert 0 < len(skill.description) <= MAX_DESCRIPTION
        assert skill.body.strip()
        assert skill.extra.get("license") == "Complete terms in LICENSE.txt"


def test_the_claude_api_skills_long_description_is_cut_not_skipped() -> None:
    """Regression: its 1,000+-character description made the skill be skipped."""
    skill = load_skill_file(FIXTURES / "skills" / "claude-api")
    assert skill.name == "claude-api"
    assert len(skill.description) == MAX_DESCRIPTION
    assert skill.notice is not None
    assert "over the format's limit of 1024; cut to 1024" in skill.notice
