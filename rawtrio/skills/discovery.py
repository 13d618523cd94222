"""Find skills: folders holding a `SKILL.md` (Agent Skills format) under a few roots.

Roots, in precedence order (`skill_roots`): rawtrio's own first — the user's skills
(`<platformdirs user config>/rawtrio/skills`), the project's (`.rawtrio/skills/` in every
folder from the working directory up to the project root, nearest first), then the
`skill_dirs` of the config (a relative entry taken against the project root) — and after
them Claude Code's: `~/.claude/skills`, then `.claude/skills` from the working directory
up to the project root. When two roots hold a skill of the same name, the earlier root
wins and the later one is reported as shadowed — the user's own skills cannot be replaced
by a repository's, and rawtrio's win over Claude Code's.

A skill whose SKILL.md is unreadable, too large or has bad frontmatter is skipped with a
warning naming the file; discovery never raises for a bad skill. A description longer than
the format's limit (1024 characters) is cut there, with a warning: real skills exceed it,
and a skill that loads with a shorter description is more use than one that is skipped.

SKILL.md is read through `rawtrio.config.safe_read` (a regular file, opened without
blocking, size-capped, never under /proc, /sys or /dev). A root inside the project (the
project's `.rawtrio/skills`, or a `skill_dirs` entry pointing into it) is confined to the
project: a SKILL.md there that is a symlink out of the project is skipped with a warning.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from rawtrio.config.folders import folders_up_to_root, project_root
from rawtrio.config.safe_read import UnsafeFileError, read_bounded
from rawtrio.config.user_path import user_config_dir

if TYPE_CHECKING:
    from rawtrio.skills.frontmatter import Value

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
    #: A warning about a skill that loads anyway (its description was cut).
    notice: str | None = None

    @property
    def file(self) -> Path:
        return self.path / SKILL_FILE


@dataclass(frozen=True, slots=True)
class Discovery:
    skills: tuple[Skill, ...]
    #: One line per skipped or shadowed skill, each naming the file.
    warnings: tuple[str, ...]


def skill_roots(
    cwd: Path, skill_dirs: Sequence[str] = (), *, home: Path | None = None
) -> tuple[tuple[Path, ...], tuple[str, ...]]:
    """The roots `discover_skills` searches, in precedence order (module docstring), and a
    warning for each `skill_dirs` entry that is not a folder. A relative entry is taken
    against the project root (the repository root, else `cwd`), wherever it was written.
    `home` is where `~/.claude/skills` is looked for (the session's HOME; this process's
    when None)."""
    root = project_root(cwd)
    upward = folders_up_to_root(cwd)
    user = user_config_dir() / "skills"
    roots: list[Path] = [user, *(folder / ".rawtrio" / "skills" for folder in upward)]
    warnings: list[str] = []
    for entry in skill_dirs:
        given = Path(entry).expanduser()
        path = given if given.is_absolute() else root / given
        if not path.is_dir():
            what = "does not exist" if not os.path.lexists(path) else "is not a folder"
            warnings.append(f"skill_dirs: {entry!r} ({path}) {what}; no skills read from it")
            continue
        roots.append(path)
    roots.append((home or Path.home()) / ".claude" / "skills")
    roots += [folder / ".claude" / "skills" for folder in upward]
    # One root named twice (a `skill_dirs` entry that is `.claude/skills`, the cwd that is
    # the root) is searched once, where it first appears.
    unique = {os.path.realpath(r): r for r in reversed(roots)}
    return tuple(reversed(unique.values())), tuple(warnings)


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
            if skill.notice is not None:
                warnings.append(skill.notice)
    return Discovery(tuple(sorted(found.values(), key=lambda s: s.name)), tuple(warnings))


class SkillError(ValueError):
    """A skill that cannot be loaded; the message names the file and what to fix."""


def load_skill_file(folder: Path, *, within: Path | None = None) -> Skill:
    """Read and check `folder/SKILL.md` (confined to `within` when given). SkillError says
    what is wrong."""
    # The parser is loaded by the first SKILL.md found: most folders have none.
    from rawtrio.skills.frontmatter import FrontmatterError, parse_frontmatter, split_frontmatter

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
    description, cut = _description(file, meta)
    extra = {k: v for k, v in meta.items() if k not in ("name", "description")}
    return Skill(
        name=name,
        description=description,
        path=folder,
        body=body.lstrip("\n"),
        sha256=hashlib.sha256(raw).hexdigest(),
        extra=MappingProxyType(extra),
        within=within,
        notice=cut,
    )


def _description(file: Path, meta: Mapping[str, Value]) -> tuple[str, str | None]:
    """The description with whitespace collapsed, cut at `MAX_DESCRIPTION` characters (and
    the warning saying so)."""
    text = " ".join(_required(file, meta, "description", None).split())
    if len(text) <= MAX_DESCRIPTION:
        return text, None
    cut = text[: MAX_DESCRIPTION - 1].rstrip() + "…"
    return cut, (
        f"{file}: 'description' is {len(text)} characters, over the format's limit of "
        f"{MAX_DESCRIPTION}; cut to {MAX_DESCRIPTION} (shorten it in SKILL.md)"
    )


def _required(file: Path, meta: Mapping[str, Value], key: str, limit: int | None) -> str:
    value = meta.get(key)
    if not isinstance(value, str) or not value.strip():
        raise SkillError(f"{file}: frontmatter needs a non-empty text {key!r}; skipped")
    value = value.strip()
    if limit is not None and len(value) > limit:
        raise SkillError(f"{file}: {key!r} is longer than {limit} characters; skipped")
    return value


def _skill_folders(root: Path) -> list[Path]:
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return []
    # lexists: a SKILL.md that is a FIFO or a dangling link is reported, not skipped silently.
    return [e for e in entries if not e.name.startswith(".") and os.path.lexists(e / SKILL_FILE)]
