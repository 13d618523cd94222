"""Request checks of OpenAI Chat Completions and Responses, with the services' own texts.

Chat: roles, content where it is required, that an assistant message with `tool_calls` is
followed by one `tool` message per call id (and no stray `tool` messages), and that only
user messages carry images.
Responses: roles, item types, that every `function_call` has a `function_call_output` and
every output a call, that reasoning items come back with the encrypted content the server
gave them (it stores nothing, as with `store: false`), and images (`input_image` data URLs
in a message's content or a `function_call_output`'s output list: an image MIME type and
base64 that decodes to an image).
Both: required `model`, tool name pattern and length.
"""

from __future__ import annotations

import re
from typing import Any

from rawtrio.messages import image_type
from rawtrio.testing.fake_model.wire_common import (
    Rejection,
    decode_base64,
    unseal,
)

MISSING_TOOL_MESSAGES = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. The following tool_call_ids did not have response messages: {ids}"
)
# "preceeding" is the service's spelling.
STRAY_TOOL_MESSAGE = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
    "with 'tool_calls'."
)
NO_OUTPUT = "No tool output found for function call {id}."
NO_CALL = "No tool call found for function call output with call_id {id}."
ITEM_NOT_FOUND = (
    "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try "
    "again with `store` set to true, or remove this item from your input."
)
IMAGE_URL = (
    "Invalid '{param}'. Expected a base64-encoded data URL with an image MIME type (e.g. "
    "'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got {what}."
)
# "has of one" is the service's wording.
UNSUPPORTED_IMAGE = (
    "You uploaded an unsupported image. Please make sure your image has of one the following "
    "formats: ['png', 'jpeg', 'gif', 'webp']."
)
CHAT_IMAGE_ROLE = (
    "Invalid 'messages[{i}]'. Image URLs are only allowed for messages with role 'user', but "
    "this message with role '{role}' contains an image URL."
)
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
CHAT_ROLES = ("system", "assistant", "user", "function", "tool", "developer")
INPUT_ROLES = ("assistant", "system", "developer", "user")
_NAME_PATTERN = "^[a-zA-Z0-9_-]+$"


def validate_chat(body: dict[str, Any]) -> None:
    _require(body, "model")
    _require(body, "messages")
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        raise Rejection("[] is too short - 'messages'", param="messages")
    _check_tools(body.get("tools"), chat=True)
    pending: dict[str, int] = {}  # call id -> index of the assistant message that made it
    answered: set[str] = set()
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise Rejection(f"Invalid type for 'messages[{i}]': expected an object.")
        role = message.get("role")
        if role not in CHAT_ROLES:
            raise _bad_value(role, CHAT_ROLES, f"messages[{i}].role")
        if role != "tool" and pending:
            _missing_tool_messages(pending, answered)
        if role != "user" and _has_image_url(message.get("content")):
            raise Rejection(CHAT_IMAGE_ROLE.format(i=i, role=role), param=f"messages[{i}]")
        if role in ("system", "user", "developer") and message.get("content") is None:
            raise Rejection(
                f"Missing required parameter: 'messages[{i}].content'.",
                param=f"messages[{i}].content",
                code="missing_required_parameter",
            )
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if message.get("content") is None and not calls:
                raise Rejection(
                    "Invalid value for 'content': expected a string, got null.",
                    param=f"messages.[{i}].content",
                )
            pending = {str(c.get("id")): i for c in calls if isinstance(c, dict)}
            answered = set()
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if call_id is None:
                raise Rejection(
                    "Missing parameter 'tool_call_id': messages with role 'tool' must have a "
                    "'tool_call_id'.",
                    param=f"messages.[{i}].tool_call_id",
                )
            if call_id not in pending:
                raise Rejection(STRAY_TOOL_MESSAGE, param=f"messages.[{i}].role")
            answered.add(call_id)
    if pending:
        _missing_tool_messages(pending, answered)


def validate_responses(body: dict[str, Any]) -> None:
    _require(body, "model")
    if body.get("previous_response_id") is not None:
        raise Rejection(
            f"Previous response with id '{body['previous_response_id']}' not found.",
            param="previous_response_id",
        )
    _check_tools(body.get("tools"), chat=False)
    items = body.get("input", [])
    if isinstance(items, str):
        return
    if not isinstance(items, list):
        raise Rejection("Invalid type for 'input': expected one of a string or array.")
    calls: set[str] = set()
    outputs = {
        str(item.get("call_id"))
        for item in items
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    }
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise Rejection(f"Invalid type for 'input[{i}]': expected an object.")
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role not in INPUT_ROLES:
                raise _bad_value(role, INPUT_ROLES, f"input[{i}].role")
            if item.get("content") is None:
                raise Rejection(
                    f"Missing required parameter: 'input[{i}].content'.",
                    param=f"input[{i}].content",
                    code="missing_required_parameter",
                )
            if isinstance(item["content"], list):
                _check_content_items(f"input[{i}].content", item["content"])
        elif kind == "function_call":
            call_id = str(item.get("call_id"))
            if call_id not in outputs:
                raise Rejection(NO_OUTPUT.format(id=call_id), param="input")
            calls.add(call_id)
        elif kind == "function_call_output":
            if str(item.get("call_id")) not in calls:
                raise Rejection(NO_CALL.format(id=item.get("call_id")), param="input")
            _check_output(f"input[{i}].output", item.get("output"))
        elif kind == "reasoning":
            sealed = item.get("encrypted_content")
            if not isinstance(sealed, str) or unseal(sealed) is None:
                raise Rejection(ITEM_NOT_FOUND.format(id=item.get("id")), param="input")
        elif kind == "item_reference":
            raise Rejection(ITEM_NOT_FOUND.format(id=item.get("id")), param="input")
        else:
            raise Rejection(f"Invalid value: '{kind}'.", param=f"input[{i}].type")


