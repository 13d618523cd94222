"""Noticing that the model-facing tool definitions changed between runs of a session.

A resumed session keeps its committed history and system prompt, but its tools come from
today's configuration (a tool selected or removed, an MCP server added, a schema changed).
The session stores one fingerprint per tool when it starts; the next start compares them
and, when they differ, tells the model once in the next user message, and the request's
cache key (`digest`) changes with them — once, not on every request.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping

from rawtrio.frozen import thaw
from rawtrio.providers.base import ToolSpec

#: Session state key of the tool fingerprints the session last ran with.
STATE_KEY = "tool_fingerprints"


def fingerprints(specs: Iterable[ToolSpec]) -> dict[str, str]:
    """Provider-facing name → a short hash of exactly what the model is sent."""
    out: dict[str, str] = {}
    for spec in specs:
        text = json.dumps([spec.name, spec.description, thaw(spec.input_schema)], sort_keys=True)
        out[spec.name] = hashlib.sha256(text.encode()).hexdigest()[:16]
    return out


def digest(prints: Mapping[str, str]) -> str:
    """One hash of the whole tool list, in order (the order is part of the request)."""
    return hashlib.sha256(json.dumps(list(prints.items())).encode()).hexdigest()[:16]


def changes(before: object, now: Mapping[str, str]) -> str | None:
    """A note for the model naming what changed, or None (also for a first run)."""
    if not isinstance(before, dict) or before == now:
        return None
    added = [n for n in now if n not in before]
    removed = [n for n in before if n not in now]
    changed = [n for n in now if n in before and before[n] != now[n]]
    parts = [
        f"{label}: {', '.join(names)}"
        for label, names in (("added", added), ("removed", removed), ("changed", changed))
        if names
    ]
    if not parts:  # same tools, another order
        parts = ["reordered"]
    return (
        "[rawtrio: the tools available to you changed since this session last ran ("
        + "; ".join(parts)
        + "). Use only the tools in the current tool list; earlier calls to removed tools"
        " cannot be repeated.]"
    )
