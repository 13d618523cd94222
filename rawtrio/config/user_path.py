"""Where the user config file is: `--config`, else `$RAWTRIO_CONFIG`, else the platform's
user config folder. Light (no pydantic), for front ends that read it before deciding what
to load (`rawtrio.host.settings`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

import platformdirs

CONFIG_ENV: Final = "RAWTRIO_CONFIG"


def user_config_path(cli_config: str | None, env: Mapping[str, str]) -> tuple[Path, bool]:
    """The user file and whether it was named explicitly (then it must exist)."""
    if cli_config:
        return Path(cli_config).expanduser(), True
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV]).expanduser(), True
    return platformdirs.user_config_path("rawtrio") / "config.toml", False
