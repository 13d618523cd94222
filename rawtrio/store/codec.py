"""How store rows encode events, messages and history cursors.

Events are stored as their stream-json object (`event_to_json`), so a row reads the same
as what a headless client saw; `event_from_json` is its inverse. A row of an event type
this version does not know (written by a newer rawtrio) decodes to None and is skipped.

Cursors are opaque to callers: a direction letter and the last sequence number returned,
base64-encoded. Paging is keyset (`seq < ?` / `seq > ?` on the primary key), so a page
costs the same at any depth of a long history.

Every text bound to a statement passes `text` (or `dumps`, which does the same): a lone
surrogate (U+D800–U+DFFF) cannot be encoded as UTF-8, so SQLite's binding would raise
`UnicodeEncodeError` and lose the whole write. Model text is made writable where it enters
(`rawtrio.providers._stream`); this is the guard for any other source (an MCP server's or
a hook's JSON, a directory name that is not UTF-8): each lone surrogate is stored as
U+FFFD. The check costs one `str.isascii()` for ASCII text.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from typing import Any

from rawtrio import events as ev
from rawtrio.contracts import DeniedBy, ToolStatus, TurnOutcome
from rawtrio.frozen import freeze
from rawtrio.messages import Message, message_from_json, message_to_json
from rawtrio.store.errors import InvalidCursor
from rawtrio.unicode_safety import replace_lone_surrogates

_ENUMS: dict[str, Any] = {"status": ToolStatus, "outcome": TurnOutcome, "denied_by": DeniedBy}


def dumps(value: Any) -> str:
    """JSON text SQLite can store: lone surrogates (left as they are by `ensure_ascii=False`,
    and only ever inside a string) become U+FFFD."""
    return replace_lone_surrogates(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def text(value: str | None) -> str | None:
    """A text column's value SQLite can store (see the module docstring)."""
    return None if value is None else replace_lone_surrogates(value)


def event_to_row(event: ev.Event) -> str:
    return dumps(ev.event_to_json(event))


def event_from_json(data: dict[str, Any]) -> ev.Event | None:
    cls = ev.EVENT_TYPES.get(data.get("type", ""))
    if cls is None:
        return None
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        value = data[f.name]
        # By field name, where the event declares the enum (compaction's `outcome` is a str).
        if f.name in _ENUMS and value is not None and _ENUMS[f.name].__name__ in str(f.type):
            value = _ENUMS[f.name](value)
        elif isinstance(value, list | dict):
            value = freeze(value)
        kwargs[f.name] = value
    return cls(**kwargs)


def event_from_row(body: str, session_id: str) -> ev.Event | None:
    """A stored event; `session_id` is the row's (a fork shares rows of its source)."""
    data = json.loads(body)
    data["session_id"] = session_id
    return event_from_json(data)


def message_to_row(msg: Message) -> str:
    return dumps(message_to_json(msg))


def message_from_row(body: str) -> Message:
    return message_from_json(json.loads(body))


def searchable_text(event: ev.Event) -> str | None:
    """The words full-text search finds for an event; None for deltas and bookkeeping."""
    if isinstance(event, ev.UserMessageCommitted | ev.AssistantMessageCommitted | ev.Notice):
        return text(event.text or None)
    if isinstance(event, ev.StreamInterrupted):
        return text(event.partial_text or None)
    if isinstance(event, ev.ToolCallFinished):
        return text(f"{event.name}: {event.content}")
    return None


def encode_cursor(newest_first: bool, seq: int) -> str:
    raw = f"{'n' if newest_first else 'o'}{seq}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, newest_first: bool) -> int:
    """The sequence bound of a cursor; it must have been made for the same direction."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        direction, seq = raw[0], int(raw[1:])
    except (binascii.Error, UnicodeDecodeError, ValueError, IndexError):
        raise InvalidCursor(cursor) from None
    if direction != ("n" if newest_first else "o") or seq < 0:
        raise InvalidCursor(cursor)
    return seq
