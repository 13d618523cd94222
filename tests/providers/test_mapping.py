"""The neutral transcript → each SDK's request params, without a server."""

from __future__ import annotations

from typing import Any

from rawtrio.contracts import ToolStatus
from rawtrio.frozen import freeze
from rawtrio.messages import (
    AssistantMessage,
    Message,
    OpaquePart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
    UserMessage,
)
from rawtrio.providers.anthropic import to_anthropic_messages, to_anthropic_tools
from rawtrio.providers.openai_chat import to_chat_messages, to_chat_tools
from rawtrio.providers.openai_responses import to_responses_input, to_responses_tools
from tests.providers.support import BASH

GOOD = ToolCall.parse("call_a", "bash", '{"command": "ls"}', provider_item_id="fc_a")
BROKEN = ToolCall.parse("call_b", "bash", '{"command": ')
REASONING = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"}
ASSISTANT = AssistantMessage(
    (
        ThinkingPart("thoughts", "sig-1", "anthropic"),
        OpaquePart("anthropic", freeze({"type": "redacted_thinking", "data": "xyz"})),
        ThinkingPart("summary", None, "openai-responses"),
        OpaquePart("openai-responses", freeze(REASONING)),
        TextPart("Let me look."),
        GOOD,
        BROKEN,
    ),
    "anthropic",
)
TRANSCRIPT: tuple[Message, ...] = (
    UserMessage("hello"),
    ASSISTANT,
    ToolResult("call_a", "bash", ToolStatus.OK, "a.txt"),
    ToolResult("call_b", "bash", ToolStatus.INVALID_ARGUMENTS, "arguments are not JSON"),
    UserMessage("note: continue"),
)


def test_anthropic_assistant_blocks_keep_order_and_own_opaque_parts() -> None:
    messages: Any = to_anthropic_messages(TRANSCRIPT)
    assert messages[1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "thoughts", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "xyz"},
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "call_a", "name": "bash", "input": {"command": "ls"}},
            {"type": "tool_use", "id": "call_b", "name": "bash", "input": {}},
        ],
    }


def test_anthropic_results_and_following_user_text_form_one_user_message() -> None:
    messages: Any = to_anthropic_messages(TRANSCRIPT)
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_a", "is_error": False, "content": "a.txt"},
        {
            "type": "tool_result",
            "tool_use_id": "call_b",
            "is_error": True,
            "content": "arguments are not JSON",
        },
        {"type": "text", "text": "note: continue"},
    ]


def test_anthropic_drops_thinking_without_its_signature_and_blank_text() -> None:
    msg = AssistantMessage((ThinkingPart("unsigned"), TextPart("  \n"), TextPart("ok")))
    messages: Any = to_anthropic_messages((UserMessage("hi"), msg))
    assert messages[1]["content"] == [{"type": "text", "text": "ok"}]


def test_anthropic_omits_empty_result_content() -> None:
    call = AssistantMessage((GOOD,))
    result = ToolResult("call_a", "bash", ToolStatus.OK, "")
    messages: Any = to_anthropic_messages((UserMessage("hi"), call, result))
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_a", "is_error": False}
    ]


def test_anthropic_tools() -> None:
    assert to_anthropic_tools((BASH,)) == [
        {
            "name": "bash",
            "description": "Run a shell command.",
            "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
        }
    ]


def test_chat_messages() -> None:
    messages: Any = to_chat_messages("system prompt", TRANSCRIPT)
    assert messages == [
        {"role": "system", "content": "system prompt"},
        {"role": "user", "content": "hello"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "bash", "arguments": "{}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "a.txt"},
        {"role": "tool", "tool_call_id": "call_b", "content": "arguments are not JSON"},
        {"role": "user", "content": "note: continue"},
    ]


def test_chat_assistant_with_only_calls_has_null_content() -> None:
    messages: Any = to_chat_messages("", (UserMessage("hi"), AssistantMessage((GOOD,))))
    assert messages[1]["content"] is None
    assert messages[0] == {"role": "user", "content": "hi"}


def test_chat_tools() -> None:
    (tool,) = to_chat_tools((BASH,))
    assert tool["type"] == "function"
    assert tool["function"]["name"] == "bash"
    assert tool["function"].get("parameters") == {
        "type": "object",
        "properties": {"command": {"type": "string"}},
    }


def test_responses_input_items() -> None:
    items: Any = to_responses_input(TRANSCRIPT)
    assert items == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]},
        REASONING,
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}],
        },
        {
            "type": "function_call",
            "call_id": "call_a",
            "name": "bash",
            "arguments": '{"command": "ls"}',
            "id": "fc_a",
        },
        {"type": "function_call", "call_id": "call_b", "name": "bash", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_a", "output": "a.txt"},
        {"type": "function_call_output", "call_id": "call_b", "output": "arguments are not JSON"},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "note: continue"}],
        },
    ]


def test_responses_tools() -> None:
    assert to_responses_tools((BASH,)) == [
        {
            "type": "function",
            "name": "bash",
            "description": "Run a shell command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
            "strict": False,
        }
    ]
