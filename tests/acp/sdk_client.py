"""ACP conformance checks with the official Python SDK (`agent-client-protocol`) as the
client, driving a real `rawtrio acp` over stdio or WebSocket against the fake model: the
second conformance client next to the TypeScript one (`conformance.mjs`).

    python sdk_client.py stdio   (env ACP_CMD: JSON argv of `rawtrio acp`, ACP_CWD)
    python sdk_client.py ws      (env ACP_WS_URL, ACP_WS_TOKEN, ACP_CWD)

Prints one JSON line per check: {"check": name, "ok": bool, "detail": ...}. A check that
raises or times out is reported as failed; the script goes on with the next. The SDK is
built on asyncio, so this runs as its own process (rawtrio and its tests use trio).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, cast

from acp import PROTOCOL_VERSION, Client, connect_to_agent, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    Implementation,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)
from acp.stdio import spawn_agent_process

LIVENESS_S = 60.0
MODE = sys.argv[1] if len(sys.argv) > 1 else "stdio"
CWD = os.environ["ACP_CWD"]


def report(check: str, ok: bool, detail: Any) -> None:
    print(json.dumps({"check": check, "ok": ok, "detail": detail}, default=str), flush=True)


class Recorder:
    """The client side: records `session/update` per session and answers permission
    requests with `answer` ("allow_once", "deny" or "cancelled")."""

    def __init__(self) -> None:
        self.updates: dict[str, list[dict[str, Any]]] = {}
        self.permission_requests: list[dict[str, Any]] = []
        self.answer = "allow_once"
        self.changed = asyncio.Event()

    def of(self, session_id: str) -> list[dict[str, Any]]:
        return self.updates.get(session_id, [])

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        data = update.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.updates.setdefault(session_id, []).append(data)
        self.changed.set()

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        self.permission_requests.append(
            {
                "session_id": session_id,
                "tool_call_id": tool_call.tool_call_id,
                "options": [o.option_id for o in options],
            }
        )
        self.changed.set()
        if self.answer == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=self.answer)
        )

    async def wait_for(self, predicate: Callable[[], bool], what: str) -> None:
        async def waiting() -> None:
            while not predicate():
                self.changed.clear()
                await self.changed.wait()

        try:
            await asyncio.wait_for(waiting(), LIVENESS_S)
        except TimeoutError:
            raise AssertionError(f"timed out waiting for {what}") from None


@contextlib.asynccontextmanager
async def connection(recorder: Recorder) -> AsyncIterator[ClientSideConnection]:
    """A connection to `rawtrio acp` (a new process over stdio, or the WebSocket
    listener), initialized."""
    # The recorder implements what this client advertises (no fs, no terminal): the SDK's
    # router answers anything else "method not found".
    client = cast("Client", recorder)
    if MODE == "stdio":
        argv = json.loads(os.environ["ACP_CMD"])
        async with spawn_agent_process(
            client, argv[0], *argv[1:], env=dict(os.environ), cwd=CWD
        ) as (conn, _):
            yield conn
        return
    from acp.ws import create_websocket_stream

    transport = await create_websocket_stream(
        os.environ["ACP_WS_URL"],
        headers={"Authorization": f"Bearer {os.environ['ACP_WS_TOKEN']}"},
    )
    conn = connect_to_agent(client, transport)
    try:
        yield conn
    finally:
        await conn.close()


async def initialize(conn: ClientSideConnection) -> Any:
    return await asyncio.wait_for(
        conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="python-sdk-conformance", version="1"),
        ),
        LIVENESS_S,
    )


def chunks(updates: list[dict[str, Any]], kind: str) -> str:
    return "".join(u["content"].get("text", "") for u in updates if u.get("sessionUpdate") == kind)


def tool_results(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [u for u in updates if u.get("sessionUpdate") == "tool_call_update" and "rawOutput" in u]


async def check(name: str, fn: Callable[[], Awaitable[Any]]) -> None:
    try:
        detail = await asyncio.wait_for(fn(), LIVENESS_S * 2)
        report(name, True, detail)
    except BaseException as exc:  # reported, and the next check runs
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        report(name, False, "".join(traceback.format_exception(exc)))


async def prompt(conn: ClientSideConnection, session_id: str, text: str) -> Any:
    return await asyncio.wait_for(
        conn.prompt(session_id=session_id, prompt=[text_block(text)]), LIVENESS_S
    )


async def checks() -> None:
    recorder = Recorder()
    shared: dict[str, str] = {}
    async with connection(recorder) as conn:
        init = await initialize(conn)

        async def initialized() -> Any:
            assert init.protocol_version == 1, init.protocol_version
            assert init.agent_capabilities.load_session is True, "loadSession not advertised"
            return init.agent_capabilities.model_dump(mode="json", by_alias=True)

        await check("initialize", initialized)

        async def streams_text_and_thought() -> Any:
            session = await conn.new_session(cwd=CWD, mcp_servers=[])
            shared["hello"] = session.session_id
            assert session.modes is not None, "no modes in session/new"
            assert session.modes.current_mode_id, "no current mode"
            done = await prompt(conn, session.session_id, "say hello")
            assert done.stop_reason == "end_turn", done.stop_reason
            updates = recorder.of(session.session_id)
            said = chunks(updates, "agent_message_chunk")
            assert said == "Hello from the fake model.", said
            assert chunks(updates, "agent_thought_chunk") == "Let me think."
            return {"updates": len(updates)}

        await check("new_and_prompt_streams_text_and_thought", streams_text_and_thought)

        async def tool_call_and_result() -> Any:
            session = await conn.new_session(cwd=CWD, mcp_servers=[])
            done = await prompt(conn, session.session_id, "use a tool")
            assert done.stop_reason == "end_turn", done.stop_reason
            updates = recorder.of(session.session_id)
            [call] = [u for u in updates if u.get("sessionUpdate") == "tool_call"]
            progress = [
                u
                for u in updates
                if u.get("sessionUpdate") == "tool_call_update"
                and u.get("toolCallId") == call["toolCallId"]
            ]
            assert any(u.get("status") == "in_progress" for u in progress), progress
            assert progress[-1]["status"] == "completed", progress[-1]
            assert "tool-output" in json.dumps(progress[-1].get("content")), progress[-1]
            assert "The tool said" in chunks(updates, "agent_message_chunk")

        await check("prompt_with_tool_reports_tool_call_and_result", tool_call_and_result)

        for answer, stop, status in (
            ("allow_once", "end_turn", "ok"),
            ("deny", "end_turn", "denied"),
            ("cancelled", "cancelled", "cancelled"),
        ):

            async def permission(
                answer: str = answer, stop: str = stop, status: str = status
            ) -> Any:
                session = await conn.new_session(cwd=CWD, mcp_servers=[])
                await conn.set_session_mode(session_id=session.session_id, mode_id="default")
                asked = len(recorder.permission_requests)
                recorder.answer = answer
                try:
                    done = await prompt(conn, session.session_id, "use a tool")
                finally:
                    recorder.answer = "allow_once"
                assert len(recorder.permission_requests) == asked + 1, "no permission request"
                request = recorder.permission_requests[-1]
                assert {"allow_once", "deny"} <= set(request["options"]), request
                assert done.stop_reason == stop, done.stop_reason
                results = tool_results(recorder.of(session.session_id))
                assert results[-1]["rawOutput"]["status"] == status, results[-1]

            await check(f"permission_{answer}", permission)

        async def cancel_mid_tool() -> Any:
            session = await conn.new_session(cwd=CWD, mcp_servers=[])
            sid = session.session_id
            pending = asyncio.ensure_future(prompt(conn, sid, "sleep a while"))
            await recorder.wait_for(
                lambda: any(u.get("status") == "in_progress" for u in recorder.of(sid)),
                "the tool in progress",
            )
            await conn.cancel(session_id=sid)
            done = await pending
            assert done.stop_reason == "cancelled", done.stop_reason
            last = tool_results(recorder.of(sid))[-1]
            assert last["status"] == "failed", last
            assert last["rawOutput"]["status"] == "cancelled", last
            assert last["rawOutput"]["started"] is True, last
            # The session is usable afterwards.
            again = await prompt(conn, sid, "say hello")
            assert again.stop_reason == "end_turn", again.stop_reason

        await check("cancel_mid_tool", cancel_mid_tool)

        if MODE == "ws":  # another connection loads it while this one stays
            await check("load_replays_history_other_connection", lambda: load(shared["hello"]))
    if MODE == "stdio":  # a new process loads it from the store
        await check("load_replays_history_new_process", lambda: load(shared["hello"]))


async def load(session_id: str) -> Any:
    recorder = Recorder()
    async with connection(recorder) as conn:
        await initialize(conn)
        await asyncio.wait_for(
            conn.load_session(cwd=CWD, session_id=session_id, mcp_servers=[]), LIVENESS_S
        )
        updates = recorder.of(session_id)
        assert chunks(updates, "user_message_chunk") == "say hello", updates
        assert chunks(updates, "agent_message_chunk") == "Hello from the fake model.", updates
        # The loaded session takes a prompt.
        done = await prompt(conn, session_id, "say hello")
        assert done.stop_reason == "end_turn", done.stop_reason
        return {"replayed": len(updates)}


def main() -> None:
    try:
        asyncio.run(checks())
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        report("driver", False, "".join(traceback.format_exception(exc)))


if __name__ == "__main__":
    main()
