"""Where the tools' file access and process execution go: a small interface, local by default.

The file tools (`read_file`, `write_file`, `edit_file`) and `bash` never touch the disk or
spawn a process themselves: they call `ctx.backend.fs` and `ctx.backend.proc`. An ACP
front end can later supply a `Backend` whose `fs` speaks the editor's `fs/read_text_file`
/ `fs/write_text_file` (so unsaved buffers are seen and edits land in the editor) and whose
`proc` speaks `terminal/*`, without touching the tools. `list_dir`, `glob` and `grep` walk
the local tree directly: ACP has no directory methods.

Every method raises OSError for what the OS would refuse (missing file, permission) and
`FileToolError` for what the tools refuse (too large, binary); blocking work runs in a
worker thread that checks for cancellation as it goes.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Final, Literal, Protocol

import trio

from rawtrio.processes import ProcessResult, ProcessWatch, run_in_process_group
from rawtrio.tools.file_io import SNIFF_BYTES, FileToolError, atomic_write, is_binary

#: Lines longer than this many bytes are cut in what `read_lines` returns (never in the hash).
MAX_LINE_BYTES: Final = 2000
_CANCEL_CHECK_EVERY: Final = 4096


@dataclass(frozen=True, slots=True)
class FileInfo:
    kind: Literal["file", "dir", "other"]
    size: int
    mode: int


@dataclass(slots=True)
class LineWindow:
    """Lines first..first+len(lines)-1 of a file, as read (each line's bytes with its
    terminator, cut to MAX_LINE_BYTES), and the SHA-256 of the exact, uncut bytes of
    that span."""

    first: int
    lines: list[bytes] = field(default_factory=list)
    #: Which of `lines` were cut.
    cut: list[bool] = field(default_factory=list)
    #: Lines in the whole file (counted to the end even past the window).
    total_lines: int = 0
    sha256: str = ""
    binary: bool = False
    #: The first bytes of a binary file (to name its type).
    head: bytes = b""
    size: int = 0
    #: Reading stopped because `max_bytes` was reached before `limit` lines.
    stopped_by_size: bool = False


class FileBackend(Protocol):
    async def stat(self, path: Path) -> FileInfo: ...

    async def read_lines(
        self, path: Path, *, first: int, limit: int, max_bytes: int
    ) -> LineWindow: ...

    async def read_bytes(self, path: Path, *, max_bytes: int) -> bytes: ...

    async def write_bytes(self, path: Path, data: bytes) -> bool:
        """Atomically create or replace `path`; True when it was created."""
        ...


class ProcessBackend(Protocol):
    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        session_id: str,
        output_cap: int,
        grace_s: float,
        timeout_s: float | None,
        on_output: Callable[[str], None] | None,
        env: Mapping[str, str] | None,
        strip_env: Iterable[str],
        watch: ProcessWatch,
        call_marker: str | None = None,
    ) -> ProcessResult:
        """Run to completion/timeout; on cancel, stop it, fill `watch.result`, re-raise."""
        ...


@dataclass(frozen=True, slots=True)
class Backend:
    fs: FileBackend
    proc: ProcessBackend


class LocalFiles:
    """The local file system, through worker threads."""

    async def stat(self, path: Path) -> FileInfo:
        return await trio.to_thread.run_sync(_stat, path)

    async def read_lines(self, path: Path, *, first: int, limit: int, max_bytes: int) -> LineWindow:
        read = functools.partial(_read_lines, path, first, limit, max_bytes)
        return await trio.to_thread.run_sync(read)

    async def read_bytes(self, path: Path, *, max_bytes: int) -> bytes:
        return await trio.to_thread.run_sync(_read_bytes, path, max_bytes)

    async def write_bytes(self, path: Path, data: bytes) -> bool:
        return await trio.to_thread.run_sync(atomic_write, path, data)


class LocalProcesses:
    """Child processes of this process, each in its own process group."""

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        session_id: str,
        output_cap: int,
        grace_s: float,
        timeout_s: float | None,
        on_output: Callable[[str], None] | None,
        env: Mapping[str, str] | None,
        strip_env: Iterable[str],
        watch: ProcessWatch,
        call_marker: str | None = None,
    ) -> ProcessResult:
        return await run_in_process_group(
            argv,
            cwd=cwd,
            session_id=session_id,
            output_cap=output_cap,
            grace_s=grace_s,
            timeout_s=timeout_s,
            on_output=on_output,
            env=env,
            strip_env=strip_env,
            watch=watch,
            call_marker=call_marker,
        )


LOCAL: Final = Backend(LocalFiles(), LocalProcesses())


def _stat(path: Path) -> FileInfo:
    st = os.stat(path)
    kind: Literal["file", "dir", "other"] = (
        "dir" if stat.S_ISDIR(st.st_mode) else "file" if stat.S_ISREG(st.st_mode) else "other"
    )
    return FileInfo(kind, st.st_size, stat.S_IMODE(st.st_mode))


def _read_bytes(path: Path, max_bytes: int) -> bytes:
    if path.is_dir():
        raise IsADirectoryError(21, "Is a directory", str(path))
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise FileToolError(f"{path} is too large ({size} bytes; the limit is {max_bytes})")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileToolError(f"{path} is too large (over {max_bytes} bytes)")
    return data


def _read_lines(path: Path, first: int, limit: int, max_bytes: int) -> LineWindow:
    if path.is_dir():
        raise IsADirectoryError(21, "Is a directory", str(path))
    window = LineWindow(first=first)
    with open(path, "rb") as f:
        window.size = os.fstat(f.fileno()).st_size
        sniff = f.read(SNIFF_BYTES)
        if is_binary(sniff):
            window.binary, window.head = True, sniff[:64]
            return window
        f.seek(0)
        return fill_window(window, f, limit=limit, max_bytes=max_bytes, in_thread=True)


def fill_window(
    window: LineWindow, f: BinaryIO, *, limit: int, max_bytes: int, in_thread: bool = False
) -> LineWindow:
    """Read `f` to its end into `window` (from line `window.first`, at most `limit` lines
    and `max_bytes` shown), counting every line and hashing the lines shown. `in_thread`:
    running in a worker thread, which stops early when its trio caller is cancelled."""
    digest = hashlib.sha256()
    shown = 0
    collecting = True
    for lineno, pieces in enumerate(_raw_lines(f), start=1):
        window.total_lines = lineno
        if in_thread and lineno % _CANCEL_CHECK_EVERY == 0:
            trio.from_thread.check_cancelled()
        if lineno < window.first or not collecting:
            continue
        if len(window.lines) >= limit:
            collecting = False
            continue
        head = pieces[0]
        if shown + len(head) > max_bytes and window.lines:
            window.stopped_by_size = True
            collecting = False
            continue
        shown += len(head)
        for piece in pieces:
            digest.update(piece)
        window.lines.append(head)
        window.cut.append(len(pieces) > 1)
    window.sha256 = digest.hexdigest()
    return window


def _raw_lines(f: BinaryIO) -> Iterator[list[bytes]]:
    """Each line as pieces of at most MAX_LINE_BYTES (usually one piece)."""
    while part := f.readline(MAX_LINE_BYTES):
        pieces = [part]
        while not pieces[-1].endswith(b"\n") and len(pieces[-1]) == MAX_LINE_BYTES:
            rest = f.readline(MAX_LINE_BYTES)
            if not rest:
                break
            pieces.append(rest)
        yield pieces


def span_sha256(data: bytes, first: int, last: int) -> tuple[str, int]:
    """SHA-256 of lines first..last (1-based, inclusive, terminators included) of `data`,
    and the number of lines `data` has; the same hash `read_lines` reports for that span."""
    lines = split_lines(data)
    return hashlib.sha256(b"".join(lines[first - 1 : last])).hexdigest(), len(lines)


def split_lines(data: bytes) -> list[bytes]:
    """Lines as read_lines counts them: split after each \\n only."""
    out = data.split(b"\n")
    lines = [line + b"\n" for line in out[:-1]]
    if out[-1]:
        lines.append(out[-1])
    return lines
