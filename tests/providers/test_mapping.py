"""The neutral transcript → each SDK's request params, without a server."""

from __future__ import annotations

from typing import Any

from rawtrio.contracts import ToolStatus
from rawtrio.frozen import freeze
from rawtrio.messages import (
    AssistantMessage,
    ImagePart,
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


PNG_DATA = "iVBORw0KGgoAAAAN"  # a PNG signature's base64 (adapters do not decode)
WITH_IMAGE: tuple[Message, ...] = (
    UserMessage("hi"),
    AssistantMessage((GOOD,)),
    ToolResult(
        "call_a",
        "bash",
        ToolStatus.OK,
        "[image 1: image/png, 12 bytes]",
        images=(ImagePart("image/png", PNG_DATA), ImagePart("image/webp", "UklGRg==")),
    ),
)


def test_anthropic_result_with_images_is_text_then_image_blocks() -> None:
    messages: Any = to_anthropic_messages(WITH_IMAGE)
    assert messages[2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "call_a",
            "is_error": False,
            "content": [
                {"type": "text", "text": "[image 1: image/png, 12 bytes]"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": PNG_DATA},
                },
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/webp", "data": "UklGRg=="},
                },
            ],
        }
    ]


def test_anthropic_result_with_images_and_blank_text_has_only_images() -> None:
    result = ToolResult(
        "call_a", "bash", ToolStatus.OK, " ", images=(ImagePart("image/png", PNG_DATA),)
    )
    messages: Any = to_anthropic_messages((UserMessage("hi"), AssistantMessage((GOOD,)), result))
    assert [b["type"] for b in messages[2]["content"][0]["content"]] == ["image"]


def test_images_of_types_the_apis_refuse_are_not_sent() -> None:
    result = ToolResult(
        "call_a", "bash", ToolStatus.OK, "svg", images=(ImagePart("image/svg+xml", "PHN2Zz4="),)
    )
    transcript = (UserMessage("hi"), AssistantMessage((GOOD,)), result)
    anthropic_messages: Any = to_anthropic_messages(transcript)
    assert anthropic_messages[2]["content"][0]["content"] == "svg"
    assert to_responses_input(transcript)[-1] == {
        "type": "function_call_output",
        "call_id": "call_a",
        "output": "svg",
    }


def test_responses_result_with_images_is_a_list_of_text_and_data_urls() -> None:
    items: Any = to_responses_input(WITH_IMAGE)
    assert items[-1] == {
        "type": "function_call_output",
        "call_id": "call_a",
        "output": [
            {"type": "input_text", "text": "[image 1: image/png, 12 bytes]"},
            {"type": "input_image", "image_url": f"data:image/png;base64,{PNG_DATA}"},
            {"type": "input_image", "image_url": "data:image/webp;base64,UklGRg=="},
        ],
    }


def test_chat_result_with_images_is_its_text_only() -> None:
    messages: Any = to_chat_messages("s", WITH_IMAGE)
    assert messages[-1] == {
        "role": "tool",
        "tool_call_id": "call_a",
        "content": "[image 1: image/png, 12 bytes]",
    }


def test_a_result_without_images_maps_exactly_as_before() -> None:
    plain = ToolResult("call_a", "bash", ToolStatus.OK, "a.txt")
    transcript = (UserMessage("hi"), AssistantMessage((GOOD,)), plain)
    anthropic_messages: Any = to_anthropic_messages(transcript)
    assert anthropic_messages[2]["content"][0]["content"] == "a.txt"
    assert to_responses_input(transcript)[-1] == {
        "type": "function_call_output",
        "call_id": "call_a",
        "output": "a.txt",
    }
