"""Request checks of the Anthropic Messages API, with the service's own error texts.

Checked: required fields, roles, non-empty content, tool names, thinking budget, at most
four `cache_control` breakpoints, images (in user messages and in `tool_result` content:
media type, base64 data that decodes to an image of that type),
`tool_use`/`tool_result` pairing between neighbouring messages (results first in the user
message), and that thinking blocks come back with the signature the server gave them.
"""

from __future__ import annotations

import re
from typing import Any

from rawtrio.messages import image_type
from rawtrio.testing.fake_model import prompt_cache
from rawtrio.testing.fake_model.wire_common import (
    TOOL_NAME_PATTERN,
    Rejection,
    decode_base64,
    sign,
)

MISSING_RESULTS = (
    "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
    "{ids}. Each `tool_use` block must have a corresponding `tool_result` block in the next "
    "message."
)
UNEXPECTED_RESULT = (
    "messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. "
    "Each `tool_result` block must have a corresponding `tool_use` block in the previous "
    "message."
)
RESULTS_NOT_FIRST = (
    "messages.{i}: Did not find {n} `tool_result` block(s) at the beginning of this message. "
    "Messages following `tool_use` blocks must begin with a matching number of `tool_result` "
    "blocks."
)
EMPTY_CONTENT = (
    "messages.{i}: all messages must have non-empty content except for the optional final "
    "assistant message"
)
SYSTEM_ROLE = (
    'messages: Unexpected role "system". The Messages API accepts a top-level `system` '
    'parameter, not "system" as an input message role.'
)
BAD_ROLE = "messages.{i}.role: Input should be 'user' or 'assistant'"
EMPTY_TEXT = "messages: text content blocks must be non-empty"
BLANK_TEXT = "messages: text content blocks must contain non-whitespace text"
MISPLACED = "messages.{i}.content.{j}.type: `{kind}` blocks are not allowed in `{role}` messages"
BAD_SIGNATURE = "messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
BAD_TOOL_NAME = "tools.{k}.custom.name: String should match pattern '{pattern}'"
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
BAD_MEDIA_TYPE = (
    "{where}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', "
    "'image/gif' or 'image/webp'"
)
BAD_BASE64 = "{where}.image.source.base64: invalid base64 data"
WRONG_IMAGE = "{where}.image.source.base64.data: Image does not match the provided media type {t}"


def validate(body: dict[str, Any]) -> None:
    for key in ("model", "max_tokens", "messages"):
        if key not in body:
            raise Rejection(f"{key}: Field required")
    if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
        raise Rejection("max_tokens: Input should be greater than or equal to 1")
    messages = body["messages"]
    if not isinstance(messages, list):
        raise Rejection("messages: Input should be a valid list")
    _check_tools(body.get("tools"))
    _check_thinking(body)
    for i, message in enumerate(messages):
        _check_message(i, message, last=i == len(messages) - 1)
    breakpoints = prompt_cache.count_breakpoints(body)
    if breakpoints > prompt_cache.MAX_BREAKPOINTS:
        raise Rejection(prompt_cache.TOO_MANY_BREAKPOINTS.format(n=breakpoints))
    for i, message in enumerate(messages):
        if message["role"] == "assistant":
            _check_pairing(messages, i)
        elif i == 0 or messages[i - 1]["role"] != "assistant":
            _check_orphan_results(i, message)


def blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A message's content as blocks (a string is one text block)."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _check_tools(tools: object) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        raise Rejection("tools: Input should be a valid list")
    names: set[str] = set()
    for k, tool in enumerate(tools):
        name = tool.get("name") if isinstance(tool, dict) else None
        if not isinstance(name, str) or not re.fullmatch(TOOL_NAME_PATTERN, name):
            raise Rejection(BAD_TOOL_NAME.format(k=k, pattern=TOOL_NAME_PATTERN))
        if name in names:
            raise Rejection("tools: Tool names must be unique.")
        names.add(name)


def _check_thinking(body: dict[str, Any]) -> None:
    thinking = body.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") != "enabled":
        return
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int):
        raise Rejection("thinking.enabled.budget_tokens: Field required")
    if budget < 1024:
        raise Rejection(
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        )
    if body["max_tokens"] <= budget:
        raise Rejection("`max_tokens` must be greater than `thinking.budget_tokens`.")


