"""An MCP `CallToolResult` as the one text result the model reads.

rawtrio's `ToolResult` carries text only (the provider adapters send results as text), so
non-text parts are described in words: an image or audio clip by its type and size, an
embedded text resource by its URI followed by its text, a binary resource by its URI,
type and size, a resource link by its name and URI. With no content parts, the structured
content is shown as JSON. The text is cut to the session's tool output cap (head and tail
kept, the middle elided with a note); secrets are redacted.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rawtrio.contracts import ToolStatus
from rawtrio.frozen import freeze
from rawtrio.tools.base import ToolOutput
from rawtrio.tools.bounded_output import BoundedOutput

if TYPE_CHECKING:
    import mcp_types as types


def to_output(
    result: types.CallToolResult,
    *,
    server: str,
    tool: str,
    cap: int,
    redact: Callable[[str], str] = lambda s: s,
) -> ToolOutput:
    import mcp_types as types

    parts: list[str] = []
    media: list[dict[str, Any]] = []
    for c in result.content:
        if isinstance(c, types.TextContent):
            parts.append(c.text)
        elif isinstance(c, types.ImageContent | types.AudioContent):
            kind = "image" if isinstance(c, types.ImageContent) else "audio"
            size = _decoded_size(c.data)
            media.append({"kind": kind, "mime_type": c.mime_type, "bytes": size})
            parts.append(
                f"[{kind} {c.mime_type}, {size} bytes: not shown, rawtrio passes tool "
                f"results to the model as text]"
            )
        elif isinstance(c, types.ResourceLink):
            parts.append(f"[resource link {c.name}: {c.uri}]")
        elif isinstance(c, types.EmbeddedResource):
            r = c.resource
            if isinstance(r, types.TextResourceContents):
                parts.append(f"[resource {r.uri}]\n{r.text}")
            else:
                size = _decoded_size(r.blob)
                mime = r.mime_type or "binary data"
                media.append({"kind": "resource", "mime_type": r.mime_type, "bytes": size})
                parts.append(f"[resource {r.uri}: {mime}, {size} bytes, not shown]")
        else:
            parts.append(f"[{getattr(c, 'type', type(c).__name__)} content: not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    text = redact("\n".join(parts)) or "(the tool returned no content)"
    details: dict[str, Any] = {"server": server, "tool": tool}
    if media:
        details["media"] = media
    data = text.encode("utf-8")
    if len(data) > cap:
        bounded = BoundedOutput(cap)
        bounded.feed(data)
        text = (
            f"{bounded.text()}\n[result truncated: {len(data)} bytes, "
            f"{bounded.elided_bytes} elided from the middle]"
        )
        details["truncated_bytes"] = bounded.elided_bytes
    status = ToolStatus.ERROR if result.is_error else ToolStatus.OK
    return ToolOutput(status, text, freeze(details))


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)
