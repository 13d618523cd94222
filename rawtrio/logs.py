"""Where rawtrio's log records go: one handler on the root logger, always behind the
process's `RedactingFilter` (`rawtrio.redaction.LOG_FILTER`), so no log line holds a secret.

Front ends choose the destination once: stderr for headless runs and the line chat (the
default set by `rawtrio.cli.main`), a file for full-screen front ends that own the terminal
(`log_to_file`). Only warnings and errors are logged unless `RAWTRIO_LOG_LEVEL` says more.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import IO

from rawtrio.private_files import private_file
from rawtrio.redaction import LOG_FILTER

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_handler: logging.Handler | None = None


def _install(handler: logging.Handler) -> None:
    global _handler
    root = logging.getLogger()
    if _handler is not None:
        root.removeHandler(_handler)
        _handler.close()
    handler.addFilter(LOG_FILTER)
    handler.setFormatter(logging.Formatter(_FORMAT))
    root.addHandler(handler)
    level = os.environ.get("RAWTRIO_LOG_LEVEL", "WARNING").upper()
    root.setLevel(level if level in _LEVELS else "WARNING")
    _handler = handler


def log_to_stream(stream: IO[str]) -> None:
    _install(logging.StreamHandler(stream))


def log_to_file(path: Path) -> None:
    """Append log records to `path` (created 0600 in a 0700 folder, tightened if looser)."""
    private_file(path)
    # backslashreplace: no record can fail to be written (a lone surrogate in a message).
    _install(logging.FileHandler(path, encoding="utf-8", errors="backslashreplace"))
