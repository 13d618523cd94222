"""What the three wire formats share: the wire interface, refusals, stable ids, opaque parts.

Ids (message ids, tool call ids) are derived from a digest of the conversation in the
request, so the same conversation always gets the same ids: a replayed test sees the same
transcript. Opaque parts (Anthropic thinking signatures, OpenAI encrypted reasoning) are
derived from their text with a fixed key, so the server can check that a client sent them
back unchanged, as the services do.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any, Protocol

from rawtrio.testing.fake_model.scenario import Reply
from rawtrio.testing.fake_model.sse import SSEEvent

_KEY = b"rawtrio-fake-model"
_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

#: The tool-name pattern of docs/contracts.md (the providers accept at least this).
TOOL_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"


class Rejection(Exception):
    """The request is refused, with the service's status, type and message."""

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        status: int = 400,
        type: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code
        self.status = status
        self.type = type


@dataclass(frozen=True, slots=True)
class Located:
    """Where a request stands in its scenario: the user text and how many turns followed."""

    user_text: str | None
    step: int


class Wire(Protocol):
    name: str

    def validate(self, body: dict[str, Any]) -> None:
        """Raise `Rejection` where the real service would refuse the request."""

    def locate(self, body: dict[str, Any]) -> Located: ...

    def is_stream(self, body: dict[str, Any]) -> bool: ...

    def error_body(self, rejection: Rejection) -> dict[str, Any]: ...

    def default_error_type(self, status: int) -> str: ...

    def stream(self, reply: Reply, body: dict[str, Any]) -> list[SSEEvent]: ...

    def complete(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]: ...


def digest(conversation: object) -> str:
    text = json.dumps(conversation, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def stable_id(prefix: str, seed: str, n: int = 0, length: int = 24) -> str:
    """A deterministic id like `toolu_01Ab…` from `seed` (a conversation digest) and `n`."""
    number = int.from_bytes(hashlib.sha256(f"{seed}:{prefix}:{n}".encode()).digest(), "big")
    chars = []
    for _ in range(length):
        number, rest = divmod(number, len(_ALPHABET))
        chars.append(_ALPHABET[rest])
    return prefix + "".join(chars)


def sign(text: str) -> str:
    # `surrogatepass`: a scenario may script text that is not Unicode (a lone surrogate).
    mac = hmac.new(_KEY, text.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()
    return base64.b64encode(b"fake-model-sig:" + mac).decode()


def seal(text: str) -> str:
    """Opaque "encrypted" content carrying `text`, as OpenAI's encrypted reasoning."""
    payload = json.dumps({"t": text, "m": sign(text)}).encode()
    return "gAAA" + base64.urlsafe_b64encode(payload).decode()


def unseal(content: str) -> str | None:
    """The text inside sealed content, or None if it was not made by `seal` or was altered."""
    if not content.startswith("gAAA"):
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(content[4:].encode()))
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    text, mac = data.get("t"), data.get("m")
    if not isinstance(text, str) or not isinstance(mac, str):
        return None
    return text if hmac.compare_digest(mac, sign(text)) else None


def estimate_tokens(value: object, *, compact: bool = False) -> int:
    """A rough token count (4 characters a token): enough for usage figures in tests.

    A JSON value is counted as its JSON text (`compact`: sorted keys, no spaces), except
    that each image in it (an Anthropic `image` block, a Responses `input_image`, a Chat
    `image_url` part) counts `IMAGE_TOKENS`, whatever its size, as the services count an
    image by its pixels, not by the length of its base64."""
    if isinstance(value, str) and not compact:
        return max(1, len(value) // 4)
    images = [0]
    plain = _without_images(value, images)
    if compact:
        text = json.dumps(plain, sort_keys=True, separators=(",", ":"), default=str)
    else:
        text = json.dumps(plain, default=str)
    return max(1, len(text) // 4) + images[0] * IMAGE_TOKENS


#: What one image counts in a prompt (about a 1000×1000 image on Anthropic's scale).
IMAGE_TOKENS = 1600
_IMAGE_TYPES = ("image", "input_image", "image_url")


def _without_images(value: object, count: list[int]) -> object:
    if isinstance(value, dict):
        if value.get("type") in _IMAGE_TYPES:
            count[0] += 1
            return {"type": value["type"]}
        return {k: _without_images(v, count) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_without_images(v, count) for v in value]
    return value


def decode_base64(data: str) -> bytes | None:
    """Strict base64 (no line breaks), or None where a service would call it invalid."""
    try:
        return base64.b64decode(data, validate=True)
    except ValueError:  # binascii.Error is a ValueError
        return None


def output_tokens(reply: Reply) -> int:
    if reply.usage.output_tokens is not None:
        return reply.usage.output_tokens
    parts = [reply.text, reply.thinking, *(c.arguments_json() for c in reply.tool_calls)]
    return estimate_tokens("".join(parts))


def input_tokens(reply: Reply, conversation: object) -> int:
    if reply.usage.input_tokens is not None:
        return reply.usage.input_tokens
    return estimate_tokens(conversation)
