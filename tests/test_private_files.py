"""`rawtrio.private_files`: 0600 files in 0700 folders whatever the umask, looser ones
tightened once with a notice, and the writers that use it (logs, the chat's history)."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import mcp_types as types
import pytest

from rawtrio import private_files
from rawtrio.config.schema import McpServerConfig
from rawtrio.config.trust import TrustStore
from rawtrio.logs import log_to_file
from rawtrio.mcp.catalog import mcp_cache_dir, save_cached
from rawtrio.private_files import open_private, private_dir, private_file, tighten, write_private
from rawtrio.tui.editor import History
from tests.modes import default_umask, not_private


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A state folder named by RAWTRIO_STATE_DIR (one of rawtrio's own), not yet created."""
    folder = tmp_path / "state"
    monkeypatch.setenv("RAWTRIO_STATE_DIR", str(folder))
    monkeypatch.setattr(private_files, "_noticed", set())
    with default_umask():
        yield folder


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_every_missing_folder_is_created_0700(state: Path) -> None:
    private_dir(state / "a" / "b")
    assert not_private(state) == []


def test_write_private_replaces_a_readable_file_with_a_private_one(state: Path) -> None:
    target = state / "x.json"
    state.mkdir(mode=0o700)
    target.write_text("old")
    assert mode(target) == 0o644
    write_private(target, "new")
    assert target.read_text() == "new"
    assert mode(target) == 0o600
    assert [p.name for p in state.iterdir()] == ["x.json"]  # no temporary file left


def test_open_private_appends_to_a_private_file(state: Path) -> None:
    with open_private(state / "h.jsonl") as f:
        f.write("one\n")
    with open_private(state / "h.jsonl") as f:
        f.write("two\n")
    assert (state / "h.jsonl").read_text() == "one\ntwo\n"
    assert not_private(state) == []


def test_a_file_made_private_even_under_a_umask_that_drops_owner_bits(state: Path) -> None:
    os.umask(0o277)
    write_private(state / "w.txt", "x")
    assert not_private(state) == []


def test_a_readable_file_is_tightened_once_with_a_notice_relative_to_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(private_files, "_noticed", set())
    path = tmp_path / "sessions.db"
    path.write_text("")
    os.chmod(path, 0o644)
    with caplog.at_level(logging.WARNING, logger="rawtrio.private_files"):
        assert tighten(path)
        os.chmod(path, 0o644)
        assert tighten(path)
    assert mode(path) == 0o600
    assert [r.getMessage() for r in caplog.records] == [
        "tightened ~/sessions.db from 0644 to 0600: rawtrio's files are for your user only"
    ]


def test_a_file_the_user_made_read_only_is_left_alone(state: Path) -> None:
    private_file(state / "r.txt")
    os.chmod(state / "r.txt", 0o400)
    assert not tighten(state / "r.txt")
    assert mode(state / "r.txt") == 0o400


def test_rawtrio_own_folder_is_tightened_but_a_folder_it_did_not_make_is_not(
    state: Path, tmp_path: Path
) -> None:
    state.mkdir(mode=0o755)
    private_file(state / "sub" / "f")
    assert mode(state) == 0o700
    assert mode(state / "sub") == 0o700
    elsewhere = tmp_path / "project"
    elsewhere.mkdir(mode=0o755)
    private_file(elsewhere / "config.toml")
    assert mode(elsewhere) == 0o755  # the user's folder: only the file is rawtrio's
    assert mode(elsewhere / "config.toml") == 0o600


def test_the_log_file_is_private_and_an_old_readable_one_is_tightened(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", list(root.handlers))  # restored afterwards
    monkeypatch.setattr(root, "level", root.level)
    log_file = state / "tui.log"
    state.mkdir(mode=0o755)
    log_file.write_text("old record\n")
    log_to_file(log_file)
    try:
        logging.getLogger("rawtrio.test").warning("a record")
    finally:
        for handler in root.handlers:
            if isinstance(handler, logging.FileHandler):
                handler.close()
    assert "a record" in log_file.read_text()
    assert not_private(state) == []


def test_the_chat_history_is_private(state: Path) -> None:
    path = state / "tui_history.jsonl"
    history = History(path)
    history.add("first prompt")
    for n in range(2001):  # past twice the limit: the file is rewritten whole
        history.add(f"prompt {n}")
    assert History(path).items[-1] == "prompt 2000"
    assert not_private(state) == []


def test_an_old_readable_chat_history_is_tightened_when_read(state: Path) -> None:
    state.mkdir(mode=0o755)
    path = state / "tui_history.jsonl"
    path.write_text('"old prompt"\n')
    assert History(path).items == ["old prompt"]
    assert mode(path) == 0o600


def test_trust_records_are_private(state: Path, tmp_path: Path) -> None:
    TrustStore.default({"RAWTRIO_STATE_DIR": str(state)}).trust(tmp_path, "0" * 64)
    assert (state / "trust.json").is_file()
    assert not_private(state) == []


def test_the_mcp_tool_cache_is_private(state: Path) -> None:
    cache = mcp_cache_dir({"RAWTRIO_STATE_DIR": str(state)})
    tool = types.Tool(name="t", input_schema={"type": "object"})
    save_cached(cache, "s", McpServerConfig(command=["x"]), [tool])
    assert len(list(cache.iterdir())) == 1
    assert not_private(state) == []


def test_a_shared_sticky_folder_named_as_the_state_dir_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # like /tmp
    monkeypatch.setenv("RAWTRIO_STATE_DIR", str(shared))
    with default_umask():
        write_private(shared / "trust.json", "{}")
    assert mode(shared) == 0o1777
    assert mode(shared / "trust.json") == 0o600
