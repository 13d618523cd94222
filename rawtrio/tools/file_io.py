"""Blocking file helpers shared by the file tools; call them through `trio.to_thread`.

Writes are atomic: the new content goes to a temporary file in the target's directory,
is flushed to disk, takes over the mode of the file it replaces, and is renamed over it
with `os.replace`, so a reader (or a crash) sees the old file or the new one, never half
of one. A symlink is written through (its target is replaced, the link stays).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path
from typing import Final

#: A file whose first bytes hold a NUL byte is treated as binary.
SNIFF_BYTES: Final = 8192


class FileToolError(Exception):
    """A failure to report to the model as an `error` result, with this message."""


def is_binary(head: bytes) -> bool:
    return b"\0" in head[:SNIFF_BYTES]


def atomic_write(path: Path, data: bytes) -> bool:
    """Create or replace `path` with `data`, creating parent directories.

    Returns True when the file was created, False when an existing one was replaced.
    """
    target = Path(os.path.realpath(path))
    try:
        mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".rawtrio-{secrets.token_hex(6)}.tmp"
    # 0o666 lets the umask decide a new file's mode, as for any other program.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return mode is None


def read_text_for_edit(path: Path, max_bytes: int) -> str:
    """The whole file as text; FileToolError when it is not an editable text file."""
    if path.is_dir():
        raise FileToolError(f"{path} is a directory, not a file")
    size = path.stat().st_size
    if size > max_bytes:
        raise FileToolError(
            f"{path} is too large to edit ({size} bytes; the limit is {max_bytes}); "
            f"use bash with a tool like sed for large files"
        )
    data = path.read_bytes()
    if is_binary(data):
        raise FileToolError(f"{path} looks like a binary file (it contains NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FileToolError(
            f"{path} is not valid UTF-8 text (undecodable byte at offset {e.start}); "
            f"it cannot be edited safely with edit_file"
        ) from None


def describe_os_error(error: OSError, shown: str) -> str:
    """A short message naming the path and the problem, for the model."""
    if isinstance(error, FileNotFoundError):
        return f"no such file or directory: {shown}"
    if isinstance(error, IsADirectoryError):
        return f"{shown} is a directory, not a file"
    if isinstance(error, NotADirectoryError):
        return f"a part of the path {shown} is not a directory"
    if isinstance(error, PermissionError):
        return f"permission denied: {shown}"
    reason = error.strerror or str(error)
    return f"{reason}: {shown}"


def display_path(path: Path, cwd: Path) -> str:
    """`path` relative to the working directory when it is inside it, else absolute."""
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def unified_diff(before: str, after: str, shown: str, cap: int) -> str:
    """A unified diff of two texts, cut at `cap` characters."""
    import difflib  # loaded by the first edit that reports a diff

    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{shown}",
        tofile=f"b/{shown}",
    )
    diff = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    if len(diff) > cap:
        diff = diff[:cap] + f"\n[... diff cut at {cap} characters ...]\n"
    return diff.rstrip("\n")


def decode_for_edit(data: bytes, shown: str) -> str:
    """`data` as text; FileToolError when it is binary or not UTF-8."""
    if is_binary(data):
        raise FileToolError(f"{shown} looks like a binary file (it contains NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FileToolError(
            f"{shown} is not valid UTF-8 text (undecodable byte at offset {e.start}); "
            f"it cannot be edited safely with the file tools"
        ) from None
