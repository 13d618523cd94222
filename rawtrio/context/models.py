"""Context windows and output limits: configured per model, with defaults for well-known ones.

A configured `context_window` always wins. Otherwise the model id is matched against
`KNOWN_WINDOWS` by prefix (longest first); an unknown model has no known window, and then
rawtrio neither clamps `max_tokens` nor compacts automatically (manual `/compact` works).
Prices are never guessed: without configured prices, cost is reported as unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Model id prefix → (context window, most output tokens the model can produce).
KNOWN_WINDOWS: dict[str, tuple[int, int]] = {
    "claude-opus-4": (200_000, 32_000),
    "claude-opus-4-5": (200_000, 64_000),
    "claude-sonnet-4": (200_000, 64_000),
    "claude-haiku-4": (200_000, 64_000),
    "claude-3-7-sonnet": (200_000, 64_000),
    "claude-3-5-sonnet": (200_000, 8_192),
    "claude-3-5-haiku": (200_000, 8_192),
    "claude-3-opus": (200_000, 4_096),
    "claude-3-haiku": (200_000, 4_096),
    "gpt-5": (400_000, 128_000),
    "gpt-4.1": (1_047_576, 32_768),
    "gpt-4o": (128_000, 16_384),
    "gpt-4-turbo": (128_000, 4_096),
    "o1": (200_000, 100_000),
    "o3": (200_000, 100_000),
    "o4-mini": (200_000, 100_000),
}


@dataclass(frozen=True, slots=True)
class ModelLimits:
    #: Tokens the model accepts in one request (prompt + output); None when unknown.
    context_window: int | None
    #: The `max_tokens` rawtrio asks for (before clamping to what fits).
    max_output_tokens: int


def known_window(model_id: str) -> tuple[int, int] | None:
    """The default (window, output limit) of a well-known model id, by longest prefix."""
    best: str | None = None
    for prefix in KNOWN_WINDOWS:
        if model_id.startswith(prefix) and (best is None or len(prefix) > len(best)):
            best = prefix
    return KNOWN_WINDOWS[best] if best is not None else None


def limits_for(model_id: str, *, context_window: int | None, max_output_tokens: int) -> ModelLimits:
    """The limits to use: configured values first, then the model's known defaults."""
    known = known_window(model_id)
    window = context_window if context_window is not None else (known[0] if known else None)
    output = max_output_tokens
    if known is not None and context_window is None:
        output = min(output, known[1])
    return ModelLimits(window, output)
