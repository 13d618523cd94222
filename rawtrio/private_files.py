"""Files rawtrio keeps for the user alone: 0600 files in 0700 directories, whatever the umask.

Transcripts, prompts, logs, input history, tokens and trust records are the user's; another
local user must not read them. Every writer under rawtrio's state, config and cache
directories goes through this module:

- `private_dir(path)` creates the missing folders of `path` with mode 0700 (each one, not
  only the last: `Path.mkdir(parents=True)` gives parents the umask's default) and tightens
  an existing folder that is one of rawtrio's own (`own_roots`) or inside one;
- `private_file(path)` makes sure `path` exists as a 0600 file (for a library that opens it
  afterwards: SQLite, which gives its `-wal`/`-shm`/`-journal` files the database file's
  mode, and `logging.FileHandler`);
- `open_private(path, mode)` opens a file for writing or appending, created 0600;
- `write_private(path, text)` replaces a file atomically with a 0600 one.

Modes are set with `fchmod`/`chmod` after creation rather than by changing the process
umask, which is process-wide and would race with other threads creating files.

A file or folder found looser than that is tightened when rawtrio opens it, and a one-line
notice naming it (relative to `~`) goes to the log (stderr for headless runs, the log file
for the full-screen chat) — once per path per process.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from pathlib import Path
from typing import IO, Final

FILE_MODE: Final = 0o600
DIR_MODE: Final = 0o700

log = logging.getLogger(__name__)
_noticed: set[Path] = set()


def own_roots() -> list[Path]:
    """rawtrio's own folders, which it tightens when it finds them looser than 0700.

    A folder the user chose for something else (the working directory for `config init
    --config ./x.toml`, say) is never tightened; only the folders rawtrio creates are.
    """
    from rawtrio.user_dirs import user_dir  # platformdirs' folders, mostly without it

    roots = [user_dir("state"), user_dir("config"), user_dir("cache"), user_dir("data")]
    for variable in ("RAWTRIO_STATE_DIR", "RAWTRIO_CACHE_DIR"):
        if value := os.environ.get(variable):
            roots.append(Path(value))
    return [_absolute(r) for r in roots]


def display(path: Path) -> str:
    """`path` for a message: relative to `~` when it is inside the home folder."""
    try:
        return "~/" + str(_absolute(path).relative_to(_absolute(Path.home())))
    except (ValueError, RuntimeError):
        return str(path)


def tighten(path: Path) -> bool:
    """Make an existing file 0600 (a folder 0700) when it is looser; True when it was.

    Only group and other bits count as looser (a file the user made read-only stays so);
    the notice is logged once per path. What another user owns, and a shared folder with
    the sticky bit (`RAWTRIO_STATE_DIR=/tmp`), are left alone: not ours to change.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    mode = stat.S_IMODE(st.st_mode)
    if not mode & 0o077 or st.st_uid != os.geteuid() or mode & stat.S_ISVTX:
        return False
    want = DIR_MODE if stat.S_ISDIR(st.st_mode) else FILE_MODE
    os.chmod(path, want)
    _notice(path, mode, want)
    return True


def private_dir(path: Path) -> Path:
    """Create `path` and its missing parents with mode 0700; tighten rawtrio's own folders."""
    path = _absolute(path)
    missing: list[Path] = []
    for candidate in [path, *path.parents]:
        if candidate.is_dir():
            break
        missing.append(candidate)
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            folder.mkdir(mode=DIR_MODE)
            os.chmod(folder, DIR_MODE)  # the umask may have removed owner bits
    roots = own_roots()
    for folder in [path, *path.parents]:
        if folder in missing:
            continue
        if not any(folder == r or folder.is_relative_to(r) for r in roots):
            break
        tighten(folder)
    return path


def private_file(path: Path) -> Path:
    """Make sure `path` exists as a 0600 file in a private folder (tightened if looser)."""
    private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    os.close(fd)
    tighten(path)
    return path


def open_private(path: Path, mode: str = "a", encoding: str = "utf-8") -> IO[str]:
    """Open a text file for writing (`"w"`) or appending (`"a"`), created 0600."""
    if mode not in ("a", "w"):
        raise ValueError(f"open_private mode must be 'a' or 'w', not {mode!r}")
    private_file(path)
    flags = os.O_WRONLY | os.O_CLOEXEC | (os.O_APPEND if mode == "a" else os.O_TRUNC)
    return os.fdopen(os.open(path, flags), mode, encoding=encoding)


def write_private(path: Path, data: str | bytes) -> Path:
    """Replace `path` atomically with a 0600 file holding `data`.

    A reader (or a crash) sees the old file or the new one; the temporary file is removed
    when writing fails.
    """
    import tempfile  # with shutil and random: loaded by the first file written

    private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _notice(path: Path, was: int, now: int) -> None:
    key = _absolute(path)
    if key in _noticed:
        return
    _noticed.add(key)
    log.warning(
        "tightened %s from %04o to %04o: rawtrio's files are for your user only",
        display(path),
        was,
        now,
    )


def _absolute(path: Path) -> Path:
    return Path(os.path.abspath(path.expanduser()))
