"""Prompt-size counting and Anthropic prompt caching, as the services report them.

Input tokens count the whole prompt the way the services do: the system prompt, the tool
definitions and the messages (4 characters a token, per block, like `estimate_tokens`; an
image counts `IMAGE_TOKENS`).

Anthropic caching (`PromptCache`): the prompt is a sequence of blocks in the order the
service caches them — tools, system, then each message's content blocks. A breakpoint is a
block with `cache_control` (a top-level `cache_control` puts one on the last block). At each
breakpoint the service looks for the longest cached prefix ending at that block or up to 20
blocks before it: that part is a cache read; the rest of the prefix up to the breakpoint is
written to the cache (if at least `MIN_CACHEABLE_TOKENS`). The remaining tokens are plain
input. The cache lives as long as the server (no 5-minute expiry).

OpenAI caching (`PromptCache.openai`) is automatic: every prompt of at least
`MIN_CACHEABLE_TOKENS` is cached; a later prompt that starts with a cached one reads the
longest such prefix, counted in steps of `OPENAI_CACHE_STEP` tokens, as `cached_tokens`
(which the services count inside the prompt tokens).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from rawtrio.testing.fake_model.wire_common import estimate_tokens

#: Prompts shorter than this are never cached (Claude Sonnet/Opus's minimum).
MIN_CACHEABLE_TOKENS = 1024
#: How many blocks before a breakpoint the service looks back for a cached prefix.
LOOKBACK_BLOCKS = 20
MAX_BREAKPOINTS = 4
OPENAI_CACHE_STEP = 128
TOO_MANY_BREAKPOINTS = "A maximum of 4 blocks with cache_control may be provided. Found {n}."


@dataclass(frozen=True, slots=True)
class CacheUsage:
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int


def anthropic_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's cacheable blocks in cache order: tools, system, message contents."""
    out: list[dict[str, Any]] = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            out.append(tool)
    system = body.get("system")
    if isinstance(system, str) and system:
        out.append({"type": "text", "text": system})
    elif isinstance(system, list):
        out.extend(b for b in system if isinstance(b, dict))
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        role = message.get("role")
        if isinstance(content, str):
            out.append({"type": "text", "text": content, "_role": role})
        elif isinstance(content, list):
            out.extend({**b, "_role": role} for b in content if isinstance(b, dict))
    return out


def count_breakpoints(body: dict[str, Any]) -> int:
    n = sum(1 for b in anthropic_blocks(body) if b.get("cache_control"))
    return n + (1 if body.get("cache_control") else 0)


class PromptCache:
    """The Anthropic prompt cache of one fake server."""

    def __init__(self) -> None:
        self._prefixes: set[str] = set()

    def anthropic(self, body: dict[str, Any]) -> CacheUsage:
        blocks = anthropic_blocks(body)
        sizes: list[int] = []
        digests: list[str] = []
        h = hashlib.sha256(str(body.get("model", "")).encode())
        for b in blocks:
            plain = {k: v for k, v in b.items() if k != "cache_control"}
            text = json.dumps(plain, sort_keys=True, separators=(",", ":"))
            h.update(text.encode())
            digests.append(h.copy().hexdigest())
            sizes.append(estimate_tokens(plain, compact=True))
        total = sum(sizes)
        breakpoints = [i for i, b in enumerate(blocks) if b.get("cache_control")]
        if body.get("cache_control") and blocks:
            breakpoints.append(len(blocks) - 1)
        read_end = 0  # blocks [0, read_end) were read from the cache
        write_end = 0
        for bp in sorted(set(breakpoints)):
            for i in range(bp, max(-1, bp - LOOKBACK_BLOCKS - 1), -1):
                if digests[i] in self._prefixes:
                    read_end = max(read_end, i + 1)
                    break
            if sum(sizes[: bp + 1]) >= MIN_CACHEABLE_TOKENS:
                write_end = max(write_end, bp + 1)
        for bp in breakpoints:
            if sum(sizes[: bp + 1]) >= MIN_CACHEABLE_TOKENS:
                self._prefixes.add(digests[bp])
        read = sum(sizes[:read_end])
        write = sum(sizes[read_end:write_end]) if write_end > read_end else 0
        return CacheUsage(total - read - write, read, write)

    def openai(self, body: dict[str, Any], total: int) -> int:
        """The `cached_tokens` of an OpenAI request whose prompt counts `total` tokens."""
        h = hashlib.sha256(("openai:" + str(body.get("model", ""))).encode())
        cached = 0
        size = 0
        digests: list[tuple[str, int]] = []
        for item in openai_items(body):
            text = json.dumps(item, sort_keys=True, separators=(",", ":"))
            h.update(text.encode())
            size += estimate_tokens(item, compact=True)
            digest = h.copy().hexdigest()
            digests.append((digest, size))
            if digest in self._prefixes:
                cached = size
        if total >= MIN_CACHEABLE_TOKENS:
            self._prefixes.update(d for d, n in digests if n >= MIN_CACHEABLE_TOKENS)
        if cached < MIN_CACHEABLE_TOKENS:
            return 0
        return min(total, cached) // OPENAI_CACHE_STEP * OPENAI_CACHE_STEP


def openai_items(body: dict[str, Any]) -> list[object]:
    """The prompt's parts in order for OpenAI caching: tools, instructions, then messages."""
    items: list[object] = list(body.get("tools") or [])
    if body.get("instructions"):
        items.append(body["instructions"])
    for key in ("messages", "input"):
        value = body.get(key)
        if isinstance(value, list):
            items.extend(value)
        elif isinstance(value, str):
            items.append(value)
    return items


def prompt_tokens(*parts: object) -> int:
    """The prompt size of a request made of `parts` (system, tools, messages)."""
    return sum(estimate_tokens(p) for p in parts if p)
