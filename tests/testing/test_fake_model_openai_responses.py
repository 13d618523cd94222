"""The OpenAI Responses wire format, exercised through the real `openai` SDK."""

from __future__ import annotations

import base64
import json
from typing import Any

import openai
import pytest

from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from rawtrio.testing.fake_model.wire_common import IMAGE_TOKENS
from tests.testing.sdk_clients import one_reply, openai_client

USER: Any = {"role": "user", "content": "hello"}


def call(call_id: str) -> Any:
    return {"type": "function_call", "call_id": call_id, "name": "bash", "arguments": "{}"}


def output(call_id: str) -> Any:
    return {"type": "function_call_output", "call_id": call_id, "output": "ok"}


async def test_stream_delivers_reasoning_text_and_function_call() -> None:
    scenario = one_reply(
        thinking="considering",
        text="Calling a tool.",
        tool_calls=[{"name": "read_file", "arguments": {"path": "a.txt"}}],
        chunk=3,
    )
    async with (
        open_fake_model_server(scenario) as server,
        openai_client(server) as client,
        client.responses.stream(
            model="m", input=[USER], include=["reasoning.encrypted_content"], store=False
        ) as stream,
    ):
        kinds = [event.type async for event in stream]
        response = await stream.get_final_response()
    reasoning, message, function_call = response.output
    assert reasoning.type == "reasoning"
    assert reasoning.summary[0].text == "considering"
    assert reasoning.encrypted_content
    assert message.type == "message"
    assert response.output_text == "Calling a tool."
    assert function_call.type == "function_call"
    assert function_call.name == "read_file"
    assert json.loads(function_call.arguments) == {"path": "a.txt"}
    assert function_call.call_id.startswith("call_")
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert kinds.count("response.function_call_arguments.delta") > 2
    assert response.usage is not None
    assert response.usage.total_tokens > 0


async def test_reasoning_has_no_encrypted_content_unless_asked() -> None:
    async with (
        open_fake_model_server(one_reply(thinking="t", text="x")) as server,
        openai_client(server) as client,
    ):
        response = await client.responses.create(model="m", input="hello")
    assert response.output[0].type == "reasoning"
    assert response.output[0].encrypted_content is None


async def test_reasoning_and_call_items_sent_back_are_accepted_and_count_as_a_turn() -> None:
    scenario = Scenario.from_dict(
        {
            "rules": [
                {
                    "match": "hello",
                    "replies": [
                        {"thinking": "t", "tool_calls": [{"name": "bash", "id": "call_1"}]},
                        {"text": "second"},
                    ],
                }
            ]
        }
    )
    async with open_fake_model_server(scenario) as server, openai_client(server) as client:
        first = await client.responses.create(
            model="m", input=[USER], include=["reasoning.encrypted_content"], store=False
        )
        replay: list[Any] = [item.model_dump(exclude_none=True) for item in first.output]
        second = await client.responses.create(
            model="m",
            input=[USER, *replay, output("call_1")],
            store=False,
        )
    assert second.output_text == "second"
    assert server.requests[1].step == 1


async def test_scripted_rate_limit_maps_to_sdk_exception() -> None:
    scenario = one_reply(error={"status": 429, "retry_after": 1})
    async with open_fake_model_server(scenario) as server, openai_client(server) as client:
        with pytest.raises(openai.RateLimitError):
            await client.responses.create(model="m", input="hello")


async def test_max_output_tokens_stop_gives_incomplete_response() -> None:
    scenario = one_reply(text="cut short", stop_reason="max_output_tokens")
    async with (
        open_fake_model_server(scenario) as server,
        openai_client(server) as client,
        client.responses.stream(model="m", input="hello") as stream,
    ):
        kinds = [event.type async for event in stream]
    assert kinds[-1] == "response.incomplete"


