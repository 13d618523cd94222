"""Reading the files rawtrio takes text from: config, AGENTS.md, prompt files, skills.

Every file rawtrio reads as configuration, project memory (AGENTS.md), an agent's prompt, a
skill or a `file` variable goes through `read_bounded` or `read_head`. The policy, in order:

1. The path is resolved with every symlink followed (`os.path.realpath(strict=True)`): a
   missing file or a symlink loop is an error naming the path, never silently "no file".
2. With `within` (a file a project provides), the resolved path must lie inside that folder:
   a committed `AGENTS.md -> /proc/self/environ` or `prompt_file = "../../secret.txt"`
   is refused, whatever the symlinks say.
3. Nothing under `/proc`, `/sys` or `/dev` is read: those are not files but windows on
   processes (environments holding API keys) and devices (endless `/dev/zero`).
4. The resolved path is opened with `O_NONBLOCK | O_NOFOLLOW`, so a FIFO cannot hang the
   open (and with it SIGTERM handling) and a symlink swapped in after step 1 fails; then
   `fstat` on the open descriptor must show a regular file — a FIFO, socket, device or
   folder is refused.
5. At most `limit + 1` bytes are read: a larger file is refused (`read_bounded`) or cut
   (`read_head`, for AGENTS.md, which documents that it is cut).

Every refusal is an `UnsafeFileError` (a `ConfigError`: exit code 2) whose message names the
file and what is wrong with it. Reads are synchronous and bounded; callers in trio run them
in a worker thread.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Final

from rawtrio.errors import ConfigError

#: Configuration files (TOML); far above any real one.
MAX_CONFIG_BYTES: Final = 1024 * 1024
#: An agent's `prompt_file`.
MAX_PROMPT_BYTES: Final = 256 * 1024
#: A variable's `file` (a token, a key).
MAX_VARIABLE_FILE_BYTES: Final = 64 * 1024
#: Pseudo file systems: never configuration, and windows on secrets (/proc/*/environ).
PSEUDO_ROOTS: Final = (Path("/proc"), Path("/sys"), Path("/dev"))
_CHUNK: Final = 64 * 1024
_OPEN_FLAGS: Final = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)
)


class UnsafeFileError(ConfigError):
    """A file rawtrio was to read is missing, not a regular file, outside the folder it must
    stay in, or too large. `path` is the path as configured; `reason` says what is wrong."""

    def __init__(self, path: Path, reason: str, *, what: str = "") -> None:
        self.path = path
        self.reason = reason
        label = f"{what} " if what else ""
        super().__init__(f"{label}{path}: {reason}")


def read_bounded(path: Path, *, limit: int, within: Path | None = None, what: str = "") -> bytes:
    """The whole file; UnsafeFileError when it breaks the policy or holds over `limit` bytes.
    `what` names the file's role in messages ("config file", "prompt_file")."""
    data, cut = _read(path, limit, within, what)
    if cut:
        raise UnsafeFileError(path, f"is larger than {limit} bytes", what=what)
    return data


def read_head(
    path: Path, *, limit: int, within: Path | None = None, what: str = ""
) -> tuple[bytes, bool]:
    """The first `limit` bytes, and whether the file was longer (cut)."""
    return _read(path, limit, within, what)


def is_inside(path: Path, folder: Path) -> bool:
    """Whether the fully resolved `path` lies in the fully resolved `folder`."""
    try:
        real = Path(os.path.realpath(path, strict=True))
    except OSError:
        return False
    return real.is_relative_to(Path(os.path.realpath(folder)))


def _read(path: Path, limit: int, within: Path | None, what: str) -> tuple[bytes, bool]:
    def refuse(reason: str) -> UnsafeFileError:
        return UnsafeFileError(path, reason, what=what)

    try:
        real = Path(os.path.realpath(path, strict=True))
    except OSError as e:
        raise refuse(_os_reason(e)) from None
    if within is not None:
        root = Path(os.path.realpath(within))
        if not real.is_relative_to(root):
            raise refuse(
                f"resolves to {real}, outside {root}; rawtrio reads a project's files only "
                "from inside the project"
            )
    for pseudo in PSEUDO_ROOTS:
        if real.is_relative_to(pseudo):
            raise refuse(f"resolves to {real}; rawtrio never reads files under {pseudo}")
    try:
        fd = os.open(real, _OPEN_FLAGS)
    except OSError as e:
        raise refuse(_os_reason(e)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise refuse(f"is {_kind(mode)}, not a regular file")
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(_CHUNK, left))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as e:
        raise refuse(_os_reason(e)) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    return (data[:limit], True) if len(data) > limit else (data, False)


def _os_reason(e: OSError) -> str:
    if e.errno == errno.ENOENT:
        return "does not exist (or is a symlink to nothing)"
    if e.errno == errno.ELOOP:
        return "is a symlink loop (or a symlink that changed while rawtrio read it)"
    if e.errno == errno.ENXIO:
        return "is a socket, not a regular file"
    if e.errno == errno.EISDIR:
        return "is a folder, not a regular file"
    if e.errno in (errno.EACCES, errno.EPERM):
        return "is not readable (permission denied)"
    return f"is unreadable ({e.strerror or e})"


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"
