"""The flags that choose a session's model, agent and limits, shared by every front end that
opens sessions (`rawtrio`, `rawtrio -p`, `rawtrio acp`). Resolved by the composition root
(`rawtrio.app`) with the configuration and environment (docs/configuration.md)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

PROVIDERS = ("anthropic", "openai-chat", "openai-responses")


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, its width taken as `shutil.get_terminal_size` takes it but
    without importing `shutil` (with `zlib`, `bz2` and `lzma`): argparse builds one for
    every `add_argument`, so the default one loads them on every start, help or not."""

    def __init__(self, prog: str, *args: Any, **kwargs: Any) -> None:
        if len(args) < 3 and kwargs.get("width") is None:  # `width` is the third one
            kwargs["width"] = terminal_columns() - 2  # as argparse does with shutil's
        super().__init__(prog, *args, **kwargs)


def terminal_columns() -> int:
    """`shutil.get_terminal_size().columns`: `$COLUMNS`, else stdout's terminal, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 80
    return columns or 80


def add_session_flags(p: argparse.ArgumentParser) -> None:
    """The flags that choose a session's model, agent and limits (every front end)."""
    p.add_argument(
        "--provider",
        choices=PROVIDERS,
        help="wire format of the model endpoint (env RAWTRIO_PROVIDER; default anthropic)",
    )
    p.add_argument("--model", help="model id (env RAWTRIO_MODEL)")
    p.add_argument(
        "--base-url",
        help="endpoint base URL (env ANTHROPIC_BASE_URL / OPENAI_BASE_URL are read by the SDKs)",
    )
    p.add_argument(
        "--max-steps", type=int, metavar="N", help="model requests per turn (default 50)"
    )
    p.add_argument(
        "--sigterm-grace",
        type=float,
        metavar="SECONDS",
        help="grace between SIGTERM and SIGKILL for tool processes (default 2)",
    )
    p.add_argument("--config", metavar="PATH", help="user config file (env RAWTRIO_CONFIG)")
    p.add_argument("--agent", help="agent from the config to use (env RAWTRIO_AGENT)")
    p.add_argument(
        "--mode",
        dest="permission_mode",
        choices=("default", "accept-edits", "plan", "bypass"),
        help="permission mode (env RAWTRIO_PERMISSION_MODE; default from the agent)",
    )
