"""A conservative token estimate, with no tokenizer to download at run time.

Real tokenizers give about 4 characters a token for English prose and 3 to 3.5 for code
and JSON. Dividing by `CHARS_PER_TOKEN` (3.2) errs on the large side, so a request that
the estimate says fits does fit; each message and tool adds a small framing overhead.
The estimate is only used for what the provider has not counted yet (see `accounting`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from rawtrio.frozen import thaw
from rawtrio.messages import (
    AssistantMessage,
    Message,
    OpaquePart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
)
from rawtrio.providers.base import ToolSpec

CHARS_PER_TOKEN = 3.2
#: Role markers and block framing a provider adds around each message or tool.
MESSAGE_OVERHEAD = 6
TOOL_OVERHEAD = 12
#: An image in a tool result, whatever its size: Anthropic charges about
#: width × height / 750 tokens (at most ~1,600 for the sizes it keeps), OpenAI less.
IMAGE_TOKENS = 1600


def text_tokens(text: str) -> int:
    return int(len(text) / CHARS_PER_TOKEN) + 1


def message_tokens(msg: Message) -> int:
    if isinstance(msg, AssistantMessage):
        n = 0
        for p in msg.parts:
            if isinstance(p, TextPart | ThinkingPart):
                n += len(p.text)
            elif isinstance(p, ToolCall):
                n += len(p.raw_arguments) + len(p.name) + len(p.id) + 16
            elif isinstance(p, OpaquePart):
                n += len(json.dumps(thaw(p.data)))
        return int(n / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD
    if isinstance(msg, ToolResult):
        images = IMAGE_TOKENS * len(msg.images)
        return text_tokens(msg.content) + len(msg.call_id) // 3 + images + MESSAGE_OVERHEAD
    return text_tokens(msg.text) + MESSAGE_OVERHEAD


def messages_tokens(messages: Iterable[Message]) -> int:
    return sum(message_tokens(m) for m in messages)


def tools_tokens(tools: Iterable[ToolSpec]) -> int:
    n = 0
    for t in tools:
        schema = json.dumps(thaw(t.input_schema), separators=(",", ":"))
        n += text_tokens(t.name + t.description + schema) + TOOL_OVERHEAD
    return n


def request_tokens(system: str, tools: Iterable[ToolSpec], messages: Iterable[Message]) -> int:
    """The estimated prompt size of a whole request."""
    return text_tokens(system) + tools_tokens(tools) + messages_tokens(messages)
