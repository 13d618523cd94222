"""One redactor for tools, hooks and variables: whole values, JSON-escaped forms, chunks."""

from __future__ import annotations

import pytest

from rawtrio.redaction import Redactor, StreamRedactor

SECRET = "sk-live-0123456789"


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 11, 64])
def test_stream_never_leaks_a_secret_split_across_chunks(size: int) -> None:
    red = Redactor()
    red.add("api_key", SECRET)
    text = f"key={SECRET}; again:{SECRET}!"
    seen: list[str] = []
    stream = StreamRedactor(red, seen.append)
    for i in range(0, len(text), size):
        stream(text[i : i + size])
    stream.flush()
    assert "".join(seen) == "key=[redacted:api_key]; again:[redacted:api_key]!"
    assert all("sk-live" not in chunk for chunk in seen)


def test_unnamed_values_short_values_and_json_escapes() -> None:
    red = Redactor(['pass"word"1', "abc"])
    assert red.redact('{"pw": "pass\\"word\\"1"}') == '{"pw": "[redacted]"}'
    assert red.redact("abc stays") == "abc stays"
    assert red.redact_json({"k": ['pass"word"1']})["k"] == ("[redacted]",)
