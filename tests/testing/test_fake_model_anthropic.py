"""The Anthropic Messages wire format, exercised through the real `anthropic` SDK."""

from __future__ import annotations

import base64
from typing import Any

import anthropic
import pytest

from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from rawtrio.testing.fake_model.wire_common import IMAGE_TOKENS, sign
from tests.testing.sdk_clients import anthropic_client, one_reply

USER: Any = {"role": "user", "content": "hello"}


def tool_use(call_id: str, name: str = "read_file") -> Any:
    return {"type": "tool_use", "id": call_id, "name": name, "input": {"path": "a"}}


def tool_result(call_id: str) -> Any:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "ok"}


async def test_stream_delivers_thinking_text_and_tool_use() -> None:
    scenario = one_reply(
        thinking="pondering",
        text="Let me read it.",
        tool_calls=[{"name": "read_file", "arguments": {"path": "a.txt", "n": 1}}],
        chunk=3,
    )
    async with (
        open_fake_model_server(scenario) as server,
        anthropic_client(server) as client,
        client.messages.stream(model="m", max_tokens=100, messages=[USER]) as stream,
    ):
        kinds = [event.type async for event in stream]
        message = await stream.get_final_message()
    assert [b.type for b in message.content] == ["thinking", "text", "tool_use"]
    thinking, text, call = message.content
    assert thinking.type == "thinking"
    assert thinking.thinking == "pondering"
    assert thinking.signature == sign("pondering")
    assert text.type == "text"
    assert text.text == "Let me read it."
    assert call.type == "tool_use"
    assert call.input == {"path": "a.txt", "n": 1}
    assert call.id.startswith("toolu_")
    assert message.stop_reason == "tool_use"
    assert kinds.count("input_json") > 2  # arguments arrived in several pieces
    assert server.requests[0].wire == "anthropic"
    assert server.requests[0].outcome == "completed"


async def test_tool_ids_are_stable_for_the_same_conversation() -> None:
    scenario = one_reply(tool_calls=[{"name": "bash", "arguments": {}}])
    async with open_fake_model_server(scenario) as server, anthropic_client(server) as client:
        ids = []
        for _ in range(2):
            message = await client.messages.create(model="m", max_tokens=10, messages=[USER])
            block = message.content[0]
            assert block.type == "tool_use"
            ids.append(block.id)
    assert ids[0] == ids[1]


async def test_non_stream_returns_full_message() -> None:
    async with (
        open_fake_model_server(one_reply(text="plain")) as server,
        anthropic_client(server) as client,
    ):
        message = await client.messages.create(model="m", max_tokens=10, messages=[USER])
    assert message.content[0].type == "text"
    assert message.content[0].text == "plain"
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens > 0


async def test_reply_is_chosen_by_steps_after_the_user_text() -> None:
    scenario = Scenario.from_dict(
        {
            "rules": [
                {
                    "match": "hello",
                    "replies": [
                        {"tool_calls": [{"name": "bash", "id": "toolu_1"}]},
                        {"text": "two"},
                    ],
                }
            ]
        }
    )
    messages: list[Any] = [
        USER,
        {"role": "assistant", "content": [tool_use("toolu_1", "bash")]},
        {"role": "user", "content": [tool_result("toolu_1")]},
    ]
    async with open_fake_model_server(scenario) as server, anthropic_client(server) as client:
        message = await client.messages.create(model="m", max_tokens=10, messages=messages)
    assert message.content[0].type == "text"
    assert message.content[0].text == "two"
    assert server.requests[0].step == 1
    assert server.requests[0].user_text == "hello"


async def test_usage_override_is_reported() -> None:
    usage = {"input_tokens": 7, "output_tokens": 3, "cache_read_tokens": 2, "cache_write_tokens": 1}
    async with (
        open_fake_model_server(one_reply(text="x", usage=usage)) as server,
        anthropic_client(server) as client,
        client.messages.stream(model="m", max_tokens=10, messages=[USER]) as s,
    ):
        message = await s.get_final_message()
    u = message.usage
    assert (u.input_tokens, u.output_tokens) == (7, 3)
    assert (u.cache_read_input_tokens, u.cache_creation_input_tokens) == (2, 1)


@pytest.mark.parametrize(
    ("status", "exc_type"),
    [
        (401, anthropic.AuthenticationError),
        (429, anthropic.RateLimitError),
        (500, anthropic.InternalServerError),
        (529, anthropic.OverloadedError),
    ],
)
async def test_scripted_errors_map_to_sdk_exceptions(
    status: int, exc_type: type[Exception]
) -> None:
    scenario = one_reply(error={"status": status, "message": "scripted", "retry_after": 3})
    async with open_fake_model_server(scenario) as server, anthropic_client(server) as client:
        with pytest.raises(exc_type, match="scripted") as info:
            await client.messages.create(model="m", max_tokens=10, messages=[USER])
    assert isinstance(info.value, anthropic.APIStatusError)
    assert info.value.status_code == status
    assert info.value.response.headers["retry-after"] == "3"
    assert server.requests[0].status == status


