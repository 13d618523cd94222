"""Helpers for the context tests: scenarios that grow a session past its threshold."""

from __future__ import annotations

from typing import Any

from rawtrio import events as ev
from rawtrio.context.compaction import COMPACTION_MARKER
from rawtrio.runtime.session import Session
from rawtrio.testing.fake_model import FakeModelServer

SUMMARY = "SUMMARY: the user asked for turns; notes.txt was read each time."


def scenario(summary: dict[str, Any] | None = None) -> dict[str, Any]:
    """Each turn reads notes.txt, then answers; summary requests get `summary`."""
    return {
        "rules": [
            {"match": "@compaction", "replies": [summary or {"text": SUMMARY}]},
            {
                "match": "*",
                "replies": [
                    {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
                    {"text": "ok"},
                ],
            },
        ]
    }


def turn_text(i: int) -> str:
    return f"turn {i}: " + "please keep going with the work " * 40


async def events_of(session: Session, kind: type[ev.E]) -> list[ev.E]:
    return [e for e in await session.events_since(0) if isinstance(e, kind)]


def summary_requests(server: FakeModelServer) -> list[Any]:
    return [r for r in server.requests if (r.user_text or "").startswith(COMPACTION_MARKER)]
