"""A model reply that is not Unicode: a JSON escape in the stream can spell a lone surrogate
(`"\\ud800"`), which no UTF-8 writer takes. Through each real SDK against the fake model
server, every event and the final message carry U+FFFD in its place, and a whole turn with
such a reply (text and tool-call arguments) completes, is stored, and reopens from SQLite
exactly as the runtime held it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from rawtrio import events as ev
from rawtrio.contracts import TurnOutcome
from rawtrio.messages import (
    AssistantMessage,
    ProviderKind,
    ToolCall,
    ToolResult,
    UserMessage,
    message_from_json,
    message_to_json,
)
from rawtrio.providers.base import (
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallArgsDelta,
    ToolCallBegin,
)
from rawtrio.runtime.runtime import open_runtime
from rawtrio.runtime.session import SessionOptions
from rawtrio.store.sqlite import SqliteStore
from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from rawtrio.tools.settings import ToolSettings
from rawtrio.unicode_safety import has_lone_surrogate
from tests.conftest import provider_for
from tests.providers.support import KINDS, collect, open_provider, request, scenario

pytestmark = pytest.mark.parametrize("kind", KINDS)

BAD = "\ud800"
FFFD = "\ufffd"


def _writable(value: Any) -> bool:
    """Whether `value` (a JSON value) encodes as UTF-8, as SQLite and every pipe need."""
    text = json.dumps(value, ensure_ascii=False)
    return not has_lone_surrogate(text) and bool(text.encode("utf-8"))


def _texts(events: list[StreamEvent]) -> list[str]:
    out: list[str] = []
    for e in events:
        if isinstance(e, TextDelta | ThinkingDelta):
            out.append(e.text)
        elif isinstance(e, ToolCallBegin):
            out += [e.call_id, e.name]
        elif isinstance(e, ToolCallArgsDelta):
            out += [e.call_id, e.delta]
    return out


async def test_text_and_thinking_with_a_lone_surrogate_arrive_as_replacement_characters(
    kind: ProviderKind,
) -> None:
    reply = {"thinking": f"think {BAD} hard", "text": f"bad {BAD} text", "chunk": 3}
    async with (
        open_fake_model_server(scenario(reply)) as server,
        open_provider(kind, server) as provider,
    ):
        events, done = await collect(provider, request(UserMessage("hi")))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == f"bad {FFFD} text"
    thinking = "".join(e.text for e in events if isinstance(e, ThinkingDelta))
    assert thinking == f"think {FFFD} hard"
    assert all(_writable(t) for t in _texts(events))
    assert done.message.text == f"bad {FFFD} text"
    assert _writable(message_to_json(done.message))
    assert message_from_json(message_to_json(done.message)) == done.message


async def test_tool_call_arguments_that_spell_a_lone_surrogate_parse_to_replacement_characters(
    kind: ProviderKind,
) -> None:
    calls = [
        # As a JSON escape inside the argument text (what `json.dumps` of the object sends).
        {"name": "bash", "arguments": {"command": f"echo {BAD}", f"k{BAD}": [BAD]}},
        # As the character itself in the argument text (the SSE frame escapes it).
        {"name": "bash", "raw_arguments": f'{{"command": "echo {BAD}!"}}'},
    ]
    async with (
        open_fake_model_server(scenario({"tool_calls": calls, "chunk": 4})) as server,
        open_provider(kind, server) as provider,
    ):
        events, done = await collect(provider, request(UserMessage("hi")))
    assert all(_writable(t) for t in _texts(events))
    first, second = done.message.tool_calls
    assert first.arguments is not None
    assert second.arguments is not None
    assert dict(first.arguments) == {"command": f"echo {FFFD}", f"k{FFFD}": (FFFD,)}
    assert dict(second.arguments) == {"command": f"echo {FFFD}!"}
    assert second.raw_arguments == f'{{"command": "echo {FFFD}!"}}'
    for call in (first, second):
        assert _writable(message_to_json(AssistantMessage((call,))))
        assert _writable(json.loads(call.arguments_json()))
        # Parsed again from its stored form, the call is the same.
        assert ToolCall.parse(call.id, call.name, call.raw_arguments, call.provider_item_id) == call
    assert message_from_json(message_to_json(done.message)) == done.message


async def test_a_turn_with_an_unencodable_reply_completes_and_reopens_from_sqlite_as_held(
    kind: ProviderKind, tmp_path: Path
) -> None:
    rules = {
        "rules": [
            {
                "match": "*",
                "replies": [
                    {
                        "text": f"bad {BAD} text",
                        "tool_calls": [
                            {"name": "bash", "arguments": {"command": f"echo 'got {BAD}'"}}
                        ],
                    },
                    {"text": f"done {BAD}"},
                ],
            }
        ]
    }
    db = tmp_path / "sessions.db"
    async with open_fake_model_server(Scenario.from_dict(rules)) as server:
        options = SessionOptions(
            cwd=tmp_path,
            provider=provider_for(server, kind),
            tools=ToolSettings(sigterm_grace_s=0.2),
        )
        async with SqliteStore(db) as store, open_runtime(store) as runtime:
            session = await runtime.create_session(options)
            seen: list[ev.Event] = []
            with session.subscribe() as sub, trio.fail_after(60):
                turn_id = await session.submit("answer badly")
                async for event in sub:
                    seen.append(event)
                    if isinstance(event, ev.TurnEnded):
                        break
                ended = await session.wait_turn(turn_id)
            assert ended.outcome is TurnOutcome.COMPLETED, ended.reason
            held = list(session.context)
            session_id = session.id
            stored_events = await store.events_since(session_id, 0)
        assert store._worker.batch_errors == 0
        replies = [m for m in held if isinstance(m, AssistantMessage)]
        assert [m.text for m in replies] == [f"bad {FFFD} text", f"done {FFFD}"]
        (call,) = replies[0].tool_calls
        assert call.arguments is not None
        assert call.arguments["command"] == f"echo 'got {FFFD}'"
        result = next(m for m in held if isinstance(m, ToolResult))
        assert result.content.startswith(f"got {FFFD}\n"), result.content
        assert all(_writable(message_to_json(m)) for m in held)
        text = "".join(e.text for e in seen if isinstance(e, ev.TextDelta))
        assert text == f"bad {FFFD} textdone {FFFD}"
        assert [e.seq for e in stored_events] == [e.seq for e in seen]
        assert all(_writable(ev.event_to_json(e)) for e in stored_events)
        # The next request carried the replacement character, not the surrogate.
        assert all(_writable(r.body) for r in server.requests)

        async with SqliteStore(db) as store, open_runtime(store) as runtime:
            resumed = await runtime.open_session(session_id, options)
            assert resumed.context == held
