"""rawtrio's user folders are where `platformdirs` puts them, found without importing it
in the usual cases (rawtrio.user_dirs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import platformdirs
import pytest

from rawtrio.user_dirs import Kind, user_dir

KINDS: tuple[Kind, ...] = ("config", "state", "cache", "data")

ENVIRONMENTS = [
    {"XDG": "/srv/x", "HOME": "/home/u"},
    {"XDG": "/srv/x/", "HOME": "/home/u"},
    {"HOME": "/home/u"},
    {"HOME": "/home/u/"},
    {"HOME": "/"},
    {"XDG": "", "HOME": "/home/u"},
    {"XDG": "  ", "HOME": "/home/u"},
    {"XDG": "relative/x", "HOME": "/home/u"},
    {"XDG": "/srv/x", "HOME": "relative"},
    {"HOME": "relative"},
    {},
]

VARIABLES = {
    "config": "XDG_CONFIG_HOME",
    "state": "XDG_STATE_HOME",
    "cache": "XDG_CACHE_HOME",
    "data": "XDG_DATA_HOME",
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_each_folder_is_where_platformdirs_puts_it(
    kind: Kind, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HOME", "ANDROID_DATA", "ANDROID_ROOT", *VARIABLES.values()):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(VARIABLES[kind] if name == "XDG" else name, value)
    try:
        expected: Path | None = getattr(platformdirs, f"user_{kind}_path")("rawtrio")
    except RuntimeError:  # no usable home: platformdirs says so, and so must we
        expected = None
    if expected is None:
        with pytest.raises(RuntimeError):
            user_dir(kind)
    else:
        assert user_dir(kind) == expected


def test_the_usual_case_does_not_import_platformdirs(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from rawtrio.private_files import own_roots\n"
        "from rawtrio.store.paths import state_dir\n"
        "print(state_dir(), len(own_roots()))\n"
        "assert 'platformdirs' not in sys.modules, 'platformdirs was imported'\n"
    )
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(tmp_path / ".local" / "state" / "rawtrio"), "4"]
