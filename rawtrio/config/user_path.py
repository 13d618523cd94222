"""Where the user config file is: `--config`, else `$RAWTRIO_CONFIG`, else the platform's
user config folder. Light (no pydantic), for front ends that read it before deciding what
to load (`rawtrio.host.settings`)."""

from __future__ import annotations

import os
import posixpath
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

CONFIG_ENV: Final = "RAWTRIO_CONFIG"
APP_NAME: Final = "rawtrio"


def user_config_path(cli_config: str | None, env: Mapping[str, str]) -> tuple[Path, bool]:
    """The user file and whether it was named explicitly (then it must exist)."""
    if cli_config:
        return Path(cli_config).expanduser(), True
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV]).expanduser(), True
    return user_config_dir() / "config.toml", False


def user_config_dir() -> Path:
    """`platformdirs.user_config_path("rawtrio")`. On Linux with an absolute
    `$XDG_CONFIG_HOME`, or none and an absolute `$HOME`, the answer every `platformdirs` of
    the supported range gives is computed here: importing `platformdirs` (with `tempfile`,
    `shutil` and `random`) is some 12 ms of every start, and the attached client needs
    nothing else of it. Any other case asks `platformdirs`."""
    if sys.platform == "linux" and not (
        "ANDROID_DATA" in os.environ and "ANDROID_ROOT" in os.environ
    ):
        xdg = os.environ.get("XDG_CONFIG_HOME", "")
        if posixpath.isabs(xdg):
            return Path(os.path.join(xdg, APP_NAME))
        home = os.environ.get("HOME", "")
        if not xdg.strip() and posixpath.isabs(home):
            return Path(os.path.join(os.path.expanduser("~/.config"), APP_NAME))
    import platformdirs

    return platformdirs.user_config_path(APP_NAME)