async def test_error_inside_stream_raises_in_sdk() -> None:
    scenario = one_reply(text="partial text", error={"status": 529, "after": 4})
    async with open_fake_model_server(scenario) as server, anthropic_client(server) as client:
        with pytest.raises(anthropic.APIStatusError, match="overloaded_error"):
            async with client.messages.stream(model="m", max_tokens=10, messages=[USER]) as s:
                await s.get_final_message()


# --- validation: each rule refused with the service's text --------------------------------


def missing_result_conversation() -> list[dict[str, Any]]:
    return [
        USER,
        {"role": "assistant", "content": [tool_use("toolu_A"), tool_use("toolu_B")]},
        {"role": "user", "content": [tool_result("toolu_A")]},
    ]


INVALID: list[tuple[dict[str, Any], str]] = [
    (
        {"messages": missing_result_conversation()},
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_B. Each `tool_use` block must have a corresponding `tool_result` block in the next "
        "message.",
    ),
    (
        {"messages": [USER, {"role": "assistant", "content": [tool_use("toolu_A")]}]},
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_A.",
    ),
    (
        {
            "messages": [
                USER,
                {"role": "assistant", "content": "sure"},
                {"role": "user", "content": [tool_result("toolu_X")]},
            ]
        },
        "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_X. "
        "Each `tool_result` block must have a corresponding `tool_use` block in the previous "
        "message.",
    ),
    (
        {
            "messages": [
                USER,
                {"role": "assistant", "content": [tool_use("toolu_A")]},
                {"role": "user", "content": [tool_result("toolu_A"), tool_result("toolu_Z")]},
            ]
        },
        "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_Z.",
    ),
    (
        {
            "messages": [
                USER,
                {"role": "assistant", "content": [tool_use("toolu_A")]},
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "note"}, tool_result("toolu_A")],
                },
            ]
        },
        "messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message.",
    ),
    (
        {"messages": [{"role": "system", "content": "be nice"}, USER]},
        'messages: Unexpected role "system". The Messages API accepts a top-level `system` '
        'parameter, not "system" as an input message role.',
    ),
    (
        {"messages": [{"role": "tool", "content": "x"}]},
        "messages.0.role: Input should be 'user' or 'assistant'",
    ),
    (
        {"messages": [{"role": "user", "content": ""}]},
        "messages.0: all messages must have non-empty content except for the optional final "
        "assistant message",
    ),
    (
        {"messages": [USER, {"role": "assistant", "content": []}, USER]},
        "messages.1: all messages must have non-empty content",
    ),
    (
        {"messages": [{"role": "user", "content": [{"type": "text", "text": ""}]}]},
        "messages: text content blocks must be non-empty",
    ),
    (
        {"messages": [USER], "tools": [{"name": "mcp/x.y", "input_schema": {"type": "object"}}]},
        "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'",
    ),
    (
        {
            "messages": [
                USER,
                {
                    "role": "assistant",
                    "content": [{"type": "thinking", "thinking": "hmm", "signature": "forged"}],
                },
                USER,
            ]
        },
        "messages.1.content.0: Invalid `signature` in `thinking` block",
    ),
    (
        {"messages": [USER], "thinking": {"type": "enabled", "budget_tokens": 2000}},
        "`max_tokens` must be greater than `thinking.budget_tokens`.",
    ),
]


@pytest.mark.parametrize(("params", "text"), INVALID)
async def test_invalid_requests_are_refused_with_service_text(
    params: dict[str, Any], text: str
) -> None:
    async with (
        open_fake_model_server(one_reply(text="never")) as server,
        anthropic_client(server) as client,
    ):
        with pytest.raises(anthropic.BadRequestError) as info:
            await client.messages.create(model="m", max_tokens=1000, **params)
    assert text in str(info.value)
    assert info.value.body == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": server.requests[0].error},
        "request_id": info.value.body["request_id"],  # type: ignore[index]
    }
    assert server.requests[0].status == 400


async def test_max_tokens_is_required() -> None:
    async with open_fake_model_server() as server, anthropic_client(server) as client:
        with pytest.raises(anthropic.BadRequestError, match="max_tokens: Field required"):
            await client.post(
                "/v1/messages",
                body={"model": "m", "messages": [USER]},
                cast_to=anthropic.types.Message,
            )


