"""The OpenAI Responses wire format: `POST /v1/responses`, streamed or not.

A streamed reply: `response.created`, `response.in_progress`, then per output item
(reasoning, message, each function call, in that order) `response.output_item.added`,
its parts and deltas, `response.output_item.done`, and finally `response.completed` with
the whole response and its usage (or `response.incomplete` when `stop_reason` is
`max_output_tokens`). Every event carries a `sequence_number`. A reasoning item carries
`encrypted_content` when the request's `include` asks for `reasoning.encrypted_content`.
"""

from __future__ import annotations

import json
from typing import Any

from rawtrio.testing.fake_model import openai_validation
from rawtrio.testing.fake_model.chat_wire import (
    CREATED,
    content_text,
    openai_error_body,
    openai_error_type,
)
from rawtrio.testing.fake_model.scenario import Reply
from rawtrio.testing.fake_model.sse import SSEEvent, split
from rawtrio.testing.fake_model.wire_common import (
    Located,
    Rejection,
    digest,
    input_tokens,
    output_tokens,
    seal,
    stable_id,
)

_OUTPUT_TYPES = ("function_call", "reasoning")


def _is_output(item: dict[str, Any]) -> bool:
    kind = item.get("type", "message")
    return kind in _OUTPUT_TYPES or (kind == "message" and item.get("role") == "assistant")


class ResponsesWire:
    name = "openai-responses"

    def validate(self, body: dict[str, Any]) -> None:
        openai_validation.validate_responses(body)

    def is_stream(self, body: dict[str, Any]) -> bool:
        return body.get("stream") is True

    def locate(self, body: dict[str, Any]) -> Located:
        items = body.get("input", [])
        if isinstance(items, str):
            return Located(items, 0)
        for i in range(len(items) - 1, -1, -1):
            item = items[i]
            if item.get("type", "message") == "message" and item.get("role") == "user":
                # Each run of consecutive output items is one assistant turn.
                step, in_turn = 0, False
                for later in items[i + 1 :]:
                    if _is_output(later) and not in_turn:
                        step += 1
                    in_turn = _is_output(later)
                return Located(content_text(item.get("content")), step)
        return Located(None, 0)

    def default_error_type(self, status: int) -> str:
        return openai_error_type(status)

    def error_body(self, rejection: Rejection) -> dict[str, Any]:
        return openai_error_body(rejection)

    def stream(self, reply: Reply, body: dict[str, Any]) -> list[SSEEvent]:
        seed = digest(body.get("input"))
        items = self._items(reply, body, seed)
        out: list[tuple[str, dict[str, Any]]] = []
        shell = self._response(reply, body, seed, status="in_progress", output=[])
        out.append(("response.created", {"response": shell}))
        out.append(("response.in_progress", {"response": shell}))
        for index, item in enumerate(items):
            out.extend(_item_events(index, item, reply))
        final = self._response(reply, body, seed, status=self._status(reply), output=items)
        out.append((f"response.{self._status(reply)}", {"response": final}))
        error = reply.error
        if error is not None and error.after is not None:
            payload = {
                "code": error.type or openai_error_type(error.status),
                "message": error.message or "The server had an error processing your request.",
                "param": None,
            }
            out = [*out[: error.after], ("error", payload)]
        return [
            SSEEvent(json.dumps({"type": kind, **data, "sequence_number": n}), kind)
            for n, (kind, data) in enumerate(out)
        ]

    def complete(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        seed = digest(body.get("input"))
        items = self._items(reply, body, seed)
        return self._response(reply, body, seed, status=self._status(reply), output=items)

    def _status(self, reply: Reply) -> str:
        return "incomplete" if reply.stop_reason == "max_output_tokens" else "completed"

    def _response(
        self, reply: Reply, body: dict[str, Any], seed: str, *, status: str, output: list[Any]
    ) -> dict[str, Any]:
        done = status != "in_progress"
        return {
            "id": stable_id("resp_", seed),
            "object": "response",
            "created_at": CREATED,
            "status": status,
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"}
            if status == "incomplete"
            else None,
            "instructions": body.get("instructions"),
            "model": body.get("model", "fake-model"),
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools", []),
            "store": body.get("store", True),
            "usage": self._usage(reply, body) if done else None,
        }

    def _usage(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        prompt = input_tokens(reply, body.get("input"))
        completion = output_tokens(reply)
        return {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": reply.usage.cache_read_tokens},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        }

    def _items(self, reply: Reply, body: dict[str, Any], seed: str) -> list[dict[str, Any]]:
        """The complete output items of the reply."""
        items: list[dict[str, Any]] = []
        if reply.thinking:
            item: dict[str, Any] = {
                "id": stable_id("rs_", seed),
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": reply.thinking}],
            }
            if "reasoning.encrypted_content" in (body.get("include") or []):
                item["encrypted_content"] = seal(reply.thinking)
            items.append(item)
        if reply.text:
            part = {"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}
            items.append(
                {
                    "id": stable_id("msg_", seed),
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [part],
                }
            )
        for n, call in enumerate(reply.tool_calls):
            items.append(
                {
                    "id": stable_id("fc_", seed, n),
                    "type": "function_call",
                    "call_id": call.id or stable_id("call_", seed, n),
                    "name": call.name,
                    "arguments": call.arguments_json(),
                    "status": "completed",
                }
            )
        return items


def _item_events(
    index: int, item: dict[str, Any], reply: Reply
) -> list[tuple[str, dict[str, Any]]]:
    at = {"output_index": index}
    ref = {"item_id": item["id"], **at}
    kind = item["type"]
    if kind == "reasoning":
        added = {**item, "summary": []}
        text = item["summary"][0]["text"]
        empty = {"type": "summary_text", "text": ""}
        events = [("response.output_item.added", {**at, "item": added})]
        events.append(
            ("response.reasoning_summary_part.added", {**ref, "summary_index": 0, "part": empty})
        )
        events += [
            ("response.reasoning_summary_text.delta", {**ref, "summary_index": 0, "delta": p})
            for p in split(text, reply.chunk)
        ]
        events.append(
            ("response.reasoning_summary_text.done", {**ref, "summary_index": 0, "text": text})
        )
        events.append(
            (
                "response.reasoning_summary_part.done",
                {**ref, "summary_index": 0, "part": item["summary"][0]},
            )
        )
    elif kind == "message":
        part = item["content"][0]
        text = part["text"]
        events = [
            (
                "response.output_item.added",
                {**at, "item": {**item, "status": "in_progress", "content": []}},
            )
        ]
        empty = {**part, "text": ""}
        events.append(("response.content_part.added", {**ref, "content_index": 0, "part": empty}))
        events += [
            ("response.output_text.delta", {**ref, "content_index": 0, "delta": p, "logprobs": []})
            for p in split(text, reply.chunk)
        ]
        events.append(
            ("response.output_text.done", {**ref, "content_index": 0, "text": text, "logprobs": []})
        )
        events.append(("response.content_part.done", {**ref, "content_index": 0, "part": part}))
    else:
        added = {**item, "arguments": "", "status": "in_progress"}
        events = [("response.output_item.added", {**at, "item": added})]
        events += [
            ("response.function_call_arguments.delta", {**ref, "delta": p})
            for p in split(item["arguments"], reply.chunk)
        ]
        events.append(
            (
                "response.function_call_arguments.done",
                {**ref, "name": item["name"], "arguments": item["arguments"]},
            )
        )
    events.append(("response.output_item.done", {**at, "item": item}))
    return events
