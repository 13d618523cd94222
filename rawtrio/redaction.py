"""Keeping secret values out of what rawtrio shows, stores and sends (docs/security.md).

One `Redactor` per runtime collects the values that must never appear: API keys, and
variables the config marks secret (added as they are first read). Everything that leaves
a tool, a hook or a variable passes through it. A value is replaced whole, longest first,
as it appears plainly and as it appears escaped inside a JSON string, by `[redacted]` or
`[redacted:NAME]` when the value came from a named variable.

Events and messages are scrubbed whole on their way to subscribers and the store
(`Redactor.scrub`): every string inside them, however deeply nested. A thinking part whose
text had to change loses its provider signature (the provider would reject the altered
text otherwise) and is sent back as plain thinking. `RedactingFilter` does the same for
log records, so log files never hold a secret either.

Live output arrives in chunks that may split a secret, so `StreamRedactor` holds back the
last `longest - 1` characters of each chunk until the next one (or `flush()`) shows they
are not the start of a secret. Values shorter than `MIN_SECRET_CHARS` are ignored:
redacting "a" or "1" would shred ordinary output without protecting anything.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final, TypeVar

from rawtrio.frozen import FrozenJSON, freeze, thaw
from rawtrio.messages import ImagePart

MIN_SECRET_CHARS: Final = 6
REDACTED: Final = "[redacted]"
T = TypeVar("T")
#: The field names `Redactor.scrub` walks, per dataclass type (dataclasses.fields is slow).
_FIELDS: dict[type, tuple[str, ...]] = {}


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

    def scrub(self, value: T) -> T:
        """`value` (an event, a message, any frozen data) with every string redacted.

        Returns `value` itself when nothing in it changed."""
        if self._regex is None:
            return value
        return self._scrub(value)  # type: ignore[no-any-return]

    def _scrub(self, value: Any) -> Any:
        # Called for every event (each streamed delta): the common cases come first and a
        # string without a secret is returned as itself.
        kind = type(value)
        if kind is str:
            assert self._regex is not None
            return value if self._regex.search(value) is None else self.redact(value)
        if value is None or isinstance(value, enum.Enum | bool | int | float):
            return value
        if isinstance(value, str):  # a str subclass that is not an enum
            return self.redact(value)
        if kind in _FIELDS or (dataclasses.is_dataclass(value) and not isinstance(value, type)):
            return self._scrub_fields(value)
        if isinstance(value, tuple):
            items = tuple(self._scrub(v) for v in value)
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        if isinstance(value, Mapping):
            pairs = {self.redact(str(k)): self._scrub(v) for k, v in value.items()}
            same = len(pairs) == len(value) and all(pairs.get(k) is v for k, v in value.items())
            return value if same else MappingProxyType(pairs)
        return value

    def _scrub_fields(self, value: Any) -> Any:
        kind = type(value)
        names = _FIELDS.get(kind)
        if names is None:
            names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(value))
            if kind is ImagePart:
                # Base64 of an image: a secret cannot appear in it in a form a pattern would
                # recognise, and a chance match would corrupt the image (and megabytes of
                # base64 would be scanned for nothing).
                names = _FIELDS[kind] = tuple(n for n in names if n != "data")
        changes = {}
        for name in names:
            old = getattr(value, name)
            new = self._scrub(old)
            if new is not old:
                changes[name] = new
        if not changes:
            return value
        if "text" in changes and getattr(value, "signature", None) is not None:
            # Altered thinking cannot keep the provider's proof: send it back unsigned.
            changes |= {"signature": None, "provider": None}
        return dataclasses.replace(value, **changes)

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {self.redact(k): self._walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._walk(v) for v in value]
        return value


class RedactingFilter(logging.Filter):
    """A log filter that redacts every watched redactor's secrets from each record."""

    def __init__(self) -> None:
        super().__init__()
        self._redactors: list[Redactor] = []

    def watch(self, redactor: Redactor) -> None:
        if all(r is not redactor for r in self._redactors):
            self._redactors.append(redactor)

    def filter(self, record: logging.LogRecord) -> bool:
        if not any(self._redactors):
            return True
        text = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        exc_text = record.exc_text
        for r in self._redactors:
            text = r.redact(text)
            exc_text = r.redact(exc_text) if exc_text else exc_text
        # A pre-filled exc_text is what formatters print instead of formatting exc_info.
        record.msg, record.args, record.exc_text = text, None, exc_text
        return True


#: The process's log filter: front ends attach it to the handlers they configure, and
#: every session's redactor is watched by it.
LOG_FILTER: Final = RedactingFilter()


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
