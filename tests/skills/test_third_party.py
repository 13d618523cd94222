"""Real skills from Anthropic's public repository load as they are.

The committed fixtures (tests/fixtures/third_party/anthropics-skills, Apache-2.0, see its
PROVENANCE.md) always run. With `RAWTRIO_ANTHROPIC_SKILLS` set to a checkout of
github.com/anthropics/skills, every skill in its `skills/` folder must load too (17 at
commit 9d2f1ae); without it that test skips, also under CI, since the checkout is optional
material rather than a prerequisite of the suite.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rawtrio.skills import discover_skills, load_skill_file
from rawtrio.skills.discovery import MAX_DESCRIPTION

FIXTURES = Path(__file__).parents[1] / "fixtures" / "third_party" / "anthropics-skills"
CHECKOUT_ENV = "RAWTRIO_ANTHROPIC_SKILLS"


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


def test_every_skill_of_a_checkout_loads() -> None:
    checkout = os.environ.get(CHECKOUT_ENV)
    if not checkout:
        pytest.skip(f"set {CHECKOUT_ENV} to a checkout of github.com/anthropics/skills")
    root = Path(checkout) / "skills"
    folders = sorted(p.name for p in root.iterdir() if (p / "SKILL.md").is_file())
    found = discover_skills([root])
    assert [s.name for s in found.skills] == folders
    assert len(folders) >= 17
    assert all("skipped" not in w for w in found.warnings), found.warnings
