"""Each adapter, through its real SDK, against the fake model server: the happy paths."""

from __future__ import annotations

from typing import Any

import pytest

from rawtrio.contracts import ToolStatus
from rawtrio.frozen import freeze, thaw
from rawtrio.messages import (
    AssistantMessage,
    OpaquePart,
    ProviderKind,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
    UserMessage,
)
from rawtrio.providers.base import (
    TextDelta,
    ThinkingDelta,
    ToolCallArgsDelta,
    ToolCallBegin,
    UsageInfo,
)
from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from tests.providers.support import KINDS, collect, open_provider, request, scenario

pytestmark = pytest.mark.parametrize("kind", KINDS)


async def test_text_streams_as_deltas_and_ends_in_the_whole_message(kind: ProviderKind) -> None:
    text = "Hello there, this arrives in pieces."
    async with (
        open_fake_model_server(scenario({"text": text, "chunk": 5})) as server,
        open_provider(kind, server) as provider,
    ):
        events, done = await collect(provider, request(UserMessage("hi")))
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1
    assert "".join(deltas) == text
    assert done.message.parts == (TextPart(text),)
    assert done.message.provider == kind
    assert done.stop_reason == "end_turn"


async def test_thinking_streams_before_text_and_is_kept(kind: ProviderKind) -> None:
    reply = {"thinking": "Let me think about it.", "text": "Done.", "chunk": 6}
    async with (
        open_fake_model_server(scenario(reply)) as server,
        open_provider(kind, server) as provider,
    ):
        events, done = await collect(provider, request(UserMessage("hi")))
    thinking = [e.text for e in events if isinstance(e, ThinkingDelta)]
    assert "".join(thinking) == "Let me think about it."
    first_text = next(i for i, e in enumerate(events) if isinstance(e, TextDelta))
    assert all(isinstance(e, ThinkingDelta) for e in events[:first_text])
    part = done.message.parts[0]
    assert isinstance(part, ThinkingPart)
    assert part.text == "Let me think about it."
    assert done.message.text == "Done."
    if kind == "anthropic":
        assert part.signature
    if kind == "openai-responses":
        opaque = done.message.parts[1]
        assert isinstance(opaque, OpaquePart)
        assert opaque.data["type"] == "reasoning"
        assert opaque.data["encrypted_content"]


async def test_tool_call_arguments_arrive_in_chunks(kind: ProviderKind) -> None:
    calls = [
        {"name": "bash", "arguments": {"command": "ls -la /tmp"}},
        {"name": "bash", "arguments": {"command": "pwd"}},
    ]
    async with (
        open_fake_model_server(
            scenario({"text": "Looking.", "tool_calls": calls, "chunk": 4})
        ) as s,
        open_provider(kind, s) as provider,
    ):
        events, done = await collect(provider, request(UserMessage("hi")))
    begins = [e for e in events if isinstance(e, ToolCallBegin)]
    assert [(b.index, b.name) for b in begins] == [(0, "bash"), (1, "bash")]
    first_args = [e for e in events if isinstance(e, ToolCallArgsDelta) and e.index == 0]
    assert len(first_args) > 1
    assert all(e.call_id == begins[0].call_id for e in first_args)
    assert "".join(e.delta for e in first_args) == '{"command":"ls -la /tmp"}'
    got = done.message.tool_calls
    assert [c.id for c in got] == [b.call_id for b in begins]
    assert [thaw(c.arguments) for c in got] == [{"command": "ls -la /tmp"}, {"command": "pwd"}]
    assert done.stop_reason == "tool_use"
    if kind == "openai-responses":
        assert all(c.provider_item_id for c in got)


async def test_malformed_tool_arguments_are_kept_raw(kind: ProviderKind) -> None:
    call = {"name": "bash", "raw_arguments": '{"command": "ls'}
    async with (
        open_fake_model_server(scenario({"tool_calls": [call]})) as server,
        open_provider(kind, server) as provider,
    ):
        _, done = await collect(provider, request(UserMessage("hi")))
    (got,) = done.message.tool_calls
    assert got.raw_arguments == '{"command": "ls'
    assert got.arguments is None


async def test_usage_is_reported_with_cache_figures(kind: ProviderKind) -> None:
    usage = {"input_tokens": 100, "output_tokens": 7, "cache_read_tokens": 30}
    if kind == "anthropic":
        usage["cache_write_tokens"] = 5
    async with (
        open_fake_model_server(scenario({"text": "ok", "usage": usage})) as server,
        open_provider(kind, server) as provider,
    ):
        _, done = await collect(provider, request(UserMessage("hi")))
    if kind == "anthropic":  # Anthropic counts cached tokens apart from input_tokens
        assert done.usage == UsageInfo(100, 7, cache_read_tokens=30, cache_write_tokens=5)
    else:  # OpenAI counts them inside; we report them apart, as Anthropic does
        assert done.usage == UsageInfo(70, 7, cache_read_tokens=30)
    assert done.usage.total_input_tokens == (135 if kind == "anthropic" else 100)


def _round_trip_scenario(first: dict[str, Any]) -> Scenario:
    return Scenario.from_dict(
        {
            "rules": [
                {"match": "and then", "replies": [{"text": "All clear."}]},
                {"match": "*", "replies": [first, {"text": "Finished."}]},
            ]
        }
    )


