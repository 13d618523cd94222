"""Where the session database lives.

`RAWTRIO_STATE_DIR` overrides the directory (tests, portable installs); otherwise it is
the platform's user state directory (`platformdirs`, which honours `XDG_STATE_HOME`).
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

STATE_DIR_ENV = "RAWTRIO_STATE_DIR"
DB_NAME = "sessions.db"


def state_dir() -> Path:
    override = os.environ.get(STATE_DIR_ENV)
    if override:
        return Path(override).expanduser()
    return platformdirs.user_state_path("rawtrio")


def default_db_path() -> Path:
    """The database file the CLI opens when no path is configured."""
    return state_dir() / DB_NAME


def fallback_paths(path: Path) -> list[Path]:
    """Where new sessions go, in order, when `path` is a database rawtrio cannot use.

    Deterministic, so every later start finds the same replacement file again.
    """
    return [path.with_name(f"{path.stem}.{n}{path.suffix}") for n in range(2, 12)]
