"""Keeping secret values out of what rawtrio shows, stores and sends (DESIGN.md §8).

One `Redactor` per runtime collects the values that must never appear: API keys, and
variables the config marks secret (added as they are first read). Everything that leaves
a tool, a hook or a variable passes through it. A value is replaced whole, longest first,
as it appears plainly and as it appears escaped inside a JSON string, by `[redacted]` or
`[redacted:NAME]` when the value came from a named variable.

Live output arrives in chunks that may split a secret, so `StreamRedactor` holds back the
last `longest - 1` characters of each chunk until the next one (or `flush()`) shows they
are not the start of a secret. Values shorter than `MIN_SECRET_CHARS` are ignored:
redacting "a" or "1" would shred ordinary output without protecting anything.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any, Final

from rawtrio.frozen import FrozenJSON, freeze, thaw

MIN_SECRET_CHARS: Final = 6
REDACTED: Final = "[redacted]"


class Redactor:
    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._names: dict[str, str | None] = {}
        self._regex: re.Pattern[str] | None = None
        self.longest = 0
        for value in secrets:
            self.add(None, value)

    def add(self, name: str | None, value: str) -> None:
        """Redact `value` from now on; `name` labels the marker (`[redacted:NAME]`)."""
        if len(value) < MIN_SECRET_CHARS:
            return
        self._names[value] = name
        # The same secret as it appears inside a JSON string (escaped quotes, newlines).
        escaped = json.dumps(value)[1:-1]
        if escaped != value:
            self._names[escaped] = name
        ordered = sorted(self._names, key=len, reverse=True)
        self._regex = re.compile("|".join(map(re.escape, ordered)))
        self.longest = len(ordered[0])

    def __bool__(self) -> bool:
        return self._regex is not None

    def redact(self, text: str) -> str:
        if self._regex is None:
            return text
        return self._regex.sub(self._marker, text)

    def _marker(self, match: re.Match[str]) -> str:
        name = self._names[match.group(0)]
        return f"[redacted:{name}]" if name else REDACTED

    def redact_json(self, value: FrozenJSON) -> FrozenJSON:
        """A frozen copy of a JSON value with every string (and key) redacted."""
        if self._regex is None:
            return value
        return freeze(self._walk(thaw(value)))

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {self.redact(k): self._walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._walk(v) for v in value]
        return value


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
        marker = text.rfind("[redacted", 0, cut + len("[redacted"))
        if marker != -1 and marker < cut:
            end = text.find("]", marker)
            if end != -1 and cut <= end:
                cut = end + 1
        self._pending = text[cut:]
        if text[:cut]:
            self._emit(text[:cut])

    def flush(self) -> None:
        if self._pending:
            pending, self._pending = self._pending, ""
            self._emit(self._redactor.redact(pending))
