"""The OpenAI Chat Completions wire format, exercised through the real `openai` SDK."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from rawtrio.testing.fake_model import open_fake_model_server
from tests.testing.sdk_clients import one_reply, openai_client

USER: Any = {"role": "user", "content": "hello"}


def assistant_calls(*ids: str) -> Any:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "bash", "arguments": "{}"}}
            for i in ids
        ],
    }


def tool_message(call_id: str) -> Any:
    return {"role": "tool", "tool_call_id": call_id, "content": "ok"}


async def test_stream_delivers_text_and_tool_calls_with_usage() -> None:
    calls = [
        {"name": "read_file", "arguments": {"path": "a.txt"}},
        {"name": "bash", "raw_arguments": '{"cmd": "ls -la /tmp"}'},
    ]
    scenario = one_reply(text="Reading two things.", tool_calls=calls, chunk=4)
    async with (
        open_fake_model_server(scenario) as server,
        openai_client(server) as client,
        client.chat.completions.stream(
            model="m", messages=[USER], stream_options={"include_usage": True}
        ) as stream,
    ):
        completion = await stream.get_final_completion()
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Reading two things."
    tool_calls = choice.message.tool_calls or []
    assert [c.function.name for c in tool_calls] == ["read_file", "bash"]
    assert json.loads(tool_calls[0].function.arguments) == {"path": "a.txt"}
    assert tool_calls[1].function.arguments == '{"cmd": "ls -la /tmp"}'
    assert all(c.id.startswith("call_") for c in tool_calls)
    assert completion.usage is not None
    assert completion.usage.total_tokens > 0


async def test_raw_chunks_split_arguments_and_end_with_usage_chunk() -> None:
    scenario = one_reply(thinking="hmm", tool_calls=[{"name": "bash", "arguments": {"cmd": "ls"}}])
    async with open_fake_model_server(scenario) as server, openai_client(server) as client:
        stream = await client.chat.completions.create(
            model="m", messages=[USER], stream=True, stream_options={"include_usage": True}
        )
        async with stream:
            chunks = [chunk async for chunk in stream]
    argument_pieces = [
        str(call.function.arguments)
        for c in chunks
        if c.choices
        for call in c.choices[0].delta.tool_calls or []
        if call.function is not None
    ]
    assert len(argument_pieces) > 2
    assert "".join(argument_pieces) == '{"cmd":"ls"}'
    reasoning = [
        getattr(c.choices[0].delta, "reasoning_content", None) for c in chunks if c.choices
    ]
    assert "hmm" in "".join(str(r) for r in reasoning if r)
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None


async def test_non_stream_returns_completion() -> None:
    async with (
        open_fake_model_server(one_reply(text="plain")) as server,
        openai_client(server) as client,
    ):
        completion = await client.chat.completions.create(model="m", messages=[USER])
    assert completion.choices[0].message.content == "plain"
    assert completion.choices[0].finish_reason == "stop"


@pytest.mark.parametrize(
    ("status", "exc_type"),
    [
        (401, openai.AuthenticationError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
    ],
)
async def test_scripted_errors_map_to_sdk_exceptions(
    status: int, exc_type: type[Exception]
) -> None:
    scenario = one_reply(error={"status": status, "message": "scripted", "retry_after": 2})
    async with open_fake_model_server(scenario) as server, openai_client(server) as client:
        with pytest.raises(exc_type, match="scripted") as info:
            await client.chat.completions.create(model="m", messages=[USER])
    assert isinstance(info.value, openai.APIStatusError)
    assert info.value.response.headers["retry-after"] == "2"


async def test_error_inside_stream_raises_api_error() -> None:
    scenario = one_reply(
        text="some text here", error={"status": 500, "after": 2, "message": "boom"}
    )
    async with open_fake_model_server(scenario) as server, openai_client(server) as client:
        stream = await client.chat.completions.create(model="m", messages=[USER], stream=True)
        async with stream:
            with pytest.raises(openai.APIError, match="boom"):
                async for _ in stream:
                    pass


INVALID: list[tuple[list[dict[str, Any]], str]] = [
    (
        [USER, assistant_calls("call_A", "call_B"), tool_message("call_A")],
        "An assistant message with 'tool_calls' must be followed by tool messages responding to "
        "each 'tool_call_id'. The following tool_call_ids did not have response messages: call_B",
    ),
    (
        [USER, assistant_calls("call_A"), USER],
        "The following tool_call_ids did not have response messages: call_A",
    ),
    (
        [USER, tool_message("call_X")],
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
        "with 'tool_calls'.",
    ),
    (
        [USER, assistant_calls("call_A"), tool_message("call_A"), tool_message("call_Z")],
        "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
    ),
    (
        [{"role": "robot", "content": "x"}],
        "Invalid value: 'robot'. Supported values are: 'system', 'assistant', 'user', "
        "'function', 'tool', and 'developer'.",
    ),
    ([{"role": "user"}], "Missing required parameter: 'messages[0].content'."),
    (
        [USER, {"role": "assistant", "content": None}, USER],
        "Invalid value for 'content': expected a string, got null.",
    ),
    (
        [
            USER,
            assistant_calls("call_A"),
            {
                "role": "tool",
                "tool_call_id": "call_A",
                "content": [
                    {"type": "text", "text": "a dot"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
                ],
            },
        ],
        "Invalid 'messages[2]'. Image URLs are only allowed for messages with role 'user', but "
        "this message with role 'tool' contains an image URL.",
    ),
]


@pytest.mark.parametrize(("messages", "text"), INVALID)
async def test_invalid_requests_are_refused_with_service_text(
    messages: list[dict[str, Any]], text: str
) -> None:
    async with (
        open_fake_model_server(one_reply(text="never")) as server,
        openai_client(server) as client,
    ):
        with pytest.raises(openai.BadRequestError) as info:
            await client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    assert text in str(info.value)
    assert info.value.type == "invalid_request_error"
    assert server.requests[0].status == 400


async def test_bad_tool_name_is_refused() -> None:
    tools = [{"type": "function", "function": {"name": "mcp/x", "parameters": {}}}]
    async with open_fake_model_server() as server, openai_client(server) as client:
        with pytest.raises(openai.BadRequestError, match="does not match pattern"):
            await client.chat.completions.create(model="m", messages=[USER], tools=tools)  # type: ignore[arg-type]


async def test_answered_tool_calls_are_accepted_and_advance_the_step() -> None:
    messages = [
        USER,
        assistant_calls("call_A", "call_B"),
        tool_message("call_B"),
        tool_message("call_A"),
    ]
    async with (
        open_fake_model_server(one_reply(text="first")) as server,
        openai_client(server) as client,
    ):
        completion = await client.chat.completions.create(model="m", messages=messages)
    assert completion.choices[0].message.content == "done"  # step 1 is past the script
    assert server.requests[0].step == 1
