"""An MCP `CallToolResult` as the result the model reads: text, plus images.

Text content is the result's text. Images — image content, and embedded resources whose
blob is an image — go into `ToolOutput.images` when they are PNG, JPEG, GIF or WebP (the
bytes are checked, not the declared type: a wrong type would make the provider refuse
every later request of the session), at most `MAX_IMAGES` of them and `MAX_IMAGE_BYTES`
decoded in all per result. Each image is also described in the text (`[image 1:
image/png, 120 bytes]`), so a wire that takes only text in results (Chat Completions) and
the display history still say what was there; an image that is not carried says why.
Audio is described by its type and size, an embedded text resource by its URI followed
by its text, another binary resource by its URI, type and size, a resource link by its
name and URI. With no content parts, the structured content is shown as JSON. The text is
cut to the session's tool output cap (head and tail kept, the middle elided with a note);
secrets are redacted from the text (the images are not scanned: see `Redactor`).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rawtrio.contracts import ToolStatus
from rawtrio.frozen import freeze
from rawtrio.messages import ImagePart, image_type
from rawtrio.processes import BoundedOutput
from rawtrio.tools.base import ToolOutput
from rawtrio.unicode_safety import replace_lone_surrogates

if TYPE_CHECKING:
    import mcp_types as types

#: At most this many images per result go to the model; the rest are described only.
MAX_IMAGES = 8
#: And at most this many decoded bytes of images in all per result.
MAX_IMAGE_BYTES = 5 * 1024 * 1024

NOT_AN_IMAGE = "not a PNG, JPEG, GIF or WebP image"
OVER_LIMIT = f"over the limit of {MAX_IMAGES} images and 5 MB per result"


class _Images:
    """The images of one result, within the bounds, in the order they came."""

    def __init__(self) -> None:
        self.parts: list[ImagePart] = []
        self.total = 0

    def add(self, data: str) -> tuple[ImagePart | None, int, str]:
        """(the part or None, decoded size, why not carried)."""
        compact = "".join(data.split())
        try:
            raw = base64.b64decode(compact, validate=True)
        except (binascii.Error, ValueError):
            return None, _decoded_size(data), NOT_AN_IMAGE
        media_type = image_type(raw)
        if media_type is None:
            return None, len(raw), NOT_AN_IMAGE
        if len(self.parts) >= MAX_IMAGES or self.total + len(raw) > MAX_IMAGE_BYTES:
            return None, len(raw), OVER_LIMIT
        part = ImagePart(media_type, compact)
        self.parts.append(part)
        self.total += len(raw)
        return part, len(raw), ""


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
    images = _Images()
    for c in result.content:
        if isinstance(c, types.TextContent):
            parts.append(c.text)
        elif isinstance(c, types.ImageContent):
            part, size, why = images.add(c.data)
            media.append(_media("image", c.mime_type, size, part))
            if part is not None:
                parts.append(f"[image {len(images.parts)}: {part.media_type}, {size} bytes]")
            else:
                parts.append(f"[image {c.mime_type}, {size} bytes: not shown, {why}]")
        elif isinstance(c, types.AudioContent):
            size = _decoded_size(c.data)
            media.append(_media("audio", c.mime_type, size, None))
            parts.append(
                f"[audio {c.mime_type}, {size} bytes: not shown, rawtrio does not pass audio "
                f"to the model]"
            )
        elif isinstance(c, types.ResourceLink):
            parts.append(f"[resource link {c.name}: {c.uri}]")
        elif isinstance(c, types.EmbeddedResource):
            r = c.resource
            if isinstance(r, types.TextResourceContents):
                parts.append(f"[resource {r.uri}]\n{r.text}")
            elif (r.mime_type or "").startswith("image/"):
                part, size, why = images.add(r.blob)
                media.append(_media("resource", r.mime_type, size, part))
                if part is not None:
                    n = len(images.parts)
                    parts.append(f"[resource {r.uri}: image {n}, {part.media_type}, {size} bytes]")
                else:
                    parts.append(
                        f"[resource {r.uri}: {r.mime_type}, {size} bytes, not shown: {why}]"
                    )
            else:
                size = _decoded_size(r.blob)
                mime = r.mime_type or "binary data"
                media.append(_media("resource", r.mime_type, size, None))
                parts.append(f"[resource {r.uri}: {mime}, {size} bytes, not shown]")
        else:
            parts.append(f"[{getattr(c, 'type', type(c).__name__)} content: not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    # A JSON escape such as "\ud800" decodes to a lone surrogate: the model, the store and
    # every front end get U+FFFD instead (the same text everywhere).
    text = replace_lone_surrogates(redact("\n".join(parts))) or "(the tool returned no content)"
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
    return ToolOutput(status, text, freeze(details), tuple(images.parts))


def _media(kind: str, mime_type: str | None, size: int, part: ImagePart | None) -> dict[str, Any]:
    """An entry of `details.media`: what the result held, and whether the model gets it."""
    return {"kind": kind, "mime_type": mime_type, "bytes": size, "attached": part is not None}


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)
