"""The one reader for files rawtrio takes text from (rawtrio.config.safe_read)."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rawtrio.config.safe_read import UnsafeFileError, read_bounded, read_head

#: A liveness bound for reads that must never block.
LIVENESS_S = 60.0


def within_liveness(read: Callable[[], Any]) -> Any:
    """Run `read` on a thread; a blocked read fails the test instead of hanging it."""
    outcome: list[Any] = []

    def target() -> None:
        try:
            outcome.append(read())
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(LIVENESS_S)
    assert not thread.is_alive(), "the read blocked"
    (result,) = outcome
    if isinstance(result, BaseException):
        raise result
    return result


def test_a_regular_file_is_read_whole(tmp_path: Path) -> None:
    f = tmp_path / "a.toml"
    f.write_bytes(b"x = 1\n")
    assert read_bounded(f, limit=100) == b"x = 1\n"


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(UnsafeFileError, match="is a FIFO"):
        within_liveness(lambda: read_bounded(fifo, limit=100))


def test_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        with pytest.raises(UnsafeFileError, match="is a socket"):
            read_bounded(path, limit=100)


def test_devices_and_proc_are_never_read(tmp_path: Path) -> None:
    link = tmp_path / "zero"
    link.symlink_to("/dev/zero")
    for path in (Path("/dev/zero"), link, Path("/proc/self/environ")):
        with pytest.raises(UnsafeFileError, match="never reads files under"):
            read_bounded(path, limit=100)


def test_a_symlink_loop_and_a_dangling_link_are_errors(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nothing")
    with pytest.raises(UnsafeFileError, match="symlink loop"):
        read_bounded(loop, limit=100)
    with pytest.raises(UnsafeFileError, match="does not exist"):
        read_bounded(dangling, limit=100)


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsafeFileError, match="folder"):
        read_bounded(tmp_path, limit=100)


def test_a_file_over_the_limit_is_refused_or_cut(tmp_path: Path) -> None:
    f = tmp_path / "big"
    f.write_bytes(b"y" * 101)
    with pytest.raises(UnsafeFileError, match="is larger than 100 bytes"):
        read_bounded(f, limit=100)
    assert read_head(f, limit=100) == (b"y" * 100, True)
    assert read_head(f, limit=101) == (b"y" * 101, False)


def test_confinement_follows_symlinks(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    inside = project / "notes.md"
    inside.write_text("notes")
    (project / "escape.md").symlink_to(outside)
    (project / "alias.md").symlink_to(inside)
    assert read_bounded(project / "alias.md", limit=100, within=project) == b"notes"
    for path in (project / "escape.md", project / ".." / "secret.txt"):
        with pytest.raises(UnsafeFileError, match="outside") as info:
            read_bounded(path, limit=100, within=project)
        assert str(path) in str(info.value)


def test_the_message_names_the_file_and_its_role(tmp_path: Path) -> None:
    with pytest.raises(UnsafeFileError) as info:
        read_bounded(tmp_path / "absent.md", limit=10, what="prompt_file")
    assert str(info.value) == (
        f"prompt_file {tmp_path / 'absent.md'}: does not exist (or is a symlink to nothing)"
    )
