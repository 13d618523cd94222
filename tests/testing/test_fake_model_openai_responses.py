"""The OpenAI Responses wire format, exercised through the real `openai` SDK."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from rawtrio.testing.fake_model import Scenario, open_fake_model_server
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
