"""Where rawtrio's log records go: one handler on the root logger, always behind the
process's `RedactingFilter` (`rawtrio.redaction.LOG_FILTER`), so no log line holds a secret.
The handler reaches that filter through `rawtrio.redaction` once something imported it
(a secret is only ever watched through it), so setting up logging at start-up imports
neither it nor the message types it depends on (docs/benchmarks.md, the chat's first
frame).

Front ends choose the destination once: stderr for headless runs and the line chat (the
default set by `rawtrio.cli.main`), a file for full-screen front ends that own the terminal
(`log_to_file`). Only warnings and errors are logged unless `RAWTRIO_LOG_LEVEL` says more.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import IO

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_handler: logging.Handler | None = None


class _ProcessFilter(logging.Filter):
    """`rawtrio.redaction.LOG_FILTER`, applied to every record once that module is loaded.
    Before, no redactor can be watched (`LOG_FILTER.watch` is the only way to add one),
    so `LOG_FILTER` would pass the record unchanged: it passes unchanged here too."""

    def filter(self, record: logging.LogRecord) -> bool:
        redaction = sys.modules.get("rawtrio.redaction")
        if redaction is None:
            return True
        return bool(redaction.LOG_FILTER.filter(record))


_PROCESS_FILTER = _ProcessFilter()


def _install(handler: logging.Handler) -> None:
    global _handler
    root = logging.getLogger()
    if _handler is not None:
        root.removeHandler(_handler)
        _handler.close()
    handler.addFilter(_PROCESS_FILTER)
    handler.setFormatter(logging.Formatter(_FORMAT))
    root.addHandler(handler)
    level = os.environ.get("RAWTRIO_LOG_LEVEL", "WARNING").upper()
    root.setLevel(level if level in _LEVELS else "WARNING")
    _handler = handler


def log_to_stream(stream: IO[str]) -> None:
    _install(logging.StreamHandler(stream))


def log_to_file(path: Path) -> None:
    """Append log records to `path` (created 0600 in a 0700 folder, tightened if looser)."""
    from rawtrio.private_files import private_file  # not needed for a stream (headless runs)

    private_file(path)
    # backslashreplace: no record can fail to be written (a lone surrogate in a message).
    _install(logging.FileHandler(path, encoding="utf-8", errors="backslashreplace"))
