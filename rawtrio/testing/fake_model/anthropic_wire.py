"""The Anthropic Messages wire format: `POST /v1/messages`, streamed or not.

A streamed reply is the event sequence the service sends: `message_start`, a `ping`, then
per content block (thinking, text, each tool use, in that order) `content_block_start`,
its deltas and `content_block_stop`, then `message_delta` with the stop reason and usage,
and `message_stop`. Tool input arrives as `input_json_delta` pieces, starting with an empty
one as the service does; a thinking block ends with a `signature_delta`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rawtrio.testing.fake_model import anthropic_validation
from rawtrio.testing.fake_model.scenario import Reply
from rawtrio.testing.fake_model.sse import SSEEvent, split
from rawtrio.testing.fake_model.wire_common import (
    Located,
    Rejection,
    digest,
    input_tokens,
    output_tokens,
    sign,
    stable_id,
)

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


class AnthropicWire:
    name = "anthropic"

    def validate(self, body: dict[str, Any]) -> None:
        anthropic_validation.validate(body)

    def is_stream(self, body: dict[str, Any]) -> bool:
        return body.get("stream") is True

    def locate(self, body: dict[str, Any]) -> Located:
        messages = body.get("messages", [])
        for i in range(len(messages) - 1, -1, -1):
            message = messages[i]
            if message.get("role") != "user":
                continue
            texts = [
                str(b.get("text", ""))
                for b in anthropic_validation.blocks(message)
                if b.get("type") == "text"
            ]
            if texts:
                step = sum(1 for m in messages[i + 1 :] if m.get("role") == "assistant")
                return Located("\n".join(texts), step)
        return Located(None, 0)

    def default_error_type(self, status: int) -> str:
        return _ERROR_TYPES.get(status, "api_error")

    def error_body(self, rejection: Rejection) -> dict[str, Any]:
        return {
            "type": "error",
            "error": {"type": rejection.type, "message": rejection.message},
            "request_id": stable_id("req_", rejection.message),
        }

    def stream(self, reply: Reply, body: dict[str, Any]) -> list[SSEEvent]:
        seed = digest(body.get("messages"))
        message = self._message(reply, body, seed, content=[])
        message["usage"]["output_tokens"] = 1
        events = [_event("message_start", {"message": message})]
        for index, part in enumerate(self._parts(reply, seed)):
            events.append(
                _event("content_block_start", {"index": index, "content_block": part.start})
            )
            if index == 0:
                events.append(_event("ping", {}))
            events.extend(
                _event("content_block_delta", {"index": index, "delta": d}) for d in part.deltas
            )
            events.append(_event("content_block_stop", {"index": index}))
        if len(events) == 1:
            events.append(_event("ping", {}))
        usage = self._usage(reply, body)
        delta = {"stop_reason": self._stop_reason(reply), "stop_sequence": None}
        events.append(_event("message_delta", {"delta": delta, "usage": usage}))
        events.append(_event("message_stop", {}))
        error = reply.error
        if error is not None and error.after is not None:
            rejection = Rejection(
                error.message or "Overloaded",
                type=error.type or self.default_error_type(error.status),
            )
            events = [
                *events[: error.after],
                SSEEvent(json.dumps(self.error_body(rejection)), "error"),
            ]
        return events

    def complete(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        seed = digest(body.get("messages"))
        return self._message(reply, body, seed, content=[p.full for p in self._parts(reply, seed)])

    def _message(
        self, reply: Reply, body: dict[str, Any], seed: str, content: list[dict[str, Any]]
    ) -> dict[str, Any]:
        done = bool(content)
        return {
            "id": stable_id("msg_01", seed),
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake-model"),
            "content": content,
            "stop_reason": self._stop_reason(reply) if done else None,
            "stop_sequence": None,
            "usage": self._usage(reply, body),
        }

    def _usage(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "input_tokens": input_tokens(reply, body.get("messages")),
            "cache_creation_input_tokens": reply.usage.cache_write_tokens,
            "cache_read_input_tokens": reply.usage.cache_read_tokens,
            "output_tokens": output_tokens(reply),
        }

    def _stop_reason(self, reply: Reply) -> str:
        if reply.stop_reason is not None:
            return reply.stop_reason
        return "tool_use" if reply.tool_calls else "end_turn"

    def _parts(self, reply: Reply, seed: str) -> list[_Part]:
        """Each content block: as `content_block_start` carries it, its deltas, and complete."""
        parts: list[_Part] = []
        start: dict[str, Any]
        if reply.thinking:
            deltas = [
                {"type": "thinking_delta", "thinking": p}
                for p in split(reply.thinking, reply.chunk)
            ]
            signature = sign(reply.thinking)
            deltas.append({"type": "signature_delta", "signature": signature})
            start = {"type": "thinking", "thinking": "", "signature": ""}
            full = {"type": "thinking", "thinking": reply.thinking, "signature": signature}
            parts.append(_Part(start, deltas, full))
        if reply.text:
            deltas = [{"type": "text_delta", "text": p} for p in split(reply.text, reply.chunk)]
            parts.append(
                _Part({"type": "text", "text": ""}, deltas, {"type": "text", "text": reply.text})
            )
        for n, call in enumerate(reply.tool_calls):
            start = {
                "type": "tool_use",
                "id": call.id or stable_id("toolu_01", seed, n),
                "name": call.name,
                "input": {},
            }
            raw = call.arguments_json()
            deltas = [
                {"type": "input_json_delta", "partial_json": p}
                for p in ["", *split(raw, reply.chunk)]
            ]
            try:
                arguments = json.loads(raw)
            except json.JSONDecodeError:
                arguments = {}
            parts.append(_Part(start, deltas, {**start, "input": arguments}))
        return parts


@dataclass(frozen=True, slots=True)
class _Part:
    start: dict[str, Any]
    deltas: list[dict[str, Any]]
    full: dict[str, Any]


def _event(kind: str, data: dict[str, Any]) -> SSEEvent:
    return SSEEvent(json.dumps({"type": kind, **data}), kind)
