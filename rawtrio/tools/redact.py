"""Keep secret values (API keys, tokens the config marks as secret) out of tool output.

`redact()` replaces every occurrence of a secret in a finished text. Live output arrives
in chunks that may split a secret, so `StreamRedactor` holds back the last
`longest secret - 1` characters of each chunk until the next one (or `flush()`) shows
they are not the start of a secret. Secrets shorter than `MIN_SECRET_CHARS` are ignored:
redacting "a" or "1" would shred ordinary output without protecting anything.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Final

MIN_SECRET_CHARS: Final = 6
REDACTED: Final = "[redacted]"


class Redactor:
    def __init__(self, secrets: Iterable[str]) -> None:
        kept = sorted({s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)
        self._regex = re.compile("|".join(map(re.escape, kept))) if kept else None
        self.longest = len(kept[0]) if kept else 0

    def __bool__(self) -> bool:
        return self._regex is not None

    def redact(self, text: str) -> str:
        return self._regex.sub(REDACTED, text) if self._regex is not None else text


class StreamRedactor:
    """Wraps a live-output callback so that no secret reaches it, even split in chunks."""

    def __init__(self, redactor: Redactor, emit: Callable[[str], None]) -> None:
        self._redactor = redactor
        self._emit = emit
        self._pending = ""

    def __call__(self, chunk: str) -> None:
        if not self._redactor:
            self._emit(chunk)
            return
        text = self._redactor.redact(self._pending + chunk)
        keep = self._redactor.longest - 1
        cut = max(0, len(text) - keep)
        # Never cut inside an inserted marker: hold back from its start instead.
        marker = text.rfind(REDACTED, 0, cut + len(REDACTED))
        if marker != -1 and marker < cut < marker + len(REDACTED):
            cut = marker + len(REDACTED)
        self._pending = text[cut:]
        if text[:cut]:
            self._emit(text[:cut])

    def flush(self) -> None:
        if self._pending:
            pending, self._pending = self._pending, ""
            self._emit(self._redactor.redact(pending))