INVALID: list[tuple[list[dict[str, Any]], str]] = [
    ([USER, call("call_A")], "No tool output found for function call call_A."),
    ([USER, output("call_X")], "No tool call found for function call output with call_id call_X."),
    (
        [USER, output("call_A"), call("call_A")],
        "No tool call found for function call output with call_id call_A.",
    ),
    (
        [{"role": "tool", "content": "x"}],
        "Invalid value: 'tool'. Supported values are: 'assistant', 'system', 'developer', "
        "and 'user'.",
    ),
    (
        [USER, {"type": "reasoning", "id": "rs_1", "summary": []}],
        "Item with id 'rs_1' not found. Items are not persisted when `store` is set to false.",
    ),
    (
        [
            USER,
            {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gAAAforged"},
        ],
        "Item with id 'rs_2' not found.",
    ),
]


@pytest.mark.parametrize(("items", "text"), INVALID)
async def test_invalid_requests_are_refused_with_service_text(
    items: list[dict[str, Any]], text: str
) -> None:
    async with (
        open_fake_model_server(one_reply(text="never")) as server,
        openai_client(server) as client,
    ):
        with pytest.raises(openai.BadRequestError) as info:
            await client.responses.create(model="m", input=items)  # type: ignore[arg-type]
    assert text in str(info.value)
    assert info.value.param in ("input", "input[0].role")
    assert server.requests[0].wire == "openai-responses"


async def test_previous_response_id_is_not_found() -> None:
    async with open_fake_model_server() as server, openai_client(server) as client:
        with pytest.raises(openai.BadRequestError, match="Previous response with id 'resp_1'"):
            await client.responses.create(model="m", input="hi", previous_response_id="resp_1")


async def test_error_inside_stream_ends_without_completed() -> None:
    scenario = one_reply(text="abc def", error={"status": 500, "after": 4})
    async with (
        open_fake_model_server(scenario) as server,
        openai_client(server) as client,
        client.responses.stream(model="m", input="hello") as stream,
    ):
        kinds = [event.type async for event in stream]
        with pytest.raises(RuntimeError, match=r"response\.completed"):
            await stream.get_final_response()
    assert kinds[-1] == "error"


PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 24).decode()


def image_output(*parts: Any) -> list[Any]:
    """A conversation whose function call output is the list `parts`."""
    return [
        USER,
        call("call_A"),
        {"type": "function_call_output", "call_id": "call_A", "output": list(parts)},
    ]


TEXT_PART: Any = {"type": "input_text", "text": "a dot"}


def image_part(url: str) -> Any:
    return {"type": "input_image", "image_url": url}


async def test_a_function_call_output_with_text_and_images_is_accepted() -> None:
    items = image_output(TEXT_PART, image_part(f"data:image/png;base64,{PNG}"))
    async with (
        open_fake_model_server(one_reply(text="never")) as server,
        openai_client(server) as client,
    ):
        response = await client.responses.create(model="m", input=items)
    assert response.output_text == "done"  # the reply after the call
    assert server.requests[0].status == 200


URL_PARAM = "input[2].output[1].image_url"
EXPECTED = (
    f"Invalid '{URL_PARAM}'. Expected a base64-encoded data URL with an image MIME type (e.g. "
    "'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got "
)
INVALID_IMAGES = [
    (image_part(PNG), EXPECTED + "a value without the 'data:' prefix."),
    (
        image_part(f"data:image/svg+xml;base64,{PNG}"),
        EXPECTED + "unsupported MIME type 'image/svg+xml'.",
    ),
    (image_part("data:image/png;base64,"), EXPECTED + "empty base64-encoded bytes."),
    (
        image_part("data:image/png;base64,not base64!"),
        EXPECTED + "an invalid base64-encoded value.",
    ),
    (
        image_part("data:image/png;base64," + base64.b64encode(b"plain text").decode()),
        "You uploaded an unsupported image. Please make sure your image has of one the following "
        "formats: ['png', 'jpeg', 'gif', 'webp'].",
    ),
    ({"type": "input_image"}, f"Missing required parameter: '{URL_PARAM}'."),
    ({"type": "input_audio"}, "Invalid value: 'input_audio'."),
]


@pytest.mark.parametrize(("part", "text"), INVALID_IMAGES)
async def test_malformed_images_in_function_call_outputs_are_refused(part: Any, text: str) -> None:
    async with (
        open_fake_model_server(one_reply(text="never")) as server,
        openai_client(server) as client,
    ):
        with pytest.raises(openai.BadRequestError) as info:
            await client.responses.create(model="m", input=image_output(TEXT_PART, part))
    assert server.requests[0].error == text
    assert info.value.status_code == 400


async def test_an_image_counts_a_fixed_number_of_input_tokens_whatever_its_size() -> None:
    big = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 40_000).decode()
    conversations = [
        image_output(TEXT_PART),
        image_output(TEXT_PART, image_part(f"data:image/png;base64,{PNG}")),
        image_output(TEXT_PART, image_part(f"data:image/png;base64,{big}")),
    ]
    async with (
        open_fake_model_server(one_reply(text="ok")) as server,
        openai_client(server) as client,
    ):
        counts = []
        for items in conversations:
            response = await client.responses.create(model="m", input=items)
            assert response.usage is not None
            counts.append(response.usage.input_tokens)
    assert counts[1] == counts[2]
    assert IMAGE_TOKENS < counts[1] - counts[0] < IMAGE_TOKENS + 10
