"""Where the session database lives.

`RAWTRIO_STATE_DIR` overrides the directory (tests, portable installs); otherwise it is
the platform's user state directory (`platformdirs`' folder, which honours
`XDG_STATE_HOME`; `rawtrio.user_dirs`).
"""

from __future__ import annotations

import os
from pathlib import Path

from rawtrio.private_files import private_file, tighten

STATE_DIR_ENV = "RAWTRIO_STATE_DIR"
DB_NAME = "sessions.db"
#: The files SQLite keeps beside a database (WAL mode, and rollback mode before it).
SIDECARS = ("-wal", "-shm", "-journal")


def state_dir() -> Path:
    override = os.environ.get(STATE_DIR_ENV)
    if override:
        return Path(override).expanduser()
    from rawtrio.user_dirs import user_dir  # platformdirs' folder, mostly without it

    return user_dir("state")


def default_db_path() -> Path:
    """The database file the CLI opens when no path is configured."""
    return state_dir() / DB_NAME


def fallback_paths(path: Path) -> list[Path]:
    """Where new sessions go, in order, when `path` is a database rawtrio cannot use.

    Deterministic, so every later start finds the same replacement file again.
    """
    return [path.with_name(f"{path.stem}.{n}{path.suffix}") for n in range(2, 12)]


def prepare_db_file(path: Path) -> None:
    """Before SQLite opens `path`: the file exists, 0600, in a 0700 folder.

    SQLite creates its `-wal`, `-shm` and `-journal` files with the database file's mode,
    so creating the database first makes them private too; ones left looser by an older
    rawtrio are tightened (with a notice), like the database itself.
    """
    private_file(path)
    for suffix in SIDECARS:
        tighten(path.with_name(path.name + suffix))
