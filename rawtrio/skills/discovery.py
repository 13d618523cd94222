"""Find skills: folders holding a `SKILL.md` (Agent Skills format) under a few roots.

Roots, in precedence order (`default_skill_roots`): the user's skills
(`<platformdirs user config>/rawtrio/skills`), the project's (`.rawtrio/skills/` in the
working directory), then extra paths from config. When two roots hold a skill of the same
name, the earlier root wins and the later one is reported as shadowed — the user's own
skills cannot be replaced by a repository's.

A skill whose SKILL.md is unreadable, too large or has bad frontmatter is skipped with a
warning naming the file; discovery never raises for a bad skill.

SKILL.md is read through `rawtrio.config.safe_read` (a regular file, opened without
blocking, size-capped, never under /proc, /sys or /dev). A root inside the project (the
project's `.rawtrio/skills`, or a `skill_dirs` entry pointing into it) is confined to the
project: a SKILL.md there that is a symlink out of the project is skipped with a warning.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Final

import platformdirs

from rawtrio.config.safe_read import UnsafeFileError, read_bounded
from rawtrio.skills.frontmatter import FrontmatterError, Value, parse_frontmatter, split_frontmatter

SKILL_FILE: Final = "SKILL.md"
#: A SKILL.md larger than this is skipped (skills are meant to be short; put the rest in
#: files next to it).
MAX_SKILL_BYTES: Final = 256 * 1024
MAX_NAME: Final = 64
MAX_DESCRIPTION: Final = 1024
_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    #: The folder holding SKILL.md.
    path: Path
    #: The markdown after the frontmatter, as read at discovery.
    body: str
    #: sha256 of the whole SKILL.md as read at discovery.
    sha256: str
    #: Every other frontmatter key (`license`, `allowed-tools`, `metadata`, …), unchecked.
    extra: Mapping[str, Value] = field(default_factory=lambda: MappingProxyType({}))
    #: The project folder SKILL.md must stay inside when read again (None: a user skill).
    within: Path | None = None

    @property
    def file(self) -> Path:
        return self.path / SKILL_FILE


@dataclass(frozen=True, slots=True)
class Discovery:
    skills: tuple[Skill, ...]
    #: One line per skipped or shadowed skill, each naming the file.
    warnings: tuple[str, ...]


def default_skill_roots(cwd: Path, extra: Iterable[Path] = ()) -> tuple[Path, ...]:
    """User dir, project dir, then `extra` — the precedence order `discover_skills` uses."""
    user = platformdirs.user_config_path("rawtrio") / "skills"
    return (user, cwd / ".rawtrio" / "skills", *extra)


def discover_skills(roots: Sequence[Path], *, project: Path | None = None) -> Discovery:
    """Every valid skill under `roots` (missing roots are fine), sorted by name. Roots
    inside `project` are read confined to it."""
    found: dict[str, Skill] = {}
    warnings: list[str] = []
    for root in roots:
        within = None
        if project is not None and root.absolute().is_relative_to(project):
            within = project
        for folder in _skill_folders(root):
            try:
                skill = load_skill_file(folder, within=within)
            except SkillError as exc:
                warnings.append(str(exc))
                continue
            if (first := found.get(skill.name)) is not None:
                warnings.append(
                    f"{skill.file}: skill {skill.name!r} is shadowed by {first.file}; skipped"
                )
                continue
            found[skill.name] = skill
    return Discovery(tuple(sorted(found.values(), key=lambda s: s.name)), tuple(warnings))


class SkillError(ValueError):
    """A skill that cannot be loaded; the message names the file and what to fix."""


def load_skill_file(folder: Path, *, within: Path | None = None) -> Skill:
    """Read and check `folder/SKILL.md` (confined to `within` when given). SkillError says
    what is wrong."""
    file = folder / SKILL_FILE
    try:
        raw = read_bounded(file, limit=MAX_SKILL_BYTES, within=within)
        text = raw.decode("utf-8")
    except UnsafeFileError as exc:
        raise SkillError(f"{file}: {exc.reason}; skipped") from None
    except UnicodeDecodeError:
        raise SkillError(f"{file}: not UTF-8 text; skipped") from None
    try:
        head, body, first_line = split_frontmatter(text)
        meta = parse_frontmatter(head, first_line)
    except FrontmatterError as exc:
        raise SkillError(f"{file}: bad frontmatter: {exc}; skipped") from None
    name = _required(file, meta, "name", MAX_NAME)
    if not _NAME.match(name):
        raise SkillError(
            f"{file}: name {name!r} may hold only letters, digits, '-', '_' and '.'; skipped"
        )
    description = _required(file, meta, "description", MAX_DESCRIPTION)
    extra = {k: v for k, v in meta.items() if k not in ("name", "description")}
    return Skill(
        name=name,
        description=" ".join(description.split()),
        path=folder,
        body=body.lstrip("\n"),
        sha256=hashlib.sha256(raw).hexdigest(),
        extra=MappingProxyType(extra),
        within=within,
    )


def _required(file: Path, meta: Mapping[str, Value], key: str, limit: int) -> str:
    value = meta.get(key)
    if not isinstance(value, str) or not value.strip():
        raise SkillError(f"{file}: frontmatter needs a non-empty text {key!r}; skipped")
    value = value.strip()
    if len(value) > limit:
        raise SkillError(f"{file}: {key!r} is longer than {limit} characters; skipped")
    return value


def _skill_folders(root: Path) -> list[Path]:
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return []
    # lexists: a SKILL.md that is a FIFO or a dangling link is reported, not skipped silently.
    return [e for e in entries if not e.name.startswith(".") and os.path.lexists(e / SKILL_FILE)]
