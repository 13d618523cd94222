"""Path arguments of the file tools: resolution against the working directory, and the
optional confinement mode.

Relative paths resolve against the session's working directory. With
`ToolSettings.confine` on, a path that resolves outside it — `../`, an absolute path
elsewhere, or a symlink (at any component) pointing out — is refused before anything is
read or written. On Linux the check asks the kernel: `openat2(2)` with `RESOLVE_BENEATH`
from a descriptor of the working directory, which fails with EXDEV on any escape. Where
openat2 is missing (other systems, old kernels, seccomp filters) the fallback resolves
symlinks with `realpath` and compares. A path that does not exist yet is checked through
its nearest existing ancestor (plus the link it may be, when it is a dangling symlink).

This is a guard against mistakes, not a sandbox: `bash` is not confined, and a file can
be swapped for a symlink between the check and the write.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import sys
from pathlib import Path
from typing import Final

from rawtrio.tools.file_io import FileToolError

_SYS_OPENAT2: Final = 437  # the same number on every Linux architecture (unified table)
_RESOLVE_NO_MAGICLINKS: Final = 0x02
_RESOLVE_BENEATH: Final = 0x08


class _OpenHow(ctypes.Structure):
    _fields_ = (
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    )


class _Openat2:
    """openat2 through libc's syscall(); `available` is settled on first use."""

    def __init__(self) -> None:
        self.available: bool | None = None if sys.platform.startswith("linux") else False
        self._libc: ctypes.CDLL | None = None

    def beneath(self, root_fd: int, rel: str) -> int | None:
        """0 when `rel` resolves beneath root_fd, else the errno (EXDEV on an escape);
        None when openat2 cannot be used here."""
        if self.available is False:
            return None
        if self._libc is None:
            self._libc = ctypes.CDLL(None, use_errno=True)
        how = _OpenHow(os.O_PATH | os.O_CLOEXEC, 0, _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS)
        fd = int(
            self._libc.syscall(
                _SYS_OPENAT2, root_fd, os.fsencode(rel), ctypes.byref(how), ctypes.sizeof(how)
            )
        )
        if fd >= 0:
            os.close(fd)
            self.available = True
            return 0
        err = ctypes.get_errno()
        if err in (errno.ENOSYS, errno.EPERM) and self.available is None:
            self.available = False
            return None
        self.available = True
        return err


_OPENAT2 = _Openat2()


def openat2_available() -> bool:
    """Whether the kernel check is in use (for tests and `rawtrio doctor`)."""
    if _OPENAT2.available is None:
        fd = os.open("/", os.O_PATH | os.O_DIRECTORY)
        try:
            _OPENAT2.beneath(fd, ".")
        finally:
            os.close(fd)
    return bool(_OPENAT2.available)


def resolve_path(raw: str, cwd: Path, *, confine: bool) -> Path:
    """The path a tool argument names; FileToolError when confinement refuses it."""
    if "\0" in raw:
        raise FileToolError(f"invalid path {raw!r}: it contains a NUL byte")
    p = Path(raw).expanduser()
    path = p if p.is_absolute() else cwd / p
    if confine:
        check_beneath(cwd, path, shown=raw)
    return path


def check_beneath(root: Path, path: Path, *, shown: str) -> None:
    refused = FileToolError(
        f"{shown} resolves outside the working directory {root}; confinement mode only "
        f"allows paths inside it (symlinks included)"
    )
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    if rel == ".." or rel.startswith(f"..{os.sep}"):
        raise refused
    try:
        root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise FileToolError(f"the working directory {root} cannot be opened: {e}") from None
    try:
        if not _inside(root_fd, root, rel):
            raise refused
    finally:
        os.close(root_fd)


def _inside(root_fd: int, root: Path, rel: str) -> bool:
    candidate = rel
    while True:
        verdict = _check_one(root_fd, root, candidate)
        if verdict is not None:
            return verdict
        # Missing: a dangling symlink may still point out; else check the parent.
        with contextlib.suppress(OSError):
            target = os.readlink(root / candidate)
            link_rel = os.path.join(os.path.dirname(candidate), target)
            if os.path.isabs(target) or not _lexically_inside(link_rel):
                return False
        parent = os.path.dirname(candidate)
        if not parent:
            return True
        candidate = parent


def _check_one(root_fd: int, root: Path, rel: str) -> bool | None:
    """True inside, False outside, None when the path does not exist (yet)."""
    err = _OPENAT2.beneath(root_fd, rel)
    if err is None:  # fallback: let realpath resolve the symlinks
        full = root / rel
        if not os.path.lexists(full):
            return None
        real = os.path.realpath(full)
        real_root = os.path.realpath(root)
        return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)
    if err == 0:
        return True
    if err in (errno.EXDEV, errno.ELOOP):
        return False
    if err in (errno.ENOENT, errno.ENOTDIR):
        return None
    return True  # EACCES and the like: not an escape; the real operation will say why


def _lexically_inside(rel: str) -> bool:
    norm = os.path.normpath(rel)
    return norm != ".." and not norm.startswith(f"..{os.sep}")
