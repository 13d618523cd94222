"""The `[host]` table of the user config file, read without pydantic: a front end reads it
before deciding whether to attach, and attaching must not pay for loading the schema.

The same table is validated by the schema (`rawtrio.config.schema.HostConfig`) whenever
the whole file is loaded; here a wrong value is a `ConfigError` naming the file and key.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any, Final, Literal, NamedTuple

from rawtrio.config.safe_read import MAX_CONFIG_BYTES, read_bounded
from rawtrio.config.user_path import user_config_path
from rawtrio.errors import ConfigError

AttachMode = Literal["auto", "never"]
DEFAULT_IDLE_EXIT_S: Final = 1800.0


class HostSettings(NamedTuple):
    attach: AttachMode = "auto"
    autostart: bool = False
    idle_exit_s: float = DEFAULT_IDLE_EXIT_S


def read_host_settings(
    cli_config: str | None = None, env: Mapping[str, str] | None = None
) -> HostSettings:
    """The `[host]` table of the user config file (defaults when there is none)."""
    path, explicit = user_config_path(cli_config, os.environ if env is None else env)
    if not explicit and not os.path.lexists(path):
        return HostSettings()
    # Read and parsed with the limits of every config read (no /dev/zero, FIFO or huge
    # file; no nesting deep enough to exhaust the stack).
    raw = read_bounded(path, limit=MAX_CONFIG_BYTES, what="config file")
    from rawtrio.config.toml_file import TomlProblem, parse_toml  # tomllib: only with a file

    try:
        data = parse_toml(raw)
    except TomlProblem as exc:
        raise ConfigError(f"{path}: {exc}") from None
    table = data.get("host", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: host: expected a table")
    return _settings(table, f"{path}: host")


def _settings(table: dict[str, Any], where: str) -> HostSettings:
    unknown = sorted(set(table) - {"attach", "autostart", "idle_exit"})
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown key")
    attach = table.get("attach", "auto")
    if attach not in ("auto", "never"):
        raise ConfigError(f'{where}.attach: expected "auto" or "never", got {attach!r}')
    autostart = table.get("autostart", False)
    if not isinstance(autostart, bool):
        raise ConfigError(f"{where}.autostart: expected true or false, got {autostart!r}")
    idle = table.get("idle_exit", DEFAULT_IDLE_EXIT_S)
    if isinstance(idle, bool) or not isinstance(idle, int | float) or not math.isfinite(idle):
        raise ConfigError(f"{where}.idle_exit: expected a number of seconds, got {idle!r}")
    if idle < 0:
        raise ConfigError(f"{where}.idle_exit: expected 0 (never) or more seconds, got {idle}")
    return HostSettings(attach=attach, autostart=autostart, idle_exit_s=float(idle))
