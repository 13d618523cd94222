"""What the model is told about skills, and what it is told when they change.

The system prompt lists each skill's name and description (`skills_prompt`); the model
reads a body with the `load_skill` tool. The prompt is fixed when a session is created and
committed history is never rewritten (docs/contracts.md), so when a resumed session finds a skill
changed, added or removed, `changed_skills` gives a notice for the next user message.
`skill_fingerprints` is what the session stores to compare against on the next run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rawtrio.skills.discovery import Skill


def skills_prompt(skills: Sequence[Skill]) -> str:
    """The skills section of the system prompt; empty when there are no skills."""
    if not skills:
        return ""
    lines = [
        "# Skills",
        "Skills are instructions and files for particular tasks. When a task matches a "
        "skill's description, call the load_skill tool with its name and follow what it "
        "says before you start. Load a skill only when you need it.",
        "",
    ]
    lines += [f"- {s.name}: {s.description}" for s in skills]
    return "\n".join(lines)


def skill_fingerprints(skills: Sequence[Skill]) -> dict[str, str]:
    """name → sha256 of its SKILL.md, to store with the session."""
    return {s.name: s.sha256 for s in skills}


def changed_skills(
    old: Mapping[str, str], new: Mapping[str, str], *, skills: Sequence[Skill] = ()
) -> str | None:
    """A notice for the next user message when skills differ between runs, else None.

    `skills` (the current ones) supply descriptions for added skills.
    """
    changed = sorted(n for n in new if n in old and new[n] != old[n])
    added = sorted(n for n in new if n not in old)
    removed = sorted(n for n in old if n not in new)
    if not (changed or added or removed):
        return None
    described = {s.name: s.description for s in skills}
    lines = ["[rawtrio: skills changed since this session last ran."]
    lines += [
        f"- {n} was updated: if you loaded it earlier in this conversation, that copy is out "
        "of date; load it again with load_skill before you use it."
        for n in changed
    ]
    lines += [
        f"- {n} is new: {described[n]}" if n in described else f"- {n} is new." for n in added
    ]
    lines += [f"- {n} was removed: do not use it any more." for n in removed]
    return "\n".join(lines) + "]"
