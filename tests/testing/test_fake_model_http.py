"""Transport behaviour: faults, client disconnects, keep-alive, concurrency, bad HTTP, CLI."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest
import trio

from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from tests.testing.sdk_clients import anthropic_client, one_reply, openai_client

USER: Any = {"role": "user", "content": "hello"}
LIVENESS = 10  # seconds; a bound for "eventually", never a performance assert


async def test_cut_stream_makes_the_sdk_raise() -> None:
    scenario = one_reply(text="a long answer that is cut", cut_after=4)
    async with open_fake_model_server(scenario) as server, anthropic_client(server) as client:
        with pytest.raises(httpx2.RemoteProtocolError):
            async with client.messages.stream(model="m", max_tokens=9, messages=[USER]) as s:
                await s.get_final_message()
    assert server.requests[0].outcome == "cut"
    assert server.requests[0].events_sent == 4


async def test_malformed_event_makes_the_sdk_raise() -> None:
    scenario = one_reply(text="some text", malformed_after=2)
    async with open_fake_model_server(scenario) as server, openai_client(server) as client:
        stream = await client.chat.completions.create(model="m", messages=[USER], stream=True)
        async with stream:
            with pytest.raises(json.JSONDecodeError):
                async for _ in stream:
                    pass


async def test_client_cancel_mid_stream_is_seen_as_disconnect() -> None:
    scenario = one_reply(text="x" * 400, chunk=1)
    async with open_fake_model_server(scenario) as server, anthropic_client(server) as client:
        with trio.CancelScope() as scope:
            async with client.messages.stream(model="m", max_tokens=9, messages=[USER]) as s:
                async for event in s:
                    if event.type == "text":
                        scope.cancel(reason="test cancels the stream")
        assert scope.cancelled_caught
        with trio.fail_after(LIVENESS):
            await server.wait_for_disconnect()
    assert server.requests[0].disconnected
    assert server.requests[0].outcome == "disconnected"


async def test_stalled_stream_waits_until_the_client_goes_away() -> None:
    scenario = one_reply(text="stalls here", stall_after=3)
    async with open_fake_model_server(scenario) as server, openai_client(server) as client:

        async def consume(task_status: trio.TaskStatus[trio.CancelScope]) -> None:
            with trio.CancelScope() as scope:
                task_status.started(scope)
                stream = await client.chat.completions.create(
                    model="m", messages=[USER], stream=True
                )
                async with stream:
                    async for _ in stream:
                        pass

        async with trio.open_nursery() as nursery:
            scope = await nursery.start(consume)
            with trio.fail_after(LIVENESS):
                await server.wait_for(lambda s: bool(s.requests) and s.requests[0].events_sent >= 3)
            assert server.requests[0].outcome is None  # still stalled
            scope.cancel(reason="test gives up on the stalled stream")
        with trio.fail_after(LIVENESS):
            await server.wait_for_disconnect()
    assert server.requests[0].disconnected


async def test_keep_alive_reuses_one_connection() -> None:
    async with (
        open_fake_model_server(one_reply(text="hi")) as server,
        anthropic_client(server) as client,
    ):
        for _ in range(3):
            async with client.messages.stream(model="m", max_tokens=9, messages=[USER]) as s:
                await s.get_final_message()
    assert {r.connection for r in server.requests} == {1}


async def test_concurrent_sessions_each_get_their_own_reply() -> None:
    rules = [{"match": f"re:^session {i}$", "replies": [{"text": f"reply {i}"}]} for i in range(20)]
    scenario = Scenario.from_dict({"rules": rules})
    answers: dict[int, str | None] = {}
    async with open_fake_model_server(scenario) as server, openai_client(server) as client:

        async def one(i: int) -> None:
            messages: Any = [{"role": "user", "content": f"session {i}"}]
            async with client.chat.completions.stream(model="m", messages=messages) as s:
                answers[i] = (await s.get_final_completion()).choices[0].message.content

        async with trio.open_nursery() as nursery:
            for i in range(20):
                nursery.start_soon(one, i)
    assert answers == {i: f"reply {i}" for i in range(20)}


async def test_set_scenario_swaps_replies() -> None:
    async with (
        open_fake_model_server(one_reply(text="first")) as server,
        anthropic_client(server) as client,
    ):
        a = await client.messages.create(model="m", max_tokens=9, messages=[USER])
        server.set_scenario(one_reply(text="second"))
        b = await client.messages.create(model="m", max_tokens=9, messages=[USER])
    assert [a.content[0].type, b.content[0].type] == ["text", "text"]
    assert [a.content[0].text, b.content[0].text] == ["first", "second"]  # type: ignore[union-attr]


async def test_malformed_json_body_is_refused_with_400() -> None:
    async with open_fake_model_server() as server, httpx2.AsyncClient() as http:
        response = await http.post(f"{server.openai_base_url}/chat/completions", content=b"{")
    assert response.status_code == 400
    assert "could not parse the JSON body" in response.json()["error"]["message"]


async def test_unknown_path_is_404() -> None:
    async with open_fake_model_server() as server, openai_client(server) as client:
        with pytest.raises(openai.NotFoundError, match="Unknown request URL"):
            await client.embeddings.create(model="m", input="x")


async def test_malformed_http_is_refused_with_400() -> None:
    async with open_fake_model_server() as server:
        stream = await trio.open_tcp_stream("127.0.0.1", server.port)
        async with stream:
            await stream.send_all(b"NOT HTTP AT ALL\r\n\r\n")
            received = b""
            with trio.fail_after(LIVENESS):
                while chunk := await stream.receive_some():
                    received += chunk
    assert received.startswith(b"HTTP/1.1 400")


async def test_leaving_the_server_block_ends_idle_and_stalled_connections() -> None:
    ended = trio.Event()

    async def stalled(base_url: str) -> None:
        client = anthropic.AsyncAnthropic(base_url=base_url, api_key="x", max_retries=0)
        async with client:
            with pytest.raises(httpx2.RemoteProtocolError):
                async with client.messages.stream(model="m", max_tokens=9, messages=[USER]) as s:
                    await s.get_final_message()
        ended.set()

    with trio.fail_after(LIVENESS):
        async with trio.open_nursery() as nursery:
            async with open_fake_model_server(one_reply(text="stall", stall_after=1)) as server:
                idle = await trio.open_tcp_stream("127.0.0.1", server.port)
                nursery.start_soon(stalled, server.base_url)
                await server.wait_for(lambda s: bool(s.requests) and s.requests[0].events_sent >= 1)
            async with idle:
                assert await idle.receive_some() == b""  # the server closed it
    assert ended.is_set()


def test_command_line_serves_until_sigterm(tmp_path: Path) -> None:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps({"rules": [{"match": "*", "replies": [{"text": "from cli"}]}]}))
    command = [sys.executable, "-m", "rawtrio.testing.fake_model", "--scenario", str(path)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None
        line = json.loads(process.stdout.readline())
        client = anthropic.Anthropic(base_url=line["base_url"], api_key="x", max_retries=0)
        with client:
            message = client.messages.create(model="m", max_tokens=9, messages=[USER])
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=LIVENESS) == 0
    assert message.content[0].type == "text"
    assert message.content[0].text == "from cli"
    assert line["openai_base_url"] == line["base_url"] + "/v1"
