"""Checks on what rawtrio leaves on disk: 0600 files in 0700 folders (docs/security.md)."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

#: The umask most systems give a user: without rawtrio's care, files 0644, folders 0755.
DEFAULT_UMASK = 0o022


@contextlib.contextmanager
def default_umask() -> Iterator[None]:
    """This process (and the subprocesses it starts) under `DEFAULT_UMASK`, then restored."""
    old = os.umask(DEFAULT_UMASK)
    try:
        yield
    finally:
        os.umask(old)


def not_private(*roots: Path) -> list[str]:
    """Each folder under `roots` (themselves included) not 0700 and each file not 0600,
    as "path mode"; roots that do not exist are skipped."""
    found: list[str] = []
    for root in roots:
        if not root.exists():
            continue
        for path in [root, *sorted(root.rglob("*"))]:
            mode = stat.S_IMODE(path.lstat().st_mode)
            want = 0o700 if path.is_dir() else 0o600
            if mode != want:
                found.append(f"{path} {mode:04o}")
    return found


def files_under(*roots: Path) -> list[Path]:
    return [p for root in roots if root.exists() for p in sorted(root.rglob("*")) if p.is_file()]