async def test_round_trip_with_results_and_a_user_note_is_accepted(kind: ProviderKind) -> None:
    first = {
        "thinking": "Two commands.",
        "text": "Running both.",
        "tool_calls": [
            {"name": "bash", "arguments": {"command": "ls"}},
            {"name": "bash", "arguments": {"command": "sleep 100"}},
        ],
    }
    async with (
        open_fake_model_server(_round_trip_scenario(first)) as server,
        open_provider(kind, server) as provider,
    ):
        _, step0 = await collect(provider, request(UserMessage("hello")))
        ok_call, cancelled_call = step0.message.tool_calls
        transcript = (
            UserMessage("hello"),
            step0.message,
            ToolResult(ok_call.id, "bash", ToolStatus.OK, "a.txt\nb.txt"),
            ToolResult(
                cancelled_call.id, "bash", ToolStatus.CANCELLED, "cancelled by user", started=True
            ),
            UserMessage("and then? [the previous turn was cancelled]"),
        )
        _, done = await collect(provider, request(*transcript))
    assert done.message.text == "All clear."
    sent = server.requests[-1]
    assert sent.status == 200
    if kind == "anthropic":
        messages = sent.body["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "user"]
        blocks = messages[2]["content"]
        assert [b["type"] for b in blocks] == ["tool_result", "tool_result", "text"]
        assert [b.get("tool_use_id") for b in blocks[:2]] == [ok_call.id, cancelled_call.id]
        assert [b["is_error"] for b in blocks[:2]] == [False, True]
        assert blocks[2]["text"].startswith("and then?")
        assert [b["type"] for b in messages[1]["content"]] == [
            "thinking",
            "text",
            "tool_use",
            "tool_use",
        ]
    elif kind == "openai-chat":
        roles = [m["role"] for m in sent.body["messages"]]
        assert roles == ["system", "user", "assistant", "tool", "tool", "user"]
        assistant = sent.body["messages"][2]
        assert [c["id"] for c in assistant["tool_calls"]] == [ok_call.id, cancelled_call.id]
        assert assistant["tool_calls"][0]["function"]["arguments"] == '{"command": "ls"}'
    else:
        kinds = [i.get("type", "message") for i in sent.body["input"]]
        assert kinds == [
            "message",
            "reasoning",
            "message",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output",
            "message",
        ]
        call_item = sent.body["input"][3]
        assert call_item["id"] == ok_call.provider_item_id
        assert call_item["call_id"] == ok_call.id


async def test_opaque_parts_go_back_to_the_same_provider(kind: ProviderKind) -> None:
    first = {"thinking": "Private reasoning.", "tool_calls": [{"name": "bash"}]}
    async with (
        open_fake_model_server(_round_trip_scenario(first)) as server,
        open_provider(kind, server) as provider,
    ):
        _, step0 = await collect(provider, request(UserMessage("hello")))
        (call,) = step0.message.tool_calls
        result = ToolResult(call.id, "bash", ToolStatus.OK, "fine")
        _, done = await collect(provider, request(UserMessage("hello"), step0.message, result))
    assert done.message.text == "Finished."
    body = server.requests[-1].body
    if kind == "anthropic":
        (thinking,) = [b for b in body["messages"][1]["content"] if b["type"] == "thinking"]
        part = step0.message.parts[0]
        assert isinstance(part, ThinkingPart)
        assert thinking == {"type": "thinking", "thinking": part.text, "signature": part.signature}
    elif kind == "openai-responses":
        (reasoning,) = [i for i in body["input"] if i.get("type") == "reasoning"]
        opaque = next(p for p in step0.message.parts if isinstance(p, OpaquePart))
        assert reasoning == thaw(opaque.data)
    else:  # Chat Completions has no way to send reasoning back
        assert "Private reasoning." not in str(body)


_FOREIGN_PARTS = {
    "anthropic": (
        ThinkingPart("openai thoughts", None, "openai-responses"),
        OpaquePart("openai-responses", freeze({"type": "reasoning", "id": "rs_1", "summary": []})),
    ),
    "openai-chat": (
        ThinkingPart("claude thoughts", "sig", "anthropic"),
        OpaquePart("anthropic", freeze({"type": "redacted_thinking", "data": "abc"})),
    ),
    "openai-responses": (
        ThinkingPart("claude thoughts", "sig", "anthropic"),
        OpaquePart("anthropic", freeze({"type": "redacted_thinking", "data": "abc"})),
    ),
}


async def test_other_providers_opaque_parts_are_dropped(kind: ProviderKind) -> None:
    call = ToolCall.parse("call_1", "bash", '{"command": "ls"}')
    foreign = AssistantMessage((*_FOREIGN_PARTS[kind], TextPart("Listing."), call), "anthropic")
    transcript = (
        UserMessage("hello"),
        foreign,
        ToolResult("call_1", "bash", ToolStatus.OK, "a.txt"),
    )
    async with (
        open_fake_model_server(_round_trip_scenario({"text": "x"})) as server,
        open_provider(kind, server) as provider,
    ):
        _, done = await collect(provider, request(*transcript))
    assert done.message.text == "Finished."
    sent = server.requests[-1]
    assert sent.status == 200
    body = str(sent.body.get("messages", sent.body.get("input")))
    for needle in ("redacted_thinking", "reasoning", "thoughts", "'sig'"):
        assert needle not in body
    assert "Listing." in body
