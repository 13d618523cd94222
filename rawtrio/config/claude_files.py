"""Where Claude Code's settings files are (`rawtrio.config.claude_settings` reads them).

Light on purpose: every session looks, and most find none, so the reading (the mapping of
hooks and permission patterns) is loaded only for a file that exists.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final, Literal

from rawtrio.config.folders import folders_up_to_root

PROJECT_FILES: Final = (Path(".claude") / "settings.json", Path(".claude") / "settings.local.json")
USER_DIR_ENV: Final = "CLAUDE_CONFIG_DIR"
Kind = Literal["user", "project", "local"]


def find_settings_files(cwd: Path, env: Mapping[str, str]) -> list[tuple[Kind, Path]]:
    """The settings files that exist, lowest precedence first."""
    found: list[tuple[Kind, Path]] = []
    user = user_settings_dir(env) / "settings.json"
    if os.path.lexists(user):
        found.append(("user", user))
    for folder in folders_up_to_root(cwd):
        here = [folder / p for p in PROJECT_FILES]
        if not any(os.path.lexists(p) for p in here):
            continue
        if here[0].parent.resolve() == user.parent.resolve():
            continue  # the user's own folder, not a project's
        kinds: tuple[Kind, Kind] = ("project", "local")
        found.extend((k, p) for k, p in zip(kinds, here, strict=True) if os.path.lexists(p))
        break
    return found


def user_settings_dir(env: Mapping[str, str]) -> Path:
    explicit = env.get(USER_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    home = env.get("HOME")
    return (Path(home) if home else Path.home()) / ".claude"
