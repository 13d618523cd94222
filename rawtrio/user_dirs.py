"""rawtrio's folders in the user's home: `platformdirs.user_{config,state,cache,data}_path`
for "rawtrio", without importing `platformdirs` where the answer is plain.

Why: `platformdirs` is ~0.35 MB of objects that stay loaded for the life of the process
(the terminal chat loaded it at start only to list rawtrio's own folders for
`rawtrio.private_files`), and with `tempfile` and `shutil` some 12 ms of a start. On
Linux with an absolute `$XDG_*_HOME`, or none and an absolute `$HOME`, every
`platformdirs` of the supported range gives the same folder, computed here; any other case
(another platform, a relative or blank-but-set variable with no usable home, Android) asks
`platformdirs`. `tests/test_user_dirs.py` compares both for each folder and environment.
"""

from __future__ import annotations

import os
import posixpath
import sys
from pathlib import Path
from typing import Final, Literal

__all__ = ["APP_NAME", "Kind", "user_dir"]

APP_NAME: Final = "rawtrio"

Kind = Literal["config", "state", "cache", "data"]

#: The XDG variable of each folder, and where it is without one.
_XDG: Final[dict[str, tuple[str, str]]] = {
    "config": ("XDG_CONFIG_HOME", "~/.config"),
    "state": ("XDG_STATE_HOME", "~/.local/state"),
    "cache": ("XDG_CACHE_HOME", "~/.cache"),
    "data": ("XDG_DATA_HOME", "~/.local/share"),
}


def user_dir(kind: Kind) -> Path:
    """`platformdirs.user_<kind>_path("rawtrio")` (see the module docstring)."""
    variable, default = _XDG[kind]
    if sys.platform == "linux" and not (
        "ANDROID_DATA" in os.environ and "ANDROID_ROOT" in os.environ
    ):
        xdg = os.environ.get(variable, "")
        if posixpath.isabs(xdg):
            return Path(os.path.join(xdg, APP_NAME))
        home = os.environ.get("HOME", "")
        if not xdg.strip() and posixpath.isabs(home):
            return Path(os.path.join(os.path.expanduser(default), APP_NAME))
    import platformdirs

    found: Path = getattr(platformdirs, f"user_{kind}_path")(APP_NAME)
    return found
