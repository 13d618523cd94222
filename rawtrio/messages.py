"""The provider-neutral transcript: what the model context is made of.

A conversation is a sequence of `Message`s:

- `UserMessage` — text typed by the user (plus host notes appended by rawtrio, §3a).
- `AssistantMessage` — one complete, committed model reply: text, thinking, opaque
  provider parts and tool calls, in the order the model produced them.
- `ToolResult` — the one result of one tool call, placed after the assistant message that
  made the call: text, plus the images the tool returned (`ImagePart`, sent only where the
  wire format takes images in results). Consecutive results form one "results batch"; the
  provider adapters group them the way each API wants (one Anthropic user message, one
  OpenAI `tool` message each, one Responses `function_call_output` item each).

Values are frozen; `arguments` and opaque `data` are deep-frozen JSON (`rawtrio.frozen`).
Opaque parts (thinking signatures, redacted thinking, encrypted reasoning) carry the
provider that produced them and are only sent back to that provider (§3a).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rawtrio.contracts import DeniedBy, ToolStatus
from rawtrio.frozen import FrozenJSON, empty, freeze, thaw
from rawtrio.unicode_safety import has_lone_surrogate, may_hold_lone_surrogate, scrub_json

#: Which wire format a provider speaks. Opaque parts are tagged with it.
ProviderKind = Literal["anthropic", "openai-chat", "openai-responses"]


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ThinkingPart:
    """Visible reasoning. `signature` is the provider's opaque proof, kept for `provider`."""

    text: str
    signature: str | None = None
    provider: ProviderKind | None = None
    kind: Literal["thinking"] = "thinking"


@dataclass(frozen=True, slots=True)
class OpaquePart:
    """A provider part rawtrio does not interpret (redacted thinking, encrypted reasoning).

    Sent back verbatim to the same provider kind; dropped when talking to another one.
    """

    provider: ProviderKind
    data: FrozenJSON
    kind: Literal["opaque"] = "opaque"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the model asked for. `name` is the provider-facing name the model used.

    `raw_arguments` is exactly what the model streamed; `arguments` is the parsed object,
    or None when `raw_arguments` was not a JSON object (the call then gets an
    `invalid_arguments` result, and the adapters send `{}` back to the provider). A JSON
    escape can spell a lone surrogate (`"\\ud800"`), which is not text: `arguments`
    holds U+FFFD in its place, however often the call is parsed (stream, store).
    """

    id: str
    name: str
    raw_arguments: str
    arguments: FrozenJSON | None
    provider_item_id: str | None = None  # Responses: the function_call item id ("fc_…")
    kind: Literal["tool_call"] = "tool_call"

    @staticmethod
    def parse(
        call_id: str, name: str, raw_arguments: str, provider_item_id: str | None = None
    ) -> ToolCall:
        """Build a call from streamed argument text, tolerating malformed JSON."""
        text = raw_arguments.strip() or "{}"
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if may_hold_lone_surrogate(text) or (not text.isascii() and has_lone_surrogate(text)):
            parsed = scrub_json(parsed)
        args = freeze(parsed) if isinstance(parsed, dict) else None
        return ToolCall(call_id, name, raw_arguments, args, provider_item_id)

    def arguments_json(self) -> str:
        """The arguments as a JSON object text, `{}` when they were malformed."""
        return json.dumps(thaw(self.arguments) if self.arguments is not None else {})


AssistantPart = TextPart | ThinkingPart | OpaquePart | ToolCall


@dataclass(frozen=True, slots=True)
class UserMessage:
    text: str
    role: Literal["user"] = "user"


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    parts: tuple[AssistantPart, ...]
    provider: ProviderKind | None = None
    model: str | None = None
    provider_message_id: str | None = None
    role: Literal["assistant"] = "assistant"

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolCall))

    def for_provider(self, provider: ProviderKind) -> AssistantMessage:
        """This message with other providers' opaque parts and signatures dropped."""
        kept: list[AssistantPart] = []
        for p in self.parts:
            if isinstance(p, OpaquePart) and p.provider != provider:
                continue
            if isinstance(p, ThinkingPart) and p.provider not in (None, provider):
                p = ThinkingPart(p.text, None, None)
            kept.append(p)
        return AssistantMessage(tuple(kept), self.provider, self.model, self.provider_message_id)


