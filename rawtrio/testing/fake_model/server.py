"""The fake model server: routes requests to a wire format, validates, answers from a scenario.

`open_fake_model_server` owns a nursery that runs `trio.serve_tcp` on 127.0.0.1; leaving the
context cancels it and every connection with it. Each request is recorded (in arrival
order, before it is answered) so tests can check what the client sent and how it ended.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

import trio

from rawtrio.testing.fake_model.anthropic_wire import AnthropicWire
from rawtrio.testing.fake_model.chat_wire import ChatWire
from rawtrio.testing.fake_model.http_server import HTTPRequest, ResponseWriter, serve_connection
from rawtrio.testing.fake_model.prompt_cache import PromptCache, prompt_tokens
from rawtrio.testing.fake_model.responses_wire import ResponsesWire
from rawtrio.testing.fake_model.scenario import Reply, Scenario
from rawtrio.testing.fake_model.sse import send_events
from rawtrio.testing.fake_model.wire_common import Rejection, Wire

WireName = Literal["anthropic", "openai-chat", "openai-responses", "unknown"]

_ROUTES: dict[str, Wire] = {
    "/v1/messages": AnthropicWire(),
    "/v1/chat/completions": ChatWire(),
    "/v1/responses": ResponsesWire(),
}

_BAD_JSON = (
    "We could not parse the JSON body of your request. (HINT: This likely means you aren't "
    "using your HTTP library correctly. The API expects a JSON payload, but what was sent "
    "was not valid JSON.)"
)


@dataclass(slots=True, eq=False)
class RecordedRequest:
    """One request as the server saw it; updated while it is answered."""

    path: str
    wire: WireName
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    #: The HTTP status answered (0 until the status line is sent).
    status: int = 0
    #: The error message answered (validation, scripted error), if any.
    error: str | None = None
    #: The client went away before the answer was finished.
    disconnected: bool = False
    #: How the answer ended: "completed", "cut", "disconnected", "error" (None while running).
    outcome: str | None = None
    #: The user text the reply was chosen by, and the step (assistant turns after it).
    user_text: str | None = None
    step: int = 0
    #: Server-sent events written so far (faults included).
    events_sent: int = 0
    #: Serial number of the TCP connection it came on (equal numbers: a reused connection).
    connection: int = 0


class FakeModelServer:
    """Answers model requests from a `Scenario`. Create it with `open_fake_model_server`."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.requests: list[RecordedRequest] = []
        self.port = 0
        self._disconnects = 0
        self._disconnects_seen = 0
        self._disconnect_event = trio.Event()
        self._changed = trio.Event()
        self._connections = 0
        self.prompt_cache = PromptCache()
        #: Faulted answers per reply with `fail_times` (keyed by the reply's identity).
        self._faults_served: dict[int, int] = {}

    @property
    def base_url(self) -> str:
        """The Anthropic SDK's `base_url`."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """The OpenAI SDK's `base_url`."""
        return f"{self.base_url}/v1"

    def set_scenario(self, scenario: Scenario) -> None:
        """Answer later requests from `scenario` (requests in flight keep their reply);
        `fail_times` counts start again."""
        self.scenario = scenario
        self._faults_served.clear()

    async def wait_for_disconnect(self) -> None:
        """Return once a client has gone away mid-answer.

        Each call consumes one disconnect: a disconnect that happened before the call counts
        (so there is no race with a test's cancel), and a second call waits for a second one.
        """
        while self._disconnects <= self._disconnects_seen:
            await self._disconnect_event.wait()
        self._disconnects_seen += 1

    async def wait_for(self, predicate: Callable[[FakeModelServer], bool]) -> None:
        """Return once `predicate(server)` holds; it is re-checked whenever a request is
        recorded, sends an event, or ends. E.g. wait until a stream has stalled::

            await server.wait_for(lambda s: s.requests[-1].events_sent >= 3)
        """
        while not predicate(self):
            await self._changed.wait()

    def _counted(self, wire: Wire, body: dict[str, Any], reply: Reply) -> Reply:
        """The reply with the prompt counted as the service counts it (unless scripted):
        system, tools and messages, and the prompt cache's reads (and Anthropic's writes)."""
        u = reply.usage
        if u.input_tokens is not None:
            return reply
        if wire.name == "anthropic":
            if u.cache_read_tokens or u.cache_write_tokens:
                return reply
            cached = self.prompt_cache.anthropic(body)
            usage = dataclasses.replace(
                u,
                input_tokens=cached.input_tokens,
                cache_read_tokens=cached.cache_read_tokens,
                cache_write_tokens=cached.cache_write_tokens,
            )
        else:
            if wire.name == "openai-chat":
                total = prompt_tokens(body.get("messages"), body.get("tools"))
            else:
                total = prompt_tokens(
                    body.get("instructions"), body.get("input"), body.get("tools")
                )
            read = u.cache_read_tokens or self.prompt_cache.openai(body, total)
            usage = dataclasses.replace(u, input_tokens=total, cache_read_tokens=read)
        return dataclasses.replace(reply, usage=usage)

    def _limited(self, reply: Reply) -> Reply:
        """`reply`, or `reply` without its fault once it failed `fail_times` requests."""
        if reply.fail_times is None or not reply.has_fault:
            return reply
        served = self._faults_served.get(id(reply), 0)
        if served >= reply.fail_times:
            return reply.without_fault()
        self._faults_served[id(reply)] = served + 1
        return reply

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def _note_disconnect(self, record: RecordedRequest) -> None:
        record.disconnected = True
        record.outcome = "disconnected"
        self._disconnects += 1
        self._disconnect_event.set()
        self._disconnect_event = trio.Event()
        self._notify()

    async def _serve_stream(self, stream: trio.SocketStream) -> None:
        self._connections += 1
        await serve_connection(stream, partial(self._answer, self._connections))

    async def _answer(self, connection: int, request: HTTPRequest, writer: ResponseWriter) -> None:
        try:
            await self._answer_request(connection, request, writer)
        finally:
            self._notify()

    async def _answer_request(
        self, connection: int, request: HTTPRequest, writer: ResponseWriter
    ) -> None:
        wire = _ROUTES.get(request.path)
        record = RecordedRequest(
            path=request.path,
            wire="unknown" if wire is None else _wire_name(wire),
            body={},
            headers=request.headers,
            connection=connection,
        )
        self.requests.append(record)
        self._notify()
        writer.on_disconnect = partial(self._note_disconnect, record)
        if wire is None or request.method != "POST":
            message = f"Unknown request URL: {request.method} {request.path}."
            rejection = Rejection(message, status=404, code="unknown_url")
            await self._refuse(writer, record, rejection, _ROUTES["/v1/chat/completions"])
            return
        try:
            body = json.loads(request.body)
        except (UnicodeDecodeError, json.JSONDecodeError):
            body = None
        if not isinstance(body, dict):
            await self._refuse(writer, record, Rejection(_BAD_JSON), wire)
            return
        record.body = body
        try:
            wire.validate(body)
        except Rejection as refused:
            await self._refuse(writer, record, refused, wire)
            return
        located = wire.locate(body)
        record.user_text, record.step = located.user_text, located.step
        reply = self._counted(
            wire, body, self._limited(self.scenario.pick(located.user_text, located.step))
        )
        if reply.echo:
            echoed = reply.text + (located.user_text or "") * reply.echo
            reply = dataclasses.replace(reply, text=echoed)
        error = reply.error
        if error is not None and error.after is None:
            rejection = Rejection(
                error.message or _default_message(error.status),
                status=error.status,
                type=error.type or wire.default_error_type(error.status),
                code="rate_limit_exceeded" if error.status == 429 else None,
            )
            headers = []
            if error.retry_after is not None:
                headers.append(("retry-after", f"{error.retry_after:g}"))
            if error.retry_after_ms is not None:
                headers.append(("retry-after-ms", f"{error.retry_after_ms:g}"))
            await self._refuse(writer, record, rejection, wire, headers)
            return
        record.status = 200
        if not wire.is_stream(body):
            if reply.delay_ms:
                await trio.sleep(reply.delay_ms / 1000)
            await writer.send_json(200, wire.complete(reply, body))
            record.outcome = "completed"
            return

        def count_event() -> None:
            record.events_sent += 1
            self._notify()

        outcome = await send_events(writer, wire.stream(reply, body), reply, count_event)
        record.outcome = outcome
        if error is not None:
            record.error = error.message or error.type or "in-stream error"

    async def _refuse(
        self,
        writer: ResponseWriter,
        record: RecordedRequest,
        rejection: Rejection,
        wire: Wire,
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        record.status = rejection.status
        record.error = rejection.message
        record.outcome = "error"
        await writer.send_json(rejection.status, wire.error_body(rejection), headers)


def _wire_name(wire: Wire) -> WireName:
    name = wire.name
    assert name in ("anthropic", "openai-chat", "openai-responses")
    return name  # type: ignore[return-value]


def _default_message(status: int) -> str:
    return {
        401: "invalid x-api-key",
        403: "Your API key does not have permission to use the specified resource.",
        404: "The requested resource could not be found.",
        429: "Rate limit reached. Please try again later.",
        500: "Internal server error",
        503: "Service unavailable",
        529: "Overloaded",
    }.get(status, f"fake-model error {status}")


@asynccontextmanager
async def open_fake_model_server(
    scenario: Scenario | None = None, *, port: int = 0
) -> AsyncIterator[FakeModelServer]:
    """Run a fake model server on 127.0.0.1 (`port` 0: any free port) for the block."""
    server = FakeModelServer(scenario if scenario is not None else Scenario())
    # Exception-group policy: the server's own tasks never raise (each connection catches
    # its handler's errors), so a group out of this nursery holds only what the caller's
    # block raised. It is unwrapped, so `pytest.raises` around the block sees the error.
    try:
        async with trio.open_nursery() as nursery:
            listeners: list[trio.SocketListener] = await nursery.start(
                partial(trio.serve_tcp, server._serve_stream, port, host="127.0.0.1")
            )
            server.port = listeners[0].socket.getsockname()[1]
            try:
                yield server
            finally:
                nursery.cancel_scope.cancel(reason="fake model server closed")
    except BaseExceptionGroup as group:
        if len(group.exceptions) != 1:
            raise
        raise group.exceptions[0] from group.exceptions[0].__cause__
