"""Skills: folders with a SKILL.md (Agent Skills format) the model loads on demand
(docs/skills.md)."""

from __future__ import annotations

from rawtrio.skills.catalog import changed_skills, skill_fingerprints, skills_prompt
from rawtrio.skills.discovery import (
    Discovery,
    Skill,
    SkillError,
    discover_skills,
    load_skill_file,
    skill_roots,
)
from rawtrio.skills.tool import load_skill_tool

__all__ = [
    "Discovery",
    "Skill",
    "SkillError",
    "changed_skills",
    "discover_skills",
    "load_skill_file",
    "load_skill_tool",
    "skill_fingerprints",
    "skill_roots",
    "skills_prompt",
]