#: The image types every image-taking wire accepts (Anthropic and OpenAI alike).
MODEL_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image in a tool result: `data` is base64 of an image of `media_type`.

    Only `MODEL_IMAGE_TYPES` are made into parts (rawtrio/mcp/results.py checks the bytes),
    so an adapter can send them as they are.
    """

    media_type: str
    data: str  # base64, no line breaks


def image_type(raw: bytes) -> str | None:
    """The media type of image bytes the model APIs take, from their signature (the
    services check the bytes against the declared type)."""
    if raw.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if raw.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if raw[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    return None


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The one result of one tool call.

    `content` is the text the model reads; it also describes each image in `images`, so a
    wire that takes only text in results (Chat Completions) still says what was there.
    `started` says whether the handler began (for `cancelled`); `denied_by` says who refused
    (for `denied`); `details` holds structured facts for front ends (exit code, signal,
    elapsed seconds, diff, …).
    """

    call_id: str
    name: str
    status: ToolStatus
    content: str
    started: bool = False
    denied_by: DeniedBy | None = None
    details: FrozenJSON = field(default_factory=empty)
    images: tuple[ImagePart, ...] = ()
    role: Literal["tool"] = "tool"

    @property
    def is_error(self) -> bool:
        return self.status is not ToolStatus.OK


Message = UserMessage | AssistantMessage | ToolResult


def check_pairing(messages: Sequence[Message]) -> list[str]:
    """Problems with tool call/result pairing, as the providers would see them (I1).

    Every call of an assistant message needs exactly one result among the results that
    directly follow it; no result may appear elsewhere. Returns human-readable problems;
    an empty list means the transcript is valid.
    """
    problems: list[str] = []
    pending: dict[str, str] = {}
    for i, msg in enumerate(messages):
        if isinstance(msg, ToolResult):
            if msg.call_id not in pending:
                problems.append(f"message {i}: result for unknown or answered call {msg.call_id}")
            else:
                del pending[msg.call_id]
            continue
        if pending:
            problems.append(f"message {i}: calls without results: {', '.join(pending)}")
            pending = {}
        if isinstance(msg, AssistantMessage):
            pending = {c.id: c.name for c in msg.tool_calls}
    if pending:
        problems.append(f"end: calls without results: {', '.join(pending)}")
    return problems


def message_to_json(msg: Message) -> dict[str, Any]:
    """A plain JSON form of a message (store rows, stream-json, exports)."""
    if isinstance(msg, UserMessage):
        return {"role": "user", "text": msg.text}
    if isinstance(msg, ToolResult):
        out: dict[str, Any] = {
            "role": "tool",
            "call_id": msg.call_id,
            "name": msg.name,
            "status": msg.status.value,
            "content": msg.content,
            "started": msg.started,
        }
        if msg.denied_by is not None:
            out["denied_by"] = msg.denied_by.value
        if msg.details:
            out["details"] = thaw(msg.details)
        if msg.images:
            out["images"] = [{"media_type": i.media_type, "data": i.data} for i in msg.images]
        return out
    return {
        "role": "assistant",
        "provider": msg.provider,
        "model": msg.model,
        "provider_message_id": msg.provider_message_id,
        "parts": [_part_to_json(p) for p in msg.parts],
    }


def _part_to_json(p: AssistantPart) -> dict[str, Any]:
    if isinstance(p, TextPart):
        return {"kind": "text", "text": p.text}
    if isinstance(p, ThinkingPart):
        return {
            "kind": "thinking",
            "text": p.text,
            "signature": p.signature,
            "provider": p.provider,
        }
    if isinstance(p, OpaquePart):
        return {"kind": "opaque", "provider": p.provider, "data": thaw(p.data)}
    return {
        "kind": "tool_call",
        "id": p.id,
        "name": p.name,
        "raw_arguments": p.raw_arguments,
        "provider_item_id": p.provider_item_id,
    }


def message_from_json(data: dict[str, Any]) -> Message:
    """Inverse of `message_to_json`."""
    role = data["role"]
    if role == "user":
        return UserMessage(data["text"])
    if role == "tool":
        by = data.get("denied_by")
        return ToolResult(
            data["call_id"],
            data["name"],
            ToolStatus(data["status"]),
            data["content"],
            started=bool(data.get("started", False)),
            denied_by=DeniedBy(by) if by else None,
            details=freeze(data.get("details", {})),
            # Rows written before results carried images have no "images".
            images=tuple(ImagePart(i["media_type"], i["data"]) for i in data.get("images", ())),
        )
    return AssistantMessage(
        tuple(_part_from_json(p) for p in data["parts"]),
        data.get("provider"),
        data.get("model"),
        data.get("provider_message_id"),
    )


def _part_from_json(p: dict[str, Any]) -> AssistantPart:
    kind = p["kind"]
    if kind == "text":
        return TextPart(p["text"])
    if kind == "thinking":
        return ThinkingPart(p["text"], p.get("signature"), p.get("provider"))
    if kind == "opaque":
        return OpaquePart(p["provider"], freeze(p["data"]))
    return ToolCall.parse(p["id"], p["name"], p["raw_arguments"], p.get("provider_item_id"))


def tool_calls_of(messages: Iterable[Message]) -> list[ToolCall]:
    return [c for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