def _has_image_url(content: object) -> bool:
    if not isinstance(content, list):
        return False
    return any(isinstance(p, dict) and p.get("type") == "image_url" for p in content)


def _check_output(param: str, output: object) -> None:
    """A function call's output: a string, or a list of input content items."""
    if isinstance(output, str):
        return
    if output is None:
        raise Rejection(
            f"Missing required parameter: '{param}'.",
            param=param,
            code="missing_required_parameter",
        )
    if not isinstance(output, list):
        raise Rejection(
            f"Invalid type for '{param}': expected one of a string or array of input content "
            "items.",
            param=param,
            code="invalid_type",
        )
    _check_content_items(param, output)


def _check_content_items(param: str, items: list[Any]) -> None:
    for k, part in enumerate(items):
        where = f"{param}[{k}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "output_text"):
            if not isinstance(part.get("text"), str):
                raise Rejection(
                    f"Missing required parameter: '{where}.text'.",
                    param=f"{where}.text",
                    code="missing_required_parameter",
                )
        elif kind == "input_image":
            _check_image(where, part)
        elif kind not in ("input_file", "refusal"):
            raise Rejection(
                f"Invalid value: '{kind}'.", param=f"{where}.type", code="invalid_value"
            )


def _check_image(where: str, part: dict[str, Any]) -> None:
    """An `input_image`: a file id, a web URL (not fetched), or an image data URL."""
    url = part.get("image_url")
    if url is None:
        if part.get("file_id") is not None:
            return
        raise Rejection(
            f"Missing required parameter: '{where}.image_url'.",
            param=f"{where}.image_url",
            code="missing_required_parameter",
        )
    param = f"{where}.image_url"
    if not isinstance(url, str):
        raise Rejection(f"Invalid type for '{param}': expected a string.", param=param)
    if url.startswith(("http://", "https://")):
        return
    head, sep, data = url.partition(",")
    if not head.startswith("data:"):
        what = "a value without the 'data:' prefix"
        raise Rejection(IMAGE_URL.format(param=param, what=what), param=param, code="invalid_value")
    mime = head[len("data:") :].removesuffix(";base64")
    if mime not in IMAGE_TYPES:
        what = f"unsupported MIME type '{mime}'"
        raise Rejection(IMAGE_URL.format(param=param, what=what), param=param, code="invalid_value")
    if not sep or not data:
        what = "empty base64-encoded bytes"
        raise Rejection(IMAGE_URL.format(param=param, what=what), param=param, code="invalid_value")
    raw = decode_base64(data) if head.endswith(";base64") else None
    if raw is None:
        what = "an invalid base64-encoded value"
        raise Rejection(IMAGE_URL.format(param=param, what=what), param=param, code="invalid_value")
    if image_type(raw) is None:
        raise Rejection(UNSUPPORTED_IMAGE, param=None, code="invalid_image_format")


def _require(body: dict[str, Any], key: str) -> None:
    if key not in body:
        raise Rejection(
            f"Missing required parameter: '{key}'.", param=key, code="missing_required_parameter"
        )


def _bad_value(value: object, allowed: tuple[str, ...], param: str) -> Rejection:
    listed = ", ".join(f"'{v}'" for v in allowed[:-1]) + f", and '{allowed[-1]}'"
    return Rejection(
        f"Invalid value: '{value}'. Supported values are: {listed}.",
        param=param,
        code="invalid_value",
    )


def _missing_tool_messages(pending: dict[str, int], answered: set[str]) -> None:
    missing = [call_id for call_id in pending if call_id not in answered]
    if missing:
        index = next(iter(pending.values()))
        raise Rejection(
            MISSING_TOOL_MESSAGES.format(ids=", ".join(missing)), param=f"messages.[{index}].role"
        )
    pending.clear()


def _check_tools(tools: object, *, chat: bool) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        raise Rejection("Invalid type for 'tools': expected an array.", param="tools")
    for k, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise Rejection(f"Invalid type for 'tools[{k}]': expected an object.")
        if tool.get("type") != "function":
            continue
        spec = tool.get("function") if chat else tool
        name = spec.get("name") if isinstance(spec, dict) else None
        where = f"tools[{k}].function.name" if chat else f"tools[{k}].name"
        if not isinstance(name, str):
            raise Rejection(
                f"Missing required parameter: '{where}'.",
                param=where,
                code="missing_required_parameter",
            )
        if not re.fullmatch(_NAME_PATTERN, name):
            raise Rejection(
                f"Invalid '{where}': string does not match pattern. Expected a string that "
                f"matches the pattern '{_NAME_PATTERN}'.",
                param=where,
                code="invalid_value",
            )
        if len(name) > 64:
            raise Rejection(
                f"Invalid '{where}': string too long. Expected a string with maximum length "
                f"64, but got a string with length {len(name)} instead.",
                param=where,
                code="string_above_max_length",
            )