def _check_message(i: int, message: object, *, last: bool) -> None:
    if not isinstance(message, dict):
        raise Rejection(f"messages.{i}: Input should be a valid dictionary")
    role = message.get("role")
    if role == "system":
        raise Rejection(SYSTEM_ROLE)
    if role not in ("user", "assistant"):
        raise Rejection(BAD_ROLE.format(i=i))
    content = message.get("content")
    if not isinstance(content, str | list):
        raise Rejection(f"messages.{i}.content: Field required")
    if not content and not (last and role == "assistant"):
        raise Rejection(EMPTY_CONTENT.format(i=i))
    for j, block in enumerate(blocks(message)):
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if not isinstance(text, str) or not text:
                raise Rejection(EMPTY_TEXT)
            if not text.strip() and not (last and role == "assistant"):
                raise Rejection(BLANK_TEXT)
        elif kind == "thinking":
            if role != "assistant":
                raise Rejection(MISPLACED.format(i=i, j=j, kind=kind, role=role))
            if block.get("signature") != sign(str(block.get("thinking", ""))):
                raise Rejection(BAD_SIGNATURE.format(i=i, j=j))
        elif kind == "tool_use":
            if role != "assistant":
                raise Rejection(MISPLACED.format(i=i, j=j, kind=kind, role=role))
            if not isinstance(block.get("input"), dict):
                raise Rejection(
                    f"messages.{i}.content.{j}.tool_use.input: Input should be a valid dictionary"
                )
        elif kind in ("tool_result", "image"):
            if role != "user":
                raise Rejection(MISPLACED.format(i=i, j=j, kind=kind, role=role))
            if kind == "image":
                _check_image(f"messages.{i}.content.{j}", block)
            else:
                _check_result_content(f"messages.{i}.content.{j}.tool_result", block)


def _check_result_content(where: str, block: dict[str, Any]) -> None:
    """A `tool_result`'s content: a string, or text and image blocks."""
    content = block.get("content")
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        raise Rejection(f"{where}.content: Input should be a valid string")
    for k, item in enumerate(content):
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "text":
            if not isinstance(item.get("text"), str) or not item["text"]:
                raise Rejection(EMPTY_TEXT)
        elif kind == "image":
            _check_image(f"{where}.content.{k}", item)
        elif kind not in ("document", "search_result"):
            raise Rejection(
                f"{where}.content.{k}: Input tag '{kind}' found using 'type' does not match any "
                "of the expected tags: 'text', 'image', 'search_result', 'document'"
            )


def _check_image(where: str, block: dict[str, Any]) -> None:
    """An image block: a base64 source must carry an image of its declared media type."""
    source = block.get("source")
    if not isinstance(source, dict):
        raise Rejection(f"{where}.image.source: Field required")
    kind = source.get("type")
    if kind in ("url", "file"):
        return  # the fake fetches nothing
    if kind != "base64":
        raise Rejection(
            f"{where}.image.source: Input tag '{kind}' found using 'type' does not match any "
            "of the expected tags: 'base64', 'url', 'file'"
        )
    media_type = source.get("media_type")
    if media_type not in IMAGE_TYPES:
        raise Rejection(BAD_MEDIA_TYPE.format(where=where))
    data = source.get("data")
    if not isinstance(data, str):
        raise Rejection(f"{where}.image.source.base64.data: Field required")
    raw = decode_base64(data)
    if not raw:
        raise Rejection(BAD_BASE64.format(where=where))
    if image_type(raw) != media_type:
        raise Rejection(WRONG_IMAGE.format(where=where, t=media_type))


def _check_pairing(messages: list[dict[str, Any]], i: int) -> None:
    """The message after assistant message `i` answers each of its tool uses, results first."""
    use_ids = [b.get("id") for b in blocks(messages[i]) if b.get("type") == "tool_use"]
    nxt = messages[i + 1] if i + 1 < len(messages) else None
    if not use_ids:
        if nxt is not None and nxt["role"] == "user":
            _check_orphan_results(i + 1, nxt)
        return
    following = blocks(nxt) if nxt is not None and nxt["role"] == "user" else []
    result_ids = [b.get("tool_use_id") for b in following if b.get("type") == "tool_result"]
    missing = [str(u) for u in use_ids if u not in result_ids]
    if missing:
        raise Rejection(MISSING_RESULTS.format(i=i, ids=", ".join(missing)))
    for j, block in enumerate(following):
        if block.get("type") == "tool_result" and block.get("tool_use_id") not in use_ids:
            raise Rejection(UNEXPECTED_RESULT.format(i=i + 1, j=j, id=block.get("tool_use_id")))
    leading = 0
    for block in following:
        if block.get("type") != "tool_result":
            break
        leading += 1
    if leading < len(result_ids):
        raise Rejection(RESULTS_NOT_FIRST.format(i=i + 1, n=len(result_ids)))


def _check_orphan_results(i: int, message: dict[str, Any]) -> None:
    """A user message that does not follow tool uses may carry no tool results."""
    for j, block in enumerate(blocks(message)):
        if block.get("type") == "tool_result":
            raise Rejection(UNEXPECTED_RESULT.format(i=i, j=j, id=block.get("tool_use_id")))