async def test_valid_conversation_with_signed_thinking_and_results_is_accepted() -> None:
    messages: list[Any] = [
        USER,
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": sign("hmm")},
                tool_use("toolu_A"),
            ],
        },
        {"role": "user", "content": [tool_result("toolu_A"), {"type": "text", "text": "(note)"}]},
    ]
    async with (
        open_fake_model_server(one_reply(text="a")) as server,
        anthropic_client(server) as client,
    ):
        message = await client.messages.create(
            model="m",
            max_tokens=2000,
            messages=messages,
            system="sys",
        )
    assert message.content[0].type == "text"


async def test_malformed_raw_arguments_reach_the_sdk_unchanged() -> None:
    scenario = one_reply(tool_calls=[{"name": "bash", "raw_arguments": '{"cmd": }'}])
    async with open_fake_model_server(scenario) as server, anthropic_client(server) as client:
        with pytest.raises(ValueError, match="Unable to parse tool parameter JSON"):
            async with client.messages.stream(model="m", max_tokens=9, messages=[USER]) as s:
                await s.get_final_message()


PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 24).decode()
JPEG = base64.b64encode(b"\xff\xd8\xff\xe0" + b"\0" * 24).decode()


def image_block(data: Any = PNG, media_type: str = "image/png") -> Any:
    source = {"type": "base64", "media_type": media_type}
    if data is not None:
        source["data"] = data
    return {"type": "image", "source": source}


def with_result_content(*content: Any) -> list[Any]:
    """A conversation whose tool result's content is `content`."""
    result = {"type": "tool_result", "tool_use_id": "toolu_A", "content": list(content)}
    return [
        USER,
        {"role": "assistant", "content": [tool_use("toolu_A")]},
        {"role": "user", "content": [result]},
    ]


async def test_a_tool_result_with_text_and_images_is_accepted() -> None:
    messages = with_result_content({"type": "text", "text": "a dot"}, image_block(), image_block())
    async with (
        open_fake_model_server(one_reply(text="I see it")) as server,
        anthropic_client(server) as client,
    ):
        message = await client.messages.create(model="m", max_tokens=100, messages=messages)
    assert message.content[0].type == "text"
    assert server.requests[0].status == 200


WHERE = "messages.2.content.0.tool_result.content.1"
INVALID_IMAGES = [
    (
        image_block(media_type="image/svg+xml"),
        f"{WHERE}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', "
        "'image/gif' or 'image/webp'",
    ),
    (image_block(data=None), f"{WHERE}.image.source.base64.data: Field required"),
    (image_block(data="not base64!"), f"{WHERE}.image.source.base64: invalid base64 data"),
    (image_block(data=""), f"{WHERE}.image.source.base64: invalid base64 data"),
    (
        image_block(data=JPEG),
        f"{WHERE}.image.source.base64.data: Image does not match the provided media type image/png",
    ),
    ({"type": "image"}, f"{WHERE}.image.source: Field required"),
]


@pytest.mark.parametrize(("block", "text"), INVALID_IMAGES)
async def test_malformed_images_in_tool_results_are_refused(block: Any, text: str) -> None:
    messages = with_result_content({"type": "text", "text": "see"}, block)
    async with (
        open_fake_model_server(one_reply(text="never")) as server,
        anthropic_client(server) as client,
    ):
        with pytest.raises(anthropic.BadRequestError) as info:
            await client.messages.create(model="m", max_tokens=100, messages=messages)
    assert server.requests[0].error == text
    assert info.value.status_code == 400


async def test_an_image_in_an_assistant_message_is_refused() -> None:
    messages = [USER, {"role": "assistant", "content": [image_block()]}, USER]
    async with (
        open_fake_model_server(one_reply(text="never")) as server,
        anthropic_client(server) as client,
    ):
        with pytest.raises(anthropic.BadRequestError):
            await client.messages.create(model="m", max_tokens=100, messages=messages)
    assert server.requests[0].error == (
        "messages.1.content.0.type: `image` blocks are not allowed in `assistant` messages"
    )


async def test_an_image_counts_a_fixed_number_of_input_tokens_whatever_its_size() -> None:
    small = with_result_content(image_block())
    large = with_result_content(
        image_block(base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 40_000).decode())
    )
    text_only: list[Any] = with_result_content()
    text_only[2]["content"][0]["content"] = []
    async with (
        open_fake_model_server(one_reply(text="ok")) as server,
        anthropic_client(server) as client,
    ):
        counts = []
        for messages in (text_only, small, large):
            message = await client.messages.create(model="m", max_tokens=100, messages=messages)
            counts.append(message.usage.input_tokens)
    # An image block in compact JSON without its source is `{"type":"image"}` (16 characters).
    assert counts[1] == counts[2] == counts[0] + IMAGE_TOKENS + 4
