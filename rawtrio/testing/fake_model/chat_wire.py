"""The OpenAI Chat Completions wire format: `POST /v1/chat/completions`, streamed or not.

A streamed reply is a run of `chat.completion.chunk` objects as `data:` lines (no event
names): the first delta carries the role, then reasoning (as `reasoning_content`, the
extension DeepSeek-style servers use; the OpenAI service itself sends none), content, and
tool calls (the first piece of each has `index`, `id`, `type` and the function name, the
rest only argument pieces). A last chunk with an empty delta carries `finish_reason`; with
`stream_options.include_usage` a chunk with empty `choices` carries the usage; then
`data: [DONE]`.
"""

from __future__ import annotations

import json
from typing import Any

from rawtrio.testing.fake_model import openai_validation
from rawtrio.testing.fake_model.scenario import Reply
from rawtrio.testing.fake_model.sse import SSEEvent, split
from rawtrio.testing.fake_model.wire_common import (
    Located,
    Rejection,
    digest,
    input_tokens,
    output_tokens,
    stable_id,
)

CREATED = 1_700_000_000


def openai_error_type(status: int) -> str:
    if status == 429:
        return "requests"
    if status >= 500:
        return "server_error"
    return "invalid_request_error"


def openai_error_body(rejection: Rejection) -> dict[str, Any]:
    return {
        "error": {
            "message": rejection.message,
            "type": rejection.type,
            "param": rejection.param,
            "code": rejection.code,
        }
    }


def content_text(content: object) -> str:
    """The text of a message's content: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") in ("text", "input_text", "output_text")
        )
    return ""


class ChatWire:
    name = "openai-chat"

    def validate(self, body: dict[str, Any]) -> None:
        openai_validation.validate_chat(body)

    def is_stream(self, body: dict[str, Any]) -> bool:
        return body.get("stream") is True

    def locate(self, body: dict[str, Any]) -> Located:
        messages = body.get("messages", [])
        for i in range(len(messages) - 1, -1, -1):
            if messages[i].get("role") == "user":
                step = sum(1 for m in messages[i + 1 :] if m.get("role") == "assistant")
                return Located(content_text(messages[i].get("content")), step)
        return Located(None, 0)

    def default_error_type(self, status: int) -> str:
        return openai_error_type(status)

    def error_body(self, rejection: Rejection) -> dict[str, Any]:
        return openai_error_body(rejection)

    def stream(self, reply: Reply, body: dict[str, Any]) -> list[SSEEvent]:
        seed = digest(body.get("messages"))
        options = body.get("stream_options") or {}
        with_usage = isinstance(options, dict) and options.get("include_usage") is True
        base = {
            "id": stable_id("chatcmpl-", seed),
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": body.get("model", "fake-model"),
            "system_fingerprint": "fp_fake",
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> SSEEvent:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            data = {**base, "choices": [choice]}
            if with_usage:
                data["usage"] = None
            return SSEEvent(json.dumps(data))

        events = [chunk({"role": "assistant", "content": "", "refusal": None})]
        events += [chunk({"reasoning_content": p}) for p in split(reply.thinking, reply.chunk)]
        events += [chunk({"content": p}) for p in split(reply.text, reply.chunk)]
        for n, call in enumerate(reply.tool_calls):
            head = {
                "index": n,
                "id": call.id or stable_id("call_", seed, n),
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            events.append(chunk({"tool_calls": [head]}))
            for piece in split(call.arguments_json(), reply.chunk):
                events.append(
                    chunk({"tool_calls": [{"index": n, "function": {"arguments": piece}}]})
                )
        events.append(chunk({}, self._finish_reason(reply)))
        if with_usage:
            events.append(
                SSEEvent(json.dumps({**base, "choices": [], "usage": self._usage(reply, body)}))
            )
        events.append(SSEEvent("[DONE]"))
        error = reply.error
        if error is not None and error.after is not None:
            rejection = Rejection(
                error.message or "The server had an error while processing your request.",
                type=error.type or openai_error_type(error.status),
            )
            events = [*events[: error.after], SSEEvent(json.dumps(openai_error_body(rejection)))]
        return events

    def complete(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        seed = digest(body.get("messages"))
        message: dict[str, Any] = {
            "role": "assistant",
            "content": reply.text or None,
            "refusal": None,
        }
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id or stable_id("call_", seed, n),
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_json()},
                }
                for n, call in enumerate(reply.tool_calls)
            ]
        return {
            "id": stable_id("chatcmpl-", seed),
            "object": "chat.completion",
            "created": CREATED,
            "model": body.get("model", "fake-model"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": self._finish_reason(reply),
                }
            ],
            "usage": self._usage(reply, body),
        }

    def _finish_reason(self, reply: Reply) -> str:
        if reply.stop_reason is not None:
            return reply.stop_reason
        return "tool_calls" if reply.tool_calls else "stop"

    def _usage(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        prompt = input_tokens(reply, body.get("messages"))
        completion = output_tokens(reply)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": reply.usage.cache_read_tokens},
            "completion_tokens_details": {"reasoning_tokens": 0},
        }
