"""What a real run leaves in rawtrio's state, config and cache folders is the user's alone:
0600 files in 0700 folders under the usual umask (022), and what an older rawtrio left
looser is tightened at the next start, with a notice naming it relative to `~`."""

from __future__ import annotations

import os
from pathlib import Path

from tests.headless.conftest import FakeModel
from tests.headless.support import Isolation, run_rawtrio
from tests.modes import default_umask, files_under, not_private

KEYS = {"ANTHROPIC_API_KEY": "test-key"}


def rawtrio_dirs(iso: Isolation) -> tuple[Path, Path, Path]:
    """The state, config and cache folders rawtrio uses under the isolated XDG tree."""
    return (
        iso.home / ".local" / "state" / "rawtrio",
        iso.home / ".config" / "rawtrio",
        iso.home / ".cache" / "rawtrio",
    )


def run_with_a_tool(iso: Isolation, fake: FakeModel) -> None:
    done = run_rawtrio(
        iso,
        "-p",
        "use a tool",
        "--base-url",
        fake.base_url,
        "--model",
        "test-model",
        env=KEYS,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "The tool said tool-output."


def test_config_init_and_a_headless_run_leave_only_private_files(
    iso: Isolation, fake_model: FakeModel
) -> None:
    with default_umask():
        init = run_rawtrio(iso, "config", "init")
        assert init.returncode == 0, init.stderr
        run_with_a_tool(iso, fake_model)
    state, config, _ = rawtrio_dirs(iso)
    assert (config / "config.toml").is_file()
    assert (state / "sessions.db").is_file()
    assert (state / "sessions.db.leases").is_dir()
    assert not_private(*rawtrio_dirs(iso)) == []
    # The folders rawtrio created above its own (XDG's) are private too.
    assert not_private(iso.home / ".local" / "state", iso.home / ".config") == []


def test_files_an_older_rawtrio_left_readable_are_tightened_with_a_notice(
    iso: Isolation, fake_model: FakeModel
) -> None:
    with default_umask():
        run_with_a_tool(iso, fake_model)
    state, _, _ = rawtrio_dirs(iso)
    # What rawtrio before this fix left: 0755 folders and a 0644 database, WAL and shared
    # memory (the last two created here the way SQLite leaves them after a crash). Lease
    # files were always created 0600.
    for sidecar in ("sessions.db-wal", "sessions.db-shm"):
        (state / sidecar).touch()
    # Checkpoints (rawtrio/checkpoints) came after that fix: they were never left readable.
    older = [p for p in state.rglob("*") if "checkpoints" not in p.relative_to(state).parts]
    for path in files_under(state):
        if path.suffix != ".lock" and path in older:
            os.chmod(path, 0o644)
    for folder in [state, *(p for p in older if p.is_dir())]:
        os.chmod(folder, 0o755)

    with default_umask():
        done = run_rawtrio(
            iso,
            "-p",
            "say hello",
            "--base-url",
            fake_model.base_url,
            "--model",
            "test-model",
            env=KEYS,
        )
    assert done.returncode == 0, done.stderr
    assert not_private(state) == []
    notices = done.stderr.splitlines()
    for name in ("sessions.db", "sessions.db-wal", "sessions.db-shm"):
        line = f"tightened ~/.local/state/rawtrio/{name} from 0644 to 0600"
        assert [n for n in notices if line in n], done.stderr
    assert [n for n in notices if "tightened ~/.local/state/rawtrio from 0755 to 0700" in n]
    assert str(iso.home) not in done.stderr  # named relative to ~, never absolute


def test_a_second_run_says_nothing_about_modes(iso: Isolation, fake_model: FakeModel) -> None:
    with default_umask():
        run_with_a_tool(iso, fake_model)
        done = run_rawtrio(
            iso,
            "-p",
            "say hello",
            "--base-url",
            fake_model.base_url,
            "--model",
            "test-model",
            env=KEYS,
        )
    assert done.returncode == 0, done.stderr
    assert "tightened" not in done.stderr
